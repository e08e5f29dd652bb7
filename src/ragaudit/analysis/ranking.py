"""Do two test sets rank systems alike? Rankings per test set, Kendall's tau-b between
them with a bootstrap interval, and the order of the pairs the reference set separates.
Pure.

A **test set** is the queries of one kind within a run (the SQL-grounded ones, those
generated from documents, an imported human set; or one wording style). On each set,
every system gets the chosen metric as a ratio of sums over semantic groups (accuracy:
correct answers over answers; Recall@k: the sum of per-query recalls over the queries with
a gold document; R: correct answers over the answers of groups that are not gaps). So a
bootstrap resample of a set is a weight vector over its groups, shared by every system
(the systems are paired within a set), and the two sets are resampled independently
(they hold different questions).

Reported, for the reference set against each other set:

* Kendall's tau-b between the two rankings (ties handled as scipy's ``kendalltau``
  does), with a 95% basic bootstrap interval over the resamples (the percentile interval
  reflected about the estimate: noise in both rankings pulls tau-b towards 0, and the
  resamples, noisier still, lie below the estimate as it lies below the systems' true
  agreement);
* every pair of systems the reference set separates significantly (a paired
  permutation test by group, Holm-corrected over the pairs), and whether the other set
  orders it the same way, reverses it (a flip) or ties it.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ragaudit.analysis.metrics import Example, proportion, wilson_share
from ragaudit.analysis.retrieval_metrics import (
    is_ranked,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
)
from ragaudit.analysis.significance import PairedCounts, compare, contributions, sign_flip_p
from ragaudit.analysis.summary import Interval, Proportion

SCHEMA_VERSION = 1

SetKey = Literal["source", "variant", "label"]
Order = Literal["agree", "flip", "tie"]

# What each source of a query is called in tables and sentences.
SET_NAMES = {"sql": "SQL-grounded", "document": "document-generated", "imported": "imported"}


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two paired score lists (ties in either count as scipy's
    ``kendalltau`` counts them); None where it is undefined: fewer than two items, or one
    list all tied.

    >>> round(kendall_tau_b([0.9, 0.7, 0.5, 0.2], [0.8, 0.4, 0.6, 0.1]), 3)  # one pair swapped
    0.667
    >>> round(kendall_tau_b([0.9, 0.7, 0.7], [0.8, 0.6, 0.5]), 3)  # a tie in the first
    0.816
    >>> kendall_tau_b([0.5, 0.5], [0.8, 0.6]) is None  # one list all tied
    True
    """
    if len(x) != len(y):
        raise ValueError("kendall_tau_b needs two lists of the same length")
    value = _tau_b_rows(np.asarray([x], dtype=np.float64), np.asarray([y], dtype=np.float64))[0]
    return None if math.isnan(value) else float(value)


