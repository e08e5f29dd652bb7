"""What ``ragaudit analyze`` shows on the terminal: rich tables built from an analysis
:class:`~ragaudit.analysis.summary.Summary` (the command line only prints them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.markup import escape
from rich.table import Table

from ragaudit.analysis.retrieval_metrics import ranking_columns
from ragaudit.analysis.summary import (
    LabelFigures,
    LambdaStudy,
    Proportion,
    Summary,
    WeightScan,
)
from ragaudit.report.text import (
    BLAME_HEADERS,
    GROUP_HEADERS,
    LAMBDA_HEADERS,
    METRIC_NAMES,
    RELIABILITY_HEADERS,
    STABILITY_HEADERS,
    TABLE_STATS_HEADERS,
    across_variants,
    blame_rows,
    figure_cell,
    group_stability_rows,
    lambda_rows,
    reliability_rows,
    retrieval_queries,
    show,
    stability_rows,
    table_stats_rows,
)

if TYPE_CHECKING:
    from ragaudit.generate.dataset import DatasetOverview, TableStats


# What the rows' names mean, under the last system's table (docs/analyze.md says it at
# length).
SYSTEM_CAPTION = (
    "A gap is a group (one question's wordings) whose every answer is wrong. robustness "
    "(R): accuracy outside the gaps; gap_fraction (lambda): the share of queries in gaps, "
    "so accuracy = R x (1 - lambda); acc_retrieval_db: the share of groups that are not "
    "gaps, which the knowledge base (documents or database) answers; in the title, across "
    "variants, a group is a gap only if it is one in every variant. *_retrieval: the same "
    "for the retriever finding a gold document."
)


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
            title=f"{escape(system)}  (Acc_retrieval_db across variants: "
            f"{across_variants(figures)}{extra})",
            title_justify="left",
        )
        table.add_column("metric", no_wrap=True, overflow="fold")
        for variant in figures.variants:
            table.add_column(escape(variant), justify="right", overflow="fold")
        variants = list(figures.variants.values())
        for name in ("n_queries", "n_groups", "n_errors"):
            table.add_row(name, *(str(getattr(m, name)) for m in variants))
        for name in METRIC_NAMES:
            table.add_row(name, *(figure_cell(m, name) for m in variants))
        if any(m.accuracy_retrieval_computed is not None for m in variants):
            # Questions whose answer is computed (a count, a total), reported apart.
            name = "accuracy_retrieval_computed"
            table.add_row(name, *(figure_cell(m, name) for m in variants))
        table.add_row("retrieval queries", *(escape(retrieval_queries(m)) for m in variants))
        tables.append(table)
    if tables:
        tables[-1].caption, tables[-1].caption_justify = SYSTEM_CAPTION, "left"
    return tables


def compact_table(
    title: str, headers: list[str], names: frozenset[str], *, break_headers: bool = False
) -> Table:
    """A table of many columns that fits 80 characters: no vertical rules, a figure never
    split, ``names``' columns (names) folded rather than cut ("bm25-top3" and "bm25-top5"
    must stay apart) and at least 8 characters wide; ``break_headers``: every header on
    one line per word, for a table too wide for its headers on one line."""
    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        padding=(0, 1, 0, 0),
        pad_edge=False,
        show_edge=False,
    )
    for header in headers:
        named = header in names
        table.add_column(
            header.replace(" ", "\n") if break_headers else header,
            justify="left" if named else "right",
            overflow="fold",
            no_wrap=not named,
            min_width=8 if named else max(len(w) for w in header.split()),
        )
    return table


def blame_table(summary: Summary) -> Table:
    """Where the answers go wrong (shares of the queries), per system and variant, in a
    :func:`compact_table`; the rule in the title when every row has the same one."""
    rows = blame_rows(summary)
    rules = {row[2] for row in rows}
    one_rule = len(rules) == 1
    title = "Where the answers go wrong (shares of the queries)"
    if one_rule:
        title += f"; rule: {next(iter(rules))}"
    kept = [i for i, h in enumerate(BLAME_HEADERS) if not (one_rule and h == "rule")]
    headers = [BLAME_HEADERS[i] for i in kept]
    table = compact_table(title, headers, frozenset(BLAME_HEADERS[:3]), break_headers=True)
    for row in rows:
        table.add_row(*(escape(row[i]) for i in kept))
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
        table.add_column(
            header,
            justify="left" if header in ("system", "variant") else "right",
            overflow="fold",
        )
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


def label_tables(figures: LabelFigures) -> list[Table]:
    """The label composition (and, where the set flags unanswerable questions, its
    answerable part), then each rater's agreement with the others' majority."""
    from ragaudit.records.models import LABELS

    title = (
        f"Question labels: {figures.labelled} of {figures.pairs} pairs with a consensus "
        f"({figures.no_majority} without a majority)"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("label", overflow="fold")
    table.add_column("all pairs", justify="right", overflow="fold")
    if figures.composition_answerable is not None:
        table.add_column("answerable (by the set's flag)", justify="right", overflow="fold")
    for label in LABELS:
        cells = [_share(figures.composition[label])]
        if figures.composition_answerable is not None:
            cells.append(_share(figures.composition_answerable[label]))
        table.add_row(label, *cells)
    tables = [table]
    if figures.per_rater or figures.fleiss is not None:
        fleiss = f"Fleiss' kappa over {len(figures.raters)} raters: {figures.fleiss}"
        agreement = Table(title=f"Agreement. {escape(fleiss)}", title_justify="left")
        for header in (
            "rater",
            "kappa vs the others' majority",
            "pairs",
            "no majority",
            "undecided",
        ):
            agreement.add_column(
                header, justify="left" if header == "rater" else "right", overflow="fold"
            )
        for row in figures.per_rater:
            agreement.add_row(
                escape(row.rater),
                escape(str(row.kappa)),
                str(row.kappa.n),
                str(row.discarded),
                str(figures.undecided.get(row.rater, 0)),
            )
        tables.append(agreement)
    return tables


def _share(p: Proportion) -> str:
    return f"{p.k}  {p}" if p.n else "0"


def scan_table(scan: WeightScan) -> Table:
    """The text-weight scan in the layout of "Know Your RAG"'s Table 2."""
    k = scan.k
    table = Table(
        title=f"Text-weight scan: Recall@{k}, {scan.queries} queries, {scan.documents} documents",
        title_justify="left",
    )
    headers = (
        "label",
        "n",
        "dense",
        "lexical",
        "best recall",
        "vs inclusive weight",
        "best weight",
    )
    for header in headers:
        table.add_column(header, justify="left" if header == "label" else "right", overflow="fold")
    for row in scan.rows:
        diff = (
            "" if row.difference is None or row.label == "inclusive" else f"{row.difference:+.3f}"
        )
        if row.differs:
            diff += " *"
        table.add_row(
            escape(row.label),
            str(row.n),
            _fixed(row.dense),
            _fixed(row.lexical),
            _fixed(row.best_recall.value),
            diff,
            "" if row.best_weight is None else f"{row.best_weight:g}",
        )
    return table


