"""``ragaudit init``: write a commented example ragaudit.yaml, for a database or (with
``--documents``) for documents only."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragaudit.cli.console import console
from ragaudit.config import DEFAULT_CONFIG_NAME


def init(
    path: Annotated[Path, typer.Argument(help="Where to write the file.")] = Path(
        DEFAULT_CONFIG_NAME
    ),
    documents: Annotated[
        bool,
        typer.Option(
            "--documents",
            help="For documents only: a corpus path, no database, and built-in systems "
            "that retrieve from the corpus.",
        ),
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented example ragaudit.yaml: for a database (the example one until you
    set database.url), or with --documents for a folder of documents and no database."""
    from ragaudit.api.functions import init as write_config
    from ragaudit.api.functions import next_steps

    written = write_config(path, documents=documents, force=force)
    console.print(f"wrote {written}: {next_steps(documents)}", markup=False)
