"""Template kinds: the enumerator asks a schema more than single-column lookups (paths of
foreign keys, aggregates, superlatives, sets, yes/no, date ranges), each answer is the
one a count by hand gives, on every engine, and rows are asked by the columns that
identify them (a person's first and last name; never a postal code or a job title)."""

from __future__ import annotations

import datetime as dt
import sqlite3
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ragaudit.db.engine import Database
from ragaudit.db.identity import best_naming, chosen_naming
from ragaudit.db.schema import introspect
from ragaudit.generate.sql.asks import asks, infer_kind, reach
from ragaudit.generate.sql.enumeration import enumerate_templates
from ragaudit.generate.sql.instantiate import iter_groups, plan
from ragaudit.generate.sql.kinds import KINDS
from ragaudit.generate.sql.templates import SqlTemplate
from ragaudit.generate.text.verbalize import describe, verbalize
from tests.support import real_schemas

midas_db = real_schemas.midas_db
tpch_db = real_schemas.tpch_db

# A lending library: authors write books, members borrow them at branches; members are
# people named by first and last name (with a unique postal code and a shared title of
# courtesy that must not name them), staff share a job title.
DDL = [
    "CREATE TABLE author (author_id INTEGER PRIMARY KEY, name VARCHAR(40), country VARCHAR(20))",
    "CREATE TABLE book (book_id INTEGER PRIMARY KEY, title VARCHAR(60), pages INTEGER, "
    "price DECIMAL(6,2), author_id INTEGER REFERENCES author(author_id))",
    "CREATE TABLE staff (staff_id INTEGER PRIMARY KEY, first_name VARCHAR(20), "
    "last_name VARCHAR(20), job_title VARCHAR(20))",
    "CREATE TABLE member (member_id INTEGER PRIMARY KEY, first_name VARCHAR(20), "
    "last_name VARCHAR(20), title VARCHAR(5), postal_code VARCHAR(10), city VARCHAR(20), "
    "staff_id INTEGER REFERENCES staff(staff_id))",
    "CREATE TABLE loan (loan_id INTEGER PRIMARY KEY, book_id INTEGER REFERENCES book(book_id), "
    "member_id INTEGER REFERENCES member(member_id), loan_date DATE, days INTEGER)",
]
AUTHORS = [(1, "Ilse Varga", "HU"), (2, "Tomas Reyes", "ES"), (3, "Mira Olsen", "NO"),
           (4, "Sunil Rao", "IN")]  # fmt: skip
BOOKS = [
    (10, "Stone Rivers", 320, 18.5, 1),
    (11, "Glass Orchard", 210, 12.0, 1),
    (12, "Night Ferry", 450, 22.0, 1),
    (13, "Salt Road", 180, 9.5, 2),
    (14, "Paper Moons", 260, 14.0, 2),
    (15, "Iron Bells", 390, 19.0, 3),
    (16, "Quiet Harbour", 300, 16.0, 3),
    (17, "Copper Sky", 240, 11.5, 3),
]  # author 4 wrote none: a count of zero
STAFF = [(1, "Ada", "Kerr", "Librarian"), (2, "Ben", "Osei", "Librarian"),
         (3, "Cleo", "Marsh", "Librarian")]  # fmt: skip
