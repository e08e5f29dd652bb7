"""The API's functions that need no project: a Python callable as a system under test,
and the regression gate and ranking comparison over run directories."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragaudit.analysis.gate import DEFAULT_MIN_COVERAGE, GateReport, MissingPolicy
from ragaudit.api.calls import step, twin
from ragaudit.config import DEFAULT_CONFIG_NAME
from ragaudit.judge.retrieval import DEFAULT_RULE, RetrievalRule
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
    ``responses/<name>.jsonl`` (default name: the function's). A function that takes
    ``repeat`` is told which asking of the question each call is (``run(...,
    repeat=N)``: 0 to N - 1), to seed itself with."""
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


def _names(value: list[str] | str | None, what: str) -> list[str] | None:
    """A list of names; one name given as a string is that one (not its characters)."""
    if value is None or isinstance(value, str):
        return None if value is None else [value]
    from ragaudit.errors import UserError

    names = list(value)
    if not all(isinstance(v, str) for v in names):
        raise UserError(f"{what}: give names as strings, not {names!r}")
    return names


def _pairs(pairs: Mapping[str, str] | None) -> dict[str, str] | None:
    """``pairs`` as the gate takes it: candidate system -> baseline system, names as text."""
    if pairs is None:
        return None
    from ragaudit.errors import UserError

    if not isinstance(pairs, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in pairs.items()
    ):
        raise UserError(
            f"pairs: give candidate system -> baseline system names, e.g. {{'dense': "
            f"'bm25'}}, not {pairs!r}"
        )
    return dict(pairs)


def _gate_options(
    metrics: list[str] | str | None,
    systems: list[str] | str | None,
    pairs: Mapping[str, str] | None,
    resamples: int,
    retrieval_rule: RetrievalRule,
    options: dict[str, Any],
) -> dict[str, Any]:
    return {
        "metrics": _names(metrics, "metrics"),
        "systems": _names(systems, "systems"),
        "pairs": _pairs(pairs),
        "n_perm": resamples,
        "rule": retrieval_rule,
        **options,
    }


@step
def gate(
    baseline: Project | str | Path,
    candidate: Project | str | Path | None = None,
    *,
    metrics: list[str] | str | None = None,
    systems: list[str] | str | None = None,
    pairs: Mapping[str, str] | None = None,
    margin: float = 0.0,
    alpha: float = 0.05,
    resamples: int = 2000,
    seed: int = 0,
    retrieval_rule: RetrievalRule = DEFAULT_RULE,
    allow_partial: bool = False,
    missing: MissingPolicy = "fail",
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    max_undetectable: float | None = None,
) -> GateReport:
    """The regression gate (``ragaudit gate``) on two run directories (or projects), with
    the options of ``ragaudit gate`` (``metrics``, ``systems`` and ``pairs`` are its
    repeatable ``--metric``, ``--system`` and ``--pair``): ``.verdict`` (PASS, FAIL,
    UNTESTABLE), ``.exit_code``, ``.checks``. ``pairs`` maps a candidate system to the
    baseline system it is gated against (``{"dense": "bm25"}``), instead of each system
    against its namesake; without ``candidate``, both are systems of the baseline run
    (two configurations of one run). A bad option is a :class:`ragaudit.UserError`."""
    from ragaudit.steps.gate import gate_runs

    options = _gate_options(
        metrics, systems, pairs, resamples, retrieval_rule,
        {"margin": margin, "alpha": alpha, "seed": seed, "allow_partial": allow_partial,
         "missing": missing, "min_coverage": min_coverage,
         "max_undetectable": max_undetectable},
    )  # fmt: skip
    base = _run_path(baseline)
    return gate_runs(base, base if candidate is None else _run_path(candidate), **options)


def assert_no_regression(
    baseline: Project | str | Path,
    candidate: Project | str | Path | None = None,
    *,
    metrics: list[str] | str | None = None,
    systems: list[str] | str | None = None,
    pairs: Mapping[str, str] | None = None,
    margin: float = 0.0,
    alpha: float = 0.05,
    resamples: int = 2000,
    seed: int = 0,
    retrieval_rule: RetrievalRule = DEFAULT_RULE,
    allow_partial: bool = False,
    missing: MissingPolicy = "fail",
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    max_undetectable: float | None = None,
) -> GateReport:
    """For pytest: :func:`gate` (the same options), raising AssertionError with the
    summary unless it passes (a regression, a missing system or an untestable check is
    not a pass)."""
    __tracebackhide__ = True  # pytest shows the gate's summary, not this function's source
    from ragaudit.steps.gate import gate_markdown

    report = gate(
        baseline, candidate, metrics=metrics, systems=systems, pairs=pairs, margin=margin,
        alpha=alpha,
        resamples=resamples, seed=seed, retrieval_rule=retrieval_rule,
        allow_partial=allow_partial, missing=missing, min_coverage=min_coverage,
        max_undetectable=max_undetectable,
    )  # fmt: skip
    if not report.passed:
        raise AssertionError(gate_markdown(report))
    return report


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


# The async twins: each awaits its call in a worker thread.
agate = twin(gate)
acompare = twin(compare)


def init(
    path: str | Path = DEFAULT_CONFIG_NAME, *, documents: bool = False, force: bool = False
) -> Path:
    """Write a commented example ragaudit.yaml at ``path`` (``ragaudit init``) and return
    its path: for a database (the example one until ``database.url`` is set), or with
    ``documents`` for a folder of documents and no database, so that a notebook starts a
    project as the command line does. An existing file is a :class:`ragaudit.UserError`
    unless ``force``; nothing is written then."""
    from ragaudit.api.calls import on_command_line
    from ragaudit.config import example_config
    from ragaudit.errors import ConfigError
    from ragaudit.records.io import atomic_write_text

    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"{target} is a folder: give the path of the file to write")
    if target.exists() and not force:
        how = "--force" if on_command_line() else "force=True"
        raise ConfigError(f"{target} already exists (use {how} to overwrite it)")
    atomic_write_text(target, example_config(documents=documents))
    return target


def next_steps(documents: bool) -> str:
    """What to do after :func:`init`: set the database (or the corpus) and the model, then
    check the setup with ``doctor``."""
    if documents:
        return (
            "put your documents in documents/ (or set corpus.path) and set llm.model, then "
            "run: ragaudit doctor, then ragaudit generate --documents"
        )
    return "edit database.url and llm.model, then run: ragaudit doctor"
