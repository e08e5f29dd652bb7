"""summary.md: an analysis :class:`~ragaudit.analysis.summary.Summary` as Markdown, and
the figures as the tables (Markdown, terminal, HTML) show them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ragaudit.analysis.metrics import ONE_QUERY
from ragaudit.analysis.retrieval_metrics import ranking_columns
from ragaudit.analysis.summary import (
    AUROC,
    GROUP_STABILITY,
    SOURCES,
    Comparison,
    DrawSpread,
    LambdaStudy,
    LeftOutReason,
    MeanInterval,
    MetricReliability,
    Proportion,
    Summary,
    SystemFigures,
    VariantFigures,
)
from ragaudit.llm.prices import format_usd

if TYPE_CHECKING:
    from ragaudit.generate.dataset import DatasetOverview, TableStats

# The document half's cost figures, one label each wherever they are shown (the terminal,
# summary.md, the report): GenerationCost's definition.
CALLS_PER_PAIR = "LLM requests per accepted pair"
TOKENS_PER_PAIR = "tokens per accepted pair"
COST_NOTE = (
    "every LLM request of the generation: each candidate's writing and checks (dropped ones "
    "included) and the accepted pairs' wordings, cached requests included"
)

# The figures of a variant that every table shows, in this order.
METRIC_NAMES = (
    "accuracy",
    "robustness",
    "accuracy_retrieval",
    "robustness_retrieval",
    "gap_fraction",
    "acc_retrieval_db",
    "accuracy_balanced",
)

# The figures that are undefined with R where each group has one query: a group of one
# query is a gap exactly when its answer is wrong (ragaudit.analysis.metrics).
WITH_R = frozenset({"robustness_retrieval", "gap_fraction", "acc_retrieval_db"})

BLAME_HEADERS = (
    "system",
    "variant",
    "rule",
    "correct",
    "knowledge base",
    "retriever",
    "language model",
    "system error",
    "holes answered",
)


def show(value: Proportion | float | None) -> str:
    """A figure for a table: proportions with their interval, plain numbers to 2 decimals."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def figure_cell(m: VariantFigures, name: str) -> str:
    """A variant's figure ``name`` for a table: :func:`show`, or, for R where it cannot be
    measured (and the figures undefined with it: :data:`WITH_R`), "undefined (why)"
    rather than a bare "n/a".

    >>> from ragaudit.analysis.metrics import Example, variant_metrics
    >>> one_each = variant_metrics([Example("q1", "g1", "short", True),
    ...                             Example("q2", "g2", "short", False)])
    >>> figure_cell(one_each, "robustness"), figure_cell(one_each, "accuracy")
    ('undefined (one query per group)', '0.50 [0.09, 0.91]')
    >>> figure_cell(one_each, "gap_fraction")
    'undefined (one query per group)'
    """
    if m.robustness_undefined is not None and (
        name == "robustness" or (name in WITH_R and m.robustness_undefined == ONE_QUERY)
    ):
        return f"undefined ({m.robustness_undefined})"
    value: Proportion | float | None = getattr(m, name)
    return show(value)


def across_variants(figures: SystemFigures) -> str:
    """A system's Acc_retrieval_db across variants for a table: its figure, or "undefined
    (one query per group)" where every variant has one query per group."""
    across = figures.acc_retrieval_db
    return str(across) if across.value is not None else f"undefined ({ONE_QUERY})"


def _unsided(why: str) -> str | None:
    """The reason of an undefined comparison when it holds for both sides alike (``side
    both: ...`` or no side), else None: a reason of one side names it, and stays whole."""
    if why.startswith(("side a: ", "side b: ")):
        return None
    return why.removeprefix("side both: ")


