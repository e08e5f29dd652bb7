"""Facts derived from a row-to-document map (ragaudit.generate.facts): the surface forms of
values, the "does this text state this value?" check, the map reader, and the check
measured on GRAMMAR's labelled Aurp reports."""

from __future__ import annotations

import datetime
import decimal
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragaudit.analysis import wilson
from ragaudit.generate.facts import (
    DocumentText,
    FactStats,
    derive_facts,
    normalize_text,
    read_row_map,
    states,
    value_forms,
)
from ragaudit.records.io import RecordFileError

# --- value_forms -------------------------------------------------------------------------


def test_null_booleans_and_blobs_have_no_form() -> None:
    for value in (None, True, False, b"abc", [1, 2], {"a": 1}, "", "   ", float("nan")):
        assert value_forms(value) == [], value


def test_numbers_with_and_without_thousands_separators() -> None:
    assert value_forms(1000) == ["1000", "1,000"]
    assert value_forms(-1234567) == ["-1234567", "-1,234,567"]
    assert {"1000", "1,000", "1000.0"} <= set(value_forms(1000.0))
    assert value_forms(433.5) == ["433.5"]
    assert {"2265.8", "2,265.8"} == set(value_forms(2265.8))
    assert {"433.50", "433.5"} == set(value_forms(decimal.Decimal("433.50")))
    assert "1000" in value_forms(decimal.Decimal("1000.00"))
    # A number held as text is a number; a code with leading zeros is only itself.
    assert {"1000", "1,000"} <= set(value_forms("1000.0"))
    assert value_forms("007") == ["007"]


def test_dates_in_prose_forms_with_ordinals() -> None:
    forms = set(value_forms("2023-01-15"))
    assert {
        "2023-01-15",
        "January 15, 2023",
        "January 15th, 2023",
        "15 January 2023",
        "15th of January, 2023",
        "Jan. 15, 2023",
        "15/01/2023",  # the 15th cannot be a month: unambiguous
        "01/15/2023",
    } <= forms
    assert "15 of January, 2023" not in forms  # "of" goes with an ordinal only
    assert value_forms(datetime.date(2023, 1, 15)) == value_forms("2023-01-15")
    for day, suffix in [(1, "st"), (2, "nd"), (3, "rd"), (4, "th"), (11, "th"), (12, "th")]:
        assert f"{day}{suffix} of March, 2024" in value_forms(f"2024-03-{day:02d}"), day
    for day, suffix in [(13, "th"), (21, "st"), (22, "nd"), (23, "rd"), (31, "st")]:
        assert f"{day}{suffix} of March, 2024" in value_forms(f"2024-03-{day:02d}"), day
    # 05/01/2023 is the 5th of January or May 1st: neither is generated.
    assert not {"05/01/2023", "01/05/2023", "5/1/2023", "1/5/2023"} & set(value_forms("2023-01-05"))
    assert "2023-02-30" in value_forms("2023-02-30")  # not a date: only its text
    assert len(value_forms("2023-02-30")) == 1
    assert "January 15, 2023" in value_forms("2023-01-15 00:00:00")
    assert "January 15, 2023" not in value_forms(datetime.datetime(2023, 1, 15, 10, 30))
    assert "June 2024" in value_forms("2024-06")


# --- states --------------------------------------------------------------------------------


def test_matches_whole_words_only() -> None:
    assert not states("Founded in 2010.", 10)
    assert states("Founded 10 years ago.", 10)
    assert not states("See the Article.", "Art")
    assert states("Modern art, mostly.", "Art")
    assert not states("sales of 19.5 billion", 19)
    assert not states("sales of 1,190 units", 190)
    assert states("sales of 19 billion.", 19.0)
    assert not states("Leonardo Da Vinci led it.", "Leonardo Vinci")
    assert states("Leonardo Da Vinci's team", "Leonardo Da Vinci")


