"""Semantic groups, their tags, and the GRAMMAR metrics, per system and variant.

Definitions (grammar-v2 section 4.3), all computed within one system and one variant:

* a **group** is one semantic group (an instantiated SQL query) and its text queries;
* a group is a **gap** if every query is answered incorrectly, **robust** if every one is
  answered correctly, **non-robust** otherwise;
* **accuracy** = correct / total;
* **robustness** R = correct / (total - examples in gap groups); undefined (null, with
  why) where every group is a gap, or where no group outside the gaps has two queries
  or more: a group of one query is right or wrong, never non-robust, so R would be 1.00
  by construction (a document set, whose groups have one query per variant);
* **gap fraction** lambda = examples in gap groups / total, so accuracy = R x (1 - lambda);
  undefined with R where each group has one query (a group of one is a gap exactly when
  its answer is wrong: lambda would be 1 - accuracy), as are robustness_retrieval and the
  variant's acc_retrieval_db;
* **accuracy_retrieval** = examples whose retrieval was correct / examples with a
  retrieval verdict (the retrieval module alone: the language model's errors removed);
  queries without a gold document (gold ids unknown, or ``[]``: no document holds the
  answer) have none, are left out of every retrieval figure, and are counted. An answer
  the judge failed on still has its retrieval, which needs no judge: it counts here (and
  in Recall@k, MRR, nDCG), as ``compare`` counts it;
* **robustness_retrieval** = the same among the judged examples outside gap groups (a
  group's tag needs its answers' verdicts);
* **acc_retrieval_db** = 1 - gap groups / groups; across variants, a group counts as a gap
  of the retrieval database only if it is a gap in every variant;
* **accuracy_balanced** = the mean of per-group accuracies: every group weighs the same,
  the "balance gap examples" view (equal to accuracy on a balanced dataset).

Every proportion carries its counts and a 95% Wilson interval.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ragaudit.analysis.summary import (
    SOURCES,
    Blame,
    BlameRule,
    Proportion,
    Source,
    SystemFigures,
    Tag,
    VariantFigures,
)
from ragaudit.records.models import EVIDENCE_GOLD_KINDS


@dataclass(frozen=True, slots=True)
class Example:
    """One judged answer: which group and wording it belongs to, and its verdicts.

    >>> ex = Example("q1", "g1", "short", correct=False, retrieved=("d2", "d3"), gold=("d1",))
    >>> ex.system, ex.origin, ex.retrieval_correct
    ('system', 'sql', None)
    """

    query_id: str
    group_id: str
    variant: str
    correct: bool
    retrieval_correct: bool | None = None
    system: str = "system"
    retrieved: tuple[str, ...] | None = None
    gold: tuple[str, ...] | None = None
    label: str | None = None
    errored: bool = False  # the system failed (timeout, HTTP error): no answer to judge
    # "states": gold lists the documents that state the answer ([]: none does), or
    # "computed": those that state every fact it is computed from; the evidence that blame
    # uses. "entity" or None: the GRAMMAR convention decides.
    gold_kind: str | None = None
    origin: str = "sql"  # the query's source: "sql" (grounded by SQL) or "document"
    # False: the question has no answer (generated or imported as unanswerable: its
    # reference holds no value), so a refusal is the right answer and any other answer the
    # language model's error; never a hole of the knowledge base.
    answerable: bool = True


def is_hole(ex: Example) -> bool:
    """Whether ``ex`` asks an answerable question that no document states (gold ids ``[]``
    that list the documents stating the answer): a hole of the knowledge base.

    >>> is_hole(Example("q1", "g1", "short", False, gold=(), gold_kind="states"))
    True
    >>> is_hole(Example("q2", "g2", "short", True, gold=(), gold_kind="states", answerable=False))
    False
    """
    return (
        ex.answerable
        and ex.gold_kind in EVIDENCE_GOLD_KINDS
        and ex.gold is not None
        and not ex.gold
    )


def gold_state(gold: Iterable[str] | None) -> str:
    """Why a query has no retrieval verdict: its gold ids are "unknown" (None), or "no
    document" holds its answer ([]); "judged" otherwise.

    >>> [gold_state(gold) for gold in (None, [], ["d1"])]
    ['unknown', 'no document', 'judged']
    """
    if gold is None:
        return "unknown"
    return "judged" if gold else "no document"


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials (95% by default).

    >>> low, high = wilson(7, 10)
    >>> round(low, 3), round(high, 3)
    (0.397, 0.892)
    >>> wilson(0, 0)
    (0.0, 1.0)
    """
    if n == 0:
        return (0.0, 1.0)
    return wilson_share(k / n, n, z)


