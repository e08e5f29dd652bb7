"""The schema enumerator: SQL templates of every kind (:mod:`.kinds`) from the schema and
the data, without an LLM.

Rules (docs/generate.md states them for users):

* a row is asked **by its name**: the columns that identify it
  (:mod:`ragaudit.db.identity`: a column named like an identifier whose values tell the
  rows apart, or a person's first and last name together). Lookups may ask by a name
  that repeats a few values (the groups it leaves ambiguous are dropped at generate);
  every other kind asks by a name that repeats none, since an aggregate or a set over
  two rows of one name would be silently wrong;
* **id-like columns** (keys, ``*_id``, ``uuid``) are never asked about, **mostly-NULL
  columns** (more than half NULL) and **long free text** (over 80 characters on average)
  are never answers;
* **lookup**: an attribute of the named row; **path**: an attribute of a row one to
  three foreign keys away (a person's name written "first last" when that is the row's
  name); both kept when the name determines the answer in all but few groups
  (:func:`~ragaudit.db.identity.few_exceptions`), the ambiguous groups named in the note;
* over the rows that refer to a named row (its **children**, by a foreign key or through
  a link table): their **count** (zero included), the **sum**, **average** (rounded to
  two decimals), **minimum** and **maximum** of a numeric column, the earliest and latest
  of a date; the **superlative** child (the most of a numeric column, or the most rows
  of its own children), ties dropped at generate; the **set** of their names, all or
  those over the median of a numeric column (a set of more than
  :data:`~ragaudit.generate.sql.kinds.MAX_SET_SIZE` answers is not asked); the **date
  range**: how many fall in the year most of them fall in;
* **yes_no**: whether the named row's numeric column is over its median, rounded;
* a table linking two others (two foreign keys, no name of its own): its own attributes,
  asked by the names of both rows it links.

A schema yields many more candidates than anyone words: per table and kind, at most
``per_kind`` are kept (:data:`~ragaudit.generate.sql.kinds.DEFAULT_PER_KIND`), chosen in
a fixed order that spreads them over columns and related tables; the rest are counted in
the coverage report (:func:`coverage`) as left out by the sample.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragaudit.db.engine import Database
from ragaudit.db.identity import (
    MAX_EXCEPTION_SHARE,
    MIN_FOR_ONE_EXCEPTION,
    Naming,
    few_exceptions,
    foreign_key_columns,
    name_words,
    namings,
    pair_repeats,
    why_unnamed,
)
from ragaudit.db.identity import is_id_like as _id_like
from ragaudit.db.schema import ColumnInfo, ForeignKey, SchemaInfo, TableInfo
from ragaudit.errors import UserError
from ragaudit.generate.sql.asks import reach
from ragaudit.generate.sql.instantiate import Plan, plan
from ragaudit.generate.sql.kinds import DEFAULT_PER_KIND, KINDS, MAX_SET_SIZE, Kind
from ragaudit.generate.sql.templates import SqlTemplate, check_template, new_templates

MAX_NULL_FRACTION_ANSWER = 0.5
MAX_AVG_LENGTH = 80
NAMED_GROUPS = 3  # ambiguous groups a template's note names
MAX_HOPS = 3
_LAST_YEAR = "2100"
# Words of a text column's name that say it holds dates (checked on its values).
_DATE_WORDS = frozenset({"date", "time", "timestamp", "day", "birthday", "dob", "born"})


def is_id_like(column: ColumnInfo, table: TableInfo, fk_columns: Collection[str] = ()) -> bool:
    """Record identifiers: keys and columns named like ids."""
    return _id_like(column, table) or column.name in fk_columns


@dataclass
class _Profile:
    table: TableInfo
    avg_length: dict[str, float]
    iso_dates: set[str]  # text columns whose every value is an ISO date
    namings: list[Naming]
    strict: Naming | None  # the best name that repeats no value

    @property
    def name(self) -> str:
        return self.table.name


def _quote(db: Database, name: str) -> str:
    return db.engine.dialect.identifier_preparer.quote(name)


def _null_fraction(column: ColumnInfo, table: TableInfo) -> float:
    if not table.row_count:
        return 1.0
    return (column.null_count or 0) / table.row_count


def _datelike_name(column: ColumnInfo) -> bool:
    words = name_words(column.name)
    return bool(_DATE_WORDS & set(words)) or words[-1:] in (["at"], ["on"])


def _profile(db: Database, table: TableInfo) -> _Profile:
    texts = [c for c in table.columns if c.is_text]
    dated = [c for c in texts if _datelike_name(c)]
    avg: dict[str, float] = {}
    iso: set[str] = set()
    if texts and table.row_count:

        def q(name: str) -> str:
            return _quote(db, name)

        parts = [f"AVG(LENGTH({q(c.name)}))" for c in texts] + [
            f"SUM(CASE WHEN {q(c.name)} LIKE '____-__-__%' THEN 1 ELSE 0 END)" for c in dated
        ]
        row = db.execute(f"SELECT {', '.join(parts)} FROM {q(table.name)}").rows[0]
        avg = {c.name: float(v or 0) for c, v in zip(texts, row[: len(texts)], strict=True)}
        for c, matched in zip(dated, row[len(texts) :], strict=True):
            non_null = (table.row_count or 0) - (c.null_count or 0)
            if non_null and int(matched or 0) == non_null:
                iso.add(c.name)
    found = [
        n for n in namings(db, table) if all(avg.get(c, 0) <= MAX_AVG_LENGTH for c in n.columns)
    ]
    strict = None
    for naming in found:
        if naming.composite:
            total, distinct = pair_repeats(db, table, naming.columns)
            unique = total == distinct
        else:
            column = table.column(naming.columns[0])
            assert column is not None
            non_null = (table.row_count or 0) - (column.null_count or 0)
            unique = column.distinct_count == non_null
        if unique:
            strict = naming
            break
    return _Profile(table, avg, iso, found, strict)


def answer_columns(p: _Profile) -> list[ColumnInfo]:
    """Columns worth asking about: not id-like, at most half NULL, no long free text."""
    return [
        c
        for c in p.table.columns
        if not _id_like(c, p.table)
        and _null_fraction(c, p.table) <= MAX_NULL_FRACTION_ANSWER
        and p.avg_length.get(c.name, 0) <= MAX_AVG_LENGTH
    ]


def _numeric(p: _Profile) -> list[ColumnInfo]:
    return [c for c in answer_columns(p) if c.is_numeric]


def _dates(p: _Profile) -> list[ColumnInfo]:
    return [c for c in answer_columns(p) if c.is_temporal or c.name in p.iso_dates]


@dataclass
class _Candidate:
    """A template to try: its kind, the table it reaches (whose row it answers from, or
    whose rows it counts, aggregates or lists: the sample is drawn per reached table and
    kind, so that a table many others refer to does not crowd them out), its SQL and id,
    and the order it is tried in (``priority`` first, then spread over ``spread``)."""

    kind: Kind
    table: str
    sql: str
    name: str
    spread: str = ""
    priority: int = 0
    note: str | None = None


@dataclass
class _Tried:
    """What was tried for one table: per kind, the candidates, those kept, and the best
    share of single-answer groups of those refused."""

    candidates: dict[Kind, int] = field(default_factory=lambda: defaultdict(int))
    kept: dict[Kind, int] = field(default_factory=lambda: defaultdict(int))
    refused: list[tuple[str, float]] = field(default_factory=list)


class _Sql:
    """The pieces of SQL the enumerator writes, quoted for one database."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def q(self, name: str) -> str:
        return _quote(self.db, name)

    def col(self, alias: str, column: str) -> str:
        return f"{alias}.{self.q(column)}"

    def named(self, naming: Naming, alias: str) -> str:
        """The name as one value: a column, or "first last"."""
        if not naming.composite:
            return self.col(alias, naming.columns[0])
        return " || ' ' || ".join(self.col(alias, c) for c in naming.columns)

    def condition(self, naming: Naming, alias: str) -> str:
        """The placeholders that name the row: one per column of the name."""
        return " AND ".join(
            f"{self.col(alias, c)} = '[{naming.table}.{c}]'" for c in naming.columns
        )

    def join_on(self, left: str, right: str, fk: ForeignKey) -> str:
        return " AND ".join(
            f"{self.col(left, a)} = {self.col(right, b)}"
            for a, b in zip(fk.columns, fk.ref_columns, strict=True)
        )

    def table(self, name: str, alias: str) -> str:
        return f"{self.q(name)} AS {alias}"