def test_numbers_with_thousands_separators() -> None:
    assert states("a budget of $1,000 in total", 1000)
    assert states("a budget of 1000 dollars", "1000")
    assert not states("a budget of 1,000,000 dollars", 1000)
    assert not states("a budget of 1000.5 dollars", 1000)
    assert states("assets of $2,265.8 billion", 2265.8)


def test_case_whitespace_quotes_dashes_and_accents_are_normalized() -> None:
    assert states("based in PALO   ALTO,\n  usa today", "Palo Alto, USA")
    assert states("led by O’Brien", "O'Brien")
    assert states("the “Z” badge", '"Z"')
    assert states("begun 2023–01–15", "2023-01-15")
    assert states("on the Champs-Elysees", "Champs-Élysées")
    assert states("on the Champs‑Élysées", "champs-élysées")  # non-breaking hyphen
    assert normalize_text("  A\u00a0 B\tC  ") == "a b c"


def test_dates_as_reports_write_them() -> None:
    assert states("commenced on the 1st of September, 2022, marking", "2022-09-01")
    assert states("commenced on May 1st, 2022.", "2022-05-01")
    assert states("Initiated on January 15, 2023, the project", datetime.date(2023, 1, 15))
    assert states("due 31 Dec 2025", "2025-12-31")
    # A month and year is not the day; another day is not the day.
    assert not states("completion by the end of June 2024", "2024-06-30")
    assert not states("from January 15, 2023", "2023-01-16")
    assert not states("from January 15, 20234", "2023-01-15")


def test_null_is_never_stated() -> None:
    text = "The manager is None; null; NULL; N/A; nan; True."
    assert not states(text, None)
    assert not states(text, True)
    assert not DocumentText(text).states(None)


def test_document_text_agrees_with_states() -> None:
    text = "Dubai, UAE: begun on the 1st of September, 2022 with 1,200 staff."
    document = DocumentText(text)
    for value in ("Dubai, UAE", "2022-09-01", 1200, 120, "UAE", "Abu Dhabi", None, 2022.0):
        assert document.states(value) == states(text, value), value


# --- read_row_map ---------------------------------------------------------------------------


def test_reads_json_lines_with_several_rows_per_document(tmp_path: Path) -> None:
    path = tmp_path / "map.jsonl"
    lines = [
        {"id": "Dubai Skyline Tower", "table": "Project", "row_key": "Dubai Skyline Tower"},
        {"id": "Dubai Skyline Tower", "table": "Client", "row_key": "Skyline Developers"},
        {"id": "company 3", "table": "company", "row_key": 3, "note": "ignored"},
        {"id": "Dubai Skyline Tower", "table": "Project", "row_key": "Dubai Skyline Tower"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines[:2]) + "\n\n")
    with path.open("a") as handle:
        handle.write("\n".join(json.dumps(line) for line in lines[2:]) + "\n")
    assert read_row_map(path) == [
        ("Dubai Skyline Tower", "Project", "Dubai Skyline Tower"),
        ("Dubai Skyline Tower", "Client", "Skyline Developers"),
        ("company 3", "company", "3"),
    ]
    single = tmp_path / "one.jsonl"
    single.write_text(json.dumps(lines[0]) + "\n")
    assert read_row_map(single) == [("Dubai Skyline Tower", "Project", "Dubai Skyline Tower")]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert read_row_map(empty) == []


def test_reads_a_json_object_of_rows_or_lists_of_rows(tmp_path: Path) -> None:
    path = tmp_path / "map.json"
    path.write_text(
        json.dumps(
            {
                "report-a": {"table": "Project", "row_key": "A", "extra": 1},
                "report-b": [
                    {"table": "Project", "row_key": "B"},
                    {"table": "Client", "row_key": 7},
                ],
                "id": {"table": "Project", "row_key": "C"},  # a document called "id"
            },
            indent=2,
        )
    )
    assert read_row_map(path) == [
        ("report-a", "Project", "A"),
        ("report-b", "Project", "B"),
        ("report-b", "Client", "7"),
        ("id", "Project", "C"),
    ]


