"""``ragaudit generate``: templates instantiated into dataset.jsonl, and its counts."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragaudit.cli.common import project_for
from ragaudit.cli.console import console, err_console, print_dry_run
from ragaudit.cli.options import (
    ConfigOption,
    DbOption,
    DryRunOption,
    ExampleOption,
)
from ragaudit.errors import UserError
from ragaudit.records.models import LABELS
from ragaudit.rundir import RunDir


class Strategy(StrEnum):
    statements = "statements"
    simple = "simple"


def parse_mix(text: str) -> dict[str, float]:
    """``uniform`` (the four labels alike, unanswerable included) or ``label=weight,...``
    as a mix; a typo, a label given twice, or a weight that is not a finite number >= 0, is
    a :class:`UserError` naming it. Without ``--mix`` the default mix is answerable only."""
    from ragaudit.documents.options import UNIFORM, UNIFORM_MIX, mix_problem

    if text.strip().lower() == UNIFORM:
        return {str(label): weight for label, weight in UNIFORM_MIX.items()}
    out: dict[str, float] = {}
    for part in text.split(","):
        label, _, weight = part.partition("=")
        label = label.strip()
        if label not in LABELS:
            raise UserError(f"--mix: unknown label {label!r}: use {', '.join(LABELS)}")
        if label in out:  # which of the two weights was meant cannot be guessed
            raise UserError(f"--mix: {label} is given twice: give each label once")
        try:
            out[label] = float(weight) if weight.strip() else 1.0
        except ValueError:
            raise UserError(f"--mix: {part.strip()!r}: the weight must be a number") from None
    problem = mix_problem(out)
    if problem:
        raise UserError(f"--mix: {problem}")
    return out


def wordings_cell(counts: dict[str, int]) -> str:
    """The documents table's cell for one style's wordings: how many were kept and, when
    some were dropped, how many for each kind of reason (every length problem is one,
    ``length``), each quoted, e.g. ``0 (dropped: 3 for "length", 1 for "asks something
    else")``."""
    dropped = ", ".join(f'{n} for "{why}"' for why, n in counts.items() if why != "kept")
    return str(counts.get("kept", 0)) + (f" (dropped: {dropped})" if dropped else "")


def _import(config_path: Path | None, example: bool, path: Path) -> None:
    """``generate --import``: a question set of the user's into the dataset."""
    project = project_for(config_path, example)
    stats = project.import_questions(path)
    run = RunDir(project.run_dir)
    for warning in stats.warnings:
        err_console.print(f"warning: {warning}", markup=False, style="yellow")
    console.print(
        f"imported {stats.queries} questions ({stats.unanswerable} unanswerable) over "
        f"{stats.contexts} contexts into {run.dataset}; contexts in {run.imported_contexts}",
        markup=False,
    )


def _documents(
    config_path: Path | None,
    example: bool,
    strategy: Strategy | None,
    size: int | None,
    mix: str | None,
    seed: int | None,
    retry_failed: bool,
    dry_run: bool = False,
) -> None:
    """``generate --documents``: pairs from the corpus, with a bar of accepted pairs."""
    from ragaudit.report.text import CALLS_PER_PAIR, TOKENS_PER_PAIR  # the report's labels

    project = project_for(config_path, example, rate=False)
    if dry_run:
        print_dry_run(
            project.generate_documents(
                strategy=strategy.value if strategy else None,
                size=size,
                mix=parse_mix(mix) if mix is not None else None,
                seed=seed,
                dry_run=True,
            )
        )
        return
    stats = project.generate_documents(
        strategy=strategy.value if strategy else None,
        size=size,
        mix=parse_mix(mix) if mix is not None else None,
        seed=seed,
        retry_failed=retry_failed,
    )
    run = RunDir(project.run_dir)
    table = Table(title=f"Dataset from documents -> {run.dataset}", title_justify="left")
    table.add_column("", overflow="fold")
    table.add_column("count", justify="right", overflow="fold")
    table.add_row("strategy", stats.strategy)
    table.add_row("contexts", str(stats.contexts))
    table.add_row("candidates", str(stats.candidates))
    table.add_row("accepted", f"{stats.accepted} of {stats.size}")
    for why, n in sorted(stats.dropped.items(), key=lambda item: -item[1]):
        table.add_row(f"dropped: {escape(why)}", str(n))
    for label, n in stats.accepted_by_label.items():
        wanted = stats.requested.get(label)
        table.add_row(f"accepted {escape(label)}", f"{n}" + (f" of {wanted}" if wanted else ""))
    for style, counts in stats.wordings.items():
        table.add_row(f"wordings ({escape(style)}) kept", escape(wordings_cell(counts)))
    table.add_row("queries", str(stats.queries))
    if stats.calls_per_pair is not None and stats.tokens_per_pair is not None:
        table.add_row(CALLS_PER_PAIR, f"{stats.calls_per_pair:.1f}")
        table.add_row(TOKENS_PER_PAIR, f"{stats.tokens_per_pair:,.0f}")
    console.print(table)
    shortfall = stats.shortfall()
    if shortfall:
        err_console.print(f"warning: {shortfall}", markup=False, style="yellow")
    for warning in stats.warnings:
        err_console.print(f"warning: {warning}", markup=False, style="yellow")
    console.print(f"every candidate, with why it was dropped: {run.candidates}", markup=False)


def _bindings(values: Mapping[str, object]) -> str:
    """A group's placeholder values on one line (its template names the placeholders)."""
    return ", ".join(str(v) for v in values.values())


SHOWN = 20  # groups that moved, listed on the terminal (refresh.jsonl lists every one)
SHOWN_STALE = 5  # stale documents, likewise


def _refresh(config_path: Path | None, example: bool, db: str | None, new: bool) -> None:
    """``generate --refresh``: the references executed again; the classes counted, what
    moved (old and new answers), the stale documents, and what to run next."""
    from ragaudit.generate.refresh import describe_stale

    project = project_for(config_path, example, db)
    report = project.refresh(new=new)
    run = RunDir(project.run_dir)
    table = Table(title=f"Refresh of {run.dataset}", title_justify="left")
    table.add_column("", overflow="fold")
    table.add_column("groups", justify="right", overflow="fold")
    table.add_column("queries", justify="right", overflow="fold")
    rows = [
        ("unchanged (ids and records kept)", report.unchanged),
        ("changed (new answer, new ids)", report.changed),
        ("vanished (left the dataset)", report.vanished),
    ]
    for label, count in rows:
        table.add_row(label, str(count.groups), str(count.queries))
    if report.new_asked:
        table.add_row("new (added)", str(report.new.groups), str(report.new.queries))
    else:
        table.add_row("new (not added: --new adds them)", str(report.new_not_added), "")
    for why, n in report.left_as_is.items():
        table.add_row(f"left as they are: {escape(why)}", "", str(n))
    if report.stale_documents:
        table.add_row("documents stating a fact no longer true", str(report.stale_documents), "")
    console.print(table)
    moved = [m for m in report.moved if m.status != "new" or report.new_asked]
    if moved:
        # One line a group: the template ids are too long for a table's column.
        console.print(
            "What moved (status, template [values]: old answer -> new answer):", markup=False
        )
        for m in moved[:SHOWN]:
            old = m.old.display if m.old is not None else ""
            new_answer = m.new.display if m.new is not None else ""
            answers = f"{old} -> {new_answer}" if m.old and m.new else old or new_answer
            console.print(
                f"  {m.status:<8}  {m.template_id} [{_bindings(m.bindings)}]: {answers}",
                markup=False,
            )
        more = f" ({len(moved) - SHOWN} more)" if len(moved) > SHOWN else ""
        console.print(f"every group that moved{more}: {run.refresh_log}", markup=False)
    for doc in report.stale[:SHOWN_STALE]:
        err_console.print(f"stale document {doc.document}: {describe_stale(doc)}", markup=False)
    if len(report.stale) > SHOWN_STALE:
        err_console.print(
            f"and {len(report.stale) - SHOWN_STALE} more stale documents: {run.refresh_log}",
            markup=False,
        )
    for note in report.notes:
        err_console.print(f"note: {note}", markup=False, style="yellow")
    if report.retired:
        listed = ", ".join(f"{n} {kind}" for kind, n in report.retired.items())
        console.print(f"retired (moved to {run.retired_dir}): {listed}", markup=False)
    if report.asks:
        console.print(
            f"next: ragaudit run and ragaudit judge ask and judge the {report.asks} "
            "changed and new queries only",
            markup=False,
        )


def generate_cmd(
    config_path: ConfigOption = None,
    example: ExampleOption = False,
    db: DbOption = None,
    balanced: Annotated[
        bool | None,
        typer.Option("--balanced/--unbalanced", help="Same number of queries per style."),
    ] = None,
    allow_multi: Annotated[
        bool | None, typer.Option("--allow-multi", help="Keep multi-answer groups as sets.")
    ] = None,
    include_unanswerable: Annotated[
        bool | None,
        typer.Option("--include-unanswerable", help="Emit combinations without an answer."),
    ] = None,
    include_null: Annotated[
        bool | None,
        typer.Option(
            "--include-null", help="Keep groups whose answer is NULL ('not recorded' is right)."
        ),
    ] = None,
    max_groups_per_template: Annotated[
        int | None,
        typer.Option("--max-groups-per-template", min=1, help="Seeded sample per template."),
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Sampling seed.")] = None,
    unverified: Annotated[
        bool | None,
        typer.Option("--unverified", help="Also ask wordings never verified (not rejected ones)."),
    ] = None,
    documents: Annotated[
        bool,
        typer.Option(
            "--documents",
            help="Write the questions from the corpus's documents instead of the database "
            "(generate.documents in ragaudit.yaml).",
        ),
    ] = False,
    imported: Annotated[
        Path | None,
        typer.Option(
            "--import",
            help="Add a question set of your own (SQuAD JSON, or JSONL of id, context, "
            "question, answer, answerable) as the dataset's imported part, its contexts in "
            "imported/contexts.jsonl.",
        ),
    ] = None,
    refresh: Annotated[
        bool,
        typer.Option(
            "--refresh",
            help="Execute every grounded question's SQL again on the database as it is now: "
            "unchanged groups keep their ids and records, changed ones get the new answer "
            "and new ids, vanished ones leave; refresh.jsonl lists what moved.",
        ),
    ] = False,
    new: Annotated[
        bool,
        typer.Option("--new", help="With --refresh: also add the groups the dataset lacks."),
    ] = False,
    strategy: Annotated[
        Strategy | None,
        typer.Option("--strategy", help="With --documents: statements or simple."),
    ] = None,
    size: Annotated[
        int | None, typer.Option("--size", min=1, help="With --documents: pairs to accept.")
    ] = None,
    mix: Annotated[
        str | None,
        typer.Option(
            "--mix",
            help="With --documents: label shares, e.g. 'fact_single=1,unanswerable=1', or "
            "'uniform' (the four labels alike); default fact_single=2,summary=1,reasoning=1.",
        ),
    ] = None,
    retry_failed: Annotated[
        bool,
        typer.Option(
            "--retry-failed",
            help="With --documents: ask the LLM again for the replies it gave that could "
            "not be used (a rerun otherwise replays them from the cache and asks nothing).",
        ),
    ] = False,
    dry_run: DryRunOption = False,
) -> None:
    """Instantiate the templates into dataset.jsonl: one semantic group per instantiated SQL
    query, each asked in every verified wording, with answers executed on the database.
    With --documents, write checked question-answer pairs from the corpus instead."""
    if documents and imported is not None:
        raise UserError("--documents and --import are two steps: run them one after the other")
    if refresh and (documents or imported is not None):
        raise UserError(
            "--refresh re-executes the grounded questions' SQL; --documents and --import "
            "have none: run them on their own"
        )
    if new and not refresh:
        raise UserError("--new goes with --refresh (it adds the groups the dataset lacks)")
    if dry_run and (refresh or imported is not None):
        raise UserError("--dry-run goes with generate and generate --documents: --refresh and "
                        "--import ask no LLM")  # fmt: skip
    if refresh:
        shaping = [balanced, allow_multi, include_unanswerable, include_null, unverified]
        if any(v is not None for v in shaping) or max_groups_per_template or seed is not None:
            raise UserError(
                "--refresh keeps the options the dataset was generated with "
                "(dataset.stats.json): give none of its own"
            )
        _refresh(config_path, example, db, new)
        return
    if documents:
        _documents(config_path, example, strategy, size, mix, seed, retry_failed, dry_run)
        return
    if imported is not None:
        _import(config_path, example, imported)
        return
    if strategy or size or mix or retry_failed:
        raise UserError("--strategy, --size, --mix and --retry-failed go with --documents")
    project = project_for(config_path, example, db)
    if dry_run:
        print_dry_run(project.generate(dry_run=True))
        return
    dataset = project.generate(
        balanced=balanced,
        allow_multi=allow_multi,
        include_unanswerable=include_unanswerable,
        include_null=include_null,
        max_groups_per_template=max_groups_per_template,
        seed=seed,
        unverified=unverified,
    )
    stats, options, run = dataset.stats, project.config.generate, RunDir(project.run_dir)
    if allow_multi is not None:
        options = options.model_copy(update={"allow_multi": allow_multi})
    if include_null is not None:
        options = options.model_copy(update={"include_null": include_null})
    overview = stats.overview()
    table = Table(title=f"Dataset -> {run.dataset}", title_justify="left")
    table.add_column("", overflow="fold")
    table.add_column("count", justify="right", overflow="fold")
    table.add_row("SQL templates", str(overview.sql_templates))
    table.add_row("placeholder combinations", str(overview.combinations))
    table.add_row("semantic groups", str(overview.semantic_groups))
    table.add_row(
        "multi-answer groups (kept)" if options.allow_multi else "multi-answer groups (dropped)",
        str(overview.multi_answer_groups),
    )
    table.add_row(
        "NULL-answer groups (kept)" if options.include_null else "NULL-answer groups (dropped)",
        str(overview.null_answer_groups),
    )
    for style, n in overview.text_templates.items():
        table.add_row(f"text templates ({escape(style)})", str(n))
    for style, n in overview.text_queries.items():
        table.add_row(f"text queries ({escape(style)})", str(n))
    if stats.conflicting_groups:
        table.add_row(
            "groups dropped: a question reads as another's", str(stats.conflicting_groups)
        )
    gold = overview.gold_groups
    for part, label in (
        ("states", "groups: gold ids = documents that state the answer"),
        ("computed", "groups: gold ids = documents that state what it is computed from"),
        ("holes", "groups: no document states the answer (holes)"),
        ("entity", "groups: gold ids = documents about the entity (a rule)"),
        ("unknown", "groups: gold ids unknown (no rule or fact applies)"),
    ):
        if gold.get(part):
            table.add_row(label, str(gold[part]))
    if stats.gold_rows is not None:
        g = stats.gold_rows
        table.add_row(
            f"gold_rows: cells stated in their document (of {g['cells_checked']} checked)",
            str(g["cells_stated"]),
        )
    console.print(table)
    if stats.tables:
        from ragaudit.report.terminal import table_stats_table, uncovered_lines

        console.print(table_stats_table(stats.tables, overview))
        for line in uncovered_lines(stats.tables):
            err_console.print(line, markup=False)
    for tid, why in overview.skipped_templates.items():
        err_console.print(f"skipped {tid}: {why}", markup=False)
    for style, reasons in stats.wordings_dropped.items():
        listed = ", ".join(f"{n} {why}" for why, n in reasons.items())
        err_console.print(f"wordings left out ({style}): {listed}", markup=False)
    for warning in stats.warnings:
        err_console.print(f"warning: {warning}", markup=False, style="yellow")
