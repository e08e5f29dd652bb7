"""The ``ragaudit`` command line.

User errors (:class:`ragaudit.errors.UserError`) are printed as one line on stderr with a
non-zero exit status and no traceback; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer
import yaml
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn
from rich.table import Table

from ragaudit import __version__
from ragaudit.config import DEFAULT_CONFIG_NAME, EXAMPLE_CONFIG, Config, load_config
from ragaudit.console import console, err_console, usage_table
from ragaudit.errors import ConfigError, UserError
from ragaudit.rundir import RunDir
from ragaudit.secrets import redact

app = typer.Typer(
    name="ragaudit",
    help="Audit RAG systems with questions whose answers are executed from SQL.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help=f"Configuration file (default: ./{DEFAULT_CONFIG_NAME} if it exists).",
    ),
]


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


def resolve_config(path: Path | None) -> Config:
    """The configuration from ``path``, else ``./ragaudit.yaml`` if present, else defaults."""
    if path is None:
        default = Path(DEFAULT_CONFIG_NAME)
        path = default if default.exists() else None
    return load_config(path)


@app.command()
def init(
    path: Annotated[Path, typer.Argument(help="Where to write the file.")] = Path(
        DEFAULT_CONFIG_NAME
    ),
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented example ragaudit.yaml."""
    if path.exists() and not force:
        raise ConfigError(f"{path} already exists (use --force to overwrite it)")
    from ragaudit.records.io import atomic_write_text

    atomic_write_text(path, EXAMPLE_CONFIG)
    console.print(
        f"wrote {path}: edit database.url and llm.model, then run: ragaudit doctor", markup=False
    )


def _schema_table(schema: object) -> Table:
    from ragaudit.db.schema import SchemaInfo

    assert isinstance(schema, SchemaInfo)
    table = Table(title=f"Schema ({schema.dialect})", title_justify="left")
    for header in ("table", "rows", "column", "type", "key", "distinct", "nulls"):
        table.add_column(
            header, justify="right" if header in {"rows", "distinct", "nulls"} else "left"
        )
    for info in schema.tables:
        fk_cols = {c: f"FK→{escape(fk.ref_table)}" for fk in info.foreign_keys for c in fk.columns}
        for i, col in enumerate(info.columns):
            key = "PK" if col.primary_key else fk_cols.get(col.name, "")
            table.add_row(
                escape(info.name) if i == 0 else "",
                str(info.row_count) if i == 0 and info.row_count is not None else "",
                escape(col.name),
                escape(col.type),
                key,
                "" if col.distinct_count is None else str(col.distinct_count),
                "" if col.null_count is None else str(col.null_count),
            )
        table.add_section()
    return table


def _prepare_embedded_model() -> None:
    """Assemble the embedded model with a progress bar (a no-op once it is in the cache)."""
    from ragaudit.llm.model_assets import MODEL_SIZE, ensure_embedded_model

    with Progress(
        TextColumn("assembling the embedded model"),
        BarColumn(),
        DownloadColumn(),
        console=err_console,
        transient=True,
    ) as progress:
        task = progress.add_task("model", total=MODEL_SIZE)
        ensure_embedded_model(progress=lambda done, _total: progress.update(task, completed=done))


@app.command()
def doctor(
    config_path: ConfigOption = None,
    example: Annotated[
        bool, typer.Option("--example", help="Use the example database bundled with ragaudit.")
    ] = False,
    db: Annotated[
        str | None, typer.Option("--db", help="Database URL (overrides the config).")
    ] = None,
    llm: Annotated[
        str | None,
        typer.Option("--llm", help="LLM: local, local:/path.gguf or openai:<model> (overrides)."),
    ] = None,
    prompt: Annotated[
        str, typer.Option("--prompt", help="What to ask the LLM for the round trip.")
    ] = "In one short sentence: why test a RAG system with questions whose answers are known?",
    skip_llm: Annotated[bool, typer.Option("--skip-llm", help="Do not call the LLM.")] = False,
) -> None:
    """Check the setup: resolved configuration, database schema, and one LLM round trip."""
    config = resolve_config(config_path)
    if example:
        config.database.url = "example"
    if db:
        config.database.url = db
    if llm:
        config.llm.model = llm
    run = RunDir.from_config(config).create()
    run.write_config(config)

    console.rule("configuration")
    console.print(
        yaml.safe_dump(config.masked_dict(), sort_keys=False, allow_unicode=True).rstrip()
    )
    failures: list[str] = []

    console.rule("database")
    if not config.database.url:
        console.print("no database configured (database.url); use --db URL or --example")
    else:
        from ragaudit.db import Database, introspect

        try:
            database = Database(config.database.url, timeout_s=config.database.timeout_s)
            database.check_connection()
            schema = introspect(database, tables=config.database.tables)
            ro = "read-only enforced" if database.read_only_enforced else "read-only NOT enforced"
            console.print(f"{database.display_url}  ({database.dialect}, {ro})", markup=False)
            console.print(_schema_table(schema))
            database.dispose()
        except UserError as exc:
            failures.append(str(exc))
            err_console.print(f"[red]database check failed:[/red] {escape(redact(str(exc)))}")

    from ragaudit.llm import make_llm, system, user
    from ragaudit.llm.usage import UsageMeter

    meter = UsageMeter()
    if not skip_llm:
        console.rule("LLM")
        try:
            if config.llm.backend == "local" and not config.llm.model_name:
                _prepare_embedded_model()
            # The doctor checks the live model: it never answers from the cache.
            client = make_llm(config.llm, cache_path=None, meter=meter)
            console.print(f"backend:  {client.backend.describe()}", markup=False)
            load = getattr(client.backend, "load", None)
            if load is not None:
                start = time.perf_counter()
                load()
                console.print(f"loaded:   in {time.perf_counter() - start:.2f} s")
            with meter.step("doctor"), client:
                start = time.perf_counter()
                reply = client.complete(
                    [system("You are a concise assistant. Answer in one sentence."), user(prompt)]
                )
                latency = time.perf_counter() - start
            console.print(f"question: {prompt}", markup=False)
            console.print(f"answer:   {reply.text.strip()}", markup=False)
            console.print(
                f"latency:  {latency:.2f} s  ({reply.prompt_tokens} prompt + "
                f"{reply.completion_tokens} completion tokens)"
            )
        except UserError as exc:
            failures.append(str(exc))
            err_console.print(f"[red]LLM check failed:[/red] {escape(redact(str(exc)))}")
        console.print(usage_table(meter))
    meter.write(run.usage)
    console.print(f"run directory: {run.root}", markup=False)
    if failures:
        raise typer.Exit(code=1)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app, turning user errors into one line."""
    try:
        app(args=argv, prog_name="ragaudit")
    except UserError as exc:
        err_console.print(f"error: {redact(str(exc))}", markup=False)
        sys.exit(exc.exit_code)
