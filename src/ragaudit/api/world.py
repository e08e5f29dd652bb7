"""``ra.make_world`` and ``ra.demo``: a fictitious company to test RAG on, and the whole journey
on one, from Python, with the same files as ``ragaudit world`` and ``ragaudit demo``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ragaudit.api.calls import step, twin
from ragaudit.api.progress import Progress, ProgressChoice, make_progress
from ragaudit.api.project import Project

if TYPE_CHECKING:
    from ragaudit.steps.demo import DemoResult
    from ragaudit.steps.session import SessionHooks
    from ragaudit.steps.world import RewriteSummary
    from ragaudit.world.build import WorldSummary


@dataclass(frozen=True)
class World:
    """A generated company: its folder, what was built (``summary``: rows per table,
    documents, facts stated in them) and, when its reports were rewritten by the LLM, how
    that went (``rewrite``). :meth:`project` opens it."""

    path: Path
    summary: WorldSummary
    rewrite: RewriteSummary | None = None

    def project(self, **options: Any) -> Project:
        """The world's own project: its ragaudit.yaml, its paths taken against its folder
        (``options`` as :class:`Project` takes them: ``llm=``, ``run=``, ...)."""
        return Project(self.path / "ragaudit.yaml", root=self.path, **options)


@step
def make_world(
    out: str | Path = "world",
    *,
    size: int | None = None,
    seed: int = 0,
    engine: Literal["sqlite", "duckdb"] | None = None,
    force: bool = False,
    rewrite: bool = False,
    model: str | None = None,
    on_failure: Literal["template", "drop"] = "template",
    from_db: str | None = None,
    tables: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    rename: bool = False,
    holes: float = 0.1,
    names: Mapping[str, Sequence[str]] | None = None,
    progress: ProgressChoice | Progress = "auto",
    session_hooks: SessionHooks | None = None,
) -> World:
    """Generate a fictitious company into ``out`` (``ragaudit world``): a database of
    ``size`` rows (default 60), project reports stating some of its facts, and a
    ragaudit.yaml for both; the same ``seed``, the same world. ``rewrite``: rewrite the
    reports in free prose with the LLM (``model``, default the world's local one), each
    checked against the database (a report failing twice keeps its template wording, or
    with ``on_failure="drop"`` leaves the corpus). A non-empty ``out`` is refused unless
    ``force``.

    ``from_db`` (a database URL, ``ragaudit world --from-db``): a world of the user's own
    database instead, in a SQLite copy of it: one profile per row of ``tables`` (default:
    every table with a one-column primary key that links no others) stating ``columns``
    (``"Table.Column"``, default all) but for a ``holes`` share of the facts, with the
    rows' names made fictitious in the copy and the documents when ``rename``. ``names``
    says which columns name a table's rows (``{"Employee": ["FirstName", "LastName"]}``:
    one column, or a first and a last name), where the rule that finds them would choose
    otherwise; a column that is missing, repeats a value or is mostly NULL is refused."""
    from ragaudit.errors import UserError
    from ragaudit.steps.world import make_world as build
    from ragaudit.world.from_db import FromDb

    source = None
    if from_db is not None:
        for name, given in (("size", size), ("engine", engine)):
            if given is not None:
                raise UserError(
                    f"world: --{name} ({name}=) is for a generated company; a world from a "
                    "database (--from-db) has its rows, in a SQLite copy"
                )
        if not 0.0 <= holes < 1.0:
            raise UserError(f"ra.make_world: holes={holes}: give a share from 0 up to 1")
        source = FromDb(
            from_db,
            tuple(tables) if tables else None,
            tuple(columns) if columns else None,
            rename,
            holes,
            tuple((table, tuple(cols)) for table, cols in names.items()) if names else None,
        )
    elif tables or columns or rename or names:
        raise UserError(
            "ra.make_world: tables=, columns=, rename= and names= are for a world from_db="
        )
    size = 60 if size is None else size
    engine = engine or "sqlite"
    if size < 20:
        raise UserError(f"ra.make_world: size={size}: give at least 20 rows")
    if engine not in ("sqlite", "duckdb"):
        raise UserError(f"ra.make_world: engine={engine!r}: use 'sqlite' or 'duckdb'")
    if on_failure not in ("template", "drop"):
        raise UserError(f"ra.make_world: on_failure={on_failure!r}: use 'template' or 'drop'")
    display = make_progress(progress)
    try:
        summary, rewritten = build(
            Path(out),
            size=size,
            seed=seed,
            engine=engine,
            force=force,
            rewrite=rewrite,
            model=model,
            on_failure=on_failure,
            hooks=session_hooks,
            progress=display,
            from_db=source,
        )
    finally:
        display.close()
    return World(Path(out), summary, rewritten)


@step
def demo(
    out: str | Path = "ragaudit-demo",
    *,
    size: int = 60,
    seed: int = 0,
    templates: int = 4,
    groups: int = 3,
    use_llm: bool = True,
    llm: str = "local",
    reference_free: bool = False,
    progress: ProgressChoice | Progress = "auto",
    session_hooks: SessionHooks | None = None,
) -> DemoResult:
    """Everything ragaudit does, offline, on a generated company (``ragaudit demo``):
    world, templates, dataset, two RAG systems, judging, analysis and report.html, into
    ``out``. Resumable: a second call does only what is missing. ``use_llm=False`` words
    every question with the verbalizer and judges with the matchers only. Returns where
    the run and report are, and the seconds of each step (``.timings``)."""
    from ragaudit.errors import UserError
    from ragaudit.steps.demo import run_demo

    if size < 20:
        raise UserError(f"ra.demo: size={size}: give at least 20 rows")
    if not 1 <= templates <= 6:
        raise UserError(f"ra.demo: templates={templates}: give 1 to 6 question templates")
    if groups < 1:
        raise UserError(f"ra.demo: groups={groups}: give at least 1 group per template")
    display = make_progress(progress)
    try:
        return run_demo(
            Path(out),
            size=size,
            seed=seed,
            templates=templates,
            groups=groups,
            use_llm=use_llm,
            llm=llm,
            hooks=session_hooks,
            progress=display,
            reference_free=reference_free,
        )
    finally:
        display.close()


amake_world = twin(make_world)
ademo = twin(demo)