def wilson_share(p: float, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of a share ``p`` of ``n`` trials; also a conservative
    interval for the mean of ``n`` scores in [0, 1], which vary at most as 0/1 ones do.

    >>> [round(x, 3) for x in wilson_share(0.7, 10)]  # a share of 0.7 over 10 trials: 7 of 10
    [0.397, 0.892]
    >>> [round(x, 3) for x in wilson_share(0.55, 20)]  # the mean of 20 scores in [0, 1]
    [0.342, 0.742]
    """
    if n == 0:
        return (0.0, 1.0)
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # Exact at the ends: rounding must not leave 0/n or n/n outside its own interval.
    low = 0.0 if p <= 0.0 else max(0.0, centre - half)
    high = 1.0 if p >= 1.0 else min(1.0, centre + half)
    return (low, high)


def proportion(k: int, n: int) -> Proportion:
    """k of n as a :class:`Proportion`: its share and 95% Wilson interval.

    >>> p = proportion(7, 10)
    >>> p.value, p.k, p.n
    (0.7, 7, 10)
    >>> str(p), str(proportion(0, 0))
    ('0.70 [0.40, 0.89]', 'n/a')
    """
    return Proportion(value=k / n if n else None, k=k, n=n, ci95=wilson(k, n))


def group_tags(examples: Iterable[Example]) -> dict[str, Tag]:
    """Each group's tag from its examples' correctness (one system, one variant).

    >>> verdicts = {"g1": [True, True], "g2": [True, False], "g3": [False, False]}
    >>> examples = [Example(f"{g}.{i}", g, "short", ok)
    ...             for g, oks in verdicts.items() for i, ok in enumerate(oks)]
    >>> group_tags(examples)
    {'g1': 'robust', 'g2': 'non-robust', 'g3': 'gap'}
    """
    seen: dict[str, list[bool]] = defaultdict(list)
    for ex in examples:
        seen[ex.group_id].append(ex.correct)
    return {
        gid: "gap" if not any(v) else "robust" if all(v) else "non-robust"
        for gid, v in seen.items()
    }


def source_of(ex: Example, tag: Tag) -> tuple[Source, bool]:
    """Where one answer went wrong (or "correct"), and whether evidence decided it.

    A correct answer is "correct", whatever else is known of it, so that the blame's
    "correct" is the accuracy. A question with no answer (``answerable`` False: generated
    or imported as unanswerable) is answered right by a refusal, which the judge credits;
    any other answer to it is the language model's, whatever its group (the model answered
    what the documents do not say). By evidence, when the gold ids list the documents that
    state the answer or every fact it is computed from (``gold_kind`` "states",
    "computed"): a wrong answer to a question no such
    document answers is a hole of the knowledge base (a right one was answered from
    elsewhere, and :func:`blame` counts it as a hole answered anyway); a wrong answer
    whose retrieval held none of them is the retriever's; one whose retrieval held one is
    the language model's. Otherwise by the GRAMMAR convention: a wrong answer in a gap
    group is the knowledge base's, one whose retrieval was judged wrong the retriever's,
    any other the language model's. A failed call (a timeout, an HTTP error) gave no
    answer: it is a system error, whatever its group, and neither rule decided it; except
    a hole of the knowledge base, which is one for every system asked it.

    >>> source_of(Example("q4", "g2", "short", False, retrieval_correct=False), "non-robust")
    ('retriever', False)
    >>> source_of(Example("q3", "g2", "short", False, retrieval_correct=True), "non-robust")
    ('language model', False)
    >>> source_of(Example("q5", "g3", "short", False), "gap")
    ('knowledge base', False)
    >>> source_of(Example("q7", "g3", "short", False, errored=True), "gap")
    ('system error', False)
    >>> hole = Example("q6", "g4", "short", correct=False, gold=(), gold_kind="states")
    >>> source_of(hole, "gap")
    ('knowledge base', True)
    >>> made_up = Example("q8", "g5", "short", False, gold=(), gold_kind="states", answerable=False)
    >>> source_of(made_up, "gap")  # an answer to a question that has none
    ('language model', True)
    """
    evidence = ex.gold_kind in EVIDENCE_GOLD_KINDS and ex.gold is not None
    if is_hole(ex) and not ex.correct:
        return "knowledge base", True
    if ex.errored:
        return "system error", False
    if ex.correct:
        return "correct", evidence
    if not ex.answerable:
        return "language model", evidence
    if evidence:
        assert ex.gold is not None
        if ex.retrieved is not None:
            found = not set(ex.gold).isdisjoint(ex.retrieved)
        else:
            found = ex.retrieval_correct is not False
        return ("language model" if found else "retriever"), True
    if tag == "gap":
        return "knowledge base", False
    if ex.retrieval_correct is False:
        return "retriever", False
    return "language model", False


def blame_rule(by_evidence: int, by_convention: int) -> BlameRule:
    """Which rule decided a blame count: evidence, convention, or both (mixed).

    >>> blame_rule(3, 0), blame_rule(0, 2), blame_rule(1, 1)
    ('evidence', 'convention', 'mixed')
    """
    if by_evidence and by_convention:
        return "mixed"
    return "evidence" if by_evidence else "convention"


def blame(examples: Iterable[Example], tags: Mapping[str, Tag]) -> Blame:
    """Where the answers of one system and variant went wrong, counted.

    >>> verdicts = {"g1": [True, True], "g2": [True, False], "g3": [False, False]}
    >>> examples = [Example(f"{g}.{i}", g, "short", ok)
    ...             for g, oks in verdicts.items() for i, ok in enumerate(oks)]
    >>> counted = blame(examples, group_tags(examples))
    >>> {part: n for part, n in counted.counts.items() if n}  # no answer is the retriever's
    {'correct': 3, 'knowledge base': 2, 'language model': 1}
    >>> counted.rule
    'convention'
    """
    counts: dict[Source, int] = dict.fromkeys(SOURCES, 0)
    by_evidence = by_convention = holes_answered = 0
    for ex in examples:
        part, evidence = source_of(ex, tags[ex.group_id])
        counts[part] += 1
        if part == "system error":
            continue  # neither rule decided it
        if evidence:
            by_evidence += 1
            holes_answered += part == "correct" and is_hole(ex)
        else:
            by_convention += 1
    return Blame(
        rule=blame_rule(by_evidence, by_convention),
        counts=counts,
        by_evidence=by_evidence,
        by_convention=by_convention,
        holes_answered=holes_answered,
    )


def tag_counts(tags: Mapping[str, Tag]) -> dict[Tag, int]:
    """Groups per tag: gap, robust, non-robust.

    >>> tag_counts({"g1": "robust", "g2": "gap", "g3": "gap"})
    {'gap': 2, 'robust': 1, 'non-robust': 0}
    """
    counts: dict[Tag, int] = {"gap": 0, "robust": 0, "non-robust": 0}
    for tag in tags.values():
        counts[tag] += 1
    return counts


def _balanced_accuracy(examples: list[Example]) -> float | None:
    """Every group weighs the same (the mean of per-group accuracies): the "balance gap
    examples" view, which equals accuracy when every group has the same number of
    queries."""
    per_group: dict[str, list[bool]] = defaultdict(list)
    for ex in examples:
        per_group[ex.group_id].append(ex.correct)
    if not per_group:
        return None
    return balanced_mean(sum(v) / len(v) for v in per_group.values())


def balanced_mean(shares: Iterable[float]) -> float | None:
    """The mean of per-group accuracies, summed exactly (``math.fsum``): the same figure
    whatever order the groups come in, in memory or from SQL; None for no group.

    >>> balanced_mean([1.0, 0.5, 0.0]), balanced_mean([])
    (0.5, None)
    """
    values = list(shares)
    return math.fsum(values) / len(values) if values else None


# Why R is undefined (VariantFigures.robustness_undefined), as the tables show it.
ALL_GAPS = "every group is a gap"
ONE_QUERY = "one query per group"


def robustness_undefined(outside_gaps: Iterable[Example]) -> str | None:
    """Why R cannot be measured on these examples (those outside the gap groups of one
    system and variant), or None: none are left ("every group is a gap"), or no group has
    two of them ("one query per group": a group of one query is right or wrong, never
    non-robust, so R would be 1.00 by construction).

    >>> def queries(*groups):
    ...     return [Example(f"q{i}", g, "short", True) for i, g in enumerate(groups)]
    >>> robustness_undefined(queries("g1", "g2")), robustness_undefined(queries("g1", "g1"))
    ('one query per group', None)
    >>> robustness_undefined([])
    'every group is a gap'
    """
    seen: set[str] = set()
    found = False
    for ex in outside_gaps:
        found = True
        if ex.group_id in seen:
            return None
        seen.add(ex.group_id)
    return ONE_QUERY if found else ALL_GAPS


def _undefined(figure: Proportion) -> Proportion:
    """``figure`` shown undefined (null, interval the whole range), its counts kept."""
    return figure.model_copy(update={"value": None, "ci95": (0.0, 1.0)})


def robustness_note(systems: Mapping[str, SystemFigures]) -> str | None:
    """One sentence for every system and variant whose R cannot be measured because each
    group has one query there, or None: said once, instead of one line per comparison.

    >>> def answers(system, variant):
    ...     return [Example(f"{system}{g}{variant}", f"g{g}", variant, g < 2, system=system)
    ...             for g in range(3)]
    >>> examples = answers("rag", "short") + answers("rag", "long") + answers("bm25", "short")
    >>> print(robustness_note(analyze(examples).systems))
    R is undefined on long (rag) and short: each group has one query there, so none can be
    non-robust and R would be 1.00 by construction; it is shown as undefined and not compared,
    with retrieval R, the gap fraction and Acc_retrieval_db (a group of one query is a gap
    exactly when its answer is wrong).
    """
    where: dict[str, list[str]] = defaultdict(list)
    for name, figures in systems.items():
        for variant, m in figures.variants.items():
            if m.robustness_undefined == ONE_QUERY:
                where[variant].append(name)
    if not where:
        return None
    places = [
        variant if len(names) == len(systems) else f"{variant} ({', '.join(names)})"
        for variant, names in sorted(where.items())
    ]
    listed = places[0] if len(places) == 1 else ", ".join(places[:-1]) + " and " + places[-1]
    return (
        f"R is undefined on {listed}: each group has one query there, so none can be "
        "non-robust and R would be 1.00 by construction; it is shown as undefined and not "
        "compared, with retrieval R, the gap fraction and Acc_retrieval_db (a group of one "
        "query is a gap exactly when its answer is wrong)."
    )


def variant_metrics(
    examples: list[Example],
    tags: Mapping[str, Tag] | None = None,
    judge_failed: Sequence[Example] = (),
) -> VariantFigures:
    """The figures of one system and one variant (see the module docstring); ``tags``:
    the groups' tags, when :func:`group_tags` already gave them; ``judge_failed``: the
    answers of the same system and variant the judge failed on, which count in the
    retrieval accuracy and its left-out counts only (their ``correct`` is not read).

    >>> verdicts = {"g1": [True, True], "g2": [True, False], "g3": [False, False]}
    >>> examples = [Example(f"{g}.{i}", g, "short", ok)
    ...             for g, oks in verdicts.items() for i, ok in enumerate(oks)]
    >>> figures = variant_metrics(examples)
    >>> str(figures.accuracy), str(figures.robustness), str(figures.gap_fraction)
    ('0.50 [0.19, 0.81]', '0.75 [0.30, 0.95]', '0.33 [0.10, 0.70]')
    >>> figures.groups
    {'gap': 1, 'robust': 1, 'non-robust': 1}
    >>> figures.accuracy_retrieval is None, figures.retrieval_left_out  # no gold ids
    (True, {'unknown': 6})
    >>> found = Example("g1.2", "g1", "short", False, retrieval_correct=True, gold=("d1",))
    >>> with_failed = variant_metrics(examples, judge_failed=[found])  # the judge failed on it
    >>> with_failed.n_queries, str(with_failed.accuracy_retrieval)
    (6, '1.00 [0.21, 1.00]')
    """
    tags = group_tags(examples) if tags is None else tags
    n = len(examples)
    correct = sum(ex.correct for ex in examples)
    outside = [ex for ex in examples if tags[ex.group_id] != "gap"]
    in_gap = n - len(outside)
    robustness = proportion(correct, n - in_gap)
    undefined = robustness_undefined(outside)
    if undefined is not None and n:
        robustness = _undefined(robustness)
    judged = [ex for ex in examples if ex.retrieval_correct is not None]
    judged_outside = [ex for ex in judged if tags[ex.group_id] != "gap"]
    retrievals = judged + [ex for ex in judge_failed if ex.retrieval_correct is not None]
    left_out: dict[str, int] = defaultdict(int)
    unknown_retrieved = False
    for ex in itertools.chain(examples, judge_failed):
        if ex.retrieval_correct is None:
            state = gold_state(ex.gold)
            left_out["no retrieved ids" if state == "judged" else state] += 1
            unknown_retrieved = unknown_retrieved or (
                state == "unknown" and ex.retrieved is not None
            )
    gap_groups = sum(1 for t in tags.values() if t == "gap")
    gap_fraction = proportion(in_gap, n)
    retrieval_db = proportion(len(tags) - gap_groups, len(tags))
    robustness_retrieval = (
        proportion(sum(bool(ex.retrieval_correct) for ex in judged_outside), len(judged_outside))
        if judged
        else None
    )
    if undefined == ONE_QUERY:
        # A group of one query is a gap exactly when its answer is wrong: lambda is
        # 1 - accuracy and Acc_retrieval_db the accuracy over groups, not a knowledge base's
        # coverage; and retrieval R, like R, is a share over groups that cannot be
        # non-robust. All four are shown undefined with R's reason.
        gap_fraction = _undefined(gap_fraction)
        retrieval_db = _undefined(retrieval_db)
        if robustness_retrieval is not None:
            robustness_retrieval = _undefined(robustness_retrieval)
    return VariantFigures(
        n_queries=n,
        n_groups=len(tags),
        n_errors=sum(ex.errored for ex in examples),
        groups=tag_counts(tags),
        accuracy=proportion(correct, n),
        robustness=robustness,
        robustness_undefined=undefined if n else None,
        gap_fraction=gap_fraction,
        accuracy_retrieval=proportion(
            sum(bool(ex.retrieval_correct) for ex in retrievals), len(retrievals)
        )
        if retrievals
        else None,
        accuracy_retrieval_computed=_computed_retrievals(retrievals),
        retrieval_left_out=dict(left_out),
        robustness_retrieval=robustness_retrieval,
        acc_retrieval_db=retrieval_db,
        accuracy_balanced=_balanced_accuracy(examples),
        # Blame by the GRAMMAR convention needs a retrieval verdict: queries whose gold ids
        # are unknown get the context comparison's, for blame only (the retrieval figures
        # count the queries whose gold ids name a document).
        blame=blame(context_comparison(examples) if unknown_retrieved else examples, tags),
    )


def _computed_retrievals(retrievals: Sequence[Example]) -> Proportion | None:
    """Correct retrievals among those of computed answers (gold ids "computed"), or None
    without any: the retrieval accuracy reported apart for them.

    >>> count = Example("q1", "g1", "short", True, retrieval_correct=False, gold=("d1", "d2"),
    ...                 gold_kind="computed")
    >>> str(_computed_retrievals([count])), _computed_retrievals([])
    ('0.00 [0.00, 0.79]', None)
    """
    computed = [ex for ex in retrievals if ex.gold_kind == "computed"]
    if not computed:
        return None
    return proportion(sum(bool(ex.retrieval_correct) for ex in computed), len(computed))


@dataclass(frozen=True)
class Analysis:
    """What :func:`analyze` computed: every system's figures (those summary.json holds),
    and the tag of every group per system and variant (for the per-query drill-down; too
    many to summarize).

    >>> examples = [Example("q1", "g1", "short", True), Example("q2", "g2", "short", False)]
    >>> analysis = analyze(examples)
    >>> str(analysis.systems["system"].variants["short"].accuracy)
    '0.50 [0.09, 0.91]'
    >>> analysis.tag(examples[1])
    'gap'
    """

    systems: dict[str, SystemFigures]
    tags: dict[str, dict[str, dict[str, Tag]]]  # system -> variant -> group -> tag

    def tag(self, ex: Example) -> Tag:
        """The tag of the group of ``ex`` in its system and variant."""
        return self.tags[ex.system][ex.variant][ex.group_id]


def context_comparison(examples: list[Example]) -> list[Example]:
    """Judge retrieval without gold ids (one system, one variant), by comparing contexts.

    A correct answer had an adequate context. In a non-robust group, an incorrect answer
    whose retrieved ids equal those of a correct answer in the same group had that same
    adequate context: the language model is at fault, not the retriever. Any other
    incorrect answer is the retriever's fault. Examples that already have a retrieval
    verdict, no retrieved ids, or gold ids that say what holds the answer (``[]``: no
    document does, so there is nothing to retrieve) are left as they are.

    >>> examples = [
    ...     Example("q1", "g1", "short", True, retrieved=("d1",)),
    ...     Example("q2", "g1", "short", False, retrieved=("d1",)),  # the same context: the LM's
    ...     Example("q3", "g1", "short", False, retrieved=("d9",)),  # another one: the retriever's
    ... ]
    >>> [ex.retrieval_correct for ex in context_comparison(examples)]
    [True, True, False]
    """
    tags = group_tags(examples)
    good: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for ex in examples:
        if ex.correct and ex.retrieved is not None:
            good[ex.group_id].add(tuple(sorted(ex.retrieved)))
    out = []
    for ex in examples:
        if ex.retrieval_correct is not None or ex.retrieved is None or ex.gold is not None:
            out.append(ex)
            continue
        if ex.correct:
            verdict = True
        elif tags[ex.group_id] == "non-robust":
            verdict = tuple(sorted(ex.retrieved)) in good[ex.group_id]
        else:
            verdict = False
        out.append(replace(ex, retrieval_correct=verdict))
    return out


def by_system_and_variant(examples: Iterable[Example]) -> dict[str, dict[str, list[Example]]]:
    """The examples per system and variant, with the retrieval verdicts :func:`analyze`
    uses: where no query of a variant has gold ids and the system retrieved something,
    from :func:`context_comparison` (mixed with verdicts from gold ids, context verdicts
    would make the retrieval figures count other queries than Recall@k; a system that
    never retrieves anything has no retrieval to judge).

    >>> examples = [
    ...     Example("q1", "g1", "short", True, system="rag", retrieved=("d1",)),
    ...     Example("q2", "g1", "short", False, system="rag", retrieved=("d1",)),
    ...     Example("q3", "g2", "short", False, system="rag", retrieved=("d9",)),
    ... ]
    >>> grouped = by_system_and_variant(examples)
    >>> [ex.retrieval_correct for ex in grouped["rag"]["short"]]
    [True, True, False]
    """
    grouped: dict[str, dict[str, list[Example]]] = defaultdict(lambda: defaultdict(list))
    for ex in examples:
        grouped[ex.system][ex.variant].append(ex)
    for variants in grouped.values():
        for variant, items in variants.items():
            if (
                all(ex.gold is None for ex in items)
                and any(ex.retrieved for ex in items)
                and any(ex.retrieval_correct is None and ex.retrieved is not None for ex in items)
            ):
                variants[variant] = context_comparison(items)
    return grouped


def open_domain_groups(examples: Iterable[Example], llm_only: str) -> set[str]:
    """Groups the LLM-only system (no retrieval) answers correctly in every query: their
    answers may come from the model's own knowledge (the paper's Table 4).

    >>> examples = [
    ...     Example("q1", "g1", "short", True, system="llm"),
    ...     Example("q2", "g2", "short", False, system="llm"),
    ...     Example("q1", "g1", "short", True, system="rag"),
    ...     Example("q2", "g2", "short", True, system="rag"),
    ... ]
    >>> open_domain_groups(examples, llm_only="llm")
    {'g1'}
    """
    by_variant: dict[str, list[Example]] = defaultdict(list)
    for ex in examples:
        if ex.system == llm_only:
            by_variant[ex.variant].append(ex)
    flagged: set[str] = set()
    for items in by_variant.values():
        flagged |= {g for g, tag in group_tags(items).items() if tag == "robust"}
    return flagged


def analyze(
    examples: Iterable[Example],
    *,
    llm_only: str | None = None,
    judge_failed: Iterable[Example] = (),
) -> Analysis:
    """Figures for every system and variant; a group is a gap of the retrieval database
    when it is a gap in every variant it appears in. With ``llm_only`` (the name of a
    system answering without retrieval), groups it answers correctly are flagged as open
    domain and Acc_retrieval_db is also given without them. ``judge_failed``: answers the
    judge failed on, whose retrievals count in the retrieval accuracy
    (:func:`variant_metrics`); a system without a retriever has none, judged or not
    (:func:`without_retriever`).

    >>> def answers(system, variant, verdicts):  # group -> each query's verdict
    ...     return [
    ...         Example(f"{g}.{variant}.{i}", g, variant, ok, system=system)
    ...         for g, oks in verdicts.items()
    ...         for i, ok in enumerate(oks)
    ...     ]
    >>> short = {"g1": [True, True], "g2": [True, False], "g3": [False, False]}
    >>> long = {"g1": [True, False], "g2": [False, False], "g3": [False, False]}
    >>> examples = answers("rag", "short", short) + answers("rag", "long", long)
    >>> rag = analyze(examples).systems["rag"]
    >>> str(rag.variants["short"].accuracy), str(rag.variants["long"].accuracy)
    ('0.50 [0.19, 0.81]', '0.17 [0.03, 0.56]')
    >>> rag.variants["long"].groups
    {'gap': 2, 'robust': 0, 'non-robust': 1}
    >>> str(rag.acc_retrieval_db)  # g3 is a gap in every variant: 2 of 3 groups
    '0.67 [0.21, 0.94]'
    """
    examples, unjudged = without_retriever(examples, judge_failed)
    by_system = by_system_and_variant(examples)
    failed: dict[tuple[str, str], list[Example]] = defaultdict(list)
    for ex in unjudged:
        failed[ex.system, ex.variant].append(ex)
    open_domain = open_domain_groups(examples, llm_only) if llm_only else set()
    systems: dict[str, SystemFigures] = {}
    all_tags: dict[str, dict[str, dict[str, Tag]]] = {}
    for system, variants in sorted(by_system.items()):
        tags = {variant: group_tags(items) for variant, items in sorted(variants.items())}
        figures = {
            variant: variant_metrics(variants[variant], t, failed.get((system, variant), ()))
            for variant, t in tags.items()
        }
        groups: dict[str, list[Tag]] = defaultdict(list)
        for variant_tags in tags.values():
            for gid, tag in variant_tags.items():
                groups[gid].append(tag)
        always_gap = {g for g, seen in groups.items() if all(t == "gap" for t in seen)}
        open_groups: int | None = None
        closed_db: Proportion | None = None
        if llm_only and system != llm_only:
            closed = [g for g in groups if g not in open_domain]
            open_groups = len(groups) - len(closed)
            closed_db = proportion(sum(1 for g in closed if g not in always_gap), len(closed))
        retrieval_db = proportion(len(groups) - len(always_gap), len(groups))
        if figures and all(m.robustness_undefined == ONE_QUERY for m in figures.values()):
            # One query per group in every variant: across them a group is a gap when its
            # one or two answers are wrong, not a hole the variants agree on.
            retrieval_db = _undefined(retrieval_db)
        systems[system] = SystemFigures(
            system=system,
            acc_retrieval_db=retrieval_db,
            knowledge_base_holes=_holes(ex for items in variants.values() for ex in items),
            open_domain_groups=open_groups,
            acc_retrieval_db_closed_domain=closed_db,
            variants=figures,
        )
        all_tags[system] = tags
    return Analysis(systems, all_tags)


def without_retriever(
    examples: Iterable[Example], judge_failed: Iterable[Example] = ()
) -> tuple[list[Example], list[Example]]:
    """The answers, judged (``examples``) and those the judge failed on (``judge_failed``),
    as every figure and comparison reads their retrievals. A system that retrieved nothing
    for any question it was asked, judged or not (an LLM-only system, by design), has no
    retriever: all its answers lose their retrieved ids and their retrieval verdict (which
    the judge records as a miss), so that it has no retrieval figure, no retrieval
    comparison and no retriever to blame (its wrong answers are the language model's),
    rather than a retriever that missed every time. The answers the judge failed on go
    through here too: their retrievals count in the retrieval figures where a system has
    a retriever. :func:`analyze`, :func:`~ragaudit.analysis.comparisons.comparisons` and
    the drill-down read the answers through this one function; the SQL path nulls the
    same rows (:mod:`ragaudit.store.answer_sql`). The order of the answers is kept.

    >>> ex = Example("q1", "g1", "short", False, system="llm-only", retrieved=(),
    ...              retrieval_correct=False, gold=("d1",), gold_kind="states")
    >>> failed = replace(ex, query_id="q2")
    >>> judged, unjudged = without_retriever([ex], [failed])
    >>> [(e.retrieved, e.retrieval_correct) for e in judged + unjudged]
    [(None, None), (None, None)]
    >>> missed = replace(ex, system="rag")  # a retriever that missed this question keeps it
    >>> found = replace(missed, query_id="q3", retrieved=("d1",), retrieval_correct=True)
    >>> [e.retrieval_correct for e in without_retriever([missed, found])[0]]
    [False, True]
    """
    judged, failed = list(examples), list(judge_failed)
    systems = {ex.system for ex in itertools.chain(judged, failed)}
    # Retrieved ids unknown (None) are not "nothing retrieved": such a system keeps its
    # verdicts, as the SQL path keeps a row whose retrieved_ids is NULL.
    retrieving = {ex.system for ex in itertools.chain(judged, failed) if ex.retrieved != ()}
    none = systems - retrieving
    if not none:
        return judged, failed

    def stripped(items: list[Example]) -> list[Example]:
        return [
            replace(ex, retrieved=None, retrieval_correct=None) if ex.system in none else ex
            for ex in items
        ]

    return stripped(judged), stripped(failed)


def with_left_out(
    systems: Mapping[str, SystemFigures], left_out: Mapping[tuple[str, str], Mapping[str, int]]
) -> tuple[dict[str, SystemFigures], list[str]]:
    """Add the queries left out before the analysis (``left_out``: per system and variant,
    by why) to each variant's ``retrieval_left_out``; a variant with none left to analyze
    gets a warning instead, which says it has no retrieval figures.

    >>> examples = [Example("q1", "g1", "short", True, system="rag", gold=("d1",))]
    >>> left_out = {("rag", "short"): {"no document": 2}, ("rag", "long"): {"unknown": 3}}
    >>> systems, warnings = with_left_out(analyze(examples).systems, left_out)
    >>> systems["rag"].variants["short"].retrieval_left_out
    {'no document': 2, 'no retrieved ids': 1}
    >>> print(warnings[0])
    rag / long: no query has gold ids that name a document, so it has no retrieval figures (left
    out: 3 unknown)
    """
    out = dict(systems)
    warnings: list[str] = []
    for (name, variant), counts in sorted(left_out.items()):
        figures = out.get(name)
        if figures is not None and variant in figures.variants:
            metrics = figures.variants[variant]
            merged = dict(sorted((Counter(metrics.retrieval_left_out) + Counter(counts)).items()))
            updated = metrics.model_copy(update={"retrieval_left_out": merged})
            out[name] = figures.model_copy(
                update={"variants": {**figures.variants, variant: updated}}
            )
        else:
            listed = ", ".join(f"{n} {why}" for why, n in sorted(counts.items()))
            warnings.append(
                f"{name} / {variant}: no query has gold ids that name a document, so it has "
                f"no retrieval figures (left out: {listed})"
            )
    return out, warnings


def _holes(examples: Iterable[Example]) -> Proportion | None:
    """Groups no document answers, among the groups whose gold ids say which do; questions
    without an answer (``answerable`` False) are no hole, and are not counted."""
    hole: dict[str, bool] = {}
    for ex in examples:
        if ex.answerable and ex.gold_kind in EVIDENCE_GOLD_KINDS and ex.gold is not None:
            hole[ex.group_id] = hole.get(ex.group_id, False) or not ex.gold
    if not hole:
        return None
    return proportion(sum(hole.values()), len(hole))
