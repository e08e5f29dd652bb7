"""``ragaudit generate``: templates instantiated into dataset.jsonl, and its counts."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table

from ragaudit.cli.common import load_run
from ragaudit.cli.console import console, err_console
from ragaudit.cli.options import (
    ConfigOption,
    DbOption,
    ExampleOption,
)
from ragaudit.rundir import RunDir


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
) -> None:
    """Instantiate the templates into dataset.jsonl: one semantic group per instantiated SQL
    query, each asked in every verified wording, with answers executed on the database."""
    from rich.progress import MofNCompleteColumn, TimeElapsedColumn

    from ragaudit.steps.generate import generate_dataset

    config = load_run(config_path, example, db)
    run = RunDir.from_config(config).create()
    run.lock("generate")
    updates = {
        "balanced": balanced,
        "allow_multi": allow_multi,
        "include_unanswerable": include_unanswerable,
        "include_null": include_null,
        "max_groups_per_template": max_groups_per_template,
        "seed": seed,
        "unverified": unverified,
    }
    options = config.generate.model_copy(update={k: v for k, v in updates.items() if v is not None})
    run.record_step(config.model_copy(update={"generate": options}), "generate")
    from ragaudit.generate.sql.templates import load_templates

    total = len(load_templates(run.templates_sql).templates)
    with Progress(
        TextColumn("generating"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("templates"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    ) as progress:
        task = progress.add_task("templates", total=total)
        stats = generate_dataset(
            config, run, options, on_template=lambda _t, _s: progress.advance(task)
        )
    overview = stats.overview()
    table = Table(title=f"Dataset -> {run.dataset}", title_justify="left")
    table.add_column("")
    table.add_column("count", justify="right")
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
    for tid, why in overview.skipped_templates.items():
        err_console.print(f"skipped {tid}: {why}", markup=False)
    for style, reasons in stats.wordings_dropped.items():
        listed = ", ".join(f"{n} {why}" for why, n in reasons.items())
        err_console.print(f"wordings left out ({style}): {listed}", markup=False)
    for warning in stats.warnings:
        err_console.print(f"warning: {warning}", markup=False, style="yellow")
