"""The gate cannot pass a broken candidate: too few groups in common, a system missing, a
different dataset, a check too weak to mean anything; and CI always gets its JUnit file.
Then a chaos test over generated pairs of runs."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from ragaudit.analysis.gate import detectable_drop, gate_check, smallest_p
from ragaudit.analysis.significance import PairedCounts
from ragaudit.errors import UserError
from ragaudit.steps.gate import assert_no_regression, gate_markdown, gate_runs
from tests.support.cli import ragaudit
from tests.support.judged_runs import judged_run, verdicts


def _suite(path: Path) -> ET.Element:
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    return suite


def _cases(path: Path) -> dict[str, ET.Element]:
    return {c.get("name", ""): c for c in _suite(path).iter("testcase")}


# -- 1. too few groups in common ------------------------------------------------------------


def test_four_shared_groups_all_wrong_are_untestable_not_a_pass(tmp_path: Path) -> None:
    everything_right = np.ones((300, 4), dtype=bool)
    baseline = judged_run(tmp_path / "base", {"rag": everything_right})
    # An interrupted candidate: 4 groups asked, every answer wrong.
    partial = judged_run(
        tmp_path / "partial", {"rag": np.zeros((4, 4), dtype=bool)}, groups=[0, 1, 2, 3]
    )
    junit = tmp_path / "gate.xml"
    result = ragaudit("gate", str(baseline), str(partial), cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert "covers 16 of the baseline's 1200 queries (1%), below the 90% asked" in result.stdout
    # Even where any coverage is allowed, 4 groups cannot fail a check.
    result = ragaudit(
        "gate", str(baseline), str(partial), "--min-coverage", "0", "--junit", str(junit),
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout
    assert "ragaudit gate: UNTESTABLE" in result.stdout
    assert "smallest p-value is 0.0625" in result.stdout  # 2^-4: no candidate could fail
    assert "| 1.000 | 0.000 | -1.000" in result.stdout  # the figures are still shown
    assert "| 4 / 300 (16 / 1200) |" in result.stdout  # what the candidate covers
    (case,) = _suite(junit).iter("testcase")
    error = case.find("error")
    assert error is not None and error.get("type") == "untestable"
    # --allow-partial skips untestable checks, but a gate that tested nothing is no pass.
    result = ragaudit(
        "gate", str(baseline), str(partial), "--allow-partial", "--min-coverage", "0",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    with pytest.raises(AssertionError, match="UNTESTABLE"):
        assert_no_regression(baseline, partial, min_coverage=0.0)


def test_a_small_pass_says_what_drop_it_would_miss_and_can_be_refused(tmp_path: Path) -> None:
    base = verdicts(4, 0.7, groups=11)
    cand = base.copy()
    cand[:3, 0] = False  # a few answers lost
    baseline = judged_run(tmp_path / "base", {"rag": base})
    candidate = judged_run(tmp_path / "cand", {"rag": cand})
    report = gate_runs(baseline, candidate)
    (check,) = report.checks
    assert check.status == "pass" and report.exit_code == 0
    assert check.detectable is not None and check.detectable > 0.2  # 11 groups see little
    result = ragaudit("gate", str(baseline), str(candidate), cwd=tmp_path)
    assert result.returncode == 0
    assert f"a drop smaller than {check.detectable:.3f} can pass unnoticed" in result.stdout
    result = ragaudit(
        "gate", str(baseline), str(candidate), "--max-undetectable", "0.1", cwd=tmp_path
    )
    assert result.returncode == 2
    assert "too weak" in result.stdout and "more than the 0.1 allowed" in result.stdout


def test_min_coverage_refuses_a_candidate_that_skipped_groups(tmp_path: Path) -> None:
    base = verdicts(5, 0.7, groups=100)
    baseline = judged_run(tmp_path / "base", {"rag": base})
    half = judged_run(tmp_path / "half", {"rag": base[:50]}, groups=list(range(50)))
    # 50 identical groups pass when any coverage is allowed; by default they cover too little.
    assert gate_runs(baseline, half, min_coverage=0.0).exit_code == 0
    report = gate_runs(baseline, half)
    assert report.exit_code == 2
    assert "covers 200 of the baseline's 400 queries (50%)" in (report.checks[0].reason or "")


# -- 2. a system missing from the candidate -------------------------------------------------


def test_a_system_missing_from_the_candidate_fails_and_is_a_junit_case(tmp_path: Path) -> None:
    v = verdicts(6, 0.7)
    baseline = judged_run(tmp_path / "base", {"rag": v, "bm25": v})
    candidate = judged_run(tmp_path / "cand", {"rag": v})
    junit = tmp_path / "gate.xml"
    result = ragaudit("gate", str(baseline), str(candidate), "--junit", str(junit), cwd=tmp_path)
    assert result.returncode == 1, result.stdout
    assert "the candidate lacks the baseline's bm25" in result.stdout
    cases = _cases(junit)
    assert set(cases) == {"rag accuracy", "bm25 accuracy"}
    failure = cases["bm25 accuracy"].find("failure")
    assert failure is not None and failure.get("type") == "missing"
    result = ragaudit(
        "gate", str(baseline), str(candidate), "--missing", "skip", "--junit", str(junit),
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout
    assert _cases(junit)["bm25 accuracy"].find("skipped") is not None


def test_a_candidate_system_that_stopped_answering_is_missing(tmp_path: Path) -> None:
    v = verdicts(7, 0.7)
    baseline = judged_run(tmp_path / "base", {"rag": v})
    candidate = judged_run(tmp_path / "cand", {"rag": v})
    # Every response of the candidate's system lost its answer (retrieval only now).
    path = candidate / "responses" / "rag.jsonl"
    path.write_text(path.read_text().replace('"response":"yes"', '"response":null').replace(
        '"response":"no"', '"response":null'))  # fmt: skip
    report = gate_runs(baseline, candidate)
    (check,) = report.checks
    assert check.status == "missing" and report.exit_code == 1
    assert "gives no answers" in (check.reason or "")


# -- 3. different datasets -------------------------------------------------------------------


def test_runs_over_different_questions_under_the_same_ids_are_not_paired(
    tmp_path: Path,
) -> None:
    v = verdicts(8, 0.7)
    baseline = judged_run(tmp_path / "base", {"rag": v})
    other = judged_run(tmp_path / "other", {"rag": v}, question="another question {g} {w}")
    junit = tmp_path / "gate.xml"
    result = ragaudit("gate", str(baseline), str(other), "--junit", str(junit), cwd=tmp_path)
    assert result.returncode == 2
    assert "share no question" in result.stderr and "Traceback" not in result.stderr
    (case,) = _suite(junit).iter("testcase")  # 4. the JUnit file is written on exit 2
    assert case.find("error") is not None and "share no question" in (
        case.find("error").get("message") or ""  # type: ignore[union-attr]
    )
    # Ten groups whose reference moved are left out and counted; the rest are paired.
    moved = judged_run(tmp_path / "moved", {"rag": v}, answer="{g}")
    dataset = moved / "dataset.jsonl"
    lines = dataset.read_text().splitlines()
    changed = [
        line.replace('"values":["', '"values":["x') if '"group_id":"g1' in line else line
        for line in lines
    ]  # groups g1, g10..g19: eleven groups
    dataset.write_text("\n".join(changed) + "\n")
    report = gate_runs(baseline, moved)
    assert report.checks[0].n_groups == 89
    assert any(
        note.startswith("11 of the baseline's 100 groups ask other questions")
        for note in report.notes
    )


def test_a_gate_that_cannot_start_still_writes_its_junit_file(tmp_path: Path) -> None:
    baseline = judged_run(tmp_path / "base", {"rag": verdicts(1, 0.7)})
    junit, md = tmp_path / "gate.xml", tmp_path / "gate.md"
    (tmp_path / "empty").mkdir()
    result = ragaudit(
        "gate", str(baseline), str(tmp_path / "empty"), "--junit", str(junit),
        "--markdown", str(md), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    suite = _suite(junit)
    assert (suite.get("tests"), suite.get("errors")) == ("1", "1")
    assert "no dataset.jsonl" in md.read_text()


# -- the statistics behind it ---------------------------------------------------------------


def _counts(base: np.ndarray, cand: np.ndarray) -> PairedCounts:
    n = np.full(base.shape[0], base.shape[1])
    groups = [f"g{i}" for i in range(base.shape[0])]
    return PairedCounts(groups, base.sum(axis=1), n, cand.sum(axis=1), n)


@pytest.mark.parametrize("groups", [1, 2, 3, 4, 5, 8])
def test_the_smallest_p_value_is_two_to_the_minus_groups(groups: int) -> None:
    counts = _counts(np.ones((groups, 2), bool), np.ones((groups, 2), bool))
    assert smallest_p(counts) == pytest.approx(2.0**-groups)
    check = gate_check(
        "s", "accuracy", _counts(np.ones((groups, 2), bool), np.zeros((groups, 2), bool))
    )
    assert (check.status == "untestable") == (2.0**-groups >= 0.05)
    if check.status != "untestable":
        assert check.status == "regression"  # everything lost on 5+ groups is caught


def test_the_stated_detectable_drop_is_found_about_80_percent_of_the_time() -> None:
    """Simulated candidates (independent reruns, each correct answer then lost with the
    chance that removes the stated drop) are caught near the power the gate states."""
    rng = np.random.default_rng(11)
    for groups, wordings in ((100, 4), (100, 1), (20, 4)):

        def pair(drop: float, groups: int = groups, wordings: int = wordings) -> PairedCounts:
            p = rng.uniform(0.2, 0.9, size=groups)
            base = rng.random((groups, wordings)) < p[:, None]
            cand = rng.random((groups, wordings)) < p[:, None]
            if drop:
                cand &= ~(rng.random((groups, wordings)) < drop / cand.mean())
            return _counts(base, cand)

        stated = float(np.median([detectable_drop(pair(0.0), 0.05) for _ in range(40)]))
        caught = np.mean(
            [
                gate_check("s", "accuracy", pair(stated), n_perm=500, seed=i).status == "regression"
                for i in range(200)
            ]
        )
        assert 0.68 <= caught <= 0.92, (groups, wordings, stated, caught)


# -- chaos: generated pairs of runs ----------------------------------------------------------


def _scenario(kind: str, rng: np.random.Generator, root: Path) -> tuple[Path, Path]:
    groups = int(rng.integers(30, 120))
    wordings = int(rng.integers(1, 5))
    base = rng.random((groups, wordings)) < rng.uniform(0.5, 0.95)
    systems = {"rag": base, "bm25": rng.random((groups, wordings)) < 0.6}
    baseline = judged_run(root / "base", systems)
    if kind == "identical":
        return baseline, judged_run(root / "cand", systems)
    if kind == "worse":  # a clear drop: 60% of the right answers of one system lost
        worse = base & (rng.random(base.shape) < 0.4)
        return baseline, judged_run(root / "cand", {**systems, "rag": worse})
    if kind == "partial":  # interrupted after a handful of groups
        k = int(rng.integers(1, 5))
        part = {s: v[:k] for s, v in systems.items()}
        return baseline, judged_run(root / "cand", part, groups=list(range(k)))
    if kind == "missing":
        return baseline, judged_run(root / "cand", {"rag": base})
    if kind == "other-dataset":
        return baseline, judged_run(root / "cand", systems, question="other {g} {w}")
    if kind == "half-judged":  # the candidate's judge stopped after a third of the queries
        cand = judged_run(root / "cand", systems)
        for name in systems:
            path = cand / "judgements" / f"{name}.jsonl"
            lines = path.read_text().splitlines()
            path.write_text("\n".join(lines[: len(lines) // 3]) + "\n")
        return baseline, cand
    if kind == "failed-wrong":  # every wrong answer of a worse run became a judge failure
        worse = base & (rng.random(base.shape) < 0.4)
        cand = judged_run(root / "cand", {**systems, "rag": worse})
        _judge_fail(
            cand,
            "rag",
            {f"q{g}-{w}" for g in range(groups) for w in range(wordings) if not worse[g, w]},
        )
        return baseline, cand
    raise AssertionError(kind)


KINDS = [
    "identical", "worse", "partial", "missing", "other-dataset", "half-judged", "failed-wrong"
]  # fmt: skip


@pytest.mark.parametrize("seed", range(6))
def test_chaos_the_gate_never_passes_a_worse_or_untestable_candidate(
    tmp_path: Path, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    for kind in KINDS:
        root = tmp_path / kind
        baseline, candidate = _scenario(kind, rng, root)
        try:
            code = gate_runs(baseline, candidate, seed=seed).exit_code
        except UserError:
            code = 2
        if kind == "identical":
            assert code == 0, kind
        else:
            assert code != 0, kind
    # The same through the command line, for one scenario of each kind.
    if seed == 0:
        for kind in KINDS:
            root = tmp_path / f"cli-{kind}"
            baseline, candidate = _scenario(kind, np.random.default_rng(99), root)
            result = ragaudit("gate", str(baseline), str(candidate), cwd=tmp_path)
            assert (result.returncode == 0) == (kind == "identical"), (kind, result.stdout)
            assert "Traceback" not in result.stderr


# -- messages that say why ------------------------------------------------------------------


def test_compare_says_why_matching_retrieval_only_systems_are_left_out(tmp_path: Path) -> None:
    v = verdicts(12, 0.7, groups=20)
    run = judged_run(tmp_path / "runs" / "r", {"rag": v, "ret-a": v, "ret-b": v})
    for name in ("ret-a", "ret-b"):  # retrieval only: no answers
        path = run / "responses" / f"{name}.jsonl"
        text = path.read_text().replace('"response":"yes"', '"response":null')
        path.write_text(text.replace('"response":"no"', '"response":null'))
    (tmp_path / "ragaudit.yaml").write_text("run: {name: r}\n")
    result = ragaudit("compare", "--metric", "accuracy", "--system", "ret-*", cwd=tmp_path)
    assert result.returncode == 2
    assert "every system matching ret-* is left out of accuracy" in result.stderr
    assert "ret-a gives no answers (retrieval only)" in result.stderr


def test_the_gate_names_only_the_metrics_it_checks(tmp_path: Path) -> None:
    run = judged_run(tmp_path / "r", {"rag": verdicts(1, 0.7, groups=10)})
    result = ragaudit("gate", str(run), str(run), "--metric", "recall@0", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown metric 'recall@0'" in result.stderr
    assert "reference-free" not in result.stderr


# -- a second hostile pass: coverage by queries, identical runs, options ------------------


def _judge_fail(run: Path, system: str, query_ids: set[str]) -> None:
    """Turn these queries' verdicts into judge failures (correct null, judge-failed)."""
    path = run / "judgements" / f"{system}.jsonl"
    lines = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row["query_id"] in query_ids:
            row["correct"], row["method"] = None, "judge-failed"
        lines.append(json.dumps(row))
    path.write_text("\n".join(lines) + "\n")


