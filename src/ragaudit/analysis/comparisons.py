"""Paired comparisons between variants and between systems, and their verdicts. Pure.

Every pair of variants within a system, and every pair of systems within a variant, is
compared on accuracy and robustness R, paired by semantic group
(:mod:`ragaudit.analysis.significance` does the statistics), for the answers and, where
retrieval was judged, for the retrievals. Each comparison carries one sentence a person
can act on: which side is worse, by how much and how sure, or why nothing can be said,
and what errors (timeouts, HTTP errors) may have to do with it.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable

from ragaudit.analysis.metrics import Example, without_retriever
from ragaudit.analysis.significance import (
    PairedCounts,
    PairedDifference,
    compare_many,
    compare_sets,
)
from ragaudit.analysis.summary import ComparedMetric, Comparison, Outcome, Side

SideKey = tuple[str, str]  # (system, variant)

# The metric a comparison names: the answers' accuracy and R, or the retrievals'.
_METRICS: dict[tuple[Outcome, str], ComparedMetric] = {
    ("answer", "accuracy"): "accuracy",
    ("answer", "robustness"): "robustness",
    ("retrieval", "accuracy"): "accuracy_retrieval",
    ("retrieval", "robustness"): "robustness_retrieval",
}


def _group_counts(
    examples: Iterable[Example], retrieval: bool = False
) -> dict[str, tuple[int, int]]:
    """Per group: (correct, total) of the answers, or of the retrievals (``retrieval``;
    examples without a retrieval verdict are left out)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    if retrieval:
        for ex in examples:
            if ex.retrieval_correct is not None:
                entry = counts[ex.group_id]
                entry[0] += ex.retrieval_correct
                entry[1] += 1
    else:
        for ex in examples:
            entry = counts[ex.group_id]
            entry[0] += ex.correct
            entry[1] += 1
    return {g: (c, n) for g, (c, n) in counts.items()}


def side_pairs(sides: Iterable[SideKey]) -> list[tuple[SideKey, SideKey]]:
    """The pairs of (system, variant) sides compared: each system's variants with each
    other, then each variant's systems with each other, in sorted order (the in-memory
    and the SQL paths compare the same pairs in the same order). A pair can name a side
    that has no answers (a system not asked in a variant): the caller skips it.

    >>> for pair in side_pairs([("rag", "short"), ("rag", "long"), ("bm25", "short")]):
    ...     print(*pair)
    ('bm25', 'long') ('bm25', 'short')
    ('rag', 'long') ('rag', 'short')
    ('bm25', 'long') ('rag', 'long')
    ('bm25', 'short') ('rag', 'short')
    """
    keys = set(sides)
    systems = sorted({s for s, _ in keys})
    variants = sorted({v for _, v in keys})
    pairs = [((s, v1), (s, v2)) for s in systems for v1, v2 in itertools.combinations(variants, 2)]
    pairs += [((s1, v), (s2, v)) for v in variants for s1, s2 in itertools.combinations(systems, 2)]
    return pairs


