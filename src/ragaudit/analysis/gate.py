"""The regression gate: is a candidate run significantly worse than a baseline run, beyond
a stated margin, and could the gate have told? Pure.

Both runs answer the same dataset, so each semantic group has a numerator and a
denominator on each side (for accuracy: correct answers and answers), and the metric is
their ratio of sums. The candidate minus the baseline is the sum over groups of

    d_g = c_g / C - b_g / B        (C, B: the two sides' denominators summed)

The gate tests "the candidate is worse by more than the margin m" one-sidedly: under the
null hypothesis at its boundary (the true difference is -m), the shifted contributions
d_g + m w_g (w_g the group's share of the queries, averaged over the sides) are centred
on zero, and since each group's two sides are exchangeable there, each contribution is as
likely to have either sign. The p-value is the share of sign flips whose sum is as low as
the observed one: exact (every flip enumerated) on up to
:data:`~ragaudit.analysis.significance.EXACT_MAX` groups, from random flips (+1
correction) beyond. With m = 0 this is the paired permutation test of
:mod:`ragaudit.analysis.significance`, one-sided. Several checks (systems x metrics) share
the gate's alpha (Bonferroni), so that the gate as a whole raises a false alarm at most
alpha of the time.

Repeats (``run --repeat N``): a group's numerator and denominator count every judged
asking of its queries, so its contribution is its pass rate over all its repeats. The
groups stay the unit the signs flip over (the repeats of one query are not independent
evidence: a query its system cannot answer is wrong every time), so the repeats make each
group's figure steadier instead of multiplying the evidence: a flaky system needs a real
drop to fail, not one unlucky run, and a real drop shows through its flakiness.

A check is only as good as its size, and the gate says how good:

* **untestable**: on n paired groups no p-value is below 2^-n (a candidate wrong in every
  group), so a check whose smallest attainable p-value is not below its alpha can never
  fail; it is not a pass;
* **detectable drop**: the smallest drop the check finds with 80% power, from the normal
  approximation of the test, ``margin + (z(1 - alpha) + z(0.8)) * sigma``, where sigma is
  the larger of the observed paired spread and that of an independent rerun of the
  baseline (each query's score varying as a 0/1 score with the baseline's mean: the
  paired design's worst case), and at least ``log2(1 / alpha)`` queries of as many groups
  (fewer lost answers cannot reach alpha). A PASS says that a smaller drop passes
  unnoticed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from statistics import NormalDist
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ragaudit.analysis.significance import (
    EXACT_MAX,
    PairedCounts,
    compare,
    exact_sign_flip_p,
    gaussian_bound_p,
)
from ragaudit.analysis.summary import Interval
from ragaudit.records.models import QueryRecord, stable_id

Status = Literal["regression", "pass", "untestable", "missing"]
MissingPolicy = Literal["fail", "skip"]
POWER = 0.80  # the power the detectable drop is stated at
# A candidate that scored less than this share of the queries the baseline scored (an
# interrupted run, a half-judged one, judge failures) is not compared by default.
DEFAULT_MIN_COVERAGE = 0.9
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
    n_groups: int = Field(ge=0, description="groups paired: scored on both runs, same questions")
    baseline_groups: int = Field(0, ge=0, description="groups the baseline scored the system on")
    n_queries: int = Field(0, ge=0, description="queries paired: scored on both runs")
    baseline_queries: int = Field(0, ge=0, description="queries the baseline scored")
    min_p: float | None = Field(
        None,
        description="the smallest p-value these groups can give (a candidate wrong in every "
        "group); the check can fail only when it is below alpha",
    )
    detectable: float | None = Field(
        None, description="the smallest drop the check finds with 80% power (margin included)"
    )
    status: Status = Field(
        description="regression; pass; untestable (the check could not fail, or is weaker "
        "than asked); missing (the candidate lacks the baseline's system)"
    )
    reason: str | None = Field(None, description="why the check is untestable or missing")
    note: str | None = Field(None, description="what else to know of a pass")

    @property
    def coverage(self) -> str:
        """Paired groups and queries over the baseline's, e.g. ``4 / 312 (16 / 1248)``."""
        groups = f"{self.n_groups} / {self.baseline_groups}"
        if not self.baseline_queries:
            return groups
        return f"{groups} ({self.n_queries} / {self.baseline_queries})"

    def undetected(self) -> str:
        """What a pass does not rule out, in words."""
        if self.detectable is None:
            return "no drop can be measured"
        if self.baseline is not None and self.detectable >= self.baseline:
            return "no drop, even to zero, is found with 80% power at this size"
        return f"a drop smaller than {self.detectable:.3f} can pass unnoticed (80% power)"

    def sentence(self) -> str:
        """The check in one line.

        Examples:
            >>> baseline = {f"g{i}": (2, 2) for i in range(8)}  # group: (correct, answers)
            >>> candidate = {**baseline, "g0": (1, 2)}
            >>> check = gate_check("rag", "accuracy", PairedCounts.from_dicts(baseline, candidate))
            >>> check.status, check.coverage, round(check.difference, 4)
            ('pass', '8 / 8', -0.0625)
            >>> print(check.sentence())  # doctest: +NORMALIZE_WHITESPACE
            rag accuracy: pass (1.000 -> 0.938, -0.062 [-0.214, +0.000], p = 0.5, groups
            (queries) paired of the baseline's 8 / 8); a drop smaller than 0.312 can pass
            unnoticed (80% power).
        """
        head = f"{self.system} {self.metric}"
        if self.status == "missing":
            return f"{head}: MISSING from the candidate ({self.reason})."
        if self.difference is None:
            return f"{head}: UNTESTABLE ({self.reason})."
        low, high = self.ci95 or (self.difference, self.difference)
        figures = (
            f"{self.baseline:.3f} -> {self.candidate:.3f}, {self.difference:+.3f} "
            f"[{low:+.3f}, {high:+.3f}], p {_p(self.p_value)}, groups (queries) paired of "
            f"the baseline's {self.coverage}"
        )
        if self.status == "regression":
            return (
                f"{head}: REGRESSION, worse by more than {self.margin:g} "
                f"({figures}; alpha {self.alpha:.3g})."
            )
        if self.status == "untestable":
            return f"{head}: UNTESTABLE ({self.reason}; {figures})."
        note = f"; {self.note}" if self.note else ""
        return f"{head}: pass ({figures}){note}; {self.undetected()}."


