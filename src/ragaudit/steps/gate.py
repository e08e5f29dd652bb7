"""The ``gate`` step: a candidate run against a baseline run on the same dataset, paired by
semantic group (:mod:`ragaudit.analysis.gate`), as a one-screen markdown summary and JUnit
XML for CI systems; and :func:`assert_no_regression` for pytest."""

from __future__ import annotations

import fnmatch
import math
import xml.etree.ElementTree as ET
from pathlib import Path

from ragaudit.analysis.gate import (
    GateCheck,
    GateReport,
    MissingPolicy,
    gate_check,
    group_fingerprints,
    missing_check,
)
from ragaudit.analysis.ranking import ALL, SetScores, example_score, set_scores
from ragaudit.analysis.significance import PairedCounts
from ragaudit.errors import UserError
from ragaudit.judge.retrieval import DEFAULT_RULE, RetrievalRule
from ragaudit.records.io import read_jsonl
from ragaudit.records.models import FREE_METRICS, QueryRecord
from ragaudit.rundir import RunDir
from ragaudit.steps.compare import compare_examples

# Per system, the groups it has a scored query of (gap groups too, for R).
Scored = dict[str, set[str]]


def _scores(
    run: Path, metric: str, rule: RetrievalRule
) -> tuple[SetScores | None, dict[str, str], Scored]:
    if not run.is_dir():
        raise UserError(f"{run}: no such run directory")
    try:
        examples, left_out, score = compare_examples(RunDir(run), metric, rule)
    except UserError as err:
        raise UserError(f"{run}: {err}") from None
    scores = set_scores(examples, score, by=None, robustness=metric == "robustness").get(ALL)
    scored: Scored = {}
    for ex in examples:
        if score(ex) is not None:
            scored.setdefault(ex.system, set()).add(ex.group_id)
    return scores, left_out, scored


def _fingerprints(run: Path) -> dict[str, str]:
    rundir = RunDir(run)
    if not rundir.dataset.exists():
        raise UserError(f"{run}: no dataset.jsonl (not a run directory?)")
    try:
        return group_fingerprints(read_jsonl(rundir.dataset, QueryRecord))
    except UserError as err:
        raise UserError(f"{run}: {err}") from None


def _paired(base: SetScores, cand: SetScores, system: str, common: list[str]) -> PairedCounts:
    """The system's counts on the groups ``common`` to both runs."""
    bn, bd = base.row(system)
    cn, cd = cand.row(system)
    b_groups = {g: i for i, g in enumerate(base.groups)}
    c_groups = {g: i for i, g in enumerate(cand.groups)}
    bi = [b_groups[g] for g in common]
    ci = [c_groups[g] for g in common]
    return PairedCounts(common, bn[bi], bd[bi], cn[ci], cd[ci])


def _check_metric(metric: str) -> None:
    if metric in FREE_METRICS:
        raise UserError(
            f"the gate does not check reference-free metrics ({metric}): they are scores, "
            "not verdicts; use ragaudit compare for them"
        )
    try:
        example_score(metric)
    except ValueError:
        raise UserError(
            f"unknown metric {metric!r}: the gate checks accuracy, robustness, "
            "accuracy_retrieval, recall@K, mrr or ndcg@K (K a whole number, at least 1)"
        ) from None


