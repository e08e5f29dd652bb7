"""``world --from-db --rename`` on a music store's schema (a new user's trial): each row is
named as the enumerator names it (an employee by first and last name, not by the job title
three sales agents share), the user may name a table's rows, and renaming changes a value
only where it names a renamed row: its name columns and the keys that point at it, never
a city, a last name or a word of free text that merely equals a name."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ragaudit.errors import UserError
from ragaudit.world.from_db import build_world_from_db
from tests.support.cli import ragaudit

EMPLOYEES = [
    (1, "Andrew", "Adams", "General Manager", None),
    (2, "Nancy", "Edwards", "Sales Manager", None),
    (3, "Jane", "Peacock", "Sales Agent", "JP"),
    (4, "Margaret", "Park", "Sales Agent", None),
    (5, "Steve", "Johnson", "Sales Agent", None),
    (6, "Robert", "King", "IT Staff", None),
]
CUSTOMERS = [
    (1, "Luís", "Gonçalves", "São José", "Embraer", 3),
    (2, "Frank", "Harris", "Mountain View", "Google Inc.", 4),
    (3, "Jack", "Smith", "Redmond", "Microsoft", 5),
    (4, "Michelle", "Brooks", "New York", None, 3),
    (5, "John", "Gordon", "Boston", "Music Store Ltd", 4),
    (6, "Tim", "King", "Brooks", None, 5),  # an employee's last name; a customer's as city
    (7, "Aaron", "Mitchell", "Frank Harris", None, 3),  # a city named as a customer is
    (8, "New", "York", "Halifax", None, 4),  # a customer named as a city is
]
PLAYLISTS = [(1, "Music"), (2, "Movies"), (3, "TV Shows")]
TRACKS = [
    (1, "For Those About To Rock", "Angus Young, Malcolm Young, Brian Johnson"),
    (2, "Balls to the Wall", "Music by U. Dirkschneider"),
    (3, "Fast As a Shark", "F. Baltes, Music arranged by R.A. Smith-Diesel"),
]


def _store(path: Path, notes: bool = False) -> str:
    conn = sqlite3.connect(path)
    note = ", Note TEXT" if notes else ""
    conn.executescript(
        f"""
        CREATE TABLE Employee (EmployeeId INTEGER PRIMARY KEY, FirstName TEXT, LastName TEXT,
            Title TEXT, Nickname TEXT);
        CREATE TABLE Customer (CustomerId INTEGER PRIMARY KEY, FirstName TEXT, LastName TEXT,
            City TEXT, Company TEXT,
            SupportRepId INTEGER REFERENCES Employee (EmployeeId){note});
        CREATE TABLE Playlist (PlaylistId INTEGER PRIMARY KEY, Name TEXT);
        CREATE TABLE Track (TrackId INTEGER PRIMARY KEY, Name TEXT, Composer TEXT);
        """
    )
    conn.executemany("INSERT INTO Employee VALUES (?, ?, ?, ?, ?)", EMPLOYEES)
    customers = [
        (*c, f"{c[1]} {c[2]} asked Jane Peacock; Frank Harris was copied." if notes else None)
        for c in CUSTOMERS
    ]
    if notes:
        conn.executemany("INSERT INTO Customer VALUES (?, ?, ?, ?, ?, ?, ?)", customers)
    else:
        conn.executemany("INSERT INTO Customer VALUES (?, ?, ?, ?, ?, ?)", CUSTOMERS)
    conn.executemany("INSERT INTO Playlist VALUES (?, ?)", PLAYLISTS)
    conn.executemany("INSERT INTO Track VALUES (?, ?, ?)", TRACKS)
    conn.commit()
    conn.close()
    return f"sqlite:///{path}"


def _tables(path: Path) -> dict[str, dict[Any, dict[str, Any]]]:
    """table -> {primary key: {column: value}}."""
    conn = sqlite3.connect(path)
    try:
        out: dict[str, dict[Any, dict[str, Any]]] = {}
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            cursor = conn.execute(f'SELECT * FROM "{table}"')
            names = [d[0] for d in cursor.description]
            out[table] = {row[0]: dict(zip(names, row, strict=True)) for row in cursor}
        return out
    finally:
        conn.close()


def _documents(world: Path) -> dict[str, str]:
    lines = (world / "documents.jsonl").read_text().splitlines()
    return {d["id"]: d["text"] for d in map(json.loads, lines)}


def _name_columns(meta: dict) -> dict[str, list[str]]:
    out = {}
    for entity in meta["entities"]:
        name = entity["name"]
        out[entity["table"]] = [name] if isinstance(name, str) else list(name or [])
    return out


@pytest.mark.parametrize("rename", [False, True])
def test_employees_are_titled_by_first_and_last_name_not_a_shared_job_title(
    tmp_path: Path, rename: bool
) -> None:
    url = _store(tmp_path / "store.sqlite")
    world = tmp_path / "w"
    build_world_from_db(world, url, rename=rename, seed=0, holes=0.0)
    copy = _tables(world / "database.sqlite")["Employee"]
    docs = _documents(world)
    titles = {key: docs[f"Employee/{key}"].split("\n", 1)[0] for key in copy}
    assert titles == {key: f"{r['FirstName']} {r['LastName']}" for key, r in copy.items()}
    assert len(set(titles.values())) == len(EMPLOYEES)  # three sales agents, three names
    real = {f"{e[1]} {e[2]}" for e in EMPLOYEES}
    if rename:
        assert not set(titles.values()) & real
    else:
        assert set(titles.values()) == real
    # The name is stated as it is written: one fact per name column, each its value.
    facts = {
        d["id"]: d["facts"]
        for d in map(json.loads, (world / "document_facts.jsonl").read_text().splitlines())
    }
    jane = copy[3]
    name_facts = [f for f in facts["Employee/3"] if "asks" not in f]
    assert {(f["column"], f["stated"]) for f in name_facts} == {
        ("FirstName", jane["FirstName"]),
        ("LastName", jane["LastName"]),
    }
    # A customer's document names the support rep it points at by the rep's whole name.
    rep = copy[CUSTOMERS[0][5]]
    assert f"{rep['FirstName']} {rep['LastName']}" in docs["Customer/1"]
    meta = json.loads((world / "world.json").read_text())
    assert _name_columns(meta)["Employee"] == ["FirstName", "LastName"]


def test_renaming_changes_only_the_names_of_renamed_rows(tmp_path: Path) -> None:
    """The renamed copy, diffed against the original column by column: every value that
    changed is in a name column of a renamed row (or a key pointing at one); a city equal
    to a customer's name, an employee's last name a customer shares, "Music" inside the
    composers of tracks (a playlist is called Music) are left, and the real names left in
    text are counted in world.json."""
    url = _store(tmp_path / "store.sqlite")
    world = tmp_path / "w"
    build_world_from_db(world, url, rename=True, seed=0)
    before = _tables(tmp_path / "store.sqlite")
    after = _tables(world / "database.sqlite")
    meta = json.loads((world / "world.json").read_text())
    allowed = {(t, c) for t, columns in _name_columns(meta).items() for c in columns}
    changed: list[tuple[str, str, Any, Any]] = []
    for table, rows in before.items():
        assert after[table].keys() == rows.keys()
        for key, row in rows.items():
            for column, value in row.items():
                if after[table][key][column] != value:
                    changed.append((table, column, value, after[table][key][column]))
    outside = [c for c in changed if (c[0], c[1]) not in allowed]
    assert outside == []
    assert ("Employee", "Title") not in allowed and ("Customer", "City") not in allowed
    # The names did change, the pairs still tell the rows apart.
    assert {(t, c) for t, c, _, _ in changed} == {
        ("Employee", "FirstName"),
        ("Employee", "LastName"),
        ("Customer", "FirstName"),
        ("Customer", "LastName"),
        ("Playlist", "Name"),
        ("Track", "Name"),
    }
    people = {(r["FirstName"], r["LastName"]) for r in after["Customer"].values()}
    assert len(people) == len(CUSTOMERS)
    assert not people & {(c[1], c[2]) for c in CUSTOMERS}
    # Left standing in text, and counted: "Music" twice, a city written as a customer is.
    renaming = meta["renaming"]
    assert renaming["replaced_in_text"] == {}
    assert renaming["left_in_text"] == {
        "Customer.City": 2,  # "Frank Harris", "New York"
        "Customer.Company": 1,  # "Music Store Ltd"
        "Track.Composer": 2,
    }


def test_free_text_is_renamed_in_the_rows_that_refer_to_the_name(tmp_path: Path) -> None:
    """A note names its own customer and the support rep the row points at: both are
    replaced there; another customer's name in it is left, and counted."""
    url = _store(tmp_path / "store.sqlite", notes=True)
    world = tmp_path / "w"
    build_world_from_db(world, url, rename=True, seed=0)
    after = _tables(world / "database.sqlite")
    employees = after["Employee"]
    for key, row in after["Customer"].items():
        rep = employees[row["SupportRepId"]]
        own = f"{row['FirstName']} {row['LastName']}"
        rep_name = f"{rep['FirstName']} {rep['LastName']}"
        was_rep = next(f"{e[1]} {e[2]}" for e in EMPLOYEES if e[0] == row["SupportRepId"])
        jane = rep_name if was_rep == "Jane Peacock" else "Jane Peacock"
        frank = own if key == 2 else "Frank Harris"  # customer 2 is Frank Harris
        assert row["Note"] == f"{own} asked {jane}; {frank} was copied.", key
    meta = json.loads((world / "world.json").read_text())
    served_by_jane = sum(1 for c in CUSTOMERS if c[5] == 3)
    assert meta["renaming"]["replaced_in_text"] == {
        "Customer.Note": len(CUSTOMERS) + served_by_jane + 1
    }
    left = meta["renaming"]["left_in_text"]["Customer.Note"]
    assert left == (len(CUSTOMERS) - served_by_jane) + (len(CUSTOMERS) - 1)  # Jane; Frank


