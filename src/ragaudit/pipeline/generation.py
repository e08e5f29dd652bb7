"""The template and dataset steps: ``templates sql``, ``templates text``, ``templates
check`` and ``generate``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragaudit.config import Config, GenerateOptions
from ragaudit.db import Database, SchemaInfo, introspect
from ragaudit.errors import ConfigError, UserError
from ragaudit.generate.dataset import DatasetStats, TemplateStats, generate
from ragaudit.generate.enumerate import enumerate_templates
from ragaudit.generate.instantiate import count_combinations, iter_groups, plan
from ragaudit.generate.llm_templates import (
    STYLE_INSTRUCTIONS,
    LLMTextResult,
    llm_sql_templates,
    llm_text_templates,
)
from ragaudit.generate.sql_templates import (
    SqlTemplate,
    TemplateFileError,
    check_template,
    import_reference_sql,
    load_templates,
    save_templates,
)
from ragaudit.generate.text_templates import (
    TextTemplates,
    dedupe,
    import_reference_text,
    load_text_templates,
    placeholder_problem,
    save_text_templates,
)
from ragaudit.generate.verbalize import verbalize
from ragaudit.llm.client import LLMClient
from ragaudit.records.io import atomic_write_json, write_jsonl_atomic
from ragaudit.rundir import RunDir


def open_database(config: Config) -> tuple[Database, SchemaInfo]:
    """The configured database, read-only, and its schema."""
    if not config.database.url:
        raise ConfigError("no database configured: set database.url (or use --db / --example)")
    db = Database(config.database.url, timeout_s=config.database.timeout_s)
    db.check_connection()
    return db, introspect(db, tables=config.database.tables)


def _dialect(db: Database) -> str:
    return db.sqlglot_dialect


def template_counts(db: Database, schema: SchemaInfo, template: SqlTemplate) -> SqlTemplate:
    """The template with its tables, placeholders, combinations, groups and multi-answer
    groups filled in from the data."""
    shape = check_template(template.sql, schema, dialect=_dialect(db))
    plan_ = plan(template.sql, schema, dialect=_dialect(db))
    groups = multi = 0
    for group in iter_groups(db, plan_):
        groups += 1
        multi += group.is_multi
    return template.model_copy(
        update={
            "tables": list(shape.tables),
            "placeholders": [p.key for p in shape.placeholders],
            "combinations": count_combinations(db, plan_),
            "groups": groups,
            "multi_answer_groups": multi,
        }
    )


@dataclass
class SqlTemplatesResult:
    """What ``templates sql`` did."""

    path: Path
    written: bool
    templates: list[SqlTemplate]
    rejected: list[tuple[str, str]]  # (sql, reason)


def make_sql_templates(
    config: Config,
    run: RunDir,
    *,
    from_reference: Path | None = None,
    overwrite: bool = False,
    llm: LLMClient | None = None,
) -> SqlTemplatesResult:
    """Write ``templates/sql.yaml`` from the schema enumerator, the LLM
    (``templates.sql_generator: llm``) or a reference JSON file.

    An existing file is the user's: it is kept as it is unless ``overwrite``.
    """
    path = run.templates_sql
    if path.exists() and not overwrite:
        return SqlTemplatesResult(path, False, load_templates(path).templates, [])
    db, schema = open_database(config)
    rejected: list[tuple[str, str]] = []
    if from_reference:
        candidates = import_reference_sql(from_reference)
    elif config.templates.sql_generator == "llm":
        if llm is None:
            raise ConfigError("templates.sql_generator is llm but no LLM client was given")
        result = llm.run(
            llm_sql_templates(
                llm, db, schema, list(config.templates.targets), config.templates.criteria
            )
        )
        candidates, rejected = result.templates, list(result.rejected)
    else:
        candidates = enumerate_templates(db, schema)
    kept: list[SqlTemplate] = []
    for template in candidates:
        try:
            counted = template_counts(db, schema, template)
        except UserError as exc:
            rejected.append((template.sql, str(exc)))
            continue
        if not counted.groups:
            rejected.append((template.sql, "yields no answer on this data"))
            continue
        kept.append(counted)
    run.create()
    save_templates(path, kept)
    db.dispose()
    return SqlTemplatesResult(path, True, kept, rejected)


@dataclass
class TextTemplatesResult:
    """What ``templates text`` did."""

    path: Path
    written: bool
    texts: TextTemplates
    rejected: list[tuple[str, str, str, str]]  # template id, style, text, reason


def style_instructions(config: Config) -> dict[str, str]:
    """The instruction of every configured style (built-in or from the config)."""
    out = {}
    for style in config.templates.styles:
        instruction = config.templates.style_instructions.get(style) or STYLE_INSTRUCTIONS.get(
            style
        )
        if instruction is None:
            raise ConfigError(
                f"templates.styles: style '{style}' needs an instruction in "
                f"templates.style_instructions.{style}"
            )
        out[style] = instruction
    return out


def make_text_templates(
    config: Config,
    run: RunDir,
    *,
    references: dict[str, Path] | None = None,
    overwrite: bool = False,
    llm: LLMClient | None = None,
) -> TextTemplatesResult:
    """Write ``templates/text.yaml``: from reference files (``{style: path}``), the LLM
    (``templates.text_generator: llm``) or the built-in verbalizer, for every configured
    style. An existing file is kept unless ``overwrite``."""
    path = run.templates_text
    if path.exists() and not overwrite:
        return TextTemplatesResult(path, False, load_text_templates(path).templates, [])
    sql = load_templates(run.templates_sql).templates
    texts: TextTemplates = {}
    rejected: list[tuple[str, str, str, str]] = []
    if references:
        for style, ref in references.items():
            import_reference_text(ref, style, sql, into=texts)
    elif config.templates.text_generator == "llm":
        if llm is None:
            raise ConfigError("templates.text_generator is llm but no LLM client was given")
        styles = style_instructions(config)
        client = llm

        async def all_templates() -> list[LLMTextResult]:
            jobs = [llm_text_templates(client, t, styles, config.templates.per_style) for t in sql]
            return list(await asyncio.gather(*jobs))

        for template, result in zip(sql, llm.run(all_templates()), strict=True):
            texts[template.id] = result.texts
            rejected += [(template.id, *item) for item in result.rejected]
    else:
        db, schema = open_database(config)
        for template in sql:
            for style in config.templates.styles:
                wordings = verbalize(
                    template, schema, style, config.templates.per_style, config.templates.seed
                )
                texts.setdefault(template.id, {})[style] = dedupe(wordings)
        db.dispose()
    save_text_templates(path, texts)
    return TextTemplatesResult(path, True, texts, rejected)


def check(config: Config, run: RunDir) -> list[str]:
    """Revalidate both template files against the database; one line per problem, each
    naming the file and the line."""
    loaded = load_templates(run.templates_sql)
    db, schema = open_database(config)
    problems: list[str] = []
    valid_ids = set()
    for template in loaded.templates:
        at = loaded.lines[template.id]
        try:
            counted = template_counts(db, schema, template)
        except UserError as exc:
            problems.append(f"{at}: {template.id}: {exc}")
            continue
        if not counted.groups:
            problems.append(f"{at}: {template.id}: yields no answer on this data")
            continue
        valid_ids.add(template.id)
    if run.templates_text.exists():
        texts = load_text_templates(run.templates_text)
        by_id = {t.id: t for t in loaded.templates}
        for (tid, style), at in texts.lines.items():
            template = by_id.get(tid)
            if template is None:
                problems.append(f"{at}: templates.{tid}: no SQL template has this id")
                continue
            item_lines = texts.item_lines[(tid, style)]
            for i, text in enumerate(texts.templates[tid][style]):
                problem = placeholder_problem(text, template.placeholder_list)
                if problem:
                    problems.append(
                        f"{item_lines[i]}: templates.{tid}.{style}[{i}]: {problem}: {text!r}"
                    )
    db.dispose()
    return problems


def generate_dataset(
    config: Config,
    run: RunDir,
    options: GenerateOptions,
    *,
    on_template: Callable[[SqlTemplate, TemplateStats], None] | None = None,
) -> DatasetStats:
    """Instantiate every template and write ``dataset.jsonl`` (atomically, streaming) and
    ``dataset.stats.json``."""
    problems = check(config, run)
    if problems:
        more = f" (and {len(problems) - 1} more; see ragaudit templates check)"
        raise TemplateFileError(problems[0] + (more if len(problems) > 1 else ""))
    templates = load_templates(run.templates_sql).templates
    texts = load_text_templates(run.templates_text).templates
    db, schema = open_database(config)
    stats = DatasetStats()
    records = generate(db, schema, templates, texts, options, stats=stats, on_template=on_template)
    write_jsonl_atomic(run.dataset, records)
    atomic_write_json(
        run.dataset_stats,
        {
            "table2": stats.table2(),
            "templates": [vars(t) for t in stats.templates],
            "options": options.model_dump(mode="json"),
        },
    )
    db.dispose()
    return stats