def test_a_half_judged_or_judge_failed_candidate_is_not_a_pass(tmp_path: Path) -> None:
    base = verdicts(21, 0.75)
    baseline = judged_run(tmp_path / "base", {"rag": base})
    # Only the first wording of each group judged: the others' verdicts are missing.
    first = judged_run(tmp_path / "first", {"rag": base})
    path = first / "judgements" / "rag.jsonl"
    kept = [line for line in path.read_text().splitlines() if '-0"' in line]
    path.write_text("\n".join(kept) + "\n")
    report = gate_runs(baseline, first)
    assert report.exit_code == 2 and "covers 100 of the baseline's 400 queries" in (
        report.checks[0].reason or ""
    )
    assert gate_runs(baseline, first, metrics=["robustness"]).exit_code == 2
    # A worse run whose wrong answers all became judge failures: 1.000 on what is left.
    worse = verdicts(21, 0.45)
    failed = judged_run(tmp_path / "failed", {"rag": worse})
    wrong = {f"q{g}-{w}" for g in range(100) for w in range(4) if not worse[g, w]}
    _judge_fail(failed, "rag", wrong)
    report = gate_runs(baseline, failed)
    assert report.exit_code == 2, report.checks[0].sentence()
    assert any(f"no score for {len(wrong)} of the 400 queries" in n for n in report.notes)


