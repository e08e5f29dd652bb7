"""Systems under test (issue 5): BM25 at scale, and the run harness's own overhead.

**BM25.** A synthetic corpus of 100,000 documents (60 words each, drawn from a Zipf-like
vocabulary of 50,000 words, seeded) and 1,000 queries of 6 words, each asking for the top
10. ragaudit's BM25 retriever (bm25s: regex tokenizer with English stop words, a sparse
score matrix, top-k in numpy) against ``rank_bm25.BM25Okapi`` in the same run, both from
raw text (tokenizing included; rank_bm25 gets a plain ``split``). rank_bm25 scores every
document in Python for each query (about 0.2 s each), so it answers the first
``BASELINE_QUERIES`` queries and its time for all 1,000 is extrapolated per query; ours
answers all 1,000. Reported: indexing, querying, and end to end (index once, then 1,000
queries: the shape of an evaluation run). The top-10 lists of both are compared on the
queries both answered (they differ a little: bm25s drops stop words and uses Lucene's idf).

**Harness.** A callable system whose every answer takes 50 ms, asked 2,000 queries at
concurrency 32 by ``ragaudit.harness.ask.run_system`` (records written and fsynced to a
JSONL file as in a real run). The theoretical rate is 32 / 0.05 s = 640 queries/s; a bare
``asyncio`` loop over the same callable (a semaphore, no records) is the baseline measured
in the same run. Both an async callable and a sync one (run in worker threads) are timed.

Targets: BM25 querying and the end-to-end evaluation at least 10x faster than rank_bm25
(indexing alone is reported, not targeted: see docs/benchmarks.md); the harness reaches at
least 90 % of the theoretical rate.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ragaudit import aio  # noqa: E402
from ragaudit.harness.ask import run_system  # noqa: E402
from ragaudit.records.models import QueryRecord, Reference  # noqa: E402
from ragaudit.systems.adapters import CallableSystem  # noqa: E402
from ragaudit.systems.corpus import Chunk  # noqa: E402
from ragaudit.systems.retrievers import BM25Retriever  # noqa: E402

DOCS = 100_000
WORDS_PER_DOC = 60
VOCABULARY = 50_000
QUERIES = 1000
BASELINE_QUERIES = 200
TOP_K = 10

CALLS = 2000
CONCURRENCY = 32
LATENCY = 0.05
TRIALS = 3


def synthetic_corpus(seed: int = 0) -> tuple[list[str], list[str]]:
    """Documents and queries over a Zipf-like vocabulary (a few common words, a long tail)."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(VOCABULARY)]
    cum = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(VOCABULARY)))
    docs = [" ".join(rng.choices(vocab, cum_weights=cum, k=WORDS_PER_DOC)) for _ in range(DOCS)]
    queries = [" ".join(rng.choices(vocab, cum_weights=cum, k=6)) for _ in range(QUERIES)]
    return docs, queries


def bench_bm25() -> dict[str, Any]:
    from rank_bm25 import BM25Okapi

    docs, queries = synthetic_corpus()
    chunks = [Chunk(f"d{i}", 0, text) for i, text in enumerate(docs)]

    start = time.perf_counter()
    ours = BM25Retriever(chunks)
    ours_index = time.perf_counter() - start
    start = time.perf_counter()
    ours_hits = [[h.doc_id for h in ours.retrieve(q, k=TOP_K)] for q in queries]
    ours_query = time.perf_counter() - start

    start = time.perf_counter()
    baseline = BM25Okapi([d.lower().split() for d in docs])
    base_index = time.perf_counter() - start
    ids = [c.doc_id for c in chunks]
    start = time.perf_counter()
    base_hits = [
        baseline.get_top_n(q.lower().split(), ids, n=TOP_K) for q in queries[:BASELINE_QUERIES]
    ]
    base_query = (time.perf_counter() - start) / BASELINE_QUERIES * QUERIES

    pairs = list(zip(ours_hits, base_hits, strict=False))
    top1 = sum(a[0] == b[0] for a, b in pairs) / len(pairs)
    overlap = statistics.mean(len(set(a) & set(b)) / TOP_K for a, b in pairs)
    index_ratio = base_index / ours_index
    query_speedup = base_query / ours_query
    total_speedup = (base_index + base_query) / (ours_index + ours_query)
    return {
        "bm25_documents": DOCS,
        "bm25_queries": QUERIES,
        "bm25_baseline_queries_measured": BASELINE_QUERIES,
        "bm25s_index_s": round(ours_index, 2),
        "bm25s_query_ms_per_query": round(1000 * ours_query / QUERIES, 2),
        "bm25s_end_to_end_s": round(ours_index + ours_query, 2),
        "rank_bm25_index_s": round(base_index, 2),
        "rank_bm25_query_ms_per_query": round(1000 * base_query / QUERIES, 2),
        "rank_bm25_end_to_end_s": round(base_index + base_query, 1),
        "bm25_index_ratio": round(index_ratio, 2),
        "bm25_query_speedup": round(query_speedup, 1),
        "bm25_end_to_end_speedup": round(total_speedup, 1),
        "bm25_top1_agreement": round(top1, 3),
        "bm25_top10_overlap": round(overlap, 3),
        "target_bm25_speedup_met": query_speedup >= 10 and total_speedup >= 10,
    }


