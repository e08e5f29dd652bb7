"""Gold documents of a question along foreign keys, on a world made from a database: the
documents that state the facts the answer rests on (the asked row's profile, which says
"the genre of T is Rock"; for a path of two hops, both rows' profiles), never every
document that merely mentions the value. The retrieval verdicts are checked against a
count by hand of whether those rows' profiles were retrieved."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import ragaudit as ra
from ragaudit.records.models import QueryRecord
from ragaudit.world.profiles import profile_id

GENRES = ["Rock", "Jazz"]
ARTISTS = ["Ada Quill", "Ben Sorrel", "Cleo Marsh"]
COUNTRIES = ["Peru", "Chad", "Fiji"]


def _store(path: Path) -> None:
    """Three artists, six albums, forty tracks of two genres: a genre's name is mentioned
    by twenty tracks' profiles, an artist's by every profile of its albums."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE Genre (GenreId INTEGER PRIMARY KEY, Name TEXT NOT NULL);
        CREATE TABLE Artist (ArtistId INTEGER PRIMARY KEY, Name TEXT NOT NULL,
            Country TEXT);
        CREATE TABLE Album (AlbumId INTEGER PRIMARY KEY, Title TEXT NOT NULL,
            Year INTEGER, ArtistId INTEGER NOT NULL REFERENCES Artist (ArtistId));
        CREATE TABLE Track (TrackId INTEGER PRIMARY KEY, Name TEXT NOT NULL,
            Seconds INTEGER, AlbumId INTEGER NOT NULL REFERENCES Album (AlbumId),
            GenreId INTEGER NOT NULL REFERENCES Genre (GenreId));
        """
    )
    conn.executemany("INSERT INTO Genre VALUES (?, ?)", list(enumerate(GENRES, 1)))
    conn.executemany(
        "INSERT INTO Artist VALUES (?, ?, ?)",
        [(i, n, c) for i, (n, c) in enumerate(zip(ARTISTS, COUNTRIES, strict=True), 1)],
    )
    conn.executemany(
        "INSERT INTO Album VALUES (?, ?, ?, ?)",
        [(i, f"Album of {w}", 1990 + i, 1 + i % 3) for i, w in enumerate("ABCDEF", 1)],
    )
    words = ["amber", "birch", "cedar", "delta", "ember", "fjord", "glade", "heron", "iris", "jade"]
    conn.executemany(
        "INSERT INTO Track VALUES (?, ?, ?, ?, ?)",
        [
            (
                i,
                f"{words[i % 10].title()} {words[(i // 10) % 10]} {i}",
                100 + i,
                1 + i % 6,
                1 + i % 2,
            )
            for i in range(1, 41)
        ],
    )
    conn.commit()
    conn.close()


def _rows(path: Path) -> dict[str, dict[Any, dict[str, Any]]]:
    """Every row of every table, by table and primary key."""
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        keys = {"Genre": "GenreId", "Artist": "ArtistId", "Album": "AlbumId", "Track": "TrackId"}
        return {
            table: {r[key]: dict(r) for r in conn.execute(f'SELECT * FROM "{table}"')}
            for table, key in keys.items()
        }
    finally:
        conn.close()


NAME = {"Track": "Name", "Album": "Title", "Artist": "Name", "Genre": "Name"}
FOREIGN = {"albumid": ("Album", "AlbumId"), "artistid": ("Artist", "ArtistId"),
           "genreid": ("Genre", "GenreId")}  # fmt: skip


def _profiles_by_hand(q: QueryRecord, rows: dict[str, dict[Any, dict[str, Any]]]) -> list[str]:
    """The profiles that state what a lookup or path question asks, worked out from its
    template's id (``<answer>-by-<table>-<column>[-via-<foreign key>]...``) and the rows:
    the asked row's, then each row its path reaches, but for the last where the answer is
    that row's name (the profile before it writes the name)."""
    assert q.template_id is not None
    answer, _, path = q.template_id.partition("-by-")
    ((binding, value),) = q.bindings.items()
    table = binding.split(".")[0]
    (key,) = [k for k, r in rows[table].items() if r[NAME[table]] == value]
    chain = [(table, key)]
    for column in path.split("-via-")[1:]:
        target, target_key = FOREIGN[column]
        chain.append((target, rows[chain[-1][0]][chain[-1][1]][target_key]))
    if len(chain) > 1 and answer.endswith(("-name", "-title")):
        chain = chain[:-1]
    return [profile_id(t, str(k)) for t, k in chain]


