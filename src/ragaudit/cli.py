"""The ``ragaudit`` command line.

User errors (:class:`ragaudit.errors.UserError`) are printed as one line on stderr with a
non-zero exit status and no traceback; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
import yaml
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn
from rich.table import Table

from ragaudit import __version__
from ragaudit.config import DEFAULT_CONFIG_NAME, EXAMPLE_CONFIG, Config, load_config
from ragaudit.console import console, err_console, usage_table
from ragaudit.errors import ConfigError, UserError
from ragaudit.judge.retrieval import DEFAULT_RULE, RULE_HELP
from ragaudit.llm.client import LLMClient
from ragaudit.rundir import RunDir, release_locks
from ragaudit.secrets import redact

if TYPE_CHECKING:
    from ragaudit.steps.judge import JudgeReport
    from ragaudit.steps.templates import TextTemplatesResult
    from ragaudit.steps.world import RewriteSummary

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


ExampleOption = Annotated[
    bool, typer.Option("--example", help="Use the example database bundled with ragaudit.")
]
DbOption = Annotated[str | None, typer.Option("--db", help="Database URL (overrides the config).")]


LLMOption = Annotated[
    str | None,
    typer.Option("--llm", help="LLM: local, local:/path.gguf or openai:<model> (overrides)."),
]


def load_run(
    config_path: Path | None, example: bool = False, db: str | None = None, llm: str | None = None
) -> Config:
    """The configuration with command-line overrides applied."""
    config = resolve_config(config_path)
    if example:
        config.database.url = "example"
    if db:
        config.database.url = db
    if llm:
        config.llm.model = llm
    return config


@contextlib.contextmanager
def llm_clients(
    config: Config, run: RunDir, step: str, models: list[str]
) -> Iterator[dict[str, LLMClient]]:
    """Cached LLM clients for one step, one per model named (``llm`` section settings, the
    model swapped); their usage is printed and merged into usage.json at the end. The run's
    main model caches in cache/llm.sqlite, any other in a file of its own."""
    if not models:
        yield {}
        return
    from ragaudit.llm import make_llm
    from ragaudit.llm.usage import UsageMeter
    from ragaudit.records.models import stable_id

    meter = UsageMeter()
    clients: dict[str, LLMClient] = {}
    try:
        for model in dict.fromkeys(models):
            settings = config.llm.model_copy(update={"model": model})
            settings = type(settings).model_validate(settings.model_dump())  # checks the name
            if settings.backend == "local" and not settings.model_name:
                _prepare_embedded_model()
            cache = (
                run.llm_cache
                if model == config.llm.model
                else run.llm_cache.with_name(f"llm-{stable_id(model, length=10)}.sqlite")
            )
            clients[model] = make_llm(settings, cache_path=cache, meter=meter)
        with meter.step(step):
            yield clients
    finally:
        for client in clients.values():
            client.close()
        console.print(usage_table(meter))
        meter.write(run.usage)


@contextlib.contextmanager
def llm_for(config: Config, run: RunDir, step: str, needed: bool) -> Iterator[LLMClient | None]:
    """The run's cached LLM client for one step (None when the step needs none); its usage
    is printed and merged into usage.json at the end."""
    with llm_clients(config, run, step, [config.llm.model] if needed else []) as clients:
        yield clients.get(config.llm.model)


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


def _counting_bar(*, rate: bool = False, transient: bool = True) -> Progress:
    """A progress display for counted work: description, bar, done/total, ETA (and the
    rate in a ``rate`` task field when asked); on stderr."""
    from rich.progress import MofNCompleteColumn, TimeRemainingColumn

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
    if rate:
        columns.append(TextColumn("{task.fields[rate]}"))
    columns += [TextColumn("ETA"), TimeRemainingColumn()]
    return Progress(*columns, console=err_console, transient=transient)


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
    llm: LLMOption = None,
    prompt: Annotated[
        str, typer.Option("--prompt", help="What to ask the LLM for the round trip.")
    ] = "In one short sentence: why test a RAG system with questions whose answers are known?",
    skip_llm: Annotated[bool, typer.Option("--skip-llm", help="Do not call the LLM.")] = False,
) -> None:
    """Check the setup: resolved configuration, database schema, and one LLM round trip."""
    config = load_run(config_path, example, db, llm=llm)
    run = RunDir.from_config(config).create()
    run.lock("doctor")
    run.record_step(config, "doctor")

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


templates_app = typer.Typer(
    help="Make, edit and check the SQL and text templates of a run.", no_args_is_help=True
)
app.add_typer(templates_app, name="templates")


@templates_app.command("sql")
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
        str | None, typer.Option("--generator", help="enumerator or llm (overrides the config).")
    ] = None,
    llm: LLMOption = None,
) -> None:
    """Write templates/sql.yaml: SQL templates from the schema enumerator (offline), the
    LLM, or an imported reference file. An existing file is kept unless --overwrite."""
    from ragaudit.steps.templates import make_sql_templates

    config = load_run(config_path, example, db, llm=llm)
    if generator:
        config.templates.sql_generator = generator  # type: ignore[assignment]
    run = RunDir.from_config(config).create()
    run.lock("templates sql")
    run.record_step(config, "templates sql")
    with llm_for(config, run, "templates", config.templates.sql_generator == "llm") as client:
        result = make_sql_templates(
            config, run, from_reference=from_reference, overwrite=overwrite, llm=client
        )
    if not result.written:
        console.print(
            f"{result.path} exists ({len(result.templates)} templates) and is kept: it may hold "
            "your edits. Use --overwrite to regenerate it.",
            markup=False,
        )
        return
    table = Table(title=f"SQL templates -> {result.path}", title_justify="left")
    table.add_column("id", overflow="fold")
    table.add_column("placeholders", overflow="fold")
    for header in ("combinations", "groups", "multi-answer"):
        table.add_column(header, justify="right")
    for t in result.templates:
        table.add_row(
            escape(t.id),
            escape(", ".join(t.placeholders)),
            str(t.combinations),
            str(t.groups),
            str(t.multi_answer_groups),
        )
    console.print(table)
    for sql, reason in result.rejected:
        err_console.print(f"rejected: {sql}: {reason}", markup=False)
    for name, note in result.notes.items():
        err_console.print(f"no template from {name}: {note}", markup=False)


NoVerifyOption = Annotated[
    bool,
    typer.Option("--no-verify", help="Run only the checks that need no LLM (no verdicts)."),
]


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
        table.add_column(header, justify="left" if header in ("style", "why") else "right")
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


@templates_app.command("text")
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
        str | None, typer.Option("--generator", help="verbalizer or llm (overrides the config).")
    ] = None,
    no_verify: NoVerifyOption = False,
    llm: LLMOption = None,
) -> None:
    """Word the SQL templates in every style into templates/text.yaml: from the built-in
    verbalizer (offline), the LLM, or imported reference files. Wordings already in the
    file are kept; only (template, style) pairs without one are worded. Then every wording
    without a verdict is verified (templates verify)."""
    from ragaudit.steps.templates import make_text_templates

    config = load_run(config_path, example, db, llm=llm)
    if generator:
        config.templates.text_generator = generator  # type: ignore[assignment]
    if no_verify:
        config.templates.verify = False
    run = RunDir.from_config(config).create()
    run.lock("templates text")
    run.record_step(config, "templates text")
    references: dict[str, Path] = {}
    for item in from_reference or []:
        style, sep, path = item.partition("=")
        if not sep or not style or not path:
            raise UserError(f"--from-reference {item!r}: expected STYLE=PATH")
        references[style] = Path(path)
    use_llm = (
        config.templates.text_generator == "llm" and not references
    ) or config.templates.verify
    from ragaudit.generate.sql.templates import load_templates

    total = len(load_templates(run.templates_sql).templates)
    bar = _counting_bar()
    with llm_for(config, run, "templates", use_llm) as client, bar:
        task = bar.add_task("wording", total=total)
        result = make_text_templates(
            config,
            run,
            references=references or None,
            overwrite=overwrite,
            llm=client,
            on_template=lambda _t: bar.advance(task),
        )
    _print_wordings(result)
    worded = len(result.worded)
    console.print(
        f"{result.path}: {worded} (template, style) pairs worded now, {result.kept} wordings "
        "kept from the file" + ("" if worded or not result.kept else " (nothing was missing)"),
        markup=False,
    )
    _fail_when_nothing_usable(result)


def _fail_when_nothing_usable(result: TextTemplatesResult) -> None:
    """A wording step that leaves not one usable wording has failed, whatever it wrote:
    say why (the most common rejection) rather than exit 0 and let generate find out."""
    usable = sum(c.verified + c.unchecked for c in result.counts.values())
    if usable:
        return
    proposed = sum(c.proposed for c in result.counts.values())
    reasons: Counter[str] = Counter()
    for c in result.counts.values():
        reasons.update(c.reasons)
    why = ", ".join(f"{n} {kind}" for kind, n in reasons.most_common(3)) or "none was proposed"
    raise UserError(
        f"no usable wording: {proposed} proposed, none verified ({why}); the rejected ones "
        f"and their reasons are in {result.path}"
    )


@templates_app.command("verify")
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
    from ragaudit.generate.sql.templates import load_templates
    from ragaudit.steps.templates import verify_text_templates

    config = load_run(config_path, example, db, llm=llm)
    run = RunDir.from_config(config)
    run.lock("templates verify")
    run.record_step(config, "templates verify")
    total = len(load_templates(run.templates_sql).templates)
    bar = _counting_bar()
    with llm_for(config, run, "verify", True) as client, bar:
        task = bar.add_task("verifying", total=total)
        result = verify_text_templates(
            config, run, client, recheck=recheck, on_template=lambda _t, _n: bar.advance(task)
        )
    _print_wordings(result)


@templates_app.command("check")
def templates_check(
    config_path: ConfigOption = None,
    example: ExampleOption = False,
    db: DbOption = None,
) -> None:
    """Revalidate templates/sql.yaml and templates/text.yaml against the database; each
    problem names the file and the line."""
    from ragaudit.steps.templates import check

    config = load_run(config_path, example, db)
    run = RunDir.from_config(config)
    problems = check(config, run)
    for problem in problems:
        err_console.print(problem, markup=False)
    if problems:
        raise typer.Exit(code=1)
    console.print("templates are valid", markup=False)


@app.command("generate")
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


@app.command("run")
def run_cmd(
    config_path: ConfigOption = None,
    system: Annotated[
        list[str] | None, typer.Option("--system", help="Only this system (repeatable).")
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Only the first N queries of the dataset.")
    ] = None,
    retry_errors: Annotated[
        bool,
        typer.Option("--retry-errors", help="Ask again the queries whose record has an error."),
    ] = False,
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", min=1, help="Queries in flight (overrides).")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=0.001, help="Per-query timeout in seconds.")
    ] = None,
    llm: LLMOption = None,
) -> None:
    """Ask every system under test every query: responses/<system>.jsonl, one line per
    query. Resumable: a rerun asks only what is missing."""

    from ragaudit.steps.run import llm_model_of, run_systems, selected_systems
    from ragaudit.systems.factory import needs_llm

    config = load_run(config_path, llm=llm)
    if concurrency:
        config.harness.concurrency = concurrency
    if timeout:
        config.harness.timeout_s = timeout
    chosen = selected_systems(config, system)
    run = RunDir.from_config(config).create()
    run.lock("run")
    run.record_step(
        config,
        "run",
        {"system": system, "limit": limit, "retry_errors": retry_errors, "timeout": timeout},
    )
    models = [llm_model_of(config, sc) for sc in chosen if needs_llm(sc)]
    progress = _counting_bar(rate=True, transient=False)

    def hooks(name: str):  # type: ignore[no-untyped-def]
        task = progress.add_task(escape(name), total=None, start=False, rate="")
        asked = [0, time.perf_counter()]

        def on_start(total: int, done: int) -> None:
            # reset: records from an earlier run must not count in the rate and the ETA
            progress.reset(task, total=total, completed=done, start=True)
            asked[1] = time.perf_counter()

        def advance(n: int) -> None:
            asked[0] += n
            rate = asked[0] / max(time.perf_counter() - asked[1], 1e-9)
            progress.update(task, advance=n, rate=f"{rate:.1f}/s")

        return on_start, advance

    with llm_clients(config, run, "run", models) as clients:
        from ragaudit import aio

        runner = next(iter(clients.values())).run if clients else aio.run
        with progress:
            results = runner(
                run_systems(
                    config,
                    run,
                    chosen,
                    clients,
                    limit=limit,
                    retry_errors=retry_errors,
                    progress=hooks,
                )
            )
    table = Table(title=f"Responses -> {run.responses_dir}", title_justify="left")
    for header in ("system", "asked now", "already done", "errors", "queries/s", "tokens"):
        table.add_column(header, justify="left" if header == "system" else "right")
    for name, s in results.items():
        table.add_row(
            escape(name),
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


@app.command("world")
def world_cmd(
    out: Annotated[Path, typer.Argument(help="Folder to write the world into.")] = Path("world"),
    size: Annotated[
        int, typer.Option("--size", min=20, help="Rows across all tables (50 to 1,000,000+).")
    ] = 60,
    seed: Annotated[int, typer.Option("--seed", help="Same seed, same world.")] = 0,
    engine: Annotated[str, typer.Option("--engine", help="sqlite or duckdb.")] = "sqlite",
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
        str,
        typer.Option(
            "--on-failure",
            help="A report whose rewrite fails the check even after a repair: keep its "
            "template wording (template) or leave it out of the corpus (drop).",
        ),
    ] = "template",
) -> None:
    """Generate a fictitious company (database and project reports) to test RAG on."""
    from ragaudit.world.build import WorldSummary, build_world, read_world

    start = time.perf_counter()
    if on_failure not in ("template", "drop"):
        raise UserError(f"--on-failure {on_failure!r}: use template or drop")
    summary: WorldSummary | None = None
    if llm and not force:  # an unfinished rewrite of this very world goes on
        summary = read_world(out, size=size, seed=seed, engine=engine)
    if summary is None:
        with err_console.status("generating") as status:
            summary = build_world(
                out,
                size=size,
                seed=seed,
                engine=engine,
                force=force,
                on_step=lambda step: status.update(f"generating: {step}"),
            )
    rewrite = None
    if llm:
        rewrite = _rewrite_world(out, model, on_failure)
        summary = read_world(out, size=size, seed=seed, engine=engine) or summary
    table = Table(title=f"World -> {out}", title_justify="left")
    table.add_column("")
    table.add_column("count", justify="right")
    for name, n in summary.rows.items():
        table.add_row(f"{name} rows", str(n))
    table.add_row("documents (project reports)", str(summary.documents))
    table.add_row("facts stated in documents", str(summary.facts))
    if rewrite is not None:
        table.add_row("rewritten by the LLM, checked", str(rewrite.rewritten))
        table.add_row("repaired after a failed check", str(len(rewrite.repaired)))
        kept = "kept in template wording" if on_failure == "template" else "dropped"
        table.add_row(f"failed the check twice ({kept})", str(len(rewrite.failed)))
    console.print(table)
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


def _rewrite_world(out: Path, model: str | None, on_failure: str) -> RewriteSummary:
    """Rewrite the world's reports with the LLM named by its ragaudit.yaml (or ``model``),
    with a progress bar; the LLM cache and usage live in the world folder."""

    from ragaudit.steps.world import rewrite_world

    config = load_config(out / "ragaudit.yaml")
    if model:
        config.llm.model = model
    run = RunDir(out)
    run.llm_cache.parent.mkdir(parents=True, exist_ok=True)
    bar = _counting_bar()
    task = bar.add_task("rewriting reports", total=None)
    with llm_for(config, run, "world --llm", True) as client, bar:
        assert client is not None
        return rewrite_world(
            out,
            client,
            on_failure=on_failure,  # type: ignore[arg-type]
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )


@app.command("judge")
def judge_cmd(
    config_path: ConfigOption = None,
    system: Annotated[
        list[str] | None, typer.Option("--system", help="Only this system (repeatable).")
    ] = None,
    samples: Annotated[
        int, typer.Option("--samples", min=1, help="Judge k times with the LLM; majority vote.")
    ] = 1,
    audit: Annotated[
        int, typer.Option("--audit", min=0, help="Re-judge N deterministic decisions with the LLM.")
    ] = 0,
    closed_domain: Annotated[
        bool,
        typer.Option(
            "--closed-domain",
            help="A retrieval miss, or a question no document holds, makes the answer incorrect.",
        ),
    ] = False,
    retrieval_rule: Annotated[
        str, typer.Option("--retrieval-rule", help=f"{RULE_HELP}.")
    ] = DEFAULT_RULE,
    no_llm: Annotated[
        bool, typer.Option("--no-llm", help="Matchers only; undecided answers count incorrect.")
    ] = False,
    llm: LLMOption = None,
) -> None:
    """Judge every response: deterministic matchers first, the LLM judge for the rest;
    writes judgements/<system>.jsonl (resumable)."""
    from ragaudit.judge.retrieval import check_rule
    from ragaudit.steps.judge import judge_run

    check_rule(retrieval_rule)
    config = load_run(config_path, llm=llm)
    run = RunDir.from_config(config).create()
    run.lock("judge")
    run.record_step(
        config,
        "judge",
        {
            "system": system,
            "samples": samples,
            "audit": audit,
            "closed_domain": closed_domain,
            "retrieval_rule": retrieval_rule,
            "no_llm": no_llm,
        },
    )
    with llm_for(config, run, "judge", not no_llm) as client:
        report = judge_run(
            run,
            client,
            systems=system,
            samples=samples,
            audit=audit,
            closed_domain=closed_domain,
            rule=retrieval_rule,  # type: ignore[arg-type]
        )
    for warning in report.warnings:
        err_console.print(f"warning: {warning}", markup=False, style="yellow")
    for name, entry in report.systems.items():
        methods = ", ".join(f"{m} {n}" for m, n in sorted(entry["methods"].items()))
        console.print(
            f"{name}: judged {entry['judged_now']} now, {entry['already_judged']} "
            f"before ({methods or 'nothing new'})",
            markup=False,
        )
        if entry.get("llm_sample_agreement") is not None:
            console.print(
                f"  LLM sample agreement: {entry['llm_sample_agreement']:.0%}", markup=False
            )
        if "audit" in entry:
            a = entry["audit"]
            failed = f" ({a['failed']} could not be re-judged)" if a["failed"] else ""
            console.print(
                f"  audit: {a['disagreements']} of {a['audited']} deterministic "
                f"decisions disagree with the LLM judge{failed}",
                markup=False,
            )
        if entry["judge_failed"]:
            first = entry["judge_failures"][0]
            console.print(
                f"  {entry['judge_failed']} judgements failed, recorded as judge-failed and "
                f"left out of the analysis (first: {first['query_id']}: {first['reason']}); "
                "rerun ragaudit judge to retry them",
                markup=False,
            )
    failed = sum(e["judge_failed"] for e in report.systems.values())
    asked = sum(
        n for e in report.systems.values() for m, n in e["methods"].items() if m.startswith("llm")
    )
    if failed and not asked:
        raise UserError(
            f"the LLM judge failed on all {failed} answers it was asked about "
            f"(first: {_first_failure(report)}); nothing was judged by the LLM"
        )


def _first_failure(report: JudgeReport) -> str:
    """The first judge failure of a report, as 'query: reason'."""
    for entry in report.systems.values():
        if entry["judge_failures"]:
            first = entry["judge_failures"][0]
            return f"{first['query_id']}: {first['reason']}"
    return "no reason recorded"


@app.command("analyze")
def analyze_cmd(
    config_path: ConfigOption = None,
    neutral: Annotated[
        list[Path] | None,
        typer.Option(
            "--neutral",
            help="Neutral JSONL results of a system ragaudit did not run (file or folder; "
            "repeatable). Default: the run's dataset and judgements.",
        ),
    ] = None,
    retrieval_rule: Annotated[
        str, typer.Option("--retrieval-rule", help=f"{RULE_HELP}.")
    ] = DEFAULT_RULE,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap and permutation seed.")] = 0,
    system: Annotated[
        str, typer.Option("--system", help="Name of the system in --neutral files.")
    ] = "external",
    llm_only: Annotated[
        str | None,
        typer.Option(
            "--llm-only",
            help="System answering without retrieval: flags the "
            "groups it answers (open domain) and gives Acc_retrieval_db without them.",
        ),
    ] = None,
    outcome: Annotated[
        str,
        typer.Option(
            "--outcome",
            help="answer (judgements) or retrieval (responses: retrieval correctness by the "
            "retrieval rule is analyzed as the outcome; no judging needed).",
        ),
    ] = "answer",
) -> None:
    """Groups, robustness, retrieval database and module metrics, and paired tests:
    summary.json, summary.md and drilldown.jsonl in the run directory."""
    from ragaudit.judge.retrieval import check_rule
    from ragaudit.steps.analyze import (
        BLAME_HEADERS,
        METRIC_NAMES,
        blame_rows,
        default_neutral,
        retrieval_queries,
        run_analysis,
        show,
    )

    check_rule(retrieval_rule)
    if outcome not in ("answer", "retrieval"):
        raise UserError(f"--outcome {outcome!r}: use answer or retrieval")
    config = resolve_config(config_path)
    run = RunDir.from_config(config)
    run.lock("analyze")
    run.record_step(
        config,
        "analyze",
        {
            "neutral": [str(p) for p in neutral] if neutral else None,
            "retrieval_rule": retrieval_rule,
            "seed": seed,
            "system": system if neutral else None,
            "llm_only": llm_only,
            "outcome": outcome,
        },
    )
    result = run_analysis(
        run,
        neutral=default_neutral(neutral or []),
        rule=retrieval_rule,  # type: ignore[arg-type]
        seed=seed,
        system=system,
        llm_only=llm_only,
        outcome=outcome,  # type: ignore[arg-type]
    )
    if outcome == "retrieval":
        console.print(f"outcome: retrieval correctness ({retrieval_rule})", markup=False)
    for warning in result.warnings:
        err_console.print(f"warning: {warning}", markup=False, style="yellow")
    for system, summary in result.summaries.items():
        closed = summary.acc_retrieval_db_closed
        extra = f"; closed domain {closed}" if closed is not None else ""
        if summary.knowledge_base_holes is not None:
            extra += f"; groups no document answers {summary.knowledge_base_holes}"
        table = Table(
            title=f"{system}  (acc_retrieval_db {summary.acc_retrieval_db}{extra})",
            title_justify="left",
        )
        table.add_column("metric")
        for variant in summary.variants:
            table.add_column(escape(variant), justify="right")
        for name in ("n_queries", "n_groups", "n_errors", *METRIC_NAMES):
            table.add_row(name, *(show(getattr(m, name)) for m in summary.variants.values()))
        table.add_row(
            "retrieval queries",
            *(escape(retrieval_queries(m)) for m in summary.variants.values()),
        )
        console.print(table)
    table = Table(title="Where the answers go wrong (shares of the queries)", title_justify="left")
    for header in BLAME_HEADERS:
        table.add_column(header, justify="left" if header in BLAME_HEADERS[:3] else "right")
    for row in blame_rows(result.summaries):
        table.add_row(*(escape(cell) for cell in row))
    console.print(table)
    for system_name, n in sorted(result.undecided.items()):
        console.print(
            f"{system_name}: {n} answers left out, the LLM judge failed on them "
            "(rerun ragaudit judge to retry them)",
            markup=False,
        )
    for comparison in result.comparisons:
        console.print(comparison["verdict"], markup=False)
    if result.ranking:
        from ragaudit.analysis.retrieval_metrics import ranking_columns

        table = Table(
            title="Retrieval ranking (means; intervals in summary.md)", title_justify="left"
        )
        names = ranking_columns(result.ranking)
        for header in ("system", "variant", *names):
            table.add_column(header, justify="left" if header in ("system", "variant") else "right")
        for name, entry in result.ranking.items():
            for variant, metrics in entry["variants"].items():
                table.add_row(
                    escape(name),
                    escape(variant),
                    *(show(metrics[m]["value"]) if m in metrics else "" for m in names),
                )
        console.print(table)
    console.print(f"wrote {run.summary}, {run.summary_md}, {run.drilldown}", markup=False)


@app.command("demo")
def demo_cmd(
    out: Annotated[Path, typer.Argument(help="Folder for the world and the run.")] = Path(
        "ragaudit-demo"
    ),
    size: Annotated[int, typer.Option("--size", min=20, help="Rows of the company.")] = 60,
    groups: Annotated[
        int, typer.Option("--groups", min=1, help="Semantic groups per question template.")
    ] = 3,
    templates: Annotated[
        int, typer.Option("--templates", min=1, max=6, help="Question templates.")
    ] = 4,
    no_llm: Annotated[
        bool, typer.Option("--no-llm", help="Word every question with the verbalizer.")
    ] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the world.")] = 0,
    llm: LLMOption = None,
) -> None:
    """Everything ragaudit does, offline, on a generated company: world, templates,
    dataset, two RAG systems, judging, analysis and report.html. Resumable."""

    from ragaudit.steps.demo import run_demo

    start = time.perf_counter()
    progress = _counting_bar()

    def hooks(name: str):  # type: ignore[no-untyped-def]
        task = progress.add_task(escape(name), total=None, start=False)

        def on_start(total: int, done: int) -> None:
            progress.reset(task, total=total, completed=done, start=True)

        return on_start, lambda n: progress.advance(task, n)

    with progress:
        result = run_demo(
            out,
            size=size,
            seed=seed,
            templates=templates,
            groups=groups,
            use_llm=not no_llm,
            llm=llm or "local",
            llm_for=lambda config, run, step: llm_for(config, run, step, True),
            progress=lambda step: err_console.print(f"demo: {step}", markup=False),
            run_hooks=hooks,
            judge_hooks=lambda name: hooks(f"judge {name}"),
        )
    table = Table(title="Where the time went", title_justify="left")
    for header in ("step", "seconds", ""):
        table.add_column(header, justify="right" if header == "seconds" else "left")
    for step, (seconds, note) in result.timings.items():
        table.add_row(step, f"{seconds:.1f}", escape(note))
    console.print(table)
    import json

    summary = json.loads(result.run.summary.read_text(encoding="utf-8"))
    for c in summary["comparisons"]:
        # keyword-top1, short vs long: accuracy and R of its answers and of its retrieval
        if c["a"]["system"] == c["b"]["system"] == "keyword-top1":
            console.print(c["verdict"], markup=False)
    console.print(
        f"demo finished in {time.perf_counter() - start:.0f} s; report: {result.report}",
        markup=False,
    )


@app.command("report")
def report_cmd(config_path: ConfigOption = None) -> None:
    """Write report.html: verdicts, metrics, charts, dataset, usage and drill-down, in one
    self-contained file (run ragaudit analyze first)."""
    from ragaudit.report.build import write_report

    config = resolve_config(config_path)
    run = RunDir.from_config(config)
    run.lock("report")
    path = write_report(run)  # from what the earlier steps recorded, ragaudit.yaml included
    run.record_step(config, "report")
    console.print(f"wrote {path}", markup=False)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app, turning user errors into one line."""
    try:
        app(args=argv, prog_name="ragaudit")
    except UserError as exc:
        err_console.print(f"error: {redact(str(exc))}", markup=False)
        sys.exit(exc.exit_code)
    finally:
        release_locks()
