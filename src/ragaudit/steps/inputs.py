"""Examples from the files systems leave behind: ragaudit's own records, or the neutral
JSON Lines of results from systems ragaudit did not run (the IO edge of the analysis).

Every reader that turns a run's records into figures (analyze, compare, gate, the answer
table) reads them through :func:`read_run_records`, which holds one record per (system,
query) across all the files of a kind (:class:`OneRecordEach`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

from ragaudit.analysis.metrics import Example, gold_state
from ragaudit.judge.retrieval import DEFAULT_RULE, RetrievalRule, retrieval_correct
from ragaudit.records.io import RecordFileError, iter_jsonl_dicts, read_jsonl
from ragaudit.records.models import (
    FreeScoreRecord,
    Judgement,
    QueryRecord,
    ResponseRecord,
    response_digest,
)
from ragaudit.rundir import RunDir

NEUTRAL_FIELDS = ("query_id", "group_id", "variant", "correct")

RunRecord = TypeVar("RunRecord", ResponseRecord, Judgement, FreeScoreRecord)
RecordModel = type[ResponseRecord] | type[Judgement] | type[FreeScoreRecord]


class OneRecordEach:
    """Which file each (system, query) record of one kind (``response``, ``judgement``,
    ``score``, ``row``) was read from, so that a second one is refused wherever it is: in
    the same file (written twice) or in another one (a copy such as
    ``judgements/rag-old.jsonl``, an older file kept beside the new one). Counting both
    would weigh that query twice, and keeping one would be a guess."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._files: dict[str, dict[str, Path]] = {}  # system -> query id -> file

    def claim(self, system: str, query_id: str, path: Path, line: int | None = None) -> None:
        """Record that ``path`` (at ``line``, when known) holds ``system``'s record of
        ``query_id``; a :class:`RecordFileError` naming both places if one was read before."""
        files = self._files.get(system)
        if files is None:
            files = self._files[system] = {}
        first = files.get(query_id)
        if first is None:
            files[query_id] = path
            return
        where = f"{path}:{line}" if line is not None else str(path)
        if first == path:
            raise RecordFileError(f"{where}: {duplicate_message(self.kind, query_id, system)}")
        raise RecordFileError(
            f"two {self.kind}s of query {query_id} by {system}, in {first} and in {where}: "
            f"counting both would weigh the query twice; remove one of them (a copy, or an "
            f"older file kept beside the new one?)"
        )

    def read(self, path: Path, model: type[RunRecord]) -> Iterator[RunRecord]:
        """The records of ``path``, each claimed as it is read."""
        claim = self.claim
        for record in read_jsonl(path, model):
            claim(record.system, record.query_id, path)
            yield record


def _kind(run: RunDir, model: RecordModel) -> tuple[Path, str]:
    """The folder of the run that holds ``model``'s records, and what one is called."""
    if model is Judgement:
        return run.judgements("_").parent, "judgement"
    if model is FreeScoreRecord:
        return run.scores_dir, "score"
    return run.responses_dir, "response"


