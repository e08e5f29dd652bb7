"""The schema enumerator: SQL templates from the schema and the data, without an LLM.

Rules (docs/generate.md states them for users):

* **id-like columns** are never asked about nor used as keys: primary- and foreign-key
  columns, and names such as ``id``, ``*_id``, ``*Id``, ``*_key``, ``uuid``/``guid``;
* **mostly-NULL columns** (more than half NULL) are never answers;
* **long free text** (average length over 80 characters) is never an answer nor a key;
* a **descriptive key** is a text column whose name says it names the row (``name``,
  ``title``, ``label``, ``code``, ``email``), at most 10 % NULL and nearly unique (at least
  90 % distinct among its values);
* a template ``SELECT A FROM T WHERE K = '[T.K]'`` is kept only if K determines A in the
  data: one GROUP BY per key checks every answer column at once;
* across a **foreign key** T.fk -> R: the key of T, the answer from R
  (``SELECT r.A FROM T t JOIN R r ON t.fk = r.pk WHERE t.K = '[T.K]'``);
* through an **association table** X with foreign keys to R1 and R2: X's own attributes,
  asked by the keys of R1 and R2 together (two placeholders).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ragaudit.db.engine import Database
from ragaudit.db.schema import ColumnInfo, ForeignKey, SchemaInfo, TableInfo
from ragaudit.generate.sql_templates import SqlTemplate, new_templates

_ID_NAME = re.compile(r"(^id$|_id$|[a-z0-9]Id$|ID$|^id_|_key$|uuid|guid)", re.IGNORECASE)
_KEY_NAME = re.compile(r"(name|title|label|code|email)", re.IGNORECASE)
MAX_NULL_FRACTION_ANSWER = 0.5
MAX_NULL_FRACTION_KEY = 0.1
MIN_DISTINCT_FRACTION_KEY = 0.9
MAX_AVG_LENGTH = 80


@dataclass
class _Profile:
    table: TableInfo
    fk_columns: set[str]
    avg_length: dict[str, float]


def _quote(db: Database, name: str) -> str:
    return db.engine.dialect.identifier_preparer.quote(name)


def is_id_like(column: ColumnInfo, table: TableInfo, fk_columns: set[str]) -> bool:
    """Record identifiers: keys and columns named like ids."""
    return (
        (column.primary_key and not column.is_text)
        or column.name in fk_columns
        or bool(_ID_NAME.search(column.name))
    )


def _profile(db: Database, table: TableInfo) -> _Profile:
    fk_columns = {c for fk in table.foreign_keys for c in fk.columns}
    texts = [c for c in table.columns if c.is_text]
    avg: dict[str, float] = {}
    if texts and table.row_count:
        parts = ", ".join(f"AVG(LENGTH({_quote(db, c.name)}))" for c in texts)
        row = db.execute(f"SELECT {parts} FROM {_quote(db, table.name)}").rows[0]
        avg = {c.name: float(v or 0) for c, v in zip(texts, row, strict=True)}
    return _Profile(table, fk_columns, avg)


def _null_fraction(column: ColumnInfo, table: TableInfo) -> float:
    if not table.row_count:
        return 1.0
    return (column.null_count or 0) / table.row_count


def answer_columns(p: _Profile) -> list[ColumnInfo]:
    """Columns worth asking about."""
    return [
        c
        for c in p.table.columns
        if not is_id_like(c, p.table, p.fk_columns)
        and _null_fraction(c, p.table) <= MAX_NULL_FRACTION_ANSWER
        and p.avg_length.get(c.name, 0) <= MAX_AVG_LENGTH
    ]


def key_columns(p: _Profile) -> list[ColumnInfo]:
    """Descriptive columns that name a row."""
    keys = []
    for c in p.table.columns:
        if not c.is_text or is_id_like(c, p.table, p.fk_columns) or not _KEY_NAME.search(c.name):
            continue
        non_null = (p.table.row_count or 0) - (c.null_count or 0)
        if non_null <= 0 or _null_fraction(c, p.table) > MAX_NULL_FRACTION_KEY:
            continue
        if (c.distinct_count or 0) < MIN_DISTINCT_FRACTION_KEY * non_null:
            continue
        if p.avg_length.get(c.name, 0) > MAX_AVG_LENGTH:
            continue
        keys.append(c)
    return keys


def _functional(db: Database, from_sql: str, keys: list[str], answers: list[str]) -> list[bool]:
    """For each answer expression: does the key (tuple) determine it in the data, with at
    least one answered key? One GROUP BY for all answers."""
    if not answers:
        return []
    counts = ", ".join(f"COUNT(DISTINCT {a}) AS d{i}" for i, a in enumerate(answers))
    present = ", ".join(f"COUNT({a}) AS n{i}" for i, a in enumerate(answers))
    not_null = " AND ".join(f"{k} IS NOT NULL" for k in keys)
    inner = (
        f"SELECT {counts}, {present} FROM {from_sql} WHERE {not_null} GROUP BY {', '.join(keys)}"
    )
    outer = ", ".join(
        [f"MAX(d{i})" for i in range(len(answers))] + [f"MAX(n{i})" for i in range(len(answers))]
    )
    row = db.execute(f"SELECT {outer} FROM ({inner}) AS g").rows[0]
    n = len(answers)
    return [(row[i] or 0) <= 1 and (row[n + i] or 0) >= 1 for i in range(n)]


def _single_table(db: Database, p: _Profile) -> Iterable[tuple[str, str]]:
    q = _quote
    table = q(db, p.table.name)
    answers = answer_columns(p)
    for key in key_columns(p):
        others = [a for a in answers if a.name != key.name]
        ok = _functional(db, table, [q(db, key.name)], [q(db, a.name) for a in others])
        for answer, good in zip(others, ok, strict=True):
            if good:
                yield (
                    f"SELECT {q(db, answer.name)} FROM {table} "
                    f"WHERE {q(db, key.name)} = '[{p.table.name}.{key.name}]'",
                    f"{answer.name}-by-{p.table.name}-{key.name}",
                )


def _join_on(db: Database, left: str, right: str, fk: ForeignKey) -> str:
    return " AND ".join(
        f"{left}.{_quote(db, a)} = {right}.{_quote(db, b)}"
        for a, b in zip(fk.columns, fk.ref_columns, strict=True)
    )


def _across_foreign_keys(
    db: Database, p: _Profile, profiles: dict[str, _Profile]
) -> Iterable[tuple[str, str]]:
    q = _quote
    for fk in p.table.foreign_keys:
        ref = profiles.get(fk.ref_table.lower())
        if ref is None or not fk.ref_columns:
            continue
        from_sql = (
            f"{q(db, p.table.name)} AS t JOIN {q(db, ref.table.name)} AS r "
            f"ON {_join_on(db, 't', 'r', fk)}"
        )
        answers = answer_columns(ref)
        for key in key_columns(p):
            exprs = [f"r.{q(db, a.name)}" for a in answers]
            ok = _functional(db, from_sql, [f"t.{q(db, key.name)}"], exprs)
            for answer, expr, good in zip(answers, exprs, ok, strict=True):
                if good:
                    yield (
                        f"SELECT {expr} FROM {from_sql} "
                        f"WHERE t.{q(db, key.name)} = '[{p.table.name}.{key.name}]'",
                        f"{ref.table.name}-{answer.name}-by-{p.table.name}-{key.name}"
                        f"-via-{'-'.join(fk.columns)}",
                    )


def _through_association(
    db: Database, p: _Profile, profiles: dict[str, _Profile]
) -> Iterable[tuple[str, str]]:
    """X links R1 and R2 (two foreign keys, no key of its own): X's attributes by the keys
    of both."""
    q = _quote
    fks = [fk for fk in p.table.foreign_keys if fk.ref_table.lower() in profiles]
    if len(fks) != 2 or key_columns(p):
        return
    (fk1, fk2) = fks
    r1, r2 = profiles[fk1.ref_table.lower()], profiles[fk2.ref_table.lower()]
    from_sql = (
        f"{q(db, p.table.name)} AS x "
        f"JOIN {q(db, r1.table.name)} AS a ON {_join_on(db, 'x', 'a', fk1)} "
        f"JOIN {q(db, r2.table.name)} AS b ON {_join_on(db, 'x', 'b', fk2)}"
    )
    answers = answer_columns(p)
    for k1 in key_columns(r1):
        for k2 in key_columns(r2):
            exprs = [f"x.{q(db, a.name)}" for a in answers]
            keys = [f"a.{q(db, k1.name)}", f"b.{q(db, k2.name)}"]
            ok = _functional(db, from_sql, keys, exprs)
            for answer, expr, good in zip(answers, exprs, ok, strict=True):
                if good:
                    yield (
                        f"SELECT {expr} FROM {from_sql} "
                        f"WHERE a.{q(db, k1.name)} = '[{r1.table.name}.{k1.name}]' "
                        f"AND b.{q(db, k2.name)} = '[{r2.table.name}.{k2.name}]'",
                        f"{answer.name}-by-{r1.table.name}-{k1.name}-{r2.table.name}-{k2.name}",
                    )


def enumerate_templates(db: Database, schema: SchemaInfo) -> list[SqlTemplate]:
    """Every template the rules above find, in schema order, with unique ids."""
    profiles = {t.name.lower(): _profile(db, t) for t in schema.tables if t.row_count}
    found: list[tuple[str, str]] = []
    for p in profiles.values():
        found.extend(_single_table(db, p))
    for p in profiles.values():
        found.extend(_across_foreign_keys(db, p, profiles))
    for p in profiles.values():
        found.extend(_through_association(db, p, profiles))
    return new_templates([sql for sql, _ in found], "enumerator", names=[n for _, n in found])
