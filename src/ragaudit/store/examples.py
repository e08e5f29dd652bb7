"""A run's records joined into the analysis's examples: the dataset with each system's
judgements (the answer as the outcome) or with its responses (retrieval as the outcome).
Every record reaches an example through :func:`~ragaudit.store.records.read_run_records`,
so that no query is counted twice."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from ragaudit.analysis.metrics import Example, gold_state
from ragaudit.analysis.repeats import Attempt
from ragaudit.errors import StaleInputError
from ragaudit.judge.retrieval import RetrievalRule, retrieval_correct
from ragaudit.records.io import read_jsonl
from ragaudit.records.models import (
    Judgement,
    QueryRecord,
    RepeatJudgement,
    RepeatResponse,
    ResponseRecord,
)
from ragaudit.rundir import RunDir
from ragaudit.store.records import (
    check_fresh,
    check_fresh_repeats,
    read_dataset,
    read_retrieved_ids,
    read_run_records,
    record_files,
)


def from_records(
    queries: Mapping[str, QueryRecord],
    judgements: Iterable[Judgement],
    retrieved: Mapping[str, tuple[str, ...]] | None = None,
    undecided: Counter[str] | None = None,
    judge_failed: list[Example] | None = None,
) -> Iterator[Example]:
    """Examples from a run: the dataset (``queries``, by query id) joined with one
    system's judgements (as :func:`~ragaudit.store.records.read_run_records` gives them:
    one per query); ``retrieved`` (query id -> retrieved ids, from the responses) feeds the
    ranking metrics. A judgement the judge failed to give is neither right nor wrong: it
    is left out, counted per system in ``undecided``, and its retrieval (which needs no
    judge) added to ``judge_failed``, for the retrieval figures only (its ``correct`` is
    False and means nothing)."""
    for j in judgements:
        q = queries.get(j.query_id)
        if q is None:
            raise StaleInputError.orphan("judgement", j.query_id, j.system)
        if j.correct is None:
            if undecided is not None:
                undecided[j.system] += 1
            if judge_failed is not None:
                judge_failed.append(_example(j, q, False, retrieved))
            continue
        yield _example(j, q, j.correct, retrieved)


def _example(
    j: Judgement,
    q: QueryRecord,
    correct: bool,
    retrieved: Mapping[str, tuple[str, ...]] | None,
) -> Example:
    """One judgement joined with its query (and the ids its response retrieved)."""
    errored = j.method.startswith("error")
    return Example(
        j.query_id,
        q.group_id,
        q.variant,
        correct,
        _retrieval_verdict(j.retrieval_correct, q.gold_ids, errored),
        j.system,
        retrieved=retrieved.get(j.query_id) if retrieved is not None else None,
        gold=tuple(q.gold_ids) if q.gold_ids is not None else None,
        label=q.label,
        errored=errored,
        gold_kind=q.gold_kind,
        origin=q.source,
        answerable=bool(q.reference.values),
    )


def _retrieval_verdict(stored: bool | None, gold: list[str] | None, errored: bool) -> bool | None:
    """A judgement's retrieval verdict as this version reads it, whatever an older ragaudit
    stored: none where no gold document is known (unknown, or a hole of the knowledge
    base), and a failed response retrieved nothing because it did not run."""
    if not gold:
        return None
    return False if errored else stored


def from_responses(
    queries: Mapping[str, QueryRecord],
    responses: Iterable[ResponseRecord],
    rule: RetrievalRule,
    left_out: dict[tuple[str, str], Counter[str]] | None = None,
) -> Iterator[Example]:
    """Retrieval as the outcome: each response (as
    :func:`~ragaudit.store.records.read_run_records` gives them: one per query) is
    "correct" when its retrieval is (by ``rule`` against the query's gold ids, ``queries``
    by query id). Queries without a gold document (gold ids unknown, or ``[]``: no
    document holds the answer) are left out and counted in ``left_out`` per system and
    variant ("unknown", "no document"); a response that failed (``error``) retrieved
    nothing."""
    for r in responses:
        q = queries.get(r.query_id)
        if q is None:
            raise StaleInputError.orphan("response", r.query_id, r.system)
        ok = retrieval_correct(r.retrieved_ids, q.gold_ids, rule, failed=r.error is not None)
        if ok is None:
            if left_out is not None:
                left_out.setdefault((r.system, q.variant), Counter())[gold_state(q.gold_ids)] += 1
            continue
        yield Example(
            r.query_id,
            q.group_id,
            q.variant,
            ok,
            ok,
            r.system,
            retrieved=tuple(r.retrieved_ids),
            gold=tuple(q.gold_ids or ()),
            label=q.label,
            errored=r.error is not None,
            gold_kind=q.gold_kind,
            origin=q.source,
            answerable=bool(q.reference.values),
        )


def judged_examples(
    queries: Mapping[str, QueryRecord],
    judgement_files: Iterable[list[Judgement]],
    retrieved: Mapping[str, Mapping[str, tuple[str, ...]]],
    undecided: Counter[str] | None = None,
    judge_failed: list[Example] | None = None,
) -> list[Example]:
    """The examples of the judgements of each file (a system's, as the judge writes them),
    each with the ids its system retrieved (``retrieved``: system -> query id -> ids);
    the judge's failures as :func:`from_records` counts and keeps them."""
    examples: list[Example] = []
    for judgements in judgement_files:
        ids = retrieved.get(judgements[0].system) if judgements else None
        examples.extend(from_records(queries, judgements, ids, undecided, judge_failed))
    return examples


def answer_examples(
    run: RunDir,
    files: list[Path] | None = None,
    undecided: Counter[str] | None = None,
    judge_failed: list[Example] | None = None,
    under: set[str] | None = None,
) -> list[Example]:
    """The run's answers as examples: the dataset joined with the judgements of ``files``
    (every judgements file by default) and the responses' retrieved ids; the judgements
    the judge failed to give are counted per system in ``undecided``, and their
    retrievals kept in ``judge_failed`` (:func:`from_records`). A judgement of
    another response than its system's file holds now (the system run again) is refused
    (:func:`~ragaudit.store.records.check_fresh`), never scored. ``under`` receives the
    rules each judgement was given under (:attr:`Judgement.judged_under`)."""
    queries = read_dataset(run)
    digests: dict[str, dict[str, str]] = {}
    retrieved = read_retrieved_ids(run, digests)

    def fresh() -> Iterator[list[Judgement]]:
        # One file at a time, checked before any of it becomes an example.
        for _, records in read_run_records(run, Judgement, files):
            judgements = list(records)
            if judgements:
                check_fresh(run, judgements, digests.get(judgements[0].system, {}), queries.by_id)
                if under is not None:
                    under.update(j.judged_under for j in judgements if j.judged_under)
            yield judgements

    return judged_examples(queries.by_id, fresh(), retrieved, undecided, judge_failed)


def retrieval_examples(
    run: RunDir,
    rule: RetrievalRule,
    files: list[Path] | None = None,
    left_out: dict[tuple[str, str], Counter[str]] | None = None,
) -> list[Example]:
    """The run's responses (of ``files``, every responses file by default) as examples of
    retrieval as the outcome (:func:`from_responses`)."""
    queries = read_dataset(run)
    examples: list[Example] = []
    for _, responses in read_run_records(run, ResponseRecord, files):
        examples.extend(from_responses(queries.by_id, responses, rule, left_out))
    return examples


def repeat_attempts(run: RunDir) -> list[Attempt]:
    """Every judged asking of every query by each system that has repeats
    (``repeats/judgements/``, from ``run --repeat N``): its first asking from
    ``judgements/`` (repeat 0) and the others from the repeats' judgements, each once per
    (system, query, repeat). Judgements the judge failed to give are left out; a judgement
    of another answer than the run holds now (the system run again) is refused, as
    :func:`answer_examples` refuses it. Empty when no system has repeats."""
    files = record_files(run, RepeatJudgement)
    if not files:
        return []
    queries = read_dataset(run).by_id
    attempts: list[Attempt] = []

    def add(judgements: list[Judgement], kind: str) -> None:
        for j in judgements:
            q = queries.get(j.query_id)
            if q is None:
                raise StaleInputError.orphan(kind, j.query_id, j.system)
            if j.correct is not None:
                repeat = getattr(j, "repeat", 0)
                attempts.append(
                    Attempt(j.system, j.query_id, q.group_id, q.variant, repeat, j.correct)
                )

    for _, records in read_run_records(run, RepeatJudgement, files):
        repeats = list(records)
        if not repeats:
            continue
        system = repeats[0].system
        path = run.repeat_responses(system)
        now = (
            {(r.query_id, r.repeat): r.digest for r in read_jsonl(path, RepeatResponse)}
            if path.exists()
            else {}
        )
        check_fresh_repeats(run, repeats, now)
        first = run.judgements(system)
        if first.exists():
            _, judged = next(read_run_records(run, Judgement, [first]))
            judgements = list(judged)
            check_fresh(run, judgements, _digests(run.responses(system)))
            add(judgements, "judgement")
        add(list(repeats), "repeat judgement")
    return attempts


def _digests(path: Path) -> dict[str, str]:
    """Query id -> the fingerprint of its response in a responses file (none when it is
    missing): what a judgement of it must have judged."""
    if not path.exists():
        return {}
    return {r.query_id: r.digest for r in read_jsonl(path, ResponseRecord)}
