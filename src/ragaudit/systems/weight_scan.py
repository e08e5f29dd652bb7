"""The text-weight scan of "Know Your RAG": Recall@k of a hybrid retriever at several text
weights, for every query, at the cost of about one retrieval pass.

Each query is scored lexically (BM25) and densely (MiniLM) once; every weight only mixes
the two normalized score vectors again (``w * lexical + (1 - w) * dense``, exactly as
:class:`~ragaudit.systems.retrievers.HybridRetriever` does) and takes the top k. Dense
scores are computed for a batch of queries in one matrix product. The result per query and
weight is the share of its gold documents among the top k documents.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ragaudit.systems.corpus import Chunk
from ragaudit.systems.retrievers import BM25Retriever, DenseRetriever, minmax, top_documents

DEFAULT_WEIGHTS: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0)
_BATCH = 64


def scan_recall(
    chunks: list[Chunk],
    queries: Sequence[str],
    gold: Sequence[Sequence[str]],
    *,
    weights: Sequence[float] = DEFAULT_WEIGHTS,
    k: int = 5,
    index_dir: Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Recall@``k`` of each query (rows) at each text weight (columns): the share of the
    query's ``gold`` documents among the top ``k`` documents of the hybrid retriever with
    that weight. ``progress`` is called with the number of queries done after each batch."""
    if len(queries) != len(gold):
        raise ValueError("one list of gold ids per query")
    if any(not 0.0 <= w <= 1.0 for w in weights):
        raise ValueError("text weights must lie in [0, 1]")
    out = np.zeros((len(queries), len(weights)))
    if not chunks or not queries:
        return out
    lexical = BM25Retriever(chunks, index_dir) if any(w > 0 for w in weights) else None
    dense = DenseRetriever(chunks, index_dir) if any(w < 1 for w in weights) else None
    w = np.asarray(weights, dtype=np.float64)[:, None]
    for start in range(0, len(queries), _BATCH):
        batch = list(queries[start : start + _BATCH])
        dense_scores = None
        if dense is not None:
            dense_scores = dense.score_many(batch)
        for j, query in enumerate(batch):
            mixed = np.zeros((len(weights), len(chunks)))
            if lexical is not None:
                mixed += w * minmax(lexical.scores(query))
            if dense_scores is not None:
                mixed += (1 - w) * minmax(dense_scores[j])
            wanted = set(gold[start + j])
            if not wanted:
                continue
            for col in range(len(weights)):
                top = top_documents(chunks, mixed[col], k)
                found = wanted.intersection(hit.doc_id for hit in top)
                out[start + j, col] = len(found) / len(wanted)
        if progress is not None:
            progress(min(start + _BATCH, len(queries)))
    return out
