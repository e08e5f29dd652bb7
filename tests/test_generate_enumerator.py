"""The schema enumerator on the paper's databases, and the built-in verbalizer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragaudit.db import Database, introspect
from ragaudit.generate import SqlTemplate, check_template
from ragaudit.generate.sql.enumeration import enumerate_templates
from ragaudit.generate.text.templates import placeholder_problem
from ragaudit.generate.text.verbalize import verbalize, words


def _answers(path: Path) -> tuple[list[SqlTemplate], dict[str, set[str]], object]:
    db = Database(f"sqlite:///{path}")
    schema = introspect(db)
    templates = enumerate_templates(db, schema).templates
    covered: dict[str, set[str]] = {}
    for t in templates:
        shape = check_template(t.sql, schema)  # every template validates
        if t.kind == "lookup" and len(shape.placeholders) == 1:
            covered.setdefault(shape.placeholders[0].table, set()).add(shape.answer_column)
    return templates, covered, schema


def test_aurp_every_descriptive_attribute(grammar_reference: Path) -> None:
    _, covered, _ = _answers(grammar_reference / "aurp" / "aurp.sqlite")
    assert covered == {
        "Client": {"Industry", "Location"},
        "Employee": {"JobTitle", "Department", "SupervisorOrManager"},
        "Project": {
            "Location",
            "StartDate",
            "EndDate",
            "Client",
            "ProjectDirector",
            "ProjectManager",
        },
    }


def test_spider_attributes_and_the_employment_join(grammar_reference: Path) -> None:
    templates, covered, schema = _answers(
        grammar_reference / "spider_open" / "company_employee.sqlite"
    )
    assert covered["company"] == {
        "Headquarters",
        "Industry",
        "Sales_in_Billion",
        "Profits_in_Billion",
        "Assets_in_Billion",
        "Market_Value_in_Billion",
    }
    assert covered["people"] == {"Age", "Nationality", "Graduation_College"}
    joins = [t for t in templates if len(t.placeholder_list) == 2]
    assert len(joins) == 1
    shape = check_template(joins[0].sql, schema)
    assert shape.answer_column == "Year_working"
    assert {p.key for p in shape.placeholders} == {"people.Name", "company.Name"}


@pytest.mark.parametrize(
    ("identifier", "expected"),
    [
        ("SupervisorOrManager", "supervisor or manager"),
        ("graduation_college", "graduation college"),
        ("HTTPCode", "http code"),
        ("Year_working", "year working"),
        ("name", "name"),
    ],
)
def test_identifiers_become_words(identifier: str, expected: str) -> None:
    assert words(identifier) == expected


def test_verbalizer_styles_carry_the_placeholders(grammar_reference: Path) -> None:
    templates, _, schema = _answers(grammar_reference / "spider_open" / "company_employee.sqlite")
    for template in templates:
        short = verbalize(template, schema, "short", 3, seed=0)
        long = verbalize(template, schema, "long", 3, seed=0)
        assert len(set(short)) == len(set(long)) == 3
        for text in short + long:
            assert placeholder_problem(text, template.placeholder_list) is None
        assert max(len(t.split()) for t in short) <= 12
        assert min(len(t.split()) for t in long) >= 30
        assert verbalize(template, schema, "short", 3, seed=0) == short  # seeded
    with pytest.raises(Exception, match="style 'formal' has no built-in wording"):
        verbalize(templates[0], schema, "formal")


def test_the_verbalizer_words_one_row_of_a_plural_table_naturally(
    grammar_reference: Path,
) -> None:
    """Issue 37 item 27: a table named ``people`` gave "every people", "the people whose
    name is" and "'[people.Name]' age?"; each of its wordings must now pass the naturalness
    check that runs before verification, with "an age", not "a age"."""
    from ragaudit.generate.text.naturalness import naturalness_problem

    for folder, db_file in (
        ("spider_open", "company_employee.sqlite"),
        ("aurp", "aurp.sqlite"),
    ):
        templates, _, schema = _answers(grammar_reference / folder / db_file)
        tables = [t.name for t in schema.tables]  # type: ignore[attr-defined]
        nouns = "|".join(
            re.escape(words(c.name))
            for t in schema.tables  # type: ignore[attr-defined]
            for c in t.columns
        )
        for template in templates:
            for style in ("short", "long"):
                for text in verbalize(template, schema, style, 10, seed=0):
                    assert naturalness_problem(text, tables) is None, text
                    assert " a age" not in text and " a industry" not in text, text
                    # No value followed by a quote and a noun: "'[people.Name]' age" reads
                    # as a possessive that fits only names ending in s.
                    assert not re.search(rf"\]' (?:{nouns})\b", text, re.IGNORECASE), text


def test_an_attribute_named_for_its_table_is_not_named_twice(tmp_path: Path) -> None:
    """A new user's shop: orders.order_date asked through a customer came out as "which
    order order date"; the column's name already says whose it is."""
    import sqlite3

    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(
            """
            CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE orders (order_id INTEGER PRIMARY KEY, order_date TEXT, status TEXT,
                                 customer_id INTEGER REFERENCES customers(customer_id));
            INSERT INTO customers VALUES (1, 'Ada'), (2, 'Bo');
            INSERT INTO orders VALUES (10, '2024-03-09', 'open', 1), (11, '2024-04-01', 'paid', 2);
            """
        )
    schema = introspect(Database(f"sqlite:///{path}"))
    across = SqlTemplate(
        id="date-by-customer",
        sql="SELECT o.order_date FROM orders o JOIN customers c ON o.customer_id = c.customer_id "
        "WHERE c.name = '[customers.name]'",
    )
    status = SqlTemplate(
        id="status-by-customer",
        sql="SELECT o.status FROM orders o JOIN customers c ON o.customer_id = c.customer_id "
        "WHERE c.name = '[customers.name]'",
    )
    for style in ("short", "long"):
        dated = verbalize(across, schema, style, 10, seed=0)
        assert all("order order" not in t for t in dated), dated
        assert any("order date" in t for t in dated), dated
        # An attribute that does not name its table still says whose it is.
        assert any("order status" in t for t in verbalize(status, schema, style, 10, seed=0))
