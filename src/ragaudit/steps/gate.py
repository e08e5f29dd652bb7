"""The ``gate`` step: a candidate run against a baseline run on the same dataset, paired by
semantic group (:mod:`ragaudit.analysis.gate`), as a one-screen markdown summary and JUnit
XML for CI systems; and :func:`assert_no_regression` for pytest. Each system is checked
against its namesake, or (``pairs``) against another system: of the other run, or of the
same run, so that two configurations of one run (dense against BM25) are gated alike.
Where a run asked each query several times (``run --repeat N``), accuracy and R count
every judged asking inside its group, so that a flaky system needs a real drop to fail,
not one unlucky run."""

from __future__ import annotations

import fnmatch
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from ragaudit.analysis.gate import (
    DEFAULT_MIN_COVERAGE,
    GateCheck,
    GateReport,
    MissingPolicy,
    gate_check,
    group_fingerprints,
    missing_check,
)
from ragaudit.analysis.ranking import ANSWER_METRICS, example_score
from ragaudit.analysis.significance import PairedCounts
from ragaudit.errors import StaleInputError, UserError, check_seed, printable
from ragaudit.judge.retrieval import DEFAULT_RULE, RetrievalRule, check_rule
from ragaudit.records.models import FREE_METRICS
from ragaudit.rundir import RunDir
from ragaudit.steps.compare import compare_examples
from ragaudit.store.examples import repeat_attempts
from ragaudit.store.records import Queries, read_dataset

# Per system, its scored queries: query id -> (group id, the sum of its scores, the
# askings scored: 1, or its judged repeats with run --repeat N).
Scored = dict[str, dict[str, tuple[str, float, int]]]


def _scores(run: Path, metric: str, rule: RetrievalRule) -> tuple[Scored, dict[str, str]]:
    """Every system's scored queries on ``metric``, and the systems left out with why.
    For accuracy and R, a query asked several times (``run --repeat N``) counts each of
    its judged repeats beside its first asking."""
    try:
        examples, left_out, score = compare_examples(RunDir(run), metric, rule)
        attempts = repeat_attempts(RunDir(run)) if metric in ANSWER_METRICS else []
    except StaleInputError as err:  # the step it names is kept, for each door to word
        raise StaleInputError(f"{run}: {err.what}", err.step, err.options) from None
    except UserError as err:
        raise UserError(f"{run}: {err}") from None
    scored: Scored = {}
    for ex in examples:
        value = score(ex)
        if value is not None:
            scored.setdefault(ex.system, {})[ex.query_id] = (ex.group_id, value, 1)
    for a in attempts:
        known = scored.get(a.system, {}).get(a.query_id)
        if a.repeat and known is not None:  # the first asking is the example's
            group, total, n = known
            scored[a.system][a.query_id] = (group, total + float(a.correct), n + 1)
    return scored, left_out


def _most_askings(scored: dict[str, tuple[str, float, int]]) -> int:
    """The most askings any one query of a system was scored on (1 without repeats)."""
    return max((n for _, _, n in scored.values()), default=1)


def _dataset(run: Path) -> Queries:
    """The dataset of the run directory ``run``; its errors name the run."""
    rundir = RunDir(run)
    if not rundir.dataset.exists():
        raise UserError(f"{run}: no dataset.jsonl (not a run directory?)")
    try:
        return read_dataset(rundir)
    except UserError as err:
        raise UserError(f"{run}: {err}") from None


def _fingerprints(run: Path, queries: Queries) -> dict[str, str]:
    try:
        return group_fingerprints(queries)
    except UserError as err:
        raise UserError(f"{run}: {err}") from None


def _countable(queries: Queries, metric: str) -> tuple[int, int]:
    """The queries and groups of a dataset that ``metric`` can score: every one for an
    answer metric, those whose gold ids name a document for a retrieval metric. A
    baseline's coverage is counted against them, so that a baseline judged on a part of
    its dataset cannot make the candidate's part look whole."""
    kept = [q for q in queries if metric in ANSWER_METRICS or q.gold_ids]
    return len(kept), len({q.group_id for q in kept})


