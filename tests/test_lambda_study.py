"""The lambda study (``analyze --lambda-study``): accuracy and R with the share of queries
in gap groups set by resampling whole groups. On sets built so that the answer is known:
R stays where it is while accuracy follows R x (1 - lambda); every target it cannot reach
is null with why; the draws are the seed's; the figure at the observed lambda is the
summary's. On the GRAMMAR paper's Aurp results, the figures docs/analyze.md shows."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from ragaudit.analysis import analyze
from ragaudit.analysis.lambda_study import (
    TOLERANCE,
    check_targets,
    example_verdicts,
    lambda_side,
    lambda_study,
)
from ragaudit.analysis.metrics import Example
from ragaudit.analysis.summary import LambdaSide, Summary
from ragaudit.steps.inputs import read_neutral


def _verdicts(
    nongap: list[tuple[int, int]], gaps: list[int], prefix: str = "g"
) -> dict[str, tuple[int, int]]:
    """Groups: the non-gap ones as (correct, total), then gap groups of these sizes."""
    out = {f"{prefix}{i:03d}": counts for i, counts in enumerate(nongap)}
    out |= {f"{prefix}{len(nongap) + i:03d}": (0, size) for i, size in enumerate(gaps)}
    return out


# 60 groups outside the gaps, three queries each, 2 of 3 right on average (R = 120/180),
# and 60 gap groups of three: lambda 0.5. Every group the same size, so a target's lambda is
# the same in every draw.
EVEN = _verdicts([(3, 3)] * 20 + [(2, 3)] * 20 + [(1, 3)] * 20, [3] * 60)
R_EVEN = 120 / 180


def _point(side: LambdaSide, target: float):  # type: ignore[no-untyped-def]
    return next(p for p in side.points if p.target == target)


def test_r_stays_while_accuracy_follows_r_times_one_minus_lambda() -> None:
    targets = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    side = lambda_side(EVEN, targets, draws=400)
    assert side.observed_lambda == 0.5 and side.observed_robustness == pytest.approx(R_EVEN)
    for point in side.points:
        assert point.undefined is None and point.robustness_undefined is None
        assert point.lambda_reached and point.accuracy and point.robustness
        lam = point.lambda_reached
        # Whole groups of three: every draw keeps the same number of groups.
        assert lam.low == lam.high == pytest.approx(point.target, abs=0.02)
        assert point.kept == ("non-gap" if point.target <= 0.5 else "gap")
        if point.target <= 0.5:
            # Every group outside the gaps is kept: R cannot move, in any draw.
            assert point.robustness.low == point.robustness.high == pytest.approx(R_EVEN)
        else:
            # The groups outside the gaps are subsampled: R moves between draws (more the
            # fewer are kept), around the same value.
            assert point.robustness.low < R_EVEN < point.robustness.high
            assert point.robustness.mean == pytest.approx(R_EVEN, abs=0.02)
        # In each draw accuracy = R x (1 - lambda), and lambda is the same in every draw.
        assert point.accuracy.mean == pytest.approx(point.robustness.mean * (1 - lam.mean))
    accuracies = [p.accuracy.mean for p in side.points if p.accuracy]
    assert accuracies == sorted(accuracies, reverse=True)  # accuracy falls as lambda rises
    assert accuracies[0] - accuracies[-1] > 0.5


def test_groups_of_different_sizes_reach_each_target_within_the_tolerance() -> None:
    rng = random.Random(7)
    nongap = []
    for _ in range(50):
        size = rng.randint(1, 5)
        nongap.append((rng.randint(1, size), size))
    verdicts = _verdicts(nongap, [rng.randint(1, 5) for _ in range(50)])
    side = lambda_side(verdicts, [0.1, 0.3, 0.5, 0.7, 0.9], draws=300)
    for point in side.points:
        assert point.undefined is None and point.lambda_reached is not None
        assert abs(point.lambda_reached.mean - point.target) <= TOLERANCE
        assert point.lambda_reached.low < point.lambda_reached.high  # sizes differ: it moves
        assert point.accuracy is not None and point.robustness is not None
        # accuracy = R x (1 - lambda) in each draw; over draws, up to how they covary.
        expected = point.robustness.mean * (1 - point.lambda_reached.mean)
        assert point.accuracy.mean == pytest.approx(expected, abs=0.01)


def test_a_target_that_cannot_be_reached_is_null_with_why() -> None:
    no_gap = lambda_side(_verdicts([(2, 3), (3, 3)], []), [0.0, 0.5])
    reached, raised = no_gap.points
    assert reached.undefined is None and reached.accuracy is not None
    assert reached.lambda_reached is not None and reached.lambda_reached.mean == 0.0
    assert raised.accuracy is raised.robustness is raised.lambda_reached is None
    assert (
        raised.undefined == "no gap group: lambda is 0 here, and leaving groups out cannot raise it"
    )

    all_gaps = lambda_side(_verdicts([], [3, 3]), [0.5, 1.0])
    lowered, whole = all_gaps.points
    assert all_gaps.observed_robustness is None  # R is undefined: every group is a gap
    assert lowered.accuracy is None and lowered.undefined is not None
    assert lowered.undefined.startswith("every group is a gap: lambda is 1 here")
    assert whole.accuracy is not None and whole.accuracy.mean == 0.0
    assert whole.robustness is None and whole.robustness_undefined == "every group is a gap"

    # Four groups of three, two of them gaps: lambda can be 0, 1/3, 1/2, 2/3 or 1 only.
    coarse = lambda_side(_verdicts([(3, 3), (2, 3)], [3, 3]), [0.25, 0.35, 0.8])
    far, near, high = coarse.points
    assert far.accuracy is None and far.robustness is None
    assert far.undefined == "whole groups bring lambda no nearer than 0.333 to 0.25"
    assert far.lambda_reached is not None  # what the draws did reach is still said
    assert near.undefined is None and near.accuracy is not None
    assert high.undefined == "whole groups bring lambda no nearer than 0.667 to 0.8"


def test_one_query_per_group_leaves_lambda_undefined() -> None:
    side = lambda_side({f"g{i}": (i % 2, 1) for i in range(10)}, [0.2, 0.5])
    assert side.undefined is not None and side.undefined.startswith("one query per group")
    assert side.observed_lambda is None and side.observed_robustness is None
    assert side.observed_accuracy == 0.5
    assert all(p.undefined == side.undefined and p.accuracy is None for p in side.points)


def test_r_undefined_in_some_draws_is_counted_and_left_out_of_its_mean() -> None:
    # One group of two queries outside the gaps among single queries: a draw that keeps
    # few groups outside the gaps often leaves it out, and R is not measured there.
    verdicts = _verdicts([(1, 2)] + [(1, 1)] * 9, [1] * 10)
    point = lambda_side(verdicts, [0.8], draws=200).points[0]
    assert point.accuracy is not None and point.robustness is not None
    assert point.robustness_undefined is not None
    assert point.robustness_undefined.startswith("one query per group in ")
    missing = int(point.robustness_undefined.split(" in ")[1].split(" of ")[0])
    assert 0 < missing < 200 and point.robustness.draws == 200 - missing
    assert point.accuracy.draws == 200


def test_the_summary_holds_no_nan_and_reads_back() -> None:
    verdicts = {
        ("rag", "short"): _verdicts([(2, 3)] * 5, [3] * 5),
        ("rag", "long"): {f"g{i}": (1, 1) for i in range(4)},  # one query per group
        ("down", "short"): _verdicts([], [2, 2]),  # every group a gap
    }
    study = lambda_study(verdicts, [0.0, 0.5, 1.0], draws=20)
    text = Summary(retrieval_rule="all_gold", systems={}, lambda_study=study).model_dump_json()
    assert "NaN" not in text and "Infinity" not in text
    assert Summary.model_validate_json(text).lambda_study == study
    json.loads(text)  # strict JSON


def test_the_draws_are_the_seeds() -> None:
    sides = {("rag", "long"): EVEN}
    first = lambda_study(sides, [0.8], draws=100, seed=3)
    assert lambda_study(sides, [0.8], draws=100, seed=3) == first
    other = lambda_study(sides, [0.8], draws=100, seed=4)
    assert other.systems["rag"]["long"] != first.systems["rag"]["long"]
    # Adding a system, or a target, changes none of the draws already made.
    more = lambda_study({**sides, ("bm25", "long"): EVEN}, [0.3, 0.8], draws=100, seed=3)
    assert _point(more.systems["rag"]["long"], 0.8) == _point(first.systems["rag"]["long"], 0.8)
    # The same groups under another system's name are drawn apart.
    assert more.systems["bm25"]["long"] != more.systems["rag"]["long"]


def test_targets_are_checked() -> None:
    assert check_targets([0.9, 0.1, 0.1]) == (0.1, 0.9)
    for wrong in ([], [-0.1], [1.01], [math.nan], [True]):
        with pytest.raises(ValueError):
            check_targets(wrong)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one draw"):
        lambda_side(EVEN, [0.5], draws=0)


def test_the_observed_figures_are_the_summarys() -> None:
    rng = random.Random(11)
    examples = []
    for system in ("rag", "bm25"):
        for g in range(40):
            skill = rng.random()
            for variant in ("short", "long"):
                for i in range(rng.randint(1, 4)):
                    ok = g % 3 != 0 and rng.random() < skill
                    qid = f"{system}{g}{variant}{i}"
                    examples.append(Example(qid, f"g{g}", variant, ok, system=system))
    study = lambda_study(example_verdicts(examples), [0.5], draws=10)
    for system, figures in analyze(examples).systems.items():
        for variant, m in figures.variants.items():
            side = study.systems[system][variant]
            assert side.observed_accuracy == m.accuracy.value
            assert side.observed_robustness == m.robustness.value
            assert side.observed_lambda == m.gap_fraction.value
            assert (side.groups, side.gap_groups) == (m.n_groups, m.groups["gap"])
            assert (side.queries, side.queries_in_gaps) == (m.n_queries, m.gap_fraction.k)


# --- the GRAMMAR paper's Aurp results (docs/analyze.md, "The λ study") ------------------------

# What docs/analyze.md shows of the study on the unbalanced files (500 draws, seed 0):
# (variant, target) -> (lambda reached, accuracy, R), each the mean over the draws.
AURP_SWEEP = {
    ("long", 0.1): (0.100, 0.867, 0.963),
    ("long", 0.2): (0.201, 0.769, 0.963),
    ("long", 0.3): (0.301, 0.674, 0.963),
    ("long", 0.4): (0.400, 0.578, 0.963),
    ("long", 0.5): (0.498, 0.483, 0.963),
    ("long", 0.6): (0.601, 0.384, 0.963),
    ("long", 0.7): (0.705, 0.284, 0.963),
    ("long", 0.8): (0.803, 0.190, 0.964),
    ("long", 0.9): (0.891, 0.106, 0.964),
    ("short", 0.1): (0.102, 0.857, 0.955),
    ("short", 0.2): (0.200, 0.764, 0.955),
    ("short", 0.3): (0.302, 0.667, 0.955),
    ("short", 0.4): (0.397, 0.575, 0.955),
    ("short", 0.5): (0.500, 0.477, 0.955),
    ("short", 0.6): (0.600, 0.382, 0.955),
    ("short", 0.7): (0.701, 0.286, 0.955),
    ("short", 0.8): (0.801, 0.190, 0.954),
    ("short", 0.9): (0.897, 0.099, 0.956),
}


def _aurp(root: Path, split: str) -> list[Example]:
    return [
        ex
        for variant in ("short", "long")
        for ex in read_neutral(
            root / f"aurp_{variant}_{split}.jsonl", system="aurp", rule="same_set"
        )
    ]


def test_aurp_accuracy_differs_by_lambda_alone(grammar_reference: Path) -> None:
    """Unbalanced, short and long differ in accuracy (0.27 vs 0.51) because their lambdas
    do (0.72 vs 0.47); set to one lambda, their accuracies agree within 0.01, as their R
    do, at every target."""
    examples = _aurp(grammar_reference, "unbalanced")
    study = lambda_study(example_verdicts(examples), seed=0)  # 0.1 to 0.9, 500 draws
    sides = study.systems["aurp"]
    assert round(sides["short"].observed_lambda or 0, 2) == 0.72
    assert round(sides["long"].observed_lambda or 0, 2) == 0.47
    for (variant, target), (lam, acc, rob) in AURP_SWEEP.items():
        point = _point(sides[variant], target)
        assert point.lambda_reached and point.accuracy and point.robustness
        shown = (point.lambda_reached.mean, point.accuracy.mean, point.robustness.mean)
        assert tuple(round(x, 3) for x in shown) == (lam, acc, rob), (variant, target)
    for target in study.targets:
        short, long = _point(sides["short"], target), _point(sides["long"], target)
        assert short.accuracy and long.accuracy
        assert abs(short.accuracy.mean - long.accuracy.mean) < 0.011


# Table 2 of grammar-v1 in the layout of the paper ("robust" = short queries,
# "non-robust" = long), rows: (figure, sampling, modular evaluation) -> (short, long): the
# paper's numbers, and those of the reference files (docs/analyze.md shows both).
TABLE2_PAPER = {
    ("accuracy", "unbalanced", False): (0.31, 0.43),
    ("accuracy", "unbalanced", True): (0.36, 0.46),
    ("accuracy", "balanced", False): (0.31, 0.29),
    ("accuracy", "balanced", True): (0.38, 0.35),
    ("robustness", "unbalanced", False): (0.84, 0.85),
    ("robustness", "unbalanced", True): (0.99, 0.93),
    ("robustness", "balanced", False): (0.78, 0.74),
    ("robustness", "balanced", True): (0.94, 0.87),
}
TABLE2_FILES = {
    ("accuracy", "unbalanced", False): (0.27, 0.51),
    ("accuracy", "unbalanced", True): (0.29, 0.51),
    ("accuracy", "balanced", False): (0.27, 0.28),
    ("accuracy", "balanced", True): (0.29, 0.28),
    ("robustness", "unbalanced", False): (0.95, 0.96),
    ("robustness", "unbalanced", True): (1.00, 0.98),
    ("robustness", "balanced", False): (0.96, 0.96),
    ("robustness", "balanced", True): (1.00, 0.98),
}


def test_aurp_table_2_from_the_summarys_figures(grammar_reference: Path) -> None:
    """The stratified-vs-unbalanced comparison is the summary's own figures on the two
    splits: accuracy and R, alone and with the retrieval module judged alone (the paper's
    modular evaluation, ContextComp: accuracy_retrieval and robustness_retrieval)."""
    field = {
        ("accuracy", False): "accuracy",
        ("accuracy", True): "accuracy_retrieval",
        ("robustness", False): "robustness",
        ("robustness", True): "robustness_retrieval",
    }
    found = {}
    counts = {}  # the counts docs/analyze.md gives beside the table
    for split in ("unbalanced", "balanced"):
        variants = analyze(_aurp(grammar_reference, split)).systems["aurp"].variants
        for variant, m in variants.items():
            assert m.accuracy_retrieval and m.robustness_retrieval
            counts[split, variant] = (
                round(m.gap_fraction.value or 0, 3),
                (m.accuracy.k, m.accuracy.n),
                (m.accuracy_retrieval.k, m.accuracy_retrieval.n),
                (m.robustness.k, m.robustness.n),
                (m.robustness_retrieval.k, m.robustness_retrieval.n),
            )
        for (figure, modular), name in field.items():
            cells = []
            for variant in ("short", "long"):
                value = getattr(variants[variant], name).value
                assert value is not None
                cells.append(round(value, 2))
            found[figure, split, modular] = tuple(cells)
    assert found == TABLE2_FILES
    assert counts == {
        ("unbalanced", "short"): (0.720, (84, 314), (90, 314), (84, 88), (88, 88)),
        ("unbalanced", "long"): (0.475, (130, 257), (132, 257), (130, 135), (132, 135)),
        ("balanced", "short"): (0.713, (129, 471), (135, 471), (129, 135), (135, 135)),
        ("balanced", "long"): (0.713, (130, 471), (132, 471), (130, 135), (132, 135)),
    }
    assert set(found) == set(TABLE2_PAPER)
    # The paper's claim holds on the files where lambda is the same (balanced): accuracy
    # no longer puts long ahead, and with modular evaluation short is ahead on R. Where it
    # differs (unbalanced), accuracy puts long ahead by 0.24, all of it lambda's.
    assert (
        found["accuracy", "unbalanced", False][1] - found["accuracy", "unbalanced", False][0] > 0.2
    )
    assert (
        abs(found["accuracy", "balanced", False][0] - found["accuracy", "balanced", False][1])
        < 0.02
    )
    short_r, long_r = found["robustness", "balanced", True]
    assert short_r > long_r


# --- both doors, and the report -----------------------------------------------------------


def _neutral(path: Path) -> Path:
    """Neutral results of two systems in two wordings: 'short' with a third of its groups
    gaps, 'long' with two thirds, the same R outside them."""
    rows = []
    for system in ("rag", "bm25"):
        for g in range(30):
            for variant in ("short", "long"):
                gap = g % 3 == 0 if variant == "short" else g % 3 != 2
                for i in range(3):
                    rows.append(
                        {
                            "system": system,
                            "query_id": f"{system}-{g}-{variant}-{i}",
                            "group_id": f"g{g}",
                            "template_id": "t1",
                            "variant": variant,
                            "query": f"question {g} {variant} {i}",
                            "reference": f"a{g}",
                            "response": "",
                            "retrieved_ids": [f"d{g}"],
                            "gold_ids": [f"d{g}"],
                            "correct": not gap and (i < 2 or g % 2 == 0),
                        }
                    )
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_both_doors_write_the_study_and_the_report_draws_it(tmp_path: Path) -> None:
    import ragaudit as ra
    from tests.support.cli import ragaudit

    results = _neutral(tmp_path / "results.jsonl")
    cli, py = tmp_path / "cli", tmp_path / "py"
    cli.mkdir()
    args = ["--lambda-target", "0.2", "--lambda-target", "0.5", "--lambda-draws", "50"]
    done = ragaudit("analyze", "--neutral", str(results), *args, cwd=cli)
    assert done.returncode == 0, done.stderr
    assert "Accuracy and R against lambda (50 draws of whole groups each)" in done.stdout
    written = Summary.model_validate_json((cli / "runs/default/summary.json").read_text())
    study = written.lambda_study
    assert study is not None and study.targets == [0.2, 0.5] and study.draws == 50
    assert set(study.systems) == {"rag", "bm25"} and set(study.systems["rag"]) == {"short", "long"}
    markdown = (cli / "runs/default/summary.md").read_text()
    assert "Accuracy and R against lambda (analyze --lambda-study)" in markdown
    assert "| rag | long | 0.2 |" in markdown

    summary = ra.Project(root=py, progress="none").analyze(
        neutral=[results], lambda_targets=[0.5, 0.2], lambda_draws=50
    )
    assert summary.lambda_study == study  # the same files give the same study
    frame = summary.lambda_to_pandas()
    assert len(frame) == 2 * 2 * 2 and not frame.accuracy.isna().any()
    # Set to one lambda, the two wordings' accuracies agree, as their R do.
    at = frame[frame.target == 0.2].groupby("variant").accuracy.mean()
    assert abs(at["short"] - at["long"]) < 0.03
    observed = frame.groupby("variant").observed_accuracy.mean()
    assert observed["short"] - observed["long"] > 0.2
    # Without the flag there is no study; with it alone, the default targets.
    assert ra.Project(root=py, progress="none").analyze(neutral=[results]).lambda_study is None
    default = ra.Project(root=py, progress="none").analyze(
        neutral=[results], lambda_study=True, lambda_draws=5
    )
    assert default.lambda_study is not None
    assert default.lambda_study.targets == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    with pytest.raises(ra.UserError, match="lambda-target"):
        ra.Project(root=py, progress="none").analyze(neutral=[results], lambda_targets=[1.5])

    done = ragaudit("report", cwd=cli)
    assert done.returncode == 0, done.stderr
    html = (cli / "runs/default/report.html").read_text()
    chart = html.split('id="chart-lambda"', 1)[1].split("</figure>", 1)[0]
    assert "<svg" in chart and "</svg>" in chart
    assert (
        'id="lambda-table"' in html and '<td>rag</td><td>long</td><td class="num">0.2</td>' in html
    )
    assert "http://" not in chart.replace("http://www.w3.org/", "")  # nothing fetched


def test_the_command_refuses_a_target_outside_zero_to_one(tmp_path: Path) -> None:
    from tests.support.cli import ragaudit

    results = _neutral(tmp_path / "results.jsonl")
    done = ragaudit("analyze", "--neutral", str(results), "--lambda-target", "1.5", cwd=tmp_path)
    assert done.returncode != 0 and "--lambda-target" in done.stderr
    assert not (tmp_path / "runs/default/summary.json").exists()
