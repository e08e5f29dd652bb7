"""Which columns identify a table's rows: the name a question asks an entity by, and the
name a document is titled with.

One rule serves the enumerator (its keys) and ``world --from-db`` (the entity's name), so
that a question and the document it is answered from name a row alike. A column
identifies when

* it is text, no key of the database (a foreign key or a numeric primary key), and not
  named like a record id;
* its name says it names the row: the words *name*, *title*, *label*, *code*, *email*,
  *username*, *login*, *handle*, *sku*, *ref*, *reference* or *serial*, but not an
  attribute that merely looks like a name: a postal or zip code, a job title, a title of
  courtesy, a first, middle or last name alone (first and last name together identify:
  see below);
* it is at most 10 % NULL and nearly unique: few of its values repeat an earlier one
  (:func:`few_exceptions`). A job title shared by three sales agents names none of them.

A person's **first and last name together** identify where neither does alone: the pair
(``FirstName``, ``LastName``) is a composite name, asked with two placeholders of the
same table (``WHERE e.FirstName = '[Employee.FirstName]' AND e.LastName =
'[Employee.LastName]'``) and written "first last".

The best name comes first: a column called just *name* (or the table's own name
followed by *name*: ``CompanyName`` of ``Company``), then the composite first and last
name, then a *title*, any other *name*, a *label*, a *code*, a *username*, an *email*.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragaudit.db.engine import Database
from ragaudit.db.schema import ColumnInfo, TableInfo

ID_NAME = re.compile(r"(^id$|_id$|[a-z0-9]Id$|ID$|^id_|_key$|uuid|guid)", re.IGNORECASE)
MAX_NULL_FRACTION_KEY = 0.1
# A key's repeated values, a template's ambiguous groups: at most this share of them ...
MAX_EXCEPTION_SHARE = 0.1
# ... or a single one among at least this many (in a small table one is over 10 %).
MIN_FOR_ONE_EXCEPTION = 5

# Words of a column name that say it names its row, best first.
_NAMING_WORDS = (
    "name",
    "title",
    "label",
    "code",
    "username",
    "login",
    "handle",
    "sku",
    "ref",
    "reference",
    "serial",
    "email",
)
# Words that make a naming word an attribute: a postal code, a job title, a title of
# courtesy; a first, middle or last name alone.
_NOT_NAMING = frozenset(
    {"postal", "zip", "post", "postcode", "zipcode", "job", "courtesy", "position", "role"}
)
# Words after a naming word that say only how it is stored.
_TYPE_SUFFIX = frozenset({"txt", "text", "str", "string", "val", "value"})
_FIRST = frozenset({"first", "given", "forename", "firstname", "givenname"})
_LAST = frozenset({"last", "family", "surname", "lastname", "familyname"})
_PART = _FIRST | _LAST | {"middle", "middlename", "nick", "nickname", "maiden"}


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


def exceptions_rule() -> str:
    """:func:`few_exceptions` in words, for the messages that cite it."""
    return f"at most {MAX_EXCEPTION_SHARE:.0%}, or one of at least {MIN_FOR_ONE_EXCEPTION}"


def name_words(identifier: str) -> list[str]:
    """A column's name as lower-case words: ``FirstName`` -> first, name;
    ``postal_code`` -> postal, code; ``EMail`` -> e, mail -> email.

    >>> name_words("FirstName"), name_words("TitleOfCourtesy"), name_words("e_mail")
    (['first', 'name'], ['title', 'of', 'courtesy'], ['email'])
    """
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", identifier)
    parts = spaced.replace("_", " ").replace("-", " ").lower().split()
    joined: list[str] = []
    for part in parts:
        if part == "mail" and joined and joined[-1] == "e":
            joined[-1] = "email"
        else:
            joined.append(part)
    return joined


def _null_fraction(column: ColumnInfo, table: TableInfo) -> float:
    if not table.row_count:
        return 1.0
    return (column.null_count or 0) / table.row_count


def foreign_key_columns(table: TableInfo) -> set[str]:
    """The columns of ``table`` that take part in one of its foreign keys."""
    return {c for fk in table.foreign_keys for c in fk.columns}


def is_id_like(column: ColumnInfo, table: TableInfo) -> bool:
    """Record identifiers: a numeric primary key, a foreign-key column, and columns named
    like ids (``id``, ``*_id``, ``*Id``, ``*_key``, ``uuid``)."""
    return (
        (column.primary_key and not column.is_text)
        or column.name in foreign_key_columns(table)
        or bool(ID_NAME.search(column.name))
    )


def naming_rank(column: ColumnInfo, table: TableInfo) -> int | None:
    """How well the name of ``column`` says it names a row of ``table`` (lower is better),
    or None when it does not (an attribute that looks like a name: a postal code, a job
    title, a first name alone). The data is not looked at: :func:`identifies` does."""
    if not column.is_text or is_id_like(column, table):
        return None
    ws = name_words(column.name)
    if not ws or _NOT_NAMING & set(ws) or _PART & set(ws):
        return None
    table_words = name_words(table.name)
    if ws == ["name"] or (ws[-1:] == ["name"] and ws[:-1] == table_words[: len(ws) - 1]):
        return 0
    while len(ws) > 1 and ws[-1] in _TYPE_SUFFIX:  # MET_REF_TXT, NAME_STR
        ws = ws[:-1]
    last = ws[-1]
    if last.endswith("name") and last != "name" and last not in _PART:
        last = "name"  # "fullname", "username" written as one word
    if last in _NAMING_WORDS:
        return 2 + _NAMING_WORDS.index(last)
    if ws[0] in _NAMING_WORDS and len(ws) <= 2:  # "name_en", "title1"
        return 2 + _NAMING_WORDS.index(ws[0]) + len(_NAMING_WORDS)
    return None


def why_not_unique(column: ColumnInfo, table: TableInfo) -> str | None:
    """Why the values of ``column`` cannot name the rows of ``table`` (too many NULLs,
    too many repeats), or None when they can."""
    non_null = (table.row_count or 0) - (column.null_count or 0)
    if non_null <= 0:
        return f"{column.name} holds no value"
    fraction = _null_fraction(column, table)
    if fraction > MAX_NULL_FRACTION_KEY:
        return f"{column.name} is {fraction:.0%} NULL (at most {MAX_NULL_FRACTION_KEY:.0%})"
    repeated = non_null - (column.distinct_count or 0)
    if not few_exceptions(repeated, non_null):
        return f"{column.name} repeats {repeated} of its {non_null} values ({exceptions_rule()})"
    return None


def identifies(column: ColumnInfo, table: TableInfo) -> bool:
    """Whether ``column`` is named like an identifier and its values name the rows."""
    return naming_rank(column, table) is not None and why_not_unique(column, table) is None


@dataclass(frozen=True)
class Naming:
    """The columns that name a row of a table: one, or a person's first and last name."""

    table: str
    columns: tuple[str, ...]

    @property
    def composite(self) -> bool:
        """Named by two columns together (first and last name)."""
        return len(self.columns) > 1

    def written(self, values: Sequence[object]) -> str:
        """The name as a question or a document writes it: the values joined by a space."""
        return " ".join(str(v) for v in values)


