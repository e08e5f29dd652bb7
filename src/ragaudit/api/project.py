"""``ra.Project``: the whole journey from Python, on the same run directory, with the same
locks, provenance, files and errors as the command line.

Each method is one step: it holds the run directory while it writes (a second writer, in
this process or another, gets the same one-line :class:`~ragaudit.errors.UserError` as on
the command line), records the step and its options in ``provenance.json`` and the
resolved ``ragaudit.yaml``, runs the step, and returns its typed result. A run started
here is continued by ``ragaudit`` commands in the same folder, and the other way round.

Every method has an async twin (``arun``, ``ajudge``, ...), and the plain ones also work
inside a running event loop (a notebook cell): the step then runs in a worker thread.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from ragaudit.api.calls import step, twin
from ragaudit.api.progress import Progress, ProgressChoice, make_progress
from ragaudit.api.tables import Answers, Dataset, read_answers
from ragaudit.config import DEFAULT_CONFIG_NAME, Config, assign, load_config
from ragaudit.errors import ConfigError, UserError
from ragaudit.judge.retrieval import DEFAULT_RULE, RetrievalRule, check_rule
from ragaudit.llm.estimate import DryRun
from ragaudit.llm.usage import UsageMeter
from ragaudit.rundir import RunDir
from ragaudit.steps.session import Session, SessionHooks
from ragaudit.systems.base import System
from ragaudit.yamlfile import validate_model

if TYPE_CHECKING:
    from ragaudit.analysis.ranking import RankingStudy
    from ragaudit.analysis.summary import Summary, WeightScan
    from ragaudit.generate.refresh import RefreshReport
    from ragaudit.harness.ask import SystemRunStats
    from ragaudit.llm.client import Backend
    from ragaudit.steps.doctor import DoctorReport
    from ragaudit.steps.documents import DocumentStats
    from ragaudit.steps.export import MlflowExport
    from ragaudit.steps.imports import ImportStats
    from ragaudit.steps.judge import JudgeReport
    from ragaudit.steps.label import LabelResult
    from ragaudit.steps.reference_free import ScoreEntry
    from ragaudit.steps.templates import SqlTemplatesResult, TextTemplatesResult


class _Default:
    """The project's own LLM (``judge()``), as against ``judge(llm=None)``: none."""

    def __repr__(self) -> str:
        return "<the project's LLM>"


PROJECT_LLM: Any = _Default()


def _as_system(value: Any) -> System:
    """A system object as it is, a plain function wrapped as ``ra.system(fn)``."""
    if hasattr(value, "answer") and hasattr(value, "name"):
        return value  # type: ignore[no-any-return]
    if callable(value):
        from ragaudit.api.functions import system

        return system(value)
    raise UserError(
        f"run: {value!r} is not a system: give a system's name, ra.system(fn, name=...) or a "
        "function"
    )


def _anchor(config: Config, root: Path) -> Config:
    """``config`` with its relative paths (the runs' folder, the corpus, the index folder,
    the gold rows and facts, a SQLite or DuckDB file) taken against ``root`` instead of
    the working directory."""
    config = config.model_copy(deep=True)
    if not config.run.root.is_absolute():
        config.run.root = root / config.run.root
    if config.corpus.path is not None and not config.corpus.path.is_absolute():
        config.corpus.path = root / config.corpus.path
    if config.harness.index_dir is not None and not config.harness.index_dir.is_absolute():
        config.harness.index_dir = root / config.harness.index_dir
    for name in ("gold_rows", "gold_facts"):
        path = getattr(config.generate, name)
        if path is not None and not path.is_absolute():
            setattr(config.generate, name, root / path)
    config.database.url = _anchor_url(config.database.url, root)
    return config


def _anchor_url(url: str | None, root: Path) -> str | None:
    """A SQLite or DuckDB URL naming a relative file, taken against ``root``."""
    for prefix in ("sqlite:///", "duckdb:///"):
        if url and url.startswith(prefix):
            rest = url[len(prefix) :]
            path, sep, query = rest.partition("?")
            if path and not path.startswith("/") and path != ":memory:":
                return prefix + str((root / path).resolve()) + sep + query
    return url


