"""``ragaudit scan``: Recall@k of a hybrid retriever over text weights, per question label."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragaudit.cli.common import project_for
from ragaudit.cli.console import console
from ragaudit.cli.options import ConfigOption
from ragaudit.rundir import RunDir


def _weights(text: str) -> list[float]:
    try:
        return [float(w) for w in text.split(",") if w.strip()]
    except ValueError:
        raise typer.BadParameter(f"{text!r}: give weights as numbers separated by commas") from None


def scan_cmd(
    config_path: ConfigOption = None,
    k: Annotated[int, typer.Option("--k", min=1, help="The cut-off of Recall@k.")] = 5,
    weights: Annotated[
        str,
        typer.Option("--weights", help="Text weights, comma-separated (0 dense, 1 lexical)."),
    ] = "0,0.05,0.1,0.2,0.5,1",
    corpus: Annotated[
        Path | None,
        typer.Option(
            "--corpus",
            help="Documents to search (default: the labelled pairs' contexts, else corpus.path).",
        ),
    ] = None,
) -> None:
    """Scan the text weight of a hybrid retriever (BM25 + dense): Recall@k per weight, per
    question label and for all queries, as "Know Your RAG"'s Table 2; writes scan.json.
    Needs the dense extra; no LLM."""
    from ragaudit.report.terminal import scan_table

    parsed = _weights(weights)
    project = project_for(config_path)
    result = project.scan(k=k, weights=parsed, corpus=corpus)
    run = RunDir(project.run_dir)
    console.print(scan_table(result))
    for reason, n in sorted(result.left_out.items()):
        console.print(f"left out: {n} queries, {reason}", markup=False)
    for note in result.notes:
        console.print(f"note: {note}", markup=False)
    console.print(f"wrote {run.scan}", markup=False)
