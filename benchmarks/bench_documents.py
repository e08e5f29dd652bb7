"""Document generation on the demo's reports (issue 40): LLM requests, tokens and seconds
per accepted pair, where they go, and the step's fraction of the embedded model's limit.

The demo's world (60 rows, seed 0: 20 project reports), its document options (the
``statements`` strategy, a ``fact_single`` and a ``summary`` mix, one short wording of
each accepted question), with more pairs than the demo's two so that one failed context
does not decide the figures: ``SIZE`` pairs from every report. The embedded model, the
demo's context size, an empty LLM cache. The step is run as the demo runs it
(:func:`ragaudit.steps.documents.generate_from_documents` in a session).

Reported: accepted pairs; requests, prompt and completion tokens and wall seconds, in all
and per accepted pair; the requests by what they ask (read from the LLM cache: the
statements, the question, the reading, the critiques, the label, the wording), so a
change shows which call it saved. Then the baseline in the same run: the model's own
limit (``bench_model_limit``, quick) and this step's fraction of it, from the run's
usage.json, as ``model-limit`` judges every LLM step.

Targets (issue 40): at most 4 requests and 20 s per accepted pair. The grounded precision
those pairs must keep (>= 0.9) is pinned by tests/test_document_rates.py, which replays the
recorded replies of the same checks.

``python benchmarks/bench_documents.py``; in ``make bench`` as ``documents`` (about 5
minutes alone on two cores).
"""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

SIZE = 6
MAX_REQUESTS_PER_PAIR = 4.0
MAX_SECONDS_PER_PAIR = 20.0

# What a request asks, by the opening words of its system prompt (the generator's prompts,
# documents/generation.py and documents/checks.py, and the labeller's).
KINDS = (
    ("You extract facts", "statements"),
    ("You work with statements", "combined statements"),
    # Longer openings first: the unanswerable question's prompt opens as the question's.
    ("You write one question for a search engine that the given", "unanswerable question"),
    ("You write one question", "question"),
    ("You answer a question", "reading"),
    ("You review test questions", "critiques"),
    ("Read the context, then the question", "label"),
    ("You sort questions", "label"),
    ("You reword", "wording"),
    ("You write test questions", "simple pairs"),
)


def kind_of(request: dict[str, Any]) -> str:
    """What one cached request asked, by its system prompt; a re-ask is its kind too."""
    messages = request.get("messages") or []
    opening = str(messages[0].get("content", "")) if messages else ""
    for prefix, kind in KINDS:
        if opening.startswith(prefix):
            return kind
    return "other: " + " ".join(opening.split()[:4])


def requests_by_kind(cache: Path) -> dict[str, dict[str, int]]:
    """Requests, prompt and completion tokens per kind, from an LLM cache that started
    empty (every row one request sent to the model)."""
    out: dict[str, Counter[str]] = {}
    with sqlite3.connect(cache) as conn:
        rows = conn.execute("SELECT request, prompt_tokens, completion_tokens FROM llm_cache")
        for request, prompt, completion in rows:
            kind = kind_of(json.loads(request))
            tally = out.setdefault(kind, Counter())
            tally["requests"] += 1
            tally["prompt_tokens"] += prompt
            tally["completion_tokens"] += completion
    return {k: dict(v) for k, v in sorted(out.items(), key=lambda kv: -kv[1]["requests"])}


def _generate(folder: Path) -> tuple[dict[str, Any], float, Path]:
    """The demo's document step for ``SIZE`` pairs: its stats, wall seconds, and run."""
    from ragaudit.documents.options import DocumentOptions
    from ragaudit.rundir import RunDir
    from ragaudit.steps.demo import DOCUMENT_CONTEXTS, demo_config
    from ragaudit.steps.documents import generate_from_documents
    from ragaudit.steps.session import Session
    from ragaudit.world.build import build_world

    world = folder / "world"
    build_world(world, size=60, seed=0, force=True)
    config = demo_config(world, folder, groups=9, use_llm=True, llm="local")
    demo = config.generate.documents
    assert demo is not None and demo.max_contexts == DOCUMENT_CONTEXTS
    options = DocumentOptions.model_validate(
        demo.model_dump() | {"size": SIZE, "max_contexts": None}
    )
    run = RunDir.from_config(config).create()
    start = time.perf_counter()
    with Session(config, run, None) as session:
        generate_from_documents(session, options)
    seconds = time.perf_counter() - start
    stats = json.loads(run.documents_stats.read_text(encoding="utf-8"))
    return stats, seconds, run.root


def run() -> dict[str, Any]:
    """Generate on the demo's reports, then measure the model's limit in the same run."""
    if importlib.util.find_spec("xllamacpp") is None:
        return {"skipped": "the embedded model is not installed (ragaudit[local])"}
    from benchmarks import bench_model_limit

    with tempfile.TemporaryDirectory() as tmp:
        stats, seconds, run_path = _generate(Path(tmp))
        accepted = int(stats["accepted"])
        calls, tokens = int(stats["calls"]), int(stats["tokens"])
        usage = run_path / "usage.json"
        step = json.loads(usage.read_text(encoding="utf-8"))["steps"]["generate-documents"]
        out: dict[str, Any] = {
            "pairs_asked": SIZE,
            "pairs_accepted": accepted,
            "candidates": stats["candidates"],
            "dropped": stats["dropped"],
            "requests": calls,
            "prompt_tokens": step["prompt_tokens"],
            "cached_prompt_tokens": step["cached_prompt_tokens"],
            "completion_tokens": step["completion_tokens"],
            "seconds": round(seconds, 1),
            "requests_by_kind": requests_by_kind(run_path / "cache" / "llm.sqlite"),
        }
        if accepted:
            out |= {
                "requests_per_pair": round(calls / accepted, 2),
                "tokens_per_pair": round(tokens / accepted),
                "seconds_per_pair": round(seconds / accepted, 1),
                "target_requests_per_pair_at_most_4": calls / accepted <= MAX_REQUESTS_PER_PAIR,
                "target_seconds_per_pair_at_most_20": seconds / accepted <= MAX_SECONDS_PER_PAIR,
            }
        else:
            out["target_some_pair_accepted"] = False
        limit = bench_model_limit.run(quick=True, usage=[usage])
    # Steps are named by their run folder: "demo/generate-documents".
    rows = limit.get("steps") or {}
    row = next((v for k, v in rows.items() if k.endswith("/generate-documents")), {})
    out |= {
        "limit_generation_tokens_per_s": limit.get("generate_1_tokens_per_s"),
        "limit_prompt_400_tokens_per_s": limit.get("prompt_400_tokens_per_s"),
        "step_wall_s": row.get("wall_s"),
        "ideal_s": row.get("ideal_s"),
        "fraction_of_limit": row.get("fraction_of_limit"),
    }
    return out


if __name__ == "__main__":
    result = run()
    print(json.dumps(result, indent=2))
