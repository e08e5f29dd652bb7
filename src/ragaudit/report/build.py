"""``ragaudit report``: one self-contained HTML file from a run's analysis.

It reads summary.json (required), drilldown.jsonl, dataset.stats.json, usage.json, the
responses and, when the corpus is a generated world, its world.json, and writes
report.html: headline verdicts, a table per system and variant, charts (inline SVG), the
dataset summary, the knowledge base (which reports an LLM rewrite repaired or failed), the
LLM usage, and drill-down tables of gap and non-robust groups. Every text that comes from
data (documents, queries, LLM replies) is escaped by the template engine: the page holds
no script at all.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ragaudit.analysis.metrics import ONE_QUERY
from ragaudit.analysis.ranking import set_name
from ragaudit.analysis.reliability import TAG_ORDER
from ragaudit.analysis.summary import (
    SOURCES,
    BlameRule,
    DocumentFigures,
    LabelFigures,
    LambdaStudy,
    MeanInterval,
    Proportion,
    ReferenceFreeFigures,
    Side,
    Summary,
    SystemFigures,
    WeightScan,
)
from ragaudit.documents.checks import CRITIQUES
from ragaudit.generate.dataset import DatasetOverview, read_overview, read_table_stats
from ragaudit.generate.refresh import RefreshReport, describe_stale, read_refresh_stats
from ragaudit.llm.prices import format_usd
from ragaudit.records.io import atomic_write_text
from ragaudit.records.models import LABELS
from ragaudit.report import charts
from ragaudit.report.compare import (
    PAIR_HEADERS,
    compare_again,
    flip_rows,
    ranking_rows,
    read_compare,
    study_chart,
    study_title,
)
from ragaudit.report.summary_file import read_summary
from ragaudit.report.text import (
    CALLS_PER_PAIR,
    COST_NOTE,
    GROUP_HEADERS,
    LAMBDA_HEADERS,
    RELIABILITY_HEADERS,
    STABILITY_HEADERS,
    TABLE_STATS_HEADERS,
    TOKENS_PER_PAIR,
    figure_cell,
    group_stability_rows,
    lambda_note,
    lambda_rows,
    reliability_rows,
    retrieval_queries,
    show,
    stability_rows,
    table_stats_rows,
    verdict_lines,
)
from ragaudit.rundir import RunDir
from ragaudit.store.files import (
    DrilldownRow,
    current_dataset_stats,
    read_coverage,
    read_drilldown,
    read_usage,
)
from ragaudit.store.manifest import corpus_folder, notify, open_manifest
from ragaudit.store.records import read_dataset, read_refresh_log, read_responses
from ragaudit.world.build import WorldRewrite, read_world_file

DRILL_GROUPS = 20  # per system, variant and tag
DRILL_TAGS = frozenset({"gap", "non-robust"})  # the groups the drill-down shows
TEXT_CHARS = 400

TABLE_METRICS = (
    ("accuracy", "accuracy"),
    ("robustness", "R"),
    ("gap_fraction", "λ (gap fraction)"),
    ("acc_retrieval_db", "Acc_retrieval_db"),
    ("accuracy_retrieval", "retrieval accuracy"),
    ("robustness_retrieval", "retrieval R"),
)
# Shown where some question's answer is computed (a count, a total): its retrieval apart.
COMPUTED_METRIC = ("accuracy_retrieval_computed", "retrieval accuracy, computed answers")

# What each column of a metrics table means, in one line: the header's tooltip and its
# line of the legend under the tables (a reader meets R and λ there, not in the docs).
METRIC_TERMS = {
    "variant": "the wording style the questions were asked in (generated: as written "
    "from a document)",
    "queries": "questions this system was asked in this variant",
    "groups": "semantic groups: one fact asked in several wordings (an instantiated SQL "
    "query, or a pair written from a document)",
    "errors": "queries the system failed on (a timeout, an HTTP error), counted as wrong answers",
    "retrieval queries": "queries with a retrieval verdict (their gold documents known), "
    "and those left out and why",
    "accuracy": "correct answers / queries",
    "R": "robustness: correct answers / queries outside gap groups (a gap group: every "
    "wording answered wrong), accuracy with the knowledge base's holes removed",
    "λ (gap fraction)": "queries in gap groups / queries; accuracy = R × (1 − λ)",
    "Acc_retrieval_db": "retrieval database accuracy: 1 − gap groups / groups, the share "
    "of facts answered right in at least one wording",
    "retrieval accuracy": "queries whose retrieval was correct / queries with a retrieval "
    "verdict: the retriever alone, the language model's errors removed",
    "retrieval R": "retrieval accuracy among the queries outside gap groups",
    COMPUTED_METRIC[1]: "the same over the questions whose answer is computed (a count, a "
    "total, a yes or no), which need every document stating a row it is computed from; "
    "counted in retrieval accuracy too",
}


@dataclass(frozen=True)
class Headline:
    """A significant comparison: its verdict, and each side's figure with its interval."""

    verdict: str
    sides: list[str]
    p: float


