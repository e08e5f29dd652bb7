"""Shared fixtures: the scripted OpenAI-compatible server, a real PostgreSQL server, and
small databases in each supported engine holding the same awkward values."""

from __future__ import annotations

import datetime
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import postgres as pg
from tests.support.scripted_llm_server import ScriptedLLMServer

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
REPO = Path(__file__).resolve().parents[1]

# One table with the values that break string pasting: quotes, unicode, NULL, numbers as
# text; and a second table with a foreign key to it.
PEOPLE = [
    (1, "O'Brien", "007", "surveyor"),
    (2, 'Zoë "Z" Ng', "42", "modeller"),
    (3, None, "13", "nameless"),
    (4, "Plain Name", "0042", "engineer"),
]
DDL = [
    "CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT, code TEXT NOT NULL, role TEXT)",
    "CREATE TABLE badge (badge_id INTEGER PRIMARY KEY, person_id INTEGER REFERENCES person(id),"
    " colour TEXT)",
    # A real DATE column, a composite primary key, no primary key, and no rows at all.
    "CREATE TABLE event (title TEXT PRIMARY KEY, happened DATE, place TEXT)",
    "CREATE TABLE assignment (person_id INTEGER REFERENCES person(id), project_code TEXT,"
    " hours INTEGER, PRIMARY KEY (person_id, project_code))",
    "CREATE TABLE loose (label TEXT, shade TEXT)",
    "CREATE TABLE empty_thing (name TEXT, colour TEXT)",
]
BADGES = [(10, 1, "red"), (11, 2, "blue"), (12, 2, "green")]
EVENTS = [
    ("Kick-off", datetime.date(2023, 3, 1), "Orrin"),
    ("Handover", datetime.date(2024, 12, 20), "Eastmere"),
]
ASSIGNMENTS = [(1, "P-1", 10), (1, "P-2", 5), (2, "P-1", 7)]
LOOSE = [("alpha", "pale"), ("beta", "dark"), ("gamma", "pale")]


def _fill(execute, ddl: list[str] = DDL, rows: dict[str, list[tuple]] | None = None) -> None:  # type: ignore[no-untyped-def]
    if rows is not None:  # a database of the test's own
        for statement in ddl:
            execute(statement, None)
        for table, values in rows.items():
            for row in values:
                marks = ", ".join(["%s"] * len(row))
                execute(f"INSERT INTO {table} VALUES ({marks})", row)
        return
    for statement in DDL:
        execute(statement, None)
    for row in PEOPLE:
        execute("INSERT INTO person VALUES (%s, %s, %s, %s)", row)
    for row in BADGES:
        execute("INSERT INTO badge VALUES (%s, %s, %s)", row)
    for row in EVENTS:
        execute("INSERT INTO event VALUES (%s, %s, %s)", row)
    for row in ASSIGNMENTS:
        execute("INSERT INTO assignment VALUES (%s, %s, %s)", row)
    for row in LOOSE:
        execute("INSERT INTO loose VALUES (%s, %s)", row)


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[pg.PostgresServer]:
    bin_dir = pg.find_bin_dir()
    if bin_dir is None:
        message = "PostgreSQL server binaries not installed (make test installs them)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    server = pg.start(bin_dir)
    try:
        yield server
    finally:
        pg.stop(server)


Tables = tuple[list[str], dict[str, list[tuple]]] | None  # (DDL, rows per table)


def sqlite_people(path: Path, tables: Tables = None) -> str:
    conn = sqlite3.connect(path)
    to_text = lambda v: v.isoformat() if isinstance(v, datetime.date) else v  # noqa: E731
    _fill(
        lambda sql, params: conn.execute(
            sql.replace("%s", "?"), tuple(to_text(v) for v in params or ())
        ),
        *(tables or ()),
    )
    conn.commit()
    conn.close()
    return f"sqlite:///{path}"


def duckdb_people(path: Path, tables: Tables = None) -> str:
    import duckdb

    conn = duckdb.connect(str(path))
    if tables is not None:  # one statement per batch: a thousand single inserts are slow
        ddl, rows = tables
        for statement in ddl:
            conn.execute(statement)
        for table, values in rows.items():
            if values:
                marks = ", ".join(["?"] * len(values[0]))
                conn.executemany(f"INSERT INTO {table} VALUES ({marks})", values)
    else:
        _fill(lambda sql, params: conn.execute(sql.replace("%s", "?"), params or []))
    conn.close()
    return f"duckdb:///{path}"


def postgres_people(server: pg.PostgresServer, dbname: str, tables: Tables = None) -> str:
    import psycopg

    with psycopg.connect(server.conninfo, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {dbname}")
        admin.execute(f"CREATE DATABASE {dbname}")
    conninfo = server.conninfo.replace("dbname=postgres", f"dbname={dbname}")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        _fill(lambda sql, params: conn.execute(sql, params), *(tables or ()))
    return server.url.rsplit("/", 1)[0] + f"/{dbname}"


@pytest.fixture(params=["sqlite", "duckdb", "postgresql"])
def people_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The same small database in each engine ragaudit supports."""
    if request.param == "sqlite":
        return sqlite_people(tmp_path / "people.sqlite")
    if request.param == "duckdb":
        return duckdb_people(tmp_path / "people.duckdb")
    server = request.getfixturevalue("postgres_server")
    return postgres_people(server, f"people_{abs(hash(request.node.name)) % 10**8}")


@pytest.fixture(params=["sqlite", "duckdb", "postgresql"])
def make_db(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A function that builds a database of the test's own (DDL, rows per table) in each
    engine ragaudit supports, and returns its URL."""

    def build(ddl: list[str], rows: dict[str, list[tuple]]) -> str:
        if request.param == "sqlite":
            return sqlite_people(tmp_path / "own.sqlite", (ddl, rows))
        if request.param == "duckdb":
            return duckdb_people(tmp_path / "own.duckdb", (ddl, rows))
        server = request.getfixturevalue("postgres_server")
        name = f"own_{abs(hash(request.node.name)) % 10**8}"
        return postgres_people(server, name, (ddl, rows))

    return build


REFERENCE = REPO.parent / "shared" / "reference" / "grammar"


@pytest.fixture(scope="session")
def grammar_reference() -> Path:
    """The GRAMMAR reference data (test data outside the project; absent in a user's clone)."""
    if not REFERENCE.is_dir():
        # A user's clone has no ../shared (in their CI too): skip, saying why.
        pytest.skip(f"GRAMMAR reference data not found at {REFERENCE} (../shared is absent)")
    return REFERENCE