def verdict_lines(comparisons: list[Comparison]) -> list[str]:
    """The comparisons' verdicts for a reader: each made comparison's own sentence, and,
    for those that could not be made for one reason on both sides (one query per group,
    no group on both sides), one line per reason instead of one per pair.

    >>> from ragaudit.analysis.metrics import Example
    >>> from ragaudit.analysis.comparisons import comparisons
    >>> examples = [Example(f"{s}{g}{v}", f"g{g}", v, g < 3, system=s)
    ...             for s in ("bm25", "rag") for g in range(4) for v in ("short", "long")]
    >>> for line in verdict_lines(comparisons(examples)):
    ...     print(line)  # doctest: +ELLIPSIS
    bm25: no significant accuracy difference between long and short (...).
    rag: no significant accuracy difference between long and short (...).
    long queries: no significant accuracy difference between bm25 and rag (...).
    short queries: no significant accuracy difference between bm25 and rag (...).
    4 comparisons not made (robustness; bm25, long, rag, short): no group outside the gaps has
    two queries, so none can be non-robust: robustness is not measured.
    """
    made: list[str] = []
    unmade: dict[str, list[Comparison]] = {}
    for c in comparisons:
        why = _unsided(c.undefined) if c.undefined is not None else None
        if why is None:
            made.append(c.verdict)
        else:
            unmade.setdefault(why, []).append(c)
    for why, found in unmade.items():
        if len(found) == 1:
            made.append(found[0].verdict)
            continue
        metrics = sorted({c.metric for c in found})
        names = sorted(
            {name for c in found for name in (c.a.variant, c.b.variant, c.a.system, c.b.system)}
        )
        made.append(
            f"{len(found)} comparisons not made ({', '.join(metrics)}; {', '.join(names)}): {why}."
        )
    return made


def show_mean(entry: MeanInterval) -> str:
    """A mean with its interval, as in the tables."""
    if entry.value is None:
        return "n/a"
    low, high = entry.ci95
    return f"{entry.value:.2f} [{low:.2f}, {high:.2f}]"


def retrieval_count(n: int, left_out: Mapping[LeftOutReason, int]) -> str:
    """The queries a retrieval figure counts, and those left out and why, for a table:
    "150; left out: 318 gold ids unknown"."""
    if not left_out:
        return str(n)
    why = ", ".join(
        f"{count} {'gold ids ' + reason if reason == 'unknown' else reason}"
        for reason, count in sorted(left_out.items())
    )
    return f"{n}; left out: {why}"


def retrieval_queries(m: VariantFigures) -> str:
    """How many queries the retrieval figures count, and those left out and why."""
    n = m.accuracy_retrieval.n if m.accuracy_retrieval is not None else 0
    return retrieval_count(n, m.retrieval_left_out)


def metrics_table(summary: Summary | Mapping[str, SystemFigures]) -> str:
    """One row per system and variant, every metric with its 95% interval (of a summary,
    or of the systems of one source)."""
    systems = summary.systems if isinstance(summary, Summary) else summary
    head = (
        "| system | variant | queries | groups | errors | retrieval queries | "
        + " | ".join(METRIC_NAMES)
        + " |"
    )
    lines = [head, "|" + "---|" * (6 + len(METRIC_NAMES))]
    for system, figures in systems.items():
        for variant, m in figures.variants.items():
            cells = [figure_cell(m, name) for name in METRIC_NAMES]
            lines.append(
                f"| {system} | {variant} | {m.n_queries} | {m.n_groups} | {m.n_errors} | "
                f"{retrieval_queries(m)} | " + " | ".join(cells) + " |"
            )
        holes = figures.knowledge_base_holes
        lines.append(
            f"| {system} | all variants | | | | | acc_retrieval_db (gap in every variant): "
            f"{across_variants(figures)}"
            + (f"; groups no document answers: {holes}" if holes else "")
            + " |"
            + " |" * (len(METRIC_NAMES) - 1)
        )
    return "\n".join(lines) + "\n"


def blame_rows(summary: Summary) -> list[list[str]]:
    """Where the answers go wrong, per system and variant: the rule that decided (evidence:
    gold ids that say which documents state the answer; convention: a gap group is the
    knowledge base's), each source's share of the queries, and the correct answers to
    questions no document answers (from the model's own knowledge, or a leak). Variants
    of a summary written before blame was counted have no row."""
    rows = []
    for system, figures in summary.systems.items():
        for variant, m in figures.variants.items():
            b = m.blame
            if b is None:
                continue
            total = sum(b.counts.values())
            shares = [
                f"{b.counts.get(part, 0) / total:.2f}" if total else "n/a" for part in SOURCES
            ]
            holes = str(b.holes_answered) if b.by_evidence else "n/a"
            rows.append([system, variant, b.rule, *shares, holes])
    return rows


def blame_table(summary: Summary) -> str:
    """:func:`blame_rows` as a Markdown table."""
    lines = ["| " + " | ".join(BLAME_HEADERS) + " |", "|" + "---|" * len(BLAME_HEADERS)]
    lines += ["| " + " | ".join(row) + " |" for row in blame_rows(summary)]
    return "\n".join(lines) + "\n"


