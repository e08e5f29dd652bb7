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


def _accuracy(c: np.ndarray, n: np.ndarray) -> np.ndarray:
    total = n.sum(axis=-1)
    return np.divide(c.sum(axis=-1), total, out=np.full(total.shape, np.nan), where=total > 0)


def _robustness(c: np.ndarray, n: np.ndarray) -> np.ndarray:
    outside_gaps = np.where(c > 0, n, 0).sum(axis=-1)
    return np.divide(
        c.sum(axis=-1),
        outside_gaps,
        out=np.full(outside_gaps.shape, np.nan),
        where=outside_gaps > 0,
    )


METRICS = {"accuracy": _accuracy, "robustness": _robustness}


@dataclass(frozen=True)
class Comparison:
    """One metric compared between side a and side b."""

    metric: str
    a: float
    b: float
    difference: float
    ci95: tuple[float, float]
    p_value: float
    n_groups: int

    def significant(self, alpha: float = 0.05) -> bool:
        return self.p_value < alpha

    def verdict(self, name_a: str, name_b: str, alpha: float = 0.05) -> str:
        """One sentence a person can act on."""
        low, high = self.ci95
        figures = (
            f"{self.metric} {self.a:.2f} vs {self.b:.2f}, difference {self.difference:+.2f} "
            f"[{low:+.2f}, {high:+.2f}], p = {self.p_value:.3g}, {self.n_groups} groups"
        )
        if not self.significant(alpha):
            return (
                f"No significant {self.metric} difference between {name_a} and {name_b} "
                f"({figures})."
            )
        better, worse = (name_a, name_b) if self.difference > 0 else (name_b, name_a)
        quality = "accurate" if self.metric == "accuracy" else "robust"
        return f"{worse} is less {quality} than {better} ({figures})."

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "a": self.a,
            "b": self.b,
            "difference": self.difference,
            "ci95": list(self.ci95),
            "p_value": self.p_value,
            "n_groups": self.n_groups,
        }


def compare(
    counts: PairedCounts,
    metric: str = "accuracy",
    *,
    n_boot: int = 2000,
    n_perm: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Difference a - b of ``metric`` with a group bootstrap interval and a paired
    permutation p-value (two-sided, with the +1 correction)."""
    f = METRICS[metric]
    ca, na, cb, nb = counts.correct_a, counts.total_a, counts.correct_b, counts.total_b
    g = len(counts.groups)
    a, b = float(f(ca, na)), float(f(cb, nb))
    observed = a - b
    rng = np.random.default_rng(seed)
    if g == 0:
        return Comparison(metric, a, b, observed, (float("nan"),) * 2, 1.0, 0)
    idx = rng.integers(0, g, size=(n_boot, g))
    boot = f(ca[idx], na[idx]) - f(cb[idx], nb[idx])
    boot = boot[~np.isnan(boot)]
    low, high = np.quantile(boot, [0.025, 0.975]) if boot.size else (np.nan, np.nan)
    swap = rng.random((n_perm, g)) < 0.5
    perm = f(np.where(swap, cb, ca), np.where(swap, nb, na)) - f(
        np.where(swap, ca, cb), np.where(swap, na, nb)
    )
    perm = perm[~np.isnan(perm)]
    extreme = np.sum(np.abs(perm) >= abs(observed) - 1e-12)
    p = float((extreme + 1) / (perm.size + 1))
    return Comparison(metric, a, b, observed, (float(low), float(high)), p, g)