def name_part(column: ColumnInfo, table: TableInfo) -> str | None:
    """``first`` or ``last`` for a text column holding a person's first or last name."""
    if not column.is_text or is_id_like(column, table):
        return None
    ws = set(name_words(column.name))
    if ws & _FIRST and ("name" in ws or ws & {"forename", "firstname", "givenname"}):
        return "first"
    if ws & _LAST and ("name" in ws or ws & {"surname", "lastname", "familyname"}):
        return "last"
    return None


def composite_candidate(table: TableInfo) -> tuple[str, str] | None:
    """The (first name, last name) columns of ``table`` when it has one of each, each at
    most 10 % NULL; whether the pair is unique takes a query (:func:`pair_repeats`)."""
    first = [c for c in table.columns if name_part(c, table) == "first"]
    last = [c for c in table.columns if name_part(c, table) == "last"]
    if len(first) != 1 or len(last) != 1:
        return None
    if any(_null_fraction(c, table) > MAX_NULL_FRACTION_KEY for c in (first[0], last[0])):
        return None
    return first[0].name, last[0].name


def _quote(db: Database, name: str) -> str:
    return db.engine.dialect.identifier_preparer.quote(name)


def pair_repeats(db: Database, table: TableInfo, columns: Sequence[str]) -> tuple[int, int]:
    """(rows with every column set, distinct tuples among them), in one query."""
    t = _quote(db, table.name)
    cols = [_quote(db, c) for c in columns]
    not_null = " AND ".join(f"{c} IS NOT NULL" for c in cols)
    sql = (
        f"SELECT COUNT(*), (SELECT COUNT(*) FROM (SELECT DISTINCT {', '.join(cols)} FROM {t} "
        f"WHERE {not_null}) AS d) FROM {t} WHERE {not_null}"
    )
    total, distinct = db.execute(sql).rows[0]
    return int(total or 0), int(distinct or 0)


