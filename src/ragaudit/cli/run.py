"""``ragaudit run``: every system asked every query, with a progress bar per system."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragaudit.cli.common import project_for
from ragaudit.cli.console import console, err_console, print_dry_run
from ragaudit.cli.options import (
    ConfigOption,
    DryRunOption,
    LLMOption,
    SystemsOption,
)
from ragaudit.rundir import RunDir


def run_cmd(
    config_path: ConfigOption = None,
    system: SystemsOption = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Only the first N queries of the dataset.")
    ] = None,
    retry_errors: Annotated[
        bool,
        typer.Option("--retry-errors", help="Ask again the queries whose record has an error."),
    ] = False,
    rerun: Annotated[
        bool,
        typer.Option(
            "--rerun",
            help="Ask every query again, replacing the systems' earlier responses (a system "
            "changed under the same name); judge then judges the new answers.",
        ),
    ] = False,
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", min=1, help="Queries in flight (overrides).")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=0.001, help="Per-query timeout in seconds.")
    ] = None,
    repeat: Annotated[
        int | None,
        typer.Option(
            "--repeat",
            min=1,
            max=1000,
            help="Ask every query N times (overrides each system's repeat:): judge judges "
            "every asking, analyze gives each query's pass rate and the flaky ones. The "
            "repeats go to repeats/responses/<system>.jsonl.",
        ),
    ] = None,
    llm: LLMOption = None,
    dry_run: DryRunOption = False,
) -> None:
    """Ask every system under test every query: responses/<system>.jsonl, one line per
    query (with --repeat N, the other askings in repeats/). Resumable: a rerun asks only
    what is missing."""

    project = project_for(config_path, llm=llm, rate=True, transient=False)
    if dry_run:
        print_dry_run(project.run(system, limit=limit, retry_errors=retry_errors, rerun=rerun,
                                  repeat=repeat, dry_run=True))  # fmt: skip
        return
    results = project.run(system, limit=limit, retry_errors=retry_errors, rerun=rerun,
                          concurrency=concurrency, timeout=timeout, repeat=repeat)  # fmt: skip
    run = RunDir(project.run_dir)
    repeated = any(s.repeats > 1 for s in results.values())
    table = Table(title=f"Responses -> {run.responses_dir}", title_justify="left")
    headers = ("system", *(("repeats",) if repeated else ()), "asked now", "already done")
    for header in (*headers, "errors", "queries/s", "tokens"):
        table.add_column(header, justify="left" if header == "system" else "right", overflow="fold")
    for name, s in results.items():
        table.add_row(
            escape(name),
            *((str(s.repeats),) if repeated else ()),
            str(s.asked),
            str(s.already_done),
            str(s.errors),
            f"{s.rate:.1f}",
            str(s.prompt_tokens + s.completion_tokens),
        )
    console.print(table)
    for name, s in results.items():
        for example in s.error_examples[:3]:
            err_console.print(f"{name}: {example}", markup=False)
        for warning in s.warnings:
            err_console.print(f"warning: {warning}", markup=False, style="yellow")
