"""``ragaudit init``: write a commented example ragaudit.yaml, for a database or (with
``--documents``) for documents only."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragaudit.cli.console import console
from ragaudit.config import DEFAULT_CONFIG_NAME, example_config
from ragaudit.errors import ConfigError


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
    if path.exists() and not force:
        raise ConfigError(f"{path} already exists (use --force to overwrite it)")
    from ragaudit.records.io import atomic_write_text

    atomic_write_text(path, example_config(documents=documents))
    if documents:
        next_steps = (
            "put your documents in documents/ (or set corpus.path) and set llm.model, then "
            "run: ragaudit doctor, then ragaudit generate --documents"
        )
    else:
        next_steps = "edit database.url and llm.model, then run: ragaudit doctor"
    console.print(f"wrote {path}: {next_steps}", markup=False)
