"""Typed readers of a run's record files: the dataset, read once while a step holds it
and indexed by query id once, and the responses, judgements and reference-free scores of
every system, at most one record per (system, query) across all the files of a kind
(:class:`OneRecordEach`); and the repeats of ``run --repeat N``, at most one per (system,
query, repeat)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator, Mapping
from functools import cached_property
from pathlib import Path
from typing import TypeVar

from ragaudit.errors import StaleInputError
from ragaudit.records.io import (
    JsonlAppender,
    RecordFileError,
    iter_jsonl_dicts,
    read_jsonl,
    read_jsonl_numbered,
    validate_record,
    write_jsonl_atomic,
)
from ragaudit.records.models import (
    FreeScoreRecord,
    Judgement,
    QueryRecord,
    RefreshedGroup,
    RepeatJudgement,
    RepeatResponse,
    ResponseRecord,
    StaleDocument,
    gold_digest,
)
from ragaudit.rundir import RunDir

RunRecord = TypeVar(
    "RunRecord", ResponseRecord, Judgement, FreeScoreRecord, RepeatResponse, RepeatJudgement
)
RecordModel = (
    type[ResponseRecord]
    | type[Judgement]
    | type[FreeScoreRecord]
    | type[RepeatResponse]
    | type[RepeatJudgement]
)

# A file as it is on disk now: device, inode, size and modification time (ns). An atomic
# rewrite changes the inode, an append the size, an edit in place the time.
Stamp = tuple[int, int, int, int]


def stamp(path: Path) -> Stamp | None:
    """``path``'s :data:`Stamp`, or None when it cannot be read (missing, ...)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class Queries:
    """The questions of one dataset file (``dataset.jsonl``), in the file's order, as
    :class:`QueryRecord` s, with their index by query id (:attr:`by_id`), built the first
    time it is asked for. The records are frozen: every reader of a step shares them."""

    def __init__(self, path: Path, records: tuple[QueryRecord, ...], at: Stamp | None) -> None:
        self.path = path
        self.records = records
        self.stamp = at

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[QueryRecord]:
        return iter(self.records)

    @cached_property
    def by_id(self) -> Mapping[str, QueryRecord]:
        """Query id -> its record."""
        return {q.query_id: q for q in self.records}


# Datasets read and still held by someone (a step holds its run's while it works), by
# path: a second reader of the same unchanged file in that step gets the same records
# instead of parsing the file again. Weak, so that nothing is kept after the step.
_READ: weakref.WeakValueDictionary[Path, Queries] = weakref.WeakValueDictionary()
_READ_LOCK = threading.Lock()


def read_queries(path: Path) -> Queries:
    """The queries of the dataset file at ``path``. Read once while someone holds them:
    a second call on the same file, unchanged since (same inode, size and modification
    time), returns the same :class:`Queries`; a changed file is read again. A bad line is a
    :class:`~ragaudit.records.io.RecordFileError` naming it, as every reader words it."""
    key = path.absolute()
    at = stamp(path)
    if at is not None:
        with _READ_LOCK:
            held = _READ.get(key)
        if held is not None and held.stamp == at:
            return held
    # The stamp is taken before the read: a file that changes during it is read again next.
    queries = Queries(path, tuple(read_jsonl(path, QueryRecord)), at)
    if at is not None:
        with _READ_LOCK:
            _READ[key] = queries
    return queries


def read_dataset(run: RunDir) -> Queries:
    """The run's dataset (``dataset.jsonl``): :func:`read_queries`."""
    return read_queries(run.dataset)


def duplicate_message(kind: str, query_id: str, system: str, repeat: int = 0) -> str:
    """Why a file holding two records of one (system, query) (or of one repeat of it)
    cannot be used: counting both would weigh that query twice, and choosing one would be
    a guess."""
    which = f" (repeat {repeat})" if repeat else ""
    return (
        f"two {kind}s of query {query_id}{which} by {system}: the file was written twice "
        f"(two steps at once on one run directory?); remove the duplicate lines, or delete "
        f"the file and run the step again"
    )


