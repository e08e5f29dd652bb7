"""The third hostile pass over the gate and compare (issue 37): a --system typo is no pass,
the Python doors check their options as the CLI does, control characters in a name keep
the JUnit file well-formed, robustness rankings warn only about missing scores, and an
unjudged run is told which metrics need no judge."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import ragaudit as ra
from ragaudit.analysis.metrics import Example
from ragaudit.analysis.ranking import example_score, rank_sets, set_scores
from tests.support.cli import ragaudit
from tests.support.judged_runs import judged_run, verdicts


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    """A baseline and a candidate whose rag clearly got worse (bm25 unchanged)."""
    bm25 = verdicts(2, 0.6)
    base = judged_run(tmp_path / "base", {"rag": verdicts(1, 0.8), "bm25": bm25})
    worse = judged_run(tmp_path / "worse", {"rag": verdicts(1, 0.4), "bm25": bm25})
    return base, worse


def test_a_system_pattern_that_matches_nothing_is_no_pass(
    tmp_path: Path, runs: tuple[Path, Path]
) -> None:
    base, worse = runs
    # A typo for rag, the system that got worse: the gate must not pass on bm25 alone.
    result = ragaudit(
        "gate", str(base), str(worse), "--system", "bm25", "--system", "rgx", cwd=tmp_path
    )
    assert result.returncode == 2, result.stdout
    assert "--system rgx: no system of the baseline matches it" in result.stderr
    assert "bm25, rag" in result.stderr  # the systems it could have meant
    with pytest.raises(ra.UserError, match="rgx"):
        ra.gate(base, worse, systems=["bm25", "rgx"])
    # Both patterns name a system: the regression is found.
    assert ra.gate(base, worse, systems=["bm25", "r*"]).verdict == "FAIL"
    # One name given as a string is that name, not its letters.
    report = ra.gate(base, worse, systems="rag", metrics="accuracy")
    assert [c.system for c in report.checks] == ["rag"] and report.verdict == "FAIL"


def test_compare_refuses_a_system_pattern_that_matches_nothing(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    base, _ = runs
    with pytest.raises(ra.UserError, match="--system zz: no system of the run matches it"):
        ra.compare(base, systems=["rag", "zz"])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"alpha": 0}, "alpha must be above 0 and at most 0.5, not 0"),
        ({"alpha": math.nan}, "alpha must be above 0 and at most 0.5, not nan"),
        ({"alpha": 0.9999}, "alpha must be above 0 and at most 0.5"),
        ({"resamples": 0}, "resamples must be at least 100, not 0"),
        ({"resamples": -1}, "resamples must be at least 100"),
        ({"by": "nope"}, "by must be source, variant or label, not 'nope'"),
        ({"retrieval_rule": "nope"}, "nope"),
    ],
)
def test_compare_options_are_checked_from_python(
    runs: tuple[Path, Path], options: dict[str, object], message: str
) -> None:
    base, _ = runs
    with pytest.raises(ra.UserError, match=message.replace("(", r"\(")):
        ra.compare(base, **options)
    assert not (base / "compare.json").exists()  # nothing written for a refused study


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"retrieval_rule": "nope", "metrics": ["accuracy_retrieval"]}, "nope"),
        ({"resamples": 10}, "10"),
        ({"metrics": [1]}, "give names as strings"),
    ],
)
def test_gate_options_are_checked_from_python(
    runs: tuple[Path, Path], options: dict[str, object], message: str
) -> None:
    base, worse = runs
    with pytest.raises(ra.UserError, match=message):
        ra.gate(base, worse, **options)
    with pytest.raises(ra.UserError, match=message):
        ra.assert_no_regression(base, worse, **options)


def test_non_characters_and_c1_controls_keep_the_junit_file_well_formed(tmp_path: Path) -> None:
    name = "r\ufffeag\uffff\x9b"
    base = judged_run(tmp_path / "base", {name: verdicts(1, 0.8)})
    worse = judged_run(tmp_path / "worse", {name: verdicts(1, 0.4)})
    junit = tmp_path / "gate.xml"
    result = ragaudit("gate", str(base), str(worse), "--junit", str(junit), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    (case,) = ET.parse(junit).getroot().iter("testcase")
    assert case.get("name") == "r\\ufffeag\\uffff\\x9b accuracy"
    assert "\x9b" not in result.stdout


def test_control_characters_in_a_name_keep_the_junit_file_well_formed(tmp_path: Path) -> None:
    name = "r\x1b[31mag"
    base = judged_run(tmp_path / "base", {name: verdicts(1, 0.8)})
    worse = judged_run(tmp_path / "worse", {name: verdicts(1, 0.4)})
    junit, md = tmp_path / "gate.xml", tmp_path / "gate.md"
    result = ragaudit(
        "gate", str(base), str(worse), "--junit", str(junit), "--markdown", str(md),
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "\x1b" not in result.stdout and "r\\x1b[31mag" in result.stdout
    (case,) = ET.parse(junit).getroot().iter("testcase")  # parses: well-formed XML
    assert case.get("name") == "r\\x1b[31mag accuracy"
    assert case.find("failure") is not None
    assert "\x1b" not in md.read_text()
    # An error's one line is escaped too.
    (worse / "judgements" / "zz.jsonl").write_text(
        '{"query_id": "zz\\u0001\\u001b[31mRED", "system": "zz", "correct": true,'
        ' "method": "match"}\n'
    )
    result = ragaudit("gate", str(base), str(worse), "--junit", str(junit), cwd=tmp_path)
    assert result.returncode == 2
    assert "\x1b" not in result.stderr and "\x01" not in result.stderr
    ET.parse(junit)


def _robust_examples(source: str, systems: int, groups: int, seed: int) -> list[Example]:
    """Every query of every system judged; some groups are wrong in every wording (gaps)."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(systems):
        for g in range(groups):
            p = 0.0 if rng.random() < 0.2 else 0.5 + 0.1 * s
            for v in range(3):
                out.append(
                    Example(
                        query_id=f"{source}-{g}-{v}",
                        group_id=f"{source}-g{g}",
                        variant=f"v{v}",
                        correct=bool(rng.random() < p),
                        system=f"s{s}",
                        origin=source,
                    )
                )
    return out


