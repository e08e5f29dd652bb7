"""``ragaudit world``: a fictitious company to test RAG on, optionally rewritten by the LLM."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ragaudit.cli.common import session_hooks
from ragaudit.cli.console import console, err_console
from ragaudit.cli.options import (
    Engine,
    OnFailure,
)
from ragaudit.cli.progress import CliProgress
from ragaudit.errors import UserError


def world_cmd(
    out: Annotated[Path, typer.Argument(help="Folder to write the world into.")] = Path("world"),
    size: Annotated[
        int | None,
        typer.Option(
            "--size", min=20, help="Rows across all tables (50 to 1,000,000+; default 60)."
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Same seed, same world.")] = 0,
    engine: Annotated[
        Engine | None, typer.Option("--engine", help="The database to write (default sqlite).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace a non-empty folder.")] = False,
    llm: Annotated[
        bool,
        typer.Option(
            "--llm",
            help="Rewrite the reports in free prose with the LLM, each checked by reading "
            "comprehension against the database (resumes an unfinished rewrite of OUT).",
        ),
    ] = False,
    model: Annotated[
        str | None,
        typer.Option("--model", help="LLM for --llm (default: the world's llm.model, local)."),
    ] = None,
    on_failure: Annotated[
        OnFailure,
        typer.Option(
            "--on-failure",
            help="A report whose rewrite fails the check even after a repair: keep its "
            "template wording (template) or leave it out of the corpus (drop).",
        ),
    ] = OnFailure.template,
    from_db: Annotated[
        str | None,
        typer.Option(
            "--from-db",
            metavar="URL",
            help="Write a world of your own database instead (read only; the world works on "
            "a SQLite copy): one profile document per row of its entity tables.",
        ),
    ] = None,
    tables: Annotated[
        list[str] | None,
        typer.Option(
            "--table",
            help="With --from-db: a table whose rows become documents (repeatable; default: "
            "every table with a one-column primary key that links no others).",
        ),
    ] = None,
    columns: Annotated[
        list[str] | None,
        typer.Option(
            "--column",
            metavar="TABLE.COLUMN",
            help="With --from-db: state only these columns (repeatable; default: all).",
        ),
    ] = None,
    rename: Annotated[
        bool,
        typer.Option(
            "--rename",
            help="With --from-db: make the rows' names fictitious, in the copy and the "
            "documents alike, so that no model knows them (a closed domain).",
        ),
    ] = False,
    holes: Annotated[
        float,
        typer.Option(
            "--holes",
            min=0.0,
            max=0.99,
            help="With --from-db: the share of facts stated in no document.",
        ),
    ] = 0.1,
    names: Annotated[
        list[str] | None,
        typer.Option(
            "--name",
            metavar="TABLE=COLUMN[+COLUMN]",
            help="With --from-db: the columns that name a table's rows, one or a first and a "
            "last name (Employee=FirstName+LastName; repeatable; default: found by rule).",
        ),
    ] = None,
) -> None:
    """Generate a fictitious company (database and project reports) to test RAG on, or,
    with --from-db, documents that state the rows of your own database."""
    from ragaudit.api.world import make_world

    start = time.perf_counter()
    made = make_world(
        out,
        size=size,
        seed=seed,
        engine=None if engine is None else "duckdb" if engine is Engine.duckdb else "sqlite",
        force=force,
        rewrite=llm,
        model=model,
        on_failure="drop" if on_failure is OnFailure.drop else "template",
        from_db=from_db,
        tables=[t.strip() for spec in tables or () for t in spec.split(",") if t.strip()] or None,
        columns=[c.strip() for spec in columns or () for c in spec.split(",") if c.strip()] or None,
        rename=rename,
        holes=holes,
        names=_names(names),
        progress=CliProgress(),
        session_hooks=session_hooks(),
    )
    summary, rewrite = made.summary, made.rewrite
    table = Table(title=f"World -> {out}", title_justify="left")
    table.add_column("", overflow="fold")
    table.add_column("count", justify="right", overflow="fold")
    for name, n in summary.rows.items():
        table.add_row(f"{name} rows", str(n))
    kind = "profiles" if from_db else "project reports"
    table.add_row(f"documents ({kind})", str(summary.documents))
    table.add_row("facts stated in documents", str(summary.facts))
    if rewrite is not None:
        table.add_row("rewritten by the LLM, checked", str(rewrite.rewritten))
        table.add_row("repaired after a failed check", str(len(rewrite.repaired)))
        kept = "kept in template wording" if on_failure is OnFailure.template else "dropped"
        table.add_row(f"failed the check twice ({kept})", str(len(rewrite.failed)))
    console.print(table)
    for warning in summary.warnings:
        err_console.print(f"warning: {warning}", markup=False, style="yellow")
    if rewrite is not None and (rewrite.repaired or rewrite.failed):
        console.print(f"repaired: {', '.join(rewrite.repaired) or '-'}", markup=False)
        console.print(f"failed: {', '.join(rewrite.failed) or '-'}", markup=False)
        console.print(f"details: {out / 'rewrite.jsonl'}", markup=False)
    console.print(
        f"wrote {summary.database.name}, documents.jsonl, document_facts.jsonl, world.json and "
        f"ragaudit.yaml in {time.perf_counter() - start:.1f} s; next: cd {out} && "
        "ragaudit templates sql && ragaudit templates text && ragaudit generate",
        markup=False,
    )


def _names(specs: list[str] | None) -> dict[str, list[str]] | None:
    """``--name TABLE=COLUMN[+COLUMN]`` as {table: columns}; a malformed one is a one-line
    error."""
    if not specs:
        return None
    out: dict[str, list[str]] = {}
    for spec in specs:
        table, sep, columns = spec.partition("=")
        parts = [c.strip() for c in columns.split("+")]
        if not sep or not table.strip() or not all(parts):
            raise UserError(f"world: --name {spec!r}: write TABLE=COLUMN or TABLE=FIRST+LAST")
        out[table.strip()] = parts
    return out