def comparisons(
    examples: list[Example],
    seed: int = 0,
    *,
    outcomes: tuple[Outcome, ...] = ("answer",),
    judge_failed: Iterable[Example] = (),
) -> list[Comparison]:
    """Every pair of variants within a system, and every pair of systems within a variant,
    compared on accuracy and R, paired by semantic group, for each outcome: the answer's
    correctness, and the retrieval's (metrics ``accuracy_retrieval`` and
    ``robustness_retrieval``, verdicts saying "retrieval"). Outcomes over the same groups
    share their resamples. The answer comparisons come first, then the retrieval ones.
    ``judge_failed``: answers the judge failed on, which count in the retrieval's
    comparisons only (a retrieval needs no judge). A system without a retriever has no
    retrieval to compare, judged or not: its answers are read as
    :func:`~ragaudit.analysis.metrics.without_retriever` gives them, as
    :func:`~ragaudit.analysis.metrics.analyze` reads them.

    >>> examples = [
    ...     Example(f"q{g}{variant}", f"g{g}", variant, ok)
    ...     for g in range(8)
    ...     for variant, ok in (("short", True), ("long", g < 2))
    ... ]
    >>> found = comparisons(examples)
    >>> [(c.metric, c.a.variant, c.b.variant, c.difference) for c in found]  # one query a group:
    [('accuracy', 'long', 'short', -0.75), ('robustness', 'long', 'short', None)]
    >>> print(found[1].undefined)  # R cannot be measured
    side both: no group outside the gaps has two queries, so none can be non-robust: robustness
    is not measured
    >>> print(found[0].verdict)
    long is less accurate than short (accuracy 0.25 vs 1.00, difference -0.75 [-1.00, -0.40],
    p = 0.033, 8 groups).
    """
    examples, judge_failed = without_retriever(examples, judge_failed)
    by: dict[SideKey, list[Example]] = defaultdict(list)
    failed_sides: set[SideKey] = set()
    for ex in examples:
        side = (ex.system, ex.variant)
        by[side].append(ex)
        if ex.errored:
            failed_sides.add(side)
    unjudged: dict[SideKey, list[Example]] = defaultdict(list)
    for ex in judge_failed:
        unjudged[ex.system, ex.variant].append(ex)
    systems = sorted({s for s, _ in by})
    variants = sorted({v for _, v in by})
    pairs = side_pairs(by)
    out: dict[Outcome, list[Comparison]] = {outcome: [] for outcome in outcomes}
    for left, right in pairs:
        if left not in by or right not in by:
            continue
        counted = {
            outcome: PairedCounts.from_dicts(
                _group_counts(by[left] + unjudged.get(left, []), retrieval=True)
                if outcome == "retrieval"
                else _group_counts(by[left]),
                _group_counts(by[right] + unjudged.get(right, []), retrieval=True)
                if outcome == "retrieval"
                else _group_counts(by[right]),
            )
            for outcome in outcomes
        }
        counted = {o: c for o, c in counted.items() if o == "answer" or c.groups}
        shared = [c.groups for c in counted.values()]
        items = [(o, m, c) for o, c in counted.items() for m in ("accuracy", "robustness")]
        if all(groups == shared[0] for groups in shared):
            results = compare_sets([(m, c) for _, m, c in items], seed=seed)
        else:
            results = [r for _, m, c in items for r in compare_many(c, (m,), seed=seed)]
        for (outcome, _, counts), result in zip(items, results, strict=True):
            errors = [
                _errors_per_group(by[side], counts, outcome) if side in failed_sides else Counter()
                for side in (left, right)
            ]
            out[outcome].append(
                _comparison(left, right, counts, result, outcome, errors, systems, variants)
            )
    return [row for outcome in outcomes for row in out[outcome]]


def _errors_per_group(
    examples: list[Example], counts: PairedCounts, outcome: Outcome
) -> Counter[str]:
    """Per paired group, the queries of one side that failed (and, for retrieval, have a
    retrieval verdict)."""
    paired = set(counts.groups)
    return Counter(
        ex.group_id
        for ex in examples
        if ex.errored
        and ex.group_id in paired
        and (outcome == "answer" or ex.retrieval_correct is not None)
    )


def _comparison(
    left: SideKey,
    right: SideKey,
    counts: PairedCounts,
    result: PairedDifference,
    outcome: Outcome,
    per_group: list[Counter[str]],
    systems: list[str],
    variants: list[str],
) -> Comparison:
    """One comparison as summary.json holds it: figures, both sides, and the verdict."""
    errors = [sum(c.values()) for c in per_group]
    same_system = left[0] == right[0]
    name_a = left[1] if same_system else left[0]
    name_b = right[1] if same_system else right[0]
    # Say which system (or which wording) a verdict is about when there are several, and
    # whether it is about the retrievals.
    about = []
    if same_system and len(systems) > 1:
        about.append(left[0])
    elif not same_system and len(variants) > 1:
        about.append(f"{left[1]} queries")
    if outcome == "retrieval":
        about.append("retrieval")
    context = f"{', '.join(about)}: " if about else ""
    return Comparison(
        metric=_METRICS[outcome, result.metric],
        a=Side(system=left[0], variant=left[1], value=result.a, errors=errors[0]),
        b=Side(system=right[0], variant=right[1], value=result.b, errors=errors[1]),
        difference=result.difference,
        ci95=result.ci95,
        p_value=result.p_value,
        n_groups=result.n_groups,
        undefined=(
            f"side {result.undefined_side}: {result.undefined}"
            if result.undefined_side
            else result.undefined
        ),
        verdict=verdict(result, name_a, name_b, context=context)
        + _errors_note(result, counts, (name_a, name_b), per_group),
    )


def p_text(p_value: float | None) -> str:
    """``p = 0.0123``, or ``p < 0.001`` at the resolution of 1,000 permutations.

    >>> p_text(0.01234), p_text(0.0004), p_text(None)
    ('p = 0.0123', 'p < 0.001', 'not tested')
    """
    if p_value is None:
        return "not tested"
    return "p < 0.001" if p_value < 0.001 else f"p = {p_value:.3g}"


