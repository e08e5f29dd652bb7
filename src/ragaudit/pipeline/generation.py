"""The template and dataset steps: ``templates sql``, ``templates text``, ``templates
check`` and ``generate``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragaudit.config import Config, GenerateOptions
from ragaudit.db import Database, SchemaInfo, introspect
from ragaudit.errors import ConfigError, UserError
from ragaudit.generate.dataset import DatasetStats, TemplateStats, generate
from ragaudit.generate.enumerate import enumerate_templates
from ragaudit.generate.instantiate import count_combinations, iter_groups, plan
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
) -> SqlTemplatesResult:
    """Write ``templates/sql.yaml`` from the schema enumerator or a reference JSON file.

    An existing file is the user's: it is kept as it is unless ``overwrite``.
    """
    path = run.templates_sql
    if path.exists() and not overwrite:
        return SqlTemplatesResult(path, False, load_templates(path).templates, [])
    db, schema = open_database(config)
    candidates = (
        import_reference_sql(from_reference) if from_reference else enumerate_templates(db, schema)
    )
    kept: list[SqlTemplate] = []
    rejected: list[tuple[str, str]] = []
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


def make_text_templates(
    config: Config,
    run: RunDir,
    *,
    references: dict[str, Path] | None = None,
    overwrite: bool = False,
) -> tuple[Path, bool, TextTemplates]:
    """Write ``templates/text.yaml``: from reference files (``{style: path}``) or the
    built-in verbalizer for every configured style. An existing file is kept unless
    ``overwrite``."""
    path = run.templates_text
    if path.exists() and not overwrite:
        return path, False, load_text_templates(path).templates
    sql = load_templates(run.templates_sql).templates
    texts: TextTemplates = {}
    if references:
        for style, ref in references.items():
            import_reference_text(ref, style, sql, into=texts)
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
    return path, True, texts


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