def _tau_b_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Tau-b of each row of ``x`` with the same row of ``y`` (resamples x systems); NaN
    where undefined."""
    n = x.shape[1]
    if n < 2:
        return np.full(x.shape[0], np.nan)
    i, j = np.triu_indices(n, k=1)
    sx = np.sign(np.round(x[:, i] - x[:, j], 12))
    sy = np.sign(np.round(y[:, i] - y[:, j], 12))
    concordance = (sx * sy).sum(axis=1)
    untied_x = np.abs(sx).sum(axis=1)
    untied_y = np.abs(sy).sum(axis=1)
    denominator = np.sqrt(untied_x * untied_y)
    out: np.ndarray = np.divide(
        concordance,
        denominator,
        out=np.full(x.shape[0], np.nan),
        where=denominator > 0,
    )
    return out


def average_ranks(values: Sequence[float]) -> list[float]:
    """Rank 1 for the highest value; tied values share the mean of their ranks.

    >>> average_ranks([0.9, 0.7, 0.9, 0.4])
    [1.5, 3.0, 1.5, 4.0]
    """
    order = sorted(range(len(values)), key=lambda i: -values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and math.isclose(
            values[order[end + 1]], values[order[start]], abs_tol=1e-12
        ):
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: each p-value made valid for the whole family, so that
    "significant" over many pairs keeps its 5% chance of any false separation.

    >>> holm([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for step, i in enumerate(order):
        running = max(running, min(1.0, (m - step) * p_values[i]))
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True)
class SetScores:
    """One test set's metric parts: per system (rows) and group (columns), the numerator
    and denominator whose sums over groups give the metric.

    >>> num = np.array([[1.0, 0.0], [2.0, 1.0]])  # correct answers per system (row) and group
    >>> den = np.array([[2.0, 2.0], [2.0, 2.0]])  # answers
    >>> scores = SetScores("sql", ["bm25", "rag"], ["g1", "g2"], num, den)
    >>> scores.values()  # each system's metric: the sum of its numerators over its denominators
    [0.25, 0.75]
    >>> [part.tolist() for part in scores.row("rag")]
    [[2.0, 1.0], [2.0, 2.0]]
    """

    name: str
    systems: list[str]
    groups: list[str]
    num: np.ndarray
    den: np.ndarray
    # Queries scored per system and group before R's rule leaves out the gap groups
    # (None: the same as ``den``); what a system's coverage is counted on.
    scored: np.ndarray | None = None

    def values(self) -> list[float | None]:
        """Each system's metric over the whole set (None where it scored no query)."""
        num, den = self.num.sum(axis=1), self.den.sum(axis=1)
        return [float(a / b) if b > 0 else None for a, b in zip(num, den, strict=True)]

    def row(self, system: str) -> tuple[np.ndarray, np.ndarray]:
        i = self.systems.index(system)
        return self.num[i], self.den[i]


# A metric's value of one example: a score in [0, 1], or None when it has none.
ExampleScore = Callable[[Example], float | None]

ANSWER_METRICS = ("accuracy", "robustness")
RETRIEVAL_METRICS = ("accuracy_retrieval",)


def example_score(metric: str) -> ExampleScore:
    """How one example scores on ``metric``: accuracy and R (the answer's verdict),
    accuracy_retrieval (the retrieval's), recall@K, mrr, ndcg@K (against the gold ids;
    queries without a gold document have none). Reference-free metrics are scored by the
    caller, which holds the scores.

    >>> ex = Example("q1", "g1", "short", False, retrieved=("d3", "d1", "d7"), gold=("d1",))
    >>> example_score("accuracy")(ex), example_score("recall@1")(ex), example_score("mrr")(ex)
    (0.0, 0.0, 0.5)
    >>> example_score("accuracy_retrieval")(ex) is None  # no retrieval verdict
    True
    """
    kind, _, cut = metric.partition("@")
    if metric in ANSWER_METRICS:
        return lambda ex: float(ex.correct)
    if metric == "accuracy_retrieval":
        return lambda ex: None if ex.retrieval_correct is None else float(ex.retrieval_correct)
    if kind in ("recall", "ndcg") and cut.isdigit() and int(cut) >= 1:
        k = int(cut)
        measure = recall_at_k if kind == "recall" else ndcg_at_k
        return lambda ex: (
            measure(list(ex.retrieved or ()), list(ex.gold or ()), k) if is_ranked(ex) else None
        )
    if metric == "mrr":
        return lambda ex: (
            reciprocal_rank(list(ex.retrieved or ()), list(ex.gold or ()))
            if is_ranked(ex)
            else None
        )
    raise ValueError(
        f"unknown metric {metric!r}: use accuracy, robustness, accuracy_retrieval, "
        "recall@K, mrr, ndcg@K or a reference-free metric"
    )


def set_of(ex: Example, by: SetKey) -> str | None:
    """The test set an example belongs to, by its source, its wording or its label.

    >>> ex = Example("q1", "g1", "short", True, label="summary", origin="document")
    >>> set_of(ex, "source"), set_of(ex, "variant"), set_of(ex, "label")
    ('document', 'short', 'summary')
    """
    if by == "source":
        return ex.origin
    if by == "variant":
        return ex.variant
    return ex.label


