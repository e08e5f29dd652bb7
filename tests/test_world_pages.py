"""A world from the user's database keeps every document within a small model's context:
a link table's rows are listed by the side that takes part in few of them, and a profile
still too long is written in pages, each recording the facts it states."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import ragaudit as ra
from ragaudit.world.profiles import LINKS_PER_DOCUMENT, PAGE_WORDS, parse_profile_id
from tests.support.cli import ragaudit

TRACKS = 200
# Tags and the tracks tagged with every one of them: both sides are busy, so one of them
# lists every pair and is paged.
DENSE = LINKS_PER_DOCUMENT + 20


def _store(path: Path) -> None:
    """Playlists of very different sizes over tracks, and a tag table linked densely."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE playlist (PlaylistId INTEGER PRIMARY KEY, Name TEXT UNIQUE NOT NULL);
        CREATE TABLE track (TrackId INTEGER PRIMARY KEY, Name TEXT UNIQUE NOT NULL,
                            Milliseconds INTEGER);
        CREATE TABLE tag (TagId INTEGER PRIMARY KEY, Name TEXT UNIQUE NOT NULL);
        CREATE TABLE playlist_track (
            PlaylistId INTEGER REFERENCES playlist(PlaylistId),
            TrackId INTEGER REFERENCES track(TrackId),
            PRIMARY KEY (PlaylistId, TrackId));
        CREATE TABLE track_tag (
            TrackId INTEGER REFERENCES track(TrackId),
            TagId INTEGER REFERENCES tag(TagId),
            PRIMARY KEY (TrackId, TagId));
        """
    )
    conn.executemany(
        "INSERT INTO playlist VALUES (?, ?)",
        [(1, "Everything Ever Recorded"), (2, "Short Evening List"), (3, "Empty Shelf")],
    )
    conn.executemany(
        "INSERT INTO track VALUES (?, ?, ?)",
        [(i, f"Song Number {i:03d}", 1000 * i) for i in range(1, TRACKS + 1)],
    )
    conn.executemany(
        "INSERT INTO tag VALUES (?, ?)", [(i, f"Mood Label {i:03d}") for i in range(1, DENSE + 1)]
    )
    pairs = [(1, t) for t in range(1, TRACKS + 1)] + [(2, t) for t in range(1, 11)]
    conn.executemany("INSERT INTO playlist_track VALUES (?, ?)", pairs)
    conn.executemany(
        "INSERT INTO track_tag VALUES (?, ?)",
        [(t, g) for t in range(1, DENSE + 1) for g in range(1, DENSE + 1)],
    )
    conn.commit()
    conn.close()


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_no_profile_outgrows_a_small_models_context_and_every_link_row_is_stated(
    tmp_path: Path,
) -> None:
    source = tmp_path / "store.sqlite"
    _store(source)
    world = tmp_path / "w"
    ra.make_world(world, from_db=f"sqlite:///{source}", holes=0.0)
    docs = {d["id"]: d["text"] for d in _lines(world / "documents.jsonl")}
    facts = {d["id"]: d["facts"] for d in _lines(world / "document_facts.jsonl")}

    # Bounded: no document is longer than a page, nor than the model's context.
    assert max(len(text.split()) for text in docs.values()) <= PAGE_WORDS
    check = ra.Project(world / "ragaudit.yaml").doctor(use_llm=False)
    assert check.corpus is not None and not check.corpus.too_long
    assert not check.corpus.crowded

    # Each page names its row; the row's pages together hold what one profile would.
    by_row: dict[tuple[str, str], list[str]] = {}
    for doc_id in docs:
        by_row.setdefault(parse_profile_id(doc_id), []).append(doc_id)
    text_of = {row: "\n".join(docs[i] for i in ids) for row, ids in by_row.items()}
    paged = {row: ids for row, ids in by_row.items() if len(ids) > 1}
    assert paged, "the densely tagged side is long enough to need pages"
    for (table, key), ids in paged.items():
        first = f"{table}/{key}"
        assert first in ids
        # The name is recorded on the first page alone; every fact where it is written.
        for doc_id in ids:
            named = [f for f in facts[doc_id] if f["table"] == table and f["row_key"] == key]
            assert bool(named) == (doc_id == first), doc_id
            assert all(f["stated"] in docs[doc_id] for f in facts[doc_id])
        assert all(f"part {n} of {len(ids)}" in docs[f"{first}/{n}"] for n in (2, len(ids)))

    # Every link row is stated, on the side that takes part in few rows of its table.
    conn = sqlite3.connect(source)
    names = {
        table: dict(conn.execute(f"SELECT {table.capitalize()}Id, Name FROM {table}"))
        for table in ("playlist", "track", "tag")
    }
    links = (("playlist_track", "playlist", "track"), ("track_tag", "track", "tag"))
    for link, left, right in links:
        rows = conn.execute(
            f"SELECT {left.capitalize()}Id, {right.capitalize()}Id FROM {link}"
        ).fetchall()
        words = link.replace("_", " ")
        for a, b in rows:
            on_left = f"In {words}, {names[left][a]} is listed with {names[right][b]}."
            on_right = f"In {words}, {names[right][b]} is listed with {names[left][a]}."
            assert on_left in text_of[left, str(a)] or on_right in text_of[right, str(b)]
    # The playlist of every track lists none of them; each track names it instead. The
    # short playlist lists its ten tracks itself, as they list it.
    everything = text_of["playlist", "1"]
    assert "is listed with" not in everything and len(by_row["playlist", "1"]) == 1
    assert (
        "In playlist track, Song Number 042 is listed with Everything Ever Recorded."
        in (text_of["track", "42"])
    )
    short = text_of["playlist", "2"]
    assert all(f"listed with Song Number {t:03d}." in short for t in range(1, 11))
    meta = json.loads((world / "world.json").read_text())
    assert meta["pages"] == {"words": PAGE_WORDS, "links_per_document": LINKS_PER_DOCUMENT}


def test_a_value_longer_than_a_page_is_written_whole_and_said(tmp_path: Path) -> None:
    """A sentence is never split: one cell of 900 words makes its profile longer than a
    page, which world.json lists and the command says (it was silent)."""
    source = tmp_path / "notes.sqlite"
    conn = sqlite3.connect(source)
    conn.execute("CREATE TABLE artist (ArtistId INTEGER PRIMARY KEY, Name TEXT, Bio TEXT)")
    conn.execute("INSERT INTO artist VALUES (1, 'Long Story', ?)", (" ".join(["word"] * 900),))
    conn.execute("INSERT INTO artist VALUES (2, 'Short Story', 'brief')")
    conn.commit()
    conn.close()
    made = ragaudit("world", "w", "--from-db", f"sqlite:///{source}", "--holes", "0", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "warning: 1 document is longer than a page of 600 words (artist/1)" in made.stderr
    meta = json.loads((tmp_path / "w" / "world.json").read_text())
    assert meta["longer_than_a_page"] == ["artist/1"]
    world = ra.make_world(tmp_path / "w2", from_db=f"sqlite:///{source}", holes=0.0)
    assert world.summary.warnings and "artist/1" in world.summary.warnings[0]