@dataclass(frozen=True)
class MetricsRow:
    """One variant's row of a system's table."""

    variant: str
    queries: int
    groups: int
    errors: int
    retrieval_queries: str
    cells: list[str]


@dataclass(frozen=True)
class MetricsTable:
    """One system's figures: Acc_retrieval_db across variants, and a row per variant."""

    system: str
    acc_retrieval_db: str
    holes: str | None
    headers: list[str]
    rows: list[MetricsRow]


@dataclass(frozen=True)
class RankingRow:
    """One system and variant's ranking metrics, each a mean with its interval."""

    system: str
    variant: str
    metrics: list[tuple[str, str]]


@dataclass(frozen=True)
class BlameRow:
    """Where one system and variant's answers went wrong, counted per source."""

    label: str
    rule: BlameRule
    counts: list[int]
    holes_answered: int | None
    by_evidence: int
    by_convention: int


@dataclass(frozen=True)
class Chart:
    """A figure of the report: inline SVG with its caption, and a note under it."""

    id: str
    title: str
    svg: str
    note: str | None = None


@dataclass(frozen=True)
class Passage:
    """A retrieved passage in the drill-down: its document id and its text, clipped."""

    id: str | None
    text: str | None


@dataclass(frozen=True)
class DrillQuery:
    """One query of a drill-down group: its texts (clipped), the system's answer or
    error, the verdicts, where it went wrong, and the first passages retrieved."""

    query: str | None
    reference: str | None
    response: str | None
    error: str | None
    correct: bool | None
    retrieval_correct: bool | None
    source: str | None
    retrieved: list[Passage]


@dataclass(frozen=True)
class DrillGroup:
    """A semantic group of the drill-down, with its queries."""

    group: str | None
    queries: list[DrillQuery]


@dataclass(frozen=True)
class DrillSection:
    """The gap or non-robust groups of one system and variant (the first shown)."""

    system: str
    variant: str
    tag: str
    groups: list[DrillGroup]


@dataclass(frozen=True)
class UsageRow:
    """One step's LLM usage, the times to one decimal."""

    step: str
    calls: int
    cache_hits: int
    prompt_tokens: int
    completion_tokens: int
    llm_seconds: str
    wall_seconds: str
    cost: str = "n/a"  # at the prices of the command that ran it; "n/a": see the cost notes


@dataclass(frozen=True)
class CostSection:
    """What the run's LLM requests cost in money (summary.json's ``cost``): the total,
    then per system answered, per accepted document pair and per verified wording (each
    as cost, units and cost per unit), what the figures count, and why any is n/a."""

    total: str
    basis: str
    rows: list[tuple[str, str, int, str]]
    notes: list[str]


@dataclass(frozen=True)
class WorldSection:
    """The generated world behind the run's corpus: its folder, and what its world.json
    says of its reports."""

    folder: str
    documents: int
    facts_stated: int
    rewrite: WorldRewrite | None


@dataclass(frozen=True)
class RefreshSection:
    """The last ``generate --refresh``: its counts, the first groups that moved (status,
    template, bindings, old and new answer) and the documents stating facts no longer
    true (document, then each fact as a sentence)."""

    counts: RefreshReport
    moved: list[list[str]]
    more: int
    stale: list[tuple[str, str]]
    more_stale: int


@dataclass
class ReportData:
    """Everything the template shows."""

    title: str
    outcome: str
    headlines: list[Headline]
    other_verdicts: list[str]
    tables: list[MetricsTable]
    charts: list[Chart]
    ranking: list[RankingRow]
    dataset: DatasetOverview | None
    usage: list[UsageRow]
    drilldown: list[DrillSection]
    world: WorldSection | None = None
    cost: CostSection | None = None
    blame: list[BlameRow] | None = None
    warnings: list[str] = field(default_factory=list)  # where the retrieval rule misfits
    labels: LabelsSection | None = None
    scan: WeightScan | None = None
    by_label: list[ByLabelRow] = field(default_factory=list)
    label_verdicts: list[str] = field(default_factory=list)
    sources: list[SourceSection] = field(default_factory=list)
    documents: DocumentsSection | None = None
    reliability: ReliabilitySection | None = None
    rankings: list[RankingSection] = field(default_factory=list)
    refresh: RefreshSection | None = None
    stability: StabilitySection | None = None
    per_table: PerTableSection | None = None
    lambda_study: LambdaSection | None = None
    # A dataset.stats.json written before the per-table counts were kept: the report says
    # so, rather than leave a user to guess why the view is missing.
    per_table_absent: bool = False
    coverage: CoverageSection | None = None
    coverage_note: str | None = None  # why the coverage is not shown, where it is not


