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
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Tag = Literal["gap", "robust", "non-robust"]


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


def gold_state(gold: Iterable[str] | None) -> str:
    """Why a query has no retrieval verdict: its gold ids are "unknown" (None), or "no
    document" holds its answer ([]); "judged" otherwise."""
    if gold is None:
        return "unknown"
    return "judged" if gold else "no document"


def retrieval_count(n: int, left_out: dict[str, int]) -> str:
    """The queries a retrieval figure counts, and those left out and why, for a table:
    "150; left out: 318 gold ids unknown"."""
    if not left_out:
        return str(n)
    why = ", ".join(
        f"{count} {'gold ids ' + reason if reason == 'unknown' else reason}"
        for reason, count in sorted(left_out.items())
    )
    return f"{n}; left out: {why}"


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials (95% by default)."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # Exact at the ends: rounding must not leave 0/n or n/n outside its own interval.
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return (low, high)


@dataclass(frozen=True)
class Proportion:
    """k of n, with its value and 95% Wilson interval."""

    k: int
    n: int

    @property
    def value(self) -> float | None:
        return self.k / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.k, self.n)

    def as_dict(self) -> dict[str, Any]:
        low, high = self.interval
        return {"value": self.value, "k": self.k, "n": self.n, "ci95": [low, high]}

    def __str__(self) -> str:
        if not self.n:
            return "n/a"
        low, high = self.interval
        return f"{self.value:.2f} [{low:.2f}, {high:.2f}]"


def group_tags(examples: Iterable[Example]) -> dict[str, Tag]:
    """Each group's tag from its examples' correctness (one system, one variant)."""
    seen: dict[str, list[bool]] = defaultdict(list)
    for ex in examples:
        seen[ex.group_id].append(ex.correct)
    return {
        gid: "gap" if not any(v) else "robust" if all(v) else "non-robust"
        for gid, v in seen.items()
    }


SOURCES = ("correct", "knowledge base", "retriever", "language model")


def source_of(ex: Example, tag: Tag) -> tuple[str, bool]:
    """Where one answer went wrong (or "correct"), and whether evidence decided it.

    By evidence, when the gold ids list the documents that state the answer
    (``gold_kind`` "states"): no such document is a hole of the knowledge base, whatever
    the system answered; a wrong answer whose retrieval held none of them is the
    retriever's; one whose retrieval held one is the language model's. Otherwise by the
    GRAMMAR convention: a wrong answer in a gap group is the knowledge base's, one whose
    retrieval was judged wrong the retriever's, any other the language model's."""
    if ex.gold_kind == "states" and ex.gold is not None:
        if not ex.gold:
            return "knowledge base", True
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


