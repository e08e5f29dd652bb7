"""The regression gate: is a candidate run significantly worse than a baseline run, beyond
a stated margin? Pure.

Both runs answer the same dataset, so each semantic group has a numerator and a
denominator on each side (for accuracy: correct answers and answers), and the metric is
their ratio of sums. The candidate minus the baseline is the sum over groups of

    d_g = c_g / C - b_g / B        (C, B: the two sides' denominators summed)

The gate tests "the candidate is worse by more than the margin m" one-sidedly: under the
null hypothesis at its boundary (the true difference is -m), the shifted contributions
d_g + m w_g (w_g the group's share of the queries, averaged over the sides) are centred
on zero, and since each group's two sides are exchangeable there, each contribution is as
likely to have either sign. The p-value is the share of random sign flips whose sum is as
low as the observed one (with the +1 correction). With m = 0 this is the paired
permutation test of :mod:`ragaudit.analysis.significance`, one-sided. Several checks (systems
x metrics) share the gate's alpha (Bonferroni), so that the gate as a whole raises a false
alarm at most alpha of the time.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ragaudit.analysis.significance import PairedCounts, compare
from ragaudit.analysis.summary import Interval

Status = Literal["regression", "pass", "not tested"]
_CHUNK = 512


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class GateCheck(_Model):
    """One metric of one system, candidate against baseline, paired by group."""

    system: str
    metric: str
    baseline: float | None = Field(description="the metric on the baseline run")
    candidate: float | None = Field(description="the metric on the candidate run")
    difference: float | None = Field(description="candidate - baseline")
    ci95: Interval | None = Field(description="95% bootstrap interval of the difference")
    p_value: float | None = Field(
        description="one-sided p-value of 'worse by more than the margin'"
    )
    alpha: float = Field(description="the level this check is held to (Bonferroni share)")
    margin: float = Field(description="the drop tolerated")
    n_groups: int = Field(ge=0, description="groups on both sides")
    status: Status
    reason: str | None = Field(None, description="why the check was not tested")

    def sentence(self) -> str:
        """The check in one line."""
        if self.status == "not tested" or self.difference is None:
            return f"{self.system} {self.metric}: not tested ({self.reason})."
        low, high = self.ci95 or (self.difference, self.difference)
        figures = (
            f"{self.baseline:.3f} -> {self.candidate:.3f}, {self.difference:+.3f} "
            f"[{low:+.3f}, {high:+.3f}], p = {_p(self.p_value)}, {self.n_groups} groups"
        )
        if self.status == "regression":
            return (
                f"{self.system} {self.metric}: REGRESSION, worse by more than "
                f"{self.margin:g} ({figures}; alpha {self.alpha:.3g})."
            )
        return f"{self.system} {self.metric}: pass ({figures})."


def _p(value: float | None) -> str:
    if value is None:
        return "n/a"
    return "< 0.001" if value < 0.001 else f"{value:.3g}"


def one_sided_p(counts: PairedCounts, margin: float, n_perm: int, seed: int) -> float:
    """P-value of "side b (the candidate) is worse than side a (the baseline) by more
    than ``margin``" from random sign flips of the groups' shifted contributions."""
    total_a = float(np.sum(counts.total_a))
    total_b = float(np.sum(counts.total_b))
    contribution = counts.correct_b / total_b - counts.correct_a / total_a
    share = (counts.total_b / total_b + counts.total_a / total_a) / 2
    shifted = (contribution + margin * share).astype(np.float64)
    observed = float(shifted.sum())
    rng = np.random.default_rng(seed)
    low = 0
    for start in range(0, n_perm, _CHUNK):
        signs = rng.integers(0, 2, size=(min(_CHUNK, n_perm - start), shifted.size)) * 2 - 1
        low += int(np.sum(signs @ shifted <= observed + 1e-12))
    return (low + 1) / (n_perm + 1)


def gate_check(
    system: str,
    metric: str,
    counts: PairedCounts,
    *,
    margin: float = 0.0,
    alpha: float = 0.05,
    n_perm: int = 2000,
    seed: int = 0,
) -> GateCheck:
    """One check: ``counts`` side a is the baseline, side b the candidate (numerators and
    denominators per paired group)."""

    def untested(reason: str, base: float | None = None, cand: float | None = None) -> GateCheck:
        return GateCheck(
            system=system,
            metric=metric,
            baseline=base,
            candidate=cand,
            difference=None,
            ci95=None,
            p_value=None,
            alpha=alpha,
            margin=margin,
            n_groups=len(counts.groups),
            status="not tested",
            reason=reason,
        )

    if not counts.groups:
        return untested("no semantic group is on both runs")
    total_a, total_b = float(np.sum(counts.total_a)), float(np.sum(counts.total_b))
    base = float(np.sum(counts.correct_a)) / total_a if total_a > 0 else None
    cand = float(np.sum(counts.correct_b)) / total_b if total_b > 0 else None
    if base is None or cand is None:
        side = (
            "either run"
            if base is None and cand is None
            else ("the baseline" if base is None else "the candidate")
        )
        return untested(f"nothing to count on {side}", base, cand)
    interval = compare(counts, "accuracy", n_boot=1000, n_perm=1, seed=seed).ci95
    ci = (0.0 - interval[1], 0.0 - interval[0]) if interval is not None else None  # b - a
    p = one_sided_p(counts, margin, n_perm, seed)
    return GateCheck(
        system=system,
        metric=metric,
        baseline=base,
        candidate=cand,
        difference=cand - base,
        ci95=ci,
        p_value=p,
        alpha=alpha,
        margin=margin,
        n_groups=len(counts.groups),
        status="regression" if p < alpha else "pass",
    )


class GateReport(_Model):
    """The gate's verdict over every check, and what was paired."""

    baseline: str = Field(description="the baseline run")
    candidate: str = Field(description="the candidate run")
    alpha: float = Field(description="the gate's false-alarm rate, shared by its checks")
    margin: float
    checks: list[GateCheck]
    notes: list[str] = Field(default_factory=list, description="what did not pair, and why")

    @property
    def regressions(self) -> list[GateCheck]:
        """The checks the candidate fails."""
        return [c for c in self.checks if c.status == "regression"]

    @property
    def passed(self) -> bool:
        """No check found the candidate significantly worse beyond the margin."""
        return not self.regressions

    def headline(self) -> str:
        """One line: the verdict and its counts."""
        tested = sum(c.status != "not tested" for c in self.checks)
        if self.regressions:
            return (
                f"FAIL: {len(self.regressions)} of {tested} checks significantly worse than the "
                f"baseline by more than {self.margin:g} (alpha {self.alpha:g})"
            )
        return (
            f"PASS: none of {tested} checks significantly worse than the baseline by more "
            f"than {self.margin:g} (alpha {self.alpha:g})"
        )
