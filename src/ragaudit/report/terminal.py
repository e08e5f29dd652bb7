"""What ``ragaudit analyze`` shows on the terminal: rich tables built from an analysis
:class:`~ragaudit.analysis.summary.Summary` (the command line only prints them)."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from ragaudit.analysis.retrieval_metrics import ranking_columns
from ragaudit.analysis.summary import Summary
from ragaudit.report.text import BLAME_HEADERS, METRIC_NAMES, blame_rows, retrieval_queries, show


def system_tables(summary: Summary) -> list[Table]:
    """One table per system: a column per variant, a row per figure; the title gives
    Acc_retrieval_db across variants (and without open-domain groups, and the groups no
    document answers, where known)."""
    tables = []
    for system, figures in summary.systems.items():
        closed = figures.acc_retrieval_db_closed_domain
        extra = f"; closed domain {closed}" if closed is not None else ""
        if figures.knowledge_base_holes is not None:
            extra += f"; groups no document answers {figures.knowledge_base_holes}"
        table = Table(
            title=f"{system}  (acc_retrieval_db {figures.acc_retrieval_db}{extra})",
            title_justify="left",
        )
        table.add_column("metric")
        for variant in figures.variants:
            table.add_column(escape(variant), justify="right")
        variants = list(figures.variants.values())
        for name in ("n_queries", "n_groups", "n_errors"):
            table.add_row(name, *(str(getattr(m, name)) for m in variants))
        for name in METRIC_NAMES:
            table.add_row(name, *(show(getattr(m, name)) for m in variants))
        table.add_row("retrieval queries", *(escape(retrieval_queries(m)) for m in variants))
        tables.append(table)
    return tables


def blame_table(summary: Summary) -> Table:
    """Where the answers go wrong (shares of the queries), per system and variant."""
    table = Table(title="Where the answers go wrong (shares of the queries)", title_justify="left")
    for header in BLAME_HEADERS:
        table.add_column(header, justify="left" if header in BLAME_HEADERS[:3] else "right")
    for row in blame_rows(summary):
        table.add_row(*(escape(cell) for cell in row))
    return table


def ranking_table(summary: Summary) -> Table | None:
    """The ranking metrics' means per system and variant (their intervals are in
    summary.md); None without ranking metrics."""
    ranking = summary.retrieval_ranking
    if not ranking:
        return None
    table = Table(title="Retrieval ranking (means; intervals in summary.md)", title_justify="left")
    names = ranking_columns(ranking)
    for header in ("system", "variant", *names):
        table.add_column(header, justify="left" if header in ("system", "variant") else "right")
    for name, entry in ranking.items():
        for variant, metrics in entry.variants.items():
            table.add_row(
                escape(name),
                escape(variant),
                *(show(metrics[m].value) if m in metrics else "" for m in names),
            )
    return table


def judge_failed_lines(summary: Summary) -> list[str]:
    """One line per system whose answers the LLM judge failed on (plain text)."""
    return [
        f"{system}: {n} answers left out, the LLM judge failed on them "
        "(rerun ragaudit judge to retry them)"
        for system, n in sorted(summary.judge_failed.items())
    ]