class Project:
    """One ragaudit project: its configuration and its run directory.

    ``config`` is a ragaudit.yaml (a path), a :class:`~ragaudit.config.Config`, or None
    (``./ragaudit.yaml`` where there is one, else the defaults). ``root`` is the folder
    the configuration's relative paths (runs, corpus, index, a SQLite or DuckDB file) are
    taken against (the working directory by default, as on the command line). ``db``
    overrides ``database.url`` (``"example"``: the bundled example database), ``llm`` the
    model (``"local"``, ``"openai:<model>"``, or a :class:`ragaudit.llm.Scripted`),
    ``run`` the run's name. ``progress``: ``auto`` (rich in a terminal, tqdm in a
    notebook), ``rich``, ``tqdm``, ``none``, or a
    :class:`~ragaudit.api.progress.Progress`. ``session_hooks``: what is shown of each
    step's LLM work (the command line prints its usage table); by default nothing, and
    :attr:`usage` holds the last step's.
    """

    def __init__(
        self,
        config: str | Path | Config | None = None,
        *,
        root: str | Path | None = None,
        db: str | None = None,
        llm: str | Backend | None = None,
        run: str | None = None,
        progress: ProgressChoice | Progress = "auto",
        session_hooks: SessionHooks | None = None,
    ) -> None:
        if isinstance(config, Config):
            resolved = config.model_copy(deep=True)
        elif config is not None:
            resolved = load_config(Path(config))
        else:
            default = Path(root or ".") / DEFAULT_CONFIG_NAME
            resolved = load_config(default if default.exists() else None)
        if root is not None:
            resolved = _anchor(resolved, Path(root))
        if db is not None:
            url = _anchor_url(db, Path(root)) if root is not None else db
            assign(resolved.database, "url", url, "db=")
        self._backends: dict[str, Backend] = {}
        if llm is not None:
            if isinstance(llm, str):
                assign(resolved.llm, "model", llm, "llm=")
            else:
                spec = getattr(llm, "spec", None) or f"scripted:{llm.model}"
                assign(resolved.llm, "model", spec, "llm=")
                self._backends[spec] = llm
        if run is not None:
            assign(resolved.run, "name", run, "run=")
        self.config: Config = validate_model(
            type(resolved), resolved.model_dump(), "ra.Project", None, error=ConfigError
        )
        self.progress = progress
        self.session_hooks = session_hooks
        self.usage: UsageMeter | None = None  # the LLM usage of the last step that asked one

    @classmethod
    def example(cls, root: str | Path = ".", **options: Any) -> Project:
        """A project on the bundled example database, its runs under ``root``."""
        return cls(Config(), root=root, db="example", **options)

    # -- the run directory -----------------------------------------------------------------

    @property
    def run_dir(self) -> Path:
        """The run directory: ``<run.root>/<run.name>``."""
        return RunDir.from_config(self.config).root

    def _run(self) -> RunDir:
        return RunDir.from_config(self.config)

    @contextlib.contextmanager
    def _step(
        self,
        name: str,
        options: dict[str, Any] | None = None,
        config: Config | None = None,
        create: bool = True,
    ) -> Iterator[RunDir]:
        """Hold the run directory while the step writes, and record the step first
        (``create``: make the run's folders, for the steps that fill them)."""
        run = self._run().create() if create else self._run()
        with run.holding(name):
            run.record_step(config or self.config, name, options)
            try:
                yield run
            except BaseException:
                run.end_step(name, "failed")
                raise
            run.end_step(name, "done")

    @contextlib.contextmanager
    def _session(
        self, run: RunDir, config: Config | None = None, *, retry_failed: bool = False
    ) -> Iterator[Session]:
        meters: list[UsageMeter] = []
        shown = self.session_hooks or SessionHooks()

        def show(meter: UsageMeter) -> None:
            meters.append(meter)
            shown.show_usage(meter)

        hooks = SessionHooks(assemble_model=shown.assemble_model, show_usage=show)
        with Session(
            config or self.config,
            run,
            hooks,
            backends=self._backends,
            retry_failed=retry_failed,
        ) as session:
            try:
                yield session
            finally:
                self.usage = meters[-1] if meters else None

    @contextlib.contextmanager
    def _progress(self) -> Iterator[Progress]:
        display = make_progress(self.progress)
        try:
            yield display
        finally:
            display.close()

    # -- templates -------------------------------------------------------------------------

    @step
    def templates_sql(
        self,
        *,
        generator: Literal["enumerator", "llm"] | None = None,
        from_reference: str | Path | None = None,
        overwrite: bool = False,
    ) -> SqlTemplatesResult:
        """Write ``templates/sql.yaml`` (``ragaudit templates sql``): SQL templates from the
        schema enumerator (offline), the LLM, or a GRAMMAR reference file; an existing file
        (which may hold your edits) is kept unless ``overwrite``. Returns the templates and,
        per table, why none were made."""
        from ragaudit.steps.templates import make_sql_templates

        config = self.config.model_copy(deep=True)
        if generator:
            config.templates.sql_generator = generator
        with (
            self._step("templates sql", config=config) as run,
            self._session(run, config) as session,
            session.llm("templates", config.templates.sql_generator == "llm") as client,
        ):
            return make_sql_templates(
                config,
                run,
                from_reference=Path(from_reference) if from_reference else None,
                overwrite=overwrite,
                llm=client,
            )

    @step
    def templates_text(
        self,
        *,
        verify: bool | None = None,
        generator: Literal["verbalizer", "llm"] | None = None,
        from_reference: dict[str, str | Path] | None = None,
        overwrite: bool = False,
        check: bool = True,
    ) -> TextTemplatesResult:
        """Word every SQL template in every style into ``templates/text.yaml`` (``ragaudit
        templates text``), then (``verify``; None: the configuration's
        ``templates.verify``, as the command line reads it) check each new wording asks
        what its SQL answers. Returns the wordings with the counts proposed / verified /
        rejected per style. ``check``: a UserError when no wording is usable (the command
        line prints the wordings first, then checks)."""
        from ragaudit.steps.templates import make_text_templates, require_usable

        config = self.config.model_copy(deep=True)
        if generator:
            config.templates.text_generator = generator
        if verify is not None:
            config.templates.verify = verify
        references = {k: Path(v) for k, v in (from_reference or {}).items()}
        use_llm = (
            config.templates.text_generator == "llm" and not references
        ) or config.templates.verify
        with (
            self._step("templates text", config=config) as run,
            self._session(run, config) as session,
            session.llm("templates", use_llm) as client,
            self._progress() as display,
        ):
            result = make_text_templates(
                config,
                run,
                references=references or None,
                overwrite=overwrite,
                llm=client,
                progress=display,
            )
        if check:
            require_usable(result)
        return result

    @step
    def verify_templates(self, *, recheck: bool = False) -> TextTemplatesResult:
        """Judge every wording of ``templates/text.yaml`` without a verdict (``ragaudit
        templates verify``; ``recheck``: all of them again)."""
        from ragaudit.steps.templates import verify_text_templates

        with (
            self._step("templates verify") as run,
            self._session(run) as session,
            session.llm("verify") as client,
            self._progress() as display,
        ):
            return verify_text_templates(
                self.config, run, client, recheck=recheck, progress=display
            )

    def check_templates(self) -> list[str]:
        """Revalidate ``templates/sql.yaml`` and ``templates/text.yaml`` against the
        database (``ragaudit templates check``): one line per problem, each naming the
        file and the line; empty when both files are valid. Reads only."""
        from ragaudit.steps.templates import check

        return check(self.config, self._run())

    # -- datasets --------------------------------------------------------------------------

    @overload
    def generate(
        self,
        *,
        balanced: bool | None = ...,
        allow_multi: bool | None = ...,
        include_unanswerable: bool | None = ...,
        include_null: bool | None = ...,
        max_groups_per_template: int | None = ...,
        seed: int | None = ...,
        unverified: bool | None = ...,
        dry_run: Literal[False] = ...,
    ) -> Dataset: ...

    @overload
    def generate(
        self,
        *,
        balanced: bool | None = ...,
        allow_multi: bool | None = ...,
        include_unanswerable: bool | None = ...,
        include_null: bool | None = ...,
        max_groups_per_template: int | None = ...,
        seed: int | None = ...,
        unverified: bool | None = ...,
        dry_run: Literal[True],
    ) -> DryRun: ...

    @step
    def generate(
        self,
        *,
        balanced: bool | None = None,
        allow_multi: bool | None = None,
        include_unanswerable: bool | None = None,
        include_null: bool | None = None,
        max_groups_per_template: int | None = None,
        seed: int | None = None,
        unverified: bool | None = None,
        dry_run: bool = False,
    ) -> Dataset | DryRun:
        """Instantiate the templates into ``dataset.jsonl`` (``ragaudit generate``): one
        semantic group per instantiated SQL query, asked in every usable wording, its
        answer executed on the database. Options left None keep the configuration's.
        Returns the :class:`Dataset` (``.stats``: what was kept and dropped).
        ``dry_run``: nothing is done; returns the LLM requests it would make (none: the
        answers are executed SQL) as a :class:`~ragaudit.llm.estimate.DryRun`."""
        from ragaudit.steps.generate import generate_dataset

        if dry_run:
            from ragaudit.steps.dry_run import dry_run_generate

            return dry_run_generate(self.config, self._run())

        updates = {
            "balanced": balanced,
            "allow_multi": allow_multi,
            "include_unanswerable": include_unanswerable,
            "include_null": include_null,
            "max_groups_per_template": max_groups_per_template,
            "seed": seed,
            "unverified": unverified,
        }
        options = self.config.generate.model_copy(deep=True)
        for key, value in updates.items():
            if value is not None:  # checked as the configuration's values are
                assign(options, key, value, f"generate --{key.replace('_', '-')}")
        config = self.config.model_copy(update={"generate": options})
        with self._step("generate", config=config) as run, self._progress() as display:
            stats = generate_dataset(self.config, run, options, progress=display)
            return Dataset.read(run, stats)

    @step
    def refresh(self, *, new: bool = False) -> RefreshReport:
        """Execute every grounded question's SQL again on the database as it is now
        (``ragaudit generate --refresh``) and classify each semantic group: unchanged (its
        questions, ids and records stay, so earlier verdicts stay valid), changed (the new
        reference under new question ids; the old ones' responses, judgements and scores
        move to ``retired/``, so no verdict is kept against a reference that is no longer
        true), vanished (a value it names is gone, or ``generate`` would leave it out now
        under the dataset's own rules: it leaves the dataset), new (bindings the dataset
        lacks; added only with ``new=True``). ``run`` and ``judge`` then ask and
        judge only what changed. Questions from documents or imported ones have no SQL and
        are left as they are. Returns the counts and every group that moved (``.moved``,
        ``.to_pandas()``), and the documents stating facts no longer true (``.stale``)."""
        from ragaudit.steps.refresh import refresh_dataset

        with (
            self._step("generate", {"refresh": True, "new": new}) as run,
            self._progress() as display,
        ):
            return refresh_dataset(self.config, run, new=new, progress=display)

    @overload
    def generate_documents(
        self,
        *,
        strategy: Literal["statements", "simple"] | None = ...,
        size: int | None = ...,
        mix: dict[str, float] | None = ...,
        seed: int | None = ...,
        retry_failed: bool = ...,
        dry_run: Literal[False] = ...,
    ) -> DocumentStats: ...

    @overload
    def generate_documents(
        self,
        *,
        strategy: Literal["statements", "simple"] | None = ...,
        size: int | None = ...,
        mix: dict[str, float] | None = ...,
        seed: int | None = ...,
        retry_failed: bool = ...,
        dry_run: Literal[True],
    ) -> DryRun: ...

    @step
    def generate_documents(
        self,
        *,
        strategy: Literal["statements", "simple"] | None = None,
        size: int | None = None,
        mix: dict[str, float] | Literal["uniform"] | None = None,
        seed: int | None = None,
        retry_failed: bool = False,
        dry_run: bool = False,
    ) -> DocumentStats | DryRun:
        """Write checked question-answer pairs from the corpus's documents into the
        dataset's document part (``ragaudit generate --documents``). ``mix``: label
        weights, or ``"uniform"`` for the four labels alike (None: the configured mix, by
        default answerable questions only). A rerun replays every
        reply from the cache, the unusable ones too (a rerun asks nothing);
        ``retry_failed`` asks those again (``--retry-failed``). ``dry_run``: nothing is
        asked or written; returns the requests, tokens and cost it would spend (a
        :class:`~ragaudit.llm.estimate.DryRun`)."""
        from pydantic import ValidationError

        from ragaudit.documents.options import DocumentOptions
        from ragaudit.steps.documents import generate_from_documents

        data = self.config.generate.documents.model_dump()
        updates = {"strategy": strategy, "size": size, "seed": seed, "mix": mix}
        data |= {k: v for k, v in updates.items() if v is not None}
        try:
            options = DocumentOptions.model_validate(data)
        except ValidationError as exc:
            raise UserError(f"generate.documents: {exc.errors()[0]['msg']}") from None
        config = self.config.model_copy(deep=True)
        config.generate.documents = options
        if dry_run:
            from ragaudit.steps.dry_run import dry_run_generate

            return dry_run_generate(config, self._run(), options)
        with (
            self._step("generate", {"retry_failed": retry_failed}, config) as run,
            self._session(run, retry_failed=retry_failed) as session,
            self._progress() as display,
        ):
            return generate_from_documents(session, options, progress=display)

    @step
    def import_questions(self, path: str | Path) -> ImportStats:
        """Add a question set of yours (SQuAD JSON, or JSON Lines of id, context, question,
        answer, answerable) as the dataset's imported part (``ragaudit generate
        --import``). Everything is checked before anything is written."""
        from ragaudit.steps.imports import import_questions

        run = self._run().create()
        with run.holding("generate"):
            stats = import_questions(self.config, run, Path(path))
            run.record_step(self.config, "generate", {"import": str(path)}, status="done")
        return stats

    @step
    def use_dataset(self, source: Project | str | Path) -> Dataset:
        """Ask this run the questions of another: ``source`` is a project, a run folder or
        a dataset.jsonl, copied (checked, atomically) into this run's folder. How a
        candidate run for :func:`ra.gate` is made: ``ra.Project(..., run="candidate")
        .use_dataset(baseline)``, then run and judge it. Refused where this run already has
        responses to another dataset (they would be scored against the wrong questions);
        copying the same dataset again changes nothing."""
        from ragaudit.records.io import atomic_write_text
        from ragaudit.store.records import read_queries

        path = source.run_dir if isinstance(source, Project) else Path(source)
        if path.is_dir():
            path = path / "dataset.jsonl"
        if not path.is_file():
            raise UserError(f"use_dataset: {path}: no such dataset file")
        text = path.read_text(encoding="utf-8")
        read_queries(path)  # every line a question, or a one-line error naming it
        with self._step("generate", {"dataset_from": str(path)}) as run:
            if run.dataset.exists() and run.dataset.read_text(encoding="utf-8") == text:
                return Dataset.read(run)
            answered = sorted(p.name for p in run.responses_dir.glob("*.jsonl"))
            if answered:
                raise UserError(
                    f"use_dataset: {run.root} already has responses ({answered[0]}) to "
                    "another dataset: give this run another name (run=...)"
                )
            atomic_write_text(run.dataset, text)
            return Dataset.read(run)

    def dataset(self) -> Dataset:
        """The run's dataset as it is on disk (whichever door wrote it)."""
        return Dataset.read(self._run())

    # -- asking and judging ----------------------------------------------------------------

    @overload
    def run(
        self,
        systems: Sequence[str | System] | None = ...,
        *,
        limit: int | None = ...,
        retry_errors: bool = ...,
        rerun: bool = ...,
        concurrency: int | None = ...,
        timeout: float | None = ...,
        repeat: int | None = ...,
        dry_run: Literal[False] = ...,
    ) -> dict[str, SystemRunStats]: ...

    @overload
    def run(
        self,
        systems: Sequence[str | System] | None = ...,
        *,
        limit: int | None = ...,
        retry_errors: bool = ...,
        rerun: bool = ...,
        concurrency: int | None = ...,
        timeout: float | None = ...,
        repeat: int | None = ...,
        dry_run: Literal[True],
    ) -> DryRun: ...

    @step
    def run(
        self,
        systems: Sequence[str | System] | None = None,
        *,
        limit: int | None = None,
        retry_errors: bool = False,
        rerun: bool = False,
        concurrency: int | None = None,
        timeout: float | None = None,
        repeat: int | None = None,
        dry_run: bool = False,
    ) -> dict[str, SystemRunStats] | DryRun:
        """Ask every system every question (``ragaudit run``): the configuration's systems,
        or those named, or systems of your own (``ra.system(fn, name=...)``). Resumable: a
        second call asks only what is missing, so a system changed under the same name
        keeps its old answers (and says so in its ``warnings``) unless ``rerun=True``,
        which asks every query again (``judge`` then judges the new answers). ``repeat``
        N asks every question N times (``run --repeat N``; default: each system's
        ``repeat:``, else once), so that ``judge`` judges every asking and ``analyze``
        gives each question's pass rate and the share of flaky ones. Returns per system
        what was asked and how it went. ``dry_run``: nothing is asked or written; returns
        the askings, LLM requests, tokens and cost it would spend (a
        :class:`~ragaudit.llm.estimate.DryRun`)."""
        from ragaudit.steps.run import run_systems, selected_systems

        config = self.config.model_copy(deep=True)
        # Checked as the configuration's values are: one line, never a traceback.
        if concurrency:
            assign(config.harness, "concurrency", concurrency, "run --concurrency")
        if timeout:
            assign(config.harness, "timeout_s", timeout, "run --timeout")
        if isinstance(systems, str):
            systems = [systems]
        names = [s for s in systems or [] if isinstance(s, str)]
        objects = [_as_system(s) for s in systems or [] if not isinstance(s, str)]
        chosen: list[Any] = []
        if names or not objects:
            chosen = list(selected_systems(config, names or None))
        chosen += objects
        if dry_run:
            from ragaudit.steps.dry_run import dry_run_run

            if repeat is not None and not 1 <= repeat <= 1000:
                raise UserError(f"repeat must be between 1 and 1000, not {repeat}")
            return dry_run_run(
                config,
                self._run(),
                chosen,
                limit=limit,
                retry_errors=retry_errors,
                rerun=rerun,
                repeat=repeat,
            )
        options = {
            "system": names + [s.name for s in objects] or None,
            "limit": limit,
            "retry_errors": retry_errors,
            "rerun": rerun,
            "timeout": timeout,
            "repeat": repeat,
        }
        with (
            self._step("run", options, config) as run,
            self._session(run, config) as session,
            self._progress() as display,
        ):
            return run_systems(
                session,
                chosen,
                limit=limit,
                retry_errors=retry_errors,
                rerun=rerun,
                repeat=repeat,
                progress=display,
            )

    @overload
    def judge(
        self,
        llm: Any = ...,
        *,
        systems: list[str] | None = ...,
        samples: int = ...,
        audit: int = ...,
        closed_domain: bool = ...,
        retrieval_rule: RetrievalRule = ...,
        check: bool = ...,
        retry_failed: bool = ...,
        dry_run: Literal[False] = ...,
    ) -> JudgeReport: ...

    @overload
    def judge(
        self,
        llm: Any = ...,
        *,
        systems: list[str] | None = ...,
        samples: int = ...,
        audit: int = ...,
        closed_domain: bool = ...,
        retrieval_rule: RetrievalRule = ...,
        check: bool = ...,
        retry_failed: bool = ...,
        dry_run: Literal[True],
    ) -> DryRun: ...

    @step
    def judge(
        self,
        llm: Any = PROJECT_LLM,
        *,
        systems: list[str] | None = None,
        samples: int = 1,
        audit: int = 0,
        closed_domain: bool = False,
        retrieval_rule: RetrievalRule = DEFAULT_RULE,
        check: bool = True,
        retry_failed: bool = False,
        dry_run: bool = False,
    ) -> JudgeReport | DryRun:
        """Judge every response (``ragaudit judge``): deterministic matchers first, the
        project's LLM for the rest. ``llm=None``: matchers only (``--no-llm``); what they
        cannot decide is recorded ``unmatched``, counted incorrect, and counted in the
        report. A model name or a :class:`ragaudit.llm.Scripted` judges with that instead.
        ``check``: a UserError when the LLM judge failed on every answer it was asked
        about (the command line prints the report first, then checks it). A rerun judges
        the ``judge-failed`` answers again from the cache (nothing is asked);
        ``retry_failed`` asks the LLM again for the replies it could not read
        (``--retry-failed``). ``dry_run``: nothing is asked or written; returns the
        requests, tokens and cost judging would spend, the requests the cache holds
        counted apart (a :class:`~ragaudit.llm.estimate.DryRun`)."""
        from ragaudit.steps.judge import check_counts, judge_run, require_judged

        check_rule(retrieval_rule)
        check_counts(samples=samples, audit=audit)
        judge = self
        if llm is not None and llm is not PROJECT_LLM:
            judge = Project(
                self.config, llm=llm, progress=self.progress, session_hooks=self.session_hooks
            )
        use_llm = llm is not None
        if dry_run:
            from ragaudit.steps.dry_run import dry_run_judge

            return dry_run_judge(
                judge.config,
                self._run(),
                use_llm=use_llm,
                systems=systems,
                samples=samples,
                closed_domain=closed_domain,
                rule=retrieval_rule,
            )
        options = {
            "system": systems,
            "samples": samples,
            "audit": audit,
            "closed_domain": closed_domain,
            "retrieval_rule": retrieval_rule,
            "no_llm": not use_llm,
            "retry_failed": retry_failed,
        }
        with (
            judge._step("judge", options) as run,
            judge._session(run, retry_failed=retry_failed) as session,
            self._progress() as display,
        ):
            report = judge_run(
                session,
                use_llm=use_llm,
                systems=systems,
                samples=samples,
                audit=audit,
                closed_domain=closed_domain,
                rule=retrieval_rule,
                progress=display,
            )
        self.usage = judge.usage
        if check:
            require_judged(report)
        return report

    @step
    def score(
        self,
        metrics: list[str] | None = None,
        *,
        systems: list[str] | None = None,
        retry_failed: bool = False,
    ) -> dict[str, ScoreEntry]:
        """Score the responses with the reference-free metrics (``ragaudit judge
        --reference-free``): faithfulness, answer_relevancy, context_precision,
        self_consistency; ``analyze`` then says how far each can be trusted.
        ``retry_failed``: replies stored unusable are asked again, not replayed."""
        from ragaudit.records.models import FREE_METRICS
        from ragaudit.steps.reference_free import score_run

        unknown = [m for m in metrics or [] if m not in FREE_METRICS]
        if unknown:
            raise UserError(
                f"unknown reference-free metric {unknown[0]!r}: use {', '.join(FREE_METRICS)}"
            )
        options = {
            "system": systems,
            "reference_free": True,
            "metric": metrics,
            "retry_failed": retry_failed,
        }
        with (
            self._step("judge", options) as run,
            self._session(run, retry_failed=retry_failed) as session,
            self._progress() as display,
        ):
            return score_run(
                session,
                systems=systems,
                metrics=metrics or None,  # type: ignore[arg-type]  # checked above
                progress=display,
            )

    @step
    def answers(self) -> Answers:
        """Every answer of the run joined with its question, verdict, scores and where it
        went wrong; ``.to_pandas()`` for a DataFrame. Its retrieval verdicts are the
        judge's, by the rule it judged with (``judge(retrieval_rule=...)``)."""
        return read_answers(self._run())

    # -- figures ---------------------------------------------------------------------------

    @step
    def analyze(
        self,
        *,
        neutral: list[str | Path] | None = None,
        system: str | None = None,
        retrieval_rule: RetrievalRule | None = None,
        seed: int = 0,
        llm_only: str | None = None,
        outcome: Literal["answer", "retrieval"] = "answer",
        engine: Literal["auto", "memory", "sql"] = "auto",
        lambda_study: bool = False,
        lambda_targets: Sequence[float] | None = None,
        lambda_draws: int | None = None,
    ) -> Summary:
        """Groups, robustness, the retrieval database, module blame and paired tests
        (``ragaudit analyze``): writes summary.json, summary.md and drilldown.jsonl and
        returns the typed :class:`~ragaudit.analysis.summary.Summary` (``.to_pandas()``).
        ``engine``: ``memory`` holds the answers as records; ``sql`` aggregates the run's
        answers.parquet with DuckDB, out of core; ``auto`` takes SQL from
        :data:`~ragaudit.steps.analyze.SQL_MIN_ROWS` answers on. The figures are the
        same. ``retrieval_rule``: by default the judge's (the rule the judged answers'
        retrieval verdicts were given by; ``all_gold`` for ``outcome="retrieval"`` and
        neutral files); another rule gives every retrieval verdict again by it, from the
        retrieved and gold ids, unless the judge applied the closed-domain rule (then judge
        again with that rule). ``lambda_study`` (``--lambda-study``): accuracy and R of each
        system and variant with the share of queries in gap groups set to each of
        ``lambda_targets`` (``--lambda-target``; default 0.1 to 0.9, and giving them asks
        for the study) by
        resampling whole groups, ``lambda_draws`` times each (``--lambda-draws``; default
        500): ``summary.lambda_study`` (``.lambda_to_pandas()``)."""
        from ragaudit.analysis.lambda_study import DEFAULT_DRAWS, DEFAULT_TARGETS
        from ragaudit.steps.analyze import checked_lambda, run_analysis

        if retrieval_rule is not None:
            check_rule(retrieval_rule)
        paths = [Path(p) for p in neutral or []]
        draws = DEFAULT_DRAWS if lambda_draws is None else lambda_draws
        targets = checked_lambda(
            list(lambda_targets) if lambda_targets else DEFAULT_TARGETS if lambda_study else None,
            draws,
        )
        options: dict[str, Any] = {
            "neutral": [str(p) for p in paths] or None,
            "retrieval_rule": retrieval_rule,
            "seed": seed,
            "system": system if paths else None,
            "llm_only": llm_only,
            "outcome": outcome,
            "engine": engine,
            # The thresholds the reference-free figures were read with come from the
            # config: recorded, so that a summary made again without its manifest uses them.
            "reference_free": self.config.reference_free.model_dump(mode="json"),
        }
        if targets is not None:  # recorded only when asked: older runs' records stay as they were
            options.update(lambda_targets=list(targets), lambda_draws=draws)
        with self._step("analyze", options, create=False) as run:
            return run_analysis(
                run,
                neutral=paths,
                rule=retrieval_rule,
                seed=seed,
                system=system,
                llm_only=llm_only,
                outcome=outcome,
                reference_free=self.config.reference_free,
                engine=engine,
                by="analyze",
                lambda_targets=targets,
                lambda_draws=draws,
            ).summary

    @step
    def report(self) -> Path:
        """Write report.html (``ragaudit report``) from what the earlier steps wrote; its
        path."""
        from ragaudit.steps.report import report_run

        run = self._run()
        with run.holding("report"):
            path = report_run(run)
            run.record_step(self.config, "report", status="done")
        return path

    @step
    def export_mlflow(
        self, *, tracking_uri: str | None = None, experiment: str = "ragaudit"
    ) -> MlflowExport:
        """Log the run to MLflow (``ragaudit export mlflow``): its configuration as
        parameters, every figure of summary.json with its 95% interval as metrics, and
        report.html, summary.json and the answer table as artifacts. Exporting the same run
        again updates its MLflow run. Needs the ``mlflow`` extra."""
        from ragaudit.steps.export import export_mlflow

        # It reads what earlier steps wrote and writes nothing there: no provenance entry
        # (which would rewrite the run's ragaudit.yaml, the parameters it exports).
        run = self._run()
        with run.holding("export"):
            return export_mlflow(run, tracking_uri=tracking_uri, experiment=experiment)

    @step
    def export_tables(
        self, out: str | Path, *, fmt: Literal["csv", "parquet"] = "parquet"
    ) -> list[Path]:
        """Write the run's figures, comparisons, retrieval ranking and answers as CSV or
        Parquet tables into ``out`` (``ragaudit export tables``); the files written."""
        from ragaudit.steps.export import export_tables

        run = self._run()
        with run.holding("export"):
            return export_tables(run, Path(out), fmt)

    @step
    def compare(
        self,
        *,
        metric: str = "accuracy",
        by: Literal["source", "variant", "label"] = "source",
        reference: str | None = None,
        systems: list[str] | str | None = None,
        alpha: float = 0.05,
        resamples: int = 1000,
        seed: int = 0,
        retrieval_rule: RetrievalRule = DEFAULT_RULE,
    ) -> RankingStudy:
        """Do the run's test sets rank its systems alike (``ragaudit compare``)? Kendall's
        tau-b with its interval, and the separated pairs another set reverses."""
        from ragaudit.steps.compare import run_compare

        check_rule(retrieval_rule)
        if isinstance(systems, str):  # one pattern, not its characters
            systems = [systems]
        options = {
            "metric": metric,
            "by": by,
            "reference": reference,
            "system": systems,
            "alpha": alpha,
            "resamples": resamples,
            "seed": seed,
            "retrieval_rule": retrieval_rule,
        }
        run = self._run()
        with run.holding("compare"):
            study, _left_out = run_compare(
                run,
                metric=metric,
                by=by,
                reference=reference,
                systems=systems,
                alpha=alpha,
                n_boot=resamples,
                seed=seed,
                rule=retrieval_rule,
            )
            run.record_step(self.config, "compare", options, status="done")
        return study

    @step
    def label(
        self,
        *,
        input_path: str | Path | None = None,
        models: list[str] | None = None,
        phrasings: list[str] | None = None,
        samples: int = 1,
        human: list[str | Path] | None = None,
        use_llm: bool = True,
        retry_failed: bool = False,
    ) -> LabelResult:
        """The question-type composition of the dataset (or of ``input_path``, a question
        set) by each rater (``models`` x ``phrasings`` x ``samples``, and ``human`` label
        files), with their agreement (``ragaudit label``). ``retry_failed``: replies
        stored unusable (an undecided label) are asked again, not replayed."""
        from ragaudit.steps.label import label_run

        options = {
            "input": str(input_path) if input_path else None,
            "llm": models,
            "phrasing": phrasings,
            "samples": samples,
            "human": [str(h) for h in human] if human else None,
            "no_llm": not use_llm,
            "retry_failed": retry_failed,
        }
        with (
            self._step("label", options) as run,
            self._session(run, retry_failed=retry_failed) as session,
            self._progress() as display,
        ):
            return label_run(
                session,
                input_path=Path(input_path) if input_path else None,
                models=models,
                phrasings=phrasings,
                samples=samples,
                human=[Path(h) for h in human] if human else None,
                use_llm=use_llm,
                progress=display,
            )

    @step
    def scan(
        self,
        *,
        k: int = 5,
        weights: Sequence[float] = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0),
        corpus: str | Path | None = None,
    ) -> WeightScan:
        """Recall@k of a hybrid retriever (BM25 + dense) per text weight, per question
        label and for all queries (``ragaudit scan``, "Know Your RAG" Table 2); writes
        scan.json. Needs the dense extra; no LLM."""
        from ragaudit.steps.scan import scan_run

        weights = [float(w) for w in weights]
        options = {"k": k, "weights": weights, "corpus": str(corpus) if corpus else None}
        with self._step("scan", options) as run, self._progress() as display:
            return scan_run(
                run,
                self.config,
                k=k,
                weights=weights,
                corpus=Path(corpus) if corpus else None,
                progress=display,
            )

    @step
    def doctor(self, *, prompt: str | None = None, use_llm: bool = True) -> DoctorReport:
        """Check the setup (``ragaudit doctor``): the database answers read-only and its
        schema can be read, the corpus can be read (``.corpus``: its documents and chunks,
        and the chunks too long for the model's context), and (``use_llm``) the LLM answers
        ``prompt`` once, live. A
        failed check is kept in the report with its reason (``.ok``, ``.failures``), not
        raised, so that one call says everything that is wrong."""
        from ragaudit.steps.doctor import DEFAULT_PROMPT, run_doctor

        hooks = self.session_hooks or SessionHooks()
        with self._step("doctor", create=True) as run:
            report = run_doctor(
                self.config,
                prompt=prompt or DEFAULT_PROMPT,
                use_llm=use_llm,
                assemble_model=hooks.assemble_model,
                backend=self._backends.get(self.config.llm.model),
            )
            if report.usage is not None:
                report.usage.write(run.usage)
                self.usage = report.usage
        return report

    # -- async twins -----------------------------------------------------------------------

    atemplates_sql = twin(templates_sql)
    atemplates_text = twin(templates_text)
    averify_templates = twin(verify_templates)
    agenerate = twin(generate)
    arefresh = twin(refresh)
    agenerate_documents = twin(generate_documents)
    aimport_questions = twin(import_questions)
    ause_dataset = twin(use_dataset)
    arun = twin(run)
    ajudge = twin(judge)
    ascore = twin(score)
    aanalyze = twin(analyze)
    areport = twin(report)
    acompare = twin(compare)
    aexport_mlflow = twin(export_mlflow)
    aexport_tables = twin(export_tables)
    alabel = twin(label)
    ascan = twin(scan)
    adoctor = twin(doctor)

    def __repr__(self) -> str:
        return f"Project(run_dir={str(self.run_dir)!r}, llm={self.config.llm.model!r})"
