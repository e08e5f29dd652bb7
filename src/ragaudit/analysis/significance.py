"""Comparisons that hold up: two variants (or two systems) paired by semantic group.

For each group present on both sides we keep (correct, total) per side. The difference in
accuracy and in robustness R gets:

* a 95% interval from a bootstrap that resamples **groups** (queries of a group are not
  independent: they share the same fact and the same retrieval);
* a p-value from a **paired permutation test**: under "no difference", the two sides of a
  group are exchangeable, so each permutation swaps the sides of a random subset of groups.

R on one side counts only groups that are not gaps on that side (a gap travels with its
counts when sides are swapped).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PairedCounts:
    """Per-group counts of the two sides, aligned by group."""

    groups: list[str]
    correct_a: np.ndarray
    total_a: np.ndarray
    correct_b: np.ndarray
    total_b: np.ndarray

    @classmethod
    def from_dicts(
        cls, a: dict[str, tuple[int, int]], b: dict[str, tuple[int, int]]
    ) -> PairedCounts:
        """Keep the groups present on both sides: ``{group: (correct, total)}``."""
        groups = sorted(set(a) & set(b))
        return cls(
            groups,
            np.array([a[g][0] for g in groups], dtype=np.int64),
            np.array([a[g][1] for g in groups], dtype=np.int64),
            np.array([b[g][0] for g in groups], dtype=np.int64),
            np.array([b[g][1] for g in groups], dtype=np.int64),
        )


def _parts(metric: str, c: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Numerator and denominator per group: accuracy = sum(c) / sum(n); R = sum(c) /
    sum(n of groups that are not gaps)."""
    if metric == "accuracy":
        return c.astype(np.float64), n.astype(np.float64)
    if metric == "robustness":
        return c.astype(np.float64), np.where(c > 0, n, 0).astype(np.float64)
    raise ValueError(f"unknown metric {metric!r}")


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    ratio: np.ndarray = np.divide(num, den, out=np.full(np.shape(num), np.nan), where=den > 0)
    return ratio


METRICS = ("accuracy", "robustness")
_CHUNK = 256  # resamples per matrix product: memory stays ~ _CHUNK x groups


@dataclass(frozen=True)
class PairedDifference:
    """One metric compared between side a and side b: its value on each side, the
    difference a - b with its interval and p-value, or why it is undefined. The sentence
    that says it is :func:`ragaudit.analysis.comparisons.verdict`'s."""

    metric: str
    a: float | None
    b: float | None
    difference: float | None
    ci95: tuple[float, float] | None
    p_value: float | None
    n_groups: int
    undefined: str | None = None  # why the metric cannot be compared (then nothing is tested)
    undefined_side: str | None = None  # a, b or both: where it is undefined

    def significant(self, alpha: float = 0.05) -> bool:
        """Whether the difference is significant; never for an undefined comparison."""
        return self.p_value is not None and self.p_value < alpha


def compare_many(
    counts: PairedCounts,
    metrics: tuple[str, ...] = METRICS,
    *,
    n_boot: int = 1000,
    n_perm: int = 1000,
    seed: int = 0,
) -> list[PairedDifference]:
    """Difference a - b of each metric with a group bootstrap interval and a paired
    permutation p-value (two-sided, with the +1 correction). All metrics share the same
    resamples.

    The metrics are ratios of sums over groups, so a resample is a weight vector over
    groups: the bootstrap uses Poisson(1) weights per group, the permutation swaps the
    sides of a random half of the groups; each chunk of resamples is one matrix product,
    so a million records cost seconds and a few hundred MB.
    """
    return compare_sets(
        [(metric, counts) for metric in metrics], n_boot=n_boot, n_perm=n_perm, seed=seed
    )


