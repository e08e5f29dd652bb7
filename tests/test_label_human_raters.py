"""One rater, one file: two --human files that would be the same rater (the same base
name in two folders, the same file given twice, a rater column naming a rater of another
file or an LLM rater of the command) are refused naming both, before anything is asked or
written; never the last file silently winning with two records of (pair, rater) in
labels.jsonl (issue 37, third hostile pass, item 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import ragaudit
from tests.support.hostile_files import RUN, one_line_error
from tests.support.scripted_llm_server import ScriptedLLMServer

PAIRS = [
    {"id": "q1", "context": "Paris is the capital of France.", "question": "Capital of France?"},
    {"id": "q2", "context": "Berlin is in Germany.", "question": "Where is Berlin?"},
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ragaudit.yaml").write_text("run: {name: default}\n")
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    (tmp_path / "h" / "sub").mkdir(parents=True)
    (tmp_path / "h" / "a.jsonl").write_text('{"id": "q1", "label": "fact_single"}\n')
    (tmp_path / "h" / "sub" / "a.jsonl").write_text('{"id": "q1", "label": "summary"}\n')
    return tmp_path


def _label(project: Path, *args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return ragaudit("label", "--input", "pairs.jsonl", *args, cwd=project, env=env)


def test_two_files_of_one_base_name_are_refused_naming_both(project: Path) -> None:
    for first, second in (("h/a.jsonl", "h/sub/a.jsonl"), ("h/sub/a.jsonl", "h/a.jsonl")):
        result = _label(project, "--no-llm", "--human", first, "--human", second)
        one_line_error(result, first, second, "'human:a'")
    assert not (project / RUN / "labels.jsonl").exists()


def test_the_same_file_given_twice_is_refused(project: Path) -> None:
    result = _label(project, "--no-llm", "--human", "h/a.jsonl", "--human", "./h/../h/a.jsonl")
    one_line_error(result, "h/a.jsonl is given twice")
    assert not (project / RUN / "labels.jsonl").exists()


def test_a_rater_column_naming_the_rater_of_another_file_is_refused(project: Path) -> None:
    (project / "ann.csv").write_text("id,label,rater\nq2,summary,alice\n")
    (project / "bob.csv").write_text("id,label,rater\nq2,reasoning,alice\n")
    result = _label(project, "--no-llm", "--human", "ann.csv", "--human", "bob.csv")
    one_line_error(result, "ann.csv", "bob.csv", "'alice'")


def test_different_raters_in_two_files_are_read(project: Path) -> None:
    (project / "ann.csv").write_text("id,label\nq1,fact_single\nq2,summary\n")
    result = _label(project, "--no-llm", "--human", "ann.csv", "--human", "h/sub/a.jsonl")
    assert result.returncode == 0, result.stderr
    lines = (project / RUN / "labels.jsonl").read_text().splitlines()
    keys = [(r["pair_id"], r["rater"]) for r in map(json.loads, lines)]
    assert sorted(keys) == [("q1", "human:a"), ("q1", "human:ann"), ("q2", "human:ann")]


def test_a_human_file_naming_an_llm_rater_of_the_command_is_refused(
    project: Path, llm_server: ScriptedLLMServer
) -> None:
    (project / "h.csv").write_text("id,label,rater\nq1,summary,openai:m:default\n")
    (project / "ragaudit.yaml").write_text(
        f"run: {{name: default}}\nllm: {{model: 'openai:m', base_url: '{llm_server.base_url}'}}\n"
    )
    result = _label(project, "--human", "h.csv", env={"OPENAI_API_KEY": "sk-t-0"})
    one_line_error(result, "h.csv", "'openai:m:default'", "LLM rater")
    assert llm_server.request_count == 0
    assert not (project / RUN / "labels.jsonl").exists()