def record_files(run: RunDir, model: RecordModel) -> list[Path]:
    """The run's files of ``model`` records (``responses/``, ``judgements/`` or
    ``scores/``, one per system as the steps write them), in name order; none when the
    folder is missing."""
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
    at most one response per (system, query) as :func:`read_run_records` holds them; read
    as plain JSON (a million responses are validated by the steps that read them whole).
    ``digests`` (system -> query id) receives each response's fingerprint, for
    :func:`check_fresh`."""
    seen = OneRecordEach("response")
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for path in record_files(run, ResponseRecord):
        for number, row in iter_jsonl_dicts(path):
            try:
                system, query_id = str(row["system"]), str(row["query_id"])
                ids = tuple(str(item["id"]) for item in row.get("retrieved") or [])
            except (KeyError, TypeError):
                raise RecordFileError(f"{path}:{number}: not a response record") from None
            seen.claim(system, query_id, path, number)
            by_query = out.get(system)
            if by_query is None:
                by_query = out[system] = {}
            by_query[query_id] = ids
            if digests is not None:
                digests.setdefault(system, {})[query_id] = response_digest(
                    row.get("response"), ids, row.get("error")
                )
    return out


def check_fresh(run: RunDir, judgements: list[Judgement], digests: dict[str, str]) -> None:
    """Refuse judgements made of other responses than the run holds now (``digests``: query
    id -> the current response's fingerprint): a system run again after its responses file
    was deleted keeps its old verdicts otherwise, and a broken candidate would be scored
    by its predecessor's. ``ragaudit judge`` judges such responses anew."""
    for j in judgements:
        now = digests.get(j.query_id)
        if j.response_digest is not None and now is not None and now != j.response_digest:
            stale = sum(
                1
                for k in judgements
                if k.response_digest is not None
                and digests.get(k.query_id) not in (None, k.response_digest)
            )
            raise RecordFileError(
                f"{run.judgements(j.system)}: {stale} judgement(s) of {j.system} (query "
                f"{j.query_id} first) judged another response than {run.responses(j.system)} "
                "holds now (the system was run again): run ragaudit judge, which judges "
                "them anew"
            )


def read_neutral(
    path: Path,
    *,
    system: str | None = None,
    rule: RetrievalRule = DEFAULT_RULE,
    seen: OneRecordEach | None = None,
) -> Iterator[Example]:
    """Examples from a neutral JSONL file (query_id, group_id, template_id, variant, query,
    reference, response, retrieved_ids, gold_ids, correct); a row's own ``system`` field
    wins over ``system``. The file is the user's, not one ragaudit appends to: a bad last
    line is an error with its number, never skipped as torn. A second row of one (system,
    query) is an error, in this file or in another read with the same ``seen``."""
    name = system or "external"
    claim = (seen if seen is not None else OneRecordEach("row")).claim
    for number, row in iter_jsonl_dicts(path, skip_torn_tail=False):
        missing = [f for f in NEUTRAL_FIELDS if f not in row]
        if missing:
            raise RecordFileError(f"{path}:{number}: missing {', '.join(missing)}")
        if not isinstance(row["correct"], bool):
            raise RecordFileError(f"{path}:{number}: correct: expected true or false")
        if row.get("gold_kind") not in (None, "states", "entity"):
            raise RecordFileError(f"{path}:{number}: gold_kind: expected states, entity or null")
        who = str(row.get("system") or name)
        query_id = str(row["query_id"])
        claim(who, query_id, path, number)
        retrieved = row.get("retrieved_ids")
        gold = row.get("gold_ids")
        failed = bool(row.get("error"))
        yield Example(
            query_id=query_id,
            group_id=str(row["group_id"]),
            variant=str(row["variant"]),
            correct=row["correct"],
            # Without the retrieved ids, whether retrieval was right is not known.
            retrieval_correct=None
            if retrieved is None and not failed
            else retrieval_correct(list(retrieved or []), gold, rule, failed=failed),
            system=who,
            # A failed row retrieved nothing: counted as such by every retrieval figure.
            retrieved=tuple(retrieved) if retrieved is not None else (() if failed else None),
            gold=tuple(gold) if gold is not None else None,
            label=row.get("label"),
            errored=failed,
            gold_kind=row.get("gold_kind") if gold is not None else None,
        )


def duplicate_message(kind: str, query_id: str, system: str) -> str:
    """Why a file holding two records of one (system, query) cannot be used: counting both
    would weigh that query twice, and choosing one would be a guess."""
    return (
        f"two {kind}s of query {query_id} by {system}: the file was written twice (two steps "
        f"at once on one run directory?); remove the duplicate lines, or delete the file and "
        f"run the step again"
    )


def from_records(
    queries: Iterator[QueryRecord],
    judgements: Iterator[Judgement],
    retrieved: dict[str, tuple[str, ...]] | None = None,
    undecided: Counter[str] | None = None,
) -> Iterator[Example]:
    """Examples from a run: the dataset joined with one system's judgements by query id
    (as :func:`read_run_records` gives them: one per query); ``retrieved`` (query id ->
    retrieved ids, from the responses) feeds the ranking metrics. A judgement the judge
    failed to give is neither right nor wrong: it is left out, and counted per system in
    ``undecided``."""
    index = {q.query_id: q for q in queries}
    for j in judgements:
        q = index.get(j.query_id)
        if q is None:
            raise RecordFileError(f"judgement for unknown query {j.query_id} ({j.system})")
        if j.correct is None:
            if undecided is not None:
                undecided[j.system] += 1
            continue
        errored = j.method.startswith("error")
        yield Example(
            j.query_id,
            q.group_id,
            q.variant,
            j.correct,
            _retrieval_verdict(j.retrieval_correct, q.gold_ids, errored),
            j.system,
            retrieved=retrieved.get(j.query_id) if retrieved is not None else None,
            gold=tuple(q.gold_ids) if q.gold_ids is not None else None,
            label=q.label,
            errored=errored,
            gold_kind=q.gold_kind,
            origin=q.source,
        )


def _retrieval_verdict(stored: bool | None, gold: list[str] | None, errored: bool) -> bool | None:
    """A judgement's retrieval verdict as this version reads it, whatever an older ragaudit
    stored: none where no gold document is known (unknown, or a hole of the knowledge
    base), and a failed response retrieved nothing because it did not run."""
    if not gold:
        return None
    return False if errored else stored


def from_responses(
    queries: Iterator[QueryRecord],
    responses: Iterator[ResponseRecord],
    rule: RetrievalRule,
    left_out: dict[tuple[str, str], Counter[str]] | None = None,
) -> Iterator[Example]:
    """Retrieval as the outcome: each response (as :func:`read_run_records` gives them: one
    per query) is "correct" when its retrieval is (by ``rule`` against the query's gold
    ids). Queries without a gold document (gold ids unknown, or ``[]``: no document holds
    the answer) are left out and counted in ``left_out`` per system and variant
    ("unknown", "no document"); a response that failed (``error``) retrieved nothing."""
    index = {q.query_id: q for q in queries}
    for r in responses:
        q = index.get(r.query_id)
        if q is None:
            raise RecordFileError(f"response for unknown query {r.query_id} ({r.system})")
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
        )