def _slug(naming: Naming) -> str:
    return "-".join(naming.columns)


def _threshold(db: Database, table: TableInfo, column: ColumnInfo) -> float | int | None:
    """The median of ``column``, rounded to two significant digits: a comparison most
    rows fall on either side of, written as a person would."""
    non_null = (table.row_count or 0) - (column.null_count or 0)
    if non_null < 2:
        return None
    c, t = _quote(db, column.name), _quote(db, table.name)
    rows = db.execute(
        f"SELECT {c} FROM {t} WHERE {c} IS NOT NULL ORDER BY {c} LIMIT 1 OFFSET {non_null // 2}"
    ).rows
    if not rows or rows[0][0] is None:
        return None
    try:
        value = float(rows[0][0])
    except (TypeError, ValueError):
        return None
    if not math.isfinite(value):
        return None
    if value == 0:
        return 0
    magnitude = 10 ** (math.floor(math.log10(abs(value))) - 1)
    rounded = round(value / magnitude) * magnitude
    return int(rounded) if float(rounded).is_integer() else round(rounded, 6)


def _busiest_year(db: Database, table: TableInfo, column: ColumnInfo) -> str | None:
    """The year most values of a date column fall in (the earliest of equals), among the
    years up to 2100: a far date such as 3999-12-31 says "still open", not a year."""
    c, t = _quote(db, column.name), _quote(db, table.name)
    year = f"SUBSTR(CAST({c} AS VARCHAR(40)), 1, 4)"
    rows = db.execute(
        f"SELECT {year}, COUNT(*) FROM {t} WHERE {c} IS NOT NULL AND {year} <= '{_LAST_YEAR}' "
        f"GROUP BY {year} "
        f"ORDER BY COUNT(*) DESC, {year} LIMIT 1"
    ).rows
    if not rows or not str(rows[0][0]).isdigit() or len(str(rows[0][0])) != 4:
        return None
    return str(rows[0][0])


