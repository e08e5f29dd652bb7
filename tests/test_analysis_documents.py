"""The figures of generation from documents (cost per pair, requested vs observed labels,
critique ratings, distance to a uniform label mix) and the split of the analysis by the
source of the queries. Pure functions on records built here."""

from __future__ import annotations

import random

import pytest

from ragaudit.analysis.documents import (
    composition_distance,
    distance_difference,
    generation_figures,
    source_breakdown,
    strategy_figures,
    total_variation,
)
from ragaudit.analysis.metrics import Example
from ragaudit.records.models import CandidateRecord, CritiqueRating


def _candidate(
    i: int,
    *,
    strategy: str = "statements",
    requested: str | None = "fact_single",
    observed: str | None = "fact_single",
    ratings: tuple[int, int, int, int] | None = (5, 4, 5, 5),
    dropped: str | None = None,
    calls: int = 4,
    tokens: int = 1000,
) -> CandidateRecord:
    names = ("stand_alone", "specificity", "question_grounding", "answer_grounding")
    return CandidateRecord(
        candidate_id=f"c{i}",
        context_id=f"doc{i}#0",
        gold_ids=[f"doc{i}"],
        strategy=strategy,  # type: ignore[arg-type]
        requested_label=requested,  # type: ignore[arg-type]
        question=f"Question {i}?",
        answer="An answer.",
        critiques=None
        if ratings is None
        else {n: CritiqueRating(rating=r, reason="") for n, r in zip(names, ratings, strict=True)},
        observed_label=observed,  # type: ignore[arg-type]
        accepted=dropped is None,
        dropped=dropped,
        calls=calls,
        tokens=tokens,
    )


def test_total_variation_is_zero_for_uniform_and_three_quarters_for_one_label() -> None:
    assert total_variation([5, 5, 5, 5]) == 0.0
    assert total_variation([8, 0, 0, 0]) == pytest.approx(0.75)
    assert total_variation([2, 2, 0, 0]) == pytest.approx(0.5)


def test_composition_distance_has_an_interval_around_its_value() -> None:
    rng = random.Random(1)
    balanced = [
        rng.choice(["fact_single", "summary", "reasoning", "unanswerable"]) for _ in range(200)
    ]
    skewed = ["fact_single"] * 190 + ["summary"] * 10
    near = composition_distance(balanced)
    far = composition_distance(skewed)
    assert near.value is not None and far.value is not None
    assert near.value < 0.15 < 0.6 < far.value
    for d in (near, far):
        assert d.ci95[0] <= d.value <= d.ci95[1]
        assert d.n == 200
    assert near.ci95[1] < far.ci95[0]
    # Deterministic for a seed.
    assert composition_distance(skewed, seed=3) == composition_distance(skewed, seed=3)


def test_nothing_labelled_is_an_undefined_distance_not_zero() -> None:
    empty = composition_distance([])
    assert empty.value is None and empty.n == 0 and "n/a" in str(empty)
    assert distance_difference([], ["summary"]) is None


def test_the_difference_says_which_side_is_closer_to_uniform() -> None:
    balanced = ["fact_single", "summary", "reasoning", "unanswerable"] * 10
    skewed = ["fact_single"] * 36 + ["summary"] * 4
    found = distance_difference(balanced, skewed)
    assert found is not None
    point, (low, high) = found
    assert point == pytest.approx(total_variation([36, 4, 0, 0]))
    assert 0 < low <= point <= high
    reverse = distance_difference(skewed, balanced)
    assert reverse is not None and reverse[1][1] < 0


def test_strategy_figures_count_cost_confusion_and_critiques() -> None:
    candidates = [
        _candidate(0),
        _candidate(1, requested="summary", observed="fact_single"),
        _candidate(2, requested="summary", observed="summary", ratings=(5, 2, 5, 5)),
        _candidate(3, requested="summary", ratings=(5, 2, 5, 5), dropped="critique: low"),
        _candidate(4, requested="reasoning", observed=None, ratings=None, dropped="support: x"),
    ]
    f = strategy_figures(candidates, {"specificity": 3})
    assert (f.candidates, f.accepted) == (5, 3)
    assert f.dropped == {"critique": 1, "support": 1}
    assert (f.calls, f.tokens) == (20, 5000)
    assert f.calls_per_pair == pytest.approx(20 / 3)
    assert f.confusion == {
        "fact_single": {"fact_single": 1},
        "summary": {"fact_single": 2, "summary": 1},
    }
    assert f.composition["fact_single"].k == 3 and f.composition["fact_single"].n == 4
    summary = f.critiques["summary"]["specificity"]
    assert summary.mean == pytest.approx(8 / 3)
    assert (summary.passed.k, summary.passed.n) == (1, 3)
    assert "reasoning" not in f.critiques  # never critiqued


def test_a_strategy_that_accepts_nothing_has_no_cost_per_pair() -> None:
    f = strategy_figures([_candidate(0, dropped="llm: facts: broken", ratings=None, observed=None)])
    assert f.accepted == 0 and f.calls_per_pair is None and f.tokens_per_pair is None
    assert f.distance.value is None


def test_simple_pairs_are_filed_under_the_labellers_label() -> None:
    figures = generation_figures(
        [
            _candidate(0, strategy="simple", requested=None, observed="fact_single"),
            _candidate(1, strategy="simple", requested=None, observed="summary"),
            _candidate(2),
        ]
    )
    assert list(figures.strategies) == ["simple", "statements"]
    simple = figures.strategies["simple"]
    assert simple.confusion == {"any": {"fact_single": 1, "summary": 1}}
    assert set(simple.critiques) == {"fact_single", "summary"}


def _examples(origin: str, prefix: str, right: int) -> list[Example]:
    return [
        Example(f"{prefix}{g}-{v}", f"{prefix}{g}", v, g < right, g < right, "kw", origin=origin)
        for g in range(6)
        for v in ("short", "generated")
    ]


def test_each_source_is_analyzed_on_its_own() -> None:
    sql = _examples("sql", "s", right=6)
    docs = _examples("document", "d", right=1)
    split = source_breakdown(sql + docs)
    assert set(split) == {"document", "sql"}
    assert split["sql"].systems["kw"].variants["short"].accuracy.value == 1.0
    assert split["document"].systems["kw"].variants["short"].accuracy.value == pytest.approx(1 / 6)
    assert all(c.a.system == "kw" for c in split["document"].comparisons)
    assert source_breakdown(sql) == {}