def _paired(
    base: dict[str, tuple[str, float, int]],
    cand: dict[str, tuple[str, float, int]],
    queries: list[str],
    robustness: bool,
) -> PairedCounts:
    """Both runs' sums and counts per group over ``queries`` (scored on both, in groups
    that ask the same questions): each group is compared with itself on the same queries,
    each query with all its scored askings (its repeats, with ``run --repeat N``). For R,
    a group every answer of which is wrong on a side (a gap) counts on neither of that
    side's parts."""
    parts: dict[str, list[float]] = {}
    for qid in queries:
        group = base[qid][0]
        cell = parts.setdefault(group, [0.0, 0.0, 0.0, 0.0])
        cell[0] += base[qid][1]
        cell[1] += base[qid][2]
        cell[2] += cand[qid][1]
        cell[3] += cand[qid][2]
    groups = sorted(parts)
    cells = np.array([parts[g] for g in groups], dtype=np.float64).reshape(-1, 4)
    if robustness:
        cells[cells[:, 0] == 0, 1] = 0
        cells[cells[:, 2] == 0, 3] = 0
    return PairedCounts(groups, cells[:, 0], cells[:, 1], cells[:, 2], cells[:, 3])


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


def _options(
    margin: float,
    alpha: float,
    n_perm: int,
    missing: str,
    min_coverage: float,
    max_undetectable: float | None,
    seed: int = 0,
) -> float:
    """Check the gate's options as the command line does (one line each); the margin,
    with -0 read as 0."""
    if not (math.isfinite(alpha) and 0 < alpha <= 0.5):
        raise UserError(f"alpha must be above 0 and at most 0.5, not {alpha}")
    if not (math.isfinite(margin) and 0 <= margin <= 1):
        raise UserError(f"margin must be between 0 and 1, not {margin}")
    if n_perm < 100:
        raise UserError(f"the sign flips (resamples) must be at least 100, not {n_perm}")
    if missing not in ("fail", "skip"):
        raise UserError(f"missing must be 'fail' or 'skip', not {missing!r}")
    check_seed(seed)
    if not (math.isfinite(min_coverage) and 0 <= min_coverage <= 1):
        raise UserError(f"min_coverage must be between 0 and 1, not {min_coverage}")
    if max_undetectable is not None and not (
        math.isfinite(max_undetectable) and 0 <= max_undetectable <= 1
    ):
        raise UserError(f"max_undetectable must be between 0 and 1, not {max_undetectable}")
    return abs(margin)


def pair_label(candidate: str, baseline: str) -> str:
    """The name of a check of ``candidate`` against another system, ``baseline`` (its
    row in the summary, its JUnit case); a system against its namesake keeps its name.

    >>> pair_label("dense", "bm25"), pair_label("rag", "rag")
    ('dense (baseline: bm25)', 'rag')
    """
    return candidate if candidate == baseline else f"{candidate} (baseline: {baseline})"


def _check_pairs(
    pairs: dict[str, str], systems: list[str] | None, same_run: bool, run: Path
) -> None:
    """Refuse what a pairing cannot mean: a name left empty, ``--system`` beside it (two
    ways of choosing the checks), and in one run folder a system against itself (it
    could never fail), or no pair at all."""
    if same_run and not pairs:
        # A mistyped CI line that names one run twice could never fail: no pass.
        raise UserError(
            f"the baseline and the candidate are the same run folder ({run}): a run gated "
            "against itself always passes; with one run folder: name the candidate's run "
            "folder, or pair two of its systems (--pair CANDIDATE=BASELINE, e.g. dense=bm25)"
        )
    if pairs and systems:
        raise UserError("--pair and --system both choose the systems to check: give the pairs")
    for cand, base in pairs.items():
        if not (isinstance(cand, str) and isinstance(base, str) and cand and base):
            raise UserError(f"--pair {cand!r}={base!r}: name two systems, CANDIDATE=BASELINE")
        if same_run and cand == base:
            raise UserError(
                f"--pair {cand}={base}: in one run folder a system gated against itself "
                "always passes: pair two systems of the run (e.g. --pair dense=bm25)"
            )