def _answers_of(p: _Profile, sql: _Sql, alias: str) -> list[tuple[str, str, bool]]:
    """(expression, words for the id, is the row's name) of every answer of ``p``'s rows;
    a composite name is one answer ("first last"), its parts none."""
    composite = next((n for n in p.namings if n.composite), None)
    parts = set(composite.columns) if composite else set()
    named = {c for n in p.namings[:1] for c in n.columns}
    out = [
        (sql.col(alias, c.name), c.name, c.name in named)
        for c in answer_columns(p)
        if c.name not in parts
    ]
    if composite is not None:
        out.insert(0, (sql.named(composite, alias), "name", composite is p.namings[0]))
    return out


def _children(
    schema: SchemaInfo, profiles: Mapping[str, _Profile], parent: _Profile
) -> list[tuple[_Profile, ForeignKey]]:
    """The tables with rows whose foreign keys point at ``parent``, with the key."""
    out = []
    for p in profiles.values():
        for fk in p.table.foreign_keys:
            if fk.ref_table.lower() == parent.name.lower() and fk.ref_columns:
                out.append((p, fk))
    return out


def _links(profiles: Mapping[str, _Profile]) -> list[tuple[_Profile, ForeignKey, ForeignKey]]:
    """Tables linking two others (two foreign keys to tables with rows, no name)."""
    out = []
    for p in profiles.values():
        fks = [fk for fk in p.table.foreign_keys if fk.ref_table.lower() in profiles]
        if len(fks) == 2 and not p.namings and all(fk.ref_columns for fk in fks):
            out.append((p, fks[0], fks[1]))
    return out


def _lookups(p: _Profile, sql: _Sql) -> Iterable[_Candidate]:
    for rank, naming in enumerate(p.namings):
        for column in answer_columns(p):
            if column.name in naming.columns:
                continue
            yield _Candidate(
                "lookup",
                p.name,
                f"SELECT {sql.col('t', column.name)} FROM {sql.table(p.name, 't')} "
                f"WHERE {sql.condition(naming, 't')}",
                f"{column.name}-by-{p.name}-{_slug(naming)}",
                spread=column.name,
                priority=rank,
            )


