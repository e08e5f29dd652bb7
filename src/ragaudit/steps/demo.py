"""``ragaudit demo``: every step on a generated company, offline, in minutes on a laptop.

world -> SQL templates (schema enumerator, the project questions) -> text templates
(short wordings by the LLM, long ones by the verbalizer, every one verified by the LLM:
it reads each wording back as SQL, and only wordings whose reading gives the template's
answers are asked; ``use_llm=False`` verbalizes both, unverified) -> a balanced
dataset -> the document half: a few pairs written from the company's reports by the
``statements`` strategy, checked and worded briefly (skipped without the LLM) -> two
built-in systems, keyword top-1 and hybrid top-3, answering with the LLM -> judging
(matchers first) -> analysis (each half also on its own) -> report.html.

Each step writes the run's usual files and is skipped when its output exists, so a killed
demo resumes where it stopped (the LLM cache makes repeated calls free).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ragaudit.config import Config, load_config
from ragaudit.documents.options import DocumentOptions
from ragaudit.errors import UserError
from ragaudit.generate.sql.templates import load_templates, save_templates
from ragaudit.llm.client import LLMClient
from ragaudit.progress import SILENT, Progress, with_prefix
from ragaudit.rundir import RunDir
from ragaudit.steps.session import Session, SessionHooks
from ragaudit.systems.builtin import BuiltinSystemConfig

# The project questions of the world, in the order the demo prefers them: facts that the
# reports state (location, client, start date, people) and one that no report ever states
# (the client's location): a gap of the knowledge base by design.
PREFERRED = (
    "location-by-project-name",
    "client-name-by-project-name-via-client",
    "startdate-by-project-name",
    "client-location-by-project-name-via-client",
    "employee-name-by-project-name-via-projectmanager",
    "employee-name-by-project-name-via-projectdirector",
)

DOCUMENT_PAIRS = 2
DOCUMENT_CONTEXTS = 8

# step name -> (seconds, note)
Timings = dict[str, tuple[float, str]]


@dataclass
class DemoResult:
    """Where the demo's files are and how long each step took."""

    run: RunDir
    world: Path
    report: Path
    timings: Timings = field(default_factory=dict)


def demo_config(world: Path, out: Path, *, groups: int, use_llm: bool, llm: str) -> Config:
    """The world's ragaudit.yaml, set up for the demo."""
    config = load_config(world / "ragaudit.yaml")
    config.run.root = out / "runs"
    config.run.name = "demo"
    config.llm.model = llm
    config.llm.context_size = 2048
    config.templates.sql_generator = "enumerator"
    config.templates.text_generator = "llm" if use_llm else "verbalizer"
    config.templates.verify = use_llm
    config.generate.unverified = not use_llm  # --no-llm: verbalized, never verified
    config.templates.per_style = 2
    config.generate.balanced = True
    config.generate.max_groups_per_template = groups
    config.systems = [
        BuiltinSystemConfig(name="keyword-top1", retriever="keyword", k=1, generator="concise"),
        BuiltinSystemConfig(
            name="hybrid-top3", retriever="hybrid", text_weight=0.5, k=3, generator="concise"
        ),
    ]
    # The document half: a fact and a summary question from the first reports, worded
    # briefly. Small, since each pair costs about eight calls (30 s) of the embedded model;
    # unanswerable questions, whose check reads three passages and mostly rejects them,
    # would cost the most.
    config.generate.documents = DocumentOptions(
        strategy="statements",
        size=DOCUMENT_PAIRS,
        mix={"fact_single": 1.0, "summary": 1.0},
        rounds=1,
        max_contexts=DOCUMENT_CONTEXTS,
        styles=["short"],
    )
    config.harness.concurrency = 1  # one llama.cpp slot: in order, so its prompt cache works
    config.harness.timeout_s = 600
    config.harness.store_texts = True  # the report shows the passages each answer was given
    return config


@contextlib.contextmanager
def _stage(progress: Progress, timings: Timings, name: str, note: str = "") -> Iterator[None]:
    """One step of the demo: a task (``demo: <name>``) that is done when the block ends,
    and how long the block took, recorded under ``name``."""
    task = progress.task(f"demo: {name}", 1)
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[name] = (time.perf_counter() - start, note)
    task.advance()


def _keep_project_templates(run: RunDir, count: int) -> None:
    loaded = load_templates(run.templates_sql).templates
    by_id = {t.id: t for t in loaded}
    chosen = [by_id[i] for i in PREFERRED if i in by_id][:count]
    if len(chosen) < count:  # another world's naming: any project-keyed template will do
        chosen += [t for t in loaded if t not in chosen and t.placeholders == ["Project.Name"]]
    save_templates(run.templates_sql, chosen[:count])


def _text_templates(config: Config, run: RunDir, llm: LLMClient | None) -> None:
    """Short wordings from the LLM (when given), long ones from the verbalizer; the LLM
    verifies both, and only verified wordings reach the dataset."""
    from ragaudit.steps.templates import make_text_templates

    if llm is None:
        make_text_templates(config, run)
        return
    short = config.model_copy(deep=True)
    short.templates.styles = ["short"]
    make_text_templates(short, run, llm=llm)
    # Kept: the short wordings already in the file; worded now: the long ones.
    long = config.model_copy(deep=True)
    long.templates.text_generator = "verbalizer"
    make_text_templates(long, run, llm=llm)