@dataclass
class Blame:
    """Queries of one system and variant by where they went wrong (:func:`source_of`)."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SOURCES, 0))
    by_evidence: int = 0  # queries decided by the documents that state the answer
    by_convention: int = 0  # queries decided by the GRAMMAR convention
    holes_answered: int = 0  # correct answers that no document states: from elsewhere

    @property
    def rule(self) -> str:
        """Which rule decided the figures: evidence, convention, or both (mixed)."""
        if self.by_evidence and self.by_convention:
            return "mixed"
        return "evidence" if self.by_evidence else "convention"

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "counts": dict(self.counts),
            "by_evidence": self.by_evidence,
            "by_convention": self.by_convention,
            "holes_answered": self.holes_answered,
        }


def blame(examples: Iterable[Example], tags: dict[str, Tag]) -> Blame:
    """Where the answers of one system and variant went wrong, counted."""
    out = Blame()
    for ex in examples:
        part, evidence = source_of(ex, tags[ex.group_id])
        out.counts[part] += 1
        if evidence:
            out.by_evidence += 1
            out.holes_answered += part == "knowledge base" and ex.correct
        else:
            out.by_convention += 1
    return out


@dataclass
class VariantMetrics:
    """All figures of one system and one variant."""

    n_queries: int
    n_groups: int
    tags: dict[str, Tag]
    accuracy: Proportion
    robustness: Proportion
    gap_fraction: Proportion
    accuracy_retrieval: Proportion | None
    robustness_retrieval: Proportion | None
    acc_retrieval_db: Proportion
    accuracy_balanced: float | None = None
    n_errors: int = 0  # queries the system failed on (counted as wrong answers)
    blame: Blame = field(default_factory=Blame)
    # Queries without a retrieval verdict, by why (gold_state): left out of the retrieval
    # figures, which are over the queries whose gold ids name a document.
    retrieval_left_out: dict[str, int] = field(default_factory=dict)

    def tag_counts(self) -> dict[str, int]:
        counts = {"gap": 0, "robust": 0, "non-robust": 0}
        for tag in self.tags.values():
            counts[tag] += 1
        return counts

    def as_dict(self) -> dict[str, Any]:
        def opt(p: Proportion | None) -> dict[str, Any] | None:
            return p.as_dict() if p is not None else None

        return {
            "n_queries": self.n_queries,
            "n_groups": self.n_groups,
            "n_errors": self.n_errors,
            "groups": self.tag_counts(),
            "accuracy": self.accuracy.as_dict(),
            "robustness": self.robustness.as_dict(),
            "gap_fraction": self.gap_fraction.as_dict(),
            "accuracy_retrieval": opt(self.accuracy_retrieval),
            "retrieval_left_out": dict(self.retrieval_left_out),
            "robustness_retrieval": opt(self.robustness_retrieval),
            "acc_retrieval_db": self.acc_retrieval_db.as_dict(),
            "accuracy_balanced": self.accuracy_balanced,
            "blame": self.blame.as_dict(),
        }


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


def variant_metrics(examples: list[Example]) -> VariantMetrics:
    """The metrics of one system and one variant (see the module docstring)."""
    tags = group_tags(examples)
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
    return VariantMetrics(
        n_queries=n,
        n_groups=len(tags),
        tags=tags,
        accuracy=Proportion(correct, n),
        robustness=Proportion(correct, n - in_gap),
        gap_fraction=Proportion(in_gap, n),
        accuracy_retrieval=Proportion(sum(bool(ex.retrieval_correct) for ex in judged), len(judged))
        if judged
        else None,
        robustness_retrieval=Proportion(
            sum(bool(ex.retrieval_correct) for ex in judged_outside), len(judged_outside)
        )
        if judged
        else None,
        acc_retrieval_db=Proportion(len(tags) - gap_groups, len(tags)),
        accuracy_balanced=_balanced_accuracy(examples),
        n_errors=sum(ex.errored for ex in examples),
        # Blame by the GRAMMAR convention needs a retrieval verdict: queries whose gold ids
        # are unknown get the context comparison's, for blame only (the retrieval figures
        # count the queries whose gold ids name a document).
        blame=blame(context_comparison(examples) if unknown_retrieved else examples, tags),
        retrieval_left_out=dict(left_out),
    )


@dataclass
class SystemSummary:
    """One system: metrics per variant, and the retrieval database judged across variants."""

    system: str
    variants: dict[str, VariantMetrics] = field(default_factory=dict)
    acc_retrieval_db: Proportion = field(default_factory=lambda: Proportion(0, 0))
    open_domain_groups: int | None = None
    acc_retrieval_db_closed: Proportion | None = None
    # Groups whose answer no document states, among those whose gold ids say which
    # documents state it: the holes of the knowledge base by evidence (None: no evidence).
    knowledge_base_holes: Proportion | None = None

    def as_dict(self) -> dict[str, Any]:
        closed = self.acc_retrieval_db_closed
        holes = self.knowledge_base_holes
        return {
            "system": self.system,
            "acc_retrieval_db": self.acc_retrieval_db.as_dict(),
            "knowledge_base_holes": holes.as_dict() if holes else None,
            "open_domain_groups": self.open_domain_groups,
            "acc_retrieval_db_closed_domain": closed.as_dict() if closed else None,
            "variants": {v: m.as_dict() for v, m in self.variants.items()},
        }


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


def analyze(
    examples: Iterable[Example], *, llm_only: str | None = None
) -> dict[str, SystemSummary]:
    """Metrics for every system and variant; a group is a gap of the retrieval database
    when it is a gap in every variant it appears in. With ``llm_only`` (the name of a
    system answering without retrieval), groups it answers correctly are flagged as open
    domain and Acc_retrieval_db is also given without them."""
    examples = list(examples)
    by_system: dict[str, dict[str, list[Example]]] = defaultdict(lambda: defaultdict(list))
    for ex in examples:
        by_system[ex.system][ex.variant].append(ex)
    for variants in by_system.values():
        for variant, items in variants.items():
            # Only where no query has gold ids: mixed with verdicts from gold ids, context
            # verdicts would make the retrieval figures count other queries than Recall@k.
            if all(ex.gold is None for ex in items) and any(
                ex.retrieval_correct is None and ex.retrieved is not None for ex in items
            ):
                variants[variant] = context_comparison(items)
    open_domain = open_domain_groups(examples, llm_only) if llm_only else set()
    out: dict[str, SystemSummary] = {}
    for system, variants in sorted(by_system.items()):
        summary = SystemSummary(system=system)
        for variant, items in sorted(variants.items()):
            summary.variants[variant] = variant_metrics(items)
        groups: dict[str, list[Tag]] = defaultdict(list)
        for metrics in summary.variants.values():
            for gid, tag in metrics.tags.items():
                groups[gid].append(tag)
        always_gap = {g for g, tags in groups.items() if all(t == "gap" for t in tags)}
        summary.acc_retrieval_db = Proportion(len(groups) - len(always_gap), len(groups))
        summary.knowledge_base_holes = _holes(ex for items in variants.values() for ex in items)
        if llm_only and system != llm_only:
            closed = [g for g in groups if g not in open_domain]
            summary.open_domain_groups = len(groups) - len(closed)
            summary.acc_retrieval_db_closed = Proportion(
                sum(1 for g in closed if g not in always_gap), len(closed)
            )
        out[system] = summary
    return out


def _holes(examples: Iterable[Example]) -> Proportion | None:
    """Groups no document answers, among the groups whose gold ids say which do."""
    hole: dict[str, bool] = {}
    for ex in examples:
        if ex.gold_kind == "states" and ex.gold is not None:
            hole[ex.group_id] = hole.get(ex.group_id, False) or not ex.gold
    if not hole:
        return None
    return Proportion(sum(hole.values()), len(hole))
