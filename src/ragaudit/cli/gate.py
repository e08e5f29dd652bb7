"""``ragaudit gate``: fail a CI job only when a candidate run is significantly worse."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragaudit.cli.console import console
from ragaudit.cli.options import RetrievalRuleOption, SeedOption
from ragaudit.judge.retrieval import DEFAULT_RULE


def gate_cmd(
    baseline: Annotated[Path, typer.Argument(help="The baseline's run directory.")],
    candidate: Annotated[Path, typer.Argument(help="The candidate's run directory.")],
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
    seed: SeedOption = 0,
    retrieval_rule: RetrievalRuleOption = DEFAULT_RULE,
) -> None:
    """Compare a candidate run with a baseline run on the same dataset, paired by semantic
    group. Exit 1 only when the candidate is significantly worse beyond the margin on a
    check (a system and a metric); 0 otherwise; 2 when nothing can be compared."""
    from ragaudit.judge.retrieval import check_rule
    from ragaudit.records.io import atomic_write_text
    from ragaudit.steps.gate import gate_junit, gate_markdown, gate_runs

    check_rule(retrieval_rule)
    report = gate_runs(
        baseline,
        candidate,
        metrics=metrics,
        systems=systems,
        margin=margin,
        alpha=alpha,
        n_perm=resamples,
        seed=seed,
        rule=retrieval_rule,
    )
    text = gate_markdown(report)
    console.print(text, markup=False, highlight=False)
    if markdown is not None:
        atomic_write_text(markdown, text)
    if junit is not None:
        atomic_write_text(junit, gate_junit(report))
    if not report.passed:
        raise typer.Exit(1)
