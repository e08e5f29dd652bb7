"""Comparisons that hold up: two variants (or two systems) paired by semantic group.

For each group present on both sides we keep (correct, total) per side. The difference in
accuracy and in robustness R gets:

* a 95% interval from a bootstrap that resamples **groups** (queries of a group are not
  independent: they share the same fact and the same retrieval);
* a p-value from a **paired permutation test**: under "no difference", the two sides of a
  group are exchangeable, so each permutation swaps the sides of a random subset of groups.

R on one side counts only groups that are not gaps on that side (a gap travels with its
counts when sides are swapped). R is not compared where a side has no group outside its
gaps with two queries or more: a group of one query is never non-robust, so that side's R
is 1.00 by construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np


@dataclass(frozen=True)
class PairedCounts:
    """Per-group counts of the two sides, aligned by group.

    >>> counts = PairedCounts.from_dicts({"g1": (2, 2), "g2": (1, 2), "g3": (0, 2)},
    ...                                  {"g1": (1, 2), "g2": (0, 2), "g4": (2, 2)})
    >>> counts.groups, counts.correct_a.tolist(), counts.correct_b.tolist()  # g3, g4: one side
    (['g1', 'g2'], [2, 1], [1, 0])
    """

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
# At most this many draws per chunk: past 131,072 groups (10M answers have a million) a
# chunk holds fewer resamples, so that its draws stay ~256 MB. The draws are the same
# numbers in the same order whatever the chunk size, and so are the figures.
_CHUNK_DRAWS = 1 << 25


def _chunk(groups: int) -> int:
    """Resamples per chunk for ``groups`` groups."""
    return max(1, min(_CHUNK, _CHUNK_DRAWS // max(groups, 1)))


@dataclass(frozen=True)
class PairedDifference:
    """One metric compared between side a and side b: its value on each side, the
    difference a - b with its interval and p-value, or why it is undefined. The sentence
    that says it is :func:`ragaudit.analysis.comparisons.verdict`'s.

    >>> result = PairedDifference("accuracy", 0.9, 0.6, 0.3, (0.1, 0.5), 0.002, 12)
    >>> result.significant(), result.significant(alpha=0.001)
    (True, False)
    >>> PairedDifference("robustness", None, 0.5, None, None, None, 12, "every group is a gap",
    ...                  "a").significant()  # undefined: never significant
    False
    """

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

    >>> a = {f"g{i}": (2, 2) for i in range(10)}  # group: (correct, answers)
    >>> b = {f"g{i}": (2, 2) if i < 3 else (1, 2) for i in range(10)}  # 7 groups lose one
    >>> results = compare_many(PairedCounts.from_dicts(a, b), seed=0)  # a - b, paired by group
    >>> [(r.metric, round(r.difference, 3), round(r.p_value, 3)) for r in results]
    [('accuracy', 0.35, 0.02), ('robustness', 0.35, 0.02)]
    >>> [round(x, 3) for x in results[0].ci95]
    [0.2, 0.5]
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
    the groups only).

    >>> answers = PairedCounts.from_dicts({"g1": (2, 2), "g2": (2, 2), "g3": (1, 2)},
    ...                                   {"g1": (1, 2), "g2": (0, 2), "g3": (1, 2)})
    >>> retrievals = PairedCounts.from_dicts({"g1": (2, 2), "g2": (2, 2), "g3": (2, 2)},
    ...                                      {"g1": (2, 2), "g2": (1, 2), "g3": (2, 2)})
    >>> results = compare_sets([("accuracy", answers), ("accuracy", retrievals)], seed=0)
    >>> [round(r.difference, 3) for r in results]
    [0.5, 0.167]
    """
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
    chunk = _chunk(g)
    boot: list[list[np.ndarray]] = [[] for _ in metrics]
    for start in range(0, n_boot, chunk):
        weights = rng.poisson(1.0, size=(min(chunk, n_boot - start), g)).astype(np.float32)
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
    for start in range(0, n_perm, chunk):
        swap = (rng.random((min(chunk, n_perm - start), g)) < 0.5).astype(np.float32)
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
        if metric == "robustness":
            single = _one_query_sides(columns[i])
            if single is not None:
                out.append(
                    PairedDifference(
                        metric, None, None, None, None, None, g, ONE_QUERY_PER_GROUP, single
                    )
                )
                continue
        p = float((extreme[i] + 1) / (total[i] + 1))
        out.append(PairedDifference(metric, a, b, observed[i], (float(low), float(high)), p, g))
    return out


