"""ragaudit world: a deterministic fictitious company whose documents state only true facts,
leave some out, and point back at their rows."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from ragaudit.config import load_config
from ragaudit.errors import UserError
from ragaudit.world.build import build_world
from ragaudit.world.company import make_company
from ragaudit.world.documents import NEVER_STATED, format_date
from tests.support.cli import ragaudit


def _digest(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.name != "ragaudit.yaml"  # holds the folder's absolute path
    }


def _parse_date(text: str) -> str:
    for fmt in ("%B %d, %Y", "%d %B %Y", "%Y-%m-%d"):
        try:
            return dt.datetime.strptime(text, fmt).date().isoformat()
        except ValueError:
            pass
    day, _, rest = text.removeprefix("the ").partition(" of ")
    return dt.datetime.strptime(f"{day[:-2]} {rest}", "%d %B, %Y").date().isoformat()


def test_the_same_seed_gives_the_same_world_and_another_seed_another(tmp_path: Path) -> None:
    build_world(tmp_path / "a", size=120, seed=7)
    build_world(tmp_path / "b", size=120, seed=7)
    build_world(tmp_path / "c", size=120, seed=8)
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b")
    differing = _digest(tmp_path / "a").items() ^ _digest(tmp_path / "c").items()
    assert {name for name, _ in differing} >= {"company.sqlite", "documents.jsonl"}


@pytest.mark.parametrize("size", [60, 2000])
def test_every_stated_fact_agrees_with_the_database(tmp_path: Path, size: int) -> None:
    summary = build_world(tmp_path / "w", size=size, seed=3)
    conn = sqlite3.connect(summary.database)
    texts = {
        row["id"]: row["text"]
        for row in map(json.loads, (tmp_path / "w" / "documents.jsonl").read_text().splitlines())
    }
    checked = 0
    for line in (tmp_path / "w" / "document_facts.jsonl").read_text().splitlines():
        entry = json.loads(line)
        text = texts[entry["id"]]
        for fact in entry["facts"]:
            assert fact["stated"] in text, (entry["id"], fact)
            (value,) = conn.execute(
                f'SELECT "{fact["column"]}" FROM "{fact["table"]}" WHERE Name = ?',
                (fact["row_key"],),
            ).fetchone()
            stated = fact["stated"]
            if fact["column"] in ("StartDate", "EndDate"):
                stated = _parse_date(stated)
            assert stated == value, (entry["id"], fact, value)
            checked += 1
    assert checked == summary.facts and checked > 2 * summary.documents


def test_the_knowledge_base_has_gaps_by_design(tmp_path: Path) -> None:
    summary = build_world(tmp_path / "w", size=2000, seed=1)
    facts = [
        f
        for line in (tmp_path / "w" / "document_facts.jsonl").read_text().splitlines()
        for f in json.loads(line)["facts"]
    ]
    stated = {(f["table"], f["column"]) for f in facts}
    for table, columns in NEVER_STATED.items():
        assert not stated & {(table, c) for c in columns}
    per_column = {c: sum(f["column"] == c for f in facts) for c in ("Location", "EndDate")}
    projects = summary.rows["Project"]
    # Every project has a report, but some reports leave their location or end date out.
    assert summary.documents == projects
    assert 0.7 * projects < per_column["Location"] < projects
    assert 0 < per_column["EndDate"] < 0.8 * projects


def test_the_company_is_consistent(tmp_path: Path) -> None:
    company = make_company(3000, seed=2)
    assert abs(company.rows - 3000) <= 5
    employees = {e[0]: e for e in company.employee}
    assert len(employees) == len(company.employee)  # names are distinct
    for name, _, _, supervisor in company.employee:
        seen = {name}
        while supervisor is not None:  # a tree: every chain ends at the chief executive
            assert supervisor in employees and supervisor not in seen
            seen.add(supervisor)
            supervisor = employees[supervisor][3]
    clients = {c[0] for c in company.client}
    for project in company.project:
        assert project[4] in clients and project[5] in employees and project[6] in employees
        assert project[3] is None or project[3] > project[2]
    assert len({p[0] for p in company.project}) == len(company.project)


def test_date_styles() -> None:
    assert [format_date("2023-03-01", s) for s in range(4)] == [
        "March 1, 2023",
        "1 March 2023",
        "2023-03-01",
        "the 1st of March, 2023",
    ]
    assert all(_parse_date(format_date("2024-02-29", s)) == "2024-02-29" for s in range(4))


def test_duckdb_worlds_hold_the_same_rows(tmp_path: Path) -> None:
    import duckdb

    lite = build_world(tmp_path / "s", size=200, seed=5)
    duck = build_world(tmp_path / "d", size=200, seed=5, engine="duckdb")
    conn = duckdb.connect(str(duck.database), read_only=True)
    rows = conn.execute('SELECT * FROM "Project" ORDER BY Name').fetchall()
    expected = (
        sqlite3.connect(lite.database).execute('SELECT * FROM "Project" ORDER BY Name').fetchall()
    )
    assert [tuple(str(v) if v is not None else None for v in r) for r in rows] == expected


def test_refuses_to_overwrite_and_rejects_tiny_sizes(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "mine.txt").write_text("keep me")
    with pytest.raises(UserError, match="exists and is not empty"):
        build_world(tmp_path / "w")
    assert (tmp_path / "w" / "mine.txt").read_text() == "keep me"
    with pytest.raises(UserError, match="too small"):
        build_world(tmp_path / "x", size=5)


def test_cli_world_then_generate_gives_gold_ids_of_real_documents(tmp_path: Path) -> None:
    made = ragaudit("world", "w", "--size", "80", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "Project rows" in made.stdout
    folder = tmp_path / "w"
    config = load_config(folder / "ragaudit.yaml")
    assert config.corpus.path == folder.resolve() / "documents.jsonl"
    for step in (
        ("templates", "sql"),
        ("templates", "text", "--no-verify"),
        ("generate", "--unverified"),
    ):
        done = ragaudit(*step, cwd=folder)
        assert done.returncode == 0, done.stderr
    docs = {
        json.loads(line)["id"] for line in (folder / "documents.jsonl").read_text().splitlines()
    }
    queries = [
        json.loads(line) for line in (folder / "runs/world/dataset.jsonl").read_text().splitlines()
    ]
    with_gold = [q for q in queries if q["gold_ids"]]
    assert with_gold and all(set(q["gold_ids"]) <= docs for q in with_gold)
    # Gold ids are the reports that state each answer; a fact no report states is a hole.
    # An answer computed over rows (a count, a total, a yes or no) is a fact of no
    # document: its gold is the documents that state what it is computed from where the
    # facts say so (tests/test_gold_per_kind.py counts them by hand), else unknown, never
    # a guess.
    kinds = {
        t["id"]: t["kind"]
        for t in yaml.safe_load((folder / "runs/world/templates/sql.yaml").read_text())["templates"]
    }
    one_fact = [q for q in queries if kinds[q["template_id"]] in ("lookup", "path")]
    assert one_fact and {q["gold_kind"] for q in one_fact} == {"states"}
    computed = {"count", "sum", "average", "minimum", "maximum", "yes_no", "date_range"}
    computed_gold = {q["gold_kind"] for q in queries if kinds[q["template_id"]] in computed}
    assert computed_gold and computed_gold <= {"computed", None}
    holes = [q for q in queries if q["gold_ids"] == []]
    assert holes and {q["template_id"] for q in holes} >= {"location-by-client-name"}
    assert "no document states the answer (holes)" in done.stdout
    again = ragaudit("world", "w", cwd=tmp_path)
    assert again.returncode == 2 and "not empty" in again.stderr
