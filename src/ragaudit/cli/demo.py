"""``ragaudit demo``: every step on a generated company, offline."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragaudit.cli.common import session_hooks
from ragaudit.cli.console import console
from ragaudit.cli.options import (
    LLMOption,
)
from ragaudit.cli.progress import CliProgress


def demo_cmd(
    out: Annotated[Path, typer.Argument(help="Folder for the world and the run.")] = Path(
        "ragaudit-demo"
    ),
    size: Annotated[int, typer.Option("--size", min=20, help="Rows of the company.")] = 60,
    groups: Annotated[
        int, typer.Option("--groups", min=1, help="Semantic groups per question template.")
    ] = 3,
    templates: Annotated[
        int, typer.Option("--templates", min=1, max=6, help="Question templates.")
    ] = 4,
    no_llm: Annotated[
        bool, typer.Option("--no-llm", help="Word every question with the verbalizer.")
    ] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the world.")] = 0,
    llm: LLMOption = None,
    reference_free: Annotated[
        bool,
        typer.Option(
            "--reference-free",
            help="Also score every answer with the reference-free metrics and report how "
            "far each agrees with the grounded verdicts (many more LLM calls).",
        ),
    ] = False,
) -> None:
    """Everything ragaudit does, offline, on a generated company: world, templates,
    dataset, two RAG systems, judging, analysis and report.html. Resumable."""
    from ragaudit.api.world import demo

    start = time.perf_counter()
    result = demo(
        out,
        size=size,
        seed=seed,
        templates=templates,
        groups=groups,
        use_llm=not no_llm,
        llm=llm or "local",
        reference_free=reference_free,
        progress=CliProgress(),
        session_hooks=session_hooks(),
    )
    table = Table(title="Where the time went", title_justify="left")
    for header in ("step", "seconds", ""):
        table.add_column(
            header, justify="right" if header == "seconds" else "left", overflow="fold"
        )
    for step, (seconds, note) in result.timings.items():
        table.add_row(step, f"{seconds:.1f}", escape(note))
    console.print(table)
    from ragaudit.report.build import SOURCE_NAMES
    from ragaudit.report.summary_file import read_summary

    summary = read_summary(result.run.summary)
    # Each half on its own (the pooled comparisons pair wordings of different halves,
    # which share no group): keyword-top1's wordings compared, answers and retrieval.
    halves = {
        name: summary.by_source[name].comparisons
        for name in sorted(summary.by_source, key=lambda name: name != "sql")  # SQL first
    }
    for name, found in (halves or {"": summary.comparisons}).items():
        if name:
            console.print(f"{SOURCE_NAMES.get(name, name)}:", markup=False)
        for c in found:
            if c.a.system == c.b.system == "keyword-top1":
                console.print(c.verdict, markup=False)
    if summary.reference_free is not None:
        console.print("Reference-free metrics against the grounded verdicts:", markup=False)
        for figures in summary.reference_free.metrics.values():
            console.print(figures.sentence, markup=False)
    console.print(
        f"demo finished in {time.perf_counter() - start:.0f} s; report: {result.report}",
        markup=False,
    )