ALL = "all"  # the name of the one set when the examples are not split


def set_scores(
    examples: Iterable[Example],
    score: ExampleScore,
    *,
    by: SetKey | None = "source",
    robustness: bool = False,
) -> dict[str, SetScores]:
    """Each test set's :class:`SetScores` from judged (or retrieved) examples: per system
    and group, the sum of the examples' scores and how many were scored (``by`` None: one
    set, :data:`ALL`). With ``robustness``, a group every answer of which is wrong (a gap)
    counts in neither.

    >>> examples = [Example("q1", "g1", "short", True, system="rag"),
    ...             Example("q2", "g1", "long", False, system="rag"),
    ...             Example("q3", "g2", "short", False, system="rag")]
    >>> scores = set_scores(examples, example_score("accuracy"), by="variant")
    >>> sorted(scores), scores["short"].values(), scores["long"].values()
    (['long', 'short'], [0.5], [0.0])
    >>> set_scores(examples, example_score("accuracy"), by=None)["all"].num.tolist()
    [[1.0, 0.0]]
    """
    parts: dict[str, dict[tuple[str, str], list[float]]] = defaultdict(
        lambda: defaultdict(lambda: [0.0, 0.0])
    )
    for ex in examples:
        value = score(ex)
        name = ALL if by is None else set_of(ex, by)
        if value is None or name is None:
            continue
        entry = parts[name][ex.system, ex.group_id]
        entry[0] += value
        entry[1] += 1
    out: dict[str, SetScores] = {}
    for name, cells in parts.items():
        systems = sorted({s for s, _ in cells})
        groups = sorted({g for _, g in cells})
        si = {s: i for i, s in enumerate(systems)}
        gi = {g: i for i, g in enumerate(groups)}
        num = np.zeros((len(systems), len(groups)))
        den = np.zeros((len(systems), len(groups)))
        scored = np.zeros((len(systems), len(groups)))
        for (system, group), (total, count) in cells.items():
            scored[si[system], gi[group]] = count
            if robustness and total == 0:
                continue
            num[si[system], gi[group]] = total
            den[si[system], gi[group]] = count
        out[name] = SetScores(name, systems, groups, num, den, scored if robustness else None)
    return out


def robustness_unmeasured(scores: Mapping[str, SetScores]) -> list[str]:
    """The test sets (of :func:`set_scores` with ``robustness``) on which some system's R
    cannot be measured: it scored queries, but no group outside its gaps has two of them,
    so no group can be non-robust and R is 1.00 by construction.

    >>> examples = [Example(f"q{g}{v}", f"g{g}", v, g > 0, system="rag")
    ...             for g in range(3) for v in ("short", "long")]
    >>> robustness_unmeasured(set_scores(examples, example_score("robustness"), by="variant",
    ...                                  robustness=True))
    ['long', 'short']
    >>> robustness_unmeasured(set_scores(examples, example_score("robustness"), by=None,
    ...                                  robustness=True))
    []
    """
    return sorted(
        name
        for name, found in scores.items()
        if any(row.sum() > 0 and not np.any(row > 1) for row in found.den)
    )


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class RankedSystem(_Model):
    """One system on one test set: its metric, where it ranks, and how sure that is."""

    system: str = Field(description="the system")
    value: float = Field(description="the metric over the set")
    ci95: Interval = Field(
        description="95% percentile interval over the group resamples (Wilson's over the "
        "groups scored where every resample gives the same value)"
    )
    rank: float = Field(description="1 is best; tied systems share the mean of their ranks")
    groups: int = Field(ge=0, description="groups the system scored a query of")
    queries: int = Field(ge=0, description="queries scored")


