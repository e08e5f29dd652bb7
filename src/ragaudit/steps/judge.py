"""The ``judge`` step: every system's responses -> judgements/<system>.jsonl, and its
repeats (``run --repeat N``) -> repeats/judgements/<system>.jsonl.

Resumable: answers already judged are skipped, and new judgements are appended in durable
batches, so a killed run goes on where it stopped. A repeat whose answer is the same as
one already judged for its query (the same text, retrieved ids and error) gets that
verdict: identical answers are judged once.
"""

from __future__ import annotations

import contextlib
import json
import random
from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from ragaudit.aio import gather_all
from ragaudit.errors import FATAL_LLM_ERRORS, LLMError, StaleInputError, UserError
from ragaudit.judge.cascade import JudgeFailure, JudgeStats, judge_many, judged_under
from ragaudit.judge.llm_judge import llm_judge
from ragaudit.judge.retrieval import DEFAULT_RULE, RetrievalRule, RuleFit
from ragaudit.llm.client import LLMClient
from ragaudit.progress import SILENT, Progress
from ragaudit.records.io import JsonlAppender, atomic_write_json, read_jsonl, write_jsonl_atomic
from ragaudit.records.models import (
    Judgement,
    QueryRecord,
    RepeatJudgement,
    RepeatResponse,
    ResponseRecord,
)
from ragaudit.rundir import RunDir, safe_filename
from ragaudit.steps.session import Session
from ragaudit.store.answers import refresh_answer_table
from ragaudit.store.records import duplicate_message, read_dataset, stale_reference

BATCH = 200

J = TypeVar("J", bound=Judgement)
K = TypeVar("K", bound=Hashable)


class AuditDisagreement(BaseModel):
    """A deterministic decision the LLM judge, asked again by ``--audit``, disagrees
    with: the matcher's verdict (``match``) and the LLM's (``llm``)."""

    query_id: str
    method: str
    match: bool | None
    llm: bool


class AuditResult(BaseModel):
    """What ``--audit`` found: how many deterministic decisions the LLM judge re-judged,
    how many it disagrees with (the first ten shown), and those it could not re-judge."""

    audited: int
    disagreements: int
    examples: list[AuditDisagreement]
    # Recorded since issue 13; files of older judges have neither.
    failed: int = 0
    failures: list[JudgeFailure] = Field(default_factory=list)


class RepeatsJudged(BaseModel):
    """How one judge run decided a system's repeats (``run --repeat N``): the repeats
    judged now, of which ``reused`` took the verdict of an identical answer to the same
    query (the same text, retrieved ids and error) rather than being judged again; those
    judged before; the count per method (reused verdicts included); and the repeats the
    LLM judge failed on."""

    judged_now: int
    already_judged: int
    reused: int
    methods: dict[str, int]
    judge_failed: int = 0


class JudgeEntry(BaseModel):
    """One system's entry of judge.stats.json: what this judge run judged and how
    (:class:`~ragaudit.judge.cascade.JudgeCounts`), the retrieval rule its retrieval
    verdicts follow with that rule's warnings, and the audit when one was asked for.
    Fields that older judges did not record read as their defaults."""

    judged_now: int
    already_judged: int
    methods: dict[str, int]
    llm_sample_agreement: float | None
    judge_failed: int = 0
    judge_failures: list[JudgeFailure] = Field(default_factory=list)
    # None: judged before ragaudit judge recorded its rule (analyze says so).
    retrieval_rule: str | None = None
    rule_warnings: list[str] = Field(default_factory=list)
    audit: AuditResult | None = None  # absent from the file when no audit was run
    # Of the answers judged before, those the LLM judge decided: a rerun that judges again
    # only the failed ones, and fails on them again, has not failed on everything.
    llm_judged_before: int = 0
    repeats: RepeatsJudged | None = None  # absent from the file when it has no repeats


@dataclass
class JudgeReport:
    """Per system: how answers were decided, and what the audit found; and where the
    retrieval rule does not fit the systems' retrievals (:class:`RuleFit`)."""

    systems: dict[str, JudgeEntry] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


_STATS_FILE = TypeAdapter(dict[str, JudgeEntry])


def write_judge_stats(path: Path, systems: dict[str, JudgeEntry]) -> None:
    """judge.stats.json: one entry per system, with ``audit`` only where one was run."""
    atomic_write_json(
        path,
        {
            name: entry.model_dump(
                exclude={key for key in ("audit", "repeats") if getattr(entry, key) is None}
            )
            for name, entry in systems.items()
        },
    )


