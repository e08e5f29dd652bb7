"""``ragaudit templates sql|text|verify|check``: make, word, verify and check the run's
templates; the work is :mod:`ragaudit.steps.templates`'."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragaudit.cli.common import project_for
from ragaudit.cli.console import console, err_console
from ragaudit.cli.options import (
    ConfigOption,
    DbOption,
    ExampleOption,
    LLMOption,
    NoVerifyOption,
    SqlGenerator,
    TextGenerator,
)
from ragaudit.errors import UserError

if TYPE_CHECKING:
    from ragaudit.steps.templates import SqlTemplatesResult, TextTemplatesResult


def templates_sql(
    config_path: ConfigOption = None,
    example: ExampleOption = False,
    db: DbOption = None,
    from_reference: Annotated[
        Path | None,
        typer.Option("--from-reference", help="Import a GRAMMAR sql_templates.json instead."),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an existing templates/sql.yaml.")
    ] = False,
    generator: Annotated[
        SqlGenerator | None, typer.Option("--generator", help="Overrides the config.")
    ] = None,
    llm: LLMOption = None,
) -> None:
    """Write templates/sql.yaml: SQL templates from the schema enumerator (offline), the
    LLM, or an imported reference file. An existing file is kept unless --overwrite."""
    project = project_for(config_path, example, db, llm)
    result = project.templates_sql(
        generator=generator.value if generator else None,
        from_reference=from_reference,
        overwrite=overwrite,
    )
    if not result.written:
        console.print(
            f"{result.path} exists ({len(result.templates)} templates) and is kept: it may hold "
            "your edits. Use --overwrite to regenerate it.",
            markup=False,
        )
        for name, note in result.notes.items():
            err_console.print(f"no template from {name}: {note}", markup=False)
        _print_coverage(result)
        return
    table = Table(title=f"SQL templates -> {result.path}", title_justify="left")
    table.add_column("id", overflow="fold")
    table.add_column("kind", overflow="fold")
    table.add_column("placeholders", overflow="fold")
    for header in ("combinations", "groups", "multi-answer"):
        table.add_column(header, justify="right", overflow="fold")
    for t in result.templates:
        table.add_row(
            escape(t.id),
            t.kind or "",
            escape(", ".join(t.placeholders)),
            str(t.combinations),
            str(t.groups),
            str(t.multi_answer_groups),
        )
    console.print(table)
    kinds = Counter(t.kind for t in result.templates if t.kind)
    if kinds:
        console.print(
            f"{len(result.templates)} templates: "
            + ", ".join(f"{n} {kind}" for kind, n in kinds.most_common()),
            markup=False,
        )
    for sql, reason in result.rejected:
        err_console.print(f"rejected: {sql}: {reason}", markup=False)
    for name, note in result.notes.items():
        err_console.print(f"no template from {name}: {note}", markup=False)
    _print_coverage(result)
    for t in result.templates:  # e.g. the groups a template drops, named
        if t.note:
            err_console.print(f"note ({t.id}): {t.note}", markup=False)


def _print_coverage(result: SqlTemplatesResult) -> None:
    """Per table: its rows, the columns the templates reach, and the kinds that reach it;
    then each column no template reaches, with why (on stderr)."""
    from ragaudit.generate.sql.coverage import ID_LIKE

    coverage = result.coverage
    if coverage is None:
        return
    table = Table(title="Coverage of the schema", title_justify="left")
    table.add_column("table", overflow="fold")
    table.add_column("rows", justify="right")
    table.add_column("columns reached", justify="right")
    table.add_column("kinds", overflow="fold")
    for name, t in coverage.tables.items():
        table.add_row(
            escape(name), str(t.rows), f"{t.reached} of {len(t.columns)}", ", ".join(t.kinds)
        )
    console.print(table)
    for name, t in coverage.tables.items():
        for column, c in t.columns.items():
            if c.why is not None and c.why != ID_LIKE:  # a key is never asked: no news
                err_console.print(f"not asked: {name}.{column}: {c.why}", markup=False)


def _print_wordings(result: TextTemplatesResult) -> None:
    """Per style: wordings proposed, verified, rejected (by check), not checked; then
    what went wrong on the way."""
    for tid, style, text, reason in result.rejected:
        err_console.print(f"not kept ({tid}, {style}): {text!r}: {reason}", markup=False)
    for tid, style, note in result.fallbacks:
        err_console.print(f"note ({tid}, {style}): {note}", markup=False)
    outcome = result.verification
    if outcome is not None:
        for tid, text, reason in outcome.failures:
            err_console.print(f"unverified ({tid}): {text!r}: {reason}", markup=False)
    for tid in result.orphans:
        err_console.print(
            f"note: {result.path} has wordings of '{tid}', which templates/sql.yaml no longer "
            "has (kept; templates check reports them)",
            markup=False,
        )
    table = Table(title=f"Wordings -> {result.path}", title_justify="left")
    for header in ("style", "proposed", "verified", "rejected", "not checked", "rate", "why"):
        table.add_column(
            header, justify="left" if header in ("style", "why") else "right", overflow="fold"
        )
    for style, c in result.counts.items():
        why = ", ".join(f"{n} {kind}" for kind, n in c.reasons.most_common())
        rate = "—" if c.rate is None else f"{c.rate:.0%}"
        table.add_row(
            escape(style),
            str(c.proposed),
            str(c.verified),
            str(c.rejected),
            str(c.unchecked),
            rate,
            escape(why),
        )
    console.print(table)
    verified = sum(c.verified for c in result.counts.values())
    if outcome is not None and outcome.calls:
        per = outcome.calls + result.generation_calls
        console.print(
            f"{per} LLM calls ({result.generation_calls} to word, {outcome.calls} to verify): "
            + (f"{per / verified:.1f} per verified wording" if verified else "none verified"),
            markup=False,
        )
    unworded = [
        f"{tid} ({style})"
        for tid, styles in result.texts.items()
        if tid not in result.orphans
        for style, texts in styles.items()
        if not any(
            (v := result.verdicts.get((tid, style, t))) is not None and v.verified for t in texts
        )
    ]
    if unworded and any(c.verified for c in result.counts.values()):
        err_console.print(
            f"no verified wording yet: {', '.join(unworded[:8])}"
            + (f" and {len(unworded) - 8} more" if len(unworded) > 8 else ""),
            markup=False,
        )


def templates_text(
    config_path: ConfigOption = None,
    example: ExampleOption = False,
    db: DbOption = None,
    from_reference: Annotated[
        list[str] | None,
        typer.Option(
            "--from-reference",
            help="STYLE=PATH of a GRAMMAR text_templates_<style>.json (repeatable).",
        ),
    ] = None,
    overwrite: Annotated[
        bool,
        typer.Option("--overwrite", help="Word every template again, dropping the file's."),
    ] = False,
    generator: Annotated[
        TextGenerator | None, typer.Option("--generator", help="Overrides the config.")
    ] = None,
    no_verify: NoVerifyOption = False,
    llm: LLMOption = None,
) -> None:
    """Word the SQL templates in every style into templates/text.yaml: from the built-in
    verbalizer (offline), the LLM, or imported reference files. Wordings already in the
    file are kept; only (template, style) pairs without one are worded. Then every wording
    without a verdict is verified (templates verify)."""
    from ragaudit.steps.templates import require_usable

    references: dict[str, str | Path] = {}
    for item in from_reference or []:
        style, sep, path = item.partition("=")
        if not sep or not style or not path:
            raise UserError(f"--from-reference {item!r}: expected STYLE=PATH")
        references[style] = Path(path)
    project = project_for(config_path, example, db, llm)
    result = project.templates_text(
        verify=not no_verify and project.config.templates.verify,
        generator=generator.value if generator else None,
        from_reference=references or None,
        overwrite=overwrite,
        check=False,  # the wordings are printed first, then checked
    )
    _print_wordings(result)
    worded = len(result.worded)
    console.print(
        f"{result.path}: {worded} (template, style) pairs worded now, {result.kept} wordings "
        "kept from the file" + ("" if worded or not result.kept else " (nothing was missing)"),
        markup=False,
    )
    require_usable(result)


def templates_verify(
    config_path: ConfigOption = None,
    example: ExampleOption = False,
    db: DbOption = None,
    recheck: Annotated[
        bool, typer.Option("--recheck", help="Judge every wording again, even with a verdict.")
    ] = False,
    llm: LLMOption = None,
) -> None:
    """Check that each wording of templates/text.yaml asks exactly what its SQL template
    answers, and store the verdict next to it (verified: true, or rejected: why)."""
    project = project_for(config_path, example, db, llm)
    result = project.verify_templates(recheck=recheck)
    _print_wordings(result)


def templates_check(
    config_path: ConfigOption = None,
    example: ExampleOption = False,
    db: DbOption = None,
) -> None:
    """Revalidate templates/sql.yaml and templates/text.yaml against the database; each
    problem names the file and the line."""
    problems = project_for(config_path, example, db).check_templates()
    for problem in problems:
        err_console.print(problem, markup=False)
    if problems:
        raise typer.Exit(code=1)
    console.print("templates are valid", markup=False)
