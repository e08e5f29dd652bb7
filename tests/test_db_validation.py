"""SQL validation: exactly one read-only SELECT over known tables and columns."""

from __future__ import annotations

import pytest

from ragaudit.db import ColumnInfo, SchemaInfo, TableInfo, find_placeholders, validate_select
from ragaudit.errors import SQLValidationError

SCHEMA = SchemaInfo(
    dialect="sqlite",
    tables=[
        TableInfo("Client", [ColumnInfo("Name", "TEXT"), ColumnInfo("Industry", "TEXT")]),
        TableInfo(
            "Project",
            [ColumnInfo("Name", "TEXT"), ColumnInfo("Client", "TEXT"), ColumnInfo("Budget", "INT")],
        ),
        TableInfo("t", [ColumnInfo("a", "INT")]),
    ],
)


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("DELETE FROM t", "not DELETE"),
        ("SELECT 1; DROP TABLE t", "exactly one statement"),
        ("ATTACH 'x' AS y", "not ATTACH"),
        ("PRAGMA writable_schema=1", "not PRAGMA"),
        ("SELECT Name FROM Nowhere", "unknown table 'Nowhere'"),
        ("SELECT Colour FROM Client", "unknown column 'colour'"),
        ("SELECT * FROM Client", "SELECT * is not allowed"),
        ("SELECT c.* FROM Client c", "SELECT * is not allowed"),
        ("UPDATE t SET a = 1", "not UPDATE"),
        ("INSERT INTO t VALUES (1)", "not INSERT"),
        ("CREATE TABLE u (x INT)", "not CREATE"),
        ("COPY t TO '/tmp/x'", "not COPY"),
        ("VACUUM", "not VACUUM"),
        ("WITH x AS (DELETE FROM t RETURNING a) SELECT a FROM x", "contains DELETE"),
        ("SELECT a INTO u FROM t", "SELECT INTO"),
        ("SELECT a FROM read_csv('/etc/passwd')", "not allowed"),
        ("SELECT load_extension('evil')", "load_extension() is not allowed"),
        ("SELECT Industry FROM Client WHERE Name = '[Client.Nickname]'", "unknown column"),
        ("", "empty SQL"),
        ("SELECT FROM WHERE", "not valid SQL"),
        # An LLM's reply with a name quoted unescaped: a tokenizer error, not a traceback.
        ("SELECT Industry FROM Client WHERE Name = 'Conall O'Brien'", "not valid SQL"),
    ],
)
def test_rejects_with_a_one_line_reason(sql: str, reason: str) -> None:
    with pytest.raises(SQLValidationError) as info:
        validate_select(sql, SCHEMA)
    message = str(info.value)
    assert reason.lower() in message.lower()
    assert "\n" not in message


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT Industry FROM Client WHERE Name = '[Client.Name]'",
        "SELECT industry FROM client WHERE name = 'x';",
        "SELECT p.Budget FROM Project AS p JOIN Client AS c ON p.Client = c.Name "
        "WHERE c.Industry = '[Client.Industry]' AND p.Name = '[Project.Name]'",
        "WITH big AS (SELECT Name FROM Project WHERE Budget > 10) SELECT Name FROM big",
        "SELECT COUNT(*) FROM Project",
        "SELECT Name FROM Client UNION SELECT Name FROM Project",
    ],
)
def test_accepts_read_only_selects_over_known_columns(sql: str) -> None:
    validated = validate_select(sql, SCHEMA)
    assert validated.tables


def test_reports_tables_and_placeholders_it_found() -> None:
    sql = (
        "SELECT p.Budget FROM Project p JOIN Client c ON p.Client = c.Name "
        "WHERE c.Name = '[Client.Name]' AND p.Name = '[Project.Name]'"
    )
    validated = validate_select(sql, SCHEMA)
    assert set(validated.tables) == {"Project", "Client"}
    assert [ph.key for ph in validated.placeholders] == ["Client.Name", "Project.Name"]


def test_star_may_be_allowed_explicitly() -> None:
    assert validate_select("SELECT * FROM t", SCHEMA, allow_star=True).tables == ("t",)


def test_placeholders_are_found_once_each_in_order() -> None:
    sql = "SELECT a FROM t WHERE x = '[T.B]' OR y = '[T.A]' OR z = '[T.B]'"
    assert [ph.token for ph in find_placeholders(sql)] == ["[T.B]", "[T.A]"]