def _known_system(name: str, side: str, known: set[str], pair: tuple[str, str]) -> None:
    """A paired system that its run does not have at all is a typo, not a missing system
    (which would fail the gate for the wrong reason)."""
    if name not in known:
        raise UserError(
            f"--pair {pair[0]}={pair[1]}: the {side} has no system {name} (its systems: "
            f"{', '.join(sorted(known)) or 'none'})"
        )


def _paired_jobs(
    metric: str,
    pairs: dict[str, str],
    base_scored: Scored,
    base_out: dict[str, str],
    cand_scored: Scored,
    cand_out: dict[str, str],
    notes: list[str],
) -> list[tuple[str, str, str]]:
    """The checks ``pairs`` asks for: (name, baseline system, candidate system) each."""
    for cand, base in pairs.items():
        _known_system(base, "baseline", {*base_scored, *base_out}, (cand, base))
        _known_system(cand, "candidate", {*cand_scored, *cand_out}, (cand, base))
    for system, why in base_out.items():
        if system in pairs.values():
            notes.append(f"{metric}: the baseline's {system} left out: {why}")
    jobs = [(pair_label(c, b), b, c) for c, b in pairs.items() if b in base_scored]
    if not jobs:
        whys = "; ".join(f"{s} {why}" for s, why in sorted(base_out.items()))
        raise UserError(f"{metric}: no baseline system of the pairs has anything to count ({whys})")
    return jobs


def _namesake_jobs(
    metric: str,
    systems: list[str] | None,
    base_scored: Scored,
    base_out: dict[str, str],
    cand_scored: Scored,
    notes: list[str],
) -> list[tuple[str, str, str]]:
    """Each system of the baseline (matching ``systems``) against its namesake."""
    names = sorted(base_scored)
    for pattern in systems or []:
        # A pattern that names nothing (a typo) would leave a system unchecked: no pass.
        if not any(fnmatch.fnmatchcase(s, pattern) for s in [*base_scored, *base_out]):
            raise UserError(
                f"--system {pattern}: no system of the baseline matches it (the "
                f"baseline's systems: {', '.join(sorted({*base_scored, *base_out}))})"
            )
    if systems:
        names = [s for s in names if any(fnmatch.fnmatchcase(s, p) for p in systems)]
    if not names:
        raise UserError(
            f"{metric}: no system of the baseline matches {', '.join(systems or [])} "
            f"(baseline: {', '.join(sorted(base_scored))})"
        )
    extra = sorted(set(cand_scored) - set(base_scored) - set(base_out))
    if extra and not systems:
        notes.append(f"{metric}: only the candidate has {', '.join(extra)}: not checked")
    for system, why in base_out.items():
        notes.append(f"{metric}: the baseline's {system} left out: {why}")
    return [(s, s, s) for s in names]