def ranking_table(summary: Summary) -> str:
    """Recall@k, MRR and nDCG per system and variant, as a Markdown table ("" without
    ranking metrics)."""
    ranking = summary.retrieval_ranking
    if not ranking:
        return ""
    names = ranking_columns(ranking)
    lines = [
        "| system | variant | queries | " + " | ".join(names) + " |",
        "|" + "---|" * (3 + len(names)),
    ]
    for system, entry in ranking.items():
        for variant, metrics in entry.variants.items():
            n = next(iter(metrics.values())).n
            cells = [show_mean(metrics[name]) if name in metrics else "" for name in names]
            lines.append(f"| {system} | {variant} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def judge_failed_note(summary: Summary) -> str:
    """What the figures leave out because the judge could not decide, or nothing."""
    if not summary.judge_failed:
        return ""
    parts = ", ".join(f"{system} {n}" for system, n in sorted(summary.judge_failed.items()))
    return f"\nLeft out, the LLM judge failed on them (rerun ragaudit judge to retry): {parts}\n"


def summary_markdown(summary: Summary) -> str:
    """summary.md: the outcome when it is retrieval, the warnings, the figures, where the
    answers go wrong, what the judge left out, the verdicts and the ranking metrics."""
    verdicts = "".join(f"- {line}\n" for line in verdict_lines(summary.comparisons))
    ranked = ranking_table(summary)
    return (
        (
            f"Outcome analyzed: retrieval correctness ({summary.retrieval_rule})\n\n"
            if summary.outcome == "retrieval"
            else ""
        )
        + "".join(f"Warning: {w}\n\n" for w in summary.warnings)
        + (
            metrics_table(summary)
            + "\nWhere the answers go wrong (shares of the queries)\n\n"
            + blame_table(summary)
            if summary.systems
            else "No system has been run on this test set yet.\n"
        )
        + judge_failed_note(summary)
        + ("\n" + verdicts if verdicts else "")
        + ("\nRetrieval ranking (mean [95% CI])\n\n" + ranked if ranked else "")
        + source_sections(summary)
        + label_sections(summary)
        + reliability_section(summary)
        + stability_section(summary)
        + lambda_section(summary.lambda_study)
        + cost_section(summary)
    )


def cost_section(summary: Summary) -> str:
    """What the run's LLM requests cost (summary.json's ``cost``): per step, then per
    system answered, per accepted document pair and per verified wording, and why any
    figure is n/a; empty when no step recorded its usage."""
    cost = summary.cost
    if cost is None:
        return ""
    out = f"\nCost: {format_usd(cost.total.usd)} ({cost.basis})\n\n"
    out += "| step | billed requests | from the cache | tokens in | tokens out | cost |\n"
    out += "|---|---:|---:|---:|---:|---:|\n"
    for name, step in cost.steps.items():
        out += (
            f"| {name} | {step.calls} | {step.cache_hits} | {step.prompt_tokens} | "
            f"{step.completion_tokens} | {format_usd(step.cost.usd)} |\n"
        )
    units = [(f"system {n}, per asking", u) for n, u in cost.per_system.items()]
    if cost.per_document_pair is not None:
        units.append(("per accepted document pair", cost.per_document_pair))
    if cost.per_verified_wording is not None:
        units.append(("per verified wording", cost.per_verified_wording))
    if units:
        out += "\n| what | cost | units | each |\n|---|---:|---:|---:|\n"
        for what, unit in units:
            out += (
                f"| {what} | {format_usd(unit.cost.usd)} | {unit.units} | "
                f"{format_usd(unit.each.usd)} |\n"
            )
    notes: list[str] = []
    for figure in [cost.total, *(s.cost for s in cost.steps.values()), *(u.cost for _, u in units)]:
        for note in (figure.reason, figure.note):
            if note and note not in notes:
                notes.append(note)
    out += "".join(f"\nCost: {note}.\n" for note in notes)
    return out


# The per-table view of the dataset (GRAMMAR v1's Table 4), wherever it is shown.
TABLE_STATS_HEADERS = (
    "table",
    "rows",
    "attributes asked",
    "SQL templates",
    "text templates",
    "groups",
    "text queries",
    "why none",
)


def table_stats_rows(
    tables: list[TableStats], overview: DatasetOverview | None = None
) -> list[list[str]]:
    """A row per table (``TABLE_STATS_HEADERS``), then with ``overview`` the dataset's
    own totals: a template reading two tables counts in both rows, once in the total."""
    rows = [
        [
            t.table,
            "?" if t.rows is None else str(t.rows),
            f"{len(t.attributes_asked)} of {t.attributes}",
            str(t.sql_templates),
            str(sum(t.text_templates.values())),
            str(t.semantic_groups),
            str(t.queries),
            t.why or "",
        ]
        for t in tables
    ]
    if overview is not None:
        rows.append(
            [
                "dataset",
                str(sum(t.rows or 0 for t in tables)),
                f"{sum(len(t.attributes_asked) for t in tables)} of "
                f"{sum(t.attributes for t in tables)}",
                str(overview.sql_templates),
                str(sum(overview.text_templates.values())),
                str(overview.semantic_groups),
                str(sum(overview.text_queries.values())),
                "",
            ]
        )
    return rows


STABILITY_HEADERS = (
    "system",
    "variant",
    "repeats",
    "queries",
    "mean pass rate",
    "flaky",
    "flaky share",
    "always right",
    "always wrong",
)
GROUP_HEADERS = ("system", "variant", "groups", *GROUP_STABILITY)


def _repeats(low: int, high: int) -> str:
    return str(high) if low == high else f"{low}-{high}"


def stability_rows(summary: Summary) -> list[list[str]]:
    """Per system asked each query several times (``run --repeat N``), and per variant:
    the repeats, the queries, their mean pass rate with its interval, the flaky queries
    (how many of how many, and their share with its interval), the queries right and
    wrong every time."""
    rows = []
    for system, figures in summary.stability.items():
        repeats = _repeats(figures.min_repeats, figures.repeats)
        for variant, core in [("all", figures), *figures.variants.items()]:
            rows.append(
                [
                    system,
                    variant,
                    repeats,
                    str(core.queries),
                    show_mean(core.mean_pass_rate),
                    f"{core.flaky.k} of {core.flaky.n}",
                    str(core.flaky),
                    str(core.always_right),
                    str(core.always_wrong),
                ]
            )
    return rows


def group_stability_rows(summary: Summary) -> list[list[str]]:
    """Per system with repeats, and per variant: the semantic groups by how their answers
    vary (:data:`GROUP_HEADERS`): the wordings apart from the repeats."""
    rows = []
    for system, figures in summary.stability.items():
        for variant, core in [("all", figures), *figures.variants.items()]:
            counts = [core.groups.get(kind, 0) for kind in GROUP_STABILITY]
            rows.append([system, variant, str(sum(counts)), *(str(n) for n in counts)])
    return rows


def flaky_lines(summary: Summary) -> list[str]:
    """One line per flaky query a system's figures name (those right nearest half the
    time first): the query, its wording, and how often it was right."""
    return [
        f"{system}: {q.query_id} ({q.variant}, group {q.group_id}) right {q.passes} of "
        f"{q.repeats} times, pass rate {q.pass_rate:.2f} [{q.ci95[0]:.2f}, {q.ci95[1]:.2f}]"
        for system, figures in summary.stability.items()
        for q in figures.flaky_queries
    ]


def stability_section(summary: Summary) -> str:
    """How stable the answers are over repeated askings (``run --repeat N``): the pass
    rates, the groups that fail in some wordings apart from those that fail in some
    repeats, and the flaky queries; empty without repeats."""
    if not summary.stability:
        return ""
    out = (
        "\nHow stable the answers are (every query asked several times: run --repeat N)\n\n"
        + "| "
        + " | ".join(STABILITY_HEADERS)
        + " |\n|---|---|"
        + "---:|" * (len(STABILITY_HEADERS) - 2)
        + "\n"
    )
    out += "".join("| " + " | ".join(r) + " |\n" for r in stability_rows(summary))
    out += (
        "\nSemantic groups: fails in some wordings (every wording gives the same verdict "
        "each time, but not all wordings the same) or in some repeats (a wording is right "
        "one time and wrong another)\n\n| "
        + " | ".join(GROUP_HEADERS)
        + " |\n|---|---|"
        + "---:|" * (len(GROUP_HEADERS) - 2)
        + "\n"
    )
    out += "".join("| " + " | ".join(r) + " |\n" for r in group_stability_rows(summary))
    flaky = flaky_lines(summary)
    if flaky:
        out += "\nFlaky queries (nearest half first)\n\n" + "".join(f"- {x}\n" for x in flaky)
    return out


RELIABILITY_HEADERS = (
    "metric",
    "calls correct at",
    "answers",
    "precision",
    "recall",
    "wrong let through",
    "AUROC",
    "undefined",
    "for the target precision",
)


def _auroc(a: AUROC) -> str:
    if a.value is None:
        return "n/a"
    return f"{a.value:.2f} [{a.ci95[0]:.2f}, {a.ci95[1]:.2f}]"


def reliability_rows(figures: Mapping[str, MetricReliability]) -> list[list[str]]:
    """One row per reference-free metric: its reliability against the grounded verdicts
    (the columns of :data:`RELIABILITY_HEADERS`)."""
    rows = []
    for metric, m in figures.items():
        target = m.for_precision
        needed = (
            f">= {target.threshold:.3g} ({target.target:.0%})"
            if target.threshold is not None
            else f"none reaches {target.target:.0%}"
        )
        rows.append(
            [
                metric,
                f">= {m.threshold:g}",
                str(m.responses),
                show(m.precision),
                show(m.recall),
                show(m.let_through),
                _auroc(m.auroc),
                str(sum(m.undefined.values())),
                needed,
            ]
        )
    return rows


def reliability_section(summary: Summary) -> str:
    """How far each reference-free metric can be trusted on this run: a table, a sentence
    per metric, and why scores were undefined; empty when nothing was scored."""
    figures = summary.reference_free
    if figures is None:
        return ""
    out = (
        "\nReference-free metrics against the grounded verdicts (positive = correct; "
        f"systems: {', '.join(figures.systems)})\n\n"
        + "| "
        + " | ".join(RELIABILITY_HEADERS)
        + " |\n"
        + "|---|"
        + "---:|" * (len(RELIABILITY_HEADERS) - 1)
        + "\n"
    )
    out += "".join("| " + " | ".join(r) + " |\n" for r in reliability_rows(figures.metrics))
    out += "\n" + "".join(f"- {m.sentence}\n" for m in figures.metrics.values())
    for metric, m in figures.metrics.items():
        if m.undefined:
            why = "; ".join(f"{n} {r}" for r, n in m.undefined.items())
            out += f"- {metric} undefined: {why}\n"
    return out


def source_sections(summary: Summary) -> str:
    """Each source's own figures and significant verdicts (when the dataset has both
    halves), and the generation from documents; empty where the run has neither."""
    out = ""
    for source, figures in summary.by_source.items():
        out += f"\nQueries of source {source} on their own\n\n" + metrics_table(figures.systems)
        out += "".join(
            f"- {c.verdict}\n"
            for c in figures.comparisons
            if c.p_value is not None and c.p_value < 0.05
        )
    documents = summary.documents
    if documents is not None and documents.strategies:
        out += (
            "\nGeneration from documents\n\n| strategy | candidates | accepted | "
            f"{CALLS_PER_PAIR} | {TOKENS_PER_PAIR} | label distance to uniform |\n"
            "|---|---:|---:|---:|---:|---:|\n"
        )
        for name, f in documents.strategies.items():
            calls = "n/a" if f.calls_per_pair is None else f"{f.calls_per_pair:.1f}"
            tokens = "n/a" if f.tokens_per_pair is None else f"{f.tokens_per_pair:,.0f}"
            out += (
                f"| {name} | {f.candidates} | {f.accepted} | {calls} | {tokens} | {f.distance} |\n"
            )
        out += f"\nRequests and tokens: {COST_NOTE}.\n"
    return out


def label_sections(summary: Summary) -> str:
    """The figures per question label, the label composition and agreement, and the
    text-weight scan, as markdown; empty where the run has none of them."""
    out = ""
    if summary.by_label:
        out += (
            "\nBy question label\n\n| system | label | queries | accuracy | retrieval accuracy |\n"
        )
        out += "|---|---|---:|---:|---:|\n"
        for system, labels in summary.by_label.items():
            for label, m in labels.items():
                retrieval = show(m.accuracy_retrieval)
                out += f"| {system} | {label} | {m.n_queries} | {m.accuracy} | {retrieval} |\n"
        out += "".join(f"- {line}\n" for line in verdict_lines(summary.label_comparisons))
    figures = summary.labels
    if figures is not None:
        out += (
            f"\nQuestion labels: {figures.labelled} of {figures.pairs} pairs with a consensus "
            f"label ({figures.no_majority} without a majority); raters: "
            f"{', '.join(figures.raters)}\n\n"
            "| label | all pairs | answerable (by the set's flag) |\n|---|---:|---:|\n"
        )
        for label, share in figures.composition.items():
            answerable = figures.composition_answerable
            out += f"| {label} | {share} | {answerable[label] if answerable else ''} |\n"
        if figures.unanswerable_recall is not None:
            out += (
                f"\nFlagged unanswerable by the set, labelled unanswerable: "
                f"{figures.unanswerable_recall} (n = {figures.unanswerable_recall.n}); flagged "
                f"answerable, labelled unanswerable: {figures.unanswerable_false_alarms}\n"
            )
        if figures.fleiss is not None:
            out += f"\nFleiss' kappa over all raters: {figures.fleiss} (n = {figures.fleiss.n})\n"
        for r in figures.per_rater:
            out += (
                f"- {r.rater} vs the others' majority: kappa {r.kappa} (n = {r.kappa.n}, "
                f"{r.discarded} without a majority)\n"
            )
    scan = summary.weight_scan
    if scan is not None:
        out += (
            f"\nText-weight scan: Recall@{scan.k}, {scan.queries} queries, {scan.documents} "
            "documents\n\n"
            "| label | n | dense | lexical | best recall | vs inclusive weight | best weight |\n"
            "|---|---:|---:|---:|---:|---:|---:|\n"
        )
        for row in scan.rows:
            diff = (
                ""
                if row.label == "inclusive" or row.difference is None
                else f"{row.difference:+.3f}"
            )
            out += (
                f"| {row.label} | {row.n} | {_f3(row.dense)} | {_f3(row.lexical)} | "
                f"{_f3(row.best_recall.value)} | {diff} | "
                f"{'n/a' if row.best_weight is None else format(row.best_weight, 'g')} |\n"
            )
        out += "".join(f"- {note}\n" for note in scan.notes)
    return out


def _f3(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


LAMBDA_HEADERS = ("system", "variant", "lambda asked", "lambda reached", "accuracy", "R", "note")


def show_spread(spread: DrawSpread | None) -> str:
    """A figure over the draws: its mean, and the 2.5th to 97.5th percentiles of the draws
    where they differ at three decimals; n/a when it is undefined.

    >>> show_spread(DrawSpread(mean=0.4772, low=0.47, high=0.4851, draws=500))
    '0.477 [0.470, 0.485]'
    >>> show_spread(DrawSpread(mean=0.5, low=0.5, high=0.5, draws=500)), show_spread(None)
    ('0.500', 'n/a')
    """
    if spread is None:
        return "n/a"
    band = f" [{spread.low:.3f}, {spread.high:.3f}]"
    return f"{spread.mean:.3f}" + (
        "" if band == f" [{spread.mean:.3f}, {spread.mean:.3f}]" else band
    )


def lambda_rows(study: LambdaStudy) -> list[list[str]]:
    """The lambda study as rows (:data:`LAMBDA_HEADERS`): per system and variant, the
    figures of all its groups ("observed"), then one row per target lambda with the
    lambda the draws reached, accuracy and R over the draws, and why a figure is n/a."""
    rows = []
    for system, variants in study.systems.items():
        for variant, side in variants.items():
            rows.append(
                [
                    system,
                    variant,
                    "observed",
                    _f3(side.observed_lambda),
                    _f3(side.observed_accuracy),
                    _f3(side.observed_robustness),
                    side.undefined or "",
                ]
            )
            if side.undefined:
                continue  # every target would repeat the side's reason
            for point in side.points:
                rows.append(
                    [
                        system,
                        variant,
                        f"{point.target:g}",
                        show_spread(point.lambda_reached),
                        show_spread(point.accuracy),
                        show_spread(point.robustness),
                        point.undefined or point.robustness_undefined or "",
                    ]
                )
    return rows


def lambda_note(study: LambdaStudy) -> str:
    """What the lambda study did, in a sentence under its table."""
    return (
        f"Whole semantic groups resampled to each lambda (the share of queries in gap "
        f"groups), {study.draws} draws each (seed {study.seed}): below the observed lambda "
        "every other group is kept and gap groups are left out, above it every gap group is "
        "kept and the others are left out. A figure is the mean over the draws, with the "
        "2.5th to 97.5th percentiles of the draws where they differ (which groups were "
        "kept, not the data's uncertainty). Accuracy = R x (1 - lambda): accuracy compares "
        "systems or variants only at one lambda; R does at any."
    )


def lambda_section(study: LambdaStudy | None) -> str:
    """The lambda study as a Markdown table with its note; empty without one."""
    if study is None:
        return ""
    out = "\nAccuracy and R against lambda (analyze --lambda-study)\n\n"
    out += "| " + " | ".join(LAMBDA_HEADERS) + " |\n|---|---|---:|---:|---:|---:|---|\n"
    out += "".join("| " + " | ".join(row) + " |\n" for row in lambda_rows(study))
    return out + "\n" + lambda_note(study) + "\n"