def lambda_table(study: LambdaStudy) -> Table:
    """The lambda study: accuracy and R of each system and variant at each lambda."""
    table = Table(
        title=f"Accuracy and R against lambda ({study.draws} draws of whole groups each)",
        title_justify="left",
        caption="mean [2.5th, 97.5th percentile of the draws]",
        caption_justify="left",
    )
    for header in LAMBDA_HEADERS:
        numeric = header not in ("system", "variant", "note")
        table.add_column(
            header, justify="right" if numeric else "left", no_wrap=numeric, overflow="fold"
        )
    for row in lambda_rows(study):
        table.add_row(*(escape(cell) for cell in row))
    return table


def _fixed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def by_label_table(summary: Summary) -> Table | None:
    """Accuracy and retrieval accuracy per system and question label; None without labels."""
    if not summary.by_label:
        return None
    table = Table(title="By question label", title_justify="left")
    for header in ("system", "label", "queries", "groups", "accuracy", "accuracy_retrieval"):
        table.add_column(
            header, justify="left" if header in ("system", "label") else "right", overflow="fold"
        )
    for system, labels in summary.by_label.items():
        for label, m in labels.items():
            table.add_row(
                escape(system),
                escape(label),
                str(m.n_queries),
                str(m.n_groups),
                str(m.accuracy),
                show(m.accuracy_retrieval),
            )
    return table


def reliability_table(summary: Summary) -> Table | None:
    """Each reference-free metric against the grounded verdicts; None when none was
    scored."""
    figures = summary.reference_free
    if figures is None:
        return None
    table = Table(
        title="Reference-free metrics against the grounded verdicts (positive = correct)",
        title_justify="left",
    )
    for header in RELIABILITY_HEADERS:
        table.add_column(header, justify="left" if header == "metric" else "right", overflow="fold")
    for row in reliability_rows(figures.metrics):
        table.add_row(*(escape(cell) for cell in row))
    return table


def stability_tables(summary: Summary) -> list[Table]:
    """How stable the answers are over repeated askings (``run --repeat N``): the pass
    rates and flaky queries, then the semantic groups that fail in some wordings apart
    from those that fail in some repeats; none without repeats."""
    if not summary.stability:
        return []
    rates = Table(
        title="How stable the answers are (every query asked several times)",
        title_justify="left",
    )
    for header in STABILITY_HEADERS:
        rates.add_column(
            header,
            justify="left" if header in STABILITY_HEADERS[:2] else "right",
            no_wrap=header in ("mean pass rate", "flaky share"),  # an interval reads whole
        )
    for row in stability_rows(summary):
        rates.add_row(*(escape(cell) for cell in row))
    groups = Table(
        title="Semantic groups: fails in some wordings, or in some repeats of one wording",
        title_justify="left",
    )
    for header in GROUP_HEADERS:
        groups.add_column(
            header, justify="left" if header in GROUP_HEADERS[:2] else "right", overflow="fold"
        )
    for row in group_stability_rows(summary):
        groups.add_row(*(escape(cell) for cell in row))
    return [rates, groups]


def table_stats_table(tables: list[TableStats], overview: DatasetOverview) -> Table:
    """The dataset per table of the database (GRAMMAR v1's Table 4): rows, the attributes
    its questions ask or name, templates, groups and questions, and the dataset's totals,
    where a template reading two tables counts once. Why a table has no question is not
    a column (it would not fit a terminal): :func:`uncovered_lines` says it."""
    table = Table(
        title="Per table (a template counts for every table it reads)", title_justify="left"
    )
    headers = TABLE_STATS_HEADERS[:-1]
    for header in headers:
        table.add_column(header, justify="left" if header == "table" else "right", overflow="fold")
    rows = table_stats_rows(tables, overview)
    for i, row in enumerate(rows):
        cells = (escape(cell) for cell in row[: len(headers)])
        table.add_row(*cells, end_section=i == len(rows) - 2)
    return table


def uncovered_lines(tables: list[TableStats]) -> list[str]:
    """One line per table no question reads, with why where it is known."""
    return [f"no question reads {t.table}: {t.why}" for t in tables if t.why]
