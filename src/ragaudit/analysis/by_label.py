"""Every figure of the analysis broken down by question label. Pure.

The queries of each label are analyzed as if the label were a variant: accuracy, R within
the label's queries of a group, retrieval accuracy, blame. Labels are compared within each
system on accuracy (of the answers and of the retrievals), paired by semantic group: the
wordings of one group may carry different labels, and the groups that have queries of both
labels are the pairs. Where no group has both (each question its own group, as in SQuAD),
the comparison is undefined and says so instead of testing unpaired data as if paired.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from ragaudit.analysis.comparisons import comparisons
from ragaudit.analysis.metrics import Example, analyze
from ragaudit.analysis.summary import Comparison, VariantFigures

_COMPARED = ("accuracy", "accuracy_retrieval")


def label_breakdown(
    examples: Iterable[Example], seed: int = 0
) -> tuple[dict[str, dict[str, VariantFigures]], list[Comparison]]:
    """Per system and label, the figures of the queries with that label; and the
    within-system comparisons between labels. Empty when no query carries a label."""
    labelled = [replace(ex, variant=ex.label) for ex in examples if ex.label is not None]
    if not labelled:
        return {}, []
    analysis = analyze(labelled)
    figures = {system: dict(f.variants) for system, f in analysis.systems.items()}
    if len({ex.variant for ex in labelled}) < 2:
        return figures, []
    compared = [
        c
        for c in comparisons(labelled, seed, outcomes=("answer", "retrieval"))
        if c.a.system == c.b.system and c.metric in _COMPARED
    ]
    return figures, compared
