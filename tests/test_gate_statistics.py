"""The regression gate's test, validated by simulation: 500 pairs of runs with no true
difference raise a false alarm at most 7% of the time at alpha 0.05, and a 10-point drop
in accuracy on 100 groups is caught at least 80% of the time.

Each simulated run answers 100 semantic groups of 4 wordings (two styles, two wordings
each: the GRAMMAR design); group difficulty varies (each group's chance of a correct
answer is uniform in [0.2, 0.9]). The candidate is a new, independent run of the same
system (no query's verdict carried over: the hardest case for pairing), and for the drop,
each of its correct answers is then made wrong with the chance that removes 10 points."""

from __future__ import annotations

import numpy as np
import pytest

from ragaudit.analysis.gate import gate_check, one_sided_p
from ragaudit.analysis.significance import PairedCounts

GROUPS, WORDINGS, PAIRS = 100, 4, 500


def _pair(rng: np.random.Generator, drop: float, wordings: int = WORDINGS) -> PairedCounts:
    p = rng.uniform(0.2, 0.9, size=GROUPS)
    baseline = rng.random((GROUPS, wordings)) < p[:, None]
    candidate = rng.random((GROUPS, wordings)) < p[:, None]
    if drop:
        candidate &= ~(rng.random((GROUPS, wordings)) < drop / candidate.mean())
    n = np.full(GROUPS, wordings)
    groups = [f"g{i}" for i in range(GROUPS)]
    return PairedCounts(groups, baseline.sum(axis=1), n, candidate.sum(axis=1), n)


def _alarms(drop: float, margin: float = 0.0, seed: int = 2026) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for i in range(PAIRS):
        check = gate_check("s", "accuracy", _pair(rng, drop), margin=margin, n_perm=1000, seed=i)
        hits += check.status == "regression"
    return hits / PAIRS


def test_false_alarm_rate_without_a_true_difference() -> None:
    rate = _alarms(0.0)
    assert rate <= 0.07
    assert rate >= 0.01  # the test is not blind: some noise does cross the line


def test_a_ten_point_drop_on_100_groups_is_caught() -> None:
    assert _alarms(0.10) >= 0.80


def test_a_drop_within_the_margin_is_tolerated() -> None:
    # A true 2-point drop against a 5-point margin: failing it would be a false alarm.
    assert _alarms(0.02, margin=0.05) <= 0.07


def test_the_margin_shifts_the_p_value_monotonically() -> None:
    counts = _pair(np.random.default_rng(5), 0.10)
    ps = [one_sided_p(counts, m, 2000, 0) for m in (0.0, 0.05, 0.10, 0.20)]
    assert ps == sorted(ps)
    assert ps[0] < 0.05 < ps[-1]


def test_an_improvement_is_never_a_regression() -> None:
    rng = np.random.default_rng(9)
    counts = _pair(rng, 0.10)
    better = PairedCounts(
        counts.groups, counts.correct_b, counts.total_b, counts.correct_a, counts.total_a
    )
    check = gate_check("s", "accuracy", better)
    assert check.difference is not None and check.difference > 0
    assert check.status == "pass"
    assert check.p_value is not None and check.p_value > 0.5


@pytest.mark.parametrize(
    ("counts", "reason"),
    [
        (PairedCounts([], np.array([]), np.array([]), np.array([]), np.array([])), "no semantic"),
        (
            PairedCounts(["g"], np.array([1]), np.array([2]), np.array([0]), np.array([0])),
            "nothing to count on the candidate",
        ),
    ],
)
def test_a_check_with_nothing_to_compare_is_untestable(counts: PairedCounts, reason: str) -> None:
    check = gate_check("s", "accuracy", counts)
    assert check.status == "untestable"
    assert check.reason is not None and reason in check.reason
    assert "UNTESTABLE" in check.sentence()
