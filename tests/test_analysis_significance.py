"""The paired test, validated by simulation: its false-positive rate stays at alpha when
there is no effect, and it finds a real effect of 15 points most of the time."""

from __future__ import annotations

import numpy as np
import pytest

from ragaudit.analysis.comparisons import verdict
from ragaudit.analysis.significance import PairedCounts, compare

GROUPS, PER_SIDE, DATASETS = 60, 3, 500


def _simulate(rng: np.random.Generator, effect: float) -> PairedCounts:
    # Group difficulty varies: each group's chance of a correct answer is its own.
    base = rng.uniform(0.2, 0.9, size=GROUPS)
    a = rng.binomial(PER_SIDE, base)
    b = rng.binomial(PER_SIDE, np.clip(base - effect, 0, 1))
    n = np.full(GROUPS, PER_SIDE)
    return PairedCounts([f"g{i}" for i in range(GROUPS)], a, n, b, n)


def _rejections(effect: float) -> float:
    rng = np.random.default_rng(12345)
    hits = 0
    for i in range(DATASETS):
        result = compare(_simulate(rng, effect), n_boot=10, n_perm=400, seed=i)
        hits += result.p_value < 0.05
    return hits / DATASETS


def test_false_positive_rate_without_effect() -> None:
    assert _rejections(0.0) <= 0.07


def test_power_with_a_15_point_effect() -> None:
    assert _rejections(0.15) >= 0.80


def test_interval_and_verdict_on_a_clear_difference() -> None:
    ones, zeros = np.full(40, 3), np.zeros(40, dtype=np.int64)
    counts = PairedCounts(
        [f"g{i}" for i in range(40)],
        ones,
        np.full(40, 3),
        np.where(np.arange(40) % 2 == 0, ones, zeros),
        np.full(40, 3),
    )
    result = compare(counts)
    assert result.difference == pytest.approx(0.5)
    assert result.ci95[0] > 0.3 and result.ci95[1] <= 0.7
    assert result.p_value < 0.001
    assert verdict(result, "short", "long").startswith("long is less accurate than short")
    robust = compare(counts, "robustness")
    assert robust.a == 1.0 and robust.b == 1.0  # the failing groups of b are all gaps
    assert not robust.significant()
    assert verdict(robust, "short", "long").startswith("No significant robustness difference")


def test_undefined_robustness_is_never_tested() -> None:
    """Every group of side b is a gap: robustness of b is undefined, so the comparison has
    no difference, interval or p-value, and is not significant in either order."""
    up = {f"g{i}": (2, 2) for i in range(30)}
    down = {f"g{i}": (0, 2) for i in range(30)}
    for a, b, side in ((up, down, "b"), (down, up, "a")):
        result = compare(PairedCounts.from_dicts(a, b), "robustness")
        assert result.undefined is not None and result.undefined_side == side
        assert (result.difference, result.ci95, result.p_value) == (None, None, None)
        assert not result.significant()
        assert verdict(result, "A", "B").startswith("No robustness comparison between A and B")
        accuracy = compare(PairedCounts.from_dicts(a, b), "accuracy")
        assert accuracy.significant() and accuracy.undefined is None


def test_shared_resamples_give_each_outcome_its_own_figures() -> None:
    """Answer and retrieval comparisons share one set of resamples (issue 13, defect 15):
    each outcome's interval and p-value are exactly those it gets alone."""
    from ragaudit.analysis.significance import compare_many, compare_sets

    rng = np.random.default_rng(3)
    groups = [f"g{i}" for i in range(80)]
    answer = PairedCounts.from_dicts(
        {g: (int(rng.integers(0, 4)), 3) for g in groups},
        {g: (int(rng.integers(0, 4)), 3) for g in groups},
    )
    retrieval = PairedCounts.from_dicts(
        {g: (int(rng.integers(0, 4)), 3) for g in groups},
        {g: (int(rng.integers(1, 4)), 3) for g in groups},
    )
    alone = compare_many(answer, seed=5) + compare_many(retrieval, seed=5)
    shared = compare_sets(
        [(m, c) for c in (answer, retrieval) for m in ("accuracy", "robustness")], seed=5
    )
    assert shared == alone


def test_fewer_resamples_per_chunk_give_the_same_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past 131,072 groups a chunk holds fewer resamples (memory stays bounded): the draws,
    and so the intervals and p-values, are those of the full chunks."""
    from ragaudit.analysis import significance

    rng = np.random.default_rng(1)
    a = {f"g{i}": (int(rng.integers(0, 4)), 3) for i in range(500)}
    b = {f"g{i}": (int(rng.integers(0, 4)), 3) for i in range(500)}
    counts = significance.PairedCounts.from_dicts(a, b)
    whole = significance.compare_many(counts, seed=4)
    monkeypatch.setattr(significance, "_CHUNK_DRAWS", 500 * 7)  # 7 resamples a chunk
    assert significance._chunk(500) == 7
    assert significance.compare_many(counts, seed=4) == whole
