"""The single-answer rule applies per group, not per table: a name that occurs twice with
two different answers makes that one group ambiguous, and only it is dropped. A database
with nothing to ask says why, per table, and exits non-zero instead of an empty success."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragaudit.db import Database, introspect
from ragaudit.generate.sql.enumeration import enumerate_templates
from tests.support.cli import ragaudit

DDL = ["CREATE TABLE person (person_id INTEGER PRIMARY KEY, name TEXT, dept TEXT, city TEXT)"]


def _people() -> list[tuple]:
    """1,010 rows, 1,000 names: the last 10 names occur twice with another department and
    city; every name has one nationality-like attribute of its own."""
    rows = [(i, f"Person {i:04d}", f"Dept {i % 7}", f"City {i % 13}") for i in range(1000)]
    rows += [(1000 + i, f"Person {990 + i:04d}", "Dept X", "City X") for i in range(10)]
    return rows


def _config(tmp_path: Path, url: str) -> None:
    (tmp_path / "ragaudit.yaml").write_text(f"database:\n  url: {url}\n")


def test_a_key_that_repeats_in_1_percent_of_rows_still_gives_templates(make_db, tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = make_db(DDL, {"person": _people()})
    db = Database(url)
    found = enumerate_templates(db, introspect(db))
    assert sorted(t.id for t in found.templates) == [
        "city-by-person-name",
        "dept-by-person-name",
    ]
    _config(tmp_path, url)
    result = ragaudit("templates", "sql", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    import yaml

    written = yaml.safe_load((tmp_path / "runs/default/templates/sql.yaml").read_text())
    counts = {t["id"]: (t["groups"], t["multi_answer_groups"]) for t in written["templates"]}
    assert counts == {"dept-by-person-name": (990, 10), "city-by-person-name": (990, 10)}
    (tmp_path / "runs/default/templates/text.yaml").write_text(
        "schema_version: 1\ntemplates:\n"
        "  dept-by-person-name:\n    short:\n    - text: \"Department of '[person.name]'\"\n"
        "      verified: true\n"
        "  city-by-person-name:\n    short:\n    - text: \"City of '[person.name]'\"\n"
        "      verified: true\n"
    )
    generated = ragaudit("generate", cwd=tmp_path)
    assert generated.returncode == 0, generated.stderr
    import json

    stats = json.loads((tmp_path / "runs/default/dataset.stats.json").read_text())
    per_template = {t["template_id"]: t for t in stats["templates"]}
    for tid in ("dept-by-person-name", "city-by-person-name"):
        assert per_template[tid]["kept_groups"] == 990
        assert per_template[tid]["multi_answer_groups"] == 10


def test_a_key_that_determines_nothing_is_explained(make_db, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # A name distinct enough to be a key (100 of 111 rows: 90%), but 11 of its 100 groups
    # have two answers: 89% single, under the 90% a template needs.
    rows = [(i, f"Person {i:03d}", f"Dept {i % 5}", f"City {i % 4}") for i in range(100)] + [
        (100 + i, f"Person {89 + i:03d}", "Dept X", "City X") for i in range(11)
    ]
    url = make_db(DDL, {"person": rows})
    _config(tmp_path, url)
    result = ragaudit("templates", "sql", cwd=tmp_path)
    assert result.returncode == 2
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1, message
    assert message.startswith(
        "error: no SQL template: person: its name determines no answer in at least 90% of "
        "its groups (best: "
    )
    assert "in at least 90% of its groups (best: " in message and "89%)" in message
    assert not (tmp_path / "runs/default/templates/sql.yaml").exists()


@pytest.mark.parametrize(
    ("ddl", "rows", "expected"),
    [
        ([], {}, "the database has no tables"),
        (DDL, {}, "none of the database's 1 tables has rows"),
        (
            ["CREATE TABLE reading (reading_id INTEGER PRIMARY KEY, value INTEGER)"],
            {"reading": [(1, 10), (2, 20)]},
            "reading: no text column named like name, title, label, code or email",
        ),
    ],
)
def test_nothing_to_ask_is_a_one_line_error(make_db, tmp_path, ddl, rows, expected) -> None:  # type: ignore[no-untyped-def]
    url = make_db(ddl, rows)
    _config(tmp_path, url)
    result = ragaudit("templates", "sql", cwd=tmp_path)
    assert result.returncode == 2
    assert expected in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
