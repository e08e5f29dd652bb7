"""The ``gate`` step: a candidate run against a baseline run on the same dataset, paired by
semantic group (:mod:`ragaudit.analysis.gate`), as a one-screen markdown summary and JUnit
XML for CI systems; and :func:`assert_no_regression` for pytest."""

from __future__ import annotations

import fnmatch
import math
import xml.etree.ElementTree as ET
from pathlib import Path

from ragaudit.analysis.gate import GateCheck, GateReport, gate_check
from ragaudit.analysis.ranking import ALL, SetScores, example_score, set_scores
from ragaudit.analysis.significance import PairedCounts
from ragaudit.errors import UserError
from ragaudit.judge.retrieval import DEFAULT_RULE, RetrievalRule
from ragaudit.records.models import FREE_METRICS
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


def _paired(
    base: SetScores, cand: SetScores, system: str, scored_b: set[str], scored_c: set[str]
) -> tuple[PairedCounts, int]:
    """The groups the system has a scored query of on both runs, and how many it has on
    one run only (those are left out: a group is compared with itself or not at all)."""
    bn, bd = base.row(system)
    cn, cd = cand.row(system)
    b_groups = {g: i for i, g in enumerate(base.groups)}
    c_groups = {g: i for i, g in enumerate(cand.groups)}
    common = sorted(scored_b & scored_c)
    bi = [b_groups[g] for g in common]
    ci = [c_groups[g] for g in common]
    counts = PairedCounts(common, bn[bi], bd[bi], cn[ci], cd[ci])
    return counts, len(scored_b ^ scored_c)


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
) -> GateReport:
    """Check every system of both runs (or those matching ``systems``, shell patterns) on
    each metric (default accuracy; retrieval metrics need no judging): regression where
    the candidate is significantly worse than the baseline by more than ``margin``. The
    checks share ``alpha`` (Bonferroni). Nothing to compare at all is an error, never a
    pass."""
    metrics = list(dict.fromkeys(metrics or ["accuracy"]))  # a metric twice is checked once
    for metric in metrics:
        if metric in FREE_METRICS:
            raise UserError(f"the gate does not check reference-free metrics ({metric})")
        try:
            example_score(metric)
        except ValueError as err:
            raise UserError(str(err)) from None
    notes: list[str] = []
    planned: list[tuple[str, str, PairedCounts]] = []
    for metric in metrics:
        base, base_out, base_scored = _scores(baseline, metric, rule)
        cand, cand_out, cand_scored = _scores(candidate, metric, rule)
        if base is None or cand is None:
            which = "baseline" if base is None else "candidate"
            raise UserError(f"{metric}: the {which} run has nothing to count")
        names = sorted(set(base.systems) & set(cand.systems))
        if systems:
            names = [s for s in names if any(fnmatch.fnmatchcase(s, p) for p in systems)]
        if not names:
            raise UserError(
                f"{metric}: no system is in both runs"
                + (f" matching {', '.join(systems)}" if systems else "")
                + f" (baseline: {', '.join(base.systems)}; candidate: {', '.join(cand.systems)})"
            )
        for side, scores in (("baseline", base), ("candidate", cand)):
            alone = sorted(set(scores.systems) - set(names))
            if alone and not systems:
                notes.append(f"{metric}: only the {side} has {', '.join(alone)}: not checked")
        for system, why in {**base_out, **cand_out}.items():
            notes.append(f"{metric}: {system} left out: {why}")
        for system in names:
            counts, unpaired = _paired(
                base, cand, system, base_scored.get(system, set()), cand_scored.get(system, set())
            )
            if unpaired:
                notes.append(
                    f"{system} {metric}: {unpaired} groups are scored on one run only (not the "
                    "same dataset?): left out of the check"
                )
            planned.append((system, metric, counts))
    share = alpha / len(planned)
    # The smallest p-value is 1 / (n_perm + 1): enough sign flips that every check can fail.
    n_perm = max(n_perm, math.ceil(20 / share))
    checks: list[GateCheck] = [
        gate_check(system, metric, counts, margin=margin, alpha=share, n_perm=n_perm, seed=seed)
        for system, metric, counts in planned
    ]
    if all(c.status == "not tested" for c in checks):
        reasons = "; ".join(c.sentence() for c in checks[:3])
        raise UserError(f"the gate could test nothing: {reasons}")
    return GateReport(
        baseline=str(baseline),
        candidate=str(candidate),
        alpha=alpha,
        margin=margin,
        checks=checks,
        notes=notes,
    )


def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def gate_markdown(report: GateReport) -> str:
    """The one-screen summary: the verdict, a row per check, the notes."""
    lines = [
        f"## ragaudit gate: {'PASS' if report.passed else 'FAIL'}",
        "",
        report.headline() + ".",
        "",
        f"Baseline `{report.baseline}`, candidate `{report.candidate}`; paired by semantic "
        f"group; each check is held to alpha / checks = {report.alpha / len(report.checks):.3g}.",
        "",
        "| system | metric | baseline | candidate | difference [95% CI] | p | groups | status |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in report.checks:
        diff = "n/a"
        if c.difference is not None:
            low, high = c.ci95 or (c.difference, c.difference)
            diff = f"{c.difference:+.3f} [{low:+.3f}, {high:+.3f}]"
        p = "n/a" if c.p_value is None else ("< 0.001" if c.p_value < 0.001 else f"{c.p_value:.3g}")
        status = c.status.upper() if c.status == "regression" else c.status
        if c.reason:
            status += f" ({c.reason})"
        lines.append(
            f"| {c.system} | {c.metric} | {_cell(c.baseline)} | {_cell(c.candidate)} | "
            f"{diff} | {p} | {c.n_groups} | {status} |"
        )
    if report.notes:
        lines += ["", *(f"- {note}" for note in report.notes)]
    return "\n".join(lines) + "\n"


def gate_junit(report: GateReport) -> str:
    """JUnit XML: one test case per check; a regression is a failure, a check that could
    not be tested is skipped with its reason."""
    suite = ET.Element(
        "testsuite",
        name="ragaudit gate",
        tests=str(len(report.checks)),
        failures=str(len(report.regressions)),
        skipped=str(sum(c.status == "not tested" for c in report.checks)),
        errors="0",
    )
    for check in report.checks:
        # The system in the name: grid names hold dots, which CI viewers read as packages.
        case = ET.SubElement(
            suite, "testcase", classname="ragaudit.gate", name=f"{check.system} {check.metric}"
        )
        if check.status == "regression":
            failure = ET.SubElement(case, "failure", message=check.sentence(), type="regression")
            failure.text = check.sentence()
        elif check.status == "not tested":
            ET.SubElement(case, "skipped", message=check.reason or "not tested")
        else:
            out = ET.SubElement(case, "system-out")
            out.text = check.sentence()
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def assert_no_regression(
    baseline: Path | str, candidate: Path | str, **options: object
) -> GateReport:
    """For pytest: :func:`gate_runs` on two run directories, raising AssertionError with
    the summary when the candidate regressed; the report otherwise."""
    report = gate_runs(Path(baseline), Path(candidate), **options)  # type: ignore[arg-type]
    if not report.passed:
        raise AssertionError(gate_markdown(report))
    return report


__all__ = ["assert_no_regression", "gate_junit", "gate_markdown", "gate_runs"]