class SetRanking(_Model):
    """The systems ranked on one test set, best first."""

    name: str = Field(description="the test set (a source, wording or label)")
    groups: int = Field(ge=0, description="semantic groups of the set")
    systems: list[RankedSystem] = Field(description="best first")
    left_out: dict[str, str] = Field(
        default_factory=dict, description="systems without a value on this set, and why"
    )
    notes: list[str] = Field(
        default_factory=list,
        description="where the ranking needs care: systems ranked on fewer queries than the "
        "others (their values are over other questions)",
    )


class PairOrder(_Model):
    """A pair of systems the reference set separates significantly (``better`` is ahead
    there), and how the other set orders it."""

    better: str = Field(description="the system ahead on the reference set")
    worse: str = Field(description="the system behind on the reference set")
    reference_difference: float = Field(description="better - worse on the reference set")
    reference_ci95: Interval = Field(description="95% bootstrap interval of that difference")
    reference_p: float = Field(description="paired permutation p-value, Holm-adjusted")
    other_difference: float = Field(description="better - worse on the other set")
    other_ci95: Interval | None = Field(description="95% bootstrap interval of that difference")
    other_p: float | None = Field(description="its p-value, Holm-adjusted over the same pairs")
    order: Order = Field(description="agree, flip (the other set reverses it) or tie")


class SetAgreement(_Model):
    """How far another test set ranks the systems as the reference set does."""

    reference: str = Field(description="the reference test set")
    other: str = Field(description="the test set compared with it")
    systems: list[str] = Field(description="the systems both sets rank")
    tau_b: float | None = Field(description="Kendall's tau-b of the two rankings")
    tau_ci95: Interval | None = Field(
        description="95% basic bootstrap interval of tau-b, resampling groups within each set"
    )
    undefined: str | None = Field(None, description="why tau-b is undefined, or null")
    tau_undefined_share: float | None = Field(
        None,
        description="share of the resamples in which tau-b is undefined (a resampled set "
        "ties every system); past MAX_UNDEFINED_SHARE the interval is null",
    )
    pairs: int = Field(ge=0, description="pairs of systems")
    separated: int = Field(
        ge=0, description="pairs the reference separates significantly (Holm, alpha)"
    )
    agree: Proportion = Field(description="separated pairs the other set orders the same way")
    flips: list[PairOrder] = Field(description="separated pairs the other set reverses")
    orders: list[PairOrder] = Field(description="every separated pair, largest gap first")
    smallest_p: float | None = Field(
        None,
        description="the smallest p-value of any pair on the reference set, before Holm "
        "(which needs it below alpha / pairs for the first pair to be separated)",
    )
    smallest_pair: list[str] | None = Field(None, description="the pair that reached it")
    sentence: str = Field(description="the agreement in one sentence")


class RankingStudy(_Model):
    """What ``ragaudit compare`` computed: the rankings per test set and their agreement."""

    schema_version: int = SCHEMA_VERSION
    metric: str = Field(description="the metric systems are ranked on")
    by: SetKey = Field(description="what tells the test sets apart")
    reference: str = Field(description="the set the others are compared with")
    alpha: float = Field(description="significance level of the separated pairs")
    n_boot: int = Field(description="bootstrap resamples")
    seed: int = Field(description="seed of the resamples")
    sets: list[SetRanking] = Field(description="the reference first")
    agreements: list[SetAgreement] = Field(description="the reference against each other set")
    left_out: dict[str, str] = Field(
        default_factory=dict,
        description="systems of the run left out of the study, and why (e.g. retrieval-only "
        "systems give no answers for an answer metric)",
    )


