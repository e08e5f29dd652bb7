"""Examples from the neutral JSON Lines of results from systems ragaudit did not run (the
IO edge of the analysis for ``analyze --neutral``). A run's own records are read by the
run store (:mod:`ragaudit.store`), which holds one record per (system, query) across all
the files of a kind; neutral files given together are held to the same rule."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ragaudit.analysis.metrics import Example
from ragaudit.judge.retrieval import DEFAULT_RULE, RetrievalRule, retrieval_correct
from ragaudit.records.io import RecordFileError, iter_jsonl_dicts
from ragaudit.store.records import OneRecordEach

NEUTRAL_FIELDS = ("query_id", "group_id", "variant", "correct")


def read_neutral(
    path: Path,
    *,
    system: str | None = None,
    rule: RetrievalRule = DEFAULT_RULE,
    seen: OneRecordEach | None = None,
) -> Iterator[Example]:
    """Examples from a neutral JSONL file (query_id, group_id, template_id, variant, query,
    reference, response, retrieved_ids, gold_ids, correct, and ``answerable``: false for a
    question that has no answer, absent or true otherwise); a row's own ``system`` field
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
        if row.get("gold_kind") not in (None, "states", "computed", "entity"):
            raise RecordFileError(
                f"{path}:{number}: gold_kind: expected states, computed, entity or null"
            )
        if not isinstance(row.get("answerable", True), bool):
            raise RecordFileError(f"{path}:{number}: answerable: expected true or false")
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
            # false: the question has no answer, so a refusal is right (absent: it has one).
            answerable=row.get("answerable", True),
        )
