"""Set-based instantiation on real SQLite, DuckDB and PostgreSQL databases holding the
awkward values: quotes, unicode, NULL, numbers stored as text, dates, composite keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragaudit.config import GenerateOptions
from ragaudit.db import Database, introspect
from ragaudit.errors import ConfigError
from ragaudit.generate import (
    DatasetStats,
    SqlTemplate,
    count_combinations,
    generate,
    iter_groups,
    plan,
)
from ragaudit.generate.sql.enumeration import enumerate_templates


def _groups(url: str, sql: str) -> dict[tuple, list]:
    db = Database(url)
    schema = introspect(db)
    plan_ = plan(sql, schema, dialect=db.sqlglot_dialect)
    return {tuple(g.bindings.values()): g.answers for g in iter_groups(db, plan_)}


def _dataset(url: str, sqls: dict[str, str], **options) -> tuple[list, DatasetStats]:  # type: ignore[no-untyped-def]
    db = Database(url)
    schema = introspect(db)
    templates = [SqlTemplate(id=tid, sql=sql) for tid, sql in sqls.items()]
    texts = {}
    for t in templates:
        tokens = " ".join(f"'[{p.key}]'" for p in t.placeholder_list)
        texts[t.id] = {"short": [f"{t.id} {tokens}"], "long": [f"Tell me {t.id} {tokens}"]}
    stats = DatasetStats()
    records = list(generate(db, schema, templates, texts, GenerateOptions(**options), stats=stats))
    return records, stats


def test_quotes_unicode_and_numbers_as_text_are_exact(people_db_url: str) -> None:
    by_name = _groups(people_db_url, "SELECT role FROM person WHERE name = '[person.name]'")
    assert by_name == {
        ("O'Brien",): ["surveyor"],
        ('Zoë "Z" Ng',): ["modeller"],
        ("Plain Name",): ["engineer"],
    }  # the NULL name is not a question anyone can ask
    by_code = _groups(people_db_url, "SELECT role FROM person WHERE code = '[person.code]'")
    assert by_code[("0042",)] == ["engineer"] and by_code[("42",)] == ["modeller"]


def test_null_answers_are_explicit(people_db_url: str) -> None:
    sql = {"name-by-code": "SELECT name FROM person WHERE code = '[person.code]'"}
    records, stats = _dataset(people_db_url, sql)
    assert not [r for r in records if r.bindings == {"person.code": "13"}]  # dropped
    assert stats.overview().null_answer_groups == 1  # and counted
    records, _ = _dataset(people_db_url, sql, include_null=True)
    nameless = [r for r in records if r.bindings == {"person.code": "13"}]
    assert nameless and all(r.reference.is_null and r.label == "null" for r in nameless)
    assert nameless[0].query == "name-by-code '13'"
    assert nameless[0].reference.display == "(no value is recorded)"


def test_dates_become_iso_text(people_db_url: str) -> None:
    groups = _groups(people_db_url, "SELECT happened FROM event WHERE title = '[event.title]'")
    assert groups == {("Kick-off",): ["2023-03-01"], ("Handover",): ["2024-12-20"]}


def test_multi_answer_groups_are_dropped_or_kept_as_sets(people_db_url: str) -> None:
    sql = {
        "colour": "SELECT b.colour FROM badge AS b JOIN person AS p ON b.person_id = p.id "
        "WHERE p.name = '[person.name]'"
    }
    dropped, stats = _dataset(people_db_url, sql)
    assert {r.bindings["person.name"] for r in dropped} == {"O'Brien"}
    assert stats.templates[0].multi_answer_groups == 1
    kept, _ = _dataset(people_db_url, sql, allow_multi=True)
    zoe = next(r for r in kept if r.bindings["person.name"] == 'Zoë "Z" Ng')
    assert zoe.reference.values == ["blue", "green"] and zoe.reference.is_set


def test_composite_key_join_and_unanswerable_combinations(people_db_url: str) -> None:
    sql = {
        "hours": "SELECT a.hours FROM assignment AS a JOIN person AS p ON a.person_id = p.id "
        "WHERE p.name = '[person.name]' AND a.project_code = '[assignment.project_code]'"
    }
    answered, stats = _dataset(people_db_url, sql)
    assert stats.templates[0].combinations == 3 * 2  # 3 named people x 2 project codes
    assert {
        (r.bindings["person.name"], r.bindings["assignment.project_code"], r.reference.values[0])
        for r in answered
    } == {("O'Brien", "P-1", 10), ("O'Brien", "P-2", 5), ('Zoë "Z" Ng', "P-1", 7)}
    everything, stats = _dataset(people_db_url, sql, include_unanswerable=True)
    blanks = [r for r in everything if r.label == "unanswerable"]
    assert stats.templates[0].unanswerable == 3
    assert {r.reference.values == [] for r in blanks} == {True}
    assert len({r.group_id for r in everything}) == 6


def test_placeholders_outside_equality_use_a_cross_join(people_db_url: str) -> None:
    groups = _groups(people_db_url, "SELECT COUNT(*) FROM person WHERE code > '[person.code]'")
    # '0042' < '007' < '13' < '42' as text; nothing is greater than '42', so no group.
    assert groups == {("0042",): [3], ("007",): [2], ("13",): [1]}


def test_sampling_is_bounded_and_seeded(people_db_url: str) -> None:
    sql = {"role": "SELECT role FROM person WHERE code = '[person.code]'"}
    first, _ = _dataset(people_db_url, sql, max_groups_per_template=2, seed=1)
    again, _ = _dataset(people_db_url, sql, max_groups_per_template=2, seed=1)
    assert len({r.group_id for r in first}) == 2
    assert [r.query_id for r in first] == [r.query_id for r in again]


def test_enumerator_handles_no_primary_key_empty_and_composite_tables(people_db_url: str) -> None:
    db = Database(people_db_url)
    schema = introspect(db)
    templates = enumerate_templates(db, schema).templates
    ids = {t.id for t in templates}
    assert "shade-by-loose-label" in ids  # a table without a primary key
    assert "happened-by-event-title" in ids and "place-by-event-title" in ids
    assert not any("empty" in t.sql.lower() for t in templates)  # no rows, no questions
    assert not any(
        p.column.lower() in {"id", "badge_id", "person_id"}
        for t in templates
        for p in t.placeholder_list
    )
    for t in templates:
        plan_ = plan(t.sql, schema, dialect=db.sqlglot_dialect)
        assert next(iter_groups(db, plan_), None) is not None, t.id
        assert count_combinations(db, plan_) >= 1


def test_group_ids_do_not_depend_on_the_engine(people_db_url: str, tmp_path) -> None:
    from tests.conftest import sqlite_people

    sql = {"role": "SELECT role FROM person WHERE name = '[person.name]'"}
    here, _ = _dataset(people_db_url, sql)
    there, _ = _dataset(sqlite_people(tmp_path / "ref.sqlite"), sql)
    assert sorted(r.query_id for r in here) == sorted(r.query_id for r in there)


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT role, code FROM person WHERE name = '[person.name]'", "exactly one column"),
        ("SELECT role FROM person", "no placeholder"),
        ("SELECT name FROM person WHERE name = '[person.name]'", "give the answer away"),
        ("SELECT role FROM person WHERE name = '[person.name]' LIMIT 1", "LIMIT"),
        ("SELECT role FROM person WHERE name = '[person.nickname]'", "unknown column"),
    ],
)
def test_invalid_templates_are_rejected_with_a_reason(sql: str, reason: str, tmp_path) -> None:
    from ragaudit.errors import SQLValidationError
    from tests.conftest import sqlite_people

    db = Database(sqlite_people(tmp_path / "p.sqlite"))
    with pytest.raises(SQLValidationError, match=reason):
        plan(sql, introspect(db), dialect="sqlite")


def test_gold_ids_from_a_value_or_a_looked_up_column(people_db_url: str) -> None:
    from ragaudit.config import GoldRule

    sql = {"role": "SELECT role FROM person WHERE name = '[person.name]'"}
    rules = [
        GoldRule(placeholder="person.name", id_column="id", format="doc-{value}"),
        GoldRule(placeholder="person.name"),
    ]
    records, _ = _dataset(people_db_url, sql, gold_ids=rules)
    obrien = next(r for r in records if r.bindings["person.name"] == "O'Brien")
    assert obrien.gold_ids == ["doc-1", "O'Brien"]


def test_gold_ids_from_facts_name_the_documents_that_state_the_answer(
    people_db_url: str, tmp_path: Path
) -> None:
    """With the facts each document states, gold ids list the documents stating the
    answer's own cell and, for a question along a foreign key, the key's cell (whose
    badge it is), [] when none does (a hole), and nothing when the answer is no single
    cell; a question for a row's key through a foreign key asks for the foreign key's
    cell alone."""
    facts = tmp_path / "facts.jsonl"
    facts.write_text(
        json.dumps(
            {"id": "d-people", "facts": [{"table": "person", "row_key": 1, "column": "role"}]}
        )
        + "\n"
        + json.dumps(
            {
                "id": "d-badges",
                "facts": [
                    {"table": "badge", "row_key": "10", "column": "colour"},
                    {"table": "badge", "row_key": "12", "column": "colour"},
                    {"table": "badge", "row_key": "10", "column": "person_id"},
                    {"table": "person", "row_key": "1", "column": "role"},
                ],
            }
        )
        + "\n"
    )
    sqls = {
        "role": "SELECT role FROM person WHERE name = '[person.name]'",
        "colours": "SELECT b.colour FROM badge AS b JOIN person AS p ON b.person_id = p.id "
        "WHERE p.name = '[person.name]'",
        "owner": "SELECT p.id FROM badge AS b JOIN person AS p ON b.person_id = p.id "
        "WHERE b.colour = '[badge.colour]'",
        "count": "SELECT COUNT(*) FROM badge AS b JOIN person AS p ON b.person_id = p.id "
        "WHERE p.name = '[person.name]'",
    }
    records, stats = _dataset(people_db_url, sqls, gold_facts=facts, allow_multi=True)
    gold = {
        (r.template_id, *r.bindings.values()): (r.gold_ids, r.gold_kind)
        for r in records
        if r.variant == "short"
    }
    assert gold[("role", "O'Brien")] == (["d-people", "d-badges"], "states")
    assert gold[("role", "Plain Name")] == ([], "states")  # no document states it
    assert gold[("colours", "O'Brien")] == (["d-badges"], "states")
    # Badge 12's colour is stated, but no document says whose badge it is: a hole.
    assert gold[("colours", 'Zoë "Z" Ng')] == ([], "states")
    assert gold[("owner", "red")] == (["d-badges"], "states")  # badge 10's person_id
    assert gold[("owner", "blue")] == ([], "states")
    assert gold[("count", "O'Brien")] == (None, None)  # a count is no stated cell
    counted = stats.overview().gold_groups
    assert counted == {"states": 3, "holes": 5, "unknown": 2}
    # Once a document says whose badge 12 is, it states one of Zoë's two badges whole.
    lines = facts.read_text().splitlines()
    badges = json.loads(lines[1])
    badges["facts"].append({"table": "badge", "row_key": "12", "column": "person_id"})
    facts.write_text("\n".join([lines[0], json.dumps(badges)]) + "\n")
    records, _ = _dataset(people_db_url, sqls, gold_facts=facts, allow_multi=True)
    zoe = next(
        r for r in records if r.template_id == "colours" and r.bindings["person.name"] != "O'Brien"
    )
    assert (zoe.gold_ids, zoe.gold_kind) == (["d-badges"], "states")


def test_a_fact_of_a_column_the_database_lacks_is_an_error(
    people_db_url: str, tmp_path: Path
) -> None:
    facts = tmp_path / "facts.jsonl"
    facts.write_text(
        json.dumps({"id": "d", "facts": [{"table": "person", "row_key": 1, "column": "age"}]})
        + "\n"
    )
    sql = {"role": "SELECT role FROM person WHERE name = '[person.name]'"}
    with pytest.raises(ConfigError, match=r"facts.jsonl:1: the database has no column person.age"):
        _dataset(people_db_url, sql, gold_facts=facts)
    with pytest.raises(ConfigError, match="no such file"):
        _dataset(people_db_url, sql, gold_facts=tmp_path / "none.jsonl")