@dataclass(frozen=True)
class LambdaSection:
    """The lambda study (``analyze --lambda-study``): its chart, its table and what it did."""

    chart: Chart
    headers: list[str]
    rows: list[list[str]]
    note: str


def _lambda_section(study: LambdaStudy | None) -> LambdaSection | None:
    """Accuracy and R against lambda as a chart (one colour per system and variant; the
    targets not reached, and sides where lambda is undefined, are left out of it) and as
    the table summary.md has."""
    if study is None:
        return None
    lines: list[charts.LambdaLine] = []
    for system, variants in study.systems.items():
        for variant, side in variants.items():
            points = [
                (
                    p.lambda_reached.mean,
                    (p.accuracy.mean, p.accuracy.low, p.accuracy.high),
                    (p.robustness.mean, p.robustness.low, p.robustness.high)
                    if p.robustness is not None
                    else None,
                )
                for p in side.points
                if p.lambda_reached is not None and p.accuracy is not None
            ]
            observed = (
                None
                if side.observed_lambda is None
                else (side.observed_lambda, side.observed_accuracy, side.observed_robustness)
            )
            if points:
                lines.append((f"{system} / {variant}", points, observed))
    chart = Chart(
        id="chart-lambda",
        title="Accuracy and R against λ, the share of queries in gap groups (bands: 2.5th "
        "to 97.5th percentile of the draws)",
        svg=charts.lambda_lines(lines),
    )
    return LambdaSection(
        chart=chart,
        headers=list(LAMBDA_HEADERS),
        rows=lambda_rows(study),
        note=lambda_note(study),
    )


@dataclass(frozen=True)
class CoverageSection:
    """What templates/sql.yaml reaches of the schema (templates/coverage.json): a row per
    table (its rows, the columns reached of its columns, the kinds that reach it, why
    none does) and each column no template reaches that a user could ask about, with
    why (keys and ids are never asked, and not listed)."""

    rows: list[list[str]]
    unreached: list[str]


def _coverage(run: RunDir) -> tuple[CoverageSection | None, str | None]:
    """The report's coverage section, or why it cannot be shown."""
    from ragaudit.generate.sql.coverage import ID_LIKE

    coverage, why = read_coverage(run)
    if coverage is None:
        return None, why
    rows = [
        [name, str(t.rows), f"{t.reached} of {len(t.columns)}", ", ".join(t.kinds), t.why or ""]
        for name, t in coverage.tables.items()
    ]
    unreached = [
        f"{name}.{column}: {c.why}"
        for name, t in coverage.tables.items()
        for column, c in t.columns.items()
        if c.why is not None and c.why != ID_LIKE
    ]
    return CoverageSection(rows=rows, unreached=unreached), None


@dataclass(frozen=True)
class PerTableSection:
    """The dataset per table of the database (GRAMMAR v1's Table 4), from
    dataset.stats.json: a row per table and the dataset's totals (``TABLE_STATS_HEADERS``),
    and the tables no question reads."""

    headers: list[str]
    rows: list[list[str]]
    uncovered: list[str]


@dataclass(frozen=True)
class FlakyRow:
    """A flaky query of the stability section: its text (clipped), how often it was
    right, and its pass rate with its interval."""

    system: str
    query: str
    variant: str
    right: str
    rate: str


@dataclass(frozen=True)
class StabilitySection:
    """How stable the answers are over repeated askings (``run --repeat N``): the pass
    rates, the groups that fail in some wordings apart from those that fail in some
    repeats, and the flaky queries."""

    headers: list[str]
    rows: list[list[str]]
    group_headers: list[str]
    group_rows: list[list[str]]
    flaky: list[FlakyRow]


def _stability(run: RunDir, summary: Summary) -> StabilitySection | None:
    """The stability section, or None without repeats; the flaky queries by their text
    (from the dataset, when it is there)."""
    if not summary.stability:
        return None
    texts: dict[str, str] = {}
    if run.dataset.exists():
        index = read_dataset(run).by_id
        wanted = {q.query_id for f in summary.stability.values() for q in f.flaky_queries}
        texts = {qid: index[qid].query for qid in wanted if qid in index}
    flaky = [
        FlakyRow(
            system=system,
            query=_clip(texts.get(q.query_id, q.query_id)) or q.query_id,
            variant=q.variant,
            right=f"{q.passes} of {q.repeats}",
            rate=f"{q.pass_rate:.2f} [{q.ci95[0]:.2f}, {q.ci95[1]:.2f}]",
        )
        for system, figures in summary.stability.items()
        for q in figures.flaky_queries
    ]
    return StabilitySection(
        headers=list(STABILITY_HEADERS),
        rows=stability_rows(summary),
        group_headers=list(GROUP_HEADERS),
        group_rows=group_stability_rows(summary),
        flaky=flaky,
    )