def group_fingerprints(queries: Iterable[QueryRecord]) -> dict[str, str]:
    """Per semantic group, a hash of what it asks and what counts as right: every query's
    id, text, reference and gold documents. Two runs are compared on a group only where
    its fingerprints match (the same questions with the same answers).

    >>> def query(answer):
    ...     return QueryRecord(query_id="q1", group_id="g1", variant="short", query="Staff?",
    ...                        reference={"values": [answer], "display": str(answer)})
    >>> before, after = group_fingerprints([query(12)]), group_fingerprints([query(13)])
    >>> list(before), len(before["g1"]), before == after  # a changed answer is another group
    (['g1'], 32, False)
    """
    parts: dict[str, list[tuple[str, str, str, list[str]]]] = {}
    for q in queries:
        parts.setdefault(q.group_id, []).append(
            (q.query_id, q.query, q.reference.model_dump_json(), sorted(q.gold_ids or []))
        )
    return {group: stable_id(sorted(rows), length=32) for group, rows in parts.items()}


def _p(value: float | None) -> str:
    """``= 0.25``, ``< 0.001`` or ``n/a``: the p-value with its relation."""
    if value is None:
        return "n/a"
    return "< 0.001" if value < 0.001 else f"= {value:.3g}"


def _shifted(counts: PairedCounts, margin: float, correct_b: np.ndarray) -> np.ndarray:
    """Each group's contribution to candidate - baseline, shifted by the margin's share."""
    total_a = float(np.sum(counts.total_a))
    total_b = float(np.sum(counts.total_b))
    contribution = correct_b / total_b - counts.correct_a / total_a
    share = (counts.total_b / total_b + counts.total_a / total_a) / 2
    out: np.ndarray = (contribution + margin * share).astype(np.float64)
    return out


