"""A user's input file that gives one key twice in an object is an error naming the file,
the line and the key: JSON keeps the last value silently, which would import "What is the
capital of Spain?" with the answer Paris (issue 37, fourth hostile pass)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragaudit.documents.pairs import read_input
from ragaudit.errors import UserError
from ragaudit.records.io import iter_jsonl_dicts
from ragaudit.systems.corpus import load_corpus
from tests.support.cli import ragaudit

TWICE = (
    '{"id": "q1", "context": "Paris is the capital of France.", '
    '"question": "What is the capital of France?", '
    '"question": "What is the capital of Spain?", "answer": "Paris"}\n'
)


def test_an_import_line_with_a_key_twice_is_refused_and_nothing_written(tmp_path: Path) -> None:
    (tmp_path / "q.jsonl").write_text(TWICE)
    result = ragaudit("generate", "--import", "q.jsonl", cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert result.stderr.strip() == (
        "error: q.jsonl:1: key 'question' is given twice in one object (JSON keeps only the last)"
    )
    assert not (tmp_path / "runs" / "default" / "dataset.jsonl").exists()


def test_squad_label_input_and_corpus_refuse_a_key_twice(tmp_path: Path) -> None:
    squad = tmp_path / "s.json"
    squad.write_text(
        '{"version": "v2.0", "data": [{"title": "T", "paragraphs": [{"context": "Paris.", '
        '"qas": [{"id": "a", "question": "What?", "answers": [{"text": "Paris", '
        '"answer_start": 0}], "is_impossible": false, "is_impossible": true}]}]}]}'
    )
    with pytest.raises(UserError, match="key 'is_impossible' is given twice"):
        read_input(squad)
    pairs = tmp_path / "p.jsonl"
    pairs.write_text(json.dumps({"id": "ok", "context": "A.", "question": "B?"}) + "\n" + TWICE)
    with pytest.raises(UserError, match=r"p.jsonl:2: key 'question' is given twice"):
        read_input(pairs)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "d1", "text": "the first text", "text": "the second"}\n')
    with pytest.raises(UserError, match=r"c.jsonl:1: key 'text' is given twice"):
        load_corpus(corpus)


def test_ragaudits_own_files_are_read_without_the_check(tmp_path: Path) -> None:
    """The check costs time on millions of lines, and ragaudit writes each key once."""
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1, "a": 2}\n')
    assert list(iter_jsonl_dicts(path)) == [(1, {"a": 2})]
    with pytest.raises(UserError, match="key 'a' is given twice"):
        list(iter_jsonl_dicts(path, skip_torn_tail=False, unique_keys=True))
