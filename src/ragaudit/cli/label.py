"""``ragaudit label``: the question-type composition of a test set, with agreement."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragaudit.cli.common import project_for
from ragaudit.cli.console import console, err_console
from ragaudit.cli.options import ConfigOption, Phrasing, RetryFailedOption
from ragaudit.rundir import RunDir


def label_cmd(
    config_path: ConfigOption = None,
    input_path: Annotated[
        Path | None,
        typer.Option(
            "--input",
            help="Pairs to label: SQuAD JSON, or JSONL of {id, context, question[, answer]} "
            "(default: the run's dataset, contexts from the corpus).",
        ),
    ] = None,
    llm: Annotated[
        list[str] | None,
        typer.Option(
            "--llm", help="A model that labels (repeatable: each is a rater). Default: llm.model."
        ),
    ] = None,
    phrasing: Annotated[
        list[Phrasing] | None,
        typer.Option("--phrasing", help="Prompt phrasing (repeatable: each is a rater)."),
    ] = None,
    samples: Annotated[
        int,
        typer.Option(
            "--samples", min=1, help="Sampled runs per model and phrasing (each is a rater)."
        ),
    ] = 1,
    human: Annotated[
        list[Path] | None,
        typer.Option("--human", help="Human labels, JSONL or CSV with id and label (repeatable)."),
    ] = None,
    no_llm: Annotated[
        bool, typer.Option("--no-llm", help="Only the human label files are raters.")
    ] = False,
    retry_failed: RetryFailedOption = False,
) -> None:
    """Label every (context, question) pair fact_single, summary, reasoning or unanswerable;
    writes labels.jsonl and prints the composition and the raters' agreement."""
    from ragaudit.report.terminal import label_tables

    project = project_for(config_path, rate=False)
    result = project.label(
        input_path=input_path,
        models=llm,
        phrasings=[p.value for p in phrasing] if phrasing else None,
        samples=samples,
        human=list(human) if human else None,
        use_llm=not no_llm,
        retry_failed=retry_failed,
    )
    run = RunDir(project.run_dir)
    for reason, n in sorted(result.skipped.items()):
        err_console.print(
            f"warning: {n} queries not labelled: {reason}", markup=False, style="yellow"
        )
    for table in label_tables(result.figures):
        console.print(table)
    figures = result.figures
    if figures.unanswerable_recall is not None and figures.unanswerable_false_alarms is not None:
        console.print(
            f"flagged unanswerable by the set, labelled unanswerable: "
            f"{figures.unanswerable_recall}; flagged answerable, labelled unanswerable: "
            f"{figures.unanswerable_false_alarms}",
            markup=False,
        )
    undecided = {r: n for r, n in figures.undecided.items() if n}
    if undecided:
        listed = ", ".join(f"{r} {n}" for r, n in undecided.items())
        console.print(
            f"undecided (no usable reply; each reason is in labels.jsonl): {listed}",
            markup=False,
        )
    if result.unlabelled:
        listed = ", ".join(f"{r} {n}" for r, n in sorted(result.unlabelled.items()))
        console.print(f"pairs a rater did not label: {listed}", markup=False)
    if input_path is None:
        kept = (
            f"; {result.dataset_kept} kept the label they were generated for"
            if result.dataset_kept
            else ""
        )
        console.print(
            f"dataset.jsonl: {result.dataset_labelled} queries labelled{kept}", markup=False
        )
    console.print(f"wrote {run.labels}", markup=False)