MEMBERS = [
    (1, "Nora", "Lind", "Ms", "10115", "Berlin", 1),
    (2, "Omar", "Lind", "Mr", "10117", "Berlin", 1),
    (3, "Nora", "Haas", "Ms", "20095", "Hamburg", 2),
    (4, "Piet", "Bos", "Mr", "80331", "Munich", 3),
    (5, "Rita", "Gal", "Ms", "50667", "Cologne", 2),
    (6, "Sven", "Ek", "Mr", "60311", "Frankfurt", 3),
]
LOANS = [
    (100, 10, 1, dt.date(2023, 1, 5), 14),
    (101, 11, 1, dt.date(2023, 3, 2), 7),
    (102, 12, 2, dt.date(2024, 2, 9), 21),
    (103, 13, 3, dt.date(2023, 6, 1), 14),
    (104, 10, 4, dt.date(2024, 7, 7), 10),
    (105, 15, 5, dt.date(2023, 9, 9), 28),
    (106, 16, 5, dt.date(2023, 11, 1), 14),
    (107, 17, 6, dt.date(2022, 4, 4), 7),
    (108, 14, 2, dt.date(2023, 5, 5), 14),
    (109, 12, 3, dt.date(2023, 8, 8), 3),
]
ROWS: dict[str, list[tuple[Any, ...]]] = {
    "author": AUTHORS,
    "book": BOOKS,
    "staff": STAFF,
    "member": MEMBERS,
    "loan": LOANS,
}


def _templates(url: str, *, every: bool = False) -> tuple[Database, Any, list[SqlTemplate]]:
    db = Database(url)
    schema = introspect(db)
    return db, schema, enumerate_templates(db, schema, all_kinds=every).templates


def _groups(db: Database, schema: Any, template: SqlTemplate) -> dict[tuple[Any, ...], list[Any]]:
    p = plan(template.sql, schema, dialect=db.sqlglot_dialect)
    return {tuple(str(v) for v in g.bindings.values()): g.answers for g in iter_groups(db, p)}


def _one(templates: list[SqlTemplate], prefix: str) -> SqlTemplate:
    found = [t for t in templates if t.id.startswith(prefix)]
    assert len(found) == 1, [t.id for t in templates]
    return found[0]


def test_every_kind_and_every_answer_is_what_a_count_by_hand_gives(make_db) -> None:  # type: ignore[no-untyped-def]
    url = make_db(DDL, ROWS)
    db, schema, templates = _templates(url, every=True)
    try:
        assert set(KINDS) == {t.kind for t in templates}
        dialect = db.sqlglot_dialect
        for t in templates:  # the kind the enumerator wrote is the one its SQL reads as
            assert infer_kind(t.sql, schema, dialect=dialect) == t.kind, t.id
        by_author: dict[str, list[tuple[Any, ...]]] = {}
        for book in BOOKS:
            by_author.setdefault(AUTHORS[book[4] - 1][1], []).append(book)
        count = _groups(db, schema, _one(templates, "count-book-of-author-name"))
        assert count == {(a[1],): [len(by_author.get(a[1], []))] for a in AUTHORS}  # zero too
        total = _groups(db, schema, _one(templates, "sum-book-pages-of-author-name"))
        assert total == {(n,): [sum(b[2] for b in bs)] for n, bs in by_author.items()}
        average = _groups(db, schema, _one(templates, "average-book-price-of-author-name"))
        assert {k: round(float(v[0]), 2) for k, v in average.items()} == {
            (n,): round(statistics.mean(b[3] for b in bs), 2) for n, bs in by_author.items()
        }
        longest = _groups(db, schema, _one(templates, "book-most-pages-of-author-name"))
        assert longest == {(n,): [max(bs, key=lambda b: b[2])[1]] for n, bs in by_author.items()}
        written = _groups(db, schema, _one(templates, "book-of-author-name"))
        assert written == {(n,): sorted(b[1] for b in bs) for n, bs in by_author.items()}
        # A yes/no over a threshold the wording states: the answer follows the comparison.
        yes_no = next(t for t in templates if t.kind == "yes_no" and "pages" in t.id)
        threshold = float(asks(yes_no.sql, schema, dialect=dialect).threshold or "nan")
        said = _groups(db, schema, yes_no)
        assert said == {(b[1],): ["yes" if b[2] > threshold else "no"] for b in BOOKS}
        # The loans of each member in the year most loans fall in (2023), zero included.
        in_year = next(t for t in templates if t.kind == "date_range" and "loan" in t.id)
        a = asks(in_year.sql, schema, dialect=dialect, declared=in_year.kind)
        assert a.year == "2023"
        member_loans = Counter(
            (MEMBERS[m - 1][1], MEMBERS[m - 1][2]) for _, _, m, day, _ in LOANS if day.year == 2023
        )
        if in_year.placeholder_list[0].table.lower() == "member":
            assert _groups(db, schema, in_year) == {
                (m[1], m[2]): [member_loans[(m[1], m[2])]] for m in MEMBERS
            }
        # A path of two foreign keys: the author of the book of a loan is a book's author.
        path = next(t for t in templates if t.kind == "path" and t.id.startswith("author-name"))
        answers = _groups(db, schema, path)
        authors = {b[1]: AUTHORS[b[4] - 1][1] for b in BOOKS}
        for (title, *_), (answer,) in answers.items():
            assert answer == authors[title]
    finally:
        db.dispose()