def gate_runs(
    baseline: Path,
    candidate: Path,
    *,
    metrics: list[str] | None = None,
    systems: list[str] | None = None,
    pairs: dict[str, str] | None = None,
    margin: float = 0.0,
    alpha: float = 0.05,
    n_perm: int = 2000,
    seed: int = 0,
    rule: RetrievalRule = DEFAULT_RULE,
    allow_partial: bool = False,
    missing: MissingPolicy = "fail",
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    max_undetectable: float | None = None,
) -> GateReport:
    """Check every system of the baseline (or those matching ``systems``, shell patterns)
    on each metric (default accuracy; retrieval metrics need no judging): regression where
    the candidate is significantly worse than the baseline by more than ``margin``. The
    checks share ``alpha`` (Bonferroni). ``pairs`` (candidate system -> baseline system)
    checks those systems instead, each against the one it names, with the same
    statistics: across two runs, or two systems of one run (``baseline`` and
    ``candidate`` the same folder; a system against itself there is refused).

    Each group is compared with itself, on the queries scored on both runs, and only where
    its questions and references are the same on both. A system of the baseline the
    candidate lacks is a failing check (``missing="skip"``: a skipped one). A check is
    untestable when the candidate scored less than ``min_coverage`` of the queries the
    baseline scored (not run, not judged, judge-failed), when it could not fail on the
    groups it has, or when it passes with a detectable drop over ``max_undetectable``;
    untestable is not a pass unless ``allow_partial`` (and another check was tested).
    Nothing to compare at all is an error."""
    margin = _options(margin, alpha, n_perm, missing, min_coverage, max_undetectable, seed)
    check_rule(rule)
    metrics = list(dict.fromkeys(metrics or ["accuracy"]))  # a metric twice is checked once
    for metric in metrics:
        _check_metric(metric)
    pairs = dict(pairs or {})
    same_run = baseline.resolve() == candidate.resolve()
    _check_pairs(pairs, systems, same_run, baseline)
    for run in (baseline, candidate):
        if not run.is_dir():
            raise UserError(f"{run}: no such run directory")
    # Each run's dataset, held for the whole gate: read once, for its fingerprints and for
    # the examples of every metric (one run folder: once for both sides).
    datasets = [_dataset(baseline)]
    datasets.append(datasets[0] if same_run else _dataset(candidate))
    base_prints = _fingerprints(baseline, datasets[0])
    cand_prints = base_prints if same_run else _fingerprints(candidate, datasets[1])
    matching = {g for g, h in base_prints.items() if cand_prints.get(g) == h}
    differing = sum(1 for g, h in base_prints.items() if g in cand_prints and cand_prints[g] != h)
    if not matching:
        raise UserError(
            f"the two runs share no question: of the baseline's {len(base_prints)} groups, "
            f"{differing} ask other questions or have other references on the candidate and "
            f"{len(base_prints) - differing} are not in its dataset (not the same dataset?)"
        )
    notes: list[str] = []
    if pairs:
        notes.append(
            "systems paired as asked: "
            + "; ".join(
                f"{c} of the candidate against {b} of the baseline" for c, b in pairs.items()
            )
        )
    if differing:
        notes.append(
            f"{differing} of the baseline's {len(base_prints)} groups ask other questions or "
            "have other references on the candidate (the datasets differ): left out"
        )
    planned: list[tuple[str, str, PairedCounts, int, int, int]] = []
    absent: list[tuple[str, str, str, int]] = []
    for metric in metrics:
        base_scored, base_out = _scores(baseline, metric, rule)
        cand_scored, cand_out = (
            (base_scored, base_out) if same_run else _scores(candidate, metric, rule)
        )
        if not base_scored:
            whys = "; ".join(f"{s} {why}" for s, why in sorted(base_out.items()))
            hint = (
                f" ({whys}: check recall@K, mrr, ndcg@K or accuracy_retrieval instead)"
                if whys
                else ""
            )
            raise UserError(f"{metric}: the baseline run {baseline} has nothing to count{hint}")
        jobs = (
            _paired_jobs(metric, pairs, base_scored, base_out, cand_scored, cand_out, notes)
            if pairs
            else _namesake_jobs(metric, systems, base_scored, base_out, cand_scored, notes)
        )
        for system, base_system, cand_system in jobs:
            base = base_scored[base_system]
            base_groups = {group for group, _, _ in base.values()}
            cand = cand_scored.get(cand_system)
            if not cand:
                lost = cand_out.get(cand_system)
                reason = (
                    f"the candidate's {cand_system} {lost}"
                    if lost is not None
                    else f"the candidate has no scored query of {cand_system}"
                )
                absent.append((system, metric, reason, len(base_groups)))
                continue
            queries = sorted(q for q in base if q in cand and base[q][0] in matching)
            unscored = sum(1 for q in base if q not in cand)
            if unscored:
                notes.append(
                    f"{system} {metric}: the candidate has no score for {unscored} of the "
                    f"{len(base)} queries the baseline scored (not run, not judged, or the "
                    "judge failed): left out of the check, and counted in its coverage"
                )
            counts = _paired(base, cand, queries, robustness=metric == "robustness")
            askings = (_most_askings(base), _most_askings(cand))
            if askings != (1, 1):
                notes.append(
                    f"{system} {metric}: each query counts every judged asking (run --repeat "
                    f"N: up to {askings[0]} on the baseline, {askings[1]} on the candidate), "
                    "each group compared as a whole"
                )
            # Coverage is counted over the baseline's queries that either run scored: a
            # baseline judged on a part of its dataset cannot make the candidate's part
            # look whole, and a query neither run could score (a judge failure both
            # share) is no loss of the candidate's.
            either = {q: g for q, (g, _, _) in base.items()}
            either.update((q, g) for q, (g, _, _) in cand.items() if g in base_prints)
            of_queries, _ = _countable(datasets[0], metric)
            if len(base) < of_queries:
                notes.append(
                    f"{system} {metric}: the baseline scored {len(base)} of the {of_queries} "
                    "queries of its dataset (not run, not judged, or the judge failed)"
                )
            planned.append(
                (system, metric, counts, len(set(either.values())), len(queries), len(either))
            )
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
            baseline_groups=of_groups,
            queries=paired,
            baseline_queries=of_queries,
            min_coverage=min_coverage,
            max_undetectable=max_undetectable,
        )
        for system, metric, counts, of_groups, paired, of_queries in planned
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