def _error(path: Path) -> str:
    with pytest.raises(RecordFileError) as caught:
        read_row_map(path)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_malformed_maps_are_one_line_errors_naming_the_place(tmp_path: Path) -> None:
    path = tmp_path / "map.jsonl"
    good = json.dumps({"id": "d", "table": "T", "row_key": "k"})
    path.write_text(good + "\n" + json.dumps({"id": "d", "table": "T"}) + "\n")
    assert _error(path) == f"{path}:2: a row needs id, table and row_key"
    path.write_text(good + "\n" + good + "\n" + '{"id": "d", "table": \n')
    assert _error(path).startswith(f"{path}:3: not valid JSON")
    path.write_text(good + "\n" + json.dumps({"id": None, "table": "T", "row_key": "k"}) + "\n")
    assert _error(path) == f"{path}:2: a row needs id, table and row_key"
    path.write_text(good + "\n" + json.dumps({"id": "d", "table": "T", "row_key": None}) + "\n")
    assert _error(path) == f"{path}:2: a row needs id, table and row_key"
    path.write_text(good + "\n[1, 2]\n")
    assert _error(path) == f"{path}:2: expected a JSON object per line"

    json_map = tmp_path / "map.json"
    json_map.write_text(json.dumps({"a": {"table": "T", "row_key": "k"}, "b": {"table": "T"}}))
    assert _error(json_map).startswith(f"{json_map}: b: a row needs table and row_key")
    json_map.write_text(json.dumps({"a": [{"table": "T", "row_key": "k"}, "T"]}))
    assert _error(json_map).startswith(f"{json_map}: a: a row needs table and row_key")
    json_map.write_text(json.dumps([{"id": "a", "table": "T", "row_key": "k"}]))
    assert _error(json_map).startswith(f"{json_map}: expected JSON Lines")
    assert _error(tmp_path / "absent.jsonl") == f"{tmp_path / 'absent.jsonl'}: no such file"


# --- derive_facts ---------------------------------------------------------------------------


def _sqlite_fetch(conn: sqlite3.Connection) -> Callable[[str, str], dict[str, Any] | None]:
    """fetch_row over a SQLite database: the row whose one-column primary key is the key."""
    conn.row_factory = sqlite3.Row

    def fetch_row(table: str, row_key: str) -> dict[str, Any] | None:
        pk = next(r["name"] for r in conn.execute(f'PRAGMA table_info("{table}")') if r["pk"])
        row = conn.execute(f'SELECT * FROM "{table}" WHERE "{pk}" = ?', (row_key,)).fetchone()
        return dict(row) if row is not None else None

    return fetch_row


