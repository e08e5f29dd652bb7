"""The reliability of a reference-free metric against grounded verdicts (pure): counts by
hand, the AUROC against scipy's Mann-Whitney U, the threshold a precision target needs, and
the split by group tag and label."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from ragaudit.analysis.metrics import Example
from ragaudit.analysis.reliability import (
    Scored,
    auc,
    auroc,
    core,
    metric_reliability,
    reference_free_figures,
    threshold_for_precision,
    undefined_kind,
)
from ragaudit.records.models import FreeScoreRecord, MetricScore


def _items(pairs: list[tuple[float | None, bool | None]]) -> list[Scored]:
    return [
        Scored(score=s, correct=c, undefined=None if s is not None else "no claims")
        for s, c in pairs
    ]


def test_precision_recall_and_let_through_by_hand() -> None:
    items = _items(
        [
            (1.0, True),
            (0.8, True),
            (0.2, True),
            (0.9, False),
            (0.6, False),
            (0.1, False),
            (0.0, False),
        ]
    )
    figures = core(items, threshold=0.5)
    # Called correct (>= 0.5): 1.0 T, 0.8 T, 0.9 F, 0.6 F.
    assert (figures.precision.k, figures.precision.n) == (2, 4)
    assert (figures.recall.k, figures.recall.n) == (2, 3)
    assert (figures.let_through.k, figures.let_through.n) == (2, 4)
    assert figures.responses == 7 and figures.correct == 3


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_agrees_with_mann_whitney(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # Discrete scores, as faithfulness gives: many ties.
    pos = list(rng.choice([0.0, 0.5, 1.0], size=40, p=[0.1, 0.3, 0.6]))
    neg = list(rng.choice([0.0, 0.5, 1.0], size=30, p=[0.3, 0.3, 0.4]))
    u = mannwhitneyu(pos, neg, alternative="two-sided").statistic
    assert auc(pos, neg) == pytest.approx(u / (len(pos) * len(neg)))
    area = auroc(pos, neg, seed=seed)
    assert area.value == pytest.approx(u / (len(pos) * len(neg)))
    assert area.ci95[0] <= area.value <= area.ci95[1]


def test_auroc_is_undefined_without_both_kinds() -> None:
    area = auroc([0.5, 1.0], [])
    assert area.value is None and area.undefined == "no wrong answer was scored"
    assert auroc([], [0.1]).undefined == "no right answer was scored"


def test_threshold_for_a_precision_target() -> None:
    items = _items([(0.2, False), (0.4, True), (0.6, False), (0.7, True), (0.9, True), (1.0, True)])
    # >= 0.7: 3 of 3 right; >= 0.6: 3 of 4; >= 0.4: 4 of 5.
    target = threshold_for_precision(items, 0.9)
    assert target.threshold == 0.7
    assert target.precision is not None and target.precision.value == 1.0
    assert target.recall is not None and (target.recall.k, target.recall.n) == (3, 4)
    assert threshold_for_precision(items, 0.8).threshold == 0.4  # 4 of 5, the lowest
    hard = threshold_for_precision(_items([(1.0, False), (0.5, True)]), 0.9)
    assert hard.threshold is None
    assert hard.undefined == "no threshold reaches it: the best precision is 0.50, at 0.5"


def test_undefined_scores_are_counted_by_kind_and_left_out() -> None:
    items = [
        Scored(0.9, True),
        Scored(None, True, "malformed reply: no valid reply after 3 attempts"),
        Scored(None, False, "malformed reply: other detail"),
        Scored(None, False, "LLM failed: 500"),
        Scored(None, True, "the answer makes no factual claim"),
        Scored(0.1, None),  # the judge could not decide
    ]
    figures = metric_reliability("faithfulness", items, 0.5)
    assert figures.undefined == {
        "LLM failed": 1,
        "malformed reply": 2,
        "the answer makes no factual claim": 1,
    }
    assert figures.unjudged == 1 and figures.responses == 1
    assert figures.mean_score == pytest.approx(0.5)
    assert figures.sentence.endswith(
        "It could not score 4 answers (LLM failed: 1, malformed reply: 2, "
        "the answer makes no factual claim: 1)."
    )
    assert undefined_kind("LLM failed: timeout") == "LLM failed"
    assert undefined_kind("nothing was retrieved") == "nothing was retrieved"


def test_figures_by_system_tag_and_label() -> None:
    # Group g1 is robust for rag (both right), g2 a gap (both wrong), g3 non-robust.
    cases = [
        ("q1", "g1", True, 1.0, "fact_single"),
        ("q2", "g1", True, 0.5, "fact_single"),
        ("q3", "g2", False, 1.0, "summary"),
        ("q4", "g2", False, 0.0, "summary"),
        ("q5", "g3", True, 1.0, "fact_single"),
        ("q6", "g3", False, 1.0, "summary"),
    ]
    examples = [
        Example(query_id=q, group_id=g, variant="short", correct=c, system="rag", label=label)
        for q, g, c, _, label in cases
    ]
    records = [
        FreeScoreRecord(
            query_id=q,
            system="rag",
            metrics={"faithfulness": MetricScore(score=s, calls=2, tokens=10)},
        )
        for q, _, _, s, _ in cases
    ]
    figures = reference_free_figures(examples, records, {"faithfulness": 1.0})
    assert figures is not None
    faith = figures.metrics["faithfulness"]
    assert list(faith.by_tag) == ["gap", "non-robust", "robust"]
    assert (faith.by_tag["gap"].let_through.k, faith.by_tag["gap"].let_through.n) == (1, 2)
    assert faith.by_tag["robust"].recall.value == 0.5
    assert (faith.by_label["summary"].let_through.k, faith.by_label["summary"].let_through.n) == (
        2,
        3,
    )
    assert figures.calls_per_response == {"faithfulness": 2.0}
    assert figures.by_system["rag"]["faithfulness"].responses == 6
    assert faith.sentence.startswith(
        "On this data, faithfulness >= 1 calls 67% of the wrong answers correct (2 of 3)"
    )
    assert reference_free_figures(examples, [], {"faithfulness": 1.0}) is None
