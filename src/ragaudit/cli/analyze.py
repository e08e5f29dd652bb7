"""``ragaudit analyze``: groups, robustness, blame and paired tests, printed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragaudit.analysis.lambda_study import DEFAULT_DRAWS
from ragaudit.cli.common import project_for
from ragaudit.cli.console import console, err_console
from ragaudit.cli.options import AnalysisEngine, ConfigOption, Outcome
from ragaudit.judge.retrieval import DEFAULT_RULE, RULE_HELP
from ragaudit.rundir import RunDir


def analyze_cmd(
    config_path: ConfigOption = None,
    neutral: Annotated[
        list[Path] | None,
        typer.Option(
            "--neutral",
            help="Neutral JSONL results of a system ragaudit did not run (file or folder; "
            "repeatable). Default: the run's dataset and judgements.",
        ),
    ] = None,
    retrieval_rule: Annotated[
        str | None,
        typer.Option(
            "--retrieval-rule",
            help=f"{RULE_HELP}. Default: the judge's for judged answers (another rule gives "
            "the retrieval verdicts again by it); all_gold for --outcome retrieval and "
            "--neutral.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap and permutation seed.")] = 0,
    system: Annotated[
        str | None,
        typer.Option("--system", help="Name of the system in --neutral files (default: external)."),
    ] = None,
    llm_only: Annotated[
        str | None,
        typer.Option(
            "--llm-only",
            help="System answering without retrieval: flags the "
            "groups it answers (open domain) and gives Acc_retrieval_db without them.",
        ),
    ] = None,
    outcome: Annotated[
        Outcome,
        typer.Option(
            "--outcome",
            help="answer (judgements) or retrieval (responses: retrieval correctness by the "
            "retrieval rule is analyzed as the outcome; no judging needed).",
        ),
    ] = Outcome.answer,
    engine: Annotated[
        AnalysisEngine,
        typer.Option(
            "--engine",
            help="memory (the answers held as records), sql (the run's answers.parquet "
            "aggregated by DuckDB, out of core) or auto: sql from 1,000,000 answers on. "
            "The figures are the same.",
        ),
    ] = AnalysisEngine.auto,
    lambda_study: Annotated[
        bool,
        typer.Option(
            "--lambda-study",
            help="Also give accuracy and R of each system and variant with the share of "
            "queries in gap groups (lambda) set to 0.1, 0.2, ... 0.9 by resampling whole "
            "groups: accuracy falls with lambda, R does not.",
        ),
    ] = False,
    lambda_targets: Annotated[
        list[float] | None,
        typer.Option(
            "--lambda-target",
            help="A lambda for the study, from 0 to 1 (repeatable; implies --lambda-study).",
        ),
    ] = None,
    lambda_draws: Annotated[
        int,
        typer.Option("--lambda-draws", min=1, help="Resamples per lambda, system and variant."),
    ] = DEFAULT_DRAWS,
) -> None:
    """Groups, robustness, retrieval database and module metrics, and paired tests:
    summary.json, summary.md and drilldown.jsonl in the run directory."""
    from ragaudit.judge.retrieval import check_rule
    from ragaudit.report.terminal import (
        blame_table,
        by_label_table,
        judge_failed_lines,
        label_tables,
        lambda_table,
        ranking_table,
        reliability_table,
        scan_table,
        stability_tables,
        system_tables,
    )
    from ragaudit.report.text import flaky_lines, verdict_lines

    if retrieval_rule is not None:
        check_rule(retrieval_rule)
    project = project_for(config_path)
    summary = project.analyze(
        neutral=list(neutral or []),
        retrieval_rule=retrieval_rule,
        seed=seed,
        system=system,
        llm_only=llm_only,
        outcome="retrieval" if outcome is Outcome.retrieval else "answer",
        engine=engine.value,
        lambda_study=lambda_study,
        lambda_targets=lambda_targets,
        lambda_draws=lambda_draws,
    )
    run = RunDir(project.run_dir)
    if outcome is Outcome.retrieval:
        console.print(
            f"outcome: retrieval correctness ({retrieval_rule or DEFAULT_RULE})", markup=False
        )
    for warning in summary.warnings:
        err_console.print(f"warning: {warning}", markup=False, style="yellow")
    for table in system_tables(summary):
        console.print(table)
    if summary.systems:
        console.print(blame_table(summary))
    for line in judge_failed_lines(summary):
        console.print(line, markup=False)
    for line in verdict_lines(summary.comparisons):
        console.print(line, markup=False)
    ranking = ranking_table(summary)
    if ranking is not None:
        console.print(ranking)
    label_table = by_label_table(summary)
    if label_table is not None:
        console.print(label_table)
    for line in verdict_lines(summary.label_comparisons):
        console.print(line, markup=False)
    if summary.labels is not None:
        for table in label_tables(summary.labels):
            console.print(table)
    if summary.weight_scan is not None:
        console.print(scan_table(summary.weight_scan))
    if summary.lambda_study is not None:
        console.print(lambda_table(summary.lambda_study))
    reliability = reliability_table(summary)
    if reliability is not None and summary.reference_free is not None:
        console.print(reliability)
        for figures in summary.reference_free.metrics.values():
            console.print(figures.sentence, markup=False)
    for table in stability_tables(summary):
        console.print(table)
    flaky = flaky_lines(summary)
    for line in flaky[:5]:
        console.print(f"flaky: {line}", markup=False)
    if len(flaky) > 5:
        console.print(f"... {len(flaky) - 5} more flaky queries in summary.md", markup=False)
    written = [run.summary, run.summary_md] + ([run.drilldown] if summary.systems else [])
    if not summary.systems:
        console.print(
            "no system was run yet: the summary holds the labels and the scan", markup=False
        )
    console.print("wrote " + ", ".join(str(p) for p in written), markup=False)
