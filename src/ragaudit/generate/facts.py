"""The facts each document states, derived from a map of which database row each document
is about.

A facts file (``generate.gold_facts``) says which database cells each document states; few
users have one, but many know which row each document describes (a report per project, a
page per company). Given that row-to-document map, the documents' texts and the database,
:func:`derive_facts` keeps, for every mapped row, the cells whose value the document
actually writes, by a deterministic check (:func:`states`): one of the value's surface
forms (:func:`value_forms`) occurs in the text, case-insensitively, on word boundaries,
after the same normalization of both sides.

The check is meant to err towards "not stated": a fact missing from the file makes a
question's gold ids ``[]`` (a hole), which the analysis reports; a fact wrongly present
would blame a retriever for missing a document that does not hold the answer. So only
unambiguous surface forms are generated (no ``05/01/2023``, no number words, no rounding).

Pure: no database access here; the caller passes a function that reads one row.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import json
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from ragaudit.dates import MONTHS, ordinal
from ragaudit.records.io import RecordFileError, iter_jsonl_dicts

__all__ = [
    "DocumentText",
    "FactStats",
    "derive_facts",
    "normalize_text",
    "read_row_map",
    "states",
    "value_forms",
]

# --- surface forms -------------------------------------------------------------------------

# Abbreviations as prose writes them, with and without the full stop ("Sept" as well).
_MONTH_ABBREVIATIONS: dict[int, tuple[str, ...]] = {
    n: (name[:3],) + (("Sept",) if n == 9 else ()) for n, name in enumerate(MONTHS, start=1)
}

_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
# A date with a time of day, as databases print it: "2023-01-15 00:00:00", "...T00:00".
_ISO_DATETIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?")
_ISO_MONTH = re.compile(r"(\d{4})-(\d{2})")
# A number as a database or a CSV import writes it; leading zeros ("007") make it a code,
# whose only form is its own text.
_PLAIN_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?")


def _month_names(month: int) -> list[str]:
    """The month's full name, then its abbreviations with and without a full stop."""
    full = MONTHS[month - 1]
    names = [full]
    for short in _MONTH_ABBREVIATIONS[month]:
        if short != full:
            names += [short, short + "."]
    return names


def _date_forms(date: datetime.date) -> list[str]:
    """The ways prose writes a calendar date, only those that cannot be read as another
    date: month names in either order (with or without ordinal suffixes, "of", commas),
    ISO and year-first numeric forms, and day/month numeric forms only where the day
    cannot be a month (above 12) or equals it."""
    y, m, d = date.year, date.month, date.day
    forms = [f"{y:04d}-{m:02d}-{d:02d}", f"{y:04d}/{m:02d}/{d:02d}"]
    for month in _month_names(m):
        for day in (str(d), ordinal(d)):
            forms += [
                f"{month} {day}, {y}",  # January 15, 2023 / January 15th, 2023
                f"{month} {day} {y}",
                f"{day} {month} {y}",  # 15 January 2023 / 15th January 2023
                f"{day} {month}, {y}",
            ]
        nth = ordinal(d)
        forms += [f"{nth} of {month} {y}", f"{nth} of {month}, {y}"]  # 15th of January
    if d > 12 or d == m:
        # 15/01/2023 can only be the 15th of January, 01/15/2023 only January 15th.
        for sep in ("/", "."):
            for day in dict.fromkeys((f"{d:02d}", str(d))):
                for month in dict.fromkeys((f"{m:02d}", str(m))):
                    forms += [f"{day}{sep}{month}{sep}{y}", f"{month}{sep}{day}{sep}{y}"]
    return list(dict.fromkeys(forms))


def _month_forms(year: int, month: int) -> list[str]:
    """The ways prose writes a month of a year ("January 2023", "Jan. 2023")."""
    return [f"{name} {year}" for name in _month_names(month)] + [
        f"{name}, {year}" for name in _month_names(month)
    ]


def _number_forms(number: int | decimal.Decimal) -> list[str]:
    """The digits of a number with and without thousands separators ("1000", "1,000"); a
    whole float or decimal also without its fraction (1000.0 is written 1000), a fractional
    one as given and without trailing zeros ("433.50", "433.5")."""
    if isinstance(number, int):
        return list(dict.fromkeys([str(number), f"{number:,}"]))
    forms: list[str] = []
    texts = [format(number, "f")]
    if number == number.to_integral_value():
        texts.insert(0, str(int(number)))
    elif "." in texts[0]:
        texts.append(texts[0].rstrip("0"))
    for text in texts:
        sign, body = ("-", text[1:]) if text.startswith("-") else ("", text)
        whole, dot, fraction = body.partition(".")
        forms += [text, f"{sign}{int(whole):,}{dot}{fraction}"]
    return list(dict.fromkeys(forms))