def read_judge_stats(path: Path) -> dict[str, JudgeEntry]:
    """The entries of judge.stats.json, per system (those of older judges with defaults
    for what they did not record); a file that is not one is a :class:`UserError`."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    try:
        return _STATS_FILE.validate_python(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(file)"
        raise UserError(f"{path}: {where}: {err['msg']}") from None


# The most LLM verdicts one answer may be given for a majority vote (``--samples``), and
# the most deterministic decisions re-judged by the LLM (``--audit``).
MAX_SAMPLES = 25
MAX_AUDIT = 1_000_000


def check_counts(*, samples: int, audit: int) -> None:
    """``judge --samples`` from 1 to :data:`MAX_SAMPLES` and ``--audit`` from 0 to
    :data:`MAX_AUDIT`, or a one-line error naming the option: a vote of a million
    verdicts per answer is no option a run can use (its dry run alone would not end)."""
    for name, value, low, high in (
        ("samples", samples, 1, MAX_SAMPLES),
        ("audit", audit, 0, MAX_AUDIT),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise UserError(f"judge --{name} {value!r}: give a whole number from {low} to {high:,}")


def judge_run(
    session: Session,
    *,
    use_llm: bool = True,
    systems: list[str] | None = None,
    samples: int = 1,
    audit: int = 0,
    closed_domain: bool = False,
    rule: RetrievalRule = DEFAULT_RULE,
    seed: int = 0,
    reasons: bool = True,
    progress: Progress = SILENT,
) -> JudgeReport:
    """Judge the responses of every system (or ``systems``) in the session's run: the
    matchers first, then (``use_llm``) the LLM judge for what they leave undecided;
    ``reasons=False`` asks the LLM judge for its verdict alone (a quarter of the tokens).
    ``progress`` shows a task per system, named by it (answers judged before count as
    done)."""
    with session.llm("judge", use_llm) as llm:
        run = session.run_dir
        folder = run.responses_dir
        files = sorted(folder.glob("*.jsonl")) if folder.exists() else []
        if not files:
            raise UserError(f"nothing to judge: no responses in {folder} (run ragaudit run first)")
        if systems:
            by_file = {safe_filename(name): name for name in systems}
            unknown_systems = [n for f, n in by_file.items() if f not in {p.stem for p in files}]
            if unknown_systems:
                known = ", ".join(p.stem for p in files)
                raise UserError(
                    f"no responses of system {unknown_systems[0]!r} in {folder} (the run's "
                    f"systems: {known}; run it first)"
                )
            files = [f for f in files if f.stem in by_file]
        dataset = read_dataset(run)  # held to the end: the answer table reads the same
        queries = dataset.by_id
        report = JudgeReport()
        if not systems:
            report.warnings += drop_orphans(run, {p.stem for p in files})
        # Judging some systems leaves the others' entries (their verdicts' rule) as they were;
        # a system whose judgements are gone has none.
        judged_now = {p.stem for p in files}
        kept_entries: dict[str, JudgeEntry] = {}
        if run.judge_stats.exists():
            with contextlib.suppress(UserError):
                kept_entries = {
                    name: entry
                    for name, entry in read_judge_stats(run.judge_stats).items()
                    if safe_filename(name) not in judged_now and run.judgements(name).exists()
                }
        for path in files:
            responses = list(read_jsonl(path, ResponseRecord))
            if not responses:
                continue
            name = responses[0].system
            fit = RuleFit(rule)
            for r in responses:
                if r.error is None and r.query_id in queries:
                    fit.add(name, r.retrieved_ids, queries[r.query_id].gold_ids)
            ids = [r.query_id for r in responses]
            if len(set(ids)) < len(ids):
                twice = next(q for q, n in Counter(ids).items() if n > 1)
                raise UserError(f"{path}: {duplicate_message('response', twice, name)}")
            # Before any verdict is dropped to be given again: a judge that cannot go on
            # must leave the system's verdicts as they were.
            unknown = [r.query_id for r in responses if r.query_id not in queries]
            if unknown:
                raise StaleInputError.orphan("response", unknown[0], name, str(path))
            out = run.judgements(name)
            kept = _decided(
                out,
                {r.query_id for r in responses if r.error is None},
                redo_unmatched=use_llm,
                digests={r.query_id: r.digest for r in responses},
                references=queries,
                under=judged_under(closed_domain, rule),
            )
            done = {j.query_id for j in kept}
            todo = [r for r in responses if r.query_id not in done]
            stats = JudgeStats()
            task = progress.task(name)
            task.start(len(responses), len(done))
            with JsonlAppender(out) as sink:
                for start in range(0, len(todo), BATCH):
                    batch = [(queries[r.query_id], r) for r in todo[start : start + BATCH]]
                    coro = judge_many(
                        batch,
                        llm,
                        samples=samples,
                        closed_domain=closed_domain,
                        rule=rule,
                        stats=stats,
                        reasons=reasons,
                        on_judged=task.advance,
                    )
                    sink.append_many(session.run(coro))
            counts = stats.counts()
            entry = JudgeEntry(
                judged_now=len(todo),
                already_judged=len(done),
                methods=counts.methods,
                llm_sample_agreement=counts.llm_sample_agreement,
                judge_failed=counts.judge_failed,
                judge_failures=counts.judge_failures,
                # What the stored retrieval verdicts mean, for the analysis to say so.
                retrieval_rule=rule,
                rule_warnings=fit.warnings(),
                llm_judged_before=sum(j.method.startswith("llm") for j in kept),
            )
            report.warnings.extend(entry.rule_warnings)
            if audit and llm is not None:
                entry.audit = _audit(run, name, queries, responses, llm, audit, seed)
            entry.repeats = _judge_repeats(
                session,
                name,
                queries,
                llm,
                samples=samples,
                closed_domain=closed_domain,
                rule=rule,
                reasons=reasons,
                redo_unmatched=use_llm,
                progress=progress,
            )
            report.systems[name] = entry
            # Written as each system is done, so that a judge stopped half way leaves stats
            # that are true of every system it finished.
            write_judge_stats(run.judge_stats, {**kept_entries, **report.systems})
        write_judge_stats(run.judge_stats, {**kept_entries, **report.systems})
        refresh_answer_table(run)
        return report


def drop_orphans(run: RunDir, answered: set[str]) -> list[str]:
    """Remove the verdicts of systems whose responses file is gone (``answered``: the
    stems of the responses files there are): they judged answers the run no longer holds,
    and every reader refuses them. Verdicts without a response fingerprint (written by
    hand, or before judgements kept one) stay. What was removed, one line per file."""
    said: list[str] = []
    for folder in (run.judgements_dir, run.repeats_dir / "judgements"):
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.jsonl")):
            if path.stem in answered:
                continue
            model: type[Judgement] = RepeatJudgement if folder != run.judgements_dir else Judgement
            judgements = list(read_jsonl(path, model))
            kept = [j for j in judgements if j.response_digest is None]
            if len(kept) == len(judgements):
                continue
            if kept:
                write_jsonl_atomic(path, kept)
            else:
                path.unlink()
            said.append(
                f"{path}: {len(judgements) - len(kept)} verdict(s) of answers the run no longer "
                "holds (their responses file is gone) were removed"
            )
    return said


def _decided(
    path: Path,
    answered: set[str],
    *,
    redo_unmatched: bool = False,
    digests: dict[str, str] | None = None,
    references: Mapping[str, QueryRecord] | None = None,
    under: str,
) -> list[Judgement]:
    """The judgements already made in ``path`` that stand. Some are dropped from the file
    (rewritten whole, atomically) so that this run judges them again: those the LLM judge
    failed to give (a judge that failed for a passing reason must not fail for good),
    those of a system error whose query has an answer now (``answered``: after ``ragaudit
    run --retry-errors``), and, when an LLM judges this time (``redo_unmatched``), those
    the matchers alone could not decide (``unmatched``, from ``judge --no-llm``); those
    of a response that has changed since or is gone (``digests``: query id -> the current
    response's fingerprint; the system was run again); and those given against another
    reference than the question has now (``references``: the dataset by query id; it was
    generated again on changed data); and those given under other rules than ``under``
    (:func:`~ragaudit.judge.cascade.judged_under`: the judge's rules have changed since,
    or this judge applies another closed-domain or retrieval rule)."""
    return _kept(path, Judgement, query_key, answered, redo_unmatched, digests, references, under)


def query_key(j: Judgement) -> str:
    """A judgement's key in responses/: its query."""
    return j.query_id


def repeat_key(j: RepeatJudgement) -> tuple[str, int]:
    """A judgement's key in repeats/: its query and repeat."""
    return (j.query_id, j.repeat)


def _kept(
    path: Path,
    model: type[J],
    key: Callable[[J], K],
    answered: set[K],
    redo_unmatched: bool,
    digests: Mapping[K, str] | None,
    references: Mapping[str, QueryRecord] | None,
    under: str,
) -> list[J]:
    """The judgements in ``path`` that stand (:func:`_decided`: the file is rewritten
    without the others), told apart by ``key``: a query id, or (query id, repeat)."""
    if not path.exists():
        return []
    judgements = list(read_jsonl(path, model))
    keys = Counter(key(j) for j in judgements)
    twice = next((k for k, n in keys.items() if n > 1), None)
    if twice is not None:
        first = next(j for j in judgements if key(j) == twice)
        message = duplicate_message(
            "judgement", first.query_id, first.system, getattr(first, "repeat", 0)
        )
        raise UserError(f"{path}: {message}")
    kept = standing(judgements, key, answered, redo_unmatched, digests, references, under)
    if len(kept) < len(judgements):
        write_jsonl_atomic(path, kept)
    return kept


def standing(
    judgements: list[J],
    key: Callable[[J], K],
    answered: set[K],
    redo_unmatched: bool,
    digests: Mapping[K, str] | None,
    references: Mapping[str, QueryRecord] | None,
    under: str,
) -> list[J]:
    """Of ``judgements``, those that stand (:func:`_decided` says which do not), read
    only: what a dry run counts as judged."""
    return [
        j
        for j in judgements
        if j.correct is not None
        and j.judged_under == under
        and not (j.method == "error" and key(j) in answered)
        and not (redo_unmatched and j.method.startswith("unmatched"))
        and not (
            digests is not None
            and j.response_digest is not None
            and digests.get(key(j)) != j.response_digest
        )
        and not (references is not None and stale_reference(j, references))
    ]


def _judge_repeats(
    session: Session,
    name: str,
    queries: Mapping[str, QueryRecord],
    llm: LLMClient | None,
    *,
    samples: int,
    closed_domain: bool,
    rule: RetrievalRule,
    reasons: bool,
    redo_unmatched: bool,
    progress: Progress,
) -> RepeatsJudged | None:
    """Judge the repeats of system ``name`` (repeats/responses/) into
    repeats/judgements/, resumable as the responses' judging is (with the same rules for
    what is judged again). A repeat whose answer is the same as one already judged for its
    query (the first asking's, or another repeat's) gets that verdict: only distinct
    answers reach the cascade. None when the system has no repeats."""
    run = session.run_dir
    path = run.repeat_responses(name)
    responses = list(read_jsonl(path, RepeatResponse)) if path.exists() else []
    if not responses:
        # Verdicts of repeats no longer asked (run --rerun without --repeat) judged
        # answers the run does not hold: they go, never to be counted.
        run.repeat_judgements(name).unlink(missing_ok=True)
        return None
    keys = Counter((r.query_id, r.repeat) for r in responses)
    twice = next((k for k, n in keys.items() if n > 1), None)
    if twice is not None:
        raise UserError(f"{path}: {duplicate_message('response', twice[0], name, twice[1])}")
    unknown = next((r.query_id for r in responses if r.query_id not in queries), None)
    if unknown is not None:
        raise StaleInputError.orphan("response", unknown, name, str(path))
    out = run.repeat_judgements(name)
    kept = _kept(
        out,
        RepeatJudgement,
        repeat_key,
        {(r.query_id, r.repeat) for r in responses if r.error is None},
        redo_unmatched,
        {(r.query_id, r.repeat): r.digest for r in responses},
        queries,
        judged_under(closed_domain, rule),
    )
    done = {repeat_key(j) for j in kept}
    todo = [r for r in responses if (r.query_id, r.repeat) not in done]
    # The verdicts already given, by (query, answer): the first askings' and the repeats'.
    known: dict[tuple[str, str], Judgement] = {}
    given: list[Judgement] = []
    if run.judgements(name).exists():
        given += read_jsonl(run.judgements(name), Judgement)
    if out.exists():
        given += read_jsonl(out, RepeatJudgement)
    for j in given:
        usable = (
            j.correct is not None
            and j.judged_under == judged_under(closed_domain, rule)
            and not (redo_unmatched and j.method.startswith("unmatched"))
        )
        if usable and j.response_digest is not None:
            known.setdefault((j.query_id, j.response_digest), j)
    stats = JudgeStats()
    methods: Counter[str] = Counter()
    reused = failed = 0
    task = progress.task(f"{name} (repeats)")
    task.start(len(responses), len(done))
    with JsonlAppender(out) as sink:
        for start in range(0, len(todo), BATCH):
            batch = todo[start : start + BATCH]
            fresh: dict[tuple[str, str], RepeatResponse] = {}
            for r in batch:
                if (r.query_id, r.digest) not in known:
                    fresh.setdefault((r.query_id, r.digest), r)
            judged = session.run(
                judge_many(
                    [(queries[r.query_id], r) for r in fresh.values()],
                    llm,
                    samples=samples,
                    closed_domain=closed_domain,
                    rule=rule,
                    stats=stats,
                    reasons=reasons,
                )
            )
            verdicts = dict(zip(fresh, judged, strict=True))
            records = []
            for r in batch:
                key = (r.query_id, r.digest)
                verdict = verdicts.get(key) or known[key]
                if key not in verdicts or fresh[key] is not r:
                    reused += 1
                failed += verdict.correct is None
                methods[verdict.method] += 1
                fields = verdict.model_dump(exclude={"schema_version", "repeat"})
                records.append(RepeatJudgement(**fields, repeat=r.repeat))
            for key, verdict in verdicts.items():
                if verdict.correct is not None:
                    known[key] = verdict
            sink.append_many(records)
            task.advance(len(batch))
    return RepeatsJudged(
        judged_now=len(todo),
        already_judged=len(done),
        reused=reused,
        methods=dict(methods),
        judge_failed=failed,
    )


def _audit(
    run: RunDir,
    system: str,
    queries: Mapping[str, QueryRecord],
    responses: list[ResponseRecord],
    llm: LLMClient,
    n: int,
    seed: int,
) -> AuditResult:
    """Re-judge ``n`` random deterministic decisions with the LLM; report disagreements
    (the judgements themselves are not changed)."""
    by_id = {r.query_id: r for r in responses}
    decided = [
        j for j in read_jsonl(run.judgements(system), Judgement) if j.method.startswith("match:")
    ]
    chosen = random.Random(f"{seed}:{system}").sample(decided, min(n, len(decided)))

    async def one(j: Judgement) -> bool | str:
        """The LLM's verdict, or why it could not give one."""
        try:
            verdict = await llm_judge(
                llm,
                queries[j.query_id].query,
                queries[j.query_id].reference.display,
                by_id[j.query_id].response or "",
            )
        except FATAL_LLM_ERRORS:
            raise
        except LLMError as exc:
            return str(exc)[:300]
        return verdict.correct

    verdicts = llm.run(gather_all(*(one(j) for j in chosen)))  # on the session's loop
    disagreements = [
        AuditDisagreement(query_id=j.query_id, method=j.method, match=j.correct, llm=v)
        for j, v in zip(chosen, verdicts, strict=True)
        if isinstance(v, bool) and j.correct != v
    ]
    failed = [
        JudgeFailure(query_id=j.query_id, reason=v)
        for j, v in zip(chosen, verdicts, strict=True)
        if isinstance(v, str)
    ]
    return AuditResult(
        audited=len(chosen) - len(failed),
        disagreements=len(disagreements),
        examples=disagreements[:10],
        failed=len(failed),
        failures=failed[:10],
    )


def require_judged(report: JudgeReport) -> None:
    """A judge run whose LLM judge failed on every answer it was asked about, and never
    decided one before, has judged nothing with the LLM: an error that names the first
    failure, not a silent success. (A rerun that judges again only the answers it failed
    on, and fails on them again, reports them as the first run did.)"""
    failed = sum(e.judge_failed for e in report.systems.values())
    asked = sum(
        n for e in report.systems.values() for m, n in e.methods.items() if m.startswith("llm")
    ) + sum(e.llm_judged_before for e in report.systems.values())
    if failed and not asked:
        first = next(
            (
                f"{e.judge_failures[0].query_id}: {e.judge_failures[0].reason}"
                for e in report.systems.values()
                if e.judge_failures
            ),
            "no reason recorded",
        )
        matched = sum(
            n
            for e in report.systems.values()
            for m, n in e.methods.items()
            if m.startswith("match")
        )
        kept = (
            f"; the matchers' {matched} verdicts are written, and a rerun asks the LLM only "
            "about the rest"
            if matched
            else ""
        )
        raise UserError(
            f"the LLM judge failed on all {failed} answers it was asked about "
            f"(first: {first}); nothing was judged by the LLM{kept}"
        )