def gate_runs(
    baseline: Path,
    candidate: Path,
    *,
    metrics: list[str] | None = None,
    systems: list[str] | None = None,
    margin: float = 0.0,
    alpha: float = 0.05,
    n_perm: int = 2000,
    seed: int = 0,
    rule: RetrievalRule = DEFAULT_RULE,
    allow_partial: bool = False,
    missing: MissingPolicy = "fail",
    min_coverage: float = 0.0,
    max_undetectable: float | None = None,
) -> GateReport:
    """Check every system of the baseline (or those matching ``systems``, shell patterns)
    on each metric (default accuracy; retrieval metrics need no judging): regression where
    the candidate is significantly worse than the baseline by more than ``margin``. The
    checks share ``alpha`` (Bonferroni).

    Only groups whose questions and references are the same on both runs are paired. A
    system of the baseline the candidate lacks is a failing check (``missing="skip"``: a
    skipped one). A check that could not fail on the groups it has, that pairs less than
    ``min_coverage`` of the baseline's groups, or that passes with a detectable drop over
    ``max_undetectable``, is untestable, which is not a pass unless ``allow_partial``
    (and another check was tested). Nothing to compare at all is an error."""
    metrics = list(dict.fromkeys(metrics or ["accuracy"]))  # a metric twice is checked once
    for metric in metrics:
        _check_metric(metric)
    if not 0.0 <= min_coverage <= 1.0:
        raise UserError(f"min_coverage must be between 0 and 1, not {min_coverage:g}")
    for run in (baseline, candidate):
        if not run.is_dir():
            raise UserError(f"{run}: no such run directory")
    base_prints, cand_prints = _fingerprints(baseline), _fingerprints(candidate)
    matching = {g for g, h in base_prints.items() if cand_prints.get(g) == h}
    differing = sum(1 for g, h in base_prints.items() if g in cand_prints and cand_prints[g] != h)
    if not matching:
        raise UserError(
            f"the two runs share no question: of the baseline's {len(base_prints)} groups, "
            f"{differing} ask other questions or have other references on the candidate and "
            f"{len(base_prints) - differing} are not in its dataset (not the same dataset?)"
        )
    notes: list[str] = []
    if differing:
        notes.append(
            f"{differing} of the baseline's {len(base_prints)} groups ask other questions or "
            "have other references on the candidate (the datasets differ): left out"
        )
    planned: list[tuple[str, str, PairedCounts, int]] = []
    absent: list[tuple[str, str, str, int]] = []
    for metric in metrics:
        base, base_out, base_scored = _scores(baseline, metric, rule)
        cand, cand_out, cand_scored = _scores(candidate, metric, rule)
        if base is None:
            raise UserError(f"{metric}: the baseline run {baseline} has nothing to count")
        names = list(base.systems)
        if systems:
            names = [s for s in names if any(fnmatch.fnmatchcase(s, p) for p in systems)]
        if not names:
            raise UserError(
                f"{metric}: no system of the baseline"
                + (f" matches {', '.join(systems)}" if systems else " has a scored query")
                + f" (baseline: {', '.join(base.systems) or 'none'})"
            )
        cand_systems = set(cand.systems) if cand is not None else set()
        extra = sorted(cand_systems - set(base.systems) - set(base_out))
        if extra and not systems:
            notes.append(f"{metric}: only the candidate has {', '.join(extra)}: not checked")
        for system, why in base_out.items():
            notes.append(f"{metric}: the baseline's {system} left out: {why}")
        for system in names:
            scored_b = base_scored.get(system, set())
            if system not in cand_systems or cand is None:
                lost = cand_out.get(system)
                reason = (
                    f"the candidate's {system} {lost}"
                    if lost is not None
                    else f"the candidate has no scored query of {system}"
                )
                absent.append((system, metric, reason, len(scored_b)))
                continue
            scored_c = cand_scored.get(system, set())
            common = sorted(scored_b & scored_c & matching)
            unpaired = len(scored_b - scored_c)
            if unpaired:
                notes.append(
                    f"{system} {metric}: the candidate has no scored query in {unpaired} of the "
                    f"baseline's {len(scored_b)} groups: left out of the check"
                )
            planned.append((system, metric, _paired(base, cand, system, common), len(scored_b)))
    share = alpha / max(1, len(planned))
    # The smallest p-value of random flips is 1 / (n_perm + 1): enough that every check can
    # fail (checks on up to EXACT_MAX groups are enumerated exactly and need none).
    n_perm = max(n_perm, math.ceil(20 / share))
    checks: list[GateCheck] = [
        gate_check(
            system,
            metric,
            counts,
            margin=margin,
            alpha=share,
            n_perm=n_perm,
            seed=seed,
            baseline_groups=of_baseline,
            min_coverage=min_coverage,
            max_undetectable=max_undetectable,
        )
        for system, metric, counts, of_baseline in planned
    ]
    checks += [
        missing_check(system, metric, reason, alpha=share, margin=margin, baseline_groups=n)
        for system, metric, reason, n in absent
    ]
    return GateReport(
        baseline=str(baseline),
        candidate=str(candidate),
        alpha=alpha,
        margin=margin,
        checks=checks,
        notes=notes,
        allow_partial=allow_partial,
        missing=missing,
    )


def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _status(check: GateCheck) -> str:
    status = {"regression": "REGRESSION", "missing": "MISSING", "untestable": "UNTESTABLE"}.get(
        check.status, check.status
    )
    if check.reason:
        status += f" ({check.reason})"
    return status