def _paths(p: _Profile, profiles: Mapping[str, _Profile], sql: _Sql) -> Iterable[_Candidate]:
    if not p.namings:
        return
    naming = p.namings[0]

    def walk(
        current: _Profile, joins: list[str], via: list[str], used: set[ForeignKey]
    ) -> Iterable[_Candidate]:
        hop = len(via) + 1
        for fk in current.table.foreign_keys:
            target = profiles.get(fk.ref_table.lower())
            if target is None or not fk.ref_columns or fk in used:
                continue
            alias = f"r{hop}"
            left = "t" if hop == 1 else f"r{hop - 1}"
            step = f"JOIN {sql.table(target.name, alias)} ON {sql.join_on(left, alias, fk)}"
            chain = [*joins, step]
            names = [*via, "-".join(fk.columns)]
            for expr, answer, is_name in _answers_of(target, sql, alias):
                yield _Candidate(
                    "path",
                    target.name,
                    f"SELECT {expr} FROM {sql.table(p.name, 't')} {' '.join(chain)} "
                    f"WHERE {sql.condition(naming, 't')}",
                    f"{target.name}-{answer}-by-{p.name}-{_slug(naming)}-via-"
                    + "-via-".join(names),
                    spread=f"{hop}:{p.name}",
                    priority=0 if is_name else 1,
                )
            if hop < MAX_HOPS:
                yield from walk(target, chain, names, used | {fk})

    yield from walk(p, [], [], set())


def _over_children(
    db: Database,
    p: _Profile,
    schema: SchemaInfo,
    profiles: Mapping[str, _Profile],
    sql: _Sql,
) -> Iterable[_Candidate]:
    """Aggregates, superlatives, sets and date ranges over the rows referring to ``p``'s."""
    naming = p.strict
    if naming is None:
        return
    by = f"{p.name}-{_slug(naming)}"
    named = sql.condition(naming, "p")
    for child, fk in _children(schema, profiles, p):
        c_from = f"{sql.table(child.name, 'c')} JOIN {sql.table(p.name, 'p')} ON "
        c_from += sql.join_on("c", "p", fk)
        via = "-".join(fk.columns)
        counted = sql.col("c", fk.columns[0])
        spread = f"{child.name}.{via}"
        yield _Candidate(
            "count",
            child.name,
            f"SELECT COUNT({counted}) FROM {sql.table(p.name, 'p')} LEFT JOIN "
            f"{sql.table(child.name, 'c')} ON {sql.join_on('c', 'p', fk)} WHERE {named}",
            f"count-{child.name}-of-{by}-via-{via}",
            spread=spread,
        )
        for column in _numeric(child):
            x = sql.col("c", column.name)
            numeric: tuple[tuple[Kind, str], ...] = (
                ("sum", f"SUM({x})"),
                ("average", f"ROUND(CAST(AVG({x}) AS NUMERIC), 2)"),
                ("minimum", f"MIN({x})"),
                ("maximum", f"MAX({x})"),
            )
            for kind, expression in numeric:
                yield _Candidate(
                    kind,
                    child.name,
                    f"SELECT {expression} FROM {c_from} WHERE {named}",
                    f"{kind}-{child.name}-{column.name}-of-{by}-via-{via}",
                    spread=f"{spread}.{column.name}",
                )
        for column in _dates(child):
            x = sql.col("c", column.name)
            dated: tuple[tuple[Kind, str], ...] = (("minimum", "MIN"), ("maximum", "MAX"))
            for kind, func in dated:
                yield _Candidate(
                    kind,
                    child.name,
                    f"SELECT {func}({x}) FROM {c_from} WHERE {named}",
                    f"{kind}-{child.name}-{column.name}-of-{by}-via-{via}",
                    spread=f"{spread}.{column.name}",
                )
            year = _busiest_year(db, child.table, column)
            if year is not None:
                following = f"{int(year) + 1:04d}"
                yield _Candidate(
                    "date_range",
                    child.name,
                    f"SELECT COUNT({counted}) FROM {sql.table(p.name, 'p')} LEFT JOIN "
                    f"{sql.table(child.name, 'c')} ON {sql.join_on('c', 'p', fk)} "
                    f"AND {x} >= '{year}-01-01' AND {x} < '{following}-01-01' WHERE {named}",
                    f"count-{child.name}-in-{year}-of-{by}-via-{via}-{column.name}",
                    spread=f"{spread}.{column.name}",
                )
        if not child.namings:
            continue
        child_name = sql.named(child.namings[0], "c")
        same_parent = " AND ".join(f"{sql.col('c2', a)} = {sql.col('c', a)}" for a in fk.columns)
        for column in _numeric(child):
            x = sql.col("c", column.name)
            for func, word in (("MAX", "most"), ("MIN", "least")):
                yield _Candidate(
                    "superlative",
                    child.name,
                    f"SELECT {child_name} FROM {c_from} WHERE {named} AND {x} = (SELECT "
                    f"{func}({sql.col('c2', column.name)}) FROM {sql.table(child.name, 'c2')} "
                    f"WHERE {same_parent})",
                    f"{child.name}-{word}-{column.name}-of-{by}-via-{via}",
                    spread=f"{spread}.{column.name}",
                    priority=0 if func == "MAX" else 1,
                )
        child_key = child.table.primary_key
        if len(child_key) == 1:
            for grand, gfk in _children(schema, profiles, child):
                if len(gfk.columns) != 1 or grand.name == child.name:
                    continue
                g_col = sql.q(gfk.columns[0])
                key = sql.q(child_key[0])
                g_table = sql.q(grand.name)
                # Counted once per child by a grouped table, not per pair of children.
                counts = (
                    f"(SELECT g.{g_col} AS k, COUNT(*) AS n FROM {g_table} AS g GROUP BY g.{g_col})"
                )
                yield _Candidate(
                    "superlative",
                    child.name,
                    f"SELECT {child_name} FROM {c_from} JOIN {counts} AS cnt ON cnt.k = c.{key} "
                    f"WHERE {named} AND cnt.n = (SELECT MAX(cnt2.n) FROM {counts} AS cnt2 "
                    f"JOIN {sql.table(child.name, 'c2')} ON c2.{key} = cnt2.k WHERE {same_parent})",
                    f"{child.name}-most-{grand.name}-of-{by}-via-{via}",
                    spread=f"{spread}.{grand.name}",
                )
        yield _Candidate(
            "set",
            child.name,
            f"SELECT {child_name} FROM {c_from} WHERE {named}",
            f"{child.name}-of-{by}-via-{via}",
            spread=spread,
        )
        for column in _numeric(child):
            threshold = _threshold(db, child.table, column)
            if threshold is None:
                continue
            yield _Candidate(
                "set",
                child.name,
                f"SELECT {child_name} FROM {c_from} WHERE {named} AND "
                f"{sql.col('c', column.name)} > {threshold}",
                f"{child.name}-over-{column.name}-of-{by}-via-{via}",
                spread=f"{spread}.{column.name}",
                priority=1,
            )