class OneRecordEach:
    """Which file each (system, query) record of one kind (``response``, ``judgement``,
    ``score``, ``row``) was read from, so that a second one is refused wherever it is: in
    the same file (written twice) or in another one (a copy such as
    ``judgements/rag-old.jsonl``, an older file kept beside the new one). Counting both
    would weigh that query twice, and keeping one would be a guess."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        # system -> query id (with its repeat, for a repeat's record) -> file
        self._files: dict[str, dict[str | tuple[str, int], Path]] = {}

    def claim(
        self, system: str, query_id: str, path: Path, line: int | None = None, repeat: int = 0
    ) -> None:
        """Record that ``path`` (at ``line``, when known) holds ``system``'s record of
        ``query_id`` (of its ``repeat``-th asking, for a repeat's record); a
        :class:`RecordFileError` naming both places if one was read before."""
        files = self._files.get(system)
        if files is None:
            files = self._files[system] = {}
        key: str | tuple[str, int] = (query_id, repeat) if repeat else query_id
        first = files.get(key)
        if first is None:
            files[key] = path
            return
        where = f"{path}:{line}" if line is not None else str(path)
        if first == path:
            message = duplicate_message(self.kind, query_id, system, repeat)
            raise RecordFileError(f"{where}: {message}")
        which = f" (repeat {repeat})" if repeat else ""
        raise RecordFileError(
            f"two {self.kind}s of query {query_id}{which} by {system}, in {first} and in "
            f"{where}: "
            f"counting both would weigh the query twice; remove one of them (a copy, or an "
            f"older file kept beside the new one?)"
        )

    def read(self, path: Path, model: type[RunRecord]) -> Iterator[RunRecord]:
        """The records of ``path``, each claimed as it is read."""
        claim = self.claim
        for record in read_jsonl(path, model):
            claim(record.system, record.query_id, path, repeat=getattr(record, "repeat", 0))
            yield record


def _kind(run: RunDir, model: RecordModel) -> tuple[Path, str]:
    """The folder of the run that holds ``model``'s records, and what one is called."""
    if model is RepeatJudgement:
        return run.repeats_dir / "judgements", "judgement"
    if model is RepeatResponse:
        return run.repeats_dir / "responses", "response"
    if model is Judgement:
        return run.judgements_dir, "judgement"
    if model is FreeScoreRecord:
        return run.scores_dir, "score"
    return run.responses_dir, "response"


def record_files(run: RunDir, model: RecordModel) -> list[Path]:
    """The run's files of ``model`` records (``responses/``, ``judgements/`` or
    ``scores/``, or the repeats' ``repeats/responses/`` and ``repeats/judgements/``, one
    per system as the steps write them), in name order; none when the folder is
    missing."""
    folder, _ = _kind(run, model)
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


def read_run_records(
    run: RunDir, model: type[RunRecord], files: list[Path] | None = None
) -> Iterator[tuple[Path, Iterator[RunRecord]]]:
    """Each of the run's files of ``model`` records (``files``, or :func:`record_files`)
    with its records, streamed, at most one per (system, query) across all of them: a
    second one, in the same file or another, is a :class:`RecordFileError` naming both
    files. The one way a run's records reach a figure, so that no reader counts a query
    twice."""
    seen = OneRecordEach(_kind(run, model)[1])
    for path in record_files(run, model) if files is None else files:
        yield path, seen.read(path, model)


def read_retrieved_ids(
    run: RunDir, digests: dict[str, dict[str, str]] | None = None
) -> dict[str, dict[str, tuple[str, ...]]]:
    """System -> query id -> the ids it retrieved, from every responses file of the run,
    at most one response per (system, query) as :func:`read_run_records` holds them (a
    second one is named by its line). ``digests`` (system -> query id), when given,
    receives each response's fingerprint (:attr:`ResponseRecord.digest`), for
    :func:`check_fresh`."""
    seen = OneRecordEach("response")
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for path in record_files(run, ResponseRecord):
        for number, response in read_jsonl_numbered(path, ResponseRecord):
            seen.claim(response.system, response.query_id, path, number)
            by_query = out.get(response.system)
            if by_query is None:
                by_query = out[response.system] = {}
            by_query[response.query_id] = tuple(item.id for item in response.retrieved)
            if digests is not None:
                digests.setdefault(response.system, {})[response.query_id] = response.digest
    return out


def stale_reference(judgement: Judgement, queries: Mapping[str, QueryRecord]) -> bool:
    """Whether ``judgement`` was given against another reference, or other gold ids, than
    its question has now (``queries``: the dataset by id). One written before judgements
    kept those fingerprints, or of a question no longer in the dataset, is not."""
    query = queries.get(judgement.query_id)
    if query is None:
        return False
    if judgement.reference_digest is not None and (
        query.reference.digest != judgement.reference_digest
    ):
        return True
    return judgement.gold_digest is not None and gold_digest(query.gold_ids) != (
        judgement.gold_digest
    )


def check_fresh(
    run: RunDir,
    judgements: list[Judgement],
    digests: Mapping[str, str],
    queries: Mapping[str, QueryRecord] | None = None,
) -> None:
    """Refuse judgements made of other responses than the run holds now (``digests``: query
    id -> the current response's fingerprint): a system run again after its responses file
    was deleted keeps its old verdicts otherwise, and a broken candidate would be scored
    by its predecessor's. A judgement whose response is gone (its file removed, by hand or
    by ``run --rerun``) is refused too. With ``queries`` (the dataset by id), refuse also
    those given against another reference than the question has now: a dataset generated
    again on changed data would otherwise keep verdicts against answers that are no longer
    true. Each is a :class:`~ragaudit.errors.StaleInputError` whose step is ``judge``,
    which judges such responses anew and drops the verdicts of answers that are gone. A
    judgement written before judgements kept a fingerprint (or supplied by the user
    without one) is not checked."""
    if not judgements:
        return
    system = judgements[0].system
    changed = [
        j
        for j in judgements
        if j.response_digest is not None and digests.get(j.query_id) != j.response_digest
    ]
    if changed:
        gone = [j for j in changed if j.query_id not in digests]
        first = (gone or changed)[0]
        if gone:
            why = (
                f"judged responses that {run.responses(system)} no longer holds (the "
                "responses were removed)"
            )
        else:
            why = (
                f"judged another response than {run.responses(system)} holds now (the "
                "system was run again)"
            )
        raise StaleInputError(
            f"{run.judgements(system)}: {len(changed)} judgement(s) of {system} (query "
            f"{first.query_id} first) {why}",
            "judge",
            {"systems": [system]},
        )
    if queries is None:
        return
    stale_ones = [j for j in judgements if stale_reference(j, queries)]
    if stale_ones:
        first = stale_ones[0]
        raise StaleInputError(
            f"{run.judgements(first.system)}: {len(stale_ones)} judgement(s) of "
            f"{first.system} (query {first.query_id} first) were given against another "
            f"reference, or other gold ids, than {run.dataset} holds now (the dataset was "
            "generated again on changed data; generate --refresh gives changed questions "
            "new ids instead)",
            "judge",
            {"systems": [first.system]},
        )


def check_fresh_repeats(
    run: RunDir, judgements: list[RepeatJudgement], digests: Mapping[tuple[str, int], str]
) -> None:
    """:func:`check_fresh` for the judgements of one system's repeats (``digests``: (query
    id, repeat) -> the fingerprint of that repeat's answer now; a repeat no longer asked,
    after ``run --rerun`` with fewer repeats, has none)."""
    stale = [
        j
        for j in judgements
        if j.response_digest is not None
        and digests.get((j.query_id, j.repeat)) != j.response_digest
    ]
    if stale:
        first = stale[0]
        answers = run.repeat_responses(first.system)
        if (first.query_id, first.repeat) in digests:
            why = f"another answer than {answers} holds now (the system was run again)"
        else:
            why = f"an answer that {answers} no longer holds (asked again, or removed)"
        raise StaleInputError(
            f"{run.repeat_judgements(first.system)}: {len(stale)} judgement(s) of "
            f"{first.system}'s repeats (query {first.query_id}, repeat {first.repeat} first) "
            f"judged {why}",
            "judge",
            {"systems": [first.system]},
        )


def check_fresh_scores(
    run: RunDir, scores: list[FreeScoreRecord], digests: Mapping[str, str]
) -> None:
    """:func:`check_fresh` for one system's reference-free scores (``digests``: query id
    -> the fingerprint of its response now): a score of a response replaced since, or no
    longer there, is refused until ``judge --reference-free`` scores it again. A score
    written before scores kept a fingerprint is not checked."""
    stale = [
        s
        for s in scores
        if s.response_digest is not None and digests.get(s.query_id) != s.response_digest
    ]
    if stale:
        first = stale[0]
        raise StaleInputError(
            f"{run.scores(first.system)}: {len(stale)} score(s) of {first.system} (query "
            f"{first.query_id} first) scored another response than "
            f"{run.responses(first.system)} holds now",
            "score",
            {"systems": [first.system]},
        )


def response_digests(run: RunDir, system: str) -> dict[str, str]:
    """Query id -> the fingerprint of ``system``'s response to it now
    (:attr:`ResponseRecord.digest`; none when it has no responses file): what a judgement
    or a score of it must have judged."""
    path = run.responses(system)
    if not path.exists():
        return {}
    return {r.query_id: r.digest for r in read_jsonl(path, ResponseRecord)}


def read_fresh_scores(
    run: RunDir, files: list[Path] | None = None
) -> Iterator[tuple[Path, list[FreeScoreRecord]]]:
    """Each of the run's reference-free score files (``files``, or every one) with its
    records, as :func:`read_run_records` reads them, each file refused whole where it
    holds a score of another response than the run holds now
    (:func:`check_fresh_scores`)."""
    for path, records in read_run_records(run, FreeScoreRecord, files):
        scores = list(records)
        if scores:
            check_fresh_scores(run, scores, response_digests(run, scores[0].system))
        yield path, scores


def read_responses(
    run: RunDir, system: str, only: set[str] | None = None
) -> dict[str, ResponseRecord]:
    """``system``'s responses (its file under ``responses/``), by query id; with ``only``,
    those of these queries alone; none when the system has no file."""
    path = run.responses(system)
    if not path.exists() or (only is not None and not only):
        return {}
    return {
        r.query_id: r
        for r in read_jsonl(path, ResponseRecord)
        if only is None or r.query_id in only
    }


def read_refresh_log(run: RunDir) -> tuple[list[RefreshedGroup], list[StaleDocument]]:
    """What the last ``generate --refresh`` listed in refresh.jsonl: the groups that moved
    and the documents stating facts no longer true (both empty when the run was never
    refreshed). A bad line is a :class:`RecordFileError` naming it."""
    groups: list[RefreshedGroup] = []
    documents: list[StaleDocument] = []
    if not run.refresh_log.exists():
        return groups, documents
    for number, obj in iter_jsonl_dicts(run.refresh_log):
        if obj.get("kind") == "document":
            documents.append(validate_record(run.refresh_log, number, obj, StaleDocument))
        else:
            groups.append(validate_record(run.refresh_log, number, obj, RefreshedGroup))
    return groups, documents


# The folder of each kind of per-query record, as remove_records counts them.
RECORD_FOLDERS: dict[str, RecordModel] = {
    "responses": ResponseRecord,
    "judgements": Judgement,
    "scores": FreeScoreRecord,
    # The repeats of run --repeat N: a repeat of a question that left goes with it.
    "repeats/responses": RepeatResponse,
    "repeats/judgements": RepeatJudgement,
}


def remove_records(run: RunDir, gone: set[str], retired: Path | None = None) -> dict[str, int]:
    """Remove the records of the queries ``gone`` from every per-query file (responses,
    judgements, reference-free scores, and the repeats' responses and judgements; each
    file rewritten atomically, and only when it holds one); how many were removed, per
    kind (``responses``, ``judgements``, ``scores``, ``repeats/responses``,
    ``repeats/judgements``). A record of a query the dataset no longer holds would be read as stale,
    or refused. With ``retired`` (a folder), each removed record is first appended to the
    file of the same name under ``retired/<kind>/``: kept, and never read again."""
    removed: dict[str, int] = {}
    for kind, model in RECORD_FOLDERS.items():
        for path in record_files(run, model):
            kept = []
            dropped = []
            for record in read_jsonl(path, model):  # ragaudit's own appended files
                if record.query_id in gone:
                    dropped.append(record)
                else:
                    kept.append(record)
            if not dropped:
                continue
            if retired is not None:
                with JsonlAppender(retired / kind / path.name) as sink:
                    sink.append_many(dropped)
            write_jsonl_atomic(path, kept)
            removed[kind] = removed.get(kind, 0) + len(dropped)
    return removed
