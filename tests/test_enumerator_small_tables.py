"""The schema enumerator on small tables (issue 37 item 25): a key may repeat a value, and a
template may have an ambiguous group, when that is one exception among at least five, not
only when it is under 10%; the groups a kept template will drop are named."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ragaudit.db import Database, introspect
from ragaudit.generate.sql.enumeration import enumerate_templates, few_exceptions
from tests.support.cli import ragaudit

DDL = ["CREATE TABLE people (person_id INTEGER PRIMARY KEY, name TEXT, dept TEXT, city TEXT)"]
# Seven people, one name twice: two people called Ann Lee, in two departments, one city.
SEVEN = [
    (1, "Ann Lee", "Sales", "Oslo"),
    (2, "Bo Chen", "Sales", "Oslo"),
    (3, "Cy Diaz", "Legal", "Bergen"),
    (4, "Di Eze", "Legal", "Bergen"),
    (5, "Ed Fox", "IT", "Tromso"),
    (6, "Ann Lee", "IT", "Oslo"),
    (7, "Fay Gil", "IT", "Tromso"),
]


def test_a_seven_row_table_with_one_repeated_name_gives_its_templates(
    make_db, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    url = make_db(DDL, {"people": SEVEN})
    db = Database(url)
    found = enumerate_templates(db, introspect(db))
    assert found.notes == {}
    by_id = {t.id: t for t in found.templates}
    assert sorted(by_id) == ["city-by-people-name", "dept-by-people-name"]
    # The one group with two answers is named: it is dropped at generate.
    assert by_id["dept-by-people-name"].note == (
        "1 of 6 groups has several answers and is dropped at generate: name='Ann Lee'"
    )
    assert by_id["city-by-people-name"].note is None  # both Ann Lees live in Oslo

    (tmp_path / "ragaudit.yaml").write_text(f"database:\n  url: {url}\n")
    result = ragaudit("templates", "sql", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    written = yaml.safe_load((tmp_path / "runs/default/templates/sql.yaml").read_text())
    counts = {t["id"]: (t["groups"], t["multi_answer_groups"]) for t in written["templates"]}
    assert counts == {"dept-by-people-name": (5, 1), "city-by-people-name": (6, 0)}
    notes = {t["id"]: t.get("note") for t in written["templates"]}
    assert notes["dept-by-people-name"] == by_id["dept-by-people-name"].note  # in the file
    assert f"note (dept-by-people-name): {notes['dept-by-people-name']}" in result.stderr


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        # Two names repeated in seven rows: a column that names fewer than it seems.
        (
            [*SEVEN[:5], (6, "Ann Lee", "IT", "Oslo"), (7, "Bo Chen", "IT", "Tromso")],
            "people: no key names its rows: name repeats 2 of its 7 values (at most 10%, "
            "or one of at least 5)",
        ),
        # Four rows: one repeat is a quarter of them, not an exception.
        (
            [*SEVEN[:3], (4, "Ann Lee", "IT", "Oslo")],
            "people: no key names its rows: name repeats 1 of its 4 values",
        ),
    ],
)
def test_more_than_one_exception_in_a_small_table_is_still_refused(
    make_db, tmp_path: Path, rows: list[tuple], message: str
) -> None:  # type: ignore[no-untyped-def]
    url = make_db(DDL, {"people": rows})
    (tmp_path / "ragaudit.yaml").write_text(f"database:\n  url: {url}\n")
    result = ragaudit("templates", "sql", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert message in result.stderr


@pytest.mark.parametrize(
    ("exceptions", "total", "few"),
    [
        (0, 1, True),
        (1, 4, False),  # one in four: a quarter
        (1, 5, True),  # one exception among five
        (1, 7, True),
        (2, 7, False),
        (2, 19, False),
        (2, 20, True),  # 10%
        (10, 100, True),
        (11, 100, False),
    ],
)
def test_few_exceptions_is_a_share_or_a_single_one(exceptions: int, total: int, few: bool) -> None:
    assert few_exceptions(exceptions, total) is few
