"""Semantic groups, their tags, and the GRAMMAR metrics, per system and variant.

Definitions (grammar-v2 section 4.3), all computed within one system and one variant:

* a **group** is one semantic group (an instantiated SQL query) and its text queries;
* a group is a **gap** if every query is answered incorrectly, **robust** if every one is
  answered correctly, **non-robust** otherwise;
* **accuracy** = correct / total;
* **robustness** R = correct / (total - examples in gap groups);
* **gap fraction** lambda = examples in gap groups / total, so accuracy = R x (1 - lambda);
* **accuracy_retrieval** = examples whose retrieval was correct / examples with a
  retrieval verdict (the retrieval module alone: the language model's errors removed);
  queries without a gold document (gold ids unknown, or ``[]``: no document holds the
  answer) have none, are left out of every retrieval figure, and are counted;
* **robustness_retrieval** = the same among the examples outside gap groups;
* **acc_retrieval_db** = 1 - gap groups / groups; across variants, a group counts as a gap
  of the retrieval database only if it is a gap in every variant;
* **accuracy_balanced** = the mean of per-group accuracies: every group weighs the same,
  the "balance gap examples" view (equal to accuracy on a balanced dataset).

Every proportion carries its counts and a 95% Wilson interval.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
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


@dataclass(frozen=True, slots=True)
class Example:
    """One judged answer: which group and wording it belongs to, and its verdicts."""

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
    # "states": gold lists the documents that state the answer ([]: none does), the
    # evidence that blame uses; "entity" or None: the GRAMMAR convention decides.
    gold_kind: str | None = None
    origin: str = "sql"  # the query's source: "sql" (grounded by SQL) or "document"


def gold_state(gold: Iterable[str] | None) -> str:
    """Why a query has no retrieval verdict: its gold ids are "unknown" (None), or "no
    document" holds its answer ([]); "judged" otherwise."""
    if gold is None:
        return "unknown"
    return "judged" if gold else "no document"


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials (95% by default)."""
    if n == 0:
        return (0.0, 1.0)
    return wilson_share(k / n, n, z)


def wilson_share(p: float, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of a share ``p`` of ``n`` trials; also a conservative
    interval for the mean of ``n`` scores in [0, 1], which vary at most as 0/1 ones do."""
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
    """k of n as a :class:`Proportion`: its share and 95% Wilson interval."""
    return Proportion(value=k / n if n else None, k=k, n=n, ci95=wilson(k, n))


def group_tags(examples: Iterable[Example]) -> dict[str, Tag]:
    """Each group's tag from its examples' correctness (one system, one variant)."""
    seen: dict[str, list[bool]] = defaultdict(list)
    for ex in examples:
        seen[ex.group_id].append(ex.correct)
    return {
        gid: "gap" if not any(v) else "robust" if all(v) else "non-robust"
        for gid, v in seen.items()
    }


def source_of(ex: Example, tag: Tag) -> tuple[Source, bool]:
    """Where one answer went wrong (or "correct"), and whether evidence decided it.

    By evidence, when the gold ids list the documents that state the answer
    (``gold_kind`` "states"): no such document is a hole of the knowledge base, whatever
    the system answered; a wrong answer whose retrieval held none of them is the
    retriever's; one whose retrieval held one is the language model's. Otherwise by the
    GRAMMAR convention: a wrong answer in a gap group is the knowledge base's, one whose
    retrieval was judged wrong the retriever's, any other the language model's. A failed
    call (a timeout, an HTTP error) gave no answer: it is a system error, whatever its
    group, and neither rule decided it; except a hole of the knowledge base, which is one
    for every system asked it."""
    if ex.gold_kind == "states" and ex.gold is not None and not ex.gold:
        return "knowledge base", True
    if ex.errored:
        return "system error", False
    if ex.gold_kind == "states" and ex.gold is not None:
        if ex.correct:
            return "correct", True
        if ex.retrieved is not None:
            found = not ex.errored and not set(ex.gold).isdisjoint(ex.retrieved)
        else:
            found = ex.retrieval_correct is not False
        return ("language model" if found else "retriever"), True
    if ex.correct:
        return "correct", False
    if tag == "gap":
        return "knowledge base", False
    if ex.retrieval_correct is False:
        return "retriever", False
    return "language model", False


def blame_rule(by_evidence: int, by_convention: int) -> BlameRule:
    """Which rule decided a blame count: evidence, convention, or both (mixed)."""
    if by_evidence and by_convention:
        return "mixed"
    return "evidence" if by_evidence else "convention"


def blame(examples: Iterable[Example], tags: Mapping[str, Tag]) -> Blame:
    """Where the answers of one system and variant went wrong, counted."""
    counts: dict[Source, int] = dict.fromkeys(SOURCES, 0)
    by_evidence = by_convention = holes_answered = 0
    for ex in examples:
        part, evidence = source_of(ex, tags[ex.group_id])
        counts[part] += 1
        if part == "system error":
            continue  # neither rule decided it
        if evidence:
            by_evidence += 1
            holes_answered += part == "knowledge base" and ex.correct
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
    """Groups per tag: gap, robust, non-robust."""
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
    return sum(sum(v) / len(v) for v in per_group.values()) / len(per_group)