def test_people_are_asked_by_first_and_last_name_never_by_postal_code_or_title(
    tmp_path: Path,
) -> None:
    from tests.conftest import sqlite_people

    url = sqlite_people(tmp_path / "library.sqlite", (DDL, ROWS))
    db, schema, templates = _templates(url)
    try:
        member = schema.table("member")
        staff = schema.table("staff")
        assert best_naming(db, member).columns == ("first_name", "last_name")
        # Three librarians share a job title: it names none of them.
        assert best_naming(db, staff).columns == ("first_name", "last_name")
        keys = {p.key for t in templates for p in t.placeholder_list}
        assert "member.postal_code" not in keys and "member.title" not in keys
        assert "staff.job_title" not in keys and "member.first_name" in keys
        lookup = next(
            t for t in templates if t.kind == "lookup" and t.id.startswith("city-by-member")
        )
        # One entity named by two placeholders, written as a person's name.
        assert [p.key for p in lookup.placeholder_list] == ["member.first_name", "member.last_name"]
        assert "'[member.first_name] [member.last_name]'" in describe(lookup, schema)
        for style in ("short", "long"):
            assert all(
                "[member.first_name] [member.last_name]" in text
                for text in verbalize(lookup, schema, style, 3)
            )
        # Nora Lind and Omar Lind share a last name, Nora Lind and Nora Haas a first name:
        # the pair tells all six apart.
        assert len(_groups(db, schema, lookup)) == len(MEMBERS)
    finally:
        db.dispose()


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        (["nickname"], "member has no column 'nickname'"),
        (["title"], "member.title repeats 4 of 6 values"),
        (["last_name"], "member.last_name repeats 1 of 6 values"),
    ],
)
def test_a_naming_the_user_gives_is_checked(
    tmp_path: Path, columns: list[str], message: str
) -> None:
    from tests.conftest import sqlite_people

    url = sqlite_people(tmp_path / "library.sqlite", (DDL, ROWS))
    db = Database(url)
    try:
        table = introspect(db).table("member")
        assert table is not None
        with pytest.raises(ValueError, match=message):
            chosen_naming(db, table, columns)
        assert chosen_naming(db, table, ["first_name", "last_name"]).composite
    finally:
        db.dispose()


def test_the_sample_per_kind_is_one_option_away(tmp_path: Path) -> None:
    from tests.conftest import sqlite_people

    url = sqlite_people(tmp_path / "library.sqlite", (DDL, ROWS))
    db = Database(url)
    schema = introspect(db)
    try:
        few = enumerate_templates(db, schema, per_kind=1)
        every = enumerate_templates(db, schema, all_kinds=True)
        default = enumerate_templates(db, schema)
        assert len(few.templates) < len(default.templates) < len(every.templates)
        for found in (few, default, every):  # the counts returned are the templates kept
            assert sum(sum(k.values()) for k in found.kept.values()) == len(found.templates)
        assert all(n <= 1 for kept in few.kept.values() for n in kept.values())
        # Each table and kind keeps at most what it has candidates for.
        for table, kept in every.kept.items():
            for kind, n in kept.items():
                assert n <= every.candidates[table][kind]
    finally:
        db.dispose()