@dataclass(frozen=True)
class RankingSection:
    """One study of ``ragaudit compare``: the rankings side by side, each other set's
    agreement with the reference in a sentence, a chart and its reversed pairs."""

    title: str
    headers: list[str]
    rows: list[list[str]]
    agreements: list[tuple[str, Chart, list[list[str]]]]
    pair_headers: list[str] = field(default_factory=lambda: list(PAIR_HEADERS))


def _rankings(run: RunDir) -> list[RankingSection]:
    """The studies of compare.json, none where the records they ranked have changed since
    (said once): a ranking of older verdicts must not stand beside the figures of these."""
    out: list[RankingSection] = []
    if not run.compare.exists():
        return out
    manifest = open_manifest(run)
    state = manifest.check("compare")
    manifest.save()
    if not state.current:
        again = compare_again(run, state.why or "changed since")
        rest = again.for_python().rpartition(": call ")[2]
        notify(f"{again.for_command_line()} (from Python: {rest})")
        return out
    for study in read_compare(run.compare):
        headers, rows = ranking_rows(study)
        agreements = [
            (
                a.sentence,
                Chart(
                    id=f"compare-{len(out)}-{i}",
                    title=f"{study.metric}: {set_name(a.reference)} (x) against "
                    f"{set_name(a.other)} (y); red: systems of a reversed pair",
                    svg=study_chart(study, a),
                ),
                flip_rows(a),
            )
            for i, a in enumerate(study.agreements)
        ]
        out.append(RankingSection(study_title(study), headers, rows, agreements))
    return out


@dataclass(frozen=True)
class ReliabilitySection:
    """The reference-free metrics against the grounded verdicts, as the report shows them."""

    systems: list[str]
    headers: tuple[str, ...]
    rows: list[list[str]]
    sentences: list[str]
    undefined: list[str]
    tags: list[str]
    by_tag: list[tuple[str, list[str]]]
    calls: list[tuple[str, str]]


def _reliability(figures: ReferenceFreeFigures | None) -> ReliabilitySection | None:
    """The reliability section, with each metric's let-through (and precision) per group
    tag; None when nothing was scored."""
    if figures is None:
        return None
    metrics = figures.metrics.values()
    tags = [t for t in TAG_ORDER if any(t in m.by_tag for m in metrics)]
    by_tag = []
    for metric, m in figures.metrics.items():
        cells = []
        for tag in tags:
            core = m.by_tag.get(tag)
            cells.append(
                "n/a" if core is None else f"{show(core.let_through)} ({show(core.precision)})"
            )
        by_tag.append((metric, cells))
    return ReliabilitySection(
        systems=figures.systems,
        headers=RELIABILITY_HEADERS,
        rows=reliability_rows(figures.metrics),
        sentences=[m.sentence for m in figures.metrics.values()],
        undefined=[
            f"{metric}: " + "; ".join(f"{n} {why}" for why, n in m.undefined.items())
            for metric, m in figures.metrics.items()
            if m.undefined
        ],
        tags=tags,
        by_tag=by_tag,
        calls=[
            (m, "n/a" if n is None else f"{n:.1f}") for m, n in figures.calls_per_response.items()
        ],
    )


SOURCE_NAMES = {"sql": "SQL-grounded questions", "document": "Questions from the documents"}


@dataclass(frozen=True)
class SourceSection:
    """The figures of one source's queries on their own (SQL-grounded or generated from
    the documents), and the verdicts of the comparisons that are significant among them."""

    source: str
    title: str
    tables: list[MetricsTable]
    verdicts: list[str]


@dataclass(frozen=True)
class StrategyRow:
    """One generation strategy: what it wrote, kept and cost, and its label balance."""

    strategy: str
    candidates: int
    accepted: int
    dropped: str
    calls_per_pair: str
    tokens_per_pair: str
    distance: str


@dataclass(frozen=True)
class Confusion:
    """Requested against observed labels of one strategy (Figure 2 of Know Your RAG)."""

    strategy: str
    columns: list[str]
    rows: list[tuple[str, list[int]]]


@dataclass(frozen=True)
class DocumentsSection:
    """Generation from documents: per strategy, cost, balance, labels and critiques."""

    strategies: list[StrategyRow]
    confusions: list[Confusion]
    critiques: list[tuple[str, str, str, list[str]]]  # strategy, label, n, cells
    critique_names: list[str]
    chart: Chart | None
    calls_label: str = CALLS_PER_PAIR
    tokens_label: str = TOKENS_PER_PAIR
    cost_note: str = COST_NOTE


@dataclass(frozen=True)
class ByLabelRow:
    """One system and question label: its counts and figures."""

    system: str
    label: str
    queries: int
    groups: int
    accuracy: str
    accuracy_retrieval: str