def test_robustness_rankings_do_not_count_gap_groups_as_missing_scores() -> None:
    examples = _robust_examples("sql", 4, 40, 0) + _robust_examples("document", 4, 40, 1)
    scores = set_scores(examples, example_score("robustness"), robustness=True)
    # The systems' gaps differ, so R is over different groups: that is what R is.
    assert len({int(row.sum()) for row in scores["sql"].den}) > 1
    study = rank_sets(scores, metric="robustness", n_boot=100, n_perm=100)
    assert all(not s.notes for s in study.sets), [s.notes for s in study.sets]
    # A system that really lacks scores is still named.
    fewer = [ex for ex in examples if not (ex.system == "s0" and ex.group_id == "sql-g3")]
    scores = set_scores(fewer, example_score("robustness"), robustness=True)
    study = rank_sets(scores, metric="robustness", n_boot=100, n_perm=100)
    sql = next(s for s in study.sets if s.name == "sql")
    assert len(sql.notes) == 1 and sql.notes[0].startswith("s0 is ranked on 117 of the 120")


def test_an_unjudged_run_is_told_which_metrics_need_no_judge(
    tmp_path: Path, runs: tuple[Path, Path]
) -> None:
    base, worse = runs
    for run in (base, worse):
        for f in (run / "judgements").iterdir():
            f.unlink()
    result = ragaudit("gate", str(base), str(worse), cwd=tmp_path)
    assert result.returncode == 2
    assert "accuracy needs them (run ragaudit judge)" in result.stderr
    assert "recall@K" in result.stderr and "--neutral" not in result.stderr


# -- the fourth hostile pass ----------------------------------------------------------------


def test_a_run_gated_against_itself_is_refused(tmp_path: Path, runs: tuple[Path, Path]) -> None:
    """A CI line naming one run twice (or through a link) could never fail."""
    base, _ = runs
    (tmp_path / "link").symlink_to(base)
    for candidate in (str(base), f"{base}/", str(tmp_path / "link")):
        result = ragaudit("gate", str(base), candidate, cwd=tmp_path)
        assert result.returncode == 2, result.stdout
        assert "the baseline and the candidate are the same run folder" in result.stderr
    with pytest.raises(ra.UserError, match="same run folder"):
        ra.assert_no_regression(base, base)