def rank_sets(
    scores: Mapping[str, SetScores],
    *,
    metric: str,
    by: SetKey = "source",
    reference: str | None = None,
    alpha: float = 0.05,
    n_boot: int = 1000,
    n_perm: int = 1000,
    seed: int = 0,
) -> RankingStudy:
    """Rank the systems on every test set and compare each set's ranking with the
    reference set's (default: the SQL-grounded set when there is one, else the first).

    >>> grid = {"sql": {"rag": "1111", "bm25": "1100", "llm": "1000"},  # per group: right or wrong
    ...         "document": {"rag": "1110", "bm25": "1111", "llm": "0000"}}
    >>> examples = [Example(f"{s}{g}", f"{s}{g}", "short", bit == "1", system=name, origin=s)
    ...             for s, systems in grid.items() for name, bits in systems.items()
    ...             for g, bit in enumerate(bits)]
    >>> scores = set_scores(examples, example_score("accuracy"))
    >>> study = rank_sets(scores, metric="accuracy")
    >>> study.reference, [(r.system, r.value, r.rank) for r in study.sets[0].systems]
    ('sql', [('rag', 1.0, 1.0), ('bm25', 0.5, 2.0), ('llm', 0.25, 3.0)])
    >>> agreement = study.agreements[0]
    >>> agreement.other, round(agreement.tau_b, 3), agreement.separated
    ('document', 0.333, 0)
    """
    if not scores:
        raise ValueError("no test set has a scored query")
    names = sorted(scores, key=lambda n: (n != "sql", n != "imported", n))
    reference = reference if reference is not None else names[0]
    if reference not in scores:
        raise ValueError(f"no test set named {reference!r} (the sets: {', '.join(names)})")
    names = [reference] + [n for n in names if n != reference]
    rng = np.random.default_rng(seed)
    boots = {name: _resampled(scores[name], n_boot, rng) for name in names}
    rankings = [_ranking(scores[name], boots[name]) for name in names]
    agreements = [
        _agreement(
            scores[reference], scores[name], boots[reference], boots[name], alpha, n_perm, seed
        )
        for name in names[1:]
    ]
    return RankingStudy(
        metric=metric,
        by=by,
        reference=reference,
        alpha=alpha,
        n_boot=n_boot,
        seed=seed,
        sets=rankings,
        agreements=agreements,
    )


