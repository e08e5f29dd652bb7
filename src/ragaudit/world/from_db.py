"""A world from the user's own database: a SQLite copy of it (names made fictitious with
``rename``), a profile document per entity row stating its facts (:mod:`.profiles`), the
map of the facts each document states, and a ragaudit.yaml for all of it.

    <out>/database.sqlite          every table of the user's database, copied (renamed)
    <out>/documents.jsonl          {"id", "text"}: one profile per entity row
    <out>/document_facts.jsonl     {"id", "facts": [{table, row_key, column, stated, asks}]}
    <out>/world.json               where it came from, the tables, the holes, the counts
    <out>/ragaudit.yaml            database (the copy), corpus, gold facts, two systems

**Names.** A row is named by :func:`ragaudit.db.identity.best_naming` (the rule that
names the enumerator's keys, so that a question and its document name a row alike: an
employee by first and last name, not by a job title three agents share), or by the columns
the user gives (``names``, checked by :func:`ragaudit.db.identity.chosen_naming`).

**Renaming** (``rename``) replaces a value only where it refers to a renamed row: that
row's name columns, and the foreign-key columns (text keys) that point at it. A value of
any other column that merely equals a name (a city "New York", an employee's last name a
customer shares) is left as it is. Inside free text (any other text column) the row's
real name, written whole ("first last"), is replaced only in the row itself and in the
rows whose foreign keys point at it: a note naming the customer it is about. Elsewhere a
real name is left standing, and counted: world.json's ``renaming`` says, per column, how
many names were replaced inside text (``replaced_in_text``) and how many real names of
renamed rows are still written in text (``left_in_text``). That is the trade-off: a name
left in unrelated text can leak the real entity (a model may answer from memory), while
replacing every equal word wherever it stands ("Music" inside a thousand track titles
because a playlist is called Music) damages values that never named the row; the damage
is silent, the leak is counted, so the leak is the one taken.

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
from ragaudit.db.identity import best_naming, chosen_naming
from ragaudit.db.schema import SchemaInfo, TableInfo, introspect
from ragaudit.errors import UserError
from ragaudit.records.io import staged_folder
from ragaudit.world.build import WorldSummary, world_config, write_documents
from ragaudit.world.profiles import (
    LINKS_PER_DOCUMENT,
    PAGE_WORDS,
    Entity,
    Plan,
    fictitious_names,
    names_within,
    plan,
    profiles,
)

DATABASE = "database.sqlite"
# How profiles are bounded, as world.json records it: a world written under other bounds
# (or before there were any) is written again, never reused.
_PAGES = {"words": PAGE_WORDS, "links_per_document": LINKS_PER_DOCUMENT}
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
    # (table, its name columns): the columns that name a table's rows, the user's choice.
    names: tuple[tuple[str, tuple[str, ...]], ...] | None = None

    def settings(self) -> dict[str, Any]:
        """The settings :func:`build_world_from_db` takes besides the URL."""
        return {
            "tables": self.tables,
            "columns": self.columns,
            "rename": self.rename,
            "holes": self.holes,
            "names": dict(self.names) if self.names else None,
        }


def _asked(
    tables: Sequence[str] | None,
    columns: Sequence[str] | None,
    names: Mapping[str, Sequence[str]] | None,
) -> dict[str, Any]:
    """What the user asked for, as world.json records it."""
    return {
        "tables": list(tables) if tables else None,
        "columns": list(columns) if columns else None,
        "names": {t: list(c) for t, c in names.items()} if names else None,
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
    names: Mapping[str, Sequence[str]] | None = None,
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
    wanted = {
        "source": source,
        "seed": seed,
        "holes": holes,
        "renamed": rename,
        "pages": _PAGES,
    }
    asked = _asked(tables, columns, names)
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


class _Renaming:
    """The renaming of the copy, row by row: a name column's or a foreign key's value by
    its fictitious one; inside free text, the real name of the row itself and of the rows
    its foreign keys point at, and no other (see the module's docstring). Counts, per
    ``Table.Column``, the names it replaced inside text and the real names it left."""

    def __init__(
        self,
        schema: SchemaInfo,
        entities: Sequence[Entity],
        renamed: Mapping[tuple[str, str], Mapping[str, str]],
        targets: Mapping[tuple[str, str], Mapping[Any, tuple[str, str]]],
        every: Mapping[str, str],
    ) -> None:
        self.renamed = renamed
        self.own = {e.table: e for e in entities if e.name and (e.table, e.name[0]) in renamed}
        # table -> [(foreign-key column, {referenced value: (real name, fictitious name)})]
        self.refs: dict[str, list[tuple[str, Mapping[Any, tuple[str, str]]]]] = {}
        # table -> the columns that hold no free text: keys, foreign keys, renamed columns
        self.fixed: dict[str, set[str]] = {}
        for table in schema.tables:
            fixed = set(table.primary_key) | {c for fk in table.foreign_keys for c in fk.columns}
            fixed |= {c for (t, c) in renamed if t == table.name}
            self.fixed[table.name] = fixed
            for fk in table.foreign_keys:
                if len(fk.columns) == 1 and (fk.ref_table, fk.ref_columns[0]) in targets:
                    found = targets[fk.ref_table, fk.ref_columns[0]]
                    self.refs.setdefault(table.name, []).append((fk.columns[0], found))
        self.everywhere = names_within(every)
        self.columns: dict[str, list[str]] = {}
        self.replaced: dict[str, int] = {}
        self.left: dict[str, int] = {}

    def row(self, table: TableInfo, row: tuple[Any, ...]) -> tuple[Any, ...]:
        """``row`` of ``table`` (as stored) as the renamed copy holds it."""
        names = self.columns.get(table.name)
        if names is None:
            names = self.columns[table.name] = [c.name for c in table.columns]
        real = dict(zip(names, row, strict=True))
        out = {}
        for column, value in real.items():
            mapping = self.renamed.get((table.name, column))
            if value is not None and mapping is not None and str(value) in mapping:
                value = mapping[str(value)]
            out[column] = value
        # The names this row's free text may name: its own, and those it points at.
        pairs: dict[str, str] = {}
        entity = self.own.get(table.name)
        if entity is not None:
            was, now = entity.written(real), entity.written(out)
            if was and now and was != now:
                pairs[was] = now
        for column, found in self.refs.get(table.name, ()):
            hit = found.get(real[column]) if real[column] is not None else None
            if hit is not None:
                pairs.setdefault(*hit)
        fixed = self.fixed.get(table.name, set())
        texts = [
            (column, value)
            for column, value in out.items()
            if column not in fixed and isinstance(value, str)
        ]
        # A matcher only for a row whose text holds one of its names at all (most hold none).
        held = {was: now for was, now in pairs.items() if any(was in v for _, v in texts)}
        within = names_within(held) if held else None
        for column, value in texts:
            where = f"{table.name}.{column}"
            if within is not None:
                value, replaced = within(value)
                if replaced:
                    self.replaced[where] = self.replaced.get(where, 0) + replaced
                    out[column] = value
            _, left = self.everywhere(value)
            if left:
                self.left[where] = self.left.get(where, 0) + left
        return tuple(out[c] for c in names)

    def counts(self) -> dict[str, dict[str, int]]:
        """What world.json's ``renaming`` records."""
        return {
            "replaced_in_text": dict(sorted(self.replaced.items())),
            "left_in_text": dict(sorted(self.left.items())),
        }


def _copy(
    db: Database,
    schema: SchemaInfo,
    path: Path,
    renaming: _Renaming | None,
    keep: set[str],
) -> dict[str, list[dict[str, Any]]]:
    """Copy every table of ``db`` into the SQLite file ``path``, renamed by ``renaming``;
    the rows of the ``keep`` tables come back (as stored), for the documents."""
    kept: dict[str, list[dict[str, Any]]] = {}
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        for table in schema.tables:
            conn.execute(_ddl(table))
        for table in schema.tables:
            names = [c.name for c in table.columns]
            marks = ", ".join("?" * len(names))
            insert = f"INSERT INTO {_quote(table.name)} VALUES ({marks})"
            batch: list[tuple[Any, ...]] = []
            for raw in _rows(db, table):
                row = tuple(_stored(v) for v in raw)
                if renaming is not None:
                    row = renaming.row(table, row)
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


def _namings(
    db: Database, schema: SchemaInfo, chosen: Plan, names: Mapping[str, Sequence[str]] | None
) -> dict[str, tuple[str, ...]]:
    """The columns that name each entity table's rows: the user's (``names``, checked),
    else :func:`best_naming`'s; a table neither names is left to :func:`plan`."""
    profiled = {e.table for e in chosen.entities}
    out: dict[str, tuple[str, ...]] = {}
    for table, columns in (names or {}).items():
        info = schema.table(table)
        if info is None:
            raise UserError(f"world --from-db: names: no table {table!r} in the database")
        if info.name not in profiled:
            raise UserError(f"world --from-db: names: table {info.name!r} is not profiled")
        if isinstance(columns, str):
            columns = [columns]
        try:
            out[info.name] = chosen_naming(db, info, list(columns)).columns
        except ValueError as exc:
            raise UserError(f"world --from-db: names: {exc}") from None
    for entity in chosen.entities:
        info = schema.table(entity.table)
        if entity.table in out or info is None:
            continue
        found = best_naming(db, info)
        if found is not None:
            out[entity.table] = found.columns
    return out


def _name_rows(
    db: Database, schema: SchemaInfo, entities: Sequence[Entity]
) -> tuple[dict[str, list[tuple[Any, ...]]], dict[tuple[str, str], dict[Any, tuple[Any, ...]]]]:
    """Each named entity table's rows of name values, and, for each column a foreign key
    points at, {its value: the row's name values}."""
    names: dict[str, list[tuple[Any, ...]]] = {}
    pointed: dict[tuple[str, str], dict[Any, tuple[Any, ...]]] = {}
    for entity in entities:
        info = schema.table(entity.table)
        if not entity.name or info is None:
            continue
        refs = sorted(
            {
                fk.ref_columns[0]
                for t in schema.tables
                for fk in t.foreign_keys
                if len(fk.columns) == 1 and fk.ref_table == entity.table
            }
        )
        wanted = list(entity.name) + refs
        sql = f"SELECT {', '.join(_quote(c) for c in wanted)} FROM {_quote(entity.table)}"
        count = len(entity.name)
        rows = [tuple(_stored(v) for v in row) for row in db.stream(sql)]
        names[entity.table] = [row[:count] for row in rows]
        for i, ref in enumerate(refs, start=count):
            found = pointed.setdefault((entity.table, ref), {})
            for row in rows:
                if row[i] is not None:
                    found.setdefault(row[i], row[:count])
    return names, pointed


def _written(
    entity: Entity, parts: Sequence[Any], renamed: Mapping[tuple[str, str], Mapping[str, str]]
) -> tuple[str, str] | None:
    """A row's real name and its fictitious name, as documents write them, from its name
    values; None when it has none or it is not renamed."""
    real = dict(zip(entity.name, parts, strict=True))
    fake = {
        c: renamed.get((entity.table, c), {}).get(str(v), v) if v is not None else None
        for c, v in real.items()
    }
    was, now = entity.written(real), entity.written(fake)
    return (was, now) if was and now and was != now else None


def _targets(
    entities: Sequence[Entity],
    renamed: Mapping[tuple[str, str], Mapping[str, str]],
    names: Mapping[str, Sequence[Sequence[Any]]],
    pointed: Mapping[tuple[str, str], Mapping[Any, tuple[Any, ...]]],
) -> tuple[dict[tuple[str, str], dict[Any, tuple[str, str]]], dict[str, str]]:
    """For each column a foreign key points at: {its value: (the row's real name, its
    fictitious name)}; and every renamed row's {real name: fictitious name}."""
    by_table = {e.table: e for e in entities}
    out: dict[tuple[str, str], dict[Any, tuple[str, str]]] = {}
    for (table, ref), rows in pointed.items():
        found = out.setdefault((table, ref), {})
        for value, parts in rows.items():
            pair = _written(by_table[table], parts, renamed)
            if pair is not None:
                found[value] = pair
    every: dict[str, str] = {}
    for table, rows_of in names.items():
        for values in rows_of:
            pair = _written(by_table[table], values, renamed)
            if pair is not None:
                every.setdefault(*pair)
    return out, every


def build_world_from_db(
    out: Path,
    url: str,
    *,
    tables: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    rename: bool = False,
    holes: float = 0.1,
    seed: int = 0,
    names: Mapping[str, Sequence[str]] | None = None,
    force: bool = False,
    on_step: Callable[[str], None] | None = None,
) -> WorldSummary:
    """Write a world of the database at ``url`` into ``out`` (a new or empty folder, or
    any folder with ``force``): a copy of it, names made fictitious with ``rename``; one
    profile per row of ``tables`` (default: every entity table) stating ``columns``
    (``Table.Column``; default: all) but for a ``holes`` share of the facts. ``names``
    gives the columns that name a table's rows (table -> one column, or a first and a
    last name); a table it leaves out is named by :func:`best_naming`."""
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
            chosen = plan(schema, tables, columns, _namings(db, schema, chosen, names))
        except ValueError as exc:
            raise UserError(f"world --from-db: {db.display_url}: {exc}") from None
        renaming: _Renaming | None = None
        if rename:
            name_rows, pointed = _name_rows(db, schema, chosen.entities)
            try:
                renamed = fictitious_names(schema, chosen.entities, name_rows, seed)
            except ValueError as exc:  # more rows than the name space holds
                raise UserError(f"world --from-db: --rename: {exc}") from None
            targets, every = _targets(chosen.entities, renamed, name_rows, pointed)
            renaming = _Renaming(schema, chosen.entities, renamed, targets, every)
        with staged_folder(out) as tmp:
            step("database")
            keep = {e.table for e in chosen.entities} | set(chosen.links)
            rows = _copy(db, schema, tmp / DATABASE, renaming, keep)
            step("documents")
            made = profiles(schema, chosen, rows, holes=holes, seed=seed)
            # A sentence is never split: one value longer than a page makes its page so.
            longer = [p.doc_id for p in made if len(p.text.split()) > PAGE_WORDS]
            documents, facts = write_documents(tmp, made)
            counts = {t.name: len(rows.get(t.name, ())) for t in schema.tables if t.name in keep}
            (tmp / "world.json").write_text(
                json.dumps(
                    {
                        "source": db.display_url,
                        "seed": seed,
                        "holes": holes,
                        "renamed": rename,
                        "pages": _PAGES,
                        "longer_than_a_page": longer,
                        "asked": _asked(tables, columns, names),
                        "entities": [
                            {"table": e.table, "key": e.key, "name": list(e.name) or None}
                            for e in chosen.entities
                        ],
                        "renaming": renaming.counts() if renaming is not None else None,
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
    warnings: tuple[str, ...] = ()
    if longer:
        shown = ", ".join(longer[:3]) + (f" and {len(longer) - 3} more" if len(longer) > 3 else "")
        warnings = (
            f"{len(longer)} document{'s are' if len(longer) > 1 else ' is'} longer than a page "
            f"of {PAGE_WORDS} words ({shown}): a value longer than a page is written whole, "
            "never split (world.json lists them as longer_than_a_page); chunk the corpus "
            "(corpus.chunking: window) if it must fit a small model's context",
        )
    return WorldSummary(out, out / DATABASE, counts, documents, facts, warnings)


__all__ = ["DATABASE", "FromDb", "build_world_from_db", "read_world_from_db"]
