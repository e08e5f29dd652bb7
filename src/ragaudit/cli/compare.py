"""``ragaudit compare``: do the run's test sets rank its systems alike?"""

from __future__ import annotations

from typing import Annotated

import typer

from ragaudit.cli.common import project_for
from ragaudit.cli.console import console, err_console
from ragaudit.cli.options import ConfigOption, RetrievalRuleOption, SeedOption, SetSplit
from ragaudit.judge.retrieval import DEFAULT_RULE
from ragaudit.rundir import RunDir


def compare_cmd(
    config_path: ConfigOption = None,
    metric: Annotated[
        str,
        typer.Option(
            "--metric",
            help="accuracy, robustness, accuracy_retrieval, recall@K, mrr, ndcg@K (from the "
            "responses: no judging needed) or a reference-free metric (faithfulness, ...).",
        ),
    ] = "accuracy",
    by: Annotated[
        SetSplit,
        typer.Option(
            "--by",
            help="What tells the test sets apart: source (SQL-grounded, document-generated, "
            "imported), variant (wording style) or label (question type).",
        ),
    ] = SetSplit.source,
    reference: Annotated[
        str | None,
        typer.Option(
            "--reference",
            help="The set the others are compared with (default: sql, else imported, else "
            "the first).",
        ),
    ] = None,
    systems: Annotated[
        list[str] | None,
        typer.Option(
            "--system",
            help="Only the systems matching this shell pattern, e.g. 'ret-*' (repeatable).",
        ),
    ] = None,
    alpha: Annotated[
        float,
        typer.Option(
            "--alpha",
            min=0.0001,
            max=0.5,
            help="Significance of a separated pair (Holm-corrected over the pairs).",
        ),
    ] = 0.05,
    resamples: Annotated[
        int, typer.Option("--resamples", min=100, help="Bootstrap and permutation resamples.")
    ] = 1000,
    seed: SeedOption = 0,
    retrieval_rule: RetrievalRuleOption = DEFAULT_RULE,
) -> None:
    """Rank the systems on each test set of the run and say how far the rankings agree:
    Kendall's tau-b with a bootstrap interval, and the pairs the reference set separates
    significantly that another set reverses. Writes compare.json and compare.md."""
    from ragaudit.judge.retrieval import check_rule
    from ragaudit.report.compare import terminal_tables

    check_rule(retrieval_rule)
    project = project_for(config_path)
    study = project.compare(
        metric=metric,
        by=by.value,
        reference=reference,
        systems=systems,
        alpha=alpha,
        resamples=resamples,
        seed=seed,
        retrieval_rule=retrieval_rule,
    )
    run = RunDir(project.run_dir)
    for system, why in study.left_out.items():
        err_console.print(f"left out: {system}: {why}", markup=False, style="yellow")
    for table in terminal_tables(study):
        console.print(table)
    for ranking in study.sets:
        for note in ranking.notes:
            err_console.print(f"warning: {ranking.name}: {note}", markup=False, style="yellow")
    for agreement in study.agreements:
        console.print(agreement.sentence, markup=False)
    console.print(f"wrote {run.compare} and {run.compare_md}", markup=False)