def value_forms(value: Any) -> list[str]:
    """The surface forms under which a database value may be written in prose, most
    literal first; ``[]`` for a value no prose states.

    * ``None`` (SQL NULL): ``[]`` -- a missing value is never stated.
    * booleans: ``[]`` -- prose says "is listed", "yes", "active" and so on, never the
      cell; any word chosen here would be found in unrelated text.
    * bytes, lists, dicts (BLOBs, arrays, JSON): ``[]`` -- no single surface form.
    * numbers (and strings that are plainly numbers, as SQLite may hold them): the digits
      with and without thousands separators ("1000", "1,000"); a whole float or decimal
      also without its ".0". No rounding, no number words ("three"), no scaling ("1.2
      million"): each would state other values too.
    * dates (``date``, ``datetime`` at midnight, ISO ``YYYY-MM-DD`` text): the text itself,
      month-name forms in either order with optional ordinal suffixes ("January 15, 2023",
      "15th of January, 2023", "Jan. 15th 2023"), year-first numeric forms, and day-first
      or month-first numeric forms only where they cannot be read as another date.
      ``YYYY-MM`` text also as "January 2023". A month and year alone is not the date.
    * other text: itself, stripped.
    """
    if value is None or isinstance(value, bool | bytes | bytearray | memoryview | list | dict):
        return []
    if isinstance(value, datetime.datetime):
        forms = [value.isoformat(sep=" "), value.isoformat()]
        if value.time() == datetime.time(0):
            forms += _date_forms(value.date())
        return list(dict.fromkeys(forms))
    if isinstance(value, datetime.date):
        return _date_forms(value)
    if isinstance(value, int):
        return _number_forms(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return []
        # repr is the shortest text that reads back as the same float: 433.5, not 433.49999.
        return _number_forms(decimal.Decimal(repr(value)))
    if isinstance(value, decimal.Decimal):
        return _number_forms(value) if value.is_finite() else []
    text = str(value).strip()
    if not text:
        return []
    if _PLAIN_NUMBER.fullmatch(text):
        return list(dict.fromkeys([text, *_number_forms(decimal.Decimal(text))]))
    forms = [text]
    if match := _ISO_DATETIME.fullmatch(text):
        y, m, d, hh, mm, ss = (int(g or 0) for g in match.groups())
        if (hh, mm, ss) == (0, 0, 0):
            forms += _safe_date_forms(y, m, d)
    elif match := _ISO_DATE.fullmatch(text):
        forms += _safe_date_forms(*(int(g) for g in match.groups()))
    elif (match := _ISO_MONTH.fullmatch(text)) and 1 <= int(match.group(2)) <= 12:
        forms += _month_forms(int(match.group(1)), int(match.group(2)))
    return list(dict.fromkeys(forms))


def _safe_date_forms(y: int, m: int, d: int) -> list[str]:
    try:
        return _date_forms(datetime.date(y, m, d))
    except ValueError:  # "2023-02-30" is text, not a date
        return []


# --- normalization and matching ------------------------------------------------------------

# Typographic quotes, primes and dashes to their ASCII forms, so "O’Brien" is "O'Brien".
_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("‘’‚‛′`´", "'"),
        **dict.fromkeys("“”„‟″«»", '"'),
        **dict.fromkeys("‐‑‒–—―−﹘﹣－", "-"),
    }
)
_SPACES = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """The text as the check compares it: compatibility forms folded (ligatures, full-width
    and superscript characters, non-breaking spaces), accents dropped ("Élysées" is
    "Elysees"), typographic quotes and dashes made ASCII, case folded, whitespace runs made
    one space. Apply it once per document; forms are normalized the same way."""
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return _SPACES.sub(" ", stripped.translate(_PUNCTUATION).casefold()).strip()


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _occurs(text: str, form: str) -> bool:
    """Whether the normalized ``form`` occurs in the normalized ``text`` as whole words: a
    word character at an edge of the form must not touch another word character ("10" is
    not in "2010", "art" not in "article"), and a digit at an edge must not continue a
    number ("19" is not in "19.5" nor in "1,190")."""
    head, tail = _is_word(form[0]), _is_word(form[-1])
    head_digit, tail_digit = form[0].isdigit(), form[-1].isdigit()
    n, size = len(text), len(form)
    start = text.find(form)
    while start >= 0:
        end = start + size
        before = text[start - 1] if start else ""
        after = text[end] if end < n else ""
        ok = not (head and before and _is_word(before))
        ok = ok and not (tail and after and _is_word(after))
        if ok and head_digit and start >= 2 and before in ".," and text[start - 2].isdigit():
            ok = False
        if ok and tail_digit and end + 1 < n and after in ".," and text[end + 1].isdigit():
            ok = False
        if ok:
            return True
        start = text.find(form, start + 1)
    return False


