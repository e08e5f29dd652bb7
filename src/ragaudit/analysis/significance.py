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
from typing import Any

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
    return np.divide(num, den, out=np.full(np.shape(num), np.nan), where=den > 0)


METRICS = ("accuracy", "robustness")
_CHUNK = 256  # resamples per matrix product: memory stays ~ _CHUNK x groups


@dataclass(frozen=True)
class Comparison:
    """One metric compared between side a and side b."""

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

    @property
    def p_text(self) -> str:
        """``p = 0.0123``, or ``p < 0.001`` at the resolution of 1,000 permutations."""
        if self.p_value is None:
            return "not tested"
        return "p < 0.001" if self.p_value < 0.001 else f"p = {self.p_value:.3g}"

    def verdict(self, name_a: str, name_b: str, alpha: float = 0.05) -> str:
        """One sentence a person can act on; for an undefined metric, why it was not
        compared (an undefined figure is never tested, let alone called significant)."""
        if self.undefined is not None or self.ci95 is None or self.difference is None:
            where = {"a": name_a, "b": name_b}.get(self.undefined_side or "", "both sides")
            reason = self.undefined or "undefined"
            return (
                f"No {self.metric} comparison between {name_a} and {name_b}: on {where}, {reason}."
            )
        assert self.a is not None and self.b is not None
        low, high = self.ci95
        figures = (
            f"{self.metric} {self.a:.2f} vs {self.b:.2f}, difference {self.difference:+.2f} "
            f"[{low:+.2f}, {high:+.2f}], {self.p_text}, {self.n_groups} groups"
        )
        if not self.significant(alpha):
            return (
                f"No significant {self.metric} difference between {name_a} and {name_b} "
                f"({figures})."
            )
        # Worse side first, so that the figures read in the sentence's order.
        if self.difference > 0:
            worse, better, w, b = name_b, name_a, self.b, self.a
        else:
            worse, better, w, b = name_a, name_b, self.a, self.b
        sign = -1 if self.difference > 0 else 1
        lo, hi = sorted((sign * low, sign * high))
        quality = "accurate" if self.metric == "accuracy" else "robust"
        return (
            f"{worse} is less {quality} than {better} ({self.metric} {w:.2f} vs {b:.2f}, "
            f"difference {sign * self.difference:+.2f} [{lo:+.2f}, {hi:+.2f}], "
            f"{self.p_text}, {self.n_groups} groups)."
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "a": self.a,
            "b": self.b,
            "difference": self.difference,
            "ci95": list(self.ci95) if self.ci95 is not None else None,
            "p_value": self.p_value,
            "n_groups": self.n_groups,
            "undefined": (
                f"side {self.undefined_side}: {self.undefined}"
                if self.undefined_side
                else self.undefined
            ),
        }


def compare_many(
    counts: PairedCounts,
    metrics: tuple[str, ...] = METRICS,
    *,
    n_boot: int = 1000,
    n_perm: int = 1000,
    seed: int = 0,
) -> list[Comparison]:
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
) -> list[Comparison]:
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
            Comparison(
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
        out.append(Comparison(metric, a, b, observed[i], (float(low), float(high)), p, g))
    return out


def _undefined(metric: str, a: float, b: float, groups: int) -> Comparison:
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
    return Comparison(
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
) -> Comparison:
    """One metric of :func:`compare_many`."""
    return compare_many(counts, (metric,), n_boot=n_boot, n_perm=n_perm, seed=seed)[0]
