"""Templates written by an LLM: SQL templates per target of the schema, and text templates
per SQL template and style. The LLM writes wording and query logic, never facts: every SQL
template is validated and executed on the data, and every text template must carry
exactly its SQL template's placeholders.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field

from ragaudit.db.engine import Database
from ragaudit.db.schema import SchemaInfo, TableInfo
from ragaudit.errors import UserError
from ragaudit.generate.instantiate import iter_groups, plan
from ragaudit.generate.sql_templates import (
    SqlTemplate,
    check_template,
    new_templates,
    normalize_sql,
)
from ragaudit.generate.text_templates import dedupe, near_duplicate_key, placeholder_problem
from ragaudit.llm.client import LLMClient
from ragaudit.llm.parsing import fenced_blocks, parse_lines
from ragaudit.llm.types import Messages, assistant, system, user

# -- SQL templates ------------------------------------------------------------------------

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
            "template exists, reply with nothing."
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
    jobs = []
    for target in targets(schema, kinds):
        text = "\n\n".join(describe_table(tables[n], examples.get(n, {})) for n in target.tables)
        jobs.append(llm.acomplete(sql_prompt(target, text, extra_criteria or [])))
    replies = await asyncio.gather(*jobs)
    result = LLMSqlResult()
    seen_sql: dict[str, str] = {}
    seen_meaning: dict[tuple[str, frozenset[str]], str] = {}
    accepted: list[str] = []
    for reply in replies:
        candidates = recover_sql(reply.text)
        if not candidates and reply.text.strip():
            result.rejected.append((reply.text.strip()[:120], "no SQL found in the reply"))
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


# -- text templates -----------------------------------------------------------------------

STYLE_INSTRUCTIONS = {
    "short": "Short, fragmentary queries of a few words, like search-box input: no articles, "
    "no conjunctions, no full sentences.",
    "long": "Complete, natural sentences of at least 30 words that give some context about why "
    "the information is needed before asking for it. For example: 'I am preparing an overview "
    "of our records for a meeting with the management team next week, and for that I need to "
    "know one detail about a particular client: in which industry does it work?' (with the "
    "placeholder where the client is named)",
}


# Length rules of the built-in styles (the paper's Table 6): checked, not only asked for.
STYLE_WORDS = {"short": (1, 12), "long": (30, 400)}


def style_problem(style: str, text: str) -> str | None:
    """Why ``text`` does not fit a built-in style's length, or None."""
    bounds = STYLE_WORDS.get(style)
    if bounds is None:
        return None
    n = len(text.split())
    low, high = bounds
    if n < low:
        return f"{n} words; the {style} style needs at least {low}"
    if n > high:
        return f"{n} words; the {style} style allows at most {high}"
    return None


def text_prompt(template: SqlTemplate, style: str, instruction: str, n: int) -> Messages:
    """Ask for ``n`` wordings of a SQL template in one style."""
    tokens = ", ".join(f"'[{p.key}]'" for p in template.placeholder_list)
    return [
        system("You rephrase database queries as questions people would ask."),
        user(
            f"SQL query: {template.sql}\n\n"
            f"Write {n} different questions asking for what this query returns.\n"
            f"Style: {instruction}\n"
            f"Each question must contain exactly these placeholders, written as shown: {tokens}. "
            "Do not add other placeholders and do not put real values in their place.\n"
            "Reply with one question per line and nothing else."
        ),
    ]


@dataclass
class LLMTextResult:
    """Wordings kept per style, and rejected ones with their reason."""

    texts: dict[str, list[str]] = field(default_factory=dict)
    rejected: list[tuple[str, str, str]] = field(default_factory=list)  # style, text, reason


async def llm_text_templates(
    llm: LLMClient,
    template: SqlTemplate,
    styles: dict[str, str],
    n: int,
    attempts: int = 3,
) -> LLMTextResult:
    """``n`` wordings per style. Lines with missing or extra placeholders are rejected; while
    fewer than ``n`` usable ones remain, the model is asked again with the errors, up to
    ``attempts`` asks per style; near-duplicates are removed."""
    result = LLMTextResult()

    async def one(style: str, instruction: str) -> None:
        conversation = list(text_prompt(template, style, instruction, n))
        kept: list[str] = []
        for attempt in range(attempts):
            # Re-asks sample: at temperature 0 a model tends to repeat the rejected lines.
            params = None
            if attempt:
                base = llm.default_params
                params = base.model_copy(
                    update={"temperature": 0.7, "seed": (base.seed or 0) + attempt}
                )
            reply = (await llm.acomplete(conversation, params)).text
            problems = []
            for line in parse_lines(reply):
                problem = placeholder_problem(line, template.placeholder_list) or style_problem(
                    style, line
                )
                if problem:
                    result.rejected.append((style, line, problem))
                    problems.append(f"{line!r}: {problem}")
                elif near_duplicate_key(line) in {near_duplicate_key(k) for k in kept}:
                    result.rejected.append((style, line, "near-duplicate"))
                else:
                    kept.append(line)
            kept = dedupe(kept)
            if len(kept) >= n:
                break
            conversation += [
                assistant(reply),
                user(
                    f"{len(kept)} usable so far. Rejected: {'; '.join(problems[:3]) or 'none'}. "
                    f"Write {n - len(kept)} more, different from the usable ones, one per line."
                ),
            ]
        result.texts[style] = kept[:n]

    await asyncio.gather(*(one(style, text) for style, text in styles.items()))
    return result
