"""One record per (system, query) across the files of a run: a second judgement, response
or score of a query in another file (a copy such as judgements/rag-old.jsonl, an older
version kept beside the new one) is refused with one line naming both files by every
reader that turns records into figures, never counted twice or silently preferred
(hostile pass on issue 37, finding 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragaudit.errors import UserError
from ragaudit.judge.retrieval import DEFAULT_RULE
from ragaudit.records.io import write_jsonl_atomic
from ragaudit.records.models import FreeScoreRecord, MetricScore
from ragaudit.rundir import RunDir
from tests.support.cli import ragaudit
from tests.support.judged_runs import judged_run, verdicts


def _one_line(result: object) -> str:
    stderr = result.stderr  # type: ignore[attr-defined]
    assert result.returncode == 2, stderr  # type: ignore[attr-defined]
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return str(lines[0])


def _runs(tmp_path: Path) -> tuple[Path, Path]:
    """A baseline and a worse candidate, as the project's own step would leave them
    (runs/default is the candidate, so that analyze finds it)."""
    good = verdicts(1, 0.7, groups=40)
    worse = good.copy()
    worse[::2] = False
    base = judged_run(tmp_path / "base", {"rag": good})
    cand = judged_run(tmp_path / "runs" / "default", {"rag": worse})
    return base, cand


def test_a_second_judgements_file_of_a_system_is_refused_naming_both_files(
    tmp_path: Path,
) -> None:
    """The hostile pass's repro: the baseline's judgements copied into the worse candidate
    as rag-old.jsonl were blended into the candidate's figures (the gate passed it)."""
    from ragaudit.api.tables import read_answers
    from ragaudit.steps.analyze import load_examples
    from ragaudit.steps.compare import compare_examples

    base, cand = _runs(tmp_path)
    old = cand / "judgements" / "rag-old.jsonl"
    shutil.copy(base / "judgements" / "rag.jsonl", old)
    new = cand / "judgements" / "rag.jsonl"
    run = RunDir(cand)

    for read in (
        lambda: load_examples(run, [], DEFAULT_RULE, outcome="answer"),
        lambda: compare_examples(run, "accuracy"),
        lambda: compare_examples(run, "robustness"),
        lambda: read_answers(run),
    ):
        with pytest.raises(UserError) as caught:
            read()
        message = str(caught.value)
        assert "two judgements of query q0-0 by rag" in message
        assert str(old) in message and str(new) in message
        assert "\n" not in message

    analyzed = _one_line(ragaudit("analyze", cwd=tmp_path))
    assert "two judgements of query q0-0 by rag" in analyzed and "rag-old.jsonl" in analyzed
    assert not (cand / "summary.json").exists()
    gate = _one_line(ragaudit("gate", str(base), str(cand), "--margin", "0.1", cwd=tmp_path))
    assert str(old) in gate and str(new) in gate
    compared = _one_line(ragaudit("compare", cwd=tmp_path))
    assert "rag-old.jsonl" in compared

    # Without the copy, the same candidate is read and fails the gate as it should.
    old.unlink()
    assert len(load_examples(run, [], DEFAULT_RULE)) == 160
    gated = ragaudit("gate", str(base), str(cand), "--margin", "0.1", cwd=tmp_path)
    assert gated.returncode == 1, gated.stdout + gated.stderr