def _through_links(
    p: _Profile, profiles: Mapping[str, _Profile], sql: _Sql
) -> Iterable[_Candidate]:
    """The rows linked to ``p``'s through a link table: their count and their names."""
    naming = p.strict
    if naming is None:
        return
    for link, fk1, fk2 in _links(profiles):
        for mine, other in ((fk1, fk2), (fk2, fk1)):
            if mine.ref_table.lower() != p.name.lower():
                continue
            far = profiles[other.ref_table.lower()]
            joins = (
                f"{sql.table(p.name, 'p')} JOIN {sql.table(link.name, 'x')} ON "
                f"{sql.join_on('x', 'p', mine)} JOIN {sql.table(far.name, 'b')} ON "
                f"{sql.join_on('x', 'b', other)}"
            )
            by = f"{p.name}-{_slug(naming)}-via-{link.name}"
            yield _Candidate(
                "count",
                far.name,
                f"SELECT COUNT({sql.col('x', other.columns[0])}) FROM {sql.table(p.name, 'p')} "
                f"LEFT JOIN {sql.table(link.name, 'x')} ON {sql.join_on('x', 'p', mine)} "
                f"WHERE {sql.condition(naming, 'p')}",
                f"count-{far.name}-of-{by}",
                spread=link.name,
            )
            if far.namings:
                yield _Candidate(
                    "set",
                    far.name,
                    f"SELECT {sql.named(far.namings[0], 'b')} FROM {joins} "
                    f"WHERE {sql.condition(naming, 'p')}",
                    f"{far.name}-of-{by}",
                    spread=link.name,
                )


