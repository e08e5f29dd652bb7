"""A grid of retrieval-only configurations (issue 19): 18 systems (keyword, BM25, dense;
hybrid at text weights 0.3, 0.5, 0.7; each at k = 1, 3, 5) over a generated company's 76
project reports, asked 2,000 questions drawn from the reports' own sentences (seeded),
through ``build_system`` and the run harness as ``ragaudit run`` asks them (records
written to JSONL).

Baseline, in the same run: the grid as it ran before issue 19, each hybrid with BM25 and
dense halves of its own (so each text weight embeds every question again). Ours: every
hybrid shares the grid's BM25 and dense retrievers. Both grids must retrieve the same
lists. Reported: the median seconds of each over three interleaved trials, the ratio,
and the seconds per configuration against one dense system alone (which pays for
embedding the questions once).

Target: the grid costs at most a quarter of one dense system per configuration (so 18
configurations cost less than 5 dense systems run alone: what a grid adds to one run is
small), with lists identical to the baseline's. The speed-up over the baseline is
reported; a first target of 1.5x was missed (1.42x on an idle machine): once the
questions are embedded once, the rest of each configuration's cost is its own scoring
and records, which sharing does not remove (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ragaudit.harness.ask import run_system  # noqa: E402
from ragaudit.records.models import QueryRecord, Reference  # noqa: E402
from ragaudit.systems.base import Retriever  # noqa: E402
from ragaudit.systems.builtin import BuiltinSystemConfig  # noqa: E402
from ragaudit.systems.corpus import chunk, load_corpus  # noqa: E402
from ragaudit.systems.factory import build_system  # noqa: E402
from ragaudit.systems.options import expand_grids  # noqa: E402
from ragaudit.systems.retrievers import make_retriever  # noqa: E402
from ragaudit.world.build import build_world  # noqa: E402

QUESTIONS = 2000
TRIALS = 3
WEIGHTS = (0.3, 0.5, 0.7)


def _grid() -> list[Any]:
    entry = BuiltinSystemConfig(
        name="ret",
        generator="none",
        grid={
            "retriever": ["keyword", "bm25", "dense", "hybrid"],
            "text_weight": list(WEIGHTS),
            "k": [1, 3, 5],
        },
    )
    return expand_grids([entry])


def _questions(texts: list[str]) -> list[QueryRecord]:
    rng = random.Random(0)
    sentences = [s for t in texts for s in re.split(r"(?<=\.)\s+", t) if len(s.split()) > 5]
    out = []
    for i in range(QUESTIONS):
        words = rng.choice(sentences).rstrip(".").split()
        start = rng.randrange(0, max(1, len(words) - 6))
        text = "What about " + " ".join(words[start : start + 6]) + "?"
        out.append(
            QueryRecord(
                query_id=f"q{i}",
                group_id=f"g{i}",
                variant="short",
                query=text,
                reference=Reference.from_values(["x"]),
            )
        )
    return out


async def _run_grid(
    systems: list[Any], chunks: Any, queries: list[QueryRecord], out: Path, shared: bool
) -> tuple[float, dict[str, list[list[str]]]]:
    """Seconds to run ``systems`` over ``queries``, and each one's retrieved ids per query."""
    cache: dict[tuple[str, float], Retriever] = {}
    if not shared:  # before issue 19: each hybrid made its own BM25 and dense halves
        for weight in WEIGHTS:
            cache[("hybrid", weight)] = make_retriever("hybrid", chunks, text_weight=weight)
    start = time.perf_counter()
    for sc in systems:
        system = build_system(sc, chunks=chunks, retrievers=cache)
        try:
            await run_system(system, queries, out / f"{sc.name}.jsonl", concurrency=8)
        finally:
            await system.aclose()
    seconds = time.perf_counter() - start
    lists = {}
    for sc in systems:
        rows = [json.loads(line) for line in (out / f"{sc.name}.jsonl").read_text().splitlines()]
        # Records are written as answers finish: compared by query, in the query's order.
        by_query = {row["query_id"]: [item["id"] for item in row["retrieved"]] for row in rows}
        lists[sc.name] = [by_query[q.query_id] for q in queries]
    return seconds, lists


def run() -> dict[str, Any]:
    from ragaudit.systems.retrievers import dense_model

    dense_model()  # the model loads once per process, outside every timing
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build_world(root / "world", size=200, seed=7, force=True)
        chunks = chunk(load_corpus(root / "world" / "documents.jsonl"), "document")
        queries = _questions([c.text for c in chunks])
        systems = _grid()
        dense = [s for s in systems if s.name == "ret-dense-k1"]
        times: dict[str, list[float]] = {"dense_alone": [], "baseline": [], "shared": []}
        lists: dict[str, dict[str, list[list[str]]]] = {}
        for trial in range(TRIALS):  # interleaved, so that a slow moment hits all three
            for name, chosen, shared in (
                ("dense_alone", dense, True),
                ("baseline", systems, False),
                ("shared", systems, True),
            ):
                folder = root / f"{name}-{trial}"
                folder.mkdir()
                seconds, found = asyncio.run(_run_grid(chosen, chunks, queries, folder, shared))
                times[name].append(seconds)
                lists[name] = found
    alone, base, ours = (statistics.median(times[n]) for n in ("dense_alone", "baseline", "shared"))
    base_lists, our_lists = lists["baseline"], lists["shared"]
    order = {
        name: [sorted(ids) for ids in lists] for name, lists in our_lists.items()
    }  # ties within a list may come in either order
    same = order == {name: [sorted(ids) for ids in lists] for name, lists in base_lists.items()}
    speedup = base / ours
    return {
        "grid_configurations": len(systems),
        "grid_questions": QUESTIONS,
        "grid_documents": len(chunks),
        "grid_trials": TRIALS,
        "grid_dense_alone_s": round(alone, 2),
        "grid_baseline_s": round(base, 2),
        "grid_shared_s": round(ours, 2),
        "grid_speedup": round(speedup, 2),
        "grid_per_configuration_vs_dense_alone": round(ours / len(systems) / alone, 3),
        "grid_same_lists": same,
        "target_grid_met": ours / len(systems) / alone <= 0.25 and same,
    }


if __name__ == "__main__":
    for key, value in run().items():
        print(f"{key:40} {value}")
