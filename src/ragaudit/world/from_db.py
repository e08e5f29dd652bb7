"""A world from the user's own database: a SQLite copy of it (names made fictitious with
``rename``), a profile document per entity row stating its facts (:mod:`.profiles`), the
map of the facts each document states, and a ragaudit.yaml for all of it.

    <out>/database.sqlite          every table of the user's database, copied (renamed)
    <out>/documents.jsonl          {"id", "text"}: one profile per entity row
    <out>/document_facts.jsonl     {"id", "facts": [{table, row_key, column, stated, asks}]}
    <out>/world.json               where it came from, the tables, the holes, the counts
    <out>/ragaudit.yaml            database (the copy), corpus, gold facts, two systems

The user's database is only read. The world always works on its copy: the questions, the
documents and the references then agree on every name, and the configuration holds no
password. As with a generated world, everything is written to a folder beside ``out``
and renamed into place, so a killed build leaves no half world that looks complete.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
import sqlite3
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragaudit.db.engine import Database
from ragaudit.db.schema import SchemaInfo, TableInfo, introspect
from ragaudit.errors import UserError
from ragaudit.world.build import WorldSummary, staged, world_config, write_documents
from ragaudit.world.profiles import Plan, fictitious_names, names_within, plan, profiles

DATABASE = "database.sqlite"
# A declared type SQLite can take as written ("VARCHAR(50)", "DOUBLE PRECISION"); any
# other ("INTEGER[]", a user-defined type) is copied as TEXT.
_SQLITE_TYPE = re.compile(r"[A-Za-z][A-Za-z0-9_ ]*(\(\s*\d+\s*(,\s*\d+\s*)?\))?")


@dataclass(frozen=True)
class FromDb:
    """What a world from the user's database is built from: the database's URL, the
    tables that become documents and the columns they state (None: all), whether names
    are made fictitious, and the share of facts stated nowhere."""

    url: str
    tables: tuple[str, ...] | None = None
    columns: tuple[str, ...] | None = None
    rename: bool = False
    holes: float = 0.1

    def settings(self) -> dict[str, Any]:
        """The settings :func:`build_world_from_db` takes besides the URL."""
        return {
            "tables": self.tables,
            "columns": self.columns,
            "rename": self.rename,
            "holes": self.holes,
        }


def read_world_from_db(
    out: Path,
    url: str,
    *,
    seed: int = 0,
    tables: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    rename: bool = False,
    holes: float = 0.1,
) -> WorldSummary | None:
    """The world already in ``out`` when it is the one these settings would write from
    ``url`` (so that the LLM rewrite on top of it can go on), else None."""
    try:
        meta = json.loads((out / "world.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    db = Database(url)
    try:
        source = db.display_url
    finally:
        db.dispose()
    wanted = {"source": source, "seed": seed, "holes": holes, "renamed": rename}
    asked = {
        "tables": list(tables) if tables else None,
        "columns": list(columns) if columns else None,
    }
    if (
        not isinstance(meta, dict)
        or any(meta.get(k) != v for k, v in wanted.items())
        or meta.get("asked") != asked
        or not (out / DATABASE).is_file()
    ):
        return None
    return WorldSummary(
        out, out / DATABASE, meta.get("rows", {}), meta["documents"], meta["facts_stated"]
    )


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _ddl(table: TableInfo) -> str:
    """``CREATE TABLE`` for the copy: the columns, the primary key and the foreign keys
    (the enumerator joins along them; the gold facts name rows by the key)."""
    parts = []
    for column in table.columns:
        declared = column.type.strip()
        kind = declared if _SQLITE_TYPE.fullmatch(declared) else "TEXT"
        parts.append(f"{_quote(column.name)} {kind}")
    if table.primary_key:
        parts.append(f"PRIMARY KEY ({', '.join(_quote(c) for c in table.primary_key)})")
    for fk in table.foreign_keys:
        parts.append(
            f"FOREIGN KEY ({', '.join(_quote(c) for c in fk.columns)}) REFERENCES "
            f"{_quote(fk.ref_table)} ({', '.join(_quote(c) for c in fk.ref_columns)})"
        )
    return f"CREATE TABLE {_quote(table.name)} ({', '.join(parts)})"


def _stored(value: Any) -> Any:
    """A value of any engine as SQLite stores it: a date as ISO text, a decimal as the
    float it is when that is exact (else its text), a UUID or a list as text."""
    if value is None or isinstance(value, int | float | str | bytes):
        return value
    if isinstance(value, decimal.Decimal):
        as_float = float(value)
        return as_float if decimal.Decimal(repr(as_float)) == value else str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, list | dict | tuple):
        return json.dumps(value, default=str)
    return str(value)


def _rows(db: Database, table: TableInfo) -> Iterator[tuple[Any, ...]]:
    columns = ", ".join(_quote(c.name) for c in table.columns)
    yield from db.stream(f"SELECT {columns} FROM {_quote(table.name)}")


def _renamed(
    value: Any, mapping: Mapping[str, str] | None, within: Callable[[str], str] | None
) -> Any:
    """``value`` as the renamed copy holds it: a name column's (or a foreign key's) value
    by its fictitious name; the names written inside any other text replaced there."""
    if value is None:
        return value
    if mapping is not None and str(value) in mapping:
        return mapping[str(value)]
    if within is not None and isinstance(value, str):
        return within(value)
    return value


def _copy(
    db: Database,
    schema: SchemaInfo,
    path: Path,
    renamed: Mapping[tuple[str, str], Mapping[str, str]],
    keep: set[str],
) -> dict[str, list[dict[str, Any]]]:
    """Copy every table of ``db`` into the SQLite file ``path``, with the names in
    ``renamed`` replaced; the rows of the ``keep`` tables come back (as stored), for the
    documents."""
    kept: dict[str, list[dict[str, Any]]] = {}
    within = names_within(renamed) if renamed else None
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        for table in schema.tables:
            conn.execute(_ddl(table))
        for table in schema.tables:
            names = [c.name for c in table.columns]
            maps = [renamed.get((table.name, n)) for n in names]
            marks = ", ".join("?" * len(names))
            insert = f"INSERT INTO {_quote(table.name)} VALUES ({marks})"
            batch: list[tuple[Any, ...]] = []
            for raw in _rows(db, table):
                row = tuple(
                    _renamed(v, m, within)
                    for m, v in zip(maps, (_stored(v) for v in raw), strict=True)
                )
                batch.append(row)
                if table.name in keep:
                    kept.setdefault(table.name, []).append(dict(zip(names, row, strict=True)))
                if len(batch) >= 10_000:
                    conn.executemany(insert, batch)
                    batch.clear()
            if batch:
                conn.executemany(insert, batch)
            if table.name in keep:
                kept.setdefault(table.name, [])
        conn.commit()
    finally:
        conn.close()
    return kept


def build_world_from_db(
    out: Path,
    url: str,
    *,
    tables: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    rename: bool = False,
    holes: float = 0.1,
    seed: int = 0,
    force: bool = False,
    on_step: Callable[[str], None] | None = None,
) -> WorldSummary:
    """Write a world of the database at ``url`` into ``out`` (a new or empty folder, or
    any folder with ``force``): a copy of it, names made fictitious with ``rename``; one
    profile per row of ``tables`` (default: every entity table) stating ``columns``
    (``Table.Column``; default: all) but for a ``holes`` share of the facts."""
    if not 0.0 <= holes < 1.0:
        raise UserError(f"world: holes {holes}: give a share from 0 up to, not including, 1")
    if out.exists() and any(out.iterdir()) and not force:
        raise UserError(f"{out} exists and is not empty (--force, or force=True, replaces it)")
    step = on_step or (lambda _s: None)
    step("schema")
    db = Database(url)
    try:
        schema = introspect(db)
        if not schema.tables:
            raise UserError(f"world --from-db: {db.display_url} has no tables")
        try:
            chosen: Plan = plan(schema, tables, columns)
        except ValueError as exc:
            raise UserError(f"world --from-db: {db.display_url}: {exc}") from None
        renamed: dict[tuple[str, str], dict[str, str]] = {}
        if rename:
            names = {
                e.table: [
                    v for (v,) in db.stream(f"SELECT {_quote(e.name)} FROM {_quote(e.table)}")
                ]
                for e in chosen.entities
                if e.name
            }
            try:
                renamed = fictitious_names(schema, chosen.entities, names, seed)
            except ValueError as exc:  # more rows than the name space holds
                raise UserError(f"world --from-db: --rename: {exc}") from None
        with staged(out) as tmp:
            step("database")
            keep = {e.table for e in chosen.entities} | set(chosen.links)
            rows = _copy(db, schema, tmp / DATABASE, renamed, keep)
            step("documents")
            made = profiles(schema, chosen, rows, holes=holes, seed=seed)
            documents, facts = write_documents(tmp, made)
            counts = {t.name: len(rows.get(t.name, ())) for t in schema.tables if t.name in keep}
            (tmp / "world.json").write_text(
                json.dumps(
                    {
                        "source": db.display_url,
                        "seed": seed,
                        "holes": holes,
                        "renamed": rename,
                        "asked": {
                            "tables": list(tables) if tables else None,
                            "columns": list(columns) if columns else None,
                        },
                        "entities": [
                            {"table": e.table, "key": e.key, "name": e.name}
                            for e in chosen.entities
                        ],
                        "links": chosen.links,
                        "stated": chosen.stated,
                        "rows": counts,
                        "documents": documents,
                        "facts_stated": facts,
                    },
                    indent=2,
                )
                + "\n"
            )
            final = out.resolve()
            (tmp / "ragaudit.yaml").write_text(
                world_config(
                    final / DATABASE,
                    final / "documents.jsonl",
                    header=f"# Written by ragaudit world --from-db: profiles of the rows of "
                    f"{db.display_url},\n# over a copy of that database (the questions are "
                    "asked of the copy).",
                    documents_are="profiles",
                    gold_ids="",
                )
            )
    finally:
        db.dispose()
    return WorldSummary(out, out / DATABASE, counts, documents, facts)


__all__ = ["DATABASE", "FromDb", "build_world_from_db", "read_world_from_db"]