def test_derives_the_stated_cells_and_counts_what_is_missing(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "db.sqlite")
    conn.executescript(
        """
        CREATE TABLE project (name TEXT PRIMARY KEY, city TEXT, start TEXT, budget INTEGER,
                              manager TEXT);
        INSERT INTO project VALUES ('Tower', 'Dubai, UAE', '2022-09-01', 1200000, NULL);
        INSERT INTO project VALUES ('Hub', 'London, UK', '2021-07-01', 10, 'Alan Turing');
        CREATE TABLE client (name TEXT PRIMARY KEY, sector TEXT);
        INSERT INTO client VALUES ('Skyline', 'Real Estate');
        """
    )
    texts = {
        # Never names the tower: its key cell is no fact. The manager is NULL: not checked.
        "tower report": "Rising in Dubai, UAE since the 1st of September, 2022, for "
        "Skyline (real estate) on a budget of 1,200,000.",
        "hub report": "The Hub in London opened in 2021; Alan Turing managed it since 2010.",
    }
    calls: list[tuple[str, str]] = []
    fetch = _sqlite_fetch(conn)

    def fetch_row(table: str, row_key: str) -> dict[str, Any] | None:
        calls.append((table, row_key))
        return fetch(table, row_key)

    rows = [
        ("tower report", "project", "Tower"),
        ("tower report", "client", "Skyline"),
        ("tower report", "project", "Gone"),  # not in the database: counted, not fatal
        ("hub report", "project", "Hub"),
        ("lost report", "project", "Tower"),  # no such document: counted
        ("tower report", "project", "Tower"),  # repeated: once
    ]
    records, stats = derive_facts(rows, texts, fetch_row)
    assert records == [
        {
            "id": "tower report",
            "facts": [
                {"table": "project", "row_key": "Tower", "column": "city"},
                {"table": "project", "row_key": "Tower", "column": "start"},
                {"table": "project", "row_key": "Tower", "column": "budget"},
                {"table": "client", "row_key": "Skyline", "column": "name"},
                {"table": "client", "row_key": "Skyline", "column": "sector"},
            ],
        },
        {
            "id": "hub report",
            "facts": [
                {"table": "project", "row_key": "Hub", "column": "name"},
                {"table": "project", "row_key": "Hub", "column": "manager"},
            ],
        },
    ]
    assert stats == FactStats(
        documents=3,
        rows=5,
        cells_checked=4 + 2 + 5,
        cells_stated=5 + 2,
        cells_not_found=1 + 3,  # tower: name; hub: city ("London" alone), start, budget 10
        null_cells=1,
        documents_with_facts=2,
        missing_rows=[("tower report", "project", "Gone")],
        missing_documents=["lost report"],
    )
    assert len(calls) == len(set(calls)) == 4  # each row read once; the lost one never


def test_derived_facts_are_a_facts_file(tmp_path: Path) -> None:
    """The records are what generate.gold_facts reads (FactGold)."""
    from ragaudit.db import Database, introspect
    from ragaudit.generate.dataset import FactGold
    from ragaudit.generate.sql.instantiate import AnswerFact, Group

    db_path = tmp_path / "db.sqlite"
    conn = sqlite3.connect(db_path)
    conn.executescript(
        "CREATE TABLE project (name TEXT PRIMARY KEY, city TEXT);"
        "INSERT INTO project VALUES ('Tower', 'Dubai'), ('Hub', 'London');"
    )
    conn.commit()
    texts = {"t": "The Tower rises in Dubai.", "h": "The Hub is a hub."}
    rows = [("t", "project", "Tower"), ("h", "project", "Hub")]
    records, _ = derive_facts(rows, texts, _sqlite_fetch(conn))
    facts = tmp_path / "facts.jsonl"
    facts.write_text("".join(json.dumps(r) + "\n" for r in records))
    gold = FactGold(facts, introspect(Database(f"sqlite:///{db_path}")))
    city = AnswerFact(table="project", column="city")
    assert gold((city,), Group(bindings={}, answers=["Dubai"], keys=[("Tower",)])) == ["t"]
    assert gold((city,), Group(bindings={}, answers=["London"], keys=[("Hub",)])) == []


# --- measured on GRAMMAR's labelled Aurp reports -------------------------------------------

# On the 9 Aurp project reports x 7 Project columns (63 cells), against the labels'
# value_found_verbatim (null = not stated), the check agrees everywhere:
#   TP 58, FP 0, FN 0, TN 5 -> recall 58/58 = 1.00 (Wilson 95% [0.938, 1.000]),
#   precision 58/58 = 1.00, specificity 5/5 = 1.00 (Wilson 95% [0.566, 1.000]).
# The five negatives: a report that never names its project (the key cell), "London" for
# "London, UK", "the end of June 2024" for 2024-06-30, "spring of 2023" and "the end of
# October 2024". 15 of the 58 stated cells are dates written as prose (ISO text in the
# database), which a plain substring check misses: TP 43, FN 15 (recall 0.74).
# Each client name against each report (clients_named_in_a_document): TP 9, FP 0, FN 0,
# TN 81.
AURP_CELLS = (58, 0, 0, 5)
CLIENT_CELLS = (9, 0, 0, 81)


