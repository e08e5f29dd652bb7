"""SQL templates written by an LLM, per target of the schema (a table, tables joined by a
foreign key, tables linked through an association table). The LLM writes query logic,
never facts: every template is validated and executed on the data before it is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ragaudit.aio import gather_all
from ragaudit.db.engine import Database
from ragaudit.db.schema import SchemaInfo, TableInfo
from ragaudit.errors import FATAL_LLM_ERRORS, LLMError, UserError
from ragaudit.generate.sql.instantiate import iter_groups, plan
from ragaudit.generate.sql.templates import (
    SqlTemplate,
    check_template,
    new_templates,
    normalize_sql,
)
from ragaudit.llm.client import LLMClient
from ragaudit.llm.parsing import fenced_blocks
from ragaudit.llm.types import Messages, system, user

SQL_CRITERIA = [
    "Use only SELECT queries that return exactly one column: the answer.",
    "Name the selected column; never use '*'.",
    "Select only meaningful, descriptive columns a non-technical user would ask about; never "
    "record identifiers (id columns, keys).",
    "Put at least one placeholder in the WHERE clause, written '[Table.Column]' with the "
    "quotes, naming the column whose values fill it, e.g. WHERE Name = '[Client.Name]'.",
    "Never select a column that is compared to a placeholder (the question would give the "
    "answer away).",
    "Each query must have one single answer for each placeholder value.",
    "Do not write two queries that ask the same thing in different SQL.",
]


# What the model replies when a target has no acceptable template: a word, so that an
# empty reply always means a failed call (asked again, never cached).
NO_TEMPLATE = "NONE"


@dataclass(frozen=True)
class Target:
    """A part of the schema the LLM writes templates for: one table, or tables joined."""

    tables: tuple[str, ...]
    kind: str  # tables | foreign_keys | associations
    joins: tuple[str, ...] = ()


def targets(schema: SchemaInfo, kinds: list[str]) -> list[Target]:
    """Every single table, every pair joined by a foreign key, and every pair linked through
    an association table (a table with two foreign keys), as selected by ``kinds``."""
    names = {t.name.lower(): t for t in schema.tables if t.row_count}
    out: list[Target] = []
    if "tables" in kinds:
        out += [Target((t.name,), "tables") for t in names.values()]
    for t in names.values():
        fks = [fk for fk in t.foreign_keys if fk.ref_table.lower() in names]
        if "foreign_keys" in kinds:
            for fk in fks:
                ref = names[fk.ref_table.lower()]
                on = " AND ".join(
                    f"{t.name}.{a} = {ref.name}.{b}"
                    for a, b in zip(fk.columns, fk.ref_columns, strict=True)
                )
                out.append(Target((t.name, ref.name), "foreign_keys", (on,)))
        if "associations" in kinds and len(fks) == 2:
            r1, r2 = (names[fk.ref_table.lower()] for fk in fks)
            joins = tuple(
                " AND ".join(
                    f"{t.name}.{a} = {r.name}.{b}"
                    for a, b in zip(fk.columns, fk.ref_columns, strict=True)
                )
                for fk, r in zip(fks, (r1, r2), strict=True)
            )
            out.append(Target((r1.name, t.name, r2.name), "associations", joins))
    return out


def describe_table(table: TableInfo, examples: dict[str, list[str]]) -> str:
    """One table for a prompt: columns with types, keys and a few example values."""
    fks = {c: f"-> {fk.ref_table}" for fk in table.foreign_keys for c in fk.columns}
    cols = []
    for col in table.columns:
        marks = [col.type or "?"]
        if col.primary_key:
            marks.append("primary key")
        if col.name in fks:
            marks.append(f"foreign key {fks[col.name]}")
        sample = examples.get(col.name)
        if sample:
            marks.append("e.g. " + ", ".join(repr(v) for v in sample))
        cols.append(f"  - {col.name} ({'; '.join(marks)})")
    return f"Table {table.name} ({table.row_count} rows):\n" + "\n".join(cols)


def example_values(db: Database, table: TableInfo, k: int = 3) -> dict[str, list[str]]:
    """A few distinct values per column, so the model sees what the data looks like."""
    q = db.engine.dialect.identifier_preparer.quote
    out: dict[str, list[str]] = {}
    for col in table.columns:
        rows = db.execute(
            f"SELECT DISTINCT {q(col.name)} FROM {q(table.name)} WHERE {q(col.name)} IS NOT NULL",
            max_rows=k,
        ).rows
        out[col.name] = [str(r[0])[:40] for r in rows]
    return out


def sql_prompt(target: Target, schema_text: str, extra: list[str]) -> Messages:
    """Ask for SQL templates over one target of the schema."""
    criteria = "\n".join(f"- {c}" for c in [*SQL_CRITERIA, *extra])
    joins = "".join(f"\nJoin condition: {j}" for j in target.joins)
    return [
        system("You write SQL query templates for testing a question-answering system."),
        user(
            f"Write SQL query templates over these tables.\n\n{schema_text}{joins}\n\n"
            f"Criteria:\n{criteria}\n\n"
            "Reply with one SQL template per line and nothing else. If no acceptable "
            f"template exists, reply with the word {NO_TEMPLATE}."
        ),
    ]


# A candidate starts at any statement keyword (DML and DDL too, so that they are rejected
# with their reason rather than silently skipped), after optional numbering or a bullet.
_STATEMENT = re.compile(
    r"^\s*(?:\d+[.)]\s*|[-*]\s*)?"
    r"(select|with|insert|update|delete|drop|create|alter|pragma|attach|copy|replace|"
    r"truncate|merge|vacuum|grant)\b",
    re.IGNORECASE,
)
# Lines that continue a statement begin with a clause keyword, an operator or punctuation.
_CONTINUATION = re.compile(
    r"^\s*((from|where|join|inner|left|right|full|cross|on|and|or|not|group|order|having|"
    r"limit|offset|union|intersect|except|as|in|is|like|between|case|when|then|else|end)\b"
    r"|[(),=<>'\"*.]|[a-z_][\w.]*\s*(=|<|>|,))",
    re.IGNORECASE,
)


def recover_sql(reply: str) -> list[str]:
    """SQL statements in a reply that may wrap them in prose, numbering or markdown fences."""
    blocks = fenced_blocks(reply) or [reply]
    statements: list[str] = []
    for block in blocks:
        current: list[str] = []
        for line in block.splitlines():
            start = _STATEMENT.match(line)
            if start:
                if current:
                    statements.append(" ".join(current))
                current = [line[start.start(1) :].strip()]
            elif current and line.strip() and _CONTINUATION.match(line):
                current.append(line.strip())
            elif current:
                statements.append(" ".join(current))
                current = []
            if current and current[-1].endswith(";"):
                statements.append(" ".join(current))
                current = []
        if current:
            statements.append(" ".join(current))
    # "SELECT 1; DROP TABLE t" stays one candidate: validation rejects it, with its reason.
    return [normalize_sql(s) for s in statements if s.strip()]


@dataclass
class LLMSqlResult:
    """Templates accepted, and every rejected candidate with its reason."""

    templates: list[SqlTemplate] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)


def _accept(db: Database, schema: SchemaInfo, sql: str) -> str | None:
    """None if ``sql`` is a usable template, else why not."""
    try:
        groups = list(iter_groups(db, plan(sql, schema, dialect=db.sqlglot_dialect)))
    except UserError as exc:
        return str(exc)
    if not groups:
        return "yields no answer on this data"
    if all(g.is_multi for g in groups):
        return "every combination has several answers (one answer per query is required)"
    return None


async def llm_sql_templates(
    llm: LLMClient,
    db: Database,
    schema: SchemaInfo,
    kinds: list[str],
    extra_criteria: list[str] | None = None,
) -> LLMSqlResult:
    """Ask the LLM for templates over every target, then keep only those that validate,
    yield answers, and are not duplicates (same SQL, or same answer asked by the same
    placeholders)."""
    tables = {t.name: t for t in schema.tables}
    examples = {name: example_values(db, t) for name, t in tables.items() if t.row_count}
    result = LLMSqlResult()

    async def ask(target: Target) -> str:
        """The model's reply for one target; a failed call is that target's rejection."""
        text = "\n\n".join(describe_table(tables[n], examples.get(n, {})) for n in target.tables)
        try:
            return (await llm.acomplete(sql_prompt(target, text, extra_criteria or []))).text
        except FATAL_LLM_ERRORS:
            raise
        except LLMError as exc:
            result.rejected.append((" + ".join(target.tables), f"the LLM failed: {exc}"))
            return NO_TEMPLATE

    replies = await gather_all(*(ask(t) for t in targets(schema, kinds)))
    seen_sql: dict[str, str] = {}
    seen_meaning: dict[tuple[str, frozenset[str]], str] = {}
    accepted: list[str] = []
    for reply in replies:
        candidates = recover_sql(reply)
        if not candidates and reply.strip().strip(".").upper() == NO_TEMPLATE:
            continue
        if not reply.strip():
            result.rejected.append(("(empty reply)", "the LLM replied nothing, three times"))
            continue
        if not candidates and reply.strip():
            result.rejected.append((reply.strip()[:120], "no SQL found in the reply"))
        for sql in candidates:
            if sql in seen_sql:
                result.rejected.append((sql, "duplicate of an earlier template"))
                continue
            problem = _accept(db, schema, sql)
            if problem:
                result.rejected.append((sql, problem))
                continue
            shape = check_template(sql, schema, dialect=db.sqlglot_dialect)
            # Same answer column asked by the same placeholders: the same question.
            answer = (
                f"{shape.answer_table}.{shape.answer_column}"
                if shape.answer_column
                else (shape.answer)
            )
            meaning = (answer.lower(), frozenset(p.key.lower() for p in shape.placeholders))
            if meaning in seen_meaning:
                result.rejected.append((sql, f"asks the same as: {seen_meaning[meaning]}"))
                continue
            seen_sql[sql] = sql
            seen_meaning[meaning] = sql
            accepted.append(sql)
    result.templates = new_templates(accepted, "llm")
    return result