@dataclass(frozen=True)
class LabelsSection:
    """The composition of the test set by question label, and the raters' agreement."""

    figures: LabelFigures
    chart: Chart
    rows: list[tuple[str, str, str]]  # label, all pairs, answerable by the set's flag


def _labels(summary: Summary) -> LabelsSection | None:
    figures = summary.labels
    if figures is None:
        return None
    names: list[str] = list(LABELS)
    series: dict[str, list[tuple[float, float, float] | None]] = {
        "all pairs": [_point(figures.composition[n]) for n in names]
    }
    if figures.composition_answerable is not None:
        series["answerable (set's flag)"] = [
            _point(figures.composition_answerable[n]) for n in names
        ]
    chart = Chart(
        id="chart-labels",
        title="Question labels: share of the pairs with a consensus label (95% intervals)",
        svg=charts.interval_dots(names, series),
    )
    rows = [
        (
            n,
            _interval(figures.composition[n]),
            _interval(figures.composition_answerable[n])
            if figures.composition_answerable is not None
            else "",
        )
        for n in names
    ]
    return LabelsSection(figures=figures, chart=chart, rows=rows)


def _by_label(summary: Summary) -> list[ByLabelRow]:
    return [
        ByLabelRow(
            system=system,
            label=label,
            queries=m.n_queries,
            groups=m.n_groups,
            accuracy=_interval(m.accuracy),
            accuracy_retrieval=_interval(m.accuracy_retrieval),
        )
        for system, labels in summary.by_label.items()
        for label, m in labels.items()
    ]


def _interval(entry: Proportion | MeanInterval | float | None) -> str:
    """A figure with its interval ("0.95 [0.90, 0.98]"), a plain number to 2 decimals, or
    "n/a" where undefined."""
    if isinstance(entry, Proportion | MeanInterval):
        if entry.value is None:
            return "n/a"
        low, high = entry.ci95
        return f"{entry.value:.2f} [{low:.2f}, {high:.2f}]"
    return "n/a" if entry is None else f"{entry:.2f}"


def _side(summary: Summary, side: Side, metric: str) -> str:
    system = summary.systems.get(side.system)
    entry = system.variants.get(side.variant) if system is not None else None
    shown = _interval(getattr(entry, metric)) if entry is not None else f"{side.value:.2f}"
    label = dict(TABLE_METRICS).get(metric, metric)
    return f"{side.system} / {side.variant}: {label} {shown}"


def _headlines(summary: Summary) -> tuple[list[Headline], list[str]]:
    """The significant comparisons, most significant first, and the others' verdicts (those
    not made for one reason said once)."""
    significant, rest = [], []
    for c in summary.comparisons:
        if c.p_value is not None and c.p_value < 0.05:
            significant.append(
                Headline(
                    verdict=c.verdict,
                    sides=[_side(summary, c.a, c.metric), _side(summary, c.b, c.metric)],
                    p=c.p_value,
                )
            )
        else:
            rest.append(c)
    significant.sort(key=lambda h: h.p)
    return significant, verdict_lines(rest)


def _tables(systems: dict[str, SystemFigures]) -> list[MetricsTable]:
    out = []
    computed = any(
        m.accuracy_retrieval_computed is not None
        for system in systems.values()
        for m in system.variants.values()
    )
    metrics = (*TABLE_METRICS, COMPUTED_METRIC) if computed else TABLE_METRICS
    for name, system in systems.items():
        rows = [
            MetricsRow(
                variant=variant,
                queries=m.n_queries,
                groups=m.n_groups,
                errors=m.n_errors,
                retrieval_queries=retrieval_queries(m),
                cells=[figure_cell(m, key) for key, _ in metrics],
            )
            for variant, m in system.variants.items()
        ]
        holes = system.knowledge_base_holes
        out.append(
            MetricsTable(
                system=name,
                acc_retrieval_db=_interval(system.acc_retrieval_db),
                holes=_interval(holes) if holes else None,
                headers=[label for _, label in metrics],
                rows=rows,
            )
        )
    return out


def _ranking(summary: Summary) -> list[RankingRow]:
    return [
        RankingRow(
            system=system,
            variant=variant,
            metrics=[(name, _interval(value)) for name, value in metrics.items()],
        )
        for system, entry in summary.retrieval_ranking.items()
        for variant, metrics in entry.variants.items()
    ]


def _clip(text: Any) -> str | None:
    if text is None:
        return None
    shown = str(text)
    return shown if len(shown) <= TEXT_CHARS else shown[:TEXT_CHARS] + "…"


