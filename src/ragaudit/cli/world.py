"""``ragaudit world``: a fictitious company to test RAG on, optionally rewritten by the LLM."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from ragaudit.cli.common import session_for
from ragaudit.cli.console import console, err_console
from ragaudit.cli.options import (
    Engine,
    OnFailure,
)
from ragaudit.cli.progress import counting_bar
from ragaudit.config import load_config
from ragaudit.rundir import RunDir

if TYPE_CHECKING:
    from ragaudit.steps.world import RewriteSummary


def world_cmd(
    out: Annotated[Path, typer.Argument(help="Folder to write the world into.")] = Path("world"),
    size: Annotated[
        int, typer.Option("--size", min=20, help="Rows across all tables (50 to 1,000,000+).")
    ] = 60,
    seed: Annotated[int, typer.Option("--seed", help="Same seed, same world.")] = 0,
    engine: Annotated[
        Engine, typer.Option("--engine", help="The database to write.")
    ] = Engine.sqlite,
    force: Annotated[bool, typer.Option("--force", help="Replace a non-empty folder.")] = False,
    llm: Annotated[
        bool,
        typer.Option(
            "--llm",
            help="Rewrite the reports in free prose with the LLM, each checked by reading "
            "comprehension against the database (resumes an unfinished rewrite of OUT).",
        ),
    ] = False,
    model: Annotated[
        str | None,
        typer.Option("--model", help="LLM for --llm (default: the world's llm.model, local)."),
    ] = None,
    on_failure: Annotated[
        OnFailure,
        typer.Option(
            "--on-failure",
            help="A report whose rewrite fails the check even after a repair: keep its "
            "template wording (template) or leave it out of the corpus (drop).",
        ),
    ] = OnFailure.template,
) -> None:
    """Generate a fictitious company (database and project reports) to test RAG on."""
    from ragaudit.world.build import WorldSummary, build_world, read_world

    start = time.perf_counter()
    summary: WorldSummary | None = None
    if llm and not force:  # an unfinished rewrite of this very world goes on
        summary = read_world(out, size=size, seed=seed, engine=engine.value)
    if summary is None:
        with err_console.status("generating") as status:
            summary = build_world(
                out,
                size=size,
                seed=seed,
                engine=engine.value,
                force=force,
                on_step=lambda step: status.update(f"generating: {step}"),
            )
    rewrite = None
    if llm:
        rewrite = _rewrite_world(out, model, on_failure)
        summary = read_world(out, size=size, seed=seed, engine=engine.value) or summary
    table = Table(title=f"World -> {out}", title_justify="left")
    table.add_column("")
    table.add_column("count", justify="right")
    for name, n in summary.rows.items():
        table.add_row(f"{name} rows", str(n))
    table.add_row("documents (project reports)", str(summary.documents))
    table.add_row("facts stated in documents", str(summary.facts))
    if rewrite is not None:
        table.add_row("rewritten by the LLM, checked", str(rewrite.rewritten))
        table.add_row("repaired after a failed check", str(len(rewrite.repaired)))
        kept = "kept in template wording" if on_failure is OnFailure.template else "dropped"
        table.add_row(f"failed the check twice ({kept})", str(len(rewrite.failed)))
    console.print(table)
    if rewrite is not None and (rewrite.repaired or rewrite.failed):
        console.print(f"repaired: {', '.join(rewrite.repaired) or '-'}", markup=False)
        console.print(f"failed: {', '.join(rewrite.failed) or '-'}", markup=False)
        console.print(f"details: {out / 'rewrite.jsonl'}", markup=False)
    console.print(
        f"wrote {summary.database.name}, documents.jsonl, document_facts.jsonl, world.json and "
        f"ragaudit.yaml in {time.perf_counter() - start:.1f} s; next: cd {out} && "
        "ragaudit templates sql && ragaudit templates text && ragaudit generate",
        markup=False,
    )


def _rewrite_world(out: Path, model: str | None, on_failure: OnFailure) -> RewriteSummary:
    """Rewrite the world's reports with the LLM named by its ragaudit.yaml (or ``model``),
    with a progress bar; the LLM cache and usage live in the world folder."""

    from ragaudit.steps.world import rewrite_world

    config = load_config(out / "ragaudit.yaml")
    if model:
        config.llm.model = model
    run = RunDir(out)
    run.llm_cache.parent.mkdir(parents=True, exist_ok=True)
    bar = counting_bar()
    task = bar.add_task("rewriting reports", total=None)
    with session_for(config, run) as session, session.llm("world --llm") as client, bar:
        assert client is not None
        return rewrite_world(
            out,
            client,
            on_failure="drop" if on_failure is OnFailure.drop else "template",
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
