"""Which parts of the schema the SQL templates reach: per table and per column, the
template kinds that ask about it or by it, and why where none does.

A column is reached by a template that returns it, aggregates or compares it, or names a
row by it (a placeholder); join keys are not counted (they reach nothing a user asks).
An unreached column is explained by what the enumerator's rules say of it (a key, mostly
NULL, long free text, its table unnamed and unreferenced) or, where it could be asked,
by the sample (``templates.per_kind``) or by the file (templates written by hand or by the
LLM that leave it out).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragaudit.db.engine import Database
from ragaudit.db.identity import is_id_like, namings
from ragaudit.db.schema import ColumnInfo, SchemaInfo, TableInfo
from ragaudit.errors import UserError
from ragaudit.generate.sql.asks import reach
from ragaudit.generate.sql.kinds import KINDS, Kind
from ragaudit.generate.sql.templates import SqlTemplate

MAX_NULL_FRACTION_ANSWER = 0.5
MAX_AVG_LENGTH = 80
NOT_SAMPLED = "could be asked, but the sample per table and kind left it out (templates.per_kind)"
NOT_IN_FILE = "no template of templates/sql.yaml asks about it"
ID_LIKE = "a key or an id: it joins rows, nobody asks for it"
UNNAMED_TEXT = (
    "nothing names its table's rows: only their numbers and dates are counted or "
    "aggregated, per row of a table they refer to"
)


@dataclass(frozen=True)
class ColumnCoverage:
    """One column: the kinds of the templates that reach it, and why none does."""

    kinds: tuple[Kind, ...]
    why: str | None = None


@dataclass
class TableCoverage:
    """One table: its rows, the kinds that reach it, each column's coverage, and why no
    template reads it (None where one does)."""

    rows: int
    kinds: tuple[Kind, ...]
    columns: dict[str, ColumnCoverage]
    why: str | None = None

    @property
    def reached(self) -> int:
        """Columns at least one template reaches."""
        return sum(1 for c in self.columns.values() if c.kinds)


@dataclass
class SchemaCoverage:
    """Per table (schema order) its coverage; ``templates`` counts the templates read."""

    tables: dict[str, TableCoverage] = field(default_factory=dict)
    templates: int = 0

    def to_dict(self) -> dict[str, Any]:
        """As JSON data (``templates/coverage.json``); :meth:`from_dict` reads it back."""
        return {
            "templates": self.templates,
            "tables": {
                name: {
                    "rows": t.rows,
                    "kinds": list(t.kinds),
                    "why": t.why,
                    "columns": {
                        c: {"kinds": list(cov.kinds), "why": cov.why}
                        for c, cov in t.columns.items()
                    },
                }
                for name, t in self.tables.items()
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SchemaCoverage:
        """The coverage :meth:`to_dict` wrote; a KeyError or TypeError where it is not."""
        return cls(
            tables={
                name: TableCoverage(
                    rows=int(t["rows"]),
                    kinds=tuple(t["kinds"]),
                    columns={
                        c: ColumnCoverage(tuple(cov["kinds"]), cov.get("why"))
                        for c, cov in t["columns"].items()
                    },
                    why=t.get("why"),
                )
                for name, t in data["tables"].items()
            },
            templates=int(data.get("templates", 0)),
        )

    def to_rows(self) -> list[dict[str, Any]]:
        """One row per (table, column): what ``to_pandas`` and the exports hold."""
        return [
            {
                "table": name,
                "column": column,
                "kinds": ", ".join(cov.kinds),
                "why": cov.why,
            }
            for name, table in self.tables.items()
            for column, cov in table.columns.items()
        ]

    def to_pandas(self) -> Any:
        """The coverage as a DataFrame: table, column, kinds (comma-separated), why."""
        import pandas as pd

        return pd.DataFrame(self.to_rows(), columns=["table", "column", "kinds", "why"])


def _avg_lengths(db: Database, table: TableInfo) -> dict[str, float]:
    texts = [c for c in table.columns if c.is_text]
    if not texts or not table.row_count:
        return {}
    q = db.engine.dialect.identifier_preparer.quote
    parts = ", ".join(f"AVG(LENGTH({q(c.name)}))" for c in texts)
    row = db.execute(f"SELECT {parts} FROM {q(table.name)}").rows[0]
    return {c.name: float(v or 0) for c, v in zip(texts, row, strict=True)}


def _why_not(
    column: ColumnInfo,
    table: TableInfo,
    lengths: Mapping[str, float],
    enumerated: bool,
    named: bool,
) -> str:
    if is_id_like(column, table):
        return ID_LIKE
    fraction = (column.null_count or 0) / table.row_count if table.row_count else 1.0
    if fraction > MAX_NULL_FRACTION_ANSWER:
        return f"{fraction:.0%} NULL: more than half of its rows hold no value"
    if lengths.get(column.name, 0) > MAX_AVG_LENGTH:
        return f"long free text ({lengths[column.name]:.0f} characters on average)"
    if not named and not (column.is_numeric or column.is_temporal):
        return UNNAMED_TEXT
    return NOT_SAMPLED if enumerated else NOT_IN_FILE


def schema_coverage(
    db: Database,
    schema: SchemaInfo,
    templates: Iterable[SqlTemplate],
    *,
    notes: Mapping[str, str] | None = None,
    enumerated: bool = True,
) -> SchemaCoverage:
    """The coverage of ``schema`` by ``templates``. ``notes`` (table -> why no template
    reads it) come from the enumerator or from ``untemplated``; ``enumerated``: the
    templates are the enumerator's own (an askable column left out was left out by the
    sample), else a file's (it was left out by the file)."""
    dialect = db.sqlglot_dialect
    reached: dict[tuple[str, str], set[Kind]] = {}
    by_table: dict[str, set[Kind]] = {}
    count = 0
    for template in templates:
        try:
            found = reach(template.sql, schema, dialect=dialect, declared=template.kind)
        except (UserError, ValueError):
            continue
        count += 1
        for name in found.tables:
            by_table.setdefault(name.lower(), set()).add(found.kind)
        for name, col in found.columns:
            reached.setdefault((name.lower(), col.lower()), set()).add(found.kind)
    out = SchemaCoverage(templates=count)
    notes = notes or {}
    for table in schema.tables:
        lengths: dict[str, float] = {}
        named = False
        with contextlib.suppress(UserError):
            lengths = _avg_lengths(db, table)
            named = bool(table.row_count) and bool(namings(db, table))
        columns = {}
        for column in table.columns:
            kinds = reached.get((table.name.lower(), column.name.lower()), set())
            ordered = tuple(k for k in KINDS if k in kinds)
            why = None
            if not ordered:
                why = (
                    notes.get(table.name) or "no template reads its table"
                    if table.name.lower() not in by_table
                    else _why_not(column, table, lengths, enumerated, named)
                )
            columns[column.name] = ColumnCoverage(ordered, why)
        kinds = by_table.get(table.name.lower(), set())
        out.tables[table.name] = TableCoverage(
            rows=table.row_count or 0,
            kinds=tuple(k for k in KINDS if k in kinds),
            columns=columns,
            why=None if kinds else notes.get(table.name) or "no template reads it",
        )
    return out


__all__ = [
    "ID_LIKE",
    "NOT_IN_FILE",
    "NOT_SAMPLED",
    "UNNAMED_TEXT",
    "ColumnCoverage",
    "SchemaCoverage",
    "TableCoverage",
    "schema_coverage",
]