def _resampled(scores: SetScores, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Each system's metric in ``n_boot`` resamples of the set's groups (resamples x
    systems; NaN where a resample leaves a system nothing to score)."""
    g = len(scores.groups)
    weights = rng.multinomial(g, np.full(g, 1.0 / g), size=n_boot).astype(np.float64)
    num = weights @ scores.num.T
    den = weights @ scores.den.T
    out: np.ndarray = np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)
    return out


def _interval(values: np.ndarray) -> Interval | None:
    kept = values[~np.isnan(values)]
    if not kept.size:
        return None
    low, high = np.quantile(kept, [0.025, 0.975])
    return (float(low), float(high))


def _basic_interval(estimate: float, boot: np.ndarray) -> Interval | None:
    """The basic (reverse percentile) bootstrap interval of tau-b, clipped to [-1, 1].
    Resampling both sets adds noise to both rankings, which pulls every resampled tau-b
    towards 0: the percentile interval then sits below the estimate (0.71 [0.55, 0.65] on
    150 systems). The basic interval reflects that shift back, as the bootstrap principle
    asks (the estimate is pulled from the truth as the resamples are from the estimate)."""
    shown = _interval(boot)
    if shown is None:
        return None
    low, high = 2 * estimate - shown[1], 2 * estimate - shown[0]
    return (max(-1.0, low), min(1.0, high))


def _ranking(scores: SetScores, boot: np.ndarray) -> SetRanking:
    values = scores.values()
    defined = [i for i, v in enumerate(values) if v is not None]
    ranks = average_ranks([values[i] or 0.0 for i in defined])
    rows = []
    for rank, i in zip(ranks, defined, strict=True):
        value = values[i]
        assert value is not None
        groups = int((scores.den[i] > 0).sum())
        interval = _interval(boot[:, i]) or (value, value)
        if interval[0] == interval[1] and 0.0 <= value <= 1.0:
            # Every resample gives the same value (all right, or all wrong): the bootstrap
            # says nothing of the uncertainty, which is widest on a small set. Wilson's
            # interval over the groups scored (a conservative one for the mean of scores
            # in [0, 1], see wilson_share) is never a point.
            interval = wilson_share(value, groups)
        rows.append(
            RankedSystem(
                system=scores.systems[i],
                value=value,
                ci95=interval,
                rank=rank,
                groups=groups,
                queries=int(scores.den[i].sum()),
            )
        )
    rows.sort(key=lambda r: (r.rank, r.system))
    left_out = {
        scores.systems[i]: "nothing to count on this set (no scored query; for R, every "
        "group a gap)"
        for i, v in enumerate(values)
        if v is None
    }
    # Coverage is counted on the queries scored, gap groups included (R leaves those out
    # by definition: that is no missing score).
    scored = scores.scored if scores.scored is not None else scores.den
    counted = {scores.systems[i]: int(scored[i].sum()) for i in defined}
    most = max(counted.values(), default=0)
    notes = [
        f"{system} is ranked on {n} of the {most} queries the best-covered system scored on "
        "this set (no score for the rest: not answered, not judged, or the judge failed): its "
        "value is over other questions, and its rank is not comparable"
        for system, n in sorted(counted.items())
        if n < most
    ]
    return SetRanking(
        name=scores.name, groups=len(scores.groups), systems=rows, left_out=left_out, notes=notes
    )


# Past this share of resamples in which tau-b is undefined, its interval is not shown: the
# resamples it would come from are not the set's.
MAX_UNDEFINED_SHARE = 0.05
MAX_PERMUTATIONS = 200_000  # per pair: the ceiling of the refinement below


def _pair_test(
    scores: SetScores, a: str, b: str, n_perm: int, seed: int, n_boot: int = 1
) -> tuple[float | None, Interval | None, float | None]:
    """a - b on one set, paired by group: difference, bootstrap interval, p-value."""
    num_a, den_a = scores.row(a)
    num_b, den_b = scores.row(b)
    result = compare(
        PairedCounts(scores.groups, num_a, den_a, num_b, den_b),
        "accuracy",
        n_boot=n_boot,
        n_perm=n_perm,
        seed=seed,
    )
    return result.difference, result.ci95, result.p_value


def _pair_p_values(
    scores: SetScores, pairs: list[tuple[str, str]], alpha: float, n_perm: int, seed: int
) -> list[float]:
    """Each pair's raw two-sided p-value. A permutation p-value is at least 1 / (n_perm +
    1), and Holm multiplies the smallest by the number of pairs; so every pair is tested
    with ``n_perm`` permutations first, and those that might be significant (p below twice
    alpha: no other can survive Holm) again, finely enough that a clear separation shows:
    with 10 x pairs / alpha permutations where that is at most :data:`MAX_PERMUTATIONS`,
    and past that (grids of about 140 systems and more) without drawing, from the
    sign-flip distribution of the groups' contributions (exact on few groups, a valid
    Gaussian bound on many: :func:`~ragaudit.analysis.significance.sign_flip_p`)."""
    raw = [_pair_test(scores, a, b, n_perm, seed)[2] for a, b in pairs]
    needed = math.ceil(10 * len(pairs) / alpha)
    out = []
    for (a, b), p in zip(pairs, raw, strict=True):
        if p is not None and p < 2 * alpha and needed > n_perm:
            if needed <= MAX_PERMUTATIONS:
                p = _pair_test(scores, a, b, needed, seed)[2]
            else:
                num_a, den_a = scores.row(a)
                num_b, den_b = scores.row(b)
                counts = PairedCounts(scores.groups, num_a, den_a, num_b, den_b)
                p = sign_flip_p(contributions(counts), "two-sided")
        out.append(p if p is not None else 1.0)
    return out


def _agreement(
    ref: SetScores,
    other: SetScores,
    ref_boot: np.ndarray,
    other_boot: np.ndarray,
    alpha: float,
    n_perm: int,
    seed: int,
) -> SetAgreement:
    ref_values = dict(zip(ref.systems, ref.values(), strict=True))
    other_values = dict(zip(other.systems, other.values(), strict=True))
    systems = sorted(
        s for s in ref.systems if ref_values[s] is not None and other_values.get(s) is not None
    )
    x = [ref_values[s] or 0.0 for s in systems]
    y = [other_values[s] or 0.0 for s in systems]
    tau = kendall_tau_b(x, y)
    undefined = None
    interval = None
    undefined_share: float | None = None
    if len(systems) < 2:
        undefined = "fewer than two systems are ranked on both sets"
    elif tau is None:
        undefined = "one set ties every system"
    else:
        ri = [ref.systems.index(s) for s in systems]
        oi = [other.systems.index(s) for s in systems]
        taus = _tau_b_rows(ref_boot[:, ri], other_boot[:, oi])
        undefined_share = float(np.mean(np.isnan(taus)))
        if undefined_share <= MAX_UNDEFINED_SHARE:
            interval = _basic_interval(tau, taus)
    pairs = list(itertools.combinations(systems, 2))
    ref_raw = _pair_p_values(ref, pairs, alpha, n_perm, seed)
    ref_p = holm(ref_raw)
    other_p = holm(_pair_p_values(other, pairs, alpha, n_perm, seed))
    orders: list[PairOrder] = []
    for index, (a, b) in enumerate(pairs):
        if ref_p[index] >= alpha:
            continue
        # Intervals only for the pairs shown: the separated ones, on both sets.
        diff, ci, _ = _pair_test(ref, a, b, 1, seed, n_boot=1000)
        _, oci, _ = _pair_test(other, a, b, 1, seed, n_boot=1000)
        if diff is None or ci is None:
            continue
        sign = 1.0 if diff > 0 else -1.0
        better, worse = (a, b) if sign > 0 else (b, a)
        other_diff = sign * ((other_values[a] or 0.0) - (other_values[b] or 0.0))
        order: Order = "tie" if abs(other_diff) < 1e-12 else "agree" if other_diff > 0 else "flip"
        orders.append(
            PairOrder(
                better=better,
                worse=worse,
                reference_difference=sign * diff,
                reference_ci95=_signed(ci, sign),
                reference_p=ref_p[index],
                other_difference=other_diff,
                other_ci95=_signed(oci, sign) if oci is not None else None,
                other_p=other_p[index] if oci is not None else None,
                order=order,
            )
        )
    orders.sort(key=lambda o: (-o.reference_difference, o.better, o.worse))
    best = min(range(len(pairs)), key=lambda i: ref_raw[i]) if pairs else 0
    agreed = sum(o.order == "agree" for o in orders)
    flips = [o for o in orders if o.order == "flip"]
    result = SetAgreement(
        reference=ref.name,
        other=other.name,
        systems=systems,
        tau_b=tau,
        tau_ci95=interval,
        undefined=undefined,
        tau_undefined_share=undefined_share,
        pairs=len(pairs),
        separated=len(orders),
        agree=proportion(agreed, len(orders)),
        flips=flips,
        orders=orders,
        smallest_p=ref_raw[best] if pairs else None,
        smallest_pair=list(pairs[best]) if pairs else None,
        sentence="",
    )
    return result.model_copy(update={"sentence": agreement_sentence(result, alpha)})


def _signed(interval: Interval, sign: float) -> Interval:
    low, high = sorted((sign * interval[0] + 0.0, sign * interval[1] + 0.0))  # no -0.0
    return (low, high)


def set_name(name: str) -> str:
    """A test set's name as tables show it (``sql`` is the SQL-grounded set).

    >>> set_name("sql"), set_name("document"), set_name("short")
    ('SQL-grounded', 'document-generated', 'short')
    """
    return SET_NAMES.get(name, name)


def agreement_sentence(agreement: SetAgreement, alpha: float = 0.05) -> str:
    """The agreement of two sets' rankings in one sentence: tau-b with its interval, the
    separated pairs kept and the ones that flip.

    >>> grid = {"sql": {"rag": "1111", "bm25": "1100", "llm": "1000"},  # per group: right or wrong
    ...         "document": {"rag": "1110", "bm25": "1111", "llm": "0000"}}
    >>> examples = [Example(f"{s}{g}", f"{s}{g}", "short", bit == "1", system=name, origin=s)
    ...             for s, systems in grid.items() for name, bits in systems.items()
    ...             for g, bit in enumerate(bits)]
    >>> scores = set_scores(examples, example_score("accuracy"))
    >>> study = rank_sets(scores, metric="accuracy")
    >>> print(agreement_sentence(study.agreements[0]))
    The document-generated set ranks the 3 systems with Kendall's tau-b 0.33 [-0.15, 0.67] (1% of
    the resamples, which tie every system, left out) against the SQL-grounded set; the SQL-grounded
    set separates none of the 3 pairs significantly (Holm, alpha 0.05), so no order can be checked.
    With 3 pairs, Holm needs a p-value below 0.017 for the first; the smallest reached was 0.22 (llm
    vs rag), so the test had no power to separate any pair at this size.
    """
    ref, other = set_name(agreement.reference), set_name(agreement.other)
    n = len(agreement.systems)
    if agreement.tau_b is None:
        head = f"Kendall's tau-b of the {other} and {ref} sets is undefined ({agreement.undefined})"
        if len(agreement.systems) < 2:
            return head + "."
    elif agreement.tau_ci95 is None:
        share = agreement.tau_undefined_share or 0.0
        head = (
            f"The {other} set ranks the {n} systems with Kendall's tau-b "
            f"{agreement.tau_b:.2f} against the {ref} set (no interval: in {share:.0%} of the "
            f"resamples a set ties every system, more than {MAX_UNDEFINED_SHARE:.0%})"
        )
    else:
        low, high = agreement.tau_ci95
        dropped = agreement.tau_undefined_share or 0.0
        note = (
            f" ({dropped:.0%} of the resamples, which tie every system, left out)"
            if dropped > 0
            else ""
        )
        if not low <= agreement.tau_b <= high:
            note += (
                " (the interval is of the systems' underlying agreement: noise in both "
                "rankings pulls the observed tau-b towards 0)"
            )
        head = (
            f"The {other} set ranks the {n} systems with Kendall's tau-b "
            f"{agreement.tau_b:.2f} [{low:.2f}, {high:.2f}]{note} against the {ref} set"
        )
    if not agreement.separated:
        power = ""
        needed = alpha / max(1, agreement.pairs)
        if agreement.smallest_pair and (agreement.smallest_p or 0.0) >= needed:
            a, b = agreement.smallest_pair
            power = (
                f" With {agreement.pairs} pairs, Holm needs a p-value below {needed:.2g} for "
                f"the first; the smallest reached was {agreement.smallest_p:.2g} ({a} vs {b}), "
                "so the test had no power to separate any pair at this size."
            )
        return (
            f"{head}; the {ref} set separates none of the {agreement.pairs} pairs "
            f"significantly (Holm, alpha {alpha:g}), so no order can be checked.{power}"
        )
    flips = agreement.flips
    ties = agreement.separated - agreement.agree.k - len(flips)
    tail = (
        f"; of the {agreement.separated} of {agreement.pairs} pairs the {ref} set separates "
        f"significantly (Holm, alpha {alpha:g}), it orders {agreement.agree.k} the same way"
    )
    if flips:
        shown = ", ".join(f"{o.worse} over {o.better}" for o in flips[:3])
        more = f" and {len(flips) - 3} more" if len(flips) > 3 else ""
        tail += f" and reverses {len(flips)} ({shown}{more})"
    if ties:
        tail += f", and ties {ties}"
    return head + tail + "."