@pytest.mark.parametrize(
    ("names", "message"),
    [
        ({"Employee": ["Nope"]}, "Employee has no column 'Nope'"),
        ({"Employee": ["Title"]}, "Employee.Title repeats 2 of 6 values"),
        ({"Employee": ["Nickname"]}, "Employee.Nickname is 83% NULL"),
        ({"Employee": ["FirstName", "LastName", "Title"]}, "one column or two"),
        ({"Album": ["Title"]}, "no table 'Album'"),
    ],
)
def test_a_naming_the_user_gives_is_checked_in_one_line(
    tmp_path: Path, names: dict[str, list[str]], message: str
) -> None:
    url = _store(tmp_path / "store.sqlite")
    with pytest.raises(UserError) as caught:
        build_world_from_db(tmp_path / "w", url, rename=True, seed=0, names=names)
    text = str(caught.value)
    assert text.startswith("world --from-db: names: ") and "\n" not in text
    assert message in text
    assert not (tmp_path / "w").exists()


def test_a_naming_the_user_gives_names_the_rows_and_is_recorded(tmp_path: Path) -> None:
    url = _store(tmp_path / "store.sqlite")
    world = tmp_path / "w"
    build_world_from_db(world, url, seed=0, names={"Track": ["Composer"]})
    meta = json.loads((world / "world.json").read_text())
    assert meta["asked"]["names"] == {"Track": ["Composer"]}
    assert _name_columns(meta)["Track"] == ["Composer"]
    assert _documents(world)["Track/2"].startswith("Music by U. Dirkschneider\n")


