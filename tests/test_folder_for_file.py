"""A folder where a file is read (``generate --import DIR``, ``label --input DIR``, a run's
dataset.jsonl or judgements/x.jsonl that is a folder) is one line and exit 2, never an
IsADirectoryError traceback with exit 1, which the gate's CI would read as FAIL (issue 37,
third hostile pass, item 9). The readers of records/io.py say it, in one place."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragaudit.records.io import RecordFileError, iter_jsonl_dicts, read_utf8_text
from tests.support.cli import ragaudit
from tests.support.hostile_files import one_line_error
from tests.support.judged_runs import judged_run, verdicts


def test_the_readers_refuse_a_folder_in_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "x.jsonl"
    folder.mkdir()
    for read in (read_utf8_text, lambda p: list(iter_jsonl_dicts(p))):
        with pytest.raises(RecordFileError) as caught:
            read(folder)
        assert str(caught.value) == f"{folder}: is a directory, not a file"


def test_import_and_label_input_refuse_a_folder(tmp_path: Path) -> None:
    (tmp_path / "ragaudit.yaml").write_text("run: {name: default}\n")
    for name in ("set.jsonl", "set.json"):
        (tmp_path / name).mkdir()
        result = ragaudit("generate", "--import", name, cwd=tmp_path)
        one_line_error(result, f"{name}: is a directory, not a file")
        result = ragaudit("label", "--input", name, "--no-llm", "--human", "x", cwd=tmp_path)
        one_line_error(result, f"{name}: is a directory, not a file")
    assert not (tmp_path / "runs/default/dataset.jsonl").exists()
    (tmp_path / "pairs.jsonl").write_text('{"id": "a", "context": "C.", "question": "Q?"}\n')
    (tmp_path / "labels").mkdir()
    result = ragaudit(
        "label", "--input", "pairs.jsonl", "--no-llm", "--human", "labels", cwd=tmp_path
    )
    one_line_error(result, "labels: is a directory, not a file")


def test_the_gate_refuses_a_candidate_file_that_is_a_folder(tmp_path: Path) -> None:
    v = verdicts(3, 0.7, groups=20)
    baseline = judged_run(tmp_path / "base", {"rag": v})
    stray = judged_run(tmp_path / "stray", {"rag": v})
    (stray / "judgements" / "rag2.jsonl").mkdir()
    folder_dataset = judged_run(tmp_path / "fd", {"rag": v})
    (folder_dataset / "dataset.jsonl").unlink()
    (folder_dataset / "dataset.jsonl").mkdir()
    for candidate, folder in (
        (stray, stray / "judgements" / "rag2.jsonl"),
        (folder_dataset, folder_dataset / "dataset.jsonl"),
    ):
        result = ragaudit("gate", str(baseline), str(candidate), cwd=tmp_path)
        one_line_error(result, f"{folder}: is a directory, not a file")


def test_compare_refuses_a_judgements_file_that_is_a_folder(tmp_path: Path) -> None:
    (tmp_path / "ragaudit.yaml").write_text("run: {name: default}\n")
    v = verdicts(4, 0.7, groups=20)
    run = judged_run(tmp_path / "runs" / "default", {"rag": v, "bm25": v})
    (run / "judgements" / "xx.jsonl").mkdir()
    result = ragaudit("compare", cwd=tmp_path)
    one_line_error(result, "judgements/xx.jsonl: is a directory, not a file")