def variant_metrics(
    examples: list[Example], tags: Mapping[str, Tag] | None = None
) -> VariantFigures:
    """The figures of one system and one variant (see the module docstring); ``tags``:
    the groups' tags, when :func:`group_tags` already gave them."""
    tags = group_tags(examples) if tags is None else tags
    n = len(examples)
    correct = sum(ex.correct for ex in examples)
    outside = [ex for ex in examples if tags[ex.group_id] != "gap"]
    in_gap = n - len(outside)
    judged = [ex for ex in examples if ex.retrieval_correct is not None]
    judged_outside = [ex for ex in judged if tags[ex.group_id] != "gap"]
    left_out: dict[str, int] = defaultdict(int)
    unknown_retrieved = False
    for ex in examples:
        if ex.retrieval_correct is None:
            state = gold_state(ex.gold)
            left_out["no retrieved ids" if state == "judged" else state] += 1
            unknown_retrieved = unknown_retrieved or (
                state == "unknown" and ex.retrieved is not None
            )
    gap_groups = sum(1 for t in tags.values() if t == "gap")
    return VariantFigures(
        n_queries=n,
        n_groups=len(tags),
        n_errors=sum(ex.errored for ex in examples),
        groups=tag_counts(tags),
        accuracy=proportion(correct, n),
        robustness=proportion(correct, n - in_gap),
        gap_fraction=proportion(in_gap, n),
        accuracy_retrieval=proportion(sum(bool(ex.retrieval_correct) for ex in judged), len(judged))
        if judged
        else None,
        retrieval_left_out=dict(left_out),
        robustness_retrieval=proportion(
            sum(bool(ex.retrieval_correct) for ex in judged_outside), len(judged_outside)
        )
        if judged
        else None,
        acc_retrieval_db=proportion(len(tags) - gap_groups, len(tags)),
        accuracy_balanced=_balanced_accuracy(examples),
        # Blame by the GRAMMAR convention needs a retrieval verdict: queries whose gold ids
        # are unknown get the context comparison's, for blame only (the retrieval figures
        # count the queries whose gold ids name a document).
        blame=blame(context_comparison(examples) if unknown_retrieved else examples, tags),
    )


@dataclass(frozen=True)
class Analysis:
    """What :func:`analyze` computed: every system's figures (those summary.json holds),
    and the tag of every group per system and variant (for the per-query drill-down; too
    many to summarize)."""

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
    never retrieves anything has no retrieval to judge)."""
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
    answers may come from the model's own knowledge (the paper's Table 4)."""
    by_variant: dict[str, list[Example]] = defaultdict(list)
    for ex in examples:
        if ex.system == llm_only:
            by_variant[ex.variant].append(ex)
    flagged: set[str] = set()
    for items in by_variant.values():
        flagged |= {g for g, tag in group_tags(items).items() if tag == "robust"}
    return flagged


def analyze(examples: Iterable[Example], *, llm_only: str | None = None) -> Analysis:
    """Figures for every system and variant; a group is a gap of the retrieval database
    when it is a gap in every variant it appears in. With ``llm_only`` (the name of a
    system answering without retrieval), groups it answers correctly are flagged as open
    domain and Acc_retrieval_db is also given without them."""
    examples = list(examples)
    by_system = by_system_and_variant(examples)
    open_domain = open_domain_groups(examples, llm_only) if llm_only else set()
    systems: dict[str, SystemFigures] = {}
    all_tags: dict[str, dict[str, dict[str, Tag]]] = {}
    for system, variants in sorted(by_system.items()):
        tags = {variant: group_tags(items) for variant, items in sorted(variants.items())}
        figures = {variant: variant_metrics(variants[variant], t) for variant, t in tags.items()}
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
        systems[system] = SystemFigures(
            system=system,
            acc_retrieval_db=proportion(len(groups) - len(always_gap), len(groups)),
            knowledge_base_holes=_holes(ex for items in variants.values() for ex in items),
            open_domain_groups=open_groups,
            acc_retrieval_db_closed_domain=closed_db,
            variants=figures,
        )
        all_tags[system] = tags
    return Analysis(systems, all_tags)


def with_left_out(
    systems: Mapping[str, SystemFigures], left_out: Mapping[tuple[str, str], Mapping[str, int]]
) -> tuple[dict[str, SystemFigures], list[str]]:
    """Add the queries left out before the analysis (``left_out``: per system and variant,
    by why) to each variant's ``retrieval_left_out``; a variant with none left to analyze
    gets a warning instead, which says it has no retrieval figures."""
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
    """Groups no document answers, among the groups whose gold ids say which do."""
    hole: dict[str, bool] = {}
    for ex in examples:
        if ex.gold_kind == "states" and ex.gold is not None:
            hole[ex.group_id] = hole.get(ex.group_id, False) or not ex.gold
    if not hole:
        return None
    return proportion(sum(hole.values()), len(hole))