def compare_sets(
    items: list[tuple[str, PairedCounts]],
    *,
    n_boot: int = 1000,
    n_perm: int = 1000,
    seed: int = 0,
) -> list[PairedDifference]:
    """:func:`compare_many` for metrics of several outcomes over the same groups (e.g. the
    answer's correctness and the retrieval's): one set of resamples serves them all, so
    each outcome costs one more column of a matrix product rather than its own draws.
    Each outcome's figures are those it would get alone (the draws depend on the seed and
    the groups only)."""
    groups = items[0][1].groups if items else []
    if any(c.groups != groups for _, c in items):
        raise ValueError("compare_sets needs the same groups for every item")
    g = len(groups)
    metrics = tuple(metric for metric, _ in items)
    columns = []
    for metric, counts in items:
        num_a, den_a = _parts(metric, counts.correct_a, counts.total_a)
        num_b, den_b = _parts(metric, counts.correct_b, counts.total_b)
        columns.append(np.stack([num_a, den_a, num_b, den_b], axis=1))
    parts = np.concatenate(columns, axis=1) if columns else np.zeros((g, 0))  # groups x 4m
    totals = parts.sum(axis=0)
    m = len(metrics)
    observed = [
        float(
            _ratio(totals[4 * i], totals[4 * i + 1]) - _ratio(totals[4 * i + 2], totals[4 * i + 3])
        )
        for i in range(m)
    ]
    if g == 0:
        return [
            PairedDifference(
                metric, None, None, None, None, None, 0, "no semantic group is on both sides"
            )
            for metric in metrics
        ]
    rng = np.random.default_rng(seed)
    boot: list[list[np.ndarray]] = [[] for _ in metrics]
    for start in range(0, n_boot, _CHUNK):
        weights = rng.poisson(1.0, size=(min(_CHUNK, n_boot - start), g)).astype(np.float32)
        sums = weights @ parts.astype(np.float32)
        for i in range(m):
            boot[i].append(
                _ratio(sums[:, 4 * i], sums[:, 4 * i + 1])
                - _ratio(sums[:, 4 * i + 2], sums[:, 4 * i + 3])
            )
    # Swapping the sides of group i moves (b_i - a_i) from one side's sums to the other's.
    delta = np.concatenate(
        [np.stack([c[:, 2] - c[:, 0], c[:, 3] - c[:, 1]], axis=1) for c in columns], axis=1
    )
    extreme = [0] * m
    total = [0] * m
    for start in range(0, n_perm, _CHUNK):
        swap = (rng.random((min(_CHUNK, n_perm - start), g)) < 0.5).astype(np.float32)
        moved = swap @ delta.astype(np.float32)
        for i in range(m):
            t = totals[4 * i : 4 * i + 4]
            perm = _ratio(t[0] + moved[:, 2 * i], t[1] + moved[:, 2 * i + 1]) - _ratio(
                t[2] - moved[:, 2 * i], t[3] - moved[:, 2 * i + 1]
            )
            perm = perm[~np.isnan(perm)]
            extreme[i] += int(np.sum(np.abs(perm) >= abs(observed[i]) - 1e-9))
            total[i] += perm.size
    out = []
    for i, metric in enumerate(metrics):
        diffs = np.concatenate(boot[i])
        diffs = diffs[~np.isnan(diffs)]
        low, high = np.quantile(diffs, [0.025, 0.975]) if diffs.size else (np.nan, np.nan)
        a = float(_ratio(totals[4 * i], totals[4 * i + 1]))
        b = float(_ratio(totals[4 * i + 2], totals[4 * i + 3]))
        if not (np.isfinite(a) and np.isfinite(b)):
            out.append(_undefined(metric, a, b, g))
            continue
        p = float((extreme[i] + 1) / (total[i] + 1))
        out.append(PairedDifference(metric, a, b, observed[i], (float(low), float(high)), p, g))
    return out


def _undefined(metric: str, a: float, b: float, groups: int) -> PairedDifference:
    """A comparison of a metric that one side (or both) does not define: its value is
    None, with why, and nothing is tested. Robustness is undefined on a side where every
    group is a gap (no query of any group answered correctly: a system that is down or
    always refuses)."""
    sides = [name for name, value in (("a", a), ("b", b)) if not np.isfinite(value)]
    side = "both" if len(sides) == 2 else sides[0]
    why = (
        "every group is a gap (no query answered correctly), so robustness is undefined"
        if metric == "robustness"
        else f"no query to count, so {metric} is undefined"
    )
    return PairedDifference(
        metric,
        a if np.isfinite(a) else None,
        b if np.isfinite(b) else None,
        None,
        None,
        None,
        groups,
        why,
        side,
    )


def compare(
    counts: PairedCounts,
    metric: str = "accuracy",
    *,
    n_boot: int = 1000,
    n_perm: int = 1000,
    seed: int = 0,
) -> PairedDifference:
    """One metric of :func:`compare_many`."""
    return compare_many(counts, (metric,), n_boot=n_boot, n_perm=n_perm, seed=seed)[0]
