"""Schema introspection: tables, columns, types, keys, and the statistics that later steps
use to choose columns (row counts, distinct and NULL counts per column).

Statistics take one aggregate query per table, whatever the number of columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlglot.dialects.dialect import Dialect, NormalizationStrategy
from sqlglot.schema import MappingSchema

from ragaudit.db.engine import Database
from ragaudit.errors import DatabaseError


@dataclass(frozen=True)
class ForeignKey:
    """``columns`` of this table reference ``ref_columns`` of ``ref_table``."""

    columns: tuple[str, ...]
    ref_table: str
    ref_columns: tuple[str, ...]


@dataclass
class ColumnInfo:
    """One column: declared type, nullability, key membership and data statistics."""

    name: str
    type: str
    nullable: bool = True
    primary_key: bool = False
    distinct_count: int | None = None
    null_count: int | None = None

    @property
    def is_text(self) -> bool:
        """Declared as a character type."""
        lowered = self.type.lower()
        return any(t in lowered for t in ("char", "text", "string", "clob")) or lowered == ""

    @property
    def is_numeric(self) -> bool:
        """Declared as a number (integer, decimal, floating point), not a boolean."""
        lowered = self.type.lower()
        if self.is_text or any(t in lowered for t in ("interval", "point", "bool")):
            return False
        return any(
            t in lowered
            for t in ("int", "real", "float", "double", "numeric", "decimal", "number", "money")
        )

    @property
    def is_temporal(self) -> bool:
        """Declared as a date, a time or a timestamp (an ISO date held as text is told by
        its values, not by its type)."""
        lowered = self.type.lower()
        return not self.is_text and any(t in lowered for t in ("date", "time"))


@dataclass
class TableInfo:
    """One table: its columns, keys and row count."""

    name: str
    columns: list[ColumnInfo]
    primary_key: tuple[str, ...] = ()
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    row_count: int | None = None

    def column(self, name: str) -> ColumnInfo | None:
        """The column called ``name`` (case-insensitive), or None."""
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)


@dataclass
class SchemaInfo:
    """Every table of the database (or of the configured subset)."""

    dialect: str
    tables: list[TableInfo]

    def table(self, name: str) -> TableInfo | None:
        """The table called ``name`` (case-insensitive), or None."""
        lowered = name.lower()
        return next((t for t in self.tables if t.name.lower() == lowered), None)

    def mapping(self) -> dict[str, dict[str, str]]:
        """``{table: {column: type}}``, as the database names them."""
        return {t.name: {c.name: (c.type or "TEXT") for c in t.columns} for t in self.tables}

    def for_sqlglot(self, dialect: str) -> MappingSchema:
        """The schema as sqlglot's optimizer reads it for ``dialect`` (sqlglot's name):
        where the database ignores the case of names (SQLite, DuckDB), both the query's
        names and these are compared in lower case; where it folds unquoted names and
        keeps quoted ones (PostgreSQL to lower case, Snowflake to upper), the catalog's
        names are exact and are compared as quoted names, so that ``"Client"."Industry"``
        is known and an unquoted ``Industry``, which the database would read as
        ``industry``, is not."""
        strategy = Dialect.get_or_raise(dialect).NORMALIZATION_STRATEGY
        tables: dict[str, object] = dict(self.mapping())
        return MappingSchema(
            tables,
            dialect=dialect,
            normalize=strategy is NormalizationStrategy.CASE_INSENSITIVE,
        )


def _structure_generic(db: Database) -> list[TableInfo]:
    """Tables, columns and keys through SQLAlchemy's inspector (SQLite, PostgreSQL, ...)."""
    inspector = sa.inspect(db.engine)
    infos = []
    for name in sorted(inspector.get_table_names()):
        pk = tuple(inspector.get_pk_constraint(name).get("constrained_columns") or ())
        columns = [
            ColumnInfo(
                name=col["name"],
                type=str(col["type"]) if col.get("type") is not None else "",
                nullable=bool(col.get("nullable", True)),
                primary_key=col["name"] in pk,
            )
            for col in inspector.get_columns(name)
        ]
        fks = [
            ForeignKey(
                columns=tuple(fk["constrained_columns"]),
                ref_table=fk["referred_table"],
                ref_columns=tuple(fk["referred_columns"]),
            )
            for fk in inspector.get_foreign_keys(name)
            if fk.get("referred_table")
        ]
        infos.append(TableInfo(name=name, columns=columns, primary_key=pk, foreign_keys=fks))
    return infos


def _structure_duckdb(db: Database) -> list[TableInfo]:
    """DuckDB's own catalog: its SQLAlchemy driver cannot reflect keys on SQLAlchemy 2.1."""
    columns = db.execute(
        "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
    ).rows
    constraints = db.execute(
        "SELECT table_name, constraint_type, constraint_column_names, referenced_table, "
        "referenced_column_names FROM duckdb_constraints() "
        "WHERE schema_name = current_schema() AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')"
    ).rows
    tables: dict[str, TableInfo] = {}
    for table, column, dtype, nullable in columns:
        info = tables.setdefault(table, TableInfo(name=table, columns=[]))
        info.columns.append(ColumnInfo(name=column, type=dtype, nullable=nullable == "YES"))
    for table, kind, cols, ref_table, ref_cols in constraints:
        constrained = tables.get(table)
        if constrained is None:
            continue
        if kind == "PRIMARY KEY":
            constrained.primary_key = tuple(cols)
            for col in constrained.columns:
                col.primary_key = col.name in constrained.primary_key
        elif ref_table:
            constrained.foreign_keys.append(ForeignKey(tuple(cols), ref_table, tuple(ref_cols)))
    return [tables[name] for name in sorted(tables)]


def introspect(
    db: Database, *, tables: list[str] | None = None, with_stats: bool = True
) -> SchemaInfo:
    """Read the schema of ``db``: every table (or ``tables``), with statistics if asked."""
    try:
        infos = _structure_duckdb(db) if db.dialect == "duckdb" else _structure_generic(db)
    except sa.exc.SQLAlchemyError as exc:
        detail = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        raise DatabaseError(f"{db.display_url}: cannot read the schema: {detail}") from None
    if tables:
        wanted = {t.lower() for t in tables}
        missing = wanted - {info.name.lower() for info in infos}
        if missing:
            raise DatabaseError(
                f"{db.display_url}: database.tables names unknown tables: "
                f"{', '.join(sorted(missing))}"
            )
        infos = [info for info in infos if info.name.lower() in wanted]
    if with_stats:
        for info in infos:
            _fill_stats(db, info)
    return SchemaInfo(dialect=db.dialect, tables=infos)


def _fill_stats(db: Database, info: TableInfo) -> None:
    """Row count, and distinct / NULL counts of every column, in one aggregate query."""
    table = sa.table(info.name, *(sa.column(c.name) for c in info.columns))
    aggregates: list[sa.ColumnElement[int]] = [sa.func.count().label("n")]
    for i, col in enumerate(info.columns):
        ref = table.c[col.name]
        aggregates.append(sa.func.count(sa.distinct(ref)).label(f"d{i}"))
        aggregates.append(sa.func.count(ref).label(f"c{i}"))
    statement = sa.select(*aggregates).select_from(table)
    compiled = str(statement.compile(db.engine, compile_kwargs={"literal_binds": True}))
    row = db.execute(compiled).rows[0]
    info.row_count = int(row[0])
    for i, col in enumerate(info.columns):
        col.distinct_count = int(row[1 + 2 * i])
        col.null_count = info.row_count - int(row[2 + 2 * i])
