"""Every figure per question label, and labels compared within a system: paired by group
where the groups' wordings carry both labels, undefined (and said so) where none does."""

from __future__ import annotations

from ragaudit.analysis.by_label import label_breakdown
from ragaudit.analysis.metrics import Example


def _ex(q: int, group: int, label: str | None, correct: bool, system: str = "rag") -> Example:
    return Example(
        query_id=f"q{q}", group_id=f"g{group}", variant="short" if q % 2 else "long",
        correct=correct, system=system, label=label, retrieval_correct=correct,
    )  # fmt: skip


def test_labels_are_figured_and_compared_paired_by_group() -> None:
    # 30 groups of two wordings: one labelled fact_single (right), one reasoning (wrong
    # in 24 groups of 30).
    examples = [
        e
        for g in range(30)
        for e in (_ex(2 * g, g, "fact_single", True), _ex(2 * g + 1, g, "reasoning", g >= 24))
    ] + [_ex(999, 99, None, False)]
    figures, comparisons = label_breakdown(examples)
    assert set(figures["rag"]) == {"fact_single", "reasoning"}  # the unlabelled one is out
    assert figures["rag"]["fact_single"].accuracy.k == 30
    assert figures["rag"]["reasoning"].accuracy.k == 6
    assert figures["rag"]["reasoning"].n_groups == 30
    accuracy = next(c for c in comparisons if c.metric == "accuracy")
    assert accuracy.n_groups == 30 and accuracy.p_value is not None and accuracy.p_value < 0.01
    assert {accuracy.a.variant, accuracy.b.variant} == {"fact_single", "reasoning"}
    assert any(c.metric == "accuracy_retrieval" for c in comparisons)
    assert all(c.a.system == c.b.system for c in comparisons)


def test_labels_in_separate_groups_are_not_tested_as_if_paired() -> None:
    examples = [_ex(i, i, "fact_single" if i < 10 else "summary", i < 10) for i in range(20)]
    figures, comparisons = label_breakdown(examples)
    assert figures["rag"]["summary"].accuracy.k == 0
    accuracy = next(c for c in comparisons if c.metric == "accuracy")
    assert accuracy.p_value is None and accuracy.n_groups == 0
    assert accuracy.undefined


def test_no_labels_no_breakdown() -> None:
    assert label_breakdown([_ex(1, 1, None, True)]) == ({}, [])
