"""Analysis: pure functions from judged examples to figures (GRAMMAR-Eval). No IO, no LLM:
take records, return numbers with their counts and intervals."""

from ragaudit.analysis.metrics import (
    Example,
    Proportion,
    SystemSummary,
    VariantMetrics,
    analyze,
    group_tags,
    variant_metrics,
    wilson,
)

__all__ = [
    "Example",
    "Proportion",
    "SystemSummary",
    "VariantMetrics",
    "analyze",
    "group_tags",
    "variant_metrics",
    "wilson",
]
