"""SQL templates: one query logic with GRAMMAR placeholders, e.g.
``SELECT Industry FROM Client WHERE Name = '[Client.Name]'``.

``templates/sql.yaml`` is the source of truth: users add, delete and edit templates by
hand, ragaudit never overwrites it unless asked (``--overwrite``), and
:func:`check_templates` revalidates it with errors that name the file and the line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify

from ragaudit.db.placeholders import Placeholder, find_placeholders
from ragaudit.db.schema import SchemaInfo
from ragaudit.db.validate import validate_select
from ragaudit.errors import SQLValidationError, UserError
from ragaudit.generate.sql.kinds import Kind
from ragaudit.records.io import atomic_write_text
from ragaudit.yamlfile import read_yaml, validate_model, where

Origin = Literal["enumerator", "llm", "reference", "user"]


class TemplateFileError(UserError):
    """A template file is malformed, or one of its templates is invalid."""


class SqlTemplate(BaseModel):
    """One SQL template as stored in ``templates/sql.yaml``.

    ``tables``, ``placeholders`` and the counts are written by ragaudit for the reader;
    only ``id``, ``sql``, ``origin`` and ``kind`` matter when the file is read back. A
    template without a ``kind`` is of the kind its SQL reads as
    (:func:`ragaudit.generate.sql.asks.infer_kind`).
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    sql: str = Field(min_length=1)
    origin: Origin = "user"
    kind: Kind | None = None
    tables: list[str] = Field(default_factory=list)
    placeholders: list[str] = Field(default_factory=list)
    combinations: int | None = None
    groups: int | None = None
    multi_answer_groups: int | None = None
    note: str | None = None

    @property
    def placeholder_list(self) -> list[Placeholder]:
        """The template's placeholders, in order of first appearance."""
        return find_placeholders(self.sql)


class SqlTemplateFile(BaseModel):
    """The whole ``templates/sql.yaml``."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    templates: list[SqlTemplate] = Field(default_factory=list)


@dataclass
class LoadedTemplates:
    """Templates read from a file, with the line of each one's ``sql`` for messages."""

    path: Path
    templates: list[SqlTemplate]
    lines: dict[str, str]  # template id -> "file:line"


def normalize_sql(sql: str) -> str:
    """One spelling per template: surrounding blanks and a trailing ``;`` removed, runs of
    white space folded (used to match templates across files)."""
    return " ".join(sql.strip().rstrip(";").split())


def template_id_for(sql: str, taken: set[str], name: str | None = None) -> str:
    """A readable, unique id: ``name`` if given, else ``<answer>-by-<placeholder columns>``."""
    if name is None:
        placeholders = find_placeholders(sql)
        match = re.search(
            r"select\s+(?:distinct\s+)?(.+?)\s+from\s", sql, re.IGNORECASE | re.DOTALL
        )
        answer = match.group(1).split(".")[-1] if match else "answer"
        keys = "-".join(f"{p.table}-{p.column}" for p in placeholders) or "all"
        name = f"{answer}-by-{keys}"
    base = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:80] or "t"
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}-{n}", n + 1
    taken.add(candidate)
    return candidate


def new_templates(
    sqls: list[str],
    origin: Origin,
    taken: set[str] | None = None,
    names: list[str] | None = None,
) -> list[SqlTemplate]:
    """Templates for SQL strings, with fresh unique ids (from ``names`` when given);
    duplicates (same normalized SQL) are kept once."""
    taken = set() if taken is None else taken
    seen: set[str] = set()
    out = []
    for i, sql in enumerate(sqls):
        norm = normalize_sql(sql)
        if norm in seen:
            continue
        seen.add(norm)
        name = names[i] if names else None
        out.append(SqlTemplate(id=template_id_for(norm, taken, name), sql=norm, origin=origin))
    return out


# -- checking -------------------------------------------------------------------------


@dataclass(frozen=True)
class TemplateShape:
    """What a valid template reads: its tables, placeholders and answer expression (and the
    table and column the answer comes from, when it is a plain column)."""

    tables: tuple[str, ...]
    placeholders: tuple[Placeholder, ...]
    answer: str
    answer_table: str | None = None
    answer_column: str | None = None