def _scan_drilldown(run: RunDir) -> list[DrillSection]:
    """The rows of the first gap and non-robust groups of each system and variant,
    streamed from drilldown.jsonl."""
    chosen: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    groups: dict[tuple[str, str, str, str], list[DrilldownRow]] = defaultdict(list)
    for row in read_drilldown(run, tags=DRILL_TAGS):
        slot = (row["system"], row["variant"], row["tag"])
        group = row["group_id"]
        if group not in chosen[slot]:
            if len(chosen[slot]) >= DRILL_GROUPS:
                continue
            chosen[slot].append(group)
        groups[(*slot, group)].append(row)
    sections = []
    by_system: dict[str, set[str]] = defaultdict(set)
    for (system, _, _, _), rows in groups.items():
        by_system[system].update(r["query_id"] for r in rows)
    answers = {s: read_responses(run, s, only=ids) for s, ids in by_system.items()}
    for (system, variant, tag), group_ids in sorted(chosen.items()):
        entries = []
        for group in group_ids:
            rows = groups[(system, variant, tag, group)]
            queries = []
            for r in rows:
                # The line of a neutral input, as it was (analyze --neutral), if any.
                record = r.get("record") or {}
                answer = answers.get(system, {}).get(r["query_id"])
                retrieved = answer.retrieved if answer is not None else []
                queries.append(
                    DrillQuery(
                        query=_clip(r.get("query") or record.get("query")),
                        reference=_clip(r.get("reference") or record.get("reference")),
                        response=_clip(
                            answer.response if answer is not None else record.get("response")
                        ),
                        error=_clip(answer.error if answer is not None else None),
                        correct=r["correct"],
                        retrieval_correct=r.get("retrieval_correct"),
                        source=r.get("source"),
                        retrieved=[
                            Passage(id=_clip(item.id), text=_clip(item.text))
                            for item in retrieved[:3]
                        ]
                        or [
                            Passage(id=_clip(i), text=None)
                            for i in record.get("retrieved_ids") or []
                        ],
                    )
                )
            entries.append(DrillGroup(group=_clip(group), queries=queries))
        sections.append(DrillSection(system=system, variant=variant, tag=tag, groups=entries))
    return sections


# What a "gap" group is where each group has one query: a wrong answer, nothing more.
WRONG_ANSWER = "wrong-answer (one query per group: no gap is told from a wrong answer)"


def _one_query_gaps(
    sections: list[DrillSection], systems: Mapping[str, SystemFigures]
) -> list[DrillSection]:
    """The drill-down with the "gap" groups of a variant whose groups have one query each
    named for what they are: a group of one query is a gap exactly when its answer is
    wrong, and its λ is undefined for that reason, so calling the wrong answers of a
    document set "gap groups" would say the knowledge base lacks what it may hold."""
    out = []
    for section in sections:
        figures = systems.get(section.system)
        variant = figures.variants.get(section.variant) if figures else None
        if (
            section.tag == "gap"
            and variant is not None
            and variant.robustness_undefined == ONE_QUERY
        ):
            section = replace(section, tag=WRONG_ANSWER)
        out.append(section)
    return out


RULES = {
    "evidence": "by evidence: the gold ids list the documents that state each answer, so a "
    "wrong answer to a question no document answers is a hole of the knowledge base, a "
    "wrong answer whose retrieval missed every such document is the retriever's, and one "
    "whose retrieval held one is the language model's",
    "convention": "by the GRAMMAR convention (nothing says which documents state the "
    "answers): a wrong answer in a gap group (every wording wrong) is the knowledge base's, "
    "one whose retrieval was judged wrong the retriever's, any other the language model's",
}


def _blame(summary: Summary) -> list[BlameRow]:
    """Where the answers go wrong, per system and variant, as analyze counted it."""
    rows = []
    for name, system in summary.systems.items():
        for variant, m in system.variants.items():
            b = m.blame
            if b is None:
                continue
            rows.append(
                BlameRow(
                    label=f"{name} / {variant}",
                    rule=b.rule,
                    counts=[b.counts.get(part, 0) for part in SOURCES],
                    holes_answered=b.holes_answered if b.by_evidence else None,
                    by_evidence=b.by_evidence,
                    by_convention=b.by_convention,
                )
            )
    return rows


def _blame_note(blame: list[BlameRow]) -> str:
    """Which rule decided the chart, in words."""
    rules = {row.rule for row in blame}
    if rules == {"evidence"}:
        return "Decided " + RULES["evidence"] + "."
    if rules == {"convention"}:
        return "Decided " + RULES["convention"] + "."
    evidence = sum(row.by_evidence for row in blame)
    convention = sum(row.by_convention for row in blame)
    return (
        f"Mixed: {evidence} answers decided {RULES['evidence']}; {convention} answers "
        f"(whose gold ids name only the entity, or none) {RULES['convention']}."
    )