def _link_attributes(profiles: Mapping[str, _Profile], sql: _Sql) -> Iterable[_Candidate]:
    """A link table's own attributes by the names of both rows it links."""
    for link, fk1, fk2 in _links(profiles):
        r1, r2 = profiles[fk1.ref_table.lower()], profiles[fk2.ref_table.lower()]
        single1 = [n for n in r1.namings if not n.composite]
        single2 = [n for n in r2.namings if not n.composite]
        if not single1 or not single2:
            continue
        n1, n2 = single1[0], single2[0]
        from_sql = (
            f"{sql.table(link.name, 'x')} JOIN {sql.table(r1.name, 'a')} ON "
            f"{sql.join_on('x', 'a', fk1)} JOIN {sql.table(r2.name, 'b')} ON "
            f"{sql.join_on('x', 'b', fk2)}"
        )
        for column in answer_columns(link):
            yield _Candidate(
                "lookup",
                link.name,
                f"SELECT {sql.col('x', column.name)} FROM {from_sql} WHERE "
                f"{sql.condition(n1, 'a')} AND {sql.condition(n2, 'b')}",
                f"{column.name}-by-{r1.name}-{_slug(n1)}-{r2.name}-{_slug(n2)}",
                spread=column.name,
            )


def _yes_no(db: Database, p: _Profile, sql: _Sql) -> Iterable[_Candidate]:
    naming = p.strict or (p.namings[0] if p.namings else None)
    if naming is None:
        return
    for column in _numeric(p):
        threshold = _threshold(db, p.table, column)
        if threshold is None:
            continue
        x = sql.col("t", column.name)
        yield _Candidate(
            "yes_no",
            p.name,
            f"SELECT CASE WHEN {x} > {threshold} THEN 'yes' WHEN {x} <= {threshold} THEN 'no' "
            f"END FROM {sql.table(p.name, 't')} WHERE {sql.condition(naming, 't')}",
            f"is-{column.name}-over-{threshold}-{p.name}-{_slug(naming)}",
            spread=column.name,
        )


def _ordered(candidates: list[_Candidate], seed: str) -> list[_Candidate]:
    """The candidates of one table and kind in the order they are tried: by priority,
    then taking one of each spread in turn (seeded), so that a small sample reaches many
    columns and related tables."""
    rng = random.Random(seed)
    out: list[_Candidate] = []
    for priority in sorted({c.priority for c in candidates}):
        groups: dict[str, list[_Candidate]] = defaultdict(list)
        for c in candidates:
            if c.priority == priority:
                groups[c.spread].append(c)
        lists = [groups[k] for k in sorted(groups)]
        rng.shuffle(lists)
        for items in lists:
            rng.shuffle(items)
        while any(lists):
            for items in lists:
                if items:
                    out.append(items.pop())
    return out


def _ambiguity_note(ambiguous: list[dict[str, Any]], count: int, groups: int) -> str:
    shown = [
        " and ".join(f"{k.split('.', 1)[1]}={v!r}" for k, v in bindings.items())
        for bindings in ambiguous[:NAMED_GROUPS]
    ]
    more = f" (and {count - len(shown)} more)" if count > len(shown) else ""
    verb = "has" if count == 1 else "have"
    return (
        f"{count} of {groups} groups {verb} several answers and "
        f"{'is' if count == 1 else 'are'} dropped at generate: {', '.join(shown)}{more}"
    )


def _group_sizes(db: Database, plan_: Plan) -> dict[int, int]:
    """How many groups of the planned template have each number of distinct answers (a
    NULL answer counts as one), in one statement: the database groups, nothing streams."""
    keys = ", ".join(f"g.__p{i}" for i in range(len(plan_.placeholders)))
    rows = db.execute(
        f"SELECT n, COUNT(*) FROM (SELECT COUNT(DISTINCT g.__answer) AS n FROM ({plan_.sql}) "
        f"AS g GROUP BY {keys}) AS s GROUP BY n"
    ).rows
    out: dict[int, int] = defaultdict(int)
    for n, count in rows:
        out[max(int(n or 0), 1)] += int(count)
    return dict(out)


