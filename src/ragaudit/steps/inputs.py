"""Examples from the files systems leave behind: ragaudit's own records, or the neutral
JSON Lines of results from systems ragaudit did not run (the IO edge of the analysis)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from ragaudit.analysis.metrics import Example, gold_state
from ragaudit.judge.retrieval import DEFAULT_RULE, RetrievalRule, retrieval_correct
from ragaudit.records.io import RecordFileError, iter_jsonl_dicts
from ragaudit.records.models import Judgement, QueryRecord, ResponseRecord

NEUTRAL_FIELDS = ("query_id", "group_id", "variant", "correct")


def read_neutral(
    path: Path, *, system: str | None = None, rule: RetrievalRule = DEFAULT_RULE
) -> Iterator[Example]:
    """Examples from a neutral JSONL file (query_id, group_id, template_id, variant, query,
    reference, response, retrieved_ids, gold_ids, correct); a row's own ``system`` field
    wins over ``system``. The file is the user's, not one ragaudit appends to: a bad last
    line is an error with its number, never skipped as torn."""
    name = system or "external"
    seen: dict[str, set[str]] = {}  # system -> query ids
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
        ids = seen.get(who)
        if ids is None:
            ids = seen[who] = set()
        if query_id in ids:
            raise RecordFileError(f"{path}:{number}: {duplicate_message('row', query_id, who)}")
        ids.add(query_id)
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
    """Examples from a run: the dataset joined with one system's judgements by query id;
    ``retrieved`` (query id -> retrieved ids, from the responses) feeds the ranking metrics.
    A judgement the judge failed to give is neither right nor wrong: it is left out, and
    counted per system in ``undecided``."""
    index = {q.query_id: q for q in queries}
    seen: set[str] = set()
    for j in judgements:
        q = index.get(j.query_id)
        if q is None:
            raise RecordFileError(f"judgement for unknown query {j.query_id} ({j.system})")
        if j.query_id in seen:
            raise RecordFileError(duplicate_message("judgement", j.query_id, j.system))
        seen.add(j.query_id)
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
    """Retrieval as the outcome: each response is "correct" when its retrieval is (by
    ``rule`` against the query's gold ids). Queries without a gold document (gold ids
    unknown, or ``[]``: no document holds the answer) are left out and counted in
    ``left_out`` per system and variant ("unknown", "no document"); a response that failed
    (``error``) retrieved nothing."""
    index = {q.query_id: q for q in queries}
    seen: set[str] = set()
    for r in responses:
        q = index.get(r.query_id)
        if q is None:
            raise RecordFileError(f"response for unknown query {r.query_id} ({r.system})")
        if r.query_id in seen:
            raise RecordFileError(duplicate_message("response", r.query_id, r.system))
        seen.add(r.query_id)
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
