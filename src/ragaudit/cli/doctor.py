"""``ragaudit doctor``: the resolved configuration, the database's schema, the corpus's
documents and chunks, and one LLM round trip, printed; the checks themselves are
:mod:`ragaudit.steps.doctor`'s (``ra.Project.doctor``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
import yaml
from rich.markup import escape
from rich.table import Table

from ragaudit.cli.common import project_for
from ragaudit.cli.console import console, err_console, usage_table
from ragaudit.cli.options import (
    ConfigOption,
    DbOption,
    ExampleOption,
    LLMOption,
)
from ragaudit.steps.doctor import DEFAULT_PROMPT

if TYPE_CHECKING:
    from ragaudit.db import SchemaInfo
    from ragaudit.steps.doctor import CorpusCheck

# Chunks named when some are too long for the context; the rest are counted.
SHOWN_CHUNKS = 5


def _schema_table(schema: SchemaInfo) -> Table:
    """Tables, row counts, columns with their types, keys, distinct values and NULLs."""
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


def _print_corpus(found: CorpusCheck) -> None:
    """What doctor found of the corpus: documents, chunks, the ones too short to write a
    question from, and the ones (and the built-in systems' prompts) too long for the model."""
    console.print(
        f"{found.path}: {found.documents} documents, {found.chunks} chunks "
        f"(chunking: {found.chunking}); the longest is ~{found.longest_tokens} tokens",
        markup=False,
    )
    if found.short_chunks:
        console.print(
            f"{found.short_chunks} of them have fewer than {found.min_words} words: "
            "generate --documents writes no question from them",
            markup=False,
        )
    if found.too_long:
        n = len(found.too_long)
        shown = ", ".join(f"{c.id} (~{c.tokens})" for c in found.too_long[:SHOWN_CHUNKS])
        more = f" and {n - SHOWN_CHUNKS} more" if n > SHOWN_CHUNKS else ""
        err_console.print(
            f"warning: {n} chunk{' is' if n == 1 else 's are'} longer than the model's "
            f"context (llm.context_size: {found.context_size} tokens): {shown}{more}; "
            f"{found.too_long_outcome}",
            markup=False,
            style="yellow",
        )
    for crowded in found.crowded:
        err_console.print(
            f"warning: system {crowded.system}: its {crowded.k} retrieved chunks can come "
            f"to ~{crowded.tokens} tokens, more than the model's context "
            f"({found.context_size}): an answer whose passages do not fit records an error",
            markup=False,
            style="yellow",
        )
    if not found.too_long and not found.crowded:
        console.print(f"every chunk fits the model's context ({found.context_size} tokens)")


def doctor(
    config_path: ConfigOption = None,
    example: ExampleOption = False,
    db: DbOption = None,
    llm: LLMOption = None,
    prompt: Annotated[
        str, typer.Option("--prompt", help="What to ask the LLM for the round trip.")
    ] = DEFAULT_PROMPT,
    skip_llm: Annotated[bool, typer.Option("--skip-llm", help="Do not call the LLM.")] = False,
) -> None:
    """Check the setup: resolved configuration, database schema, the corpus's documents and
    chunks (flagging chunks too long for the model), and one LLM round trip."""
    project = project_for(config_path, example, db, llm)
    report = project.doctor(prompt=prompt, use_llm=not skip_llm)

    console.rule("configuration")
    console.print(yaml.safe_dump(report.config, sort_keys=False, allow_unicode=True).rstrip())

    console.rule("database")
    if report.database is not None:
        found = report.database
        ro = "read-only enforced" if found.read_only_enforced else "read-only NOT enforced"
        console.print(f"{found.display_url}  ({found.dialect}, {ro})", markup=False)
        console.print(_schema_table(found.schema))
    elif report.database_error is not None:
        err_console.print(f"[red]database check failed:[/red] {escape(report.database_error)}")
    elif report.corpus is not None or report.corpus_error is not None:
        console.print("no database (documents only): set database.url to add SQL questions")
    else:
        console.print("no database configured (database.url); use --db URL or --example")

    console.rule("corpus")
    if report.corpus is not None:
        _print_corpus(report.corpus)
    elif report.corpus_error is not None:
        err_console.print(f"[red]corpus check failed:[/red] {escape(report.corpus_error)}")
    else:
        console.print("no corpus configured (corpus.path): the documents systems retrieve from")

    if not skip_llm:
        console.rule("LLM")
        if report.llm_backend is not None:
            console.print(f"backend:  {report.llm_backend}", markup=False)
        if report.llm_load_s is not None:
            console.print(f"loaded:   in {report.llm_load_s:.2f} s")
        if report.llm is not None:
            trip = report.llm
            console.print(f"question: {trip.question}", markup=False)
            console.print(f"answer:   {trip.answer}", markup=False)
            console.print(
                f"latency:  {trip.latency_s:.2f} s  ({trip.prompt_tokens} prompt + "
                f"{trip.completion_tokens} completion tokens)"
            )
        else:
            err_console.print(f"[red]LLM check failed:[/red] {escape(report.llm_error or '')}")
        if report.usage is not None:
            console.print(usage_table(report.usage))
    console.print(f"run directory: {project.run_dir}", markup=False)
    if not report.ok:
        raise typer.Exit(code=1)
