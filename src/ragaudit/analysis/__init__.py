"""Analysis: pure functions from judged examples to figures (GRAMMAR-Eval). No IO, no LLM:
take records, return numbers with their counts and intervals, as the typed models of
:mod:`ragaudit.analysis.summary` (what summary.json holds)."""

from ragaudit.analysis.comparisons import comparisons, verdict
from ragaudit.analysis.metrics import (
    Analysis,
    Example,
    analyze,
    group_tags,
    proportion,
    variant_metrics,
    wilson,
)
from ragaudit.analysis.summary import (
    Blame,
    Comparison,
    MeanInterval,
    Proportion,
    Summary,
    SystemFigures,
    SystemRanking,
    VariantFigures,
)

__all__ = [
    "Analysis",
    "Blame",
    "Comparison",
    "Example",
    "MeanInterval",
    "Proportion",
    "Summary",
    "SystemFigures",
    "SystemRanking",
    "VariantFigures",
    "analyze",
    "comparisons",
    "group_tags",
    "proportion",
    "variant_metrics",
    "verdict",
    "wilson",
]