ONE_QUERY_PER_GROUP = (
    "no group outside the gaps has two queries, so none can be non-robust: robustness is "
    "not measured"
)


def _one_query_sides(parts: np.ndarray) -> str | None:
    """Where R cannot be measured in one metric's parts (groups x [num a, den a, num b,
    den b], gap groups already at 0): the side ("a", "b" or "both") none of whose groups
    counts two queries or more, or None."""
    sides = [name for name, column in (("a", 1), ("b", 3)) if not np.any(parts[:, column] > 1)]
    if not sides:
        return None
    return "both" if len(sides) == 2 else sides[0]


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
    """One metric of :func:`compare_many`.

    >>> a = {f"g{i}": (2, 2) for i in range(10)}  # group: (correct, answers)
    >>> b = {f"g{i}": (2, 2) if i < 3 else (1, 2) for i in range(10)}  # 7 groups lose one
    >>> result = compare(PairedCounts.from_dicts(a, b), "accuracy", seed=0)
    >>> result.a, result.b, round(result.difference, 2), round(result.p_value, 3)
    (1.0, 0.65, 0.35, 0.02)
    >>> compare(PairedCounts.from_dicts(a, {}), "accuracy").undefined
    'no semantic group is on both sides'
    """
    return compare_many(counts, (metric,), n_boot=n_boot, n_perm=n_perm, seed=seed)[0]


# -- sign-flip p-values past what random permutations resolve ----------------------------------
#
# A paired permutation p-value drawn from n random swaps is at least 1 / (n + 1). Where a
# family of many tests (compare's pairs under Holm) or a small study (the gate on a few
# groups) needs more, the sign-flip distribution of the linear statistic sum_g x_g (each
# group's contribution to the difference, flipped when its two sides are swapped) gives
# p-values without drawing: exactly by enumeration on up to EXACT_MAX non-zero
# contributions, and otherwise by a Gaussian tail bound that holds for every n.

EXACT_MAX = 32  # non-zero contributions enumerated exactly: 2 x 2^16 half sums
# Bentkus and Dzindzalieta (2015, Bernoulli 21(2)): for a Rademacher sum S = sum_i a_i e_i
# with sum_i a_i^2 <= 1, P(S >= x) <= c (1 - Phi(x)) for every x, with this c (about 3.18).
_BENTKUS_C = 1.0 / (4.0 * (1.0 - 0.5 * (1.0 + math.erf(1.0))))
Alternative = Literal["less", "two-sided"]


def contributions(counts: PairedCounts, metric: str = "accuracy") -> np.ndarray:
    """Each group's part of the difference a - b of ``metric`` (a ratio of sums), with the
    two sides' denominators fixed: swapping a group's sides flips the sign of its part
    where both sides have the same denominator, and (to first order) otherwise.

    >>> counts = PairedCounts.from_dicts({"g1": (2, 2), "g2": (1, 2)}, {"g1": (1, 2), "g2": (1, 2)})
    >>> contributions(counts).tolist()  # g1 makes the whole difference 0.75 - 0.5
    [0.25, 0.0]
    """
    num_a, den_a = _parts(metric, counts.correct_a, counts.total_a)
    num_b, den_b = _parts(metric, counts.correct_b, counts.total_b)
    total_a, total_b = float(den_a.sum()), float(den_b.sum())
    if total_a <= 0 or total_b <= 0:
        return np.zeros(len(counts.groups))
    out: np.ndarray = num_a / total_a - num_b / total_b
    return out