def _lower_p(shifted: np.ndarray, n_perm: int, seed: int) -> float:
    """P(a sign flip's sum <= the observed sum): exact on few groups, else random flips."""
    if np.count_nonzero(shifted) <= EXACT_MAX:
        return exact_sign_flip_p(shifted, "less")
    observed = float(shifted.sum())
    rng = np.random.default_rng(seed)
    low = 0
    for start in range(0, n_perm, _CHUNK):
        signs = rng.integers(0, 2, size=(min(_CHUNK, n_perm - start), shifted.size)) * 2 - 1
        low += int(np.sum(signs @ shifted <= observed + 1e-12))
    return (low + 1) / (n_perm + 1)


def one_sided_p(counts: PairedCounts, margin: float, n_perm: int, seed: int) -> float:
    """P-value of "side b (the candidate) is worse than side a (the baseline) by more
    than ``margin``" from sign flips of the groups' shifted contributions. Where the two
    sides of a group count different denominators (robustness: a group that became a gap
    leaves the candidate's), a group's contribution depends on the other groups', so the
    sides of random groups are swapped and both ratios recomputed instead.

    >>> baseline = {f"g{i}": (2, 2) for i in range(8)}  # group: (correct, answers)
    >>> candidate = {**baseline, "g0": (0, 2), "g1": (0, 2), "g2": (1, 2), "g3": (1, 2)}
    >>> counts = PairedCounts.from_dicts(baseline, candidate)
    >>> one_sided_p(counts, margin=0.0, n_perm=2000, seed=0)  # 4 groups worse: 1 of 16 flips
    0.0625
    >>> round(one_sided_p(counts, margin=0.2, n_perm=2000, seed=0), 3)  # worse by more than 0.2?
    0.176
    """
    if np.any(counts.total_a != counts.total_b):
        return _swapped_p(counts, margin, n_perm, seed)
    return _lower_p(_shifted(counts, margin, counts.correct_b), n_perm, seed)