def test_the_command_line_and_python_take_the_same_names(tmp_path: Path) -> None:
    """``--name Track=Composer`` is ``names={"Track": ["Composer"]}``; a malformed one and
    a naming that repeats values are one line each, with no traceback."""
    url = _store(tmp_path / "music.sqlite")
    done = ragaudit("world", "w", "--from-db", url, "--name", "Track=Composer", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    meta = json.loads((tmp_path / "w" / "world.json").read_text())
    assert meta["asked"]["names"] == {"Track": ["Composer"]}
    bad = ragaudit("world", "w2", "--from-db", url, "--name", "Track", cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "write TABLE=COLUMN or TABLE=FIRST+LAST" in bad.stderr
    repeated = ragaudit("world", "w3", "--from-db", url, "--name", "Employee=Title", cwd=tmp_path)
    errors = [line for line in repeated.stderr.splitlines() if line.startswith("error:")]
    assert repeated.returncode == 2 and "Traceback" not in repeated.stderr
    assert errors == [
        "error: world --from-db: names: Employee.Title repeats 2 of 6 values: a name given "
        "for a table must tell every row apart"
    ]
    assert not (tmp_path / "w3").exists()


def test_a_column_named_twice_or_a_table_without_rows_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    """``--name Playlist=Name+Name`` would title each row by its name written twice;
    ``--name`` on an empty table has nothing to name: each is one line, no world."""
    url = _store(tmp_path / "music.sqlite")
    conn = sqlite3.connect(tmp_path / "music.sqlite")
    conn.execute("CREATE TABLE Ghost (GhostId INTEGER PRIMARY KEY, Name TEXT)")
    conn.commit()
    conn.close()
    for name, why in (
        ("Playlist=Name+Name", "Playlist.Name is named twice"),
        ("Ghost=Name", "Ghost has no rows"),
    ):
        done = ragaudit("world", "w", "--from-db", url, "--name", name, cwd=tmp_path)
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert len(errors) == 1 and why in errors[0], errors
        assert not (tmp_path / "w").exists()