def gate_markdown(report: GateReport) -> str:
    """The one-screen summary: the verdict, a row per check, what the candidate covers of
    the baseline, the notes."""
    checks = max(1, sum(c.status != "missing" for c in report.checks))
    lines = [
        f"## ragaudit gate: {report.verdict}",
        "",
        report.headline() + ".",
        "",
        f"Baseline `{report.baseline}`, candidate `{report.candidate}`; paired by semantic "
        f"group (same questions, same references); each check is held to alpha / checks = "
        f"{report.alpha / checks:.3g}.",
        "",
        "| system | metric | baseline | candidate | difference [95% CI] | p | groups paired / "
        "baseline | drop found with 80% power | status |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in report.checks:
        diff = "n/a"
        if c.difference is not None:
            low, high = c.ci95 or (c.difference, c.difference)
            diff = f"{c.difference:+.3f} [{low:+.3f}, {high:+.3f}]"
        p = "n/a" if c.p_value is None else ("< 0.001" if c.p_value < 0.001 else f"{c.p_value:.3g}")
        lines.append(
            f"| {c.system} | {c.metric} | {_cell(c.baseline)} | {_cell(c.candidate)} | "
            f"{diff} | {p} | {c.coverage} | {_cell(c.detectable)} | {_status(c)} |"
        )
    unseen = [
        f"{c.system} {c.metric}: {c.undetected()}" for c in report.checks if c.status == "pass"
    ]
    if unseen:
        lines += ["", "What a pass does not rule out:", "", *(f"- {line}" for line in unseen)]
    if report.notes:
        lines += ["", *(f"- {note}" for note in report.notes)]
    return "\n".join(lines) + "\n"


def _suite(cases: int, failures: int, errors: int, skipped: int) -> ET.Element:
    return ET.Element(
        "testsuite",
        name="ragaudit gate",
        tests=str(cases),
        failures=str(failures),
        errors=str(errors),
        skipped=str(skipped),
    )


def _xml(suite: ET.Element) -> str:
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def gate_junit(report: GateReport) -> str:
    """JUnit XML: one test case per check. A regression, and a system the candidate lacks,
    are failures (a skipped case where missing systems are skipped); an untestable check
    is an error (skipped with ``allow_partial``); a pass carries its sentence."""
    kinds = []
    for check in report.checks:
        if check.status == "regression" or (check.status == "missing" and report.missing == "fail"):
            kinds.append("failure")
        elif check.status == "untestable" and not report.allow_partial:
            kinds.append("error")
        elif check.status in ("untestable", "missing"):
            kinds.append("skipped")
        else:
            kinds.append("pass")
    suite = _suite(len(kinds), kinds.count("failure"), kinds.count("error"), kinds.count("skipped"))
    for check, kind in zip(report.checks, kinds, strict=True):
        # The system in the name: grid names hold dots, which CI viewers read as packages.
        case = ET.SubElement(
            suite, "testcase", classname="ragaudit.gate", name=f"{check.system} {check.metric}"
        )
        if kind == "pass":
            ET.SubElement(case, "system-out").text = check.sentence()
        elif kind == "skipped":
            ET.SubElement(case, "skipped", message=check.reason or check.status)
        else:
            element = ET.SubElement(case, kind, message=check.sentence(), type=check.status)
            element.text = check.sentence()
    return _xml(suite)


def gate_error_junit(message: str) -> str:
    """JUnit XML for a gate that could compare nothing (exit 2): one error case with why,
    so that CI's test report shows the gate rather than nothing."""
    suite = _suite(1, 0, 1, 0)
    case = ET.SubElement(suite, "testcase", classname="ragaudit.gate", name="gate")
    ET.SubElement(case, "error", message=message, type="untestable").text = message
    return _xml(suite)


def gate_error_markdown(message: str) -> str:
    """The summary of a gate that could compare nothing."""
    return f"## ragaudit gate: UNTESTABLE\n\n{message}\n"


def assert_no_regression(
    baseline: Path | str, candidate: Path | str, **options: object
) -> GateReport:
    """For pytest: :func:`gate_runs` on two run directories, raising AssertionError with
    the summary unless the gate passes (a regression, a missing system or an untestable
    check is not a pass); the report otherwise."""
    report = gate_runs(Path(baseline), Path(candidate), **options)  # type: ignore[arg-type]
    if not report.passed:
        raise AssertionError(gate_markdown(report))
    return report


__all__ = [
    "assert_no_regression",
    "gate_error_junit",
    "gate_error_markdown",
    "gate_junit",
    "gate_markdown",
    "gate_runs",
]