def _charts(summary: Summary, blame: list[BlameRow]) -> list[Chart]:
    labels: list[str] = []
    tags: dict[str, list[float]] = defaultdict(list)
    acc: list[tuple[float, float, float] | None] = []
    rob: list[tuple[float, float, float] | None] = []
    for name, system in summary.systems.items():
        for variant, m in system.variants.items():
            labels.append(f"{name} / {variant}")
            total = max(1, m.n_groups)
            for tag in ("robust", "non-robust", "gap"):
                tags[tag].append(m.groups.get(tag, 0) / total)
            acc.append(_point(m.accuracy))
            rob.append(_point(m.robustness))
    out = [
        Chart(
            id="chart-tags",
            title="Semantic groups by tag",
            svg=charts.stacked_bars(labels, dict(tags), "share of groups"),
        ),
        Chart(
            id="chart-accuracy",
            title="Accuracy and robustness R per variant (95% intervals)",
            svg=charts.interval_dots(labels, {"accuracy": acc, "R": rob}),
        ),
    ]
    if blame:
        parts: dict[str, list[float]] = {
            part: [row.counts[i] / max(1, sum(row.counts)) for row in blame]
            for i, part in enumerate(SOURCES)
        }
        out.append(
            Chart(
                id="chart-sources",
                title="Where the answers go wrong: knowledge base, retriever, language model",
                svg=charts.stacked_bars([row.label for row in blame], parts, "share of queries"),
                note=_blame_note(blame),
            )
        )
    return out


def _sources(summary: Summary) -> list[SourceSection]:
    return [
        SourceSection(
            source=name,
            title=SOURCE_NAMES.get(name, name),
            tables=_tables(figures.systems),
            verdicts=[
                c.verdict for c in figures.comparisons if c.p_value is not None and c.p_value < 0.05
            ],
        )
        for name, figures in summary.by_source.items()
    ]


def _per_pair(value: float | None, digits: int = 1) -> str:
    return "n/a (none accepted)" if value is None else f"{value:,.{digits}f}"


def _documents(figures: DocumentFigures | None) -> DocumentsSection | None:
    """The generation figures as tables, and the mean critique ratings as a chart."""
    if figures is None or not figures.strategies:
        return None
    rows, confusions, critiques = [], [], []
    names = list(CRITIQUES)
    groups: list[str] = []
    series: dict[str, list[float | None]] = {n: [] for n in names}
    for strategy, f in figures.strategies.items():
        rows.append(
            StrategyRow(
                strategy=strategy,
                candidates=f.candidates,
                accepted=f.accepted,
                dropped=", ".join(f"{n} {why}" for why, n in sorted(f.dropped.items())) or "none",
                calls_per_pair=_per_pair(f.calls_per_pair),
                tokens_per_pair=_per_pair(f.tokens_per_pair, 0),
                distance=str(f.distance),
            )
        )
        if f.confusion:
            columns: list[str] = list(LABELS)
            confusions.append(
                Confusion(
                    strategy=strategy,
                    columns=columns,
                    rows=[
                        (requested, [observed.get(c, 0) for c in columns])
                        for requested, observed in f.confusion.items()
                    ],
                )
            )
        for label, stats in f.critiques.items():
            n = max((s.passed.n for s in stats.values()), default=0)
            critiques.append(
                (
                    strategy,
                    label,
                    str(n),
                    [
                        f"{stats[c].mean:.1f}; {stats[c].passed}"
                        if c in stats and stats[c].mean is not None
                        else "n/a"
                        for c in names
                    ],
                )
            )
            groups.append(f"{strategy}\n{label}")
            for c in names:
                series[c].append(stats[c].mean if c in stats else None)
    chart = None
    if groups:
        chart = Chart(
            id="chart-critiques",
            title="Mean critique ratings (1-5) per strategy and label",
            svg=charts.grouped_bars(groups, series, "mean rating", 5.0),
        )
    return DocumentsSection(
        strategies=rows,
        confusions=confusions,
        critiques=critiques,
        critique_names=names,
        chart=chart,
    )


def _point(entry: Proportion) -> tuple[float, float, float] | None:
    if entry.value is None:
        return None
    return (entry.value, *entry.ci95)


def _usage(run: RunDir) -> list[UsageRow]:
    usage = read_usage(run)
    if usage is None:
        return []
    return [
        UsageRow(
            step=name,
            calls=u.calls,
            cache_hits=u.cache_hits,
            prompt_tokens=u.prompt_tokens,
            completion_tokens=u.completion_tokens,
            llm_seconds=f"{u.llm_seconds:.1f}",
            wall_seconds=f"{u.wall_seconds:.1f}",
            cost=format_usd(usage.costs[name].usd) if name in usage.costs else "n/a",
        )
        for name, u in usage.steps.items()
    ]