def _aurp(reference: Path) -> tuple[dict[str, Any], dict[str, str], sqlite3.Connection]:
    root = reference / "aurp"
    labels = json.loads((root / "document_row_map.json").read_text(encoding="utf-8"))
    texts = json.loads((root / "documents.json").read_text(encoding="utf-8"))
    conn = sqlite3.connect(f"file:{root / 'aurp.sqlite'}?mode=ro", uri=True)
    return labels, texts, conn


def _confusion(pairs: list[tuple[bool, bool]]) -> tuple[int, int, int, int]:
    """(true positives, false positives, false negatives, true negatives) of (got, want)."""
    return (
        sum(g and w for g, w in pairs),
        sum(g and not w for g, w in pairs),
        sum(w and not g for g, w in pairs),
        sum(not g and not w for g, w in pairs),
    )


def test_the_check_agrees_with_the_aurp_labels(grammar_reference: Path) -> None:
    labels, texts, conn = _aurp(grammar_reference)
    fetch_row = _sqlite_fetch(conn)
    pairs: list[tuple[bool, bool]] = []
    disagreements = []
    for doc, entry in labels["documents"].items():
        row = fetch_row(entry["table"], entry["row_key"])
        assert row is not None
        document = DocumentText(texts[doc])
        for column, surface in entry["value_found_verbatim"].items():
            got, want = document.states(row[column]), surface is not None
            pairs.append((got, want))
            if got != want:
                disagreements.append((doc, column, row[column], surface))
    tp, fp, fn, tn = _confusion(pairs)
    assert tp + fp + fn + tn == 63 and tp + fn == 58, "the labelled set changed"
    recall, precision, specificity = tp / (tp + fn), tp / (tp + fp), tn / (tn + fp)
    # Lower bounds: what the check measured (above); a weaker check fails here.
    assert recall >= 1.0 and precision >= 1.0 and specificity >= 1.0, disagreements
    assert (tp, fp, fn, tn) == AURP_CELLS
    assert wilson(tp, tp + fn)[0] > 0.93

    # A plain substring check of the database's text: the dates are what value_forms adds.
    naive = [
        (str(fetch_row(e["table"], e["row_key"])[c]) in texts[d], s is not None)  # type: ignore[index]
        for d, e in labels["documents"].items()
        for c, s in e["value_found_verbatim"].items()
    ]
    assert _confusion(naive) == (43, 0, 15, 5)

    clients = labels["clients_named_in_a_document"]
    named = [
        (DocumentText(text).states(client), doc in clients[client])
        for client in clients
        for doc, text in texts.items()
    ]
    assert _confusion(named) == CLIENT_CELLS


def test_derived_aurp_facts_are_the_labelled_ones(grammar_reference: Path, tmp_path: Path) -> None:
    """End to end: a JSON Lines map of the reports' rows, read and derived, gives exactly
    the cells the labels say each report states (the key cell only where stated)."""
    labels, texts, conn = _aurp(grammar_reference)
    path = tmp_path / "map.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": doc, "table": e["table"], "row_key": e["row_key"]}) + "\n"
            for doc, e in labels["documents"].items()
        )
    )
    records, stats = derive_facts(read_row_map(path), texts, _sqlite_fetch(conn))
    derived = {
        (r["id"], f["table"], f["row_key"], f["column"]) for r in records for f in r["facts"]
    }
    labelled = {
        (doc, e["table"], e["row_key"], column)
        for doc, e in labels["documents"].items()
        for column, surface in e["value_found_verbatim"].items()
        if surface is not None
    }
    assert derived == labelled
    assert ("Dubai Skyline Tower", "Project", "Dubai Skyline Tower", "Name") not in derived
    assert (stats.documents, stats.rows, stats.cells_checked) == (9, 9, 63)
    assert (stats.cells_stated, stats.cells_not_found, stats.null_cells) == (58, 5, 0)
    assert stats.missing_rows == [] and stats.missing_documents == []