@pytest.mark.parametrize("which", ["midas_db", "tpch_db"])
def test_real_schemas_get_every_table_asked_or_a_reason(
    which: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue(which)
    db = Database(url)
    schema = introspect(db)
    try:
        found = enumerate_templates(db, schema)
        read = {
            name.lower()
            for t in found.templates
            for name in reach(t.sql, schema, dialect=db.sqlglot_dialect).tables
        }
        for table in schema.tables:  # every table is read, or the notes say why not
            assert table.name.lower() in read or found.notes.get(table.name), table.name
        kinds = {t.kind for t in found.templates}
        assert len(kinds) >= 9, kinds
        for t in found.templates:  # every template executes and answers something
            assert _groups(db, schema, t), t.id
    finally:
        db.dispose()


def test_the_coverage_report_says_what_reaches_each_column_and_why_not(tmp_path: Path) -> None:
    """From Python (typed) and the command line alike: per table and column the kinds
    that reach it, and for every column none reaches, why; a kept file's coverage is the
    file's own (a column it leaves out is said to be left out by the file)."""
    import ragaudit as ra
    from ragaudit.generate.sql.coverage import ID_LIKE, NOT_IN_FILE
    from ragaudit.generate.sql.templates import load_templates, save_templates
    from ragaudit.rundir import RunDir
    from tests.conftest import sqlite_people
    from tests.support.cli import ragaudit

    url = sqlite_people(tmp_path / "library.sqlite", (DDL, ROWS))
    project = ra.Project(root=tmp_path, db=url, progress="none")
    made = project.templates_sql()
    coverage = made.coverage
    assert coverage is not None and set(coverage.tables) == {t[0] for t in _TABLES}
    for name, table in coverage.tables.items():
        for column, reached in table.columns.items():
            assert bool(reached.kinds) != bool(reached.why), (name, column)
    book = coverage.tables["book"]
    assert book.columns["book_id"].why == ID_LIKE
    assert "lookup" in book.columns["pages"].kinds  # and aggregated per author
    assert {"sum", "average", "minimum", "maximum", "superlative"} & set(
        book.columns["pages"].kinds
    )
    assert "lookup" in coverage.tables["member"].columns["city"].kinds
    frame = coverage.to_pandas()
    assert len(frame) == sum(len(t.columns) for t in coverage.tables.values())
    # A file without the member's lookups: their columns are said to be left out by it.
    path = RunDir(project.run_dir).templates_sql
    kept = [t for t in load_templates(path).templates if not t.id.startswith("city-by-member")]
    save_templates(path, kept)
    again = project.templates_sql().coverage
    assert again is not None
    assert again.tables["member"].columns["city"].why == NOT_IN_FILE
    # A table that nothing names (no key, no naming column), added to the database.
    conn = sqlite3.connect(tmp_path / "library.sqlite")
    conn.execute("CREATE TABLE shelf_note (remark TEXT, weight INTEGER)")
    conn.executemany("INSERT INTO shelf_note VALUES (?, ?)", [("dusty", 1), ("dusty", 2)])
    conn.commit()
    conn.close()
    again = project.templates_sql().coverage
    assert again is not None and again.tables["shelf_note"].why is not None
    shown = ragaudit("templates", "sql", "--db", url, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "Coverage of the schema" in shown.stdout
    assert f"not asked: member.city: {NOT_IN_FILE}" in shown.stderr
    assert "book.book_id" not in shown.stderr  # a key is never asked: not listed
    # Every other column no template reaches is listed with why, those of a table that
    # nothing names too (the Python coverage lists each).
    for name, table in again.tables.items():
        for column, reached in table.columns.items():
            if reached.why is not None and reached.why != ID_LIKE:
                assert f"not asked: {name}.{column}: {reached.why}" in shown.stderr
    assert "not asked: shelf_note.remark:" in shown.stderr


_TABLES = [(t.split("(")[0].split()[-1],) for t in DDL]
