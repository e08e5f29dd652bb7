"""ragaudit doctor: the resolved configuration, the database's schema and one LLM round trip
(steps/doctor.py, cli/doctor.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.support.cli import ragaudit


def test_doctor_shows_schema_of_the_example_database(tmp_path: Path) -> None:
    result = ragaudit("doctor", "--example", "--skip-llm", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for table in ("Client", "Department", "Employee", "Project"):
        assert table in result.stdout
    assert "FK→Client" in result.stdout
    assert (tmp_path / "runs" / "default" / "ragaudit.yaml").is_file()


def test_doctor_reports_an_unreadable_database_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "broken.db").write_text("this is not a database")
    result = ragaudit(
        "doctor", "--db", f"sqlite:///{tmp_path / 'broken.db'}", "--skip-llm", cwd=tmp_path
    )
    assert result.returncode == 1
    assert "database check failed" in result.stderr
    assert "file is not a database" in result.stderr
    assert "Traceback" not in result.stderr


def test_doctor_on_a_duckdb_file(tmp_path: Path) -> None:
    import duckdb

    conn = duckdb.connect(str(tmp_path / "d.duckdb"))
    conn.execute("CREATE TABLE city (name VARCHAR PRIMARY KEY, country VARCHAR)")
    conn.execute("INSERT INTO city VALUES ('Orrin', 'Nowhere')")
    conn.close()
    result = ragaudit(
        "doctor", "--db", f"duckdb:///{tmp_path / 'd.duckdb'}", "--skip-llm", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "city" in result.stdout and "country" in result.stdout


def test_doctor_with_a_table_subset(tmp_path: Path) -> None:
    db = tmp_path / "two.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE kept (a TEXT)")
    conn.execute("CREATE TABLE dropped (b TEXT)")
    conn.commit()
    conn.close()
    (tmp_path / "ragaudit.yaml").write_text(f"database:\n  url: sqlite:///{db}\n  tables: [kept]\n")
    result = ragaudit("doctor", "--skip-llm", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "kept" in result.stdout and "dropped" not in result.stdout
