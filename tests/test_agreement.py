"""Agreement and composition of question labels (analysis/agreement.py), checked against
published worked examples of Fleiss' kappa."""

from __future__ import annotations

import pytest

from ragaudit.analysis.agreement import (
    count_table,
    fleiss_kappa_table,
    kappa,
    label_figures,
    majority,
)
from ragaudit.records.models import LabelPair, LabelRecord

# Fleiss (1971), Table 1: 30 patients, each diagnosed by 6 psychiatrists into 5 categories
# (depression, personality disorder, schizophrenia, neurosis, other): how many put each
# patient in each category. The paper's kappa over all categories is 0.430.
FLEISS_1971 = [
    [0, 0, 0, 6, 0], [0, 3, 0, 0, 3], [0, 1, 4, 0, 1], [0, 0, 0, 0, 6], [0, 3, 0, 3, 0],
    [2, 0, 4, 0, 0], [0, 0, 4, 0, 2], [2, 0, 3, 1, 0], [2, 0, 0, 4, 0], [0, 0, 0, 0, 6],
    [1, 0, 0, 5, 0], [1, 1, 0, 4, 0], [0, 3, 3, 0, 0], [1, 0, 0, 5, 0], [0, 2, 0, 3, 1],
    [0, 0, 5, 0, 1], [3, 0, 0, 1, 2], [5, 1, 0, 0, 0], [0, 2, 0, 4, 0], [1, 0, 2, 0, 3],
    [0, 0, 0, 0, 6], [0, 1, 0, 5, 0], [0, 2, 0, 1, 3], [2, 0, 0, 4, 0], [1, 0, 0, 4, 1],
    [0, 5, 0, 1, 0], [4, 0, 0, 0, 2], [0, 2, 0, 4, 0], [1, 0, 5, 0, 0], [0, 0, 0, 0, 6],
]  # fmt: skip

# The worked example of Fleiss' kappa on Wikipedia: 10 subjects, 14 raters, 5 categories;
# kappa = 0.210.
WIKIPEDIA = [
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
]  # fmt: skip

CATEGORIES = ["a", "b", "c", "d", "e"]


def _rows(table: list[list[int]]) -> list[list[str]]:
    """Each subject's ratings as labels, from its row of counts."""
    return [[c for c, n in zip(CATEGORIES, row, strict=True) for _ in range(n)] for row in table]


@pytest.mark.parametrize(("table", "published"), [(FLEISS_1971, 0.430), (WIKIPEDIA, 0.210)])
def test_fleiss_kappa_matches_the_published_worked_examples(
    table: list[list[int]], published: float
) -> None:
    rows = _rows(table)
    assert count_table(rows, CATEGORIES).tolist() == table
    assert fleiss_kappa_table(count_table(rows, CATEGORIES)) == pytest.approx(published, abs=5e-4)
    k = kappa(rows, CATEGORIES)
    assert k.value == pytest.approx(published, abs=5e-4)
    assert k.n == len(table)
    low, high = k.ci95
    assert low < k.value < high  # a bootstrap interval around it, not a point


def test_kappa_is_undefined_when_every_rating_is_one_label() -> None:
    k = kappa([["a", "a"], ["a", "a"], ["a", "a"]], CATEGORIES)
    assert k.value is None and k.ci95 is None
    assert "same label" in (k.undefined or "")
    assert kappa([["a", "b"]], CATEGORIES).undefined == "fewer than two pairs rated"


def test_perfect_agreement_is_one_and_chance_level_is_near_zero() -> None:
    assert kappa([["a", "a"], ["b", "b"], ["c", "c"], ["a", "a"]], CATEGORIES).value == 1.0
    # Each subject split evenly between two labels: agreement at or below chance.
    assert kappa([["a", "b"], ["b", "a"], ["a", "b"], ["b", "a"]], CATEGORIES).value <= 0


def test_majority_is_strict_and_ignores_undecided() -> None:
    assert majority(["summary", "summary", "reasoning"]) == "summary"
    assert majority(["summary", "reasoning"]) is None  # a tie
    assert majority(["summary", None, None]) == "summary"
    assert majority([None, None]) is None


def _pair(pid: str, impossible: bool | None = None) -> LabelPair:
    return LabelPair(pair_id=pid, gold_ids=["c1"], question=f"q {pid}?", impossible=impossible)


def _label(pid: str, rater: str, label: str | None) -> LabelRecord:
    return LabelRecord(pair_id=pid, rater=rater, label=label, reason="" if label else "broken")


def test_label_figures_count_composition_flags_and_per_rater_agreement() -> None:
    pairs = [_pair("p1", False), _pair("p2", False), _pair("p3", True), _pair("p4", True)]
    ratings = {
        "p1": ["fact_single", "fact_single", "summary"],
        "p2": ["summary", "reasoning", None],  # a tie among the decided: no consensus
        "p3": ["unanswerable", "unanswerable", "unanswerable"],
        "p4": ["fact_single", "unanswerable", "fact_single"],
    }
    records = [
        _label(pid, rater, label)
        for pid, labels in ratings.items()
        for rater, label in zip(("r1", "r2", "r3"), labels, strict=True)
    ]
    figures = label_figures(pairs, records)
    assert figures.raters == ["r1", "r2", "r3"]
    assert (figures.pairs, figures.labelled, figures.no_majority) == (4, 3, 1)
    assert figures.undecided == {"r1": 0, "r2": 0, "r3": 1}
    assert figures.composition["fact_single"].k == 2
    assert figures.composition["unanswerable"].k == 1
    assert figures.composition["fact_single"].n == 3
    # p3 flagged and labelled unanswerable, p4 flagged but labelled fact_single.
    assert (figures.unanswerable_recall.k, figures.unanswerable_recall.n) == (1, 2)
    assert (figures.unanswerable_false_alarms.k, figures.unanswerable_false_alarms.n) == (0, 1)
    assert figures.fleiss is not None and figures.fleiss.n == 3  # p2 has an undecided rater
    r3 = next(r for r in figures.per_rater if r.rater == "r3")
    # r3 against the majority of r1 and r2: p1 (fact_single) and p3 (unanswerable); p4's
    # others tie (fact_single, unanswerable): discarded; p2 is r3's undecided.
    assert r3.kappa.n == 2 and r3.discarded == 1
    assert r3.confusion["fact_single"]["summary"] == 1
    assert r3.confusion["unanswerable"]["unanswerable"] == 1


def test_one_rater_has_a_composition_and_no_agreement() -> None:
    figures = label_figures([_pair("p1")], [_label("p1", "r1", "reasoning")])
    assert figures.fleiss is None and figures.per_rater == []
    assert figures.composition["reasoning"].value == 1.0
    assert figures.unanswerable_recall is None and figures.composition_answerable is None
