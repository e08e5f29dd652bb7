"""The ``ragaudit`` application: it registers the commands, one module each, and turns a
:class:`~ragaudit.errors.UserError` into one line on stderr with a non-zero exit status and
no traceback (anything else is a bug and keeps its traceback)."""

from __future__ import annotations

import sys
import warnings
from typing import Annotated, TextIO

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
from ragaudit.cli.common import set_config_before_verb
from ragaudit.cli.console import console, err_console
from ragaudit.cli.options import ConfigOption
from ragaudit.errors import RunNotice, UserError, printable
from ragaudit.rundir import release_locks
from ragaudit.secrets import redact
from ragaudit.version import __version__

# The first words a user reads: both halves (a database, documents), and where each starts.
# "\b" keeps the journey's lines as written (click rewraps every other paragraph).
HELP = """Audit RAG systems with questions whose answers are known: executed with SQL on
your database, or written from your documents and checked against them. Then see which
module fails (retrieval database, retriever or language model) and which wordings break it.

\b
Your documents:  ragaudit init --documents; ragaudit generate --documents
Your database:   ragaudit init; ragaudit templates sql|text; ragaudit generate
Then:            ragaudit run, judge, analyze, report; ragaudit gate in CI
Offline example: ragaudit demo
"""

# Help goes through click's formatter, not typer's rich tables: at 80 columns those left
# the help text about 18 characters and cut long option names ("--include-unanswe…");
# click wraps the text and puts a long option on a line of its own (issue 41, item 13).
app = typer.Typer(
    name="ragaudit",
    help=HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
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
    config_path: ConfigOption = None,
) -> None:
    """Audit RAG systems with questions whose answers are known (see HELP)."""
    set_config_before_verb(config_path)


# Each command's line in the list of commands: one line at 80 columns (click would cut a
# docstring's first sentence at the width with "..."); the docstring is its --help.
app.command("init", short_help="Write a commented ragaudit.yaml (--documents: a corpus only).")(
    init.init
)
app.command("doctor", short_help="Check the configuration, database, corpus and LLM.")(
    doctor.doctor
)
app.add_typer(templates_app, name="templates")
templates_app.command("sql", short_help="Write templates/sql.yaml: schema, LLM or a file.")(
    templates.templates_sql
)
templates_app.command("text", short_help="Word the SQL templates in every style.")(
    templates.templates_text
)
templates_app.command("verify", short_help="Check each wording asks what its SQL answers.")(
    templates.templates_verify
)
templates_app.command("check", short_help="Revalidate the template files.")(
    templates.templates_check
)
app.command("generate", short_help="Write the dataset: from the database or the documents.")(
    generate.generate_cmd
)
app.command("run", short_help="Ask every system under test every question (resumable).")(
    run.run_cmd
)
app.command(
    "world", short_help="A fictitious company, or documents of your database, to test RAG on."
)(world.world_cmd)
app.command("label", short_help="Label the question types, with the raters' agreement.")(
    label.label_cmd
)
app.command("judge", short_help="Judge every answer: matchers, then the LLM judge.")(
    judge.judge_cmd
)
app.command("scan", short_help="Recall@k of a hybrid retriever at every text weight.")(
    scan.scan_cmd
)
app.command("analyze", short_help="Groups, robustness, module blame and paired tests.")(
    analyze.analyze_cmd
)
app.command("compare", short_help="Do the run's test sets rank its systems alike?")(
    compare.compare_cmd
)
app.command("gate", short_help="CI: fail when a candidate is significantly worse.")(gate.gate_cmd)
app.command("demo", short_help="The whole journey, offline, on a generated company.")(demo.demo_cmd)
app.command("report", short_help="Write report.html, one self-contained file.")(report.report_cmd)
app.add_typer(
    export.export_app, name="export", short_help="Send a run's results to MLflow or tables."
)


# Typer's exit status after Ctrl-C (128 + SIGINT), and what the user is told then: every
# step keeps what it finished (records appended in durable batches, files replaced whole,
# each LLM reply cached), so the same command goes on from there.
INTERRUPTED = 130
INTERRUPTED_MESSAGE = (
    "interrupted: what was finished is kept; run the same command again to go on from "
    "where it stopped"
)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """What ragaudit did on its own (:class:`RunNotice`) as a ``note:`` line; any other
    warning as Python shows it."""
    if issubclass(category, RunNotice):
        err_console.print(f"note: {printable(redact(str(message)))}", markup=False)
        return
    _PYTHON_SHOWWARNING(message, category, filename, lineno, file, line)


_PYTHON_SHOWWARNING = warnings.showwarning


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app, turning user errors into one line."""
    from ragaudit.api.calls import command_line

    warnings.showwarning = _show_warning
    try:
        with command_line():
            app(args=argv, prog_name="ragaudit")
    except UserError as exc:
        err_console.print(f"error: {printable(redact(str(exc)))}", markup=False)
        sys.exit(exc.exit_code)
    except SystemExit as exc:
        if exc.code == INTERRUPTED:  # Ctrl-C: Typer exits 130 and says nothing
            err_console.print(INTERRUPTED_MESSAGE, markup=False)
        raise
    finally:
        release_locks()
