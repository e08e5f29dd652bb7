"""Template files as users edit them, and the templates/generate commands end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragaudit.generate import load_templates
from ragaudit.generate.sql.templates import TemplateFileError
from tests.support.cli import ragaudit, without_progress


def _make(tmp_path: Path, *args: str):  # type: ignore[no-untyped-def]
    return ragaudit(*args, "--example", cwd=tmp_path)


def test_offline_path_from_schema_to_dataset(tmp_path: Path) -> None:
    assert _make(tmp_path, "templates", "sql").returncode == 0
    assert _make(tmp_path, "templates", "text", "--no-verify").returncode == 0
    checked = _make(tmp_path, "templates", "check")
    assert checked.returncode == 0 and "templates are valid" in checked.stdout
    # Nothing was verified: by default there is nothing to ask, and that is an error.
    refused = _make(tmp_path, "generate", "--balanced")
    assert refused.returncode == 2
    assert "no query generated" in refused.stderr and "not verified" in refused.stderr
    assert len(without_progress(refused.stderr).strip().splitlines()) == 1
    assert not (tmp_path / "runs/default/dataset.jsonl").exists()
    result = _make(tmp_path, "generate", "--balanced", "--unverified")
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "runs/default/dataset.jsonl").read_text().splitlines()
    stats = json.loads((tmp_path / "runs/default/dataset.stats.json").read_text())
    overview = stats["overview"]
    assert len(lines) == sum(overview["text_queries"].values())
    assert overview["text_queries"]["short"] == overview["text_queries"]["long"]
    assert overview["unverified_asked"] > 0  # the report says they were asked unverified
    first = json.loads(lines[0])
    assert first["reference"]["values"] and first["bindings"]
    assert "semantic groups" in result.stdout
    # A document half (generate --documents) in the dataset survives a new SQL half.
    document = {
        "query_id": "d1", "group_id": "doc-1", "variant": "generated", "source": "document",
        "query": "Who manages the Alder Bridge?", "label": "fact_single",
        "reference": {"values": ["Mira Tessel"], "display": "Mira Tessel"},
    }  # fmt: skip
    with (tmp_path / "runs/default/dataset.jsonl").open("a") as handle:
        handle.write(json.dumps(document) + "\n")
    again = _make(tmp_path, "generate", "--balanced", "--unverified", "--seed", "3")
    assert again.returncode == 0, again.stderr
    rows = [
        json.loads(x) for x in (tmp_path / "runs/default/dataset.jsonl").read_text().splitlines()
    ]
    assert [r for r in rows if r.get("source") == "document"] == [document]
    assert len(rows) == len(lines) + 1


def test_a_rerun_keeps_a_hand_edited_file_unless_overwrite(tmp_path: Path) -> None:
    _make(tmp_path, "templates", "sql")
    path = tmp_path / "runs/default/templates/sql.yaml"
    edited = path.read_text().replace("origin: enumerator", "origin: user", 1)
    path.write_text(edited + "# my note\n")
    again = _make(tmp_path, "templates", "sql")
    assert again.returncode == 0 and "is kept" in again.stdout
    assert path.read_text() == edited + "# my note\n"
    assert _make(tmp_path, "templates", "sql", "--overwrite").returncode == 0
    assert "# my note" not in path.read_text()


def test_check_names_the_line_of_each_broken_template(tmp_path: Path) -> None:
    _make(tmp_path, "templates", "sql")
    _make(tmp_path, "templates", "text", "--no-verify")
    sql_path = tmp_path / "runs/default/templates/sql.yaml"
    lines = sql_path.read_text().splitlines()
    first_sql = next(i for i, line in enumerate(lines) if line.strip().startswith("sql:"))
    lines[first_sql] = "  sql: SELECT Colour FROM Client WHERE Name = '[Client.Name]'"
    sql_path.write_text("\n".join(lines) + "\n")
    text_path = tmp_path / "runs/default/templates/text.yaml"
    text_lines = text_path.read_text().splitlines()
    broken = next(i for i, line in enumerate(text_lines) if "[Client.Name]" in line)
    text_lines[broken] = text_lines[broken].replace("[Client.Name]", "[Client.Nmae]")
    text_path.write_text("\n".join(text_lines) + "\n")
    result = _make(tmp_path, "templates", "check")
    assert result.returncode == 1
    problems = result.stderr.strip().splitlines()
    assert problems[0].startswith(f"{Path('runs/default/templates/sql.yaml')}:{first_sql + 1}: ")
    assert "unknown column 'colour'" in problems[0]
    text_problem = next(p for p in problems if "text.yaml" in p)
    assert text_problem.startswith(f"{Path('runs/default/templates/text.yaml')}:{broken + 1}: ")
    assert "missing Client.Name; unknown Client.Nmae" in text_problem
    assert "Traceback" not in result.stderr
    generate = _make(tmp_path, "generate")
    assert generate.returncode == 2 and "see ragaudit templates check" in generate.stderr
    assert not (tmp_path / "runs/default/dataset.jsonl").exists()


def test_structural_mistakes_are_one_line_with_the_line(tmp_path: Path) -> None:
    path = tmp_path / "sql.yaml"
    path.write_text(
        "templates:\n  - id: a\n    sql: SELECT x FROM t WHERE y = '[t.y]'\n"
        "  - id: a\n    sql: SELECT z FROM t WHERE y = '[t.y]'\n"
    )
    with pytest.raises(
        TemplateFileError,
        match=r"sql.yaml:4: duplicate template id 'a' "
        r"\(first at .*sql.yaml:3\)",
    ):
        load_templates(path)
    path.write_text("templates:\n  - id: a\n    sqll: SELECT 1\n")
    with pytest.raises(TemplateFileError, match=r"sql.yaml:2: templates.0.sql: Field required"):
        load_templates(path)
    # A key given twice in one template (the last would win silently) and bytes that are
    # not UTF-8 are one-line errors too, through the CLI as well.
    path.write_text("templates:\n  - id: a\n    sql: SELECT 1\n    sql: SELECT 2\n")
    with pytest.raises(
        TemplateFileError, match=r"sql.yaml:4: duplicate key 'sql' \(first at line 3\)"
    ):
        load_templates(path)
    run = tmp_path / "runs" / "default" / "templates"
    run.mkdir(parents=True)
    (run / "sql.yaml").write_bytes(b"templates:\n  - id: caf\xe9\n")
    result = ragaudit("templates", "check", "--example", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == "error: runs/default/templates/sql.yaml: not UTF-8 at byte 22"


def test_reference_templates_through_the_cli(tmp_path: Path, grammar_reference: Path) -> None:
    aurp = grammar_reference / "aurp"
    args = ["--db", f"sqlite:///{aurp / 'aurp.sqlite'}"]
    sql = ragaudit(
        "templates",
        "sql",
        *args,
        "--from-reference",
        str(aurp / "sql_templates.json"),
        cwd=tmp_path,
    )
    assert sql.returncode == 0, sql.stderr
    text = ragaudit(
        "templates",
        "text",
        *args,
        "--from-reference",
        f"short={aurp / 'text_templates_short.json'}",
        "--from-reference",
        f"long={aurp / 'text_templates_long.json'}",
        "--no-verify",
        cwd=tmp_path,
    )
    assert text.returncode == 0, text.stderr
    # The paper's 157 groups include one whose answer is NULL: --include-null asks it too.
    result = ragaudit(
        "generate", *args, "--balanced", "--unverified", "--include-null", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "runs/default/dataset.jsonl").read_text().splitlines()
    assert len(lines) == 942
    templates = load_templates(tmp_path / "runs/default/templates/sql.yaml").templates
    assert sum(t.groups or 0 for t in templates) == 157
    assert {t.origin for t in templates} == {"reference"}


def test_every_step_records_its_configuration_and_version(tmp_path: Path) -> None:
    """A run directory says how it was made: each step writes ragaudit.yaml (secrets
    masked) and its entry in provenance.json (issue 13, defect 14)."""
    import json

    from ragaudit import __version__

    env = {"OPENAI_API_KEY": "sk-prov-secret-0123456789"}
    for step in (
        ("templates", "sql"),
        ("templates", "text", "--no-verify"),
        ("generate", "--unverified", "--seed", "7"),
    ):
        done = ragaudit(*step, "--example", cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
    root = tmp_path / "runs" / "default"
    again = ragaudit("generate", "--unverified", "--seed", "8", "--example", cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr
    steps = json.loads((root / "provenance.json").read_text())["steps"]
    assert [s["step"] for s in steps] == ["templates sql", "templates text", "generate", "generate"]
    assert all(s["ragaudit_version"] == __version__ for s in steps)
    # Each run of a step is kept, with the options it ran with.
    assert [s["config"]["generate"]["seed"] for s in steps[2:]] == [7, 8]
    assert steps[2]["config"]["llm"]["api_key"] == "***"
    header = (root / "ragaudit.yaml").read_text().splitlines()[0]
    assert f"ragaudit {__version__}" in header and "'generate'" in header
    for path in root.rglob("*"):
        if path.is_file():
            assert b"sk-prov-secret" not in path.read_bytes(), path