def namings(db: Database, table: TableInfo) -> list[Naming]:
    """Every way of naming the rows of ``table``, best first (see the module's rules):
    single columns named like identifiers with values that name the rows, and the
    composite first and last name when the pair does. Empty when nothing identifies."""
    ranked = sorted(
        (rank, i, c)
        for i, c in enumerate(table.columns)
        if (rank := naming_rank(c, table)) is not None and why_not_unique(c, table) is None
    )
    out = [(rank, Naming(table.name, (c.name,))) for rank, _, c in ranked]
    pair = composite_candidate(table)
    if pair is not None and table.row_count:
        total, distinct = pair_repeats(db, table, pair)
        if total and few_exceptions(total - distinct, total):
            out.append((1, Naming(table.name, pair)))
    return [naming for _, naming in sorted(out, key=lambda item: item[0])]


def best_naming(db: Database, table: TableInfo) -> Naming | None:
    """The best of :func:`namings`, or None."""
    found = namings(db, table)
    return found[0] if found else None


def why_unnamed(table: TableInfo) -> str:
    """Why no column names the rows of ``table``, in one line."""
    named = [c for c in table.columns if naming_rank(c, table) is not None]
    reasons = [why for c in named if (why := why_not_unique(c, table)) is not None]
    pair = composite_candidate(table)
    if pair is not None:
        reasons.append(f"{pair[0]} and {pair[1]} together repeat too often ({exceptions_rule()})")
    if not reasons:
        return "no text column named like name, title, label, code or email to ask by"
    return "no key names its rows: " + "; ".join(reasons)


def chosen_naming(db: Database, table: TableInfo, columns: Sequence[str]) -> Naming:
    """The naming a user gave for ``table`` (one column, or first and last name), checked:
    each column exists, and together they are at most 10 % NULL and repeat no value (a
    name the user chose is taken for a fact, so no exception is allowed). A
    :class:`ValueError` says in one line which rule a column breaks."""
    if not columns or len(columns) > 2:
        raise ValueError(f"{table.name}: name it by one column or two (first and last name)")
    found = []
    for name in columns:
        column = table.column(name)
        if column is None:
            known = ", ".join(c.name for c in table.columns)
            raise ValueError(f"{table.name} has no column {name!r} (it has {known})")
        if column.name in found:
            raise ValueError(
                f"{table.name}.{column.name} is named twice: name a table by one column, "
                "or by two different ones (first and last name)"
            )
        if not table.row_count:
            raise ValueError(f"{table.name} has no rows: there is nothing to name")
        if _null_fraction(column, table) > MAX_NULL_FRACTION_KEY:
            raise ValueError(
                f"{table.name}.{column.name} is {_null_fraction(column, table):.0%} NULL: "
                f"a name is at most {MAX_NULL_FRACTION_KEY:.0%} NULL"
            )
        found.append(column.name)
    total, distinct = pair_repeats(db, table, found)
    if not total or total != distinct:
        what = " and ".join(f"{table.name}.{c}" for c in found)
        verb = "repeat" if len(found) > 1 else "repeats"
        raise ValueError(
            f"{what} {verb} {total - distinct} of {total} values: a name given for a table "
            "must tell every row apart"
        )
    return Naming(table.name, tuple(found))


__all__ = [
    "Naming",
    "best_naming",
    "chosen_naming",
    "composite_candidate",
    "few_exceptions",
    "identifies",
    "is_id_like",
    "name_part",
    "name_words",
    "naming_rank",
    "namings",
    "why_not_unique",
    "why_unnamed",
]