def test_identical_runs_pass_even_where_a_check_could_not_fail(tmp_path: Path) -> None:
    rare = np.zeros((100, 4), dtype=bool)
    rare[:3, 0] = True  # an LLM-only system right in 3 groups of 100
    systems = {"rag": verdicts(22, 0.7), "llm-only": rare}
    baseline = judged_run(tmp_path / "base", systems)
    again = judged_run(tmp_path / "again", systems)
    report = gate_runs(baseline, again)
    assert report.exit_code == 0, [c.sentence() for c in report.checks]
    check = next(c for c in report.checks if c.system == "llm-only")
    assert check.note == "the same as the baseline in every paired group"
    # The same system losing its three groups cannot be told from chance: untestable.
    lost = judged_run(tmp_path / "lost", {**systems, "llm-only": np.zeros((100, 4), bool)})
    assert gate_runs(baseline, lost).exit_code == 2


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("alpha", 0.0, "alpha must be above 0"),
        ("alpha", float("nan"), "alpha must be above 0"),
        ("margin", float("nan"), "margin must be between 0 and 1"),
        ("margin", -1.0, "margin must be between 0 and 1"),
        ("max_undetectable", float("nan"), "max_undetectable must be between 0 and 1"),
        ("min_coverage", 1.5, "min_coverage must be between 0 and 1"),
        ("missing", "ignore", "missing must be 'fail' or 'skip'"),
        ("n_perm", 5, "at least 100"),
    ],
)
def test_the_gates_options_are_checked_from_python(
    tmp_path: Path, option: str, value: object, message: str
) -> None:
    run = judged_run(tmp_path / "r", {"rag": verdicts(1, 0.7, groups=20)})
    with pytest.raises(UserError, match=message):
        gate_runs(run, run, **{option: value})  # type: ignore[arg-type]


