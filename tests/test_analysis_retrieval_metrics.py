"""Recall@k, reciprocal rank and nDCG@k per query, and their means with intervals per system,
variant and label (analysis/retrieval_metrics.py)."""

from __future__ import annotations

import math

import pytest

from ragaudit.analysis.metrics import wilson
from ragaudit.analysis.retrieval_metrics import (
    mean_interval,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
)


def test_ranking_metrics() -> None:
    assert recall_at_k(["a", "b", "c"], ["b", "z"], 2) == 0.5
    assert reciprocal_rank(["a", "b"], ["b"]) == 0.5
    assert reciprocal_rank(["a"], ["b"]) == 0.0
    assert ndcg_at_k(["b", "a"], ["b"], 2) == 1.0
    assert ndcg_at_k(["a", "b"], ["b"], 2) == pytest.approx(1 / math.log2(3))


def test_ranking_summary_per_variant_and_label_up_to_the_retrieval_depth() -> None:
    from ragaudit.analysis import Example
    from ragaudit.analysis.retrieval_metrics import ranking_columns, ranking_summary

    examples = [
        Example("q1", "g1", "short", True, None, "s", ("a", "b", "c"), ("a",), "fact_single"),
        Example("q2", "g1", "long", True, None, "s", ("b", "a", "c"), ("a",), "fact_single"),
        Example("q3", "g2", "long", True, None, "s", ("x", "y", "z"), ("a",), "summary"),
        Example("q4", "g2", "long", True, None, "s", ("x",), None, "summary"),  # no gold: out
        Example("q5", "g2", "long", True, None, "t", (), ("a",)),  # never retrieves: out
    ]
    ranking = ranking_summary(examples)
    assert set(ranking) == {"s"} and ranking["s"].depth == 3
    long = ranking["s"].variants["long"]
    assert long["recall@1"].value == 0.0 and long["recall@3"].value == 0.5
    assert long["mrr"].value == 0.25 and long["mrr"].n == 2
    assert "recall@5" not in long  # deeper than anything retrieved
    assert ranking["s"].labels["summary"]["recall@3"].value == 0.0
    assert ranking_columns(ranking) == ["recall@1", "recall@3", "mrr", "ndcg@3"]


def test_ranking_summary_agrees_with_the_per_query_metrics() -> None:
    import random

    from ragaudit.analysis import Example
    from ragaudit.analysis.retrieval_metrics import ranking_summary

    rng = random.Random(3)
    docs = [f"d{i}" for i in range(8)]
    examples = []
    for i in range(300):
        retrieved = tuple(rng.sample(docs, rng.randint(1, 6)) + rng.sample(docs, 1))
        gold = tuple(rng.sample(docs, rng.choice([1, 1, 2, 3])))
        examples.append(Example(f"q{i}", f"g{i}", "v", True, None, "s", retrieved, gold))
    got = ranking_summary(examples)["s"].variants["v"]
    depth = max(len(ex.retrieved or ()) for ex in examples)
    assert depth == 7
    for k in (1, 3, 5):
        expected = sum(recall_at_k(ex.retrieved, ex.gold, k) for ex in examples) / 300  # type: ignore[arg-type]
        assert got[f"recall@{k}"].value == pytest.approx(expected)
    mrr = sum(reciprocal_rank(ex.retrieved, ex.gold) for ex in examples) / 300  # type: ignore[arg-type]
    assert got["mrr"].value == pytest.approx(mrr)
    ndcg = sum(ndcg_at_k(ex.retrieved, ex.gold, 5) for ex in examples) / 300  # type: ignore[arg-type]
    assert got["ndcg@5"].value == pytest.approx(ndcg)


def test_mean_interval_is_never_a_point_and_is_wilson_for_hits() -> None:
    # 22 of 22 found is not certainty: the normal interval would be [1, 1].
    all_found = mean_interval([1.0] * 22)
    assert all_found.value == 1.0 and all_found.ci95 == wilson(22, 22)
    assert all_found.ci95[0] == pytest.approx(0.8513, abs=1e-4)
    hits = mean_interval([1, 0, 1, 1, 0, 1, 1])
    assert hits.ci95 == wilson(5, 7)
    # Equal fractional scores: the Wilson interval at their mean, not a point.
    same = mean_interval([0.5] * 10)
    assert same.ci95[0] < 0.5 < same.ci95[1]
    assert same.ci95 == pytest.approx(wilson(5, 10))
    # Varied fractional scores (MRR, nDCG): the normal approximation.
    scores = [0.2, 0.9, 0.4, 1.0, 0.5]
    mean = sum(scores) / len(scores)
    sd = math.sqrt(sum((x - mean) ** 2 for x in scores) / (len(scores) - 1))
    half = 1.959963984540054 * sd / math.sqrt(len(scores))
    varied = mean_interval(scores)
    assert varied.ci95 == pytest.approx((mean - half, min(1.0, mean + half)))
