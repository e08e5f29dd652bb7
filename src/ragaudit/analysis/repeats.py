"""How stable each answer is: every query asked several times (``run --repeat N``), each
asking judged. Pure.

Definitions, within one system:

* a query's **pass rate** is the share of its judged askings whose answer was right, with
  its 95% Wilson interval (a binomial share of its repeats);
* a query is **flaky** when it was right in some repeats and wrong in others; the share of
  flaky queries is counted over the queries judged at least twice;
* the **mean pass rate** is the mean of the queries' pass rates (every query weighs the
  same). Its 95% interval takes the semantic group as the unit, as the paired comparisons
  do: the wordings of one group share one fact and one retrieval, so they are not
  independent. It is a t interval (groups - 1 degrees of freedom) from the spread of the
  groups' sums around the mean (the cluster-robust variance of a ratio estimator);
* each **semantic group** is one of: *always right* and *always wrong* (every asking of
  every wording); *fails in some wordings*: every wording gives the same verdict in all
  its repeats, but the wordings disagree, which is what robustness across wordings (R)
  measures; *fails in some repeats*: some wording is flaky, so the same question in the
  same words is right one time and wrong another. A group with both is counted in *fails
  in some repeats*: there, chance alone can make its wordings disagree.

The figures of one asking (accuracy, R, blame: :mod:`ragaudit.analysis.metrics`) stay
those of the first asking, so that a run with repeats reads as one without.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ragaudit.analysis.metrics import proportion, wilson, wilson_share
from ragaudit.analysis.summary import (
    GROUP_STABILITY,
    GroupStability,
    MeanInterval,
    QueryPassRate,
    StabilityCore,
    StabilityFigures,
)

FLAKY_LISTED = 20  # flaky queries a system's figures name


@dataclass(frozen=True, slots=True)
class Attempt:
    """One judged asking of one query by one system: which query (its group and wording
    style), which repeat (0 for the first asking), and whether the answer was right.

    >>> Attempt("rag", "q1", "g1", "short", 2, True).repeat
    2
    """

    system: str
    query_id: str
    group_id: str
    variant: str
    repeat: int
    correct: bool


def query_pass_rates(attempts: Iterable[Attempt]) -> list[QueryPassRate]:
    """Each (system, query)'s pass rate over its judged askings, in the order the queries
    first appear.

    >>> attempts = [Attempt("rag", "q1", "g1", "short", r, r != 1) for r in range(4)]
    >>> rate = query_pass_rates(attempts)[0]
    >>> rate.passes, rate.repeats, rate.pass_rate, rate.flaky
    (3, 4, 0.75, True)
    >>> [round(x, 3) for x in rate.ci95]  # 3 of 4: a binomial share of its repeats
    [0.301, 0.954]
    """
    seen: dict[tuple[str, str], list[Attempt]] = {}
    for a in attempts:
        seen.setdefault((a.system, a.query_id), []).append(a)
    rates = []
    for (system, query_id), tries in seen.items():
        passes = sum(a.correct for a in tries)
        n = len(tries)
        rates.append(
            QueryPassRate(
                system=system,
                query_id=query_id,
                group_id=tries[0].group_id,
                variant=tries[0].variant,
                passes=passes,
                repeats=n,
                pass_rate=passes / n,
                ci95=wilson(passes, n),
                flaky=0 < passes < n,
            )
        )
    return rates


def clustered_mean(values: Mapping[str, list[float]]) -> MeanInterval:
    """The mean of per-query values in [0, 1] (``values``: semantic group -> its queries'
    values) with a 95% interval that counts the group as the unit: a t interval (groups -
    1 degrees of freedom) with the cluster-robust variance of the mean, G / (G - 1) x the
    sum over groups of (group sum - mean x group size)^2 / N^2. Where that is nil (every
    value alike) or there is one group, the Wilson interval at the mean over the N queries
    stands in (:func:`~ragaudit.analysis.metrics.wilson_share`): 22 of 22 right is not
    certainty.

    >>> m = clustered_mean({"g1": [1.0, 1.0], "g2": [0.5, 0.0], "g3": [1.0, 0.5]})
    >>> round(m.value, 3), m.n, m.ci95  # three groups tell little
    (0.667, 6, (0.0, 1.0))
    >>> wide = clustered_mean({f"g{i}": [1.0, 0.8] if i % 2 else [0.2, 0.0] for i in range(40)})
    >>> round(wide.value, 3), [round(x, 3) for x in wide.ci95]
    (0.5, [0.37, 0.63])
    >>> [round(x, 3) for x in clustered_mean({"g1": [1.0] * 22}).ci95]
    [0.851, 1.0]
    >>> clustered_mean({}).value is None
    True
    """
    groups = [v for v in values.values() if v]
    n = sum(len(v) for v in groups)
    if not n:
        return MeanInterval(value=None, n=0, ci95=(0.0, 1.0))
    mean = sum(sum(v) for v in groups) / n
    g = len(groups)
    half = 0.0
    if g >= 2:
        spread = sum((sum(v) - mean * len(v)) ** 2 for v in groups)
        variance = g / (g - 1) * spread / (n * n)
        from scipy.stats import t

        half = float(t.ppf(0.975, g - 1)) * math.sqrt(variance)
    if half <= 1e-12:
        return MeanInterval(value=mean, n=n, ci95=wilson_share(mean, n))
    return MeanInterval(value=mean, n=n, ci95=(max(0.0, mean - half), min(1.0, mean + half)))


def group_stability(rates: Iterable[QueryPassRate]) -> GroupStability:
    """How one group's answers vary, from its queries' pass rates (see the module's
    docstring).

    >>> def rate(query, passes, n=4):
    ...     return QueryPassRate(system="rag", query_id=query, group_id="g1", variant="short",
    ...                          passes=passes, repeats=n, pass_rate=passes / n,
    ...                          ci95=wilson(passes, n), flaky=0 < passes < n)
    >>> group_stability([rate("q1", 4), rate("q2", 4)])
    'always right'
    >>> group_stability([rate("q1", 4), rate("q2", 0)])  # a wording wrong every time
    'fails in some wordings'
    >>> group_stability([rate("q1", 4), rate("q2", 2)])  # a wording right half the time
    'fails in some repeats'
    """
    rates = list(rates)
    if any(r.flaky for r in rates):
        return "fails in some repeats"
    if all(r.passes == r.repeats for r in rates):
        return "always right"
    if all(r.passes == 0 for r in rates):
        return "always wrong"
    return "fails in some wordings"


def _core(rates: list[QueryPassRate]) -> StabilityCore:
    """The figures of one system over ``rates`` (one variant's queries, or all)."""
    by_group: dict[str, list[QueryPassRate]] = defaultdict(list)
    for r in rates:
        by_group[r.group_id].append(r)
    groups: dict[GroupStability, int] = dict.fromkeys(GROUP_STABILITY, 0)
    for members in by_group.values():
        groups[group_stability(members)] += 1
    twice = [r for r in rates if r.repeats >= 2]
    return StabilityCore(
        queries=len(rates),
        answers=sum(r.repeats for r in rates),
        mean_pass_rate=clustered_mean(
            {g: [r.pass_rate for r in members] for g, members in by_group.items()}
        ),
        flaky=proportion(sum(r.flaky for r in twice), len(twice)),
        always_right=sum(r.passes == r.repeats for r in rates),
        always_wrong=sum(r.passes == 0 for r in rates),
        groups=groups,
    )


def stability(
    attempts: Iterable[Attempt], *, listed: int = FLAKY_LISTED
) -> dict[str, StabilityFigures]:
    """Per system that asked some query more than once, how stable its answers are: each
    query's pass rate, their mean with its interval, the share of flaky queries and the
    groups by how they vary (over all variants and per variant), and the ``listed`` flaky
    queries whose pass rate is nearest one half. A system whose every query was judged
    once has no figures here: one asking says nothing of how stable an answer is.

    >>> right = {"q1": [True] * 4, "q2": [True, False, True, False], "q3": [False] * 4}
    >>> attempts = [Attempt("rag", q, "g" + q[1], "short", r, ok)
    ...             for q, oks in right.items() for r, ok in enumerate(oks)]
    >>> figures = stability(attempts)["rag"]
    >>> figures.repeats, figures.queries, str(figures.flaky)
    (4, 3, '0.33 [0.06, 0.79]')
    >>> round(figures.mean_pass_rate.value, 3), figures.groups["fails in some repeats"]
    (0.5, 1)
    >>> [q.query_id for q in figures.flaky_queries]
    ['q2']
    >>> stability([Attempt("rag", "q1", "g1", "short", 0, True)])  # asked once: nothing to say
    {}
    """
    rates = query_pass_rates(attempts)
    per_system: dict[str, list[QueryPassRate]] = defaultdict(list)
    for r in rates:
        per_system[r.system].append(r)
    out: dict[str, StabilityFigures] = {}
    for system, mine in sorted(per_system.items()):
        most = max(r.repeats for r in mine)
        if most < 2:
            continue
        by_variant: dict[str, list[QueryPassRate]] = defaultdict(list)
        for r in mine:
            by_variant[r.variant].append(r)
        flaky = sorted(
            (r for r in mine if r.flaky), key=lambda r: (abs(r.pass_rate - 0.5), r.query_id)
        )
        out[system] = StabilityFigures(
            **_core(mine).model_dump(),
            system=system,
            repeats=most,
            min_repeats=min(r.repeats for r in mine),
            variants={v: _core(items) for v, items in sorted(by_variant.items())},
            flaky_queries=flaky[:listed],
        )
    return out
