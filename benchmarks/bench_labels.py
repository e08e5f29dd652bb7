"""Issue 16: the text-weight scan and the labeller's throughput.

* **Scan.** 100,000 documents and 1,000 labelled queries, six text weights, against one
  plain hybrid retrieval pass (``HybridRetriever.retrieve`` at one weight, queries
  embedded ahead) over the same indexes, measured in the same run. Target: the scan takes
  less than 2x the pass. The documents are synthetic text (BM25 scores them as usual); their
  dense index is random unit vectors written where the dense retriever persists its index,
  since what the vectors hold does not change the time and embedding 100,000 documents on
  a CPU would take minutes. Queries are embedded for real.
* **Labelling.** 2,000 pairs labelled through ragaudit's client at concurrency 32 against
  the scripted server (50 ms per reply, a valid label), against the latency bound
  (32 / 0.05 s = 640 calls/s). Target: at least 90% of the bound.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_llm_client import CONCURRENCY, LATENCY, start_server  # noqa: E402
from ragaudit import aio  # noqa: E402
from ragaudit.documents.labels import label_pairs, raters_for  # noqa: E402
from ragaudit.llm import make_llm  # noqa: E402
from ragaudit.llm.options import LLMConfig  # noqa: E402
from ragaudit.records.models import LabelPair  # noqa: E402
from ragaudit.systems.corpus import Document, chunk  # noqa: E402
from ragaudit.systems.retrievers import DENSE_MODEL, HybridRetriever, fingerprint  # noqa: E402
from ragaudit.systems.weight_scan import DEFAULT_WEIGHTS, scan_recall  # noqa: E402

DOCUMENTS = 100_000
QUERIES = 1_000
PAIRS = 2_000
TRIALS = 3


def _corpus(rng: np.random.Generator) -> list[Document]:
    vocabulary = [f"w{i}" for i in range(20_000)]
    weights = 1.0 / np.arange(1, len(vocabulary) + 1)  # Zipf-like word frequencies
    weights /= weights.sum()
    words = rng.choice(len(vocabulary), size=(DOCUMENTS, 40), p=weights)
    return [Document(f"d{i}", " ".join(vocabulary[w] for w in row)) for i, row in enumerate(words)]


def _random_dense_index(chunks: list[Any], index_dir: Path, rng: np.random.Generator) -> None:
    folder = index_dir / f"dense-{fingerprint(chunks, 'dense', DENSE_MODEL)}"
    folder.mkdir(parents=True, exist_ok=True)
    vectors = rng.standard_normal((len(chunks), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    np.save(folder / "embeddings.npy", vectors)
    (folder / "complete").write_text("ok\n")


def scan_benchmark(trials: int = TRIALS) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    documents = _corpus(rng)
    chunks = chunk(documents, "document")
    picks = rng.choice(DOCUMENTS, QUERIES, replace=False)
    # A query is eight words of its gold document: BM25 finds most of them.
    queries = [" ".join(documents[i].text.split()[::5]) for i in picks]
    gold = [[documents[i].id] for i in picks]
    result: dict[str, Any] = {
        "documents": DOCUMENTS,
        "queries": QUERIES,
        "weights": len(DEFAULT_WEIGHTS),
    }
    with tempfile.TemporaryDirectory() as tmp:
        index_dir = Path(tmp)
        _random_dense_index(chunks, index_dir, rng)
        start = time.perf_counter()
        HybridRetriever(chunks, 0.5, index_dir)  # builds the BM25 index once, for both
        result["index_build_s"] = round(time.perf_counter() - start, 1)
        passes, scans = [], []
        for _ in range(trials):  # interleaved, so a slow spell of the machine hits both
            start = time.perf_counter()
            retriever = HybridRetriever(chunks, 0.5, index_dir)
            retriever.prepare(queries)
            hits = [retriever.retrieve(q, 5) for q in queries]
            passes.append(time.perf_counter() - start)
            start = time.perf_counter()
            recall = scan_recall(chunks, queries, gold, k=5, index_dir=index_dir)
            scans.append(time.perf_counter() - start)
        found = np.mean([g[0] in {h.doc_id for h in hs} for g, hs in zip(gold, hits, strict=True)])
        assert abs(found - recall[:, DEFAULT_WEIGHTS.index(0.5)].mean()) < 1e-9
    one_pass, scan = statistics.median(passes), statistics.median(scans)
    result |= {
        "hybrid_pass_s": round(one_pass, 2),
        "hybrid_pass_trials_s": [round(t, 2) for t in passes],
        "scan_s": round(scan, 2),
        "scan_trials_s": [round(t, 2) for t in scans],
        "scan_ratio_to_one_pass": round(scan / one_pass, 3),
        "recall_at_5_by_weight": [round(float(v), 3) for v in recall.mean(axis=0)],
        "target_scan_under_2x_pass": scan < 2 * one_pass,
    }
    return result


async def _label_all(
    client: Any, model: str, pairs: list[LabelPair], contexts: dict[str, str]
) -> list[Any]:
    try:
        raters = raters_for([model], ["default"], 1)
        return await label_pairs({model: client}, raters, pairs, contexts)
    finally:
        await client.aclose()


def label_benchmark(trials: int = TRIALS) -> dict[str, Any]:
    reply = json.dumps({"label": "fact_single", "reason": "one value"})
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    proc, base_url = start_server(reply)  # pins the server and this process apart
    pairs = [
        LabelPair(pair_id=f"p{i}", gold_ids=[f"c{i % 200}"], question=f"Question number {i}?")
        for i in range(PAIRS)
    ]
    contexts = {
        p.pair_id: f"Context {p.gold_ids[0]} says something about item {i}."
        for i, p in enumerate(pairs)
    }
    bound = CONCURRENCY / LATENCY
    rates = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for trial in range(trials):
                config = LLMConfig(
                    model=f"openai:bench{trial}",
                    base_url=base_url,
                    api_key="sk-bench-000000000000",
                    max_concurrency=CONCURRENCY,
                    timeout_s=30,
                )
                client = make_llm(config, cache_path=Path(tmp) / f"labels-{trial}.sqlite")

                start = time.perf_counter()
                records = aio.run(_label_all(client, config.model, pairs, contexts))
                rates.append(PAIRS / (time.perf_counter() - start))
                client.close()
                assert sum(r.label == "fact_single" for r in records) == PAIRS
    finally:
        proc.terminate()
        proc.wait(10)
        if cores:
            os.sched_setaffinity(0, cores)
    median = statistics.median(rates)
    return {
        "pairs": PAIRS,
        "concurrency": CONCURRENCY,
        "latency_s": LATENCY,
        "latency_bound_calls_per_s": bound,
        "labels_per_s": round(median, 1),
        "labels_per_s_trials": [round(r, 1) for r in rates],
        "labels_ratio_to_bound": round(median / bound, 3),
        "target_labelling_90pct_of_bound": median >= 0.9 * bound,
    }


def run() -> dict[str, Any]:
    scan = {
        k if k.startswith(("scan", "target", "hybrid")) else f"scan_{k}": v
        for k, v in scan_benchmark().items()
    }
    return {**scan, **label_benchmark()}


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