def test_a_negative_seed_is_one_line_naming_the_option(
    tmp_path: Path, runs: tuple[Path, Path]
) -> None:
    base, worse = runs
    junit = tmp_path / "gate.xml"
    result = ragaudit("gate", str(base), str(worse), "--seed", "-3", "--junit", str(junit),
                      cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "seed must be a whole number from 0 to 2,147,483,647, not -3" in result.stderr
    assert junit.exists()  # CI's report says why
    with pytest.raises(ra.UserError, match="seed must be"):
        ra.gate(base, worse, seed=-1)
    with pytest.raises(ra.UserError, match="seed must be"):
        ra.compare(base, seed=-1)
    result = ragaudit("analyze", "--seed", "-1", cwd=base.parent)
    assert result.returncode == 2 and "seed must be" in result.stderr


@pytest.mark.parametrize("spec", ["foo:bar", "openai:", "openai-gpt-4o"])
def test_a_mistyped_llm_is_one_line_from_both_doors(tmp_path: Path, spec: str) -> None:
    result = ragaudit("doctor", "--example", "--llm", spec, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: --llm: model: ")
    assert len(result.stderr.strip().splitlines()) == 1
    with pytest.raises(ra.UserError, match=r"^llm=: model: "):
        ra.Project(root=tmp_path, llm=spec)


def test_judgements_without_their_responses_are_said_to_be_so(
    tmp_path: Path, runs: tuple[Path, Path]
) -> None:
    """Not "retrieval only, use recall@K": the responses the judgements judged are gone."""
    import shutil

    base, worse = runs
    shutil.rmtree(worse / "responses")
    result = ragaudit("gate", str(base), str(worse), cwd=tmp_path)
    assert result.returncode == 1, result.stdout  # the candidate lacks them: MISSING
    said = " ".join(result.stdout.split())
    assert "has judgements but no responses" in said and "retrieval only" not in said


def test_the_gate_writes_nothing_into_the_runs(tmp_path: Path, runs: tuple[Path, Path]) -> None:
    base, worse = runs
    dataset = (base / "dataset.jsonl").read_bytes()
    for option, target in (("--junit", base / "dataset.jsonl"),
                           ("--markdown", worse / "judgements" / "rag.jsonl")):  # fmt: skip
        before = target.read_bytes()
        result = ragaudit("gate", str(base), str(worse), option, str(target), cwd=tmp_path)
        assert result.returncode == 2 and "inside the run folder" in result.stderr
        assert target.read_bytes() == before
    assert (base / "dataset.jsonl").read_bytes() == dataset


def test_a_baseline_judged_on_part_of_its_dataset_is_no_pass(tmp_path: Path) -> None:
    """A baseline whose judge was interrupted (40 of 100 groups judged) made a candidate
    that lost every answer in the other 60 groups look fully covered: PASS (fifth pass)."""
    right = verdicts(1, 0.8)
    base = judged_run(tmp_path / "base", {"rag": right})
    worse = right.copy()
    worse[40:] = False
    cand = judged_run(tmp_path / "cand", {"rag": worse})
    path = base / "judgements" / "rag.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:160]))
    result = ragaudit("gate", str(base), str(cand), cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    said = " ".join(result.stdout.split())
    assert "the baseline scored 160 of the 400 queries of its dataset" in said
    assert "40 / 100 (160 / 400)" in said and "UNTESTABLE" in said
    with pytest.raises(AssertionError, match="UNTESTABLE"):
        ra.assert_no_regression(base, cand)


def test_identical_runs_sharing_judge_failures_still_pass(tmp_path: Path) -> None:
    """A query neither run could score (the same judge failure in both) is no loss of the
    candidate's: identical runs pass, whatever the baseline left unscored."""
    import json

    right = verdicts(3, 0.7)
    runs = [judged_run(tmp_path / name, {"rag": right}) for name in ("base", "same")]
    for run in runs:
        path = run / "judgements" / "rag.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for row in rows[::6]:  # about 17% of the queries, the same in both runs
            row["correct"], row["method"] = None, "judge-failed"
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = ragaudit("gate", str(runs[0]), str(runs[1]), cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert "the baseline scored 333 of the 400 queries of its dataset" in " ".join(
        result.stdout.split()
    )