def demo_dataset(
    out: Path,
    *,
    size: int,
    seed: int = 0,
    templates: int = 4,
    groups: int = 3,
    use_llm: bool = True,
    llm: str = "local",
    hooks: SessionHooks | None = None,
    progress: Progress = SILENT,
    timings: Timings | None = None,
) -> tuple[Config, RunDir]:
    """The demo's first steps, resumable: the world, its templates (every wording verified
    when ``use_llm``) and the balanced dataset. ``hooks`` say what the user sees of the
    LLM's work (the model assembled, each step's usage); ``progress`` shows a task per
    step."""
    import json

    from ragaudit.world.build import build_world

    timings = {} if timings is None else timings
    world = out / "world"
    marker = world / "world.json"
    fresh = not marker.exists() or json.loads(marker.read_text()).get("size") != size
    with _stage(progress, timings, "world", f"{size} rows"):
        if fresh:
            build_world(world, size=size, seed=seed, force=True)
    config = demo_config(world, out, groups=groups, use_llm=use_llm, llm=llm)
    run = RunDir.from_config(config).create()
    # Held while the demo writes, and no longer: a notebook that ran it can hand the run
    # to the command line.
    with run.holding("demo"):
        run.record_step(config, "demo")
        try:
            _demo_steps(config, run, templates, hooks, progress, timings, use_llm=use_llm)
        except BaseException:
            run.end_step("demo", "failed")
            raise
        run.end_step("demo", "done")
    return config, run


def _demo_steps(
    config: Config,
    run: RunDir,
    templates: int,
    hooks: SessionHooks | None,
    progress: Progress,
    timings: Timings,
    *,
    use_llm: bool,
) -> None:
    """The demo's stages, in its run folder (held)."""
    from ragaudit.steps.generate import generate_dataset
    from ragaudit.steps.templates import make_sql_templates

    note = "SQL by the schema enumerator; text by LLM (short) + verbalizer, verified"
    with _stage(progress, timings, "templates", note if use_llm else "SQL by the enumerator; text"):
        if not run.templates_sql.exists():
            make_sql_templates(config, run)
            _keep_project_templates(run, templates)
        if not run.dataset.exists():  # words what is missing; a finished file asks nothing
            with (
                Session(config, run, hooks) as session,
                session.llm("templates", use_llm) as client,
            ):
                _text_templates(config, run, client)
    with _stage(progress, timings, "generate", "balanced dataset"):
        if not run.dataset.exists():
            generate_dataset(config, run, config.generate)
    if use_llm:
        _document_half(config, run, hooks, progress, timings)


def _document_half(
    config: Config,
    run: RunDir,
    hooks: SessionHooks | None,
    progress: Progress,
    timings: Timings,
) -> None:
    """Pairs written from the reports join the dataset (once: candidates.jsonl says it is
    done). Nothing accepted is said, and the demo goes on with the SQL half alone."""
    from ragaudit.steps.documents import generate_from_documents

    options = config.generate.documents
    if run.candidates.exists():
        timings["documents"] = (0.0, "written before")
        return
    task = progress.task("demo: documents", 1)
    start = time.perf_counter()
    try:
        with Session(config, run, hooks) as session:
            stats = generate_from_documents(
                session, options, progress=with_prefix(progress, "documents: ")
            )
    except UserError as err:  # said in the timings' note, which the demo prints
        note = f"none kept ({err}); the SQL half alone"
    else:
        note = f"{stats.accepted} of {stats.size} pairs from the reports, {stats.calls} calls"
    timings["documents"] = (time.perf_counter() - start, note)
    task.advance()


def run_demo(
    out: Path,
    *,
    size: int,
    seed: int = 0,
    templates: int = 4,
    groups: int = 3,
    use_llm: bool = True,
    llm: str = "local",
    hooks: SessionHooks | None = None,
    progress: Progress = SILENT,
    reference_free: bool = False,
) -> DemoResult:
    """Run the whole journey into ``out`` (resumable) and return where the report is;
    ``reference_free`` also scores every answer with the reference-free metrics, and the
    report then says how far each agrees with the grounded verdicts. ``progress`` shows
    a task per step, and one per system as it answers, is judged (``judge <system>``) and
    scored (``score <system>``)."""
    from ragaudit.steps.analyze import run_analysis
    from ragaudit.steps.judge import judge_run
    from ragaudit.steps.report import report_run
    from ragaudit.steps.run import run_systems

    # The demo's run folder (demo_config names it), held across every step.
    with RunDir(out / "runs" / "demo").create().holding("demo"):
        timings: Timings = {}
        config, run = demo_dataset(
            out,
            size=size,
            seed=seed,
            templates=templates,
            groups=groups,
            use_llm=use_llm,
            llm=llm,
            hooks=hooks,
            progress=progress,
            timings=timings,
        )
        with (
            _stage(progress, timings, "run", "keyword-top1 and hybrid-top3 answer every query"),
            Session(config, run, hooks) as session,
        ):
            run_systems(session, config.systems, progress=progress)
        with (
            _stage(progress, timings, "judge", "matchers first, then the LLM judge"),
            Session(config, run, hooks) as session,
        ):
            # Verdicts alone (a quarter of the tokens); retrieval is right when the gold report
            # is among those retrieved, as top-3 retrieves three.
            judge_run(
                session, reasons=False, rule="all_gold", progress=with_prefix(progress, "judge ")
            )
        if reference_free:
            from ragaudit.steps.reference_free import score_run

            with (
                _stage(progress, timings, "reference-free", "the four metrics of every answer"),
                Session(config, run, hooks) as session,
            ):
                score_run(session, progress=with_prefix(progress, "score "))
        with _stage(progress, timings, "analyze"):
            run_analysis(run, reference_free=config.reference_free)
        with _stage(progress, timings, "report"):
            report = report_run(run)
        return DemoResult(run=run, world=out / "world", report=report, timings=timings)
