"""A profile reads as written by a person: a foreign key is named by its role, not its
column ("the artist of", never "the artist id of"), a role that is a verb phrase is written
as one ("X reports to Y"), and "an" stands before a vowel."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import ragaudit as ra


def test_profiles_name_relations_by_their_role_and_read_as_sentences(tmp_path: Path) -> None:
    source = tmp_path / "shop.sqlite"
    conn = sqlite3.connect(source)
    conn.executescript(
        """
        CREATE TABLE Artist (ArtistId INTEGER PRIMARY KEY, Name TEXT UNIQUE);
        CREATE TABLE Album (AlbumId INTEGER PRIMARY KEY, Title TEXT UNIQUE,
                            ArtistId INTEGER REFERENCES Artist(ArtistId));
        CREATE TABLE Employee (EmployeeId INTEGER PRIMARY KEY, LastName TEXT, FirstName TEXT,
                               Title TEXT, CheckedIn TEXT,
                               ReportsTo INTEGER REFERENCES Employee(EmployeeId));
        CREATE TABLE Owner (OwnerId INTEGER PRIMARY KEY, Name TEXT UNIQUE);
        INSERT INTO Artist VALUES (1, 'Quiet Harbour'), (2, 'Loud Lantern');
        INSERT INTO Album VALUES (10, 'Salt Roads', 1), (11, 'Iron Rain', 2);
        INSERT INTO Employee VALUES
            (1, 'Adams', 'Andrew', 'General Manager', 'yes', NULL),
            (2, 'Edwards', 'Nancy', 'Sales Manager', 'no', 1),
            (3, 'Peacock', 'Jane', 'Sales Agent', 'yes', 2);
        INSERT INTO Owner VALUES (5, 'Ortega Holdings');
        """
    )
    conn.commit()
    conn.close()
    world = tmp_path / "w"
    ra.make_world(world, from_db=f"sqlite:///{source}", holes=0.0)
    docs = {
        d["id"]: d["text"]
        for d in map(json.loads, (world / "documents.jsonl").read_text().splitlines())
    }
    text = "\n".join(docs.values())
    assert "The artist of Salt Roads is Quiet Harbour." in docs["Album/10"]
    assert "Jane Peacock reports to Nancy Edwards." in docs["Employee/3"]
    # An attribute is written as one whatever its name reads like.
    assert "The checked in of Jane Peacock is yes." in docs["Employee/3"]
    assert "Ortega Holdings is an owner." in docs["Owner/5"]
    assert not re.search(r"\bid of\b|The reports to of|\ba [aeiou]", text, re.IGNORECASE), text
    # The reading check asks each fact in the same words.
    facts = [
        f
        for d in map(json.loads, (world / "document_facts.jsonl").read_text().splitlines())
        for f in d["facts"]
    ]
    asks = {f["asks"] for f in facts if f.get("asks")}
    assert "What is the checked in of Jane Peacock?" in asks
    assert not [a for a in asks if " id of " in a]
