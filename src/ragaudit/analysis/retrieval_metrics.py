"""Ranking metrics of retrieval against gold document ids (binary relevance). Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence


def recall_at_k(retrieved: Sequence[str], gold: Sequence[str], k: int) -> float:
    """Share of the gold documents found in the top ``k``."""
    wanted = set(gold)
    return len(wanted & set(retrieved[:k])) / len(wanted) if wanted else 0.0


def reciprocal_rank(retrieved: Sequence[str], gold: Sequence[str]) -> float:
    """1 / rank of the first gold document (0 if none was retrieved); MRR is its mean."""
    wanted = set(gold)
    for rank, doc in enumerate(retrieved, start=1):
        if doc in wanted:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(retrieved: Sequence[str], gold: Sequence[str], k: int) -> float:
    """Normalized discounted cumulative gain of the top ``k`` with binary relevance."""
    wanted = set(gold)
    if not wanted:
        return 0.0
    seen: set[str] = set()
    dcg = 0.0
    for rank, doc in enumerate(retrieved[:k], start=1):
        if doc in wanted and doc not in seen:
            dcg += 1.0 / math.log2(rank + 1)
            seen.add(doc)
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(k, len(wanted)) + 1))
    return dcg / ideal
