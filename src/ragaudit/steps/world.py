"""``ragaudit world --llm``: rewrite a world's project reports in free prose with the LLM,
then check each rewrite by reading comprehension against the database.

For every report, the LLM rewrites its body; the rewrite alone must then answer one
question per fact the template report stated, and each answer must match the database
value (the deterministic matchers first, the LLM judge for what they leave open). A
rewrite that also adds a date the report did not have fails. A failing rewrite is asked
again once, told which facts it lost (**repaired**); if that fails too, the document is
**failed** and either keeps its template wording (the default) or is dropped from the
corpus with its facts, which then become gaps of the knowledge base.

Files, beside the world's own:

    documents.template.jsonl, document_facts.template.jsonl   the checked template world
    rewrite.jsonl        one line per document: status, attempts, lost facts, the text
    documents.jsonl, document_facts.jsonl, world.json["rewrite"]   replaced at the end

``rewrite.jsonl`` is appended as documents finish, so a killed rewrite resumes where it
stopped; the corpus files are replaced only when every document is done, and
``world.json`` last, so a world is either the template one or the fully checked one.
"""

from __future__ import annotations

import json
import shutil
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from ragaudit.aio import gather_all
from ragaudit.errors import StructuredOutputError, UserError
from ragaudit.judge.llm_judge import llm_judge
from ragaudit.judge.matchers import dates, match
from ragaudit.llm.client import LLMClient
from ragaudit.progress import SILENT, Progress, Task
from ragaudit.records.io import (
    JsonlAppender,
    RecordFileError,
    atomic_write_json,
    iter_jsonl_dicts,
    write_jsonl_atomic,
)
from ragaudit.records.models import Reference
from ragaudit.steps.session import SessionHooks
from ragaudit.world.build import OnFailure, WorldRewrite, WorldSummary
from ragaudit.world.company import make_company
from ragaudit.world.from_db import FromDb
from ragaudit.world.rewrite import (
    Fact,
    clean_rewrite,
    comprehension_prompt,
    rewrite_prompt,
    split_report,
)

ATTEMPTS = 2  # the rewrite, then one repair told what was lost
# Reports in flight at once, at most: as many as the backend takes calls at once (one
# for the embedded model, so each report finishes, and is saved, before the next starts).
IN_FLIGHT = 16


class _Answers(BaseModel):
    answers: list[str]


class RewrittenLine(BaseModel):
    """A rewrite.jsonl line of a report whose rewrite passed the check, at once
    (``rewritten``) or after the repair (``repaired``): its text, and what the reader
    found each fact stated as, by fact label."""

    id: str
    status: Literal["rewritten", "repaired"]
    attempts: int
    text: str
    stated: dict[str, str] = Field(default_factory=dict)


class FailedLine(BaseModel):
    """A rewrite.jsonl line of a report whose rewrite failed the check twice: the facts
    the last attempt lost (by label), what else was wrong with it, and its text."""

    id: str
    status: Literal["failed"]
    attempts: int
    lost: list[str]
    problems: list[str]
    rejected_text: str


RewriteLine = Annotated[RewrittenLine | FailedLine, Field(discriminator="status")]
_REWRITE_LINE: TypeAdapter[RewrittenLine | FailedLine] = TypeAdapter(RewriteLine)


def _read_log(path: Path) -> dict[str, RewrittenLine | FailedLine]:
    """The lines of rewrite.jsonl by document id (a torn last line, from a killed
    rewrite, is skipped)."""
    done: dict[str, RewrittenLine | FailedLine] = {}
    for number, obj in iter_jsonl_dicts(path):
        try:
            line = _REWRITE_LINE.validate_python(obj)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "(record)"
            raise RecordFileError(f"{path}:{number}: {where}: {err['msg']}") from None
        done[line.id] = line
    return done


@dataclass
class RewriteSummary:
    """How many reports were rewritten at once, repaired, or failed, and which."""

    rewritten: int = 0
    repaired: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    on_failure: OnFailure = "template"
    model: str = ""

    def entry(self) -> WorldRewrite:
        """The ``rewrite`` entry of world.json."""
        return WorldRewrite(
            model=self.model,
            rewritten=self.rewritten,
            repaired=len(self.repaired),
            failed=len(self.failed),
            on_failure=self.on_failure,
            repaired_ids=self.repaired,
            failed_ids=self.failed,
        )


@dataclass(frozen=True)
class _Check:
    lost: list[Fact]
    answers: dict[str, str]  # fact label -> what the reader found
    problems: list[str]  # added dates, unreadable answers


def database_values(world: Path) -> dict[tuple[str, str, str], Any]:
    """(table, row key, column) -> the database value, for every fact a report can state.
    The world is rebuilt from its seed and size, the same rows its database holds."""
    meta = json.loads((world / "world.json").read_text())
    company = make_company(int(meta["size"]), int(meta["seed"]))
    values: dict[tuple[str, str, str], Any] = {}
    for name, location, start, end, client, director, manager in company.project:
        for column, value in (
            ("Name", name),
            ("Location", location),
            ("StartDate", start),
            ("EndDate", end),
            ("Client", client),
            ("ProjectDirector", director),
            ("ProjectManager", manager),
        ):
            values["Project", name, column] = value
    for name, industry, location in company.client:
        values["Client", name, "Industry"] = industry
        values["Client", name, "Location"] = location
    return values


