"""A judgement remembers the response it judged: a system run again after its responses
file was deleted is never scored by its predecessor's verdicts. Before, `judge` said
"nothing new", and a candidate answering "I don't know." to everything kept accuracy
1.000 and passed the gate (issue 37, a note of the fourth hostile pass)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import ragaudit as ra
from ragaudit.records.io import read_jsonl
from ragaudit.records.models import Judgement
from ragaudit.rundir import RunDir
from ragaudit.store.answers import FINGERPRINT_KEY, fingerprint
from tests.support.cli import ragaudit


def test_a_system_run_again_is_judged_again_and_never_passes_on_old_verdicts(
    tmp_path: Path,
) -> None:
    project = ra.Project.example(root=tmp_path, progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    dataset = project.generate(unverified=True)
    truth = {q.query: q.reference.display for q in dataset}

    def good(question: str) -> str:
        return truth[question]

    def broken(question: str) -> str:
        return "I don't know."

    project.run([ra.system(good, name="rag")])
    project.judge(llm=None)
    assert project.analyze().systems["rag"].variants  # analyzed
    judged = list(read_jsonl(project.run_dir / "judgements" / "rag.jsonl", Judgement))
    assert judged and all(j.response_digest for j in judged)
    baseline = tmp_path / "baseline"
    shutil.copytree(project.run_dir, baseline)

    # The system breaks; its responses are written anew, its old judgements stay.
    (project.run_dir / "responses" / "rag.jsonl").unlink()
    project.run([ra.system(broken, name="rag")])
    with pytest.raises(ra.UserError, match="judged another response than"):
        project.analyze()
    with pytest.raises(ra.UserError, match=r"call project\.judge\(systems=\['rag'\]\)"):
        project.answers()
    result = ragaudit("gate", str(baseline), str(project.run_dir), cwd=tmp_path)
    assert result.returncode == 2, result.stdout  # never a pass on the old verdicts
    assert "judged another response than" in result.stderr

    # judge judges them anew; the gate then fails the broken candidate.
    report = project.judge(llm=None)
    assert report.systems["rag"].judged_now == len(dataset)
    result = ragaudit("gate", str(baseline), str(project.run_dir), cwd=tmp_path)
    assert result.returncode == 1, result.stdout
    assert "REGRESSION" in result.stdout


def test_an_answer_table_kept_from_before_the_system_ran_again_never_gives_old_verdicts(
    tmp_path: Path,
) -> None:
    """answers.parquet is read without the JSON Lines when its fingerprint matches them.
    The responses file is in that fingerprint, so a response written anew makes a table
    built before it stale, and the rebuild refuses the old verdicts as analyze does."""
    project = ra.Project.example(root=tmp_path, progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    dataset = project.generate(unverified=True)
    truth = {q.query: q.reference.display for q in dataset}
    project.run([ra.system(lambda question: truth[question], name="rag")])
    project.judge(llm=None)
    run = RunDir(project.run_dir)
    table = run.answers_table
    assert pq.read_schema(table).metadata[FINGERPRINT_KEY].decode() == fingerprint(run)
    assert project.answers().to_pandas()["correct"].all()
    kept = table.read_bytes()  # the table of the good system's verdicts, fresh

    (project.run_dir / "responses" / "rag.jsonl").unlink()
    project.run([ra.system(lambda question: "I don't know.", name="rag")])
    # run's own refresh of the table refuses the stale verdicts: the table is removed.
    assert not table.exists()
    # The old table put back (a run killed before its refresh, a copy): its fingerprint
    # names the responses file as it was, so it is not read but rebuilt, and refused.
    table.write_bytes(kept)
    assert pq.read_schema(table).metadata[FINGERPRINT_KEY].decode() != fingerprint(run)
    with pytest.raises(ra.UserError, match="judged another response than") as caught:
        project.answers()
    assert "\n" not in str(caught.value)

    # Judged anew, the table is fresh again and holds the new verdicts.
    project.judge(llm=None)
    assert pq.read_schema(table).metadata[FINGERPRINT_KEY].decode() == fingerprint(run)
    frame = project.answers().to_pandas()
    assert len(frame) == len(dataset) and not frame["correct"].any()
    assert set(frame["answer"]) == {"I don't know."}
