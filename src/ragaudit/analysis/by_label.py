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
    examples: Iterable[Example], seed: int = 0, *, judge_failed: Iterable[Example] = ()
) -> tuple[dict[str, dict[str, VariantFigures]], list[Comparison]]:
    """Per system and label, the figures of the queries with that label; and the
    within-system comparisons between labels. Empty when no query carries a label.
    ``judge_failed``: answers the judge failed on, counted in the retrieval figures only.

    >>> examples = [
    ...     Example(f"q{g}{label[0]}", f"g{g}", "short", ok, label=label)
    ...     for g in range(6)
    ...     for label, ok in (("fact_single", True), ("reasoning", g % 3 == 0))
    ... ]
    >>> figures, compared = label_breakdown(examples)
    >>> {label: str(f.accuracy) for label, f in figures["system"].items()}
    {'fact_single': '1.00 [0.61, 1.00]', 'reasoning': '0.33 [0.10, 0.70]'}
    >>> print(compared[0].verdict)
    No significant accuracy difference between fact_single and reasoning (accuracy 1.00 vs 0.33,
    difference +0.67 [+0.25, +1.00], p = 0.114, 6 groups).
    """
    labelled = [replace(ex, variant=ex.label) for ex in examples if ex.label is not None]
    if not labelled:
        return {}, []
    failed = [replace(ex, variant=ex.label) for ex in judge_failed if ex.label is not None]
    analysis = analyze(labelled, judge_failed=failed)
    figures = {system: dict(f.variants) for system, f in analysis.systems.items()}
    if len({ex.variant for ex in labelled}) < 2:
        return figures, []
    compared = [
        c
        for c in comparisons(labelled, seed, outcomes=("answer", "retrieval"), judge_failed=failed)
        if c.a.system == c.b.system and c.metric in _COMPARED
    ]
    return figures, compared