@pytest.fixture(scope="module")
def store_world(tmp_path_factory: pytest.TempPathFactory) -> tuple[ra.Project, Path]:
    """A world of the store's database (no holes), its SQL questions generated."""
    root = tmp_path_factory.mktemp("gold")
    _store(root / "store.sqlite")
    ra.make_world(
        root / "w", from_db=f"sqlite:///{root / 'store.sqlite'}", holes=0.0, progress="none"
    )
    project = ra.Project(root / "w" / "ragaudit.yaml", root=root / "w", progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    project.generate(unverified=True)
    return project, root / "w" / "database.sqlite"


def _copy(project: ra.Project, to: Path) -> ra.Project:
    """A copy of the world's folder with its runs, its ragaudit.yaml naming the copy's
    own database and files (the world writes absolute paths)."""
    world = Path(project.run_dir).parents[1]
    shutil.copytree(world, to)
    config = to / "ragaudit.yaml"
    config.write_text(config.read_text().replace(str(world.resolve()), str(to.resolve())))
    return ra.Project(config, root=to, progress="none")


def _questions(project: ra.Project) -> list[QueryRecord]:
    path = Path(project.run_dir) / "dataset.jsonl"
    return [QueryRecord.model_validate_json(line) for line in path.read_text().splitlines()]


def test_gold_of_a_lookup_along_foreign_keys_is_the_rows_that_state_it(
    store_world: tuple[ra.Project, Path],
) -> None:
    """Every lookup and path question's gold ids are the profiles of the rows its answer
    rests on (one for a lookup or a hop to a name, two for a hop to an attribute or two
    hops), as worked out by hand; none holds a document that only mentions the value."""
    project, database = store_world
    rows = _rows(database)
    checked: dict[str, int] = {}
    for q in _questions(project):
        if q.template_id is None or "-by-" not in q.template_id:
            continue  # lookups and paths only
        kind = q.template_id.count("-via-")
        want = _profiles_by_hand(q, rows)
        assert q.gold_ids == want, (q.template_id, q.query)
        assert q.gold_kind == "states"
        checked[f"hops {kind}"] = checked.get(f"hops {kind}", 0) + 1
    # Lookups, one hop (a track's genre, an album's artist) and two (a track's artist).
    assert {"hops 0", "hops 1", "hops 2"} <= set(checked), checked


def test_retrieval_verdicts_of_lookups_and_paths_count_the_rows_that_state_them(
    store_world: tuple[ra.Project, Path], tmp_path: Path
) -> None:
    """A system that retrieves the asked row's profile alone is right on every lookup and
    on every hop to a name, and wrong where the path needs a second row's profile (under
    all_gold; right under any_hit): each verdict as a count by hand says."""
    project, database = store_world
    project = _copy(project, tmp_path / "w")
    rows = _rows(database)
    truth = {q.query: q for q in _questions(project)}
    asked = {
        q.query_id: _profiles_by_hand(q, rows)
        for q in truth.values()
        if q.template_id is not None and "-by-" in q.template_id
    }

    def first_row_only(question: str) -> ra.Answer:
        q = truth[question]
        ids = asked.get(q.query_id, q.gold_ids or [])[:1]
        return ra.Answer(q.reference.display, retrieved_ids=ids)

    project.run([ra.system(first_row_only, name="rag")])
    for rule in ("all_gold", "any_hit"):
        project.judge(llm=None, retrieval_rule=rule)
        path = Path(project.run_dir) / "judgements" / "rag.jsonl"
        verdicts = {
            j["query_id"]: j["retrieval_correct"]
            for j in map(json.loads, path.read_text().splitlines())
        }
        by_hand = {
            qid: (len(chain) == 1 if rule == "all_gold" else True) for qid, chain in asked.items()
        }
        assert {qid: verdicts[qid] for qid in asked} == by_hand, rule
        assert any(not v for v in by_hand.values()) or rule == "any_hit"


def test_a_link_that_changed_makes_its_profile_stale_and_leaves_the_gold(
    store_world: tuple[ra.Project, Path], tmp_path: Path
) -> None:
    """Album 1 is given to another artist in the database: refresh says its profile
    states a fact no longer true (the foreign key it recorded), and the changed question
    "artist of Album of A" has no gold document left (none states the new artist), while
    a question of another album keeps its own."""
    project, _ = store_world
    project = _copy(project, tmp_path / "w")
    conn = sqlite3.connect(tmp_path / "w" / "database.sqlite")
    with conn:
        (before,) = conn.execute("SELECT ArtistId FROM Album WHERE AlbumId = 1").fetchone()
        conn.execute("UPDATE Album SET ArtistId = ? WHERE AlbumId = 1", (1 + before % 3,))
    conn.close()
    report = project.refresh()
    stale = {d.document: {(f.table, f.column) for f in d.facts} for d in report.stale}
    assert stale == {"Album/1": {("Album", "ArtistId")}}
    by_template = {}
    for q in _questions(project):
        if q.variant == "short" and q.template_id == "artist-name-by-album-title-via-artistid":
            by_template[q.bindings["Album.Title"]] = q
    assert by_template["Album of A"].gold_ids == []
    assert by_template["Album of B"].gold_ids == ["Album/2"]


def _kinds(project: ra.Project) -> dict[str, str]:
    import yaml

    path = Path(project.run_dir) / "templates" / "sql.yaml"
    return {t["id"]: t["kind"] for t in yaml.safe_load(path.read_text())["templates"]}


def test_gold_of_a_computed_answer_is_every_row_it_is_computed_from(
    store_world: tuple[ra.Project, Path],
) -> None:
    """A count, a total, an average, a minimum or a maximum over the rows that refer to
    the asked one is stated by no single document: its gold ids are the profiles of every
    row it is computed over (each states its link to the asked row and its value), as
    worked out by hand from the rows; a yes or no on a row's value is that row's profile.
    A count of nothing has unknown gold: no document states an absence."""
    project, database = store_world
    rows = _rows(database)
    kinds = _kinds(project)
    computed = {"count", "sum", "average", "minimum", "maximum", "yes_no"}
    checked: dict[str, int] = {}
    for q in _questions(project):
        kind = kinds.get(q.template_id or "")
        if kind not in computed:
            continue
        assert q.template_id is not None
        ((binding, value),) = q.bindings.items()
        table = binding.split(".")[0]
        (key,) = [k for k, r in rows[table].items() if r[NAME[table]] == value]
        if kind == "yes_no":
            want: set[str] | None = {profile_id(table, str(key))}
        else:
            # Ids are lower-cased: "count-track-of-album-title-via-albumid".
            (child,) = [t for t in rows if t.lower() == q.template_id.split("-")[1]]
            via_id = q.template_id.split("-via-")[1].split("-")[0]
            (via,) = [c for c in next(iter(rows[child].values())) if c.lower() == via_id]
            over = [k for k, r in rows[child].items() if r[via] == key]
            want = {profile_id(child, str(k)) for k in over} or None
        got = None if q.gold_ids is None else set(q.gold_ids)
        assert got == want, (q.template_id, q.query)
        assert len(q.gold_ids or []) == len(got or ())  # no document twice
        assert q.gold_kind == ("computed" if want else None)
        checked[kind] = checked.get(kind, 0) + 1
    assert {"count", "sum", "yes_no"} <= set(checked), checked


def test_retrieval_of_computed_answers_is_reported_apart_as_counted_by_hand(
    store_world: tuple[ra.Project, Path], tmp_path: Path
) -> None:
    """A system that retrieves every row a computed answer needs for some questions and
    one of them for others: accuracy_retrieval_computed is, per wording style, the share
    that held them all (all_gold), counted from the records; the report and the terminal
    show it as a column of its own."""
    project, _ = store_world
    project = _copy(project, tmp_path / "w")
    questions = _questions(project)
    truth = {q.query: q for q in questions}
    whole = {q.query_id: i % 2 == 0 for i, q in enumerate(questions)}

    def some_whole(question: str) -> ra.Answer:
        q = truth[question]
        gold = list(q.gold_ids or [])
        return ra.Answer(q.reference.display, retrieved_ids=gold if whole[q.query_id] else gold[:1])

    project.run([ra.system(some_whole, name="rag")])
    project.judge(llm=None)
    summary = project.analyze()
    by_style: dict[str, list[bool]] = {}
    for q in questions:
        if q.gold_kind == "computed" and q.gold_ids:
            by_style.setdefault(q.variant, []).append(whole[q.query_id] or len(q.gold_ids) == 1)
    assert by_style and any(not all(v) for v in by_style.values())
    for style, verdicts in by_style.items():
        figure = summary.systems["rag"].variants[style].accuracy_retrieval_computed
        assert figure is not None and figure.n == len(verdicts)
        assert figure.value == pytest.approx(sum(verdicts) / len(verdicts))
    page = Path(project.report()).read_text()
    assert "retrieval accuracy, computed answers" in page
    # And in every export of the figures (they are summary.to_pandas()).
    rows = summary.to_pandas()
    assert (rows["metric"] == "accuracy_retrieval_computed").sum() == len(by_style)
