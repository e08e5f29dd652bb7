"""What every command shares: the configuration with its command-line overrides, and
the LLM session of a command."""

from __future__ import annotations

from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

from ragaudit.cli.console import console, usage_table
from ragaudit.cli.progress import prepare_embedded_model
from ragaudit.config import DEFAULT_CONFIG_NAME, Config, assign, load_config
from ragaudit.rundir import RunDir
from ragaudit.steps.session import Session, SessionHooks

if TYPE_CHECKING:
    from ragaudit.api.project import Project


def load_run(
    config_path: Path | None, example: bool = False, db: str | None = None, llm: str | None = None
) -> Config:
    """The configuration with command-line overrides applied."""
    config = resolve_config(config_path)
    if example:
        config.database.url = "example"
    if db:
        assign(config.database, "url", db, "--db")
    if llm:
        assign(config.llm, "model", llm, "--llm")
    return config


# ``ragaudit -c FILE VERB``: the file given before the verb, for a verb given none.
_BEFORE_VERB: ContextVar[Path | None] = ContextVar("ragaudit_config_before_verb", default=None)


def set_config_before_verb(path: Path | None) -> None:
    """Remember ``-c FILE`` given before the verb (``ragaudit -c x.yaml run``), as git
    takes ``-C``: each invocation sets it, so none leaks into the next."""
    _BEFORE_VERB.set(path)


def resolve_config(path: Path | None) -> Config:
    """The configuration from ``path`` (the verb's ``-c``, else the one before the verb),
    else ``./ragaudit.yaml`` if present, else defaults."""
    if path is None:
        path = _BEFORE_VERB.get()
    if path is None:
        default = Path(DEFAULT_CONFIG_NAME)
        path = default if default.exists() else None
    return load_config(path)


def session_hooks() -> SessionHooks:
    """What the user sees of an LLM session: the embedded model assembled with a progress
    bar, and each step's LLM usage printed when it ends."""
    return SessionHooks(
        assemble_model=prepare_embedded_model,
        show_usage=lambda meter: console.print(usage_table(meter)),
    )


def session_for(config: Config, run: RunDir) -> Session:
    """The LLM session of one command over ``run``."""
    return Session(config, run, session_hooks())


def project_for(
    config_path: Path | None,
    example: bool = False,
    db: str | None = None,
    llm: str | None = None,
    *,
    rate: bool = False,
    transient: bool = True,
) -> Project:
    """The API's project for one command: the configuration with the command line's
    overrides, rich bars on stderr, and each step's LLM usage printed when it ends."""
    from ragaudit.api.project import Project
    from ragaudit.cli.progress import CliProgress

    return Project(
        load_run(config_path, example, db, llm),
        progress=CliProgress(rate=rate, transient=transient),
        session_hooks=session_hooks(),
    )
