"""Gating two configurations, not only two runs (issue 41, item 15): ``--pair
CANDIDATE=BASELINE`` gates one system against another, of one run or across runs, with the
same statistics as two run folders holding one system named alike (the workaround it
replaces); a system against itself in one run is still refused."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import ragaudit as ra
from ragaudit.analysis.gate import GateReport
from ragaudit.steps.gate import gate_runs
from tests.support.cli import ragaudit
from tests.support.judged_runs import judged_run, verdicts

DENSE = verdicts(1, 0.8)
BM25 = verdicts(1, 0.5)  # the same groups' difficulty, clearly fewer right


@pytest.fixture
def one_run(tmp_path: Path) -> Path:
    """One run in which dense and bm25 answered the same questions."""
    return judged_run(tmp_path / "run", {"dense": DENSE, "bm25": BM25})


def _figures(report: GateReport) -> list[tuple[object, ...]]:
    return [
        (c.metric, c.baseline, c.candidate, c.difference, c.ci95, c.p_value, c.status,
         c.n_groups, c.n_queries, c.detectable)
        for c in report.checks
    ]  # fmt: skip


def test_two_systems_of_one_run_are_gated_with_the_statistics_of_two_runs(
    tmp_path: Path, one_run: Path
) -> None:
    # What the user had to build by hand: one system named alike in two run folders.
    by_hand = gate_runs(
        judged_run(tmp_path / "dense-run", {"rag": DENSE}),
        judged_run(tmp_path / "bm25-run", {"rag": BM25}),
        metrics=["accuracy", "robustness"],
    )
    paired = gate_runs(
        one_run, one_run, pairs={"bm25": "dense"}, metrics=["accuracy", "robustness"]
    )
    assert _figures(paired) == _figures(by_hand)
    assert paired.verdict == "FAIL" and paired.exit_code == 1
    assert {c.system for c in paired.checks} == {"bm25 (baseline: dense)"}
    # From Python without naming the run twice, and the other way round: a pass.
    report = ra.gate(one_run, pairs={"dense": "bm25"})
    assert report.verdict == "PASS" and report.checks[0].difference > 0.2
    ra.assert_no_regression(one_run, pairs={"dense": "bm25"})


def test_the_command_gates_two_systems_of_one_run_folder(tmp_path: Path, one_run: Path) -> None:
    junit = tmp_path / "gate.xml"
    worse = ragaudit(
        "gate", str(one_run), "--pair", "bm25=dense", "--junit", str(junit), cwd=tmp_path
    )
    assert worse.returncode == 1, worse.stdout + worse.stderr
    assert "| bm25 (baseline: dense) | accuracy |" in worse.stdout
    assert "REGRESSION" in worse.stdout
    assert "bm25 of the candidate against dense of the baseline" in worse.stdout
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert [c.get("name") for c in suite.iter("testcase")] == ["bm25 (baseline: dense) accuracy"]
    # Naming the folder twice is the same gate.
    better = ragaudit("gate", str(one_run), str(one_run), "--pair", "dense=bm25", cwd=tmp_path)
    assert better.returncode == 0, better.stdout + better.stderr
    assert "ragaudit gate: PASS" in better.stdout


def test_names_are_mapped_across_runs(tmp_path: Path) -> None:
    """A baseline run of bm25 and a candidate run of dense: no renaming, no copying."""
    baseline = judged_run(tmp_path / "base", {"bm25": BM25})
    candidate = judged_run(tmp_path / "cand", {"dense": DENSE})
    plain = ragaudit("gate", str(baseline), str(candidate), cwd=tmp_path)
    assert plain.returncode == 1 and "MISSING" in plain.stdout  # as before: by name
    mapped = ragaudit("gate", str(baseline), str(candidate), "--pair", "dense=bm25", cwd=tmp_path)
    assert mapped.returncode == 0, mapped.stdout + mapped.stderr
    assert "| dense (baseline: bm25) | accuracy |" in mapped.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "the baseline and the candidate are the same run folder"),
        (("--pair", "dense=dense"), "--pair dense=dense: in one run folder a system gated "
         "against itself always passes"),
        (("--pair", "dense=bm52"), "--pair dense=bm52: the baseline has no system bm52 "
         "(its systems: bm25, dense)"),
        (("--pair", "dnese=bm25"), "--pair dnese=bm25: the candidate has no system dnese "
         "(its systems: bm25, dense)"),
        (("--pair", "dense"), "--pair dense: give CANDIDATE=BASELINE"),
        (("--pair", "dense=bm25", "--pair", "dense=bm25"), "--pair dense: given twice"),
        (("--pair", "dense=bm25", "--system", "dense"), "--pair and --system"),
    ],
)  # fmt: skip
def test_a_pair_that_cannot_be_meant_is_refused_in_one_line(
    tmp_path: Path, one_run: Path, args: tuple[str, ...], message: str
) -> None:
    result = ragaudit("gate", str(one_run), str(one_run), *args, cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert message in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_one_run_folder_without_pairs_is_refused(tmp_path: Path, one_run: Path) -> None:
    result = ragaudit("gate", str(one_run), cwd=tmp_path)
    assert result.returncode == 2
    assert "one run folder: name the candidate's run folder, or pair two of its systems" in (
        result.stderr
    )
    with pytest.raises(ra.UserError, match="pair two of its systems"):
        ra.gate(one_run)
    with pytest.raises(ra.UserError, match="always passes"):
        ra.gate(one_run, one_run, pairs={"bm25": "bm25"})
