"""``ragaudit init``: write a commented example ragaudit.yaml."""

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
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented example ragaudit.yaml."""
    if path.exists() and not force:
        raise ConfigError(f"{path} already exists (use --force to overwrite it)")
    from ragaudit.records.io import atomic_write_text

    atomic_write_text(path, example_config())
    console.print(
        f"wrote {path}: edit database.url and llm.model, then run: ragaudit doctor", markup=False
    )
