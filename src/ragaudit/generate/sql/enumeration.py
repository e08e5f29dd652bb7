"""The schema enumerator: SQL templates from the schema and the data, without an LLM.

Rules (docs/generate.md states them for users):

* **id-like columns** are never asked about nor used as keys: primary- and foreign-key
  columns, and names such as ``id``, ``*_id``, ``*Id``, ``*_key``, ``uuid``/``guid``;
* **mostly-NULL columns** (more than half NULL) are never answers;
* **long free text** (average length over 80 characters) is never an answer nor a key;
* a **descriptive key** is a text column whose name says it names the row (``name``,
  ``title``, ``label``, ``code``, ``email``), at most 10 % NULL and nearly unique: few of
  its values repeat an earlier one (:func:`few_exceptions`: at most 10 %, or a single one
  among at least five, so that a table of seven people may have two called Ann Lee);
* a template ``SELECT A FROM T WHERE K = '[T.K]'`` is kept when K determines A **per
  group** often enough: few of the key's values with an answer have several (the same
  :func:`few_exceptions`; the paper's single-answer rule applies to groups, not tables: a
  name that occurs twice with two different answers makes that group ambiguous, and
  instantiation drops it, or keeps it as a set with ``--allow-multi``). One GROUP BY per
  key checks every answer column at once; the ambiguous groups of a kept template are
  named in its ``note``;
* across a **foreign key** T.fk -> R: the key of T, the answer from R
  (``SELECT r.A FROM T t JOIN R r ON t.fk = r.pk WHERE t.K = '[T.K]'``);
* through an **association table** X with foreign keys to R1 and R2: X's own attributes,
  asked by the keys of R1 and R2 together (two placeholders).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from ragaudit.db.engine import Database
from ragaudit.db.schema import ColumnInfo, ForeignKey, SchemaInfo, TableInfo
from ragaudit.errors import UserError
from ragaudit.generate.sql.templates import SqlTemplate, new_templates, normalize_sql

_ID_NAME = re.compile(r"(^id$|_id$|[a-z0-9]Id$|ID$|^id_|_key$|uuid|guid)", re.IGNORECASE)
_KEY_NAME = re.compile(r"(name|title|label|code|email)", re.IGNORECASE)
MAX_NULL_FRACTION_ANSWER = 0.5
MAX_NULL_FRACTION_KEY = 0.1
MAX_AVG_LENGTH = 80
# A key's repeated values, a template's ambiguous groups: at most this share of them ...
MAX_EXCEPTION_SHARE = 0.1
# ... or a single one among at least this many (in a small table one is over 10 %).
MIN_FOR_ONE_EXCEPTION = 5
NAMED_GROUPS = 3  # ambiguous groups a template's note names


def few_exceptions(exceptions: int, total: int) -> bool:
    """Whether ``exceptions`` of ``total`` (values of a key that repeat an earlier one,
    groups of a template with several answers) are few enough to drop: at most 10 %, or a
    single one among at least five. A share alone refuses a seven-row table for one
    repeated name (86 % distinct); a count alone would take a column of three values, two
    alike, for a key.

    >>> few_exceptions(1, 7), few_exceptions(2, 7), few_exceptions(1, 4), few_exceptions(10, 100)
    (True, False, False, True)
    """
    return exceptions <= MAX_EXCEPTION_SHARE * total or (
        exceptions == 1 and total >= MIN_FOR_ONE_EXCEPTION
    )


def _exceptions_rule() -> str:
    return f"at most {MAX_EXCEPTION_SHARE:.0%}, or one of at least {MIN_FOR_ONE_EXCEPTION}"


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
        if not few_exceptions(non_null - (c.distinct_count or 0), non_null):
            continue
        if p.avg_length.get(c.name, 0) > MAX_AVG_LENGTH:
            continue
        keys.append(c)
    return keys


@dataclass(frozen=True)
class Determination:
    """How well a key determines one answer column: of the key's values with an answer,
    how many have exactly one."""

    answered: int
    single: int

    @property
    def share(self) -> float:
        """Share of the answered groups that have a single answer."""
        return self.single / self.answered if self.answered else 0.0

    @property
    def ambiguous(self) -> int:
        """Groups with several answers (dropped at instantiation)."""
        return self.answered - self.single

    @property
    def enough(self) -> bool:
        """The template is worth keeping: its ambiguous groups are few enough to drop."""
        return self.single >= 1 and few_exceptions(self.ambiguous, self.answered)


def _determination(
    db: Database, from_sql: str, keys: list[str], answers: list[str]
) -> list[Determination]:
    """For each answer expression: how many key (tuple) values have an answer, and how
    many exactly one. One GROUP BY for all answers."""
    if not answers:
        return []
    counts = ", ".join(f"COUNT(DISTINCT {a}) AS d{i}" for i, a in enumerate(answers))
    not_null = " AND ".join(f"{k} IS NOT NULL" for k in keys)
    inner = f"SELECT {counts} FROM {from_sql} WHERE {not_null} GROUP BY {', '.join(keys)}"
    outer = ", ".join(
        [f"SUM(CASE WHEN d{i} >= 1 THEN 1 ELSE 0 END)" for i in range(len(answers))]
        + [f"SUM(CASE WHEN d{i} = 1 THEN 1 ELSE 0 END)" for i in range(len(answers))]
    )
    row = db.execute(f"SELECT {outer} FROM ({inner}) AS g").rows[0]
    n = len(answers)
    return [Determination(int(row[i] or 0), int(row[n + i] or 0)) for i in range(n)]


def _ambiguous_values(
    db: Database, from_sql: str, keys: list[str], answer: str, limit: int = NAMED_GROUPS
) -> list[tuple[object, ...]]:
    """The first key (tuple) values with several answers, to name them."""
    not_null = " AND ".join(f"{k} IS NOT NULL" for k in keys)
    group = ", ".join(keys)
    sql = (
        f"SELECT {group} FROM {from_sql} WHERE {not_null} GROUP BY {group} "
        f"HAVING COUNT(DISTINCT {answer}) > 1 ORDER BY {group} LIMIT {limit}"
    )
    return [tuple(row) for row in db.execute(sql).rows]


@dataclass
class _Candidate:
    """A template found, with the groups it will drop."""

    sql: str
    name: str
    note: str | None = None


@dataclass
class _Found:
    """Templates found for one table, and what was tried, for the explanation."""

    out: list[_Candidate]  # every table's templates, in the order found
    kept: int = 0
    # (key, answer column, share of single-answer groups) of every pair tried
    tried: list[tuple[str, str, float]] = field(default_factory=list)

    def add(
        self,
        key: str,
        answer: str,
        d: Determination,
        sql: str,
        name: str,
        ambiguous: Callable[[], list[tuple[object, ...]]],
        key_names: list[str],
    ) -> None:
        """Record a pair tried; keep its template when ``d`` is enough, with a note that
        names its ambiguous groups (``ambiguous`` asks the database for them)."""
        self.tried.append((key, answer, d.share))
        if not d.enough:
            return
        note = None
        if d.ambiguous:
            shown = [
                " and ".join(f"{k}={v!r}" for k, v in zip(key_names, values, strict=True))
                for values in ambiguous()
            ]
            more = f" (and {d.ambiguous - len(shown)} more)" if d.ambiguous > len(shown) else ""
            verb = "has" if d.ambiguous == 1 else "have"
            note = (
                f"{d.ambiguous} of {d.answered} groups {verb} several answers and "
                f"{'is' if d.ambiguous == 1 else 'are'} dropped at generate: "
                f"{', '.join(shown)}{more}"
            )
        self.out.append(_Candidate(sql, name, note))
        self.kept += 1


def _single_table(db: Database, p: _Profile, found: _Found) -> None:
    q = _quote
    table = q(db, p.table.name)
    answers = answer_columns(p)
    for key in key_columns(p):
        others = [a for a in answers if a.name != key.name]
        keys = [q(db, key.name)]
        ok = _determination(db, table, keys, [q(db, a.name) for a in others])
        for answer, d in zip(others, ok, strict=True):
            found.add(
                key.name,
                answer.name,
                d,
                f"SELECT {q(db, answer.name)} FROM {table} "
                f"WHERE {q(db, key.name)} = '[{p.table.name}.{key.name}]'",
                f"{answer.name}-by-{p.table.name}-{key.name}",
                functools.partial(_ambiguous_values, db, table, keys, q(db, answer.name)),
                [key.name],
            )


def _join_on(db: Database, left: str, right: str, fk: ForeignKey) -> str:
    return " AND ".join(
        f"{left}.{_quote(db, a)} = {right}.{_quote(db, b)}"
        for a, b in zip(fk.columns, fk.ref_columns, strict=True)
    )


def _across_foreign_keys(
    db: Database, p: _Profile, profiles: dict[str, _Profile], found: _Found
) -> None:
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
            keys = [f"t.{q(db, key.name)}"]
            ok = _determination(db, from_sql, keys, exprs)
            for answer, expr, d in zip(answers, exprs, ok, strict=True):
                found.add(
                    key.name,
                    f"{ref.table.name}.{answer.name}",
                    d,
                    f"SELECT {expr} FROM {from_sql} "
                    f"WHERE t.{q(db, key.name)} = '[{p.table.name}.{key.name}]'",
                    f"{ref.table.name}-{answer.name}-by-{p.table.name}-{key.name}"
                    f"-via-{'-'.join(fk.columns)}",
                    functools.partial(_ambiguous_values, db, from_sql, keys, expr),
                    [key.name],
                )


def _through_association(
    db: Database, p: _Profile, profiles: dict[str, _Profile], found: _Found
) -> None:
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
            ok = _determination(db, from_sql, keys, exprs)
            for answer, expr, d in zip(answers, exprs, ok, strict=True):
                found.add(
                    f"{r1.table.name}.{k1.name} and {r2.table.name}.{k2.name}",
                    answer.name,
                    d,
                    f"SELECT {expr} FROM {from_sql} "
                    f"WHERE a.{q(db, k1.name)} = '[{r1.table.name}.{k1.name}]' "
                    f"AND b.{q(db, k2.name)} = '[{r2.table.name}.{k2.name}]'",
                    f"{answer.name}-by-{r1.table.name}-{k1.name}-{r2.table.name}-{k2.name}",
                    functools.partial(_ambiguous_values, db, from_sql, keys, expr),
                    [f"{r1.table.name}.{k1.name}", f"{r2.table.name}.{k2.name}"],
                )


def _why_no_key(p: _Profile) -> str:
    """Why no column of the table names its rows."""
    named = [
        c
        for c in p.table.columns
        if c.is_text and not is_id_like(c, p.table, p.fk_columns) and _KEY_NAME.search(c.name)
    ]
    if not named:
        return "no text column named like name, title, label, code or email to ask by"
    reasons = []
    for c in named:
        non_null = (p.table.row_count or 0) - (c.null_count or 0)
        if _null_fraction(c, p.table) > MAX_NULL_FRACTION_KEY:
            reasons.append(f"{c.name} is {_null_fraction(c, p.table):.0%} NULL (at most 10%)")
        elif non_null and not few_exceptions(non_null - (c.distinct_count or 0), non_null):
            repeated = non_null - (c.distinct_count or 0)
            reasons.append(
                f"{c.name} repeats {repeated} of its {non_null} values ({_exceptions_rule()})"
            )
        else:
            reasons.append(f"{c.name} is long free text")
    return "no key names its rows: " + "; ".join(reasons)


def _explain(p: _Profile, found: _Found) -> str:
    """Why a table yielded no template."""
    if not key_columns(p):
        return _why_no_key(p)
    if not answer_columns(p) and not found.tried:
        return "no column to ask about (every column is id-like, mostly NULL or long text)"
    if not found.tried:
        return "no column to ask about besides its key"
    key, answer, share = max(found.tried, key=lambda t: t[2])
    return (
        f"{key} determines no column in at least {1 - MAX_EXCEPTION_SHARE:.0%} of its groups "
        f"(best: {answer}, {share:.0%}), nor in all but one of at least "
        f"{MIN_FOR_ONE_EXCEPTION}"
    )


@dataclass
class Enumeration:
    """The templates found, in schema order, and for every table that yielded none, why."""

    templates: list[SqlTemplate]
    notes: dict[str, str]


def enumerate_templates(db: Database, schema: SchemaInfo) -> Enumeration:
    """Every template the rules above find, in schema order, with unique ids; and one
    explanation per table that yields none (empty tables included)."""
    profiles = {t.name.lower(): _profile(db, t) for t in schema.tables if t.row_count}
    ordered: list[_Candidate] = []
    found = {name: _Found(ordered) for name in profiles}
    for name, p in profiles.items():
        _single_table(db, p, found[name])
    for name, p in profiles.items():
        _across_foreign_keys(db, p, profiles, found[name])
    for name, p in profiles.items():
        _through_association(db, p, profiles, found[name])
    notes = {t.name: "no rows" for t in schema.tables if not t.row_count}
    for name, p in profiles.items():
        if not found[name].kept:
            notes[p.table.name] = _explain(p, found[name])
    templates = new_templates(
        [c.sql for c in ordered], "enumerator", names=[c.name for c in ordered]
    )
    # new_templates keeps the first of two alike: the notes follow the same order.
    notes_by_sql = {normalize_sql(c.sql): c.note for c in reversed(ordered)}
    templates = [t.model_copy(update={"note": notes_by_sql.get(t.sql)}) for t in templates]
    return Enumeration(templates, {t.name: notes[t.name] for t in schema.tables if t.name in notes})


def why_no_template(db: Database, schema: SchemaInfo, names: Collection[str]) -> dict[str, str]:
    """Why the enumerator finds no template asked by each table of ``names``, where the
    schema and one profile query per table can tell: ``no rows``, or no column names its
    rows (a table linking two others is left out: the enumerator asks it through their
    keys). The reasons only the enumerator's search of the data gives (a GROUP BY per key,
    what ``templates sql`` costs) are left out, so that ``generate`` can say why the
    tables no template reads have none at the price of a scan each, whatever their size."""
    wanted = {n.lower() for n in names}
    out = {}
    for table in schema.tables:
        if table.name.lower() not in wanted:
            continue
        if not table.row_count:
            out[table.name] = "no rows"
            continue
        p = _profile(db, table)
        if key_columns(p):
            continue
        linked = [
            fk
            for fk in table.foreign_keys
            if (ref := schema.table(fk.ref_table)) is not None and ref.row_count
        ]
        if len(linked) != 2:
            out[table.name] = _why_no_key(p)
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