def _normalized_forms_uncached(value: Any) -> tuple[str, ...]:
    forms = (normalize_text(form) for form in value_forms(value))
    return tuple(dict.fromkeys(form for form in forms if form))


@functools.lru_cache(maxsize=65536)
def _normalized_forms_cached(kind: type, value: Any) -> tuple[str, ...]:
    return _normalized_forms_uncached(value)


def _normalized_forms(value: Any) -> tuple[str, ...]:
    # Keyed by type too: True, 1 and 1.0 are equal and hash alike but have other forms.
    try:
        # Annotated ``type``: mypy does not see ``type[Any]`` as Hashable.
        kind: type = type(value)
        return _normalized_forms_cached(kind, value)
    except TypeError:  # unhashable
        return _normalized_forms_uncached(value)


class DocumentText:
    """A document's text normalized once, to check many values against it."""

    __slots__ = ("normalized",)

    def __init__(self, text: str) -> None:
        self.normalized = normalize_text(text)

    def states(self, value: Any) -> bool:
        """Whether the document writes ``value`` under one of its surface forms."""
        return any(_occurs(self.normalized, form) for form in _normalized_forms(value))


def states(text: str, value: Any) -> bool:
    """Whether ``text`` writes ``value`` under one of its surface forms
    (:func:`value_forms`), compared after :func:`normalize_text` and on word boundaries.
    To check many values against one text, use :class:`DocumentText`."""
    return DocumentText(text).states(value)


# --- deriving the facts file ---------------------------------------------------------------


@dataclass
class FactStats:
    """What :func:`derive_facts` checked and found. Cells holding NULL are counted apart:
    they are never stated, so they are not "not found" either."""

    documents: int = 0  # distinct documents in the map
    rows: int = 0  # distinct (document, table, row key) entries in the map
    cells_checked: int = 0  # non-NULL cells of rows found, in documents found
    cells_stated: int = 0
    cells_not_found: int = 0
    null_cells: int = 0
    documents_with_facts: int = 0
    # Reported, not fatal: a map can be older than the database or the corpus.
    missing_rows: list[tuple[str, str, str]] = field(default_factory=list)
    missing_documents: list[str] = field(default_factory=list)


FetchRow = Callable[[str, str], dict[str, Any] | None]


class StatedCell(TypedDict):
    """A database cell a document states: its table, the row's key, and the column."""

    table: str
    row_key: str
    column: str


class DocumentFacts(TypedDict):
    """One record of a facts file (``generate.gold_facts``): a document's id and the
    cells it states."""

    id: str
    facts: list[StatedCell]