def checked_values(
    world: Path, meta: dict[str, Any], facts: dict[str, list[Fact]]
) -> dict[tuple[str, str, str], Any]:
    """(table, row key, column) -> the value a rewrite of ``world``'s documents is checked
    against: a generated world's database values; for a world from the user's database
    (``meta`` names its source), the copy's values as its profiles state them."""
    if "source" in meta:
        return {(f.table, f.row_key, f.column): f.stated for fs in facts.values() for f in fs}
    return database_values(world)


async def _check(
    llm: LLMClient,
    original: str,
    body: str,
    facts: list[Fact],
    truth: dict[tuple[str, str, str], Any],
) -> _Check:
    """Which facts the rewrite ``body`` no longer gives (by reading comprehension against
    the database), and what else is wrong with it."""
    problems: list[str] = []
    if not body:
        return _Check(list(facts), {}, ["the rewrite is empty"])
    added = sorted(dates(body) - dates(original))
    if added:
        problems.append("added date " + ", ".join(d.isoformat() for d in added))
    asked = [f for f in facts if f.question]
    if not asked:
        return _Check([], {}, problems)
    try:
        reply = await llm.acomplete_json(
            comprehension_prompt(body, [f.question or "" for f in asked]), _Answers
        )
        answers = list(reply.answers)
    except StructuredOutputError as exc:
        problems.append(f"the reader's answers were not valid JSON: {exc}")
        answers = []
    answers += [""] * (len(asked) - len(answers))
    lost: list[Fact] = []
    found: dict[str, str] = {}
    for fact, answer in zip(asked, answers, strict=False):
        value = truth.get((fact.table, fact.row_key, fact.column))
        reference = Reference.from_values([value])
        decision = match(reference, answer)
        if decision.decided:
            correct = bool(decision.correct)
        else:
            verdict = await llm_judge(llm, fact.question or "", reference.display, answer)
            correct = verdict.correct
        if correct:
            found[fact.label] = answer
        else:
            lost.append(fact)
    return _Check(lost, found, problems)


async def _rewrite_one(
    llm: LLMClient,
    doc_id: str,
    text: str,
    facts: list[Fact],
    truth: dict[tuple[str, str, str], Any],
    kind: str = "project report",
) -> RewrittenLine | FailedLine:
    """Rewrite one report, check it, repair once if needed; its rewrite.jsonl line."""
    title, original = split_report(text)
    check = _Check([], {}, [])
    body = ""
    for attempt in range(1, ATTEMPTS + 1):
        reply = await llm.acomplete(rewrite_prompt(original, check.lost, check.problems, kind))
        body = clean_rewrite(reply.text)
        check = await _check(llm, original, body, facts, truth)
        if not check.lost and not check.problems:
            return RewrittenLine(
                id=doc_id,
                status="rewritten" if attempt == 1 else "repaired",
                attempts=attempt,
                text=f"{title}\n\n{body}" if title else body,
                stated=check.answers,
            )
    return FailedLine(
        id=doc_id,
        status="failed",
        attempts=ATTEMPTS,
        lost=[f.label for f in check.lost],
        problems=check.problems,
        rejected_text=body,
    )


def _templates(world: Path) -> tuple[Path, Path]:
    """The template documents and facts, saved beside the world before the first rewrite
    (so the rewrite always starts from, and can fall back to, the checked wording)."""
    docs, facts = world / "documents.template.jsonl", world / "document_facts.template.jsonl"
    for saved, live in ((docs, world / "documents.jsonl"), (facts, world / "document_facts.jsonl")):
        if not saved.exists():
            tmp = saved.with_name(saved.name + ".tmp")
            shutil.copyfile(live, tmp)
            tmp.replace(saved)
    return docs, facts


def rewrite_world(
    world: Path,
    llm: LLMClient,
    *,
    on_failure: OnFailure = "template",
    progress: Progress = SILENT,
) -> RewriteSummary:
    """Rewrite every report of ``world`` in free prose, checked by reading comprehension;
    resumable. Returns what happened (also written to world.json). ``progress`` shows the
    reports rewritten (``rewriting reports``; those of an earlier run count as done)."""
    if on_failure not in ("template", "drop"):
        raise UserError(f"world: on failure {on_failure!r}: use template or drop")
    meta_path = world / "world.json"
    if not meta_path.exists():
        raise UserError(f"{world} is not a world (no world.json): run ragaudit world first")
    meta = json.loads(meta_path.read_text())
    if "rewrite" in meta:
        raise UserError(
            f"{world}: its reports are already rewritten (world.json says so); "
            "use --force to generate the world again"
        )
    docs_path, facts_path = _templates(world)
    texts = {d["id"]: d["text"] for _, d in iter_jsonl_dicts(docs_path)}
    facts = {d["id"]: [Fact(**f) for f in d["facts"]] for _, d in iter_jsonl_dicts(facts_path)}
    truth = checked_values(world, meta, facts)
    kind = "profile" if "source" in meta else "project report"
    log = world / "rewrite.jsonl"
    done = _read_log(log) if log.exists() else {}
    todo = [doc_id for doc_id in texts if doc_id not in done]
    task = progress.task("rewriting reports")
    task.start(len(texts), len(done))

    async def work(sink: JsonlAppender) -> None:
        queue = deque(todo)

        async def worker() -> None:
            while queue:
                doc_id = queue.popleft()
                line = await _rewrite_one(llm, doc_id, texts[doc_id], facts[doc_id], truth, kind)
                sink.append(line.model_dump())  # a dict: encoded as every JSON line is
                done[doc_id] = line
                task.advance()

        lanes = min(IN_FLIGHT, max(1, llm.backend.max_concurrency), len(queue))
        await gather_all(*(worker() for _ in range(lanes)))

    if todo:
        with JsonlAppender(log) as sink:
            llm.run(work(sink))
    return _finish(world, meta, texts, facts, done, on_failure, llm.backend.describe())