def _ambiguous_groups(db: Database, plan_: Plan) -> list[dict[str, Any]]:
    """The bindings of the first groups with several answers, to name them."""
    keys = ", ".join(f"g.__p{i}" for i in range(len(plan_.placeholders)))
    rows = db.execute(
        f"SELECT {keys} FROM ({plan_.sql}) AS g GROUP BY {keys} "
        f"HAVING COUNT(DISTINCT g.__answer) > 1 ORDER BY {keys} LIMIT {NAMED_GROUPS}"
    ).rows
    names = [p.key for p in plan_.placeholders]
    return [dict(zip(names, row, strict=True)) for row in rows]


def _median(sizes: Mapping[int, int]) -> float:
    expanded = [n for n, count in sorted(sizes.items()) for _ in range(count)]
    return float(statistics.median(expanded))


def _check(db: Database, schema: SchemaInfo, candidate: _Candidate) -> tuple[bool, float]:
    """Whether the candidate is kept (its note set), and its share of good groups: a set
    when its median answer has at most MAX_SET_SIZE rows, any other kind when all but few
    groups have a single answer."""
    try:
        check_template(candidate.sql, schema, dialect=db.sqlglot_dialect)
        plan_ = plan(candidate.sql, schema, dialect=db.sqlglot_dialect)
        sizes = _group_sizes(db, plan_)
    except UserError:
        return False, 0.0
    groups = sum(sizes.values())
    if not groups:
        return False, 0.0
    if candidate.kind == "set":
        return _median(sizes) <= MAX_SET_SIZE, 1.0
    multi = groups - sizes.get(1, 0)
    share = (groups - multi) / groups
    if multi == groups or not few_exceptions(multi, groups):
        return False, share
    if multi:
        candidate.note = _ambiguity_note(_ambiguous_groups(db, plan_), multi, groups)
    return True, share


PerKind = Mapping[Kind, int] | int | None


def kind_limits(per_kind: PerKind) -> dict[Kind, int | None]:
    """How many templates of each kind a table keeps: the defaults, the same number for
    every kind, or a number per kind (kinds left out keep their default); None: all."""
    if per_kind is None:
        return dict(DEFAULT_PER_KIND)
    if isinstance(per_kind, int):
        return {kind: per_kind for kind in KINDS}
    return {kind: per_kind.get(kind, DEFAULT_PER_KIND[kind]) for kind in KINDS}


@dataclass
class Enumeration:
    """The templates found, in schema order; for every table that no template reads, why;
    and per table and kind, how many candidates there were and how many were kept."""

    templates: list[SqlTemplate]
    notes: dict[str, str]
    candidates: dict[str, dict[Kind, int]] = field(default_factory=dict)
    kept: dict[str, dict[Kind, int]] = field(default_factory=dict)


def enumerate_templates(
    db: Database, schema: SchemaInfo, *, per_kind: PerKind = None, all_kinds: bool = False
) -> Enumeration:
    """Every kind of template the rules above find, at most ``per_kind`` per table and
    kind (``all_kinds``: every one), with unique ids; and one explanation per table that
    no template reads (empty tables included)."""
    limits = {k: None for k in KINDS} if all_kinds else kind_limits(per_kind)
    profiles = {t.name.lower(): _profile(db, t) for t in schema.tables if t.row_count}
    sql = _Sql(db)
    by_table: dict[str, list[_Candidate]] = defaultdict(list)
    for p in profiles.values():
        for candidate in itertools.chain(
            _lookups(p, sql),
            _paths(p, profiles, sql),
            _over_children(db, p, schema, profiles, sql),
            _through_links(p, profiles, sql),
            _yes_no(db, p, sql),
        ):
            by_table[candidate.table].append(candidate)
    for candidate in _link_attributes(profiles, sql):
        by_table[candidate.table].append(candidate)
    tried: dict[str, _Tried] = {name: _Tried() for name in by_table}
    chosen: list[_Candidate] = []
    for name in (t.name for t in schema.tables):
        for kind in KINDS:
            of_kind = [c for c in by_table.get(name, []) if c.kind == kind]
            if not of_kind:
                continue
            record = tried[name]
            record.candidates[kind] = len(of_kind)
            limit = limits[kind]
            for candidate in _ordered(of_kind, f"{name}:{kind}"):
                if limit is not None and record.kept[kind] >= limit:
                    break
                ok, share = _check(db, schema, candidate)
                if ok:
                    record.kept[kind] += 1
                    chosen.append(candidate)
                else:
                    record.refused.append((candidate.name, share))
    templates = new_templates([c.sql for c in chosen], "enumerator", names=[c.name for c in chosen])
    by_sql = {" ".join(c.sql.split()): c for c in chosen}
    templates = [
        t.model_copy(update={"note": by_sql[t.sql].note, "kind": by_sql[t.sql].kind})
        for t in templates
    ]
    read = {
        read_table.lower()
        for t in templates
        for read_table in reach(t.sql, schema, dialect=db.sqlglot_dialect, declared=t.kind).tables
    }
    notes: dict[str, str] = {}
    referred = {fk.ref_table.lower() for t in schema.tables for fk in t.foreign_keys}
    for table in schema.tables:
        if table.name.lower() in read:
            continue
        profile = profiles.get(table.name.lower())
        related = bool(table.foreign_keys) or table.name.lower() in referred
        notes[table.name] = (
            "no rows" if profile is None else _explain(profile, tried.get(table.name), related)
        )
    return Enumeration(
        templates,
        notes,
        {t: dict(r.candidates) for t, r in tried.items()},
        {t: dict(r.kept) for t, r in tried.items()},
    )


