"""A judgement remembers the response it judged: a system run again after its responses
file was deleted is never scored by its predecessor's verdicts. Before, `judge` said
"nothing new", and a candidate answering "I don't know." to everything kept accuracy
1.000 and passed the gate (issue 37, a note of the fourth hostile pass)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import ragaudit as ra
from ragaudit.records.io import read_jsonl
from ragaudit.records.models import Judgement
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
    with pytest.raises(ra.UserError, match="run ragaudit judge"):
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