def _finish(
    world: Path,
    meta: dict[str, Any],
    texts: dict[str, str],
    facts: dict[str, list[Fact]],
    done: dict[str, RewrittenLine | FailedLine],
    on_failure: OnFailure,
    model: str,
) -> RewriteSummary:
    """Write the checked corpus and its fact map, then mark the world rewritten."""
    summary = RewriteSummary(on_failure=on_failure, model=model)
    documents: list[dict[str, str]] = []
    stated: list[dict[str, Any]] = []
    for doc_id, text in texts.items():
        line = done[doc_id]
        doc_facts = [f.record() for f in facts[doc_id]]
        if isinstance(line, FailedLine):
            summary.failed.append(doc_id)
            if on_failure == "drop":
                continue
        else:
            if line.status == "repaired":
                summary.repaired.append(doc_id)
            else:
                summary.rewritten += 1
            text = line.text
            # A rewritten report words its facts its own way: record what the reader found.
            answers = line.stated
            doc_facts = [
                {**f, "stated": answers.get(Fact(**f).label, f["stated"])} for f in doc_facts
            ]
        documents.append({"id": doc_id, "text": text})
        stated.append({"id": doc_id, "facts": doc_facts})
    write_jsonl_atomic(world / "documents.jsonl", documents)
    write_jsonl_atomic(world / "document_facts.jsonl", stated)
    meta = {
        **meta,
        "documents": len(documents),
        "facts_stated": sum(len(s["facts"]) for s in stated),
        "rewrite": summary.entry().model_dump(),
    }
    atomic_write_json(world / "world.json", meta)
    return summary


def make_world(
    out: Path,
    *,
    size: int,
    seed: int = 0,
    engine: str = "sqlite",
    force: bool = False,
    rewrite: bool = False,
    model: str | None = None,
    on_failure: OnFailure = "template",
    hooks: SessionHooks | None = None,
    progress: Progress = SILENT,
    from_db: FromDb | None = None,
) -> tuple[WorldSummary, RewriteSummary | None]:
    """``ragaudit world``: generate the world into ``out`` (or, with ``from_db``, write
    one from the user's database) and, with ``rewrite``, rewrite its reports with the LLM
    its ragaudit.yaml names (or ``model``); the LLM cache and usage live in the world
    folder. An unfinished rewrite of this very world goes on where it stopped rather than
    generating the world again (unless ``force``). ``progress`` shows a task per part of
    the world as it is generated (``generating: database``), then the reports
    rewritten."""
    from ragaudit.config import load_config
    from ragaudit.rundir import RunDir
    from ragaudit.steps.session import Session
    from ragaudit.world.build import build_world, read_world
    from ragaudit.world.from_db import build_world_from_db, read_world_from_db

    def built() -> WorldSummary | None:
        """The world in ``out`` when it is the one these settings build."""
        if from_db is not None:
            return read_world_from_db(out, from_db.url, seed=seed, **from_db.settings())
        return read_world(out, size=size, seed=seed, engine=engine)

    summary = built() if rewrite and not force else None
    if summary is None:
        parts: list[Task] = []

        def on_step(part: str) -> None:
            if parts:  # the part before it is done
                parts[-1].advance()
            parts.append(progress.task(f"generating: {part}", 1))

        if from_db is not None:
            summary = build_world_from_db(
                out, from_db.url, seed=seed, force=force, on_step=on_step, **from_db.settings()
            )
        else:
            summary = build_world(
                out, size=size, seed=seed, engine=engine, force=force, on_step=on_step
            )
        if parts:
            parts[-1].advance()
    if not rewrite:
        return summary, None
    config = load_config(out / "ragaudit.yaml")
    if model:
        config.llm.model = model
    run = RunDir(out)
    run.llm_cache.parent.mkdir(parents=True, exist_ok=True)
    with Session(config, run, hooks) as session, session.llm("world --llm") as client:
        assert client is not None
        done = rewrite_world(out, client, on_failure=on_failure, progress=progress)
    return built() or summary, done
