"""Shared pieces of the tests of the second hostile pass over issue 37: question pairs,
reading a run's files, and the shape of a one-line error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RUN = Path("runs/default")

CONFIG = """\
run: {name: default}
corpus: {path: runs/default/imported/contexts.jsonl}
systems:
  - name: ret
    generator: none
    retriever: keyword
    k: 1
"""


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def one_line_error(result: Any, *expected: str) -> None:
    """Exit 2, one line on stderr holding every ``expected`` piece, no traceback."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    for piece in expected:
        assert piece in result.stderr, result.stderr


def imported(root: Path) -> dict[str, dict[str, Any]]:
    """The imported queries of a project's dataset, by group id."""
    dataset = rows(root / RUN / "dataset.jsonl")
    return {r["group_id"]: r for r in dataset if r["source"] == "imported"}


PARIS = {
    "id": "q1",
    "context": "Paris is the capital of France.",
    "question": "What is the capital of France?",
    "answer": "Paris",
}
BERLIN = {
    "id": "q2",
    "context": "Berlin is the capital of Germany.",
    "question": "What is the capital of Germany?",
    "answer": "Berlin",
}


def squad(context: str) -> dict[str, Any]:
    """SQuAD JSON of one article, one paragraph (``context``) and one question."""
    qa = {"id": "s1", "question": "What is the capital?", "answers": [{"text": "Paris"}]}
    return {"data": [{"title": "T", "paragraphs": [{"context": context, "qas": [qa]}]}]}