def _swapped_p(counts: PairedCounts, margin: float, n_perm: int, seed: int) -> float:
    """The share of random side swaps whose candidate - baseline is as low as the
    observed one plus the margin (+1 correction)."""
    a = np.stack([counts.correct_a, counts.total_a], axis=1).astype(np.float64)
    b = np.stack([counts.correct_b, counts.total_b], axis=1).astype(np.float64)
    total_a, total_b = a.sum(axis=0), b.sum(axis=0)
    observed = total_b[0] / total_b[1] - total_a[0] / total_a[1] + margin
    moved = b - a  # swapping group g moves (b_g - a_g) from the candidate to the baseline
    rng = np.random.default_rng(seed)
    low = 0
    for start in range(0, n_perm, _CHUNK):
        swap = (rng.random((min(_CHUNK, n_perm - start), len(a))) < 0.5).astype(np.float64)
        shift = swap @ moved
        cand_num, cand_den = total_b[0] - shift[:, 0], total_b[1] - shift[:, 1]
        base_num, base_den = total_a[0] + shift[:, 0], total_a[1] + shift[:, 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            diff = cand_num / cand_den - base_num / base_den
        low += int(np.sum(np.nan_to_num(diff, nan=np.inf) <= observed + 1e-12))
    return (low + 1) / (n_perm + 1)


def smallest_p(counts: PairedCounts, margin: float = 0.0) -> float:
    """The smallest p-value the check can give on these groups: that of a candidate with
    nothing right in any group (2^-n on n groups the baseline scored anything in). Where
    it is not below alpha, no candidate, however bad, fails the check.

    >>> counts = PairedCounts.from_dicts({"g1": (2, 2), "g2": (1, 2), "g3": (2, 2)},
    ...                                  {"g1": (2, 2), "g2": (1, 2), "g3": (2, 2)})
    >>> smallest_p(counts)  # 3 groups: at best 1 of 8 sign flips, never below alpha 0.05
    0.125
    """
    extreme = _shifted(counts, margin, np.zeros_like(counts.correct_b, dtype=np.float64))
    if np.count_nonzero(extreme) <= EXACT_MAX:
        return exact_sign_flip_p(extreme, "less")
    return gaussian_bound_p(extreme, "less")  # an upper bound: far below any alpha here


def detectable_drop(counts: PairedCounts, alpha: float, margin: float = 0.0) -> float | None:
    """The smallest drop of the metric the check finds with :data:`POWER`, at its alpha,
    on these groups (see the module's docstring), at most 1; None without groups.

    >>> groups = {f"g{i}": (2, 2) for i in range(10)} | {f"g{i}": (1, 2) for i in range(10, 20)}
    >>> round(detectable_drop(PairedCounts.from_dicts(groups, groups), alpha=0.05), 3)
    0.251
    >>> round(detectable_drop(PairedCounts.from_dicts(groups, groups), alpha=0.05, margin=0.05), 3)
    0.301
    """
    total_a, total_b = float(np.sum(counts.total_a)), float(np.sum(counts.total_b))
    if not counts.groups or total_a <= 0 or total_b <= 0:
        return None
    base = min(1.0, max(0.0, float(np.sum(counts.correct_a)) / total_a))
    cand = float(np.sum(counts.correct_b)) / total_b
    # Each group's influence on candidate - baseline (the delta method's terms: exact for
    # equal denominators, and right where a side's denominator leaves out gap groups).
    influence = (counts.correct_b - cand * counts.total_b) / total_b - (
        counts.correct_a - base * counts.total_a
    ) / total_a
    observed = math.sqrt(float(np.sum(influence**2)))
    rerun = math.sqrt(base * (1 - base) * (1 / total_a + 1 / total_b))
    z = _quantiles(alpha, len(counts.groups))
    floor = math.ceil(math.log2(1 / alpha)) / total_a  # lost answers in as many groups
    return min(1.0, margin + max(z * max(observed, rerun), floor))  # no metric drops more


def _quantiles(alpha: float, groups: int) -> float:
    """t(1 - alpha) + t(power) with groups - 1 degrees of freedom (the normal's on many
    groups): the spread of a paired difference is itself estimated from few groups."""
    if groups < 2:
        return NormalDist().inv_cdf(1 - alpha) + NormalDist().inv_cdf(POWER)
    from scipy.stats import t

    return float(t.ppf(1 - alpha, groups - 1) + t.ppf(POWER, groups - 1))


def gate_check(
    system: str,
    metric: str,
    counts: PairedCounts,
    *,
    margin: float = 0.0,
    alpha: float = 0.05,
    n_perm: int = 2000,
    seed: int = 0,
    baseline_groups: int | None = None,
    queries: int = 0,
    baseline_queries: int = 0,
    min_coverage: float = 0.0,
    max_undetectable: float | None = None,
) -> GateCheck:
    """One check: ``counts`` side a is the baseline, side b the candidate (numerators and
    denominators per paired group). ``baseline_groups`` and ``baseline_queries``: what the
    baseline scored the system on (default: the paired groups), ``queries`` what was
    paired, for the coverage. A candidate the same as the baseline in every paired group
    passes. Untestable where the candidate covers less than ``min_coverage`` of the
    baseline's queries (of its groups where queries are not given), where it could not
    fail, where it passes but its detectable drop exceeds ``max_undetectable``, or, for
    robustness, where a run has no group outside its gaps with two queries (R is 1.00 by
    construction there).

    >>> baseline = {f"g{i}": (2, 2) for i in range(8)}  # group: (correct, answers)
    >>> candidate = {**baseline, **{f"g{i}": (1, 2) for i in range(6)}}  # 6 groups lose one
    >>> check = gate_check("rag", "accuracy", PairedCounts.from_dicts(baseline, candidate))
    >>> check.status, check.p_value  # 1 of the 64 sign flips of 6 groups is as low
    ('regression', 0.015625)
    >>> print(check.sentence())
    rag accuracy: REGRESSION, worse by more than 0 (1.000 -> 0.625, -0.375 [-0.500, -0.200],
    p = 0.0156, groups (queries) paired of the baseline's 8 / 8; alpha 0.05).
    >>> few = {g: baseline[g] for g in ("g0", "g1", "g2")}
    >>> lost = {g: (0, 2) for g in few}
    >>> small = gate_check("rag", "accuracy", PairedCounts.from_dicts(few, lost))
    >>> small.status
    'untestable'
    >>> print(small.reason)
    on 3 groups the smallest p-value is 0.125, not below alpha 0.05: no candidate could fail
    """
    n = len(counts.groups)
    of_baseline = n if baseline_groups is None else baseline_groups

    def untestable(reason: str, **figures: object) -> GateCheck:
        values: dict[str, object] = {
            "baseline": None,
            "candidate": None,
            "difference": None,
            "ci95": None,
            "p_value": None,
            **figures,
        }
        return GateCheck(
            system=system,
            metric=metric,
            alpha=alpha,
            margin=margin,
            n_groups=n,
            baseline_groups=of_baseline,
            n_queries=queries,
            baseline_queries=baseline_queries,
            status="untestable",
            reason=reason,
            **values,
        )

    if not counts.groups:
        return untestable("no semantic group is scored on both runs with the same questions")
    total_a, total_b = float(np.sum(counts.total_a)), float(np.sum(counts.total_b))
    base = float(np.sum(counts.correct_a)) / total_a if total_a > 0 else None
    cand = float(np.sum(counts.correct_b)) / total_b if total_b > 0 else None
    if base is None or cand is None:
        side = (
            "either run"
            if base is None and cand is None
            else ("the baseline" if base is None else "the candidate")
        )
        return untestable(f"nothing to count on {side}", baseline=base, candidate=cand)
    if metric == "robustness":
        single = [
            name
            for name, totals in (
                ("the baseline", counts.total_a),
                ("the candidate", counts.total_b),
            )
            if not np.any(totals > 1)
        ]
        if single:
            return untestable(
                f"one query per group on {' and '.join(single)} (no group outside the gaps has "
                "two), so none can be non-robust: robustness is 1.00 by construction and is not "
                "measured",
                baseline=base,
                candidate=cand,
            )
    interval = compare(counts, "accuracy", n_boot=1000, n_perm=1, seed=seed).ci95
    ci = (0.0 - interval[1], 0.0 - interval[0]) if interval is not None else None  # b - a
    p = one_sided_p(counts, margin, n_perm, seed)
    floor = smallest_p(counts, margin)
    detectable = detectable_drop(counts, alpha, margin)
    figures: dict[str, object] = {
        "baseline": base,
        "candidate": cand,
        "difference": cand - base,
        "ci95": ci,
        "p_value": p,
        "min_p": floor,
        "detectable": detectable,
    }
    reason = None
    covered, of = (queries, baseline_queries) if baseline_queries else (n, of_baseline)
    contributions = counts.correct_b / total_b - counts.correct_a / total_a
    same = bool(np.all(np.abs(contributions) <= 1e-12))
    if of and covered / of < min_coverage:
        what = "queries" if baseline_queries else "groups"
        reason = (
            f"the candidate covers {covered} of the baseline's {of} {what} "
            f"({covered / of:.0%}), below the {min_coverage:.0%} asked"
        )
    elif same:
        pass  # not worse in any group: a pass, whatever the power
    elif floor >= alpha:
        reason = (
            f"on {n} groups the smallest p-value is {floor:.3g}, not below alpha "
            f"{alpha:.3g}: no candidate could fail"
        )
    elif (
        p >= alpha
        and max_undetectable is not None
        and detectable is not None
        and detectable > max_undetectable
    ):
        reason = (
            f"too weak: a drop smaller than {detectable:.3f} can pass unnoticed, more than the "
            f"{max_undetectable:g} allowed"
        )
    if reason is not None:
        return untestable(reason, **figures)
    return GateCheck(
        system=system,
        metric=metric,
        alpha=alpha,
        margin=margin,
        n_groups=n,
        baseline_groups=of_baseline,
        n_queries=queries,
        baseline_queries=baseline_queries,
        status="regression" if p < alpha else "pass",
        note="the same as the baseline in every paired group" if same else None,
        **figures,
    )


def missing_check(
    system: str, metric: str, reason: str, *, alpha: float, margin: float, baseline_groups: int
) -> GateCheck:
    """A system of the baseline that the candidate does not have (or scores nothing of).

    >>> check = missing_check("bm25", "accuracy", "no answer in the candidate run", alpha=0.05,
    ...                       margin=0.0, baseline_groups=8)
    >>> check.status
    'missing'
    >>> print(check.sentence())
    bm25 accuracy: MISSING from the candidate (no answer in the candidate run).
    """
    return GateCheck(
        system=system,
        metric=metric,
        baseline=None,
        candidate=None,
        difference=None,
        ci95=None,
        p_value=None,
        alpha=alpha,
        margin=margin,
        n_groups=0,
        baseline_groups=baseline_groups,
        status="missing",
        reason=reason,
    )


Verdict = Literal["PASS", "FAIL", "UNTESTABLE"]


class GateReport(_Model):
    """The gate's verdict over every check, and what was paired."""

    baseline: str = Field(description="the baseline run")
    candidate: str = Field(description="the candidate run")
    alpha: float = Field(description="the gate's false-alarm rate, shared by its checks")
    margin: float
    checks: list[GateCheck]
    notes: list[str] = Field(default_factory=list, description="what did not pair, and why")
    allow_partial: bool = Field(
        False, description="untestable checks are skipped rather than failing the gate"
    )
    missing: MissingPolicy = Field(
        "fail", description="a baseline system the candidate lacks: fail, or skip"
    )

    @property
    def regressions(self) -> list[GateCheck]:
        """The checks the candidate fails."""
        return [c for c in self.checks if c.status == "regression"]

    @property
    def missing_systems(self) -> list[GateCheck]:
        """The baseline's checks the candidate has nothing for."""
        return [c for c in self.checks if c.status == "missing"]

    @property
    def untestable(self) -> list[GateCheck]:
        """The checks that could not fail (or are weaker than asked)."""
        return [c for c in self.checks if c.status == "untestable"]

    @property
    def tested(self) -> list[GateCheck]:
        """The checks that were tested: regression or pass."""
        return [c for c in self.checks if c.status in ("regression", "pass")]

    @property
    def verdict(self) -> Verdict:
        """FAIL on a regression or (unless skipped) a missing system; UNTESTABLE where a
        check could not fail (unless ``allow_partial`` and another was tested); else PASS."""
        if self.regressions or (self.missing_systems and self.missing == "fail"):
            return "FAIL"
        if not self.tested or (self.untestable and not self.allow_partial):
            return "UNTESTABLE"
        return "PASS"

    @property
    def passed(self) -> bool:
        """Every check was tested (or skipped by choice) and none found the candidate
        significantly worse beyond the margin."""
        return self.verdict == "PASS"

    @property
    def exit_code(self) -> int:
        """0 on PASS, 1 on FAIL, 2 on UNTESTABLE: what CI reads."""
        return {"PASS": 0, "FAIL": 1, "UNTESTABLE": 2}[self.verdict]

    def headline(self) -> str:
        """One line: the verdict and its counts.

        Examples:
            >>> baseline = {f"g{i}": (2, 2) for i in range(8)}  # group: (correct, answers)
            >>> worse = {**baseline, **{f"g{i}": (1, 2) for i in range(6)}}  # 6 groups lose one
            >>> dropped = PairedCounts.from_dicts(baseline, worse)
            >>> same = PairedCounts.from_dicts(baseline, baseline)
            >>> checks = [  # two checks share the gate's alpha 0.05
            ...     gate_check("rag", "accuracy", dropped, alpha=0.025),
            ...     gate_check("bm25", "accuracy", same, alpha=0.025),
            ... ]
            >>> report = GateReport(
            ...     baseline="runs/main", candidate="runs/pr", alpha=0.05, margin=0.0, checks=checks
            ... )
            >>> report.verdict, report.exit_code, [c.system for c in report.regressions]
            ('FAIL', 1, ['rag'])
            >>> print(report.headline())
            FAIL: 1 of 2 checks significantly worse than the baseline by more than 0 (alpha 0.05)
        """
        n = len(self.checks)
        parts = []
        if self.regressions:
            parts.append(
                f"{len(self.regressions)} of {n} checks significantly worse than the baseline "
                f"by more than {self.margin:g} (alpha {self.alpha:g})"
            )
        if self.missing_systems:
            names = ", ".join(sorted({c.system for c in self.missing_systems}))
            action = "" if self.missing == "fail" else " (skipped: --missing skip)"
            parts.append(f"the candidate lacks the baseline's {names}{action}")
        if self.untestable:
            action = "skipped (--allow-partial)" if self.allow_partial else "not a pass"
            parts.append(f"{len(self.untestable)} of {n} checks untestable ({action})")
        if self.verdict == "PASS":
            parts.insert(
                0,
                f"none of {len(self.tested)} checks significantly worse than the baseline by "
                f"more than {self.margin:g} (alpha {self.alpha:g})",
            )
        return f"{self.verdict}: " + "; ".join(parts)