def test_a_second_responses_file_of_a_system_is_refused_naming_both_files(
    tmp_path: Path,
) -> None:
    """Retrieval figures (analyze --outcome retrieval, compare and gate on recall@K) and
    the answer table read the responses: a copy of a system's file is refused there too,
    and so is a second response in the file analyze reads the retrieved ids from."""
    from ragaudit.api.tables import read_answers
    from ragaudit.steps.analyze import load_examples
    from ragaudit.steps.compare import compare_examples

    _, cand = _runs(tmp_path)
    copy = cand / "responses" / "rag-copy.jsonl"
    shutil.copy(cand / "responses" / "rag.jsonl", copy)
    run = RunDir(cand)
    for read in (
        lambda: load_examples(run, [], DEFAULT_RULE, outcome="retrieval"),
        lambda: load_examples(run, [], DEFAULT_RULE, outcome="answer"),  # retrieved ids
        lambda: compare_examples(run, "recall@1"),
        lambda: read_answers(run),
    ):
        with pytest.raises(UserError) as caught:
            read()
        message = str(caught.value)
        assert "two responses of query q0-0 by rag" in message
        assert str(copy) in message and str(cand / "responses" / "rag.jsonl") in message
    line = _one_line(ragaudit("analyze", "--outcome", "retrieval", cwd=tmp_path))
    assert "rag-copy.jsonl" in line

    # Twice in the file the retrieved ids are read from: refused as written twice.
    copy.unlink()
    responses = cand / "responses" / "rag.jsonl"
    lines = responses.read_text().splitlines()
    responses.write_text("\n".join([*lines, lines[3]]) + "\n")
    with pytest.raises(UserError, match="two responses of query q0-3 by rag: the file was"):
        load_examples(run, [], DEFAULT_RULE, outcome="answer")


def test_a_second_scores_file_of_a_system_is_refused_naming_both_files(tmp_path: Path) -> None:
    """Reference-free scores feed compare and gate on faithfulness, analyze's reliability
    figures and the answer table's score columns."""
    from ragaudit.api.tables import read_answers
    from ragaudit.judge.options import ReferenceFreeOptions
    from ragaudit.steps.analyze import load_examples, read_reference_free
    from ragaudit.steps.compare import compare_examples

    _, cand = _runs(tmp_path)
    run = RunDir(cand)
    records = [
        FreeScoreRecord(
            query_id=f"q{g}-{w}",
            system="rag",
            metrics={"faithfulness": MetricScore(score=1.0 if (g + w) % 2 else 0.5)},
        )
        for g in range(40)
        for w in range(4)
    ]
    write_jsonl_atomic(run.scores_dir / "rag.jsonl", records)
    assert len(compare_examples(run, "faithfulness")[0]) == 160  # one file: fine
    shutil.copy(run.scores_dir / "rag.jsonl", run.scores_dir / "rag.1.jsonl")
    examples = load_examples(run, [], DEFAULT_RULE)
    for read in (
        lambda: compare_examples(run, "faithfulness"),
        lambda: read_reference_free(run, examples, ReferenceFreeOptions()),
        lambda: read_answers(run),
    ):
        with pytest.raises(UserError) as caught:
            read()
        message = str(caught.value)
        assert "two scores of query q0-0 by rag" in message
        assert str(run.scores_dir / "rag.1.jsonl") in message
        assert str(run.scores_dir / "rag.jsonl") in message


def _neutral(path: Path, rows: list[tuple[str, str, bool]]) -> Path:
    path.write_text(
        "".join(
            json.dumps({"query_id": q, "group_id": g, "variant": "short", "correct": ok}) + "\n"
            for q, g, ok in rows
        )
    )
    return path


def test_a_row_in_two_neutral_files_is_refused_naming_both_files(tmp_path: Path) -> None:
    """Neutral files of one system given together are read as one set of results: a query
    in two of them (the same file given twice, a balanced and an unbalanced copy) would be
    counted twice."""
    a = _neutral(tmp_path / "a.jsonl", [("q1", "g1", True), ("q2", "g1", False)])
    b = _neutral(tmp_path / "b.jsonl", [("q3", "g2", True), ("q1", "g1", True)])
    line = _one_line(ragaudit("analyze", "--neutral", str(a), "--neutral", str(b), cwd=tmp_path))
    assert "two rows of query q1 by external" in line
    assert str(a) in line and str(b) in line and "b.jsonl:2" in line
    assert not (tmp_path / "runs" / "default" / "summary.json").exists()
    twice = _one_line(
        ragaudit("analyze", "--neutral", str(a), "--neutral", str(tmp_path), cwd=tmp_path)
    )  # the folder holds a.jsonl too
    assert twice == f"error: {a} is given twice: its results would be counted twice"
    c = _neutral(tmp_path / "c.jsonl", [("q3", "g2", True), ("q4", "g2", True)])
    ok = ragaudit("analyze", "--neutral", str(a), "--neutral", str(c), cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
