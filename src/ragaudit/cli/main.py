"""The ``ragaudit`` application: it registers the commands, one module each, and turns a
:class:`~ragaudit.errors.UserError` into one line on stderr with a non-zero exit status and
no traceback (anything else is a bug and keeps its traceback)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ragaudit.cli import (
    analyze,
    compare,
    demo,
    doctor,
    export,
    gate,
    generate,
    init,
    judge,
    label,
    report,
    run,
    scan,
    templates,
    world,
)
from ragaudit.cli.console import console, err_console
from ragaudit.errors import UserError, printable
from ragaudit.rundir import release_locks
from ragaudit.secrets import redact
from ragaudit.version import __version__

app = typer.Typer(
    name="ragaudit",
    help="Audit RAG systems with questions whose answers are executed from SQL.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
templates_app = typer.Typer(
    help="Make, edit and check the SQL and text templates of a run.", no_args_is_help=True
)


def _version_callback(value: bool) -> None:
    if value:
        console.print(f"ragaudit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version_callback, is_eager=True, help="Show the version."
        ),
    ] = False,
) -> None:
    """Audit RAG systems with questions whose answers are executed from SQL."""


app.command("init")(init.init)
app.command("doctor")(doctor.doctor)
app.add_typer(templates_app, name="templates")
templates_app.command("sql")(templates.templates_sql)
templates_app.command("text")(templates.templates_text)
templates_app.command("verify")(templates.templates_verify)
templates_app.command("check")(templates.templates_check)
app.command("generate")(generate.generate_cmd)
app.command("run")(run.run_cmd)
app.command("world")(world.world_cmd)
app.command("label")(label.label_cmd)
app.command("judge")(judge.judge_cmd)
app.command("scan")(scan.scan_cmd)
app.command("analyze")(analyze.analyze_cmd)
app.command("compare")(compare.compare_cmd)
app.command("gate")(gate.gate_cmd)
app.command("demo")(demo.demo_cmd)
app.command("report")(report.report_cmd)
app.add_typer(export.export_app, name="export")


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app, turning user errors into one line."""
    from ragaudit.api.calls import command_line

    try:
        with command_line():
            app(args=argv, prog_name="ragaudit")
    except UserError as exc:
        err_console.print(f"error: {printable(redact(str(exc)))}", markup=False)
        sys.exit(exc.exit_code)
    finally:
        release_locks()
