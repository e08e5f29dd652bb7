"""Validation of SQL written by an LLM or a user before it reaches the database.

Accepted: exactly one SELECT (set operations of SELECTs and CTEs included) over tables and
columns that exist. Rejected, each with a one-line reason: several statements, DML, DDL,
PRAGMA, ATTACH, COPY, SELECT INTO, table functions and functions that touch files or other
servers, ``SELECT *`` where explicit columns are required, unknown tables, unknown columns,
and placeholders naming unknown columns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect, NormalizationStrategy
from sqlglot.errors import OptimizeError, SqlglotError
from sqlglot.optimizer.qualify import qualify

from ragaudit.db.placeholders import Placeholder, find_placeholders
from ragaudit.db.schema import SchemaInfo
from ragaudit.errors import SQLValidationError

_FORBIDDEN_NODES: tuple[type[exp.Expression], ...] = tuple(
    getattr(exp, name)
    for name in (
        "Insert",
        "Update",
        "Delete",
        "Merge",
        "Create",
        "Drop",
        "Alter",
        "Command",
        "Pragma",
        "Attach",
        "Detach",
        "Copy",
        "Use",
        "Set",
        "Transaction",
        "Commit",
        "Rollback",
        "LoadData",
        "Grant",
        "Revoke",
        "TruncateTable",
        "Analyze",
        "Kill",
        "Install",
    )
    if hasattr(exp, name)
)
_LEADING_KEYWORD = re.compile(r"^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*([A-Za-z]+)", re.DOTALL)
# Functions that read files, reach other servers or change state, in the dialects we run.
_FORBIDDEN_FUNCTIONS = re.compile(
    r"^(pg_read_file|pg_read_binary_file|pg_ls_dir|pg_stat_file|lo_import|lo_export|dblink.*|"
    r"pg_terminate_backend|pg_cancel_backend|pg_reload_conf|set_config|pg_sleep.*|"
    r"load_extension|readfile|writefile|edit|fts3_tokenizer|"
    r"read_csv.*|read_json.*|read_parquet|read_text|read_blob|parquet_scan|glob|"
    r"query_to_xml.*|copy_to|current_setting)$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ValidatedSQL:
    """A statement that passed validation, with what it reads."""

    sql: str
    expression: exp.Expression
    tables: tuple[str, ...]
    placeholders: tuple[Placeholder, ...]


def _reject(message: str) -> SQLValidationError:
    return SQLValidationError(message)


def _statement_kind(stmt: exp.Expr) -> str:
    if isinstance(stmt, exp.Command):
        return str(stmt.this).upper()
    return stmt.key.upper()


_FOLDS = {NormalizationStrategy.LOWERCASE: str.lower, NormalizationStrategy.UPPERCASE: str.upper}


def _folded_hint(name: str, real: str | None, dialect: str) -> str:
    """Why ``name`` (as the database reads it) is not ``real``, the name the database
    holds, where the two differ only in case: the dialect folds unquoted names."""
    if real is None or real == name:
        return ""
    strategy = Dialect.get_or_raise(dialect).NORMALIZATION_STRATEGY
    case = "lower" if strategy is NormalizationStrategy.LOWERCASE else "upper"
    engine = {"postgres": "PostgreSQL", "snowflake": "Snowflake", "oracle": "Oracle"}
    name_of = engine.get(dialect, dialect)
    return f' ({name_of} reads unquoted names in {case} case: write "{real}", quoted)'


def validate_select(
    sql: str,
    schema: SchemaInfo,
    *,
    dialect: str | None = None,
    allow_star: bool = False,
) -> ValidatedSQL:
    """Check that ``sql`` is a single read-only SELECT over known tables and columns.

    Raises :class:`SQLValidationError` with a one-line reason; returns the parsed statement.
    """
    dialect = dialect or {"postgresql": "postgres"}.get(schema.dialect, schema.dialect)
    text = sql.strip().rstrip(";").strip()
    if not text:
        raise _reject("empty SQL")
    leading = _LEADING_KEYWORD.match(text)
    first = leading.group(1).upper() if leading else ""
    if first and first not in {"SELECT", "WITH", "VALUES"}:
        raise _reject(f"only a single SELECT is allowed, not {first}")
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except SqlglotError as exc:
        detail = str(exc).splitlines()[0] if str(exc) else "parse error"
        raise _reject(f"not valid SQL ({dialect}): {detail}") from None
    if len(statements) != 1:
        raise _reject(f"exactly one statement is allowed, found {len(statements)}")
    stmt = statements[0]
    if not isinstance(stmt, exp.Select | exp.SetOperation):
        raise _reject(f"only a single SELECT is allowed, not {_statement_kind(stmt)}")
    for node in stmt.walk():
        if isinstance(node, _FORBIDDEN_NODES):
            raise _reject(f"only reading is allowed: the query contains {_statement_kind(node)}")
        if isinstance(node, exp.Select) and node.args.get("into") is not None:
            raise _reject("SELECT INTO creates a table: only reading is allowed")
        if isinstance(node, exp.Func):
            name = node.sql_name() if not isinstance(node, exp.Anonymous) else str(node.this)
            if _FORBIDDEN_FUNCTIONS.match(name or ""):
                raise _reject(f"function {name.lower()}() is not allowed")
    if not allow_star:
        for select in stmt.find_all(exp.Select):
            for projection in select.expressions:
                if isinstance(projection, exp.Star) or (
                    isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
                ):
                    raise _reject("SELECT * is not allowed: name the columns to return")
    cte_names = {cte.alias_or_name.lower() for cte in stmt.find_all(exp.CTE)}
    fold = _FOLDS.get(Dialect.get_or_raise(dialect).NORMALIZATION_STRATEGY)
    tables: list[str] = []
    for table in stmt.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            raise _reject(f"table functions are not allowed: {table.sql(dialect=dialect)[:60]}")
        name = table.name
        if name.lower() in cte_names:
            continue
        known = schema.table(name)
        if known is None:
            raise _reject(f"unknown table '{name}'")
        if fold is not None:  # PostgreSQL's "Client" is not its Client (read as client)
            read = name if table.this.quoted else fold(name)
            if read != known.name:
                raise _reject(f"unknown table '{read}'" + _folded_hint(read, known.name, dialect))
        if known.name not in tables:
            tables.append(known.name)
    placeholders = tuple(find_placeholders(sql))
    for ph in placeholders:
        table_info = schema.table(ph.table)
        if table_info is None or table_info.column(ph.column) is None:
            raise _reject(f"placeholder {ph.token} names an unknown column")
    try:
        qualify(
            stmt.copy(),
            schema=schema.for_sqlglot(dialect),
            dialect=dialect,
            validate_qualify_columns=True,
            quote_identifiers=False,
        )
    except OptimizeError as exc:
        message = str(exc).split(". Line")[0]
        match = re.search(r"[Cc]olumn[: ]+'?\"?([^'\"]+)\"?'?", message)
        if match and ("resolved" in message or "Unknown column" in message):
            name = match.group(1).strip()
            real = next(
                (
                    c.name
                    for t in schema.tables
                    for c in t.columns
                    if c.name.lower() == name.lower() and c.name != name
                ),
                None,
            )
            hint = _folded_hint(name, real, dialect) if fold is not None else ""
            raise _reject(f"unknown column '{name}'{hint}") from None
        raise _reject(f"the query does not fit the schema: {message}") from None
    return ValidatedSQL(sql=sql, expression=stmt, tables=tuple(tables), placeholders=placeholders)
