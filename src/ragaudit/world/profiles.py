"""Documents that state the rows of the user's own database: one profile per entity, the
closed-domain corpus of the GRAMMAR paper's Context-Augmented Spider (appendix G.2),
generalized to any schema.

An **entity table** is a table with a one-column primary key that is not a link table; its
**name columns** name a row: the caller's choice (:func:`ragaudit.db.identity.best_naming`
or the user's, read from the database by :mod:`ragaudit.world.from_db`), one column or a
person's first and last name written "first last"; without one, :func:`name_column`
("Name", "Title", else the first text column whose values are all distinct). Each row
becomes a document, titled with its name, that states a chosen subset of its attributes,
the names of the rows its foreign keys point at, and the rows of the link tables it takes
part in (a table whose primary key is made of foreign keys: ``employment(Company_ID,
People_ID, Year_working)``), each with the name of the other side. Every fact a document
states is recorded by table, row key and column, as ``generate.gold_facts`` reads it, so
that gold ids mean "states the answer". A document's id names its row (:func:`profile_id`,
read back by :func:`parse_profile_id`): the table and the key, encoded so that no two rows
share one.

A chosen share of the facts (``holes``) is stated nowhere, so the knowledge base has
holes the analysis can find; the name of a row always is. With ``rename``, the names are
replaced by fictitious ones (:mod:`ragaudit.world.names`) consistently, in the
documents and in a copy of the database the caller writes, so that a language model's own
knowledge cannot answer: the paper's closed-domain condition.

Pure: rows in, documents, facts and the renaming out. Reading the database and writing
files happen in :mod:`ragaudit.world.from_db`.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragaudit.db.schema import SchemaInfo, TableInfo
from ragaudit.errors import UserError
from ragaudit.world.names import FAMILY_NAMES, GIVEN_NAMES, NameSpace

# A profile longer than this many words is written as pages of at most this many (a
# sentence is never split): at 4/3 tokens a word, the built-in systems' three documents fit
# a 4,096-token context with the question and the instructions, under the default
# chunking (a document a chunk).
PAGE_WORDS = 600
# A link table's rows are listed on an entity's profile only while the entity takes part
# in at most this many of them; past that (a playlist of 3,000 tracks) each row is listed
# on the other side's profile alone (each track names its playlist), so no profile grows
# with the size of a table. Where every side is past it, the side with fewest rows lists
# it, and paging bounds what it writes.
LINKS_PER_DOCUMENT = 50

# Column names that name their row, in order of preference.
_NAME_COLUMNS = ("name", "title", "full_name", "fullname", "label")
# Words in a table's name that say its rows are people (their fictitious names are a given
# and a family name; any other entity gets a company-like name).
_PEOPLE = re.compile(
    r"people|person|employee|staff|student|author|customer|user|member|player|actor|"
    r"singer|artist|teacher|doctor|patient|driver|pilot|manager|director|writer",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Entity:
    """One entity table: its name, its primary key and the columns that name a row (one,
    or a first and a last name, written "first last")."""

    table: str
    key: str
    # Empty: no column names a row; the document is titled "<table> <key>".
    name: tuple[str, ...] = ()

    def written(self, row: Mapping[str, Any]) -> str | None:
        """The row's name as a document writes it: its name columns' values joined by a
        space (a NULL part left out), or None when it has none."""
        if len(self.name) == 1:  # most tables: one name column, a hundred thousand rows
            one = row.get(self.name[0])
            return None if one is None else shown(one)
        parts = [shown(row[c]) for c in self.name if row.get(c) is not None]
        return " ".join(parts) if parts else None


@dataclass(frozen=True)
class Profile:
    """One document and the facts it states (``{"table", "row_key", "column", "stated",
    "asks"}``: the question the reading check asks for the fact)."""

    doc_id: str
    text: str
    facts: list[dict[str, str]]


@dataclass
class Plan:
    """What a corpus states: its entity tables, its link tables and, per table, the
    columns whose values its documents state."""

    entities: list[Entity]
    links: list[str]
    stated: dict[str, list[str]] = field(default_factory=dict)


@functools.lru_cache(maxsize=4096)
def words(column: str) -> str:
    """A column's name as words: ``Sales_in_Billion`` -> "sales in billion",
    ``StartDate`` -> "start date".

    >>> words("Market_Value_in_Billion"), words("StartDate"), words("HQ")
    ('market value in billion', 'start date', 'HQ')
    """
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", column).replace("_", " ")
    parts = spaced.split()
    return " ".join(p if p.isupper() and len(p) > 1 else p.lower() for p in parts)


# The last word of a role that reads as a verb phrase ("ReportsTo", "ManagedBy"): "the
# reports to of X" is no sentence, "X reports to Y" is.
_PREPOSITIONS = frozenset(["to", "by", "of", "for", "from", "in", "on", "with", "at", "into"])


def role(column: str, *, points: bool = False) -> str:
    """What a column says of its row, in words: :func:`words`, less a trailing "id" where
    the column points at another row (``ArtistId`` says who the artist is; its id is
    the key, not the fact written).

    >>> role("ArtistId", points=True), role("SupportRepId", points=True), role("Id", points=True)
    ('artist', 'support rep', 'id')
    """
    said = words(column)
    if points:
        parts = said.split()
        if len(parts) > 1 and parts[-1].lower() == "id":
            return " ".join(parts[:-1])
    return said


def sentence(subject: str, what: str, said: str, *, relation: bool = False) -> str:
    """The sentence that states ``said`` as the ``what`` (:func:`role`) of ``subject``:
    "The industry of X is Banking.", or, for a ``relation`` (a column that points at
    another row) whose role reads as a verb phrase, the phrase itself: "X reports to Y.",
    "X is managed by Y.". An attribute keeps the first form whatever its name ("checked
    in" holding "yes" is no relation to write as a verb).

    >>> sentence("Bricou Group", "industry", "Banking")
    'The industry of Bricou Group is Banking.'
    >>> sentence("Ada Lo", "reports to", "Ben Sorrel", relation=True)
    'Ada Lo reports to Ben Sorrel.'
    >>> sentence("P", "managed by", "Q", relation=True), sentence("P", "checked in", "yes")
    ('P is managed by Q.', 'The checked in of P is yes.')
    """
    verb = _verb(what) if relation else None
    if verb is None:
        return f"The {what} of {subject} is {said}."
    return f"{subject} {verb} {said}."


def _verb(what: str) -> str | None:
    """A verb-phrase role as a sentence writes it after its subject, or None."""
    parts = what.split()
    if len(parts) < 2 or parts[-1].lower() not in _PREPOSITIONS:
        return None
    head = parts[0].lower()
    if head.endswith("ed") or head.endswith("en"):  # "managed by", "written by"
        return f"is {what}"
    if head.endswith("s") and not head.endswith("ss"):  # "reports to", "belongs to"
        return what
    return f"is {what}"  # "parent of", "part of"


def question(subject: str, what: str, *, relation: bool = False) -> str:
    """The question the reading check asks for the fact :func:`sentence` writes.

    >>> question("Bricou Group", "industry"), question("Ada Lo", "reports to", relation=True)
    ('What is the industry of Bricou Group?', 'Whom or what does Ada Lo report to?')
    >>> question("P", "managed by", relation=True)
    'Whom or what is P managed by?'
    """
    verb = _verb(what) if relation else None
    if verb is None:
        return f"What is the {what} of {subject}?"
    if verb.startswith("is "):
        return f"Whom or what is {subject} {verb[3:]}?"
    head, _, rest = what.partition(" ")
    return f"Whom or what does {subject} {head[:-1]} {rest}?"


def article(noun: str) -> str:
    """``noun`` with "a" or "an" before it, by its first letter.

    >>> article("album"), article("track"), article("HR unit")
    ('an album', 'a track', 'an HR unit')
    """
    first = noun[:1]
    vowel = first.lower() in "aeiou" or (noun[:2].isupper() and first in "AEFHILMNORSX")
    return f"{'an' if vowel else 'a'} {noun}"


def shown(value: Any) -> str:
    """A database value as a document writes it: dates in ISO form, a whole number without
    its ".0", anything else as the database prints it."""
    kind = type(value)
    if kind is str:  # by far the most common: called for every value written
        return value  # type: ignore[no-any-return]
    if kind is int:
        return str(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, decimal.Decimal):
        return format(value.normalize(), "f") if value == value.to_integral() else str(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


# A profile's id is its table and its row's key joined by "/"; within each, "%" and "/" are
# percent-encoded, so that the separator is never part of a name.
_SEPARATOR = "/"
_ENCODED = {"%": "%25", "/": "%2F"}
_DECODED = {code: char for char, code in _ENCODED.items()}
_PART = re.compile(r"(?:[^%/]|%25|%2F)*")
_CODE = re.compile("%25|%2F")


def _encode(part: str) -> str:
    # "%" first: the "%" of an encoded "/" must not be encoded again.
    return part.replace("%", _ENCODED["%"]).replace("/", _ENCODED["/"])


def profile_id(table: str, key: str, page: int = 1) -> str:
    """The id of the profile of a row: its table and its key (as a document writes it,
    :func:`shown`) joined by "/", with "%" and "/" inside each written "%25" and "%2F".
    Unambiguous by construction, whatever the names hold: table ``a`` keyed ``b/1`` and
    table ``a/b`` keyed ``1`` would both be ``a/b/1`` joined as they are, and are
    ``a/b%2F1`` and ``a%2Fb/1``. A name with neither character is written as it is
    (``company/3``), so the ids of ordinary schemas read plainly and stay what they were.
    A profile written in pages (:data:`PAGE_WORDS`) keeps that id for its first page; its
    ``page``-th (2 on) adds the number as a third part. :func:`parse_profile_id` reads
    one back.

    >>> profile_id("company", "3"), profile_id("a", "b/1"), profile_id("a/b", "1")
    ('company/3', 'a/b%2F1', 'a%2Fb/1')
    >>> profile_id("sales", "50%"), profile_id("playlist", "1", page=2)
    ('sales/50%25', 'playlist/1/2')
    """
    base = f"{_encode(table)}{_SEPARATOR}{_encode(key)}"
    return base if page == 1 else f"{base}{_SEPARATOR}{page}"


def parse_profile_id(doc_id: str) -> tuple[str, str]:
    """The table and the key a :func:`profile_id` names, whichever of the row's pages it
    is: its exact inverse, so that an id read from a corpus (a gold id, a retrieved id)
    says which row it is. An id that function does not write (not two parts and a page
    number from 2, or a "%" that starts neither "%25" nor "%2F") is a
    :class:`ValueError`.

    >>> parse_profile_id("a%2Fb/1"), parse_profile_id("sales/50%25")
    (('a/b', '1'), ('sales', '50%'))
    >>> parse_profile_id("playlist/1/2")
    ('playlist', '1')
    """
    parts = doc_id.split(_SEPARATOR)
    if len(parts) == 3 and _PAGE.fullmatch(parts[2]):
        parts = parts[:2]
    if len(parts) != 2 or not all(_PART.fullmatch(part) for part in parts):
        raise ValueError(f"{doc_id!r} is no profile id (table/key[/page], '%' and '/' encoded)")
    table, key = (_CODE.sub(lambda m: _DECODED[m.group(0)], part) for part in parts)
    return table, key


# A page number as an id writes it: 2 on, no leading zero (page 1 has no number).
_PAGE = re.compile(r"[2-9]|[1-9][0-9]+")


def _pages(
    items: Sequence[tuple[str, list[dict[str, str]]]], budget: int
) -> list[list[tuple[str, list[dict[str, str]]]]]:
    """Sentences (each with the facts it states) cut into pages of at most ``budget``
    words, in order, each page at least one sentence (a sentence longer than the budget
    is a page of its own, never split)."""
    out: list[list[tuple[str, list[dict[str, str]]]]] = [[]]
    used = 0
    for item in items:
        size = len(item[0].split())
        if out[-1] and used + size > budget:
            out.append([])
            used = 0
        out[-1].append(item)
        used += size
    return out


def _is_link(table: TableInfo) -> bool:
    """A table whose primary key is made of foreign keys (a many-to-many relation)."""
    pk = set(table.primary_key)
    keyed = {c for fk in table.foreign_keys for c in fk.columns}
    return len(table.foreign_keys) >= 2 and len(pk) >= 2 and pk <= keyed


def name_column(table: TableInfo) -> str | None:
    """The text column that names a row of ``table``, or None: one called like a name,
    else a text primary key (a project named by its name), else the first text column
    whose values are all distinct."""
    text = [c for c in table.columns if c.is_text and not c.primary_key]
    for wanted in _NAME_COLUMNS:
        found = next((c for c in text if c.name.lower() == wanted), None)
        if found is not None:
            return found.name
    key = table.column(table.primary_key[0]) if len(table.primary_key) == 1 else None
    if key is not None and key.is_text:
        return key.name
    for column in text:
        if (
            table.row_count
            and column.distinct_count == table.row_count
            and not column.null_count
            and not any(column.name in fk.columns for fk in table.foreign_keys)
        ):
            return column.name
    return None


def plan(
    schema: SchemaInfo,
    tables: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    names: Mapping[str, Sequence[str]] | None = None,
) -> Plan:
    """Which tables become documents and which of their columns are stated: ``tables``
    (default: every table with a one-column primary key that is no link table), and of
    them ``columns`` (``Table.Column``; default: every column but the key and the name).
    ``names`` gives the columns that name a table's rows (table -> one column, or first
    and last name; empty: none), checked by the caller; a table it leaves out is named by
    :func:`name_column`. An unknown or unusable table or column is a :class:`ValueError`
    saying which."""
    links = [t.name for t in schema.tables if _is_link(t)]
    if tables:
        chosen = []
        for name in tables:
            info = schema.table(name)
            if info is None:
                raise ValueError(f"no table {name!r} in the database")
            if len(info.primary_key) != 1 or info.name in links:
                raise ValueError(
                    f"table {info.name!r} has no one-column primary key: its rows cannot "
                    "be documents of their own (a link table's rows are stated in the "
                    "documents of the rows it links)"
                )
            chosen.append(info)
    else:
        chosen = [t for t in schema.tables if len(t.primary_key) == 1 and t.name not in links]
        if not chosen:
            raise ValueError("no table has a one-column primary key: name tables to profile")
    names = names or {}

    def naming(t: TableInfo) -> tuple[str, ...]:
        if t.name in names:
            return tuple(names[t.name])
        found = name_column(t)
        return (found,) if found else ()

    entities = [Entity(t.name, t.primary_key[0], naming(t)) for t in chosen]
    stated: dict[str, list[str]] = {}
    for t in chosen + [schema.table(name) for name in links if schema.table(name)]:
        assert t is not None
        skip = {c.lower() for c in t.primary_key}
        entity = next((e for e in entities if e.table == t.name), None)
        if entity is not None:
            skip.update(c.lower() for c in entity.name)
        stated[t.name] = [c.name for c in t.columns if c.name.lower() not in skip]
    if columns:
        wanted: dict[str, list[str]] = {}
        for spec in columns:
            table_name, _, column_name = spec.partition(".")
            info = schema.table(table_name)
            column = info.column(column_name) if info and column_name else None
            if info is None or column is None:
                raise ValueError(f"columns: {spec!r} is no Table.Column of the database")
            if info.name not in stated:
                raise ValueError(f"columns: {spec!r}: table {info.name!r} is not profiled")
            wanted.setdefault(info.name, []).append(column.name)
        stated = {t: wanted.get(t, []) for t in stated}
    return Plan(entities, links, stated)


def fictitious_names(
    schema: SchemaInfo,
    entities: Sequence[Entity],
    names: Mapping[str, Sequence[Sequence[Any]]],
    seed: int,
) -> dict[tuple[str, str], dict[str, str]]:
    """(table, column) -> {real value: fictitious value}, for every entity's name columns
    and every text column whose foreign key points at one (the client of a project, named
    by the client's name). ``names`` holds each entity table's rows of name values (one
    per name column). People get a given and a family name, anything else a company-like
    one; a name made of a first and a last name gets a given name for each first name and
    a family name for each last name, so that each row's pair is a fictitious person and
    rows that differ in name still do. The same seed, the same names."""
    space = NameSpace(seed)
    used = 0
    taken: tuple[set[str], set[str]] = (set(), set())  # given and family names drawn
    out: dict[tuple[str, str], dict[str, str]] = {}
    for entity in entities:
        if not entity.name:
            continue
        rows = names.get(entity.table, ())
        if len(entity.name) == 1:
            real = sorted({str(r[0]) for r in rows if r[0] is not None})
            kind = "person" if _PEOPLE.search(entity.table) else "company"
            # Names are drawn from one pool, so two tables never share a fictitious name.
            fresh = space.distinct(kind, used + len(real))[used:]
            used += len(real)
            if kind == "person":
                for name in fresh:
                    given, _, family = name.partition(" ")
                    taken[0].add(given)
                    taken[1].add(family)
            out[entity.table, entity.name[0]] = dict(zip(real, fresh, strict=True))
            continue
        # A first and a last name: a given name per first name, a family name per last
        # name, each drawn once across the tables (so no two tables share a person).
        parts = [sorted({str(r[i]) for r in rows if r[i] is not None}) for i in (0, 1)]
        limits = ((GIVEN_NAMES, "first"), (FAMILY_NAMES, "last"))
        for real, (most, what) in zip(parts, limits, strict=True):
            if len(real) > most // 2:
                raise ValueError(f"{entity.table}: at most {most // 2} distinct {what} names")
        drawn: tuple[list[str], list[str]] = ([], [])
        while len(drawn[0]) < len(parts[0]) or len(drawn[1]) < len(parts[1]):
            missing = max(len(parts[0]) - len(drawn[0]), len(parts[1]) - len(drawn[1]))
            wanted = 2 * missing + 16  # a batch: some parts are already taken
            fresh = space.distinct("person", used + wanted)[used:]
            used += wanted
            for name in fresh:
                for i, part in enumerate(name.split(" ", 1)):
                    if part not in taken[i] and len(drawn[i]) < len(parts[i]):
                        taken[i].add(part)
                        drawn[i].append(part)
        for column, real, fake in zip(entity.name, parts, drawn, strict=True):
            out[entity.table, column] = dict(zip(real, fake, strict=True))
    for table in schema.tables:
        for fk in table.foreign_keys:
            if len(fk.columns) != 1:
                continue
            target = (fk.ref_table, fk.ref_columns[0])
            for (t, c), mapping in list(out.items()):
                if (t.lower(), c.lower()) == (target[0].lower(), target[1].lower()):
                    out[table.name, fk.columns[0]] = mapping
    return out


_WORD = re.compile(r"\w+")


def names_within(fake: Mapping[str, str]) -> Callable[[str], tuple[str, int]]:
    """A function that replaces every real name of ``fake`` ({real: fictitious}) written
    inside free text by its fictitious name, and says how many it replaced. A name is
    matched whole and case for case, where no letter or digit touches it; one made of
    digits alone (a row named "1999") is left, since it would match any number.

    >>> replace = names_within({"Ada Lovelace": "Xia Brouford", "1999": "Quil Works"})
    >>> replace("Ada Lovelace met Ada Lovelaces in 1999.")
    ('Xia Brouford met Ada Lovelaces in 1999.', 1)
    """
    kept = {
        real: name
        for real, name in fake.items()
        if real and any(ch.isalpha() for ch in real) and real[0].isalnum()
    }
    # The names by their first word, longest first: "Royal Dutch Shell" before "Royal".
    first: dict[str, list[str]] = {}
    for real in sorted(kept, key=len, reverse=True):
        found = _WORD.match(real)
        if found:
            first.setdefault(found.group(0), []).append(real)

    def replace(text: str) -> tuple[str, int]:
        if not first:
            return text, 0
        out: list[str] = []
        done = 0
        for word in _WORD.finditer(text):
            start = word.start()
            if start < done or word.group(0) not in first:
                continue
            if start and text[start - 1].isalnum():
                continue
            for real in first[word.group(0)]:
                end = start + len(real)
                if text.startswith(real, start) and not (end < len(text) and text[end].isalnum()):
                    out += [text[done:start], kept[real]]
                    done = end
                    break
        return ("".join(out) + text[done:], len(out) // 2) if out else (text, 0)

    return replace


def profiles(
    schema: SchemaInfo,
    chosen: Plan,
    rows: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    holes: float = 0.0,
    seed: int = 0,
    renamed: Mapping[tuple[str, str], Mapping[str, str]] | None = None,
) -> list[Profile]:
    """One document per row of every entity table, stating its attributes, the names its
    foreign keys point at and its link rows, but for a ``holes`` share of those facts
    (drawn with ``seed``). ``rows`` holds every row of the entity and link tables as
    ``{column: value}``; ``renamed`` maps names to the ones the documents use."""
    if not 0.0 <= holes < 1.0:
        raise ValueError(f"holes {holes}: give a share from 0 up to, not including, 1")
    renamed = renamed or {}
    rng = random.Random(f"profiles:{seed}")
    by_table = {e.table: e for e in chosen.entities}

    def value(table: str, column: str, raw: Any) -> str:
        mapping = renamed.get((table, column))
        return mapping.get(str(raw), shown(raw)) if mapping else shown(raw)

    def name_parts(entity: Entity, r: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(column, value as stated) of each name column the row has a value in."""
        return [(c, value(entity.table, c, r[c])) for c in entity.name if r.get(c) is not None]

    # Each entity row's name, by table and key, for the sentences that point at it. A
    # row's key is written as the database gives it (``generate`` names rows by
    # ``str(key)``: 1.0 for a REAL key), its document id as a document shows it.
    named: dict[str, dict[str, str]] = {}
    # Each entity row's name columns and their values, for the facts that state the name.
    parts: dict[str, dict[str, list[tuple[str, str]]]] = {}
    for entity in chosen.entities:
        named[entity.table], parts[entity.table] = {}, {}
        for r in rows.get(entity.table, ()):
            found = name_parts(entity, r)
            row_key = str(r[entity.key])
            parts[entity.table][row_key] = found
            named[entity.table][row_key] = (
                " ".join(v for _, v in found) or f"{entity.table} {shown(r[entity.key])}"
            )

    # A row's name facts, built once: a row pointed at by many others states its name in
    # each of their documents (the same dicts, only ever written out).
    stated_names: dict[tuple[str, str], list[dict[str, str]]] = {}

    def name_facts(entity: Entity, key: str) -> list[dict[str, str]]:
        """The facts that state a row's name: one per name column, its value."""
        found = stated_names.get((entity.table, key))
        if found is None:
            found = stated_names[entity.table, key] = [
                _fact(entity.table, key, c, v, None) for c, v in parts[entity.table].get(key, [])
            ]
        return found

    # (table, column) -> {value: key of the row holding it}; 1 == 1.0 as a dict key, so an
    # INTEGER foreign key finds its REAL primary key.
    index: dict[tuple[str, str], dict[Any, str]] = {}

    def target(table: TableInfo, column: str) -> tuple[Entity, str] | None:
        """The entity a one-column foreign key points at, and the referenced column."""
        for fk in table.foreign_keys:
            if fk.columns == (column,) and fk.ref_table in by_table:
                return by_table[fk.ref_table], fk.ref_columns[0]
        return None

    def lookup(entity: Entity, column: str, raw: Any) -> str | None:
        """The key of the entity row whose ``column`` holds ``raw``."""
        if (entity.table, column) not in index:
            found: dict[Any, str] = {}
            for r in rows.get(entity.table, ()):
                found.setdefault(r.get(column), str(r[entity.key]))
            index[entity.table, column] = found
        return index[entity.table, column].get(raw) if raw is not None else None

    # Link rows, by the entity row they mention: (entity table, key) -> sentences, facts.
    mentions: dict[tuple[str, str], list[tuple[str, list[dict[str, str]]]]] = {}
    for link in chosen.links:
        info = schema.table(link)
        if info is None:
            continue
        sides = [
            (fk.columns[0], by_table[fk.ref_table], fk.ref_columns[0])
            for fk in info.foreign_keys
            if len(fk.columns) == 1 and fk.ref_table in by_table
        ]
        if len(sides) < 2:
            continue
        extra = [c for c in chosen.stated.get(link, []) if c not in {s[0] for s in sides}]
        resolved: list[tuple[list[tuple[Entity, str]], Mapping[str, Any]]] = []
        # How many of this table's rows each side's row takes part in.
        taking: dict[tuple[int, str], int] = {}
        for r in rows.get(link, ()):
            ends = []
            for column, entity, ref in sides:
                key = lookup(entity, ref, r.get(column))
                if key is None:
                    break
                ends.append((entity, key))
            else:
                resolved.append((ends, r))
                for i, (_, key) in enumerate(ends):
                    taking[i, key] = taking.get((i, key), 0) + 1
        for ends, r in resolved:
            counts = [taking[i, key] for i, (_, key) in enumerate(ends)]
            listed = [i for i, n in enumerate(counts) if n <= LINKS_PER_DOCUMENT]
            if not listed:  # every side is busy: the least busy lists it
                listed = [counts.index(min(counts))]
            details = "".join(
                f"; its {words(c)} is {value(link, c, r[c])}" for c in extra if r.get(c) is not None
            )
            for i in listed:
                entity, key = ends[i]
                others = [e for j, e in enumerate(ends) if j != i]
                said = " and ".join(named[o.table].get(k, k) for o, k in others)
                me = named[entity.table].get(key, key)
                line = f"In {words(link)}, {me} is listed with {said}{details}."
                linked = [f for o, k in others for f in name_facts(o, k)]
                mentions.setdefault((entity.table, key), []).append((line, linked))

    out: list[Profile] = []
    for entity in chosen.entities:
        info = schema.table(entity.table)
        assert info is not None
        # Ids differ when the shown keys do; two keys of one column shown alike (1 and '1'
        # in an SQLite column without a type) would give one id to two rows.
        keys_of: dict[str, Any] = {}
        for r in rows.get(entity.table, ()):
            key = str(r[entity.key])
            doc_id = profile_id(entity.table, shown(r[entity.key]))
            if keys_of.setdefault(doc_id, r[entity.key]) is not r[entity.key]:
                raise UserError(
                    f"world --from-db: table {entity.table!r}: the keys "
                    f"{keys_of[doc_id]!r} and {r[entity.key]!r} read alike, so their "
                    f"profiles would share the id {doc_id!r} (make the key column's values "
                    "distinct as text, or name the tables to profile with --table)"
                )
            title = named[entity.table][key]
            # Each sentence with the facts it states, so that a page records its own.
            items: list[tuple[str, list[dict[str, str]]]] = []
            for column in chosen.stated.get(entity.table, []):
                raw = r.get(column)
                if raw is None or rng.random() < holes:
                    continue
                pointed = target(info, column)
                if pointed is not None:
                    other, ref = pointed
                    other_key = lookup(other, ref, raw)
                    if other_key is None:
                        continue
                    said = named[other.table].get(other_key, shown(raw))
                    what = role(column, points=True)
                    if other.name == (ref,):  # a text key: the column holds the name itself
                        asks = question(title, what, relation=True)
                        facts = [_fact(entity.table, key, column, said, asks)]
                    else:
                        # An id: the link itself (this row's foreign key, recorded as the
                        # key it holds, which ``generate --refresh`` checks), which a
                        # question along it asks, and the name it points at, which the
                        # sentence writes: this document alone states "the X of this is Y".
                        facts = [_fact(entity.table, key, column, shown(raw), None)]
                        facts.extend(name_facts(other, other_key))
                else:
                    said = value(entity.table, column, raw)
                    what = role(column)
                    facts = [_fact(entity.table, key, column, said, question(title, what))]
                items.append((sentence(title, what, said, relation=pointed is not None), facts))
            for line, link_facts in mentions.get((entity.table, key), []):
                if rng.random() < holes:
                    continue
                items.append((line, link_facts))
            if not items:
                out.append(
                    Profile(
                        doc_id,
                        f"{title}\n\n{title} is {article(words(entity.table))}.",
                        list(name_facts(entity, key)),
                    )
                )
                continue
            pages = _pages(items, max(1, PAGE_WORDS - len(title.split())))
            for number, page in enumerate(pages, start=1):
                body = " ".join(line for line, _ in page)
                facts = [f for _, stated in page for f in stated]
                if number == 1:
                    # The row's name is recorded on its first page alone: a question
                    # that asks it has one document to find, not every page's heading.
                    heading, facts = title, [*name_facts(entity, key), *facts]
                    page_id = doc_id
                else:
                    heading = f"{title} (continued, part {number} of {len(pages)})"
                    page_id = profile_id(entity.table, shown(r[entity.key]), number)
                out.append(Profile(page_id, f"{heading}\n\n{body}", facts))
    return out


def _fact(
    table: str, key: str, column: str | None, stated: str, asks: str | None
) -> dict[str, str]:
    fact = {"table": table, "row_key": key, "column": column or "", "stated": stated}
    if asks:
        fact["asks"] = asks
    return fact


__all__ = [
    "LINKS_PER_DOCUMENT",
    "PAGE_WORDS",
    "Entity",
    "Plan",
    "Profile",
    "article",
    "fictitious_names",
    "name_column",
    "names_within",
    "parse_profile_id",
    "plan",
    "profile_id",
    "profiles",
    "question",
    "role",
    "sentence",
    "shown",
    "words",
]