def _nonzero(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    scale = float(np.abs(x).max()) if x.size else 0.0
    kept: np.ndarray = x[np.abs(x) > 1e-12 * max(scale, 1e-300)] if scale > 0 else x[:0]
    return kept


def _signed_sums(x: np.ndarray) -> np.ndarray:
    """The 2^len(x) sums of x under every sign assignment."""
    sums = np.zeros(1)
    for value in x:
        sums = np.concatenate((sums + value, sums - value))
    return sums


def exact_sign_flip_p(x: np.ndarray, alternative: Alternative = "two-sided") -> float:
    """The exact sign-flip p-value of the observed sum of ``x``: the share of the 2^n sign
    assignments whose sum is as low (``less``) or as far from zero (``two-sided``). Zeros
    do not move the sum and are dropped; at most :data:`EXACT_MAX` non-zero values (the
    two halves' sums are enumerated and one is searched: meet in the middle).

    >>> exact_sign_flip_p(np.array([-1.0, -1.0, -1.0]), "less")  # 1 of 8 is as low
    0.125
    >>> exact_sign_flip_p(np.array([-1.0, -1.0, -1.0]))  # 2 of 8 as far from zero
    0.25
    """
    x = _nonzero(x)
    n = x.size
    if n > EXACT_MAX:
        raise ValueError(f"exact_sign_flip_p enumerates at most {EXACT_MAX} values, not {n}")
    if n == 0:
        return 1.0
    observed = float(x.sum())
    tol = 1e-9 * float(np.abs(x).sum())
    left = _signed_sums(x[: n // 2])
    right = np.sort(_signed_sums(x[n // 2 :]))
    if alternative == "less":
        count = int(np.searchsorted(right, observed - left + tol, side="right").sum())
    else:
        bound = abs(observed) - tol
        if bound <= 0:
            return 1.0
        high = right.size - np.searchsorted(right, bound - left, side="left")
        low = np.searchsorted(right, -bound - left, side="right")
        count = int(high.sum() + low.sum())
    return min(1.0, count / float(2**n))


def gaussian_bound_p(x: np.ndarray, alternative: Alternative = "two-sided") -> float:
    """An upper bound of the exact sign-flip p-value of the observed sum of ``x``, valid for
    any number of groups and any sizes (Bentkus and Dzindzalieta's Gaussian bound for
    weighted Rademacher sums: at most about 3.18 times the normal tail). Larger than the
    exact p-value, so a test that uses it keeps its level; it is meant for the far tail,
    where random permutations cannot reach.

    >>> x = np.full(200, -0.01)  # 200 groups, each a little worse on side a
    >>> exact = 2.0 ** -200  # only the observed signs are as low
    >>> bound = gaussian_bound_p(x, "less")
    >>> exact <= bound < 1e-8
    True
    """
    x = _nonzero(x)
    if x.size == 0:
        return 1.0
    sigma = math.sqrt(float(np.sum(x * x)))
    observed = float(x.sum())
    z = -observed / sigma if alternative == "less" else abs(observed) / sigma
    tail = 0.5 * math.erfc(z / math.sqrt(2.0))
    return min(1.0, _BENTKUS_C * tail * (2.0 if alternative == "two-sided" else 1.0))


def sign_flip_p(x: np.ndarray, alternative: Alternative = "two-sided") -> float:
    """The sign-flip p-value of the observed sum of ``x`` without random draws: exact on up
    to :data:`EXACT_MAX` non-zero values, the Gaussian bound beyond (valid, conservative).

    >>> sign_flip_p(np.array([-1.0, -1.0, -1.0, 0.0]), "less")  # exact: zeros dropped, 1 of 8
    0.125
    >>> sign_flip_p(np.full(40, -1.0), "less") < 1e-7  # 40 groups: the Gaussian bound
    True
    """
    if _nonzero(x).size <= EXACT_MAX:
        return exact_sign_flip_p(x, alternative)
    return gaussian_bound_p(x, alternative)