def _md(text: str) -> str:
    """A table cell's text: a '|' of a system's name would start a new column, and a
    control character (an escape sequence) would reach the terminal."""
    return printable(text).replace("|", "\\|")


def _status(check: GateCheck) -> str:
    status = {"regression": "REGRESSION", "missing": "MISSING", "untestable": "UNTESTABLE"}.get(
        check.status, check.status
    )
    if check.reason or check.note:
        status += f" ({check.reason or check.note})"
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
        "| system | metric | baseline | candidate | difference [95% CI] | p | paired / baseline: "
        "groups (queries) | drop found with 80% power | status |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in report.checks:
        diff = "n/a"
        if c.difference is not None:
            low, high = c.ci95 or (c.difference, c.difference)
            diff = f"{c.difference:+.3f} [{low:+.3f}, {high:+.3f}]"
        p = "n/a" if c.p_value is None else ("< 0.001" if c.p_value < 0.001 else f"{c.p_value:.3g}")
        lines.append(
            f"| {_md(c.system)} | {_md(c.metric)} | {_cell(c.baseline)} | {_cell(c.candidate)} | "
            f"{diff} | {p} | {c.coverage} | {_cell(c.detectable)} | {_md(_status(c))} |"
        )
    unseen = [
        printable(f"{c.system} {c.metric}: {c.undetected()}")
        for c in report.checks
        if c.status == "pass"
    ]
    if unseen:
        lines += ["", "What a pass does not rule out:", "", *(f"- {line}" for line in unseen)]
    if report.notes:
        lines += ["", *(f"- {printable(note)}" for note in report.notes)]
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
        name = printable(f"{check.system} {check.metric}")
        sentence = printable(check.sentence())
        case = ET.SubElement(suite, "testcase", classname="ragaudit.gate", name=name)
        if kind == "pass":
            ET.SubElement(case, "system-out").text = sentence
        elif kind == "skipped":
            ET.SubElement(case, "skipped", message=printable(check.reason or check.status))
        else:
            element = ET.SubElement(case, kind, message=sentence, type=check.status)
            element.text = sentence
    return _xml(suite)


def gate_error_junit(message: str) -> str:
    """JUnit XML for a gate that could compare nothing (exit 2): one error case with why,
    so that CI's test report shows the gate rather than nothing."""
    suite = _suite(1, 0, 1, 0)
    case = ET.SubElement(suite, "testcase", classname="ragaudit.gate", name="gate")
    message = printable(message)
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