def _cost(summary: Summary) -> CostSection | None:
    """The cost figures of summary.json as the report shows them, or None without any."""
    cost = summary.cost
    if cost is None:
        return None
    rows: list[tuple[str, str, int, str]] = []
    units = [(f"system {name}: per asking", unit) for name, unit in cost.per_system.items()]
    if cost.per_document_pair is not None:
        units.append(("generation from documents: per accepted pair", cost.per_document_pair))
    if cost.per_verified_wording is not None:
        units.append(
            ("wordings (templates, verify): per verified wording", cost.per_verified_wording)
        )
    notes: list[str] = []
    for what, unit in units:
        rows.append((what, format_usd(unit.cost.usd), unit.units, format_usd(unit.each.usd)))
    figures = [cost.total, *(s.cost for s in cost.steps.values())]
    figures += [u.cost for _, u in units] + [u.each for _, u in units]
    for figure in figures:
        for note in (figure.reason, figure.note):
            if note and note not in notes:
                notes.append(note)
    return CostSection(total=format_usd(cost.total.usd), basis=cost.basis, rows=rows, notes=notes)


def _world(run: RunDir) -> WorldSection | None:
    """world.json of the generated world the run's corpus comes from, if it does: how many
    reports, and what the LLM rewrite (``ragaudit world --llm``) repaired or failed."""
    folder = corpus_folder(run)
    world = read_world_file(folder) if folder is not None else None
    if folder is None or world is None:
        return None
    return WorldSection(
        folder=str(folder),
        documents=world.documents,
        facts_stated=world.facts_stated,
        rewrite=world.rewrite,
    )


REFRESH_SHOWN = 50  # groups that moved, listed in the report (refresh.jsonl has them all)


def _refresh(run: RunDir) -> RefreshSection | None:
    """What the last refresh of the dataset moved (refresh.stats.json and refresh.jsonl),
    if the run was ever refreshed."""
    counts = read_refresh_stats(run.refresh_stats)
    if counts is None:
        return None
    groups, documents = read_refresh_log(run)
    moved = [
        [
            g.status,
            g.template_id,
            ", ".join(f"{k}={v}" for k, v in g.bindings.items()),
            g.old.display if g.old is not None else "",
            g.new.display if g.new is not None else "",
        ]
        for g in groups
    ]
    stale = [(d.document, describe_stale(d)) for d in documents]
    return RefreshSection(
        counts=counts,
        moved=moved[:REFRESH_SHOWN],
        more=max(0, len(moved) - REFRESH_SHOWN),
        stale=stale[:REFRESH_SHOWN],
        more_stale=max(0, len(stale) - REFRESH_SHOWN),
    )


def collect(run: RunDir) -> ReportData:
    """Read the run's files into what the report shows."""
    summary = read_summary(run.summary)
    headlines, rest = _headlines(summary)
    drill = _one_query_gaps(_scan_drilldown(run), summary.systems)
    blame = _blame(summary)
    dataset, per_table, per_table_absent = None, None, False
    counted = current_dataset_stats(run)  # recounted where the dataset changed since
    if counted is not None:
        dataset = read_overview(counted)
        tables = read_table_stats(counted)
        per_table_absent = dataset is not None and tables is None
        if tables:
            per_table = PerTableSection(
                headers=list(TABLE_STATS_HEADERS),
                rows=table_stats_rows(tables, dataset),
                uncovered=[t.table for t in tables if t.why],
            )
    coverage, coverage_note = _coverage(run)
    return ReportData(
        title=f"ragaudit report: {run.root.name}",
        coverage=coverage,
        coverage_note=coverage_note,
        outcome=summary.outcome,
        headlines=headlines,
        other_verdicts=rest,
        warnings=list(summary.warnings),
        tables=_tables(summary.systems),
        charts=_charts(summary, blame) if summary.systems else [],
        blame=blame,
        ranking=_ranking(summary),
        dataset=dataset,
        usage=_usage(run),
        cost=_cost(summary),
        drilldown=drill,
        world=_world(run),
        labels=_labels(summary),
        scan=summary.weight_scan,
        by_label=_by_label(summary),
        label_verdicts=verdict_lines(summary.label_comparisons),
        sources=_sources(summary),
        documents=_documents(summary.documents),
        reliability=_reliability(summary.reference_free),
        rankings=_rankings(run),
        refresh=_refresh(run),
        stability=_stability(run, summary),
        per_table=per_table,
        lambda_study=_lambda_section(summary.lambda_study),
        per_table_absent=per_table_absent,
    )


def render(data: ReportData) -> str:
    """The HTML page (autoescaped; the inline SVG charts are ragaudit's own output)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ragaudit.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    return env.get_template("report.html.j2").render(data=data, terms=METRIC_TERMS)


def write_report(run: RunDir) -> Path:
    """Collect, render and write report.html atomically; return its path."""
    atomic_write_text(run.report, render(collect(run)))
    return run.report