def _queries(n: int) -> list[QueryRecord]:
    return [
        QueryRecord(
            query_id=f"q{i}",
            group_id=f"g{i}",
            variant="short",
            query=f"question {i}",
            reference=Reference.from_values(["x"]),
        )
        for i in range(n)
    ]


async def _slow_async(query: str) -> dict[str, Any]:
    await asyncio.sleep(LATENCY)
    return {"answer": f"answer to {query}", "retrieved_ids": ["d1", "d2", "d3"]}


def _slow_sync(query: str) -> dict[str, Any]:
    time.sleep(LATENCY)
    return {"answer": f"answer to {query}", "retrieved_ids": ["d1", "d2", "d3"]}


async def _bare_loop() -> float:
    """The baseline: the same async callable at the same concurrency, nothing recorded."""
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> None:
        async with gate:
            await _slow_async(f"question {i}")

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(CALLS)))
    return CALLS / (time.perf_counter() - start)


def _harness_rate(fn: Any, folder: Path, tag: str) -> float:
    system = CallableSystem("bench", fn, threads=CONCURRENCY)
    out = folder / f"{tag}.jsonl"

    async def go() -> float:
        try:
            stats = await run_system(
                system, _queries(CALLS), out, concurrency=CONCURRENCY, timeout_s=30
            )
        finally:
            await system.aclose()
        assert stats.asked == CALLS and stats.errors == 0
        return stats.rate

    rate = aio.run(go())
    assert out.read_bytes().count(b"\n") == CALLS
    return rate


def bench_harness(trials: int = TRIALS) -> dict[str, Any]:
    theoretical = CONCURRENCY / LATENCY
    rates: dict[str, list[float]] = {"bare_loop": [], "harness_async": [], "harness_sync": []}
    with tempfile.TemporaryDirectory() as tmp:
        for trial in range(trials):
            rates["bare_loop"].append(aio.run(_bare_loop()))
            rates["harness_async"].append(_harness_rate(_slow_async, Path(tmp), f"a{trial}"))
            rates["harness_sync"].append(_harness_rate(_slow_sync, Path(tmp), f"s{trial}"))
    result: dict[str, Any] = {
        "harness_queries": CALLS,
        "harness_concurrency": CONCURRENCY,
        "harness_latency_s": LATENCY,
        "harness_theoretical_per_s": theoretical,
    }
    for name, values in rates.items():
        median = statistics.median(values)
        result[f"{name}_per_s"] = round(median, 1)
        result[f"{name}_trials"] = [round(v, 1) for v in values]
        result[f"{name}_ratio_to_theoretical"] = round(median / theoretical, 3)
    result["target_harness_met"] = (
        result["harness_async_ratio_to_theoretical"] >= 0.9
        and result["harness_sync_ratio_to_theoretical"] >= 0.9
    )
    return result


def run() -> dict[str, Any]:
    return {**bench_bm25(), **bench_harness()}


if __name__ == "__main__":
    for key, value in run().items():
        print(f"{key:40} {value}")
