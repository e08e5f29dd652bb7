"""``ragaudit gate``: fail a CI job only when a candidate run is significantly worse."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ragaudit.cli.console import console
from ragaudit.cli.options import RetrievalRuleOption, SeedOption
from ragaudit.judge.retrieval import DEFAULT_RULE


class MissingChoice(StrEnum):
    """What a system of the baseline that the candidate lacks counts as."""

    fail = "fail"
    skip = "skip"


def parse_pairs(values: list[str]) -> dict[str, str]:
    """``--pair CANDIDATE=BASELINE`` options as candidate system -> baseline system; a
    value without '=' or a candidate given twice is a :class:`UserError` naming it."""
    from ragaudit.errors import UserError

    out: dict[str, str] = {}
    for value in values:
        cand, sep, base = value.partition("=")
        cand, base = cand.strip(), base.strip()
        if not sep or not cand or not base:
            raise UserError(f"--pair {value}: give CANDIDATE=BASELINE, e.g. --pair dense=bm25")
        if cand in out:
            raise UserError(f"--pair {cand}: given twice (a candidate system is checked once)")
        out[cand] = base
    return out


def gate_cmd(
    baseline: Annotated[Path, typer.Argument(help="The baseline's run directory.")],
    candidate: Annotated[
        Path | None,
        typer.Argument(
            help="The candidate's run directory (with --pair, default: the baseline's, to "
            "gate two systems of one run)."
        ),
    ] = None,
    metrics: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            help="accuracy (default), robustness, accuracy_retrieval, recall@K, mrr or "
            "ndcg@K (repeatable; the retrieval ones need no judging).",
        ),
    ] = None,
    systems: Annotated[
        list[str] | None,
        typer.Option("--system", help="Only the systems matching this shell pattern (repeatable)."),
    ] = None,
    pairs: Annotated[
        list[str] | None,
        typer.Option(
            "--pair",
            metavar="CANDIDATE=BASELINE",
            help="Gate the candidate's system CANDIDATE against the baseline's system "
            "BASELINE (e.g. dense=bm25) instead of each system against its namesake; "
            "repeatable. With one run folder: two systems of that run.",
        ),
    ] = None,
    margin: Annotated[
        float,
        typer.Option(
            "--margin",
            min=0.0,
            max=1.0,
            help="The drop tolerated: fail only when worse by more than this (0.02 = 2 points).",
        ),
    ] = 0.0,
    alpha: Annotated[
        float,
        typer.Option(
            "--alpha",
            min=0.0001,
            max=0.5,
            help="The gate's false-alarm rate, shared by its checks (Bonferroni).",
        ),
    ] = 0.05,
    junit: Annotated[
        Path | None, typer.Option("--junit", help="Write JUnit XML here (one case per check).")
    ] = None,
    markdown: Annotated[
        Path | None, typer.Option("--markdown", help="Write the summary here as markdown.")
    ] = None,
    resamples: Annotated[
        int, typer.Option("--resamples", min=100, help="Sign flips of the permutation test.")
    ] = 2000,
    allow_partial: Annotated[
        bool,
        typer.Option(
            "--allow-partial",
            help="Skip checks that could not fail (too few groups in common) instead of "
            "exiting 2, as long as another check was tested.",
        ),
    ] = False,
    missing: Annotated[
        MissingChoice,
        typer.Option(
            "--missing",
            help="A system of the baseline the candidate lacks: fail (default) or skip.",
        ),
    ] = MissingChoice.fail,
    min_coverage: Annotated[
        float,
        typer.Option(
            "--min-coverage",
            min=0.0,
            max=1.0,
            help="Untestable when the candidate scored less than this share of the queries "
            "the baseline scored (not run, not judged, judge-failed); 0 to allow any.",
        ),
    ] = 0.9,
    max_undetectable: Annotated[
        float | None,
        typer.Option(
            "--max-undetectable",
            min=0.0,
            max=1.0,
            help="Untestable when a passing check would miss a drop larger than this with "
            "80% power (0.05 = the gate must find a 5-point drop).",
        ),
    ] = None,
    seed: SeedOption = 0,
    retrieval_rule: RetrievalRuleOption = DEFAULT_RULE,
) -> None:
    """Compare a candidate run with a baseline run on the same dataset, paired by semantic
    group: each system against its namesake, or with --pair against another system (of
    the other run, or of the same run: two configurations of one run). Exit 1 when the
    candidate is significantly worse beyond the margin on a check (a system and a metric)
    or lacks a system of the baseline; 2 when a check could not fail (too few groups in
    common) or nothing can be compared; 0 otherwise."""
    from ragaudit.api import gate
    from ragaudit.errors import UserError
    from ragaudit.judge.retrieval import check_rule
    from ragaudit.records.io import atomic_write_text, check_output_path
    from ragaudit.secrets import redact
    from ragaudit.steps.gate import (
        gate_error_junit,
        gate_error_markdown,
        gate_junit,
        gate_markdown,
    )

    check_rule(retrieval_rule)
    paired = parse_pairs(pairs or [])
    if candidate is None:
        candidate = baseline  # one run folder: refused below unless systems are paired
    for option, output in (("--junit", junit), ("--markdown", markdown)):
        if output is not None:
            check_output_path(output)  # refused before the gate's work, not after
            for run in (baseline, candidate):
                if output.resolve().is_relative_to(run.resolve()):
                    # It would overwrite a run's own file (its dataset, its judgements).
                    raise UserError(
                        f"{option} {output}: inside the run folder {run}; the gate writes "
                        "nothing into the runs: write it beside them"
                    )
    try:
        report = gate(
            baseline,
            candidate,
            metrics=metrics,
            systems=systems,
            pairs=paired or None,
            margin=margin,
            alpha=alpha,
            resamples=resamples,
            seed=seed,
            retrieval_rule=retrieval_rule,
            allow_partial=allow_partial,
            missing=missing.value,
            min_coverage=min_coverage,
            max_undetectable=max_undetectable,
        )
    except UserError as err:
        # CI's test report shows why the gate did not decide, not an empty page.
        message = redact(str(err))
        if markdown is not None:
            atomic_write_text(markdown, gate_error_markdown(message))
        if junit is not None:
            atomic_write_text(junit, gate_error_junit(message))
        raise
    text = gate_markdown(report)
    console.print(text, markup=False, highlight=False)
    if markdown is not None:
        atomic_write_text(markdown, text)
    if junit is not None:
        atomic_write_text(junit, gate_junit(report))
    if report.exit_code:
        raise typer.Exit(report.exit_code)