def derive_facts(
    rows: Iterable[tuple[str, str, str]],
    texts: dict[str, str],
    fetch_row: FetchRow,
) -> tuple[list[DocumentFacts], FactStats]:
    """The facts-file records (``{"id", "facts": [{"table", "row_key", "column"}]}``, as
    ``generate.gold_facts`` reads them) of the documents in ``rows``: every cell of each
    document's mapped rows whose value the document states (:meth:`DocumentText.states`).

    ``rows`` holds ``(doc_id, table, row_key)``, several per document when a document is
    about several rows; ``texts`` maps document ids to their text; ``fetch_row(table,
    row_key)`` returns the row as ``{column: value}``, or None when the database has no such
    row. The row's key column is a fact like any other, kept only if the document states it.
    A document that states nothing gets no record; a document missing from ``texts`` or a
    row missing from the database is counted in the stats, not an error. Records come in
    the order documents first appear in ``rows``, facts in the rows' and columns' order.
    """
    stats = FactStats()
    by_document: dict[str, list[tuple[str, str]]] = {}
    for doc_id, table, row_key in rows:
        entries = by_document.setdefault(doc_id, [])
        if (table, row_key) not in entries:
            entries.append((table, row_key))
    stats.documents = len(by_document)
    stats.rows = sum(len(entries) for entries in by_document.values())

    fetched: dict[tuple[str, str], dict[str, Any] | None] = {}
    records: list[DocumentFacts] = []
    for doc_id, entries in by_document.items():
        text = texts.get(doc_id)
        if text is None:
            stats.missing_documents.append(doc_id)
            continue
        document = DocumentText(text)
        facts: list[StatedCell] = []
        for table, row_key in entries:
            if (table, row_key) not in fetched:
                fetched[table, row_key] = fetch_row(table, row_key)
            row = fetched[table, row_key]
            if row is None:
                stats.missing_rows.append((doc_id, table, row_key))
                continue
            for column, value in row.items():
                if value is None:
                    stats.null_cells += 1
                    continue
                stats.cells_checked += 1
                if document.states(value):
                    stats.cells_stated += 1
                    facts.append({"table": table, "row_key": row_key, "column": column})
                else:
                    stats.cells_not_found += 1
        if facts:
            stats.documents_with_facts += 1
            records.append({"id": doc_id, "facts": facts})
    return records, stats


# --- reading the row-to-document map -------------------------------------------------------


def _key_text(value: Any) -> str | None:
    """A row key as text: strings as they are, JSON numbers as digits; None when it is no
    key (null, a boolean, an object, a list, an empty string)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        return value if value else None
    if isinstance(value, int | float):
        return str(value)
    return None


def _entry(obj: Any) -> tuple[str, str] | None:
    if not isinstance(obj, dict):
        return None
    table, key = obj.get("table"), _key_text(obj.get("row_key"))
    if not isinstance(table, str) or not table or key is None:
        return None
    return table, key


def read_row_map(path: Path) -> list[tuple[str, str, str]]:
    """The ``(doc_id, table, row_key)`` entries of a row-to-document map, in file order,
    duplicates dropped.

    Two formats: JSON Lines, one row per line, ``{"id": doc, "table": T, "row_key": K}``
    (a document about several rows has several lines); or one JSON object
    ``{doc: {"table": T, "row_key": K}}`` or ``{doc: [{"table": T, "row_key": K}, ...]}``.
    Other fields are ignored. A malformed file raises :class:`RecordFileError` with a
    one-line message naming ``path:line`` (JSON Lines) or ``path: doc`` (JSON).
    """
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RecordFileError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise RecordFileError(f"{path}: not UTF-8 text") from None
    try:
        whole = json.loads(raw) if raw.strip() else None
    except json.JSONDecodeError:
        whole = None  # several lines (JSON Lines), or broken: the line reader says where
    out: dict[tuple[str, str, str], None] = {}
    if whole is not None and not isinstance(whole, dict):
        raise RecordFileError(
            f"{path}: expected JSON Lines of {{id, table, row_key}} or a JSON object "
            "{doc id: {table, row_key}}"
        )
    if isinstance(whole, dict) and not _is_line_record(whole):
        for doc_id, value in whole.items():
            items = value if isinstance(value, list) else [value]
            for item in items:
                entry = _entry(item)
                if entry is None:
                    raise RecordFileError(
                        f"{path}: {doc_id}: a row needs table and row_key "
                        '(expected {"table": ..., "row_key": ...} or a list of them)'
                    )
                out[(doc_id, *entry)] = None
        return list(out)
    if isinstance(whole, dict):  # a single JSON Lines record, perhaps spread over lines
        numbered: Iterable[tuple[int, dict[str, Any]]] = [(1, whole)]
    else:
        numbered = iter_jsonl_dicts(path, skip_torn_tail=False, unique_keys=True)
    for number, obj in numbered:
        doc_id, entry = obj.get("id"), _entry(obj)
        if isinstance(doc_id, int) and not isinstance(doc_id, bool):
            doc_id = str(doc_id)
        if not isinstance(doc_id, str) or not doc_id or entry is None:
            raise RecordFileError(f"{path}:{number}: a row needs id, table and row_key")
        out[(doc_id, *entry)] = None
    return list(out)


def _is_line_record(obj: dict[str, Any]) -> bool:
    # {"id": ..., "table": ...} is one JSON Lines record; a map's values are all objects
    # or lists, and a document that happens to be called "id" maps to one of those.
    value = obj.get("id")
    return "id" in obj and not isinstance(value, dict | list)