def test_names_cannot_break_the_summary_table(tmp_path: Path) -> None:
    one = judged_run(tmp_path / "one", {"a|b": verdicts(1, 0.7, groups=1, wordings=1)})
    two = judged_run(tmp_path / "two", {"a|b": verdicts(1, 0.7, groups=1, wordings=1)})
    report = gate_runs(one, two, min_coverage=0.0)
    table = [line for line in gate_markdown(report).splitlines() if line.startswith("| a")]
    assert len(table) == 1 and table[0].startswith("| a\\|b |")
    assert all(c.detectable is None or c.detectable <= 1.0 for c in report.checks)


def _two_sets(run: Path) -> None:
    """Make the second half of the run's groups document-generated (a second test set)."""
    path = run / "dataset.jsonl"
    lines = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if int(row["group_id"][1:]) % 2:
            row["source"] = "document"
        lines.append(json.dumps(row))
    path.write_text("\n".join(lines) + "\n")


def test_compare_says_when_a_system_is_ranked_on_fewer_queries(tmp_path: Path) -> None:
    systems = {f"s{i}": verdicts(30 + i, 0.5 + 0.05 * i, groups=40) for i in range(4)}
    run = judged_run(tmp_path / "runs" / "r", systems)
    _two_sets(run)
    path = run / "judgements" / "s3.jsonl"  # s3 keeps only its right answers' verdicts
    path.write_text(
        "\n".join(line for line in path.read_text().splitlines() if '"correct":true' in line) + "\n"
    )
    (tmp_path / "ragaudit.yaml").write_text("run: {name: r}\n")
    result = ragaudit("compare", "--metric", "accuracy", "--resamples", "200", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "s3 is ranked on" in result.stderr and "not comparable" in result.stderr
    assert "s3 is ranked on" in (run / "compare.md").read_text()


def test_compare_says_why_every_system_is_left_out(tmp_path: Path) -> None:
    v = verdicts(12, 0.7, groups=20)
    run = judged_run(tmp_path / "runs" / "r", {"ret-a": v, "ret-b": v})
    _two_sets(run)
    for name in ("ret-a", "ret-b"):
        path = run / "responses" / f"{name}.jsonl"
        text = path.read_text().replace('"response":"yes"', '"response":null')
        path.write_text(text.replace('"response":"no"', '"response":null'))
    (tmp_path / "ragaudit.yaml").write_text("run: {name: r}\n")
    result = ragaudit("compare", cwd=tmp_path)
    assert result.returncode == 2
    assert "every system of the run is left out of accuracy" in result.stderr
    assert "ret-a gives no answers (retrieval only)" in result.stderr
    assert "recall@K" in result.stderr


def test_a_robustness_drop_from_groups_that_became_gaps_is_caught(tmp_path: Path) -> None:
    """Groups that become gaps leave the candidate's robustness denominator, so each
    group's part depends on the others': 30 robust groups of 100 turned gaps lower R from
    0.850 to 0.786, which sign flips of the groups' linear parts call chance (p 0.16). The
    sides are swapped and both R recomputed instead."""
    base = np.zeros((100, 4), dtype=bool)
    base[:70] = True  # 70 robust groups
    base[70:, :2] = True  # 30 groups right in half their wordings
    cand = base.copy()
    cand[:30] = False  # 30 of the robust groups are now gaps
    baseline = judged_run(tmp_path / "base", {"rag": base})
    candidate = judged_run(tmp_path / "cand", {"rag": cand})
    (check,) = gate_runs(baseline, candidate, metrics=["robustness"]).checks
    assert check.difference == pytest.approx(0.786 - 0.85, abs=1e-3)
    assert check.status == "regression", check.sentence()
    assert check.detectable is not None and check.detectable < 0.1


def test_the_gate_refuses_an_output_path_before_its_work(tmp_path: Path) -> None:
    run = judged_run(tmp_path / "r", {"rag": verdicts(1, 0.7, groups=20)})
    (tmp_path / "outdir").mkdir()
    result = ragaudit("gate", str(run), str(run), "--junit", str(tmp_path / "outdir"), cwd=tmp_path)
    assert result.returncode == 2 and "is a directory, not a regular file" in result.stderr
    assert "ragaudit gate:" not in result.stdout  # refused before any verdict was printed
