"""What a SQL template asks, read from its SQL: its kind (:mod:`.kinds`), what a wording
says of it (the rows counted, the column compared, the year), and the tables and columns
it reaches (for the coverage report).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify

from ragaudit.db.schema import SchemaInfo
from ragaudit.generate.sql.kinds import Kind

if TYPE_CHECKING:
    from ragaudit.generate.sql.templates import SqlTemplate

_AGGREGATES: Mapping[type[exp.Expression], Kind] = {
    exp.Count: "count",
    exp.Sum: "sum",
    exp.Avg: "average",
    exp.Min: "minimum",
    exp.Max: "maximum",
}
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Reach:
    """What a template reads: its kind, and the (table, column) pairs it asks about or by
    (the answer, the aggregated or compared column, the placeholders' columns), join keys
    left out."""

    kind: Kind
    columns: frozenset[tuple[str, str]]
    tables: frozenset[str]


def _aggregate_kind(node: exp.Expression) -> Kind | None:
    found = node if isinstance(node, exp.AggFunc) else node.find(exp.AggFunc)
    if found is None:
        return None
    for cls, kind in _AGGREGATES.items():
        if isinstance(found, cls):
            return kind
    return None


def _is_yes_no(node: exp.Expression) -> bool:
    case = node if isinstance(node, exp.Case) else node.find(exp.Case)
    if case is None:
        return False
    said = {
        lit.this.lower()
        for lit in case.find_all(exp.Literal)
        if lit.is_string and lit.parent is not None and not isinstance(lit.parent, exp.Binary)
    }
    return said == {"yes", "no"}


def _has_year_bounds(tree: exp.Expression) -> bool:
    lower = any(
        isinstance(node.expression, exp.Literal) and _ISO_DATE.match(str(node.expression.this))
        for node in tree.find_all(exp.GTE)
    )
    upper = any(
        isinstance(node.expression, exp.Literal) and _ISO_DATE.match(str(node.expression.this))
        for node in tree.find_all(exp.LT)
    )
    return lower and upper


def _is_superlative(where: exp.Expression | None) -> bool:
    if where is None:
        return False
    for sub in where.find_all(exp.Subquery, exp.Exists):
        inner = sub.this if isinstance(sub, exp.Subquery) else sub
        if isinstance(sub, exp.Exists) and isinstance(sub.parent, exp.Not):
            return True
        if inner is not None and inner.find(exp.Max, exp.Min) is not None:
            return True
    return False


def _column_pairs(
    tree: exp.Expr, aliases: Mapping[str, str], schema: SchemaInfo
) -> set[tuple[str, str]]:
    """(table, column) of every column the template compares or returns, join keys out."""
    out: set[tuple[str, str]] = set()
    for column in tree.find_all(exp.Column):
        parent = column.parent
        if (
            isinstance(parent, exp.EQ)
            and isinstance(parent.left, exp.Column)
            and isinstance(parent.right, exp.Column)
        ):
            continue  # a join condition
        table = schema.table(aliases.get(column.table.lower(), column.table))
        info = table.column(column.name) if table is not None else None
        if table is not None and info is not None:
            out.add((table.name, info.name))
    return out


def _answer_is_child(tree: exp.Select, aliases: Mapping[str, str], schema: SchemaInfo) -> bool:
    """Several rows can answer: the answer's row is not reached from the rows the
    placeholders name by following the foreign keys each row holds (many to one), so
    some join on the way runs one to many (the tracks of an album, the playlists of a
    track)."""
    answer = tree.expressions[0].unalias()
    answer_alias = next((c.table.lower() for c in answer.find_all(exp.Column)), None)
    if answer_alias is None:
        return False
    named: set[str] = set()
    for literal in tree.find_all(exp.Literal):
        parent = literal.parent
        if literal.is_string and literal.this.startswith("[") and isinstance(parent, exp.EQ):
            other = parent.left if parent.right is literal else parent.right
            if isinstance(other, exp.Column):
                named.add(other.table.lower())
    if not named or answer_alias in named:
        return False
    reached = set(named)
    while True:
        grown = set(reached)
        for eq in tree.find_all(exp.EQ):
            left, right = eq.left, eq.right
            if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
                continue
            for mine, other in ((left, right), (right, left)):
                if mine.table.lower() not in reached or other.table.lower() in grown:
                    continue
                table = schema.table(aliases.get(mine.table.lower(), ""))
                target = aliases.get(other.table.lower(), "")
                if table is not None and any(
                    fk.ref_table.lower() == target
                    and mine.name.lower() in {c.lower() for c in fk.columns}
                    for fk in table.foreign_keys
                ):
                    grown.add(other.table.lower())
        if grown == reached:
            return answer_alias not in reached
        reached = grown


@dataclass(frozen=True)
class Asks:
    """What a template asks, as a wording says it: its kind; the table whose rows are
    counted, aggregated, listed or answered (``rows``); the column aggregated or compared
    (``measure``); a comparison's number; a date range's year; for a superlative, whether
    it asks for the most and, when ranked by a count, the table counted."""

    kind: Kind
    rows: str | None = None
    measure: str | None = None
    measure_is_date: bool = False
    threshold: str | None = None
    year: str | None = None
    most: bool = True
    by_count: str | None = None


def _placeholder_tables(tree: exp.Expression, aliases: Mapping[str, str]) -> set[str]:
    out = set()
    for literal in tree.find_all(exp.Literal):
        parent = literal.parent
        if literal.is_string and literal.this.startswith("[") and isinstance(parent, exp.EQ):
            other = parent.left if parent.right is literal else parent.right
            if isinstance(other, exp.Column):
                out.add(aliases.get(other.table.lower(), other.table.lower()))
    return out


def _column_of(
    node: exp.Expression | None, aliases: Mapping[str, str], schema: SchemaInfo
) -> tuple[str, str, bool] | None:
    """(table, column, holds dates) of the first column under ``node``."""
    column = None if node is None else (node if isinstance(node, exp.Column) else None)
    if node is not None and column is None:
        column = node.find(exp.Column)
    if column is None:
        return None
    table = schema.table(aliases.get(column.table.lower(), column.table))
    info = table.column(column.name) if table is not None else None
    if table is None or info is None:
        return None
    dated = info.is_temporal or "date" in info.name.lower()
    return table.name, info.name, dated


def _comparison(
    tree: exp.Expression | None, aliases: Mapping[str, str], schema: SchemaInfo
) -> tuple[tuple[str, str, bool], str] | None:
    """The first column compared to a number with > (or <), and the number."""
    if tree is None:
        return None
    for node in tree.find_all(exp.GT, exp.LT, exp.GTE, exp.LTE):
        if isinstance(node.expression, exp.Literal) and not node.expression.is_string:
            found = _column_of(node.this, aliases, schema)
            if found is not None and isinstance(node.this, exp.Column):
                return found, str(node.expression.this)
    return None


def _parsed(sql: str, schema: SchemaInfo, dialect: str) -> tuple[exp.Expr, dict[str, str]]:
    """The template qualified (as written where it cannot be), and its aliases' tables."""
    tree = sqlglot.parse_one(sql, read=dialect)
    with contextlib.suppress(sqlglot.errors.SqlglotError):
        tree = qualify(
            tree,
            schema=schema.for_sqlglot(dialect),
            dialect=dialect,
            validate_qualify_columns=False,
        )
    return tree, {t.alias_or_name.lower(): t.name.lower() for t in tree.find_all(exp.Table)}


def asks(sql: str, schema: SchemaInfo, *, dialect: str, declared: Kind | None = None) -> Asks:
    """What ``sql`` asks (see :class:`Asks`), for the verbalizer and the report. The SQL
    is taken as valid."""
    tree, aliases = _parsed(sql, schema, dialect)
    kind = declared or infer_kind_of(tree, aliases, schema)
    if not isinstance(tree, exp.Select) or not tree.expressions:
        return Asks(kind)
    answer = tree.expressions[0].unalias()
    answered = _column_of(answer, aliases, schema)
    rows = answered[0] if answered else None
    where = tree.args.get("where")
    if kind in ("count", "date_range"):
        named = _placeholder_tables(tree, aliases)
        if answered is not None:
            table = schema.table(answered[0])
            fk = next(
                (
                    fk
                    for fk in (table.foreign_keys if table else [])
                    if answered[1] in fk.columns and fk.ref_table.lower() not in named
                ),
                None,
            )
            rows = fk.ref_table if fk is not None else answered[0]
        else:
            rows = next(
                (
                    info.name
                    for t in tree.find_all(exp.Table)
                    if (info := schema.table(t.name)) is not None and t.name.lower() not in named
                ),
                None,
            )
        if kind == "date_range":
            for node in tree.find_all(exp.GTE):
                literal = node.expression
                if isinstance(literal, exp.Literal) and _ISO_DATE.match(str(literal.this)):
                    measured = _column_of(node.this, aliases, schema)
                    return Asks(
                        kind,
                        rows,
                        measured[1] if measured else None,
                        True,
                        year=str(literal.this)[:4],
                    )
        return Asks(kind, rows)
    if kind in ("sum", "average", "minimum", "maximum"):
        return Asks(kind, rows, answered[1] if answered else None, bool(answered and answered[2]))
    if kind == "superlative" and where is not None:
        for eq in where.find_all(exp.EQ):
            sub = eq.expression if isinstance(eq.expression, exp.Subquery) else None
            if sub is not None and sub.find(exp.Max, exp.Min) is not None:
                measured = _column_of(eq.this, aliases, schema)
                return Asks(
                    kind,
                    rows,
                    measured[1] if measured else None,
                    bool(measured and measured[2]),
                    most=sub.find(exp.Max) is not None,
                )
        counted = [
            info.name
            for t in where.find_all(exp.Table)
            if (info := schema.table(t.name)) is not None and info.name != rows
        ]
        return Asks(kind, rows, by_count=counted[-1] if counted else None)
    if kind in ("set", "yes_no"):
        source = answer.find(exp.Case) if kind == "yes_no" else where
        compared = _comparison(source, aliases, schema)
        if compared is not None:
            (_, column, dated), number = compared
            return Asks(kind, rows, column, dated, threshold=number)
        if kind == "yes_no" and answered is not None:
            return Asks(kind, rows, answered[1], answered[2])
    return Asks(kind, rows)


def reach(sql: str, schema: SchemaInfo, *, dialect: str, declared: Kind | None = None) -> Reach:
    """The kind of ``sql`` (``declared`` when given) and the columns it reaches. The SQL
    is taken as valid (``check_template`` has passed it)."""
    tree, aliases = _parsed(sql, schema, dialect)
    tables = frozenset(
        info.name for t in tree.find_all(exp.Table) if (info := schema.table(t.name)) is not None
    )
    kind = declared or infer_kind_of(tree, aliases, schema)
    return Reach(kind, frozenset(_column_pairs(tree, aliases, schema)), tables)


def infer_kind_of(tree: exp.Expr, aliases: Mapping[str, str], schema: SchemaInfo) -> Kind:
    """The kind a parsed, qualified template reads as (see the module's list)."""
    if not isinstance(tree, exp.Select) or not tree.expressions:
        return "lookup"
    answer = tree.expressions[0].unalias()
    if _is_yes_no(answer):
        return "yes_no"
    aggregate = _aggregate_kind(answer)
    if aggregate is not None:
        if aggregate == "count" and _has_year_bounds(tree):
            return "date_range"
        return aggregate
    if _is_superlative(tree.args.get("where")):
        return "superlative"
    if _answer_is_child(tree, aliases, schema):
        return "set"
    return "path" if len(set(aliases.values())) > 1 else "lookup"


def kind_of(template: SqlTemplate, schema: SchemaInfo, *, dialect: str) -> Kind:
    """The kind of ``template``: the one its file names, else the one its SQL reads as."""
    return template.kind or infer_kind(template.sql, schema, dialect=dialect)


def infer_kind(sql: str, schema: SchemaInfo, *, dialect: str) -> Kind:
    """The kind ``sql`` reads as, for a template whose file names none."""
    return reach(sql, schema, dialect=dialect).kind


__all__ = ["Asks", "Reach", "asks", "infer_kind", "kind_of", "reach"]