def check_template(sql: str, schema: SchemaInfo, *, dialect: str | None = None) -> TemplateShape:
    """Validate one template against the schema; :class:`SQLValidationError` says why not.

    Beyond the database layer's checks (one read-only SELECT over known tables and
    columns): exactly one projected column, at least one placeholder in WHERE, the question
    must not give the answer away (no projected column compared to a placeholder), and no
    LIMIT/OFFSET (set-based instantiation answers every combination at once).
    """
    dialect = dialect or {"postgresql": "postgres"}.get(schema.dialect, schema.dialect)
    validated = validate_select(sql, schema, dialect=dialect)
    stmt = validated.expression
    if not isinstance(stmt, exp.Select):
        raise SQLValidationError("set operations (UNION, ...) are not supported in templates")
    if len(stmt.expressions) != 1:
        raise SQLValidationError(
            f"a template returns exactly one column (the answer), this one returns "
            f"{len(stmt.expressions)}"
        )
    if not validated.placeholders:
        raise SQLValidationError("no placeholder: put at least one '[Table.Column]' in WHERE")
    where_clause = stmt.args.get("where")
    where_sql = where_clause.sql() if where_clause is not None else ""
    if not any(ph.token in where_sql for ph in validated.placeholders):
        raise SQLValidationError("no placeholder in WHERE: the question must name something")
    if stmt.args.get("limit") is not None or stmt.args.get("offset") is not None:
        raise SQLValidationError("LIMIT/OFFSET cannot apply per combination; remove it")
    # Compare fully qualified columns: t.Name and r.Name are different columns.
    qualified = qualify(
        stmt.copy(),
        schema=schema.for_sqlglot(dialect),
        dialect=dialect,
        validate_qualify_columns=False,
    )
    tables = {t.alias_or_name.lower(): t.name.lower() for t in qualified.find_all(exp.Table)}

    def ident(column: exp.Column) -> tuple[str, str]:
        return (tables.get(column.table.lower(), column.table.lower()), column.name.lower())

    projected = {ident(c) for c in qualified.expressions[0].find_all(exp.Column)}
    for literal in qualified.find_all(exp.Literal):
        parent = literal.parent
        if literal.is_string and literal.this.startswith("[") and isinstance(parent, exp.Binary):
            other = parent.left if parent.right is literal else parent.right
            if isinstance(other, exp.Column) and ident(other) in projected:
                raise SQLValidationError(
                    f"the answer column {other.name} is also compared to a placeholder: "
                    "the question would give the answer away"
                )
    answer = stmt.expressions[0].sql()
    answer_table = answer_column = None
    column = qualified.expressions[0].unalias()
    if isinstance(column, exp.Column):
        table_info = schema.table(tables.get(column.table.lower(), ""))
        column_info = table_info.column(column.name) if table_info else None
        if table_info is not None and column_info is not None:
            answer_table, answer_column = table_info.name, column_info.name
    return TemplateShape(
        validated.tables, validated.placeholders, answer, answer_table, answer_column
    )


# -- files ----------------------------------------------------------------------------


def load_templates(path: Path) -> LoadedTemplates:
    """Read ``templates/sql.yaml``; structural errors name the file, the line and the key."""
    data, root, source = read_yaml(path, "ragaudit templates sql writes one", TemplateFileError)
    if not isinstance(data, dict):
        raise TemplateFileError(f"{source}:1: expected a mapping with a 'templates' list")
    parsed = validate_model(SqlTemplateFile, data, source, root, TemplateFileError)
    lines: dict[str, str] = {}
    for i, template in enumerate(parsed.templates):
        at = where(source, root, ("templates", i, "sql"))
        if template.id in lines:
            raise TemplateFileError(
                f"{where(source, root, ('templates', i, 'id'))}: duplicate template id "
                f"'{template.id}' (first at {lines[template.id]})"
            )
        lines[template.id] = at
    return LoadedTemplates(path=path, templates=parsed.templates, lines=lines)


_HEADER = """\
# ragaudit SQL templates: the source of truth for `ragaudit generate`.
# Edit, add or delete templates freely; `ragaudit templates check` revalidates this file,
# and ragaudit never overwrites it unless you pass --overwrite.
# A template returns one column (the answer) and names what the question is about with
# placeholders '[Table.Column]' in WHERE. tables, placeholders and the counts are
# written by ragaudit for you to read; they are recomputed, not read back.
"""


def save_templates(path: Path, templates: list[SqlTemplate]) -> None:
    """Write the templates file atomically, one block per template."""
    data = SqlTemplateFile(templates=templates).model_dump(mode="json", exclude_none=True)
    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10_000)
    atomic_write_text(path, _HEADER + body)


def import_reference_sql(path: Path, taken: set[str] | None = None) -> list[SqlTemplate]:
    """Templates from the GRAMMAR reference tool's ``sql_templates.json``
    (``{"('table',)": [sql, ...], ...}``)."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise TemplateFileError(f"{path}: cannot read reference templates: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise TemplateFileError(f"{path}: expected {{table tuple: [SQL, ...]}}")
    sqls = [str(sql) for group in data.values() for sql in group]
    return new_templates(sqls, "reference", taken)