def _explain(p: _Profile, tried: _Tried | None, related: bool) -> str:
    """Why no template reads a table with rows (``related``: it has foreign keys or is
    referred to)."""
    if not p.namings:
        reason = why_unnamed(p.table)
        if related:
            reason += "; no named row refers to it or is referred to by it with anything to ask"
        return reason
    if tried is None or not tried.refused:
        return (
            "no column to ask about besides its name (every other is id-like, mostly NULL "
            "or long text)"
        )
    name, share = max(tried.refused, key=lambda t: t[1])
    return (
        f"its name determines no answer in at least {1 - MAX_EXCEPTION_SHARE:.0%} of its "
        f"groups (best: {name}, {share:.0%}), nor in all but one of at least "
        f"{MIN_FOR_ONE_EXCEPTION}"
    )


def why_no_template(db: Database, schema: SchemaInfo, names: Collection[str]) -> dict[str, str]:
    """Why the enumerator finds no template asked by each table of ``names``, where the
    schema and one profile query per table can tell: ``no rows``, or nothing names its
    rows and nothing refers to it (a table that links others or is referred to is left
    out: the enumerator reaches it through them). The reasons only the enumerator's
    search of the data gives are left out, so that ``generate`` can say why the tables
    no template reads have none at the price of a scan each, whatever their size."""
    wanted = {n.lower() for n in names}
    referred = {fk.ref_table.lower() for t in schema.tables for fk in t.foreign_keys}
    out = {}
    for table in schema.tables:
        if table.name.lower() not in wanted:
            continue
        if not table.row_count:
            out[table.name] = "no rows"
            continue
        if table.foreign_keys or table.name.lower() in referred:
            continue
        p = _profile(db, table)
        if not p.namings:
            out[table.name] = why_unnamed(table)
    return out


FILE_HAS_NONE = "no template of templates/sql.yaml reads it"


def untemplated(
    db: Database, schema: SchemaInfo, read: Collection[str], *, empty: bool = False
) -> dict[str, str | None]:
    """Why no template reads each table with rows outside ``read`` (the tables the
    templates read): :func:`why_no_template`'s reason where a scan of the table tells it,
    else None (the templates file has none for it); with ``empty``, the tables without
    rows too ("no rows"). A reason is a courtesy: a database error leaves the reasons
    out, never the step."""
    seen = {n.lower() for n in read}
    names = [t.name for t in schema.tables if (t.row_count or empty) and t.name.lower() not in seen]
    if not names:
        return {}
    try:
        found = why_no_template(db, schema, names)
    except UserError:
        found = {}
    return {name: found.get(name) for name in names}


__all__ = [
    "FILE_HAS_NONE",
    "Enumeration",
    "answer_columns",
    "enumerate_templates",
    "foreign_key_columns",
    "is_id_like",
    "kind_limits",
    "untemplated",
    "why_no_template",
]
