"""The API's functions that need no project: a Python callable as a system under test,
and the regression gate and ranking comparison over run directories."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragaudit.analysis.gate import GateReport
from ragaudit.systems.adapters.function import CallableSystem

if TYPE_CHECKING:
    from ragaudit.analysis.ranking import RankingStudy
    from ragaudit.api.project import Project


def system(
    fn: Callable[..., Any], *, name: str | None = None, concurrency: int = 8
) -> CallableSystem:
    """A Python callable as a system under test, for :meth:`Project.run`: ``fn(question)``
    (or ``fn(question, record=QueryRecord)``), sync or async, returning the answer's text,
    or a :class:`ragaudit.Answer` with the ids of the documents it retrieved (so that
    ragaudit can tell the retriever's errors from the language model's). Its answers go to
    ``responses/<name>.jsonl`` (default name: the function's)."""
    from ragaudit.errors import UserError

    if not callable(fn):
        raise UserError(f"ra.system: {fn!r} is not callable: give the function that answers")
    label = name or getattr(fn, "__name__", None)
    if not label or label == "<lambda>":
        raise UserError("ra.system: give the system a name= (a lambda has none)")
    if not _NAME.fullmatch(label):
        raise UserError(
            f"ra.system: name {label!r}: a system's name is its responses file's name: use "
            "letters, digits, '_', '.' and '-', starting with a letter or digit"
        )
    return CallableSystem(label, fn, threads=concurrency)


# The names ragaudit.yaml allows its systems (systems.base.SystemOptions.name).
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


def _run_path(run: Project | str | Path) -> Path:
    return Path(run) if isinstance(run, str | Path) else run.run_dir


def gate(
    baseline: Project | str | Path, candidate: Project | str | Path, **options: Any
) -> GateReport:
    """The regression gate (``ragaudit gate``) on two run directories (or projects):
    ``.verdict`` (PASS, FAIL, UNTESTABLE), ``.exit_code``, ``.checks``; options as
    :func:`ragaudit.steps.gate.gate_runs` takes them (metrics, systems, margin, alpha,
    allow_partial, missing, min_coverage, max_undetectable, ...)."""
    from ragaudit.steps.gate import gate_runs

    return gate_runs(_run_path(baseline), _run_path(candidate), **options)


def assert_no_regression(
    baseline: Project | str | Path, candidate: Project | str | Path, **options: Any
) -> GateReport:
    """For pytest: :func:`gate`, raising AssertionError with the summary unless it passes
    (a regression, a missing system or an untestable check is not a pass)."""
    from ragaudit.steps.gate import assert_no_regression as assert_runs

    return assert_runs(_run_path(baseline), _run_path(candidate), **options)


def compare(run: Project | str | Path, **options: Any) -> RankingStudy:
    """Do the run's test sets rank its systems alike (``ragaudit compare``)? On a project,
    or a run directory; options as :meth:`Project.compare` takes them."""
    from ragaudit.api.project import Project
    from ragaudit.config import Config

    if isinstance(run, Project):
        return run.compare(**options)
    path = Path(run)
    if not path.is_dir():
        from ragaudit.errors import UserError

        raise UserError(f"{path}: no such run directory")
    config = Config()
    config.run.root, config.run.name = path.parent, path.name
    return Project(config, progress="none").compare(**options)