def verdict(
    result: PairedDifference, name_a: str, name_b: str, *, context: str = "", alpha: float = 0.05
) -> str:
    """One sentence a person can act on; for an undefined metric, why it was not compared
    (an undefined figure is never tested, let alone called significant). ``context`` (such
    as ``"rag: "`` or ``"short queries, retrieval: "``) opens the sentence, which then
    goes on in lower case.

    >>> result = PairedDifference("accuracy", 0.9, 0.6, 0.3, (0.1, 0.5), 0.002, 12)
    >>> print(verdict(result, "long", "short", context="rag: "))
    rag: short is less accurate than long (accuracy 0.60 vs 0.90, difference -0.30 [-0.50, -0.10],
    p = 0.002, 12 groups).
    >>> tie = PairedDifference("accuracy", 0.8, 0.75, 0.05, (-0.1, 0.2), 0.41, 12)
    >>> print(verdict(tie, "long", "short"))
    No significant accuracy difference between long and short (accuracy 0.80 vs 0.75, difference
    +0.05 [-0.10, +0.20], p = 0.41, 12 groups).
    """
    no = f"{context}no" if context else "No"
    metric = result.metric
    if result.undefined is not None or result.ci95 is None or result.difference is None:
        where = {"a": name_a, "b": name_b}.get(result.undefined_side or "", "both sides")
        reason = result.undefined or "undefined"
        return f"{no} {metric} comparison between {name_a} and {name_b}: on {where}, {reason}."
    assert result.a is not None and result.b is not None
    low, high = result.ci95
    shown = p_text(result.p_value)
    if not result.significant(alpha):
        figures = (
            f"{metric} {result.a:.2f} vs {result.b:.2f}, difference {result.difference:+.2f} "
            f"[{low:+.2f}, {high:+.2f}], {shown}, {result.n_groups} groups"
        )
        return f"{no} significant {metric} difference between {name_a} and {name_b} ({figures})."
    # Worse side first, so that the figures read in the sentence's order.
    if result.difference > 0:
        worse, better, w, b = name_b, name_a, result.b, result.a
    else:
        worse, better, w, b = name_a, name_b, result.a, result.b
    sign = -1 if result.difference > 0 else 1
    lo, hi = sorted((sign * low, sign * high))
    quality = "accurate" if metric == "accuracy" else "robust"
    return (
        f"{context}{worse} is less {quality} than {better} ({metric} {w:.2f} vs {b:.2f}, "
        f"difference {sign * result.difference:+.2f} [{lo:+.2f}, {hi:+.2f}], "
        f"{shown}, {result.n_groups} groups)."
    )


def _errors_note(
    result: PairedDifference,
    counts: PairedCounts,
    names: tuple[str, str],
    per_group: list[Counter[str]],
) -> str:
    """What a verdict owes to errors (timeouts, HTTP errors, counted as wrong answers).
    A significant difference is said to be possibly driven by errors when the worse side,
    had every query it failed on been answered correctly, would be at least as good as the
    other side. Otherwise the error counts are given. Nothing when neither side failed."""
    errors = [sum(c.values()) for c in per_group]
    if not any(errors):
        return ""
    counted = f"errors: {names[0]} {errors[0]}, {names[1]} {errors[1]}"
    if result.significant() and result.difference is not None:
        worse = 1 if result.difference > 0 else 0
        better_value = result.a if worse == 1 else result.b
        index = {g: i for i, g in enumerate(counts.groups)}
        correct = (counts.correct_b if worse == 1 else counts.correct_a).copy()
        total = counts.total_b if worse == 1 else counts.total_a
        for group, n in per_group[worse].items():
            i = index[group]
            correct[i] = min(int(total[i]), int(correct[i]) + n)
        if result.metric == "robustness":
            denominator = int(total[correct > 0].sum())
        else:
            denominator = int(total.sum())
        repaired = int(correct.sum()) / denominator if denominator else None
        if repaired is not None and better_value is not None and repaired >= better_value:
            return (
                f" Errors, not answers, may drive this verdict: {names[worse]} failed on "
                f"{errors[worse]} queries (timeouts, HTTP errors); answered correctly, they "
                f"would give it {result.metric} {repaired:.2f} against {better_value:.2f} "
                f"({counted})."
            )
    return f" ({counted})"
