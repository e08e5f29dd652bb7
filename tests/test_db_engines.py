"""The database layer against real SQLite, DuckDB and PostgreSQL databases."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ragaudit.db import Database, bind_template, introspect
from ragaudit.errors import DatabaseError, PlaceholderError
from tests.conftest import PEOPLE


def _db(url: str) -> Database:
    return Database(url, timeout_s=10)


def test_introspection_finds_tables_columns_keys_and_counts(people_db_url: str) -> None:
    schema = introspect(_db(people_db_url))
    person = schema.table("person")
    badge = schema.table("badge")
    assert person is not None and badge is not None
    assert person.row_count == len(PEOPLE)
    assert [c.name for c in person.columns] == ["id", "name", "code", "role"]
    assert person.primary_key == ("id",)
    name = person.column("name")
    assert name is not None and name.null_count == 1 and name.distinct_count == 3
    assert person.column("code").distinct_count == 4  # '42' and '0042' are different text
    assert [(fk.columns, fk.ref_table, fk.ref_columns) for fk in badge.foreign_keys] == [
        (("person_id",), "person", ("id",))
    ]


@pytest.mark.parametrize("value", ["O'Brien", 'Zoë "Z" Ng', None, "Plain Name"])
def test_placeholder_values_round_trip_as_bound_parameters(people_db_url: str, value) -> None:
    db = _db(people_db_url)
    dialect = db.sqlglot_dialect
    statement, params = bind_template(
        "SELECT name, role FROM person WHERE name = '[person.name]'",
        {"person.name": value},
        dialect=dialect,
    )
    rows = db.execute(statement, params).rows
    expected = [(n, r) for _, n, _, r in PEOPLE if n == value]
    assert rows == expected
    assert len(rows) == 1


def test_number_stored_as_text_keeps_its_exact_text(people_db_url: str) -> None:
    db = _db(people_db_url)
    statement, params = bind_template(
        "SELECT code, role FROM person WHERE code = '[person.code]'",
        {"person.code": "0042"},
        dialect=db.sqlglot_dialect,
    )
    assert db.execute(statement, params).rows == [("0042", "engineer")]


def test_join_template_with_two_placeholders(people_db_url: str) -> None:
    db = _db(people_db_url)
    statement, params = bind_template(
        "SELECT b.colour FROM badge AS b JOIN person AS p ON b.person_id = p.id "
        "WHERE p.name = '[person.name]' AND b.colour <> '[badge.colour]' ORDER BY b.colour",
        {"person.name": 'Zoë "Z" Ng', "badge.colour": "green"},
        dialect=db.sqlglot_dialect,
    )
    assert db.execute(statement, params).rows == [("blue",)]


def test_writes_are_refused_by_the_connection_itself(people_db_url: str) -> None:
    # Validation would reject this first; the read-only connection is the second wall.
    db = _db(people_db_url)
    with pytest.raises(DatabaseError) as info:
        db.execute("DELETE FROM person")
    assert "\n" not in str(info.value)
    assert db.execute("SELECT COUNT(*) FROM person").rows == [(len(PEOPLE),)]


def test_a_literal_colon_is_not_taken_for_a_parameter(people_db_url: str) -> None:
    db = _db(people_db_url)
    assert db.execute("SELECT 'a:b' AS x, role FROM person WHERE id = 1").rows == [
        ("a:b", "surveyor")
    ]


def test_missing_or_extra_placeholder_values_are_errors() -> None:
    with pytest.raises(PlaceholderError, match=r"no value for person\.name"):
        bind_template("SELECT role FROM person WHERE name = '[person.name]'", {}, dialect="sqlite")
    with pytest.raises(PlaceholderError, match=r"unknown placeholders person\.code"):
        bind_template(
            "SELECT role FROM person WHERE name = '[person.name]'",
            {"person.name": "x", "person.code": "1"},
            dialect="sqlite",
        )


SLOW_SQL = {
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
    "SELECT MAX(x) FROM c",
    "duckdb": "SELECT COUNT(*) FROM range(100000000000) a",
    "postgresql": "SELECT pg_sleep(30)",
}


def test_statements_are_cancelled_at_the_timeout(people_db_url: str) -> None:
    db = Database(people_db_url, timeout_s=0.5)
    import time

    start = time.monotonic()
    with pytest.raises(DatabaseError, match="timeout"):
        db.execute(SLOW_SQL[db.dialect])
    assert time.monotonic() - start < 10
    start = time.monotonic()
    with pytest.raises(DatabaseError, match="timeout"):  # streamed, as instantiation reads
        list(db.stream(SLOW_SQL[db.dialect]))
    assert time.monotonic() - start < 10
    with pytest.raises(DatabaseError, match=r"query failed: .*nope"):
        list(db.stream("SELECT nope FROM person"))


def test_missing_sqlite_file_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(DatabaseError, match="no database file"):
        Database(f"sqlite:///{tmp_path / 'absent.db'}")


def test_unreachable_postgres_is_a_one_line_error() -> None:
    db = Database("postgresql://nobody:hunter2secret@127.0.0.1:1/none", timeout_s=2)
    with pytest.raises(DatabaseError) as info:
        db.check_connection()
    message = str(info.value)
    assert "cannot connect" in message and "\n" not in message
    assert "hunter2secret" not in message


def test_sqlite_file_is_not_modified_by_reads(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (a INT)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    db = Database(f"sqlite:///{path}")
    introspect(db)
    db.execute("SELECT a FROM t")
    assert path.read_bytes() == before


def test_postgres_scheme_spelling_is_accepted(postgres_server) -> None:
    db = Database(postgres_server.url.replace("postgresql://", "postgres://"), timeout_s=5)
    assert db.dialect == "postgresql"
    assert db.execute("SELECT 1 + 1").rows == [(2,)]
