"""``generate --import``: a question set of the user's (SQuAD JSON, or JSON Lines of
``{id, context, question, answer, answerable}``), e.g. human-written, as the ``imported``
part of dataset.jsonl, so that systems are run and judged on it beside the SQL-grounded
and document-generated questions, and ``ragaudit compare`` can say whether the sets rank
the systems alike."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragaudit.config import Config
from ragaudit.documents.pairs import read_input
from ragaudit.errors import UserError
from ragaudit.records.io import atomic_write_text, write_jsonl_atomic
from ragaudit.records.models import (
    LabelPair,
    QueryRecord,
    Reference,
    stable_id,
)
from ragaudit.rundir import RunDir
from ragaudit.steps.generate import gold_outside_corpus, other_half
from ragaudit.store.records import read_queries, remove_records
from ragaudit.systems.corpus import load_corpus

IMPORTED_VARIANT = "imported"


@dataclass
class ImportStats:
    """What an import added to the dataset."""

    queries: int = 0
    unanswerable: int = 0
    no_answer: int = 0  # answerable by the set's flag, but the set gives no answer: left out
    contexts: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # questions left out, by reason
    replaced: int = 0  # questions of the last import that changed or left the set
    records_removed: int = 0  # their responses, judgements and scores, removed
    warnings: list[str] = field(default_factory=list)


def query_of(pair: LabelPair, contexts: Mapping[str, str]) -> QueryRecord:
    """One imported question as a query: its own semantic group, its context as the gold
    document (none when the set marks it unanswerable: a hole of the knowledge base).

    The query id is a hash of the question's id, text and reference and of its context
    (its id, and its text's hash in ``contexts``: :func:`context_digests`), so an edited
    question (new wording, new answer, now unanswerable) or an edited context (a document
    that now reads otherwise, or has another id) is a new query that is asked and judged
    afresh, never one that inherits answers and verdicts given over the old text; the group
    id stays the set's own id."""
    unanswerable = bool(pair.impossible)
    answer = None if unanswerable else pair.answer  # the reference is this answer, or none
    reference = (
        Reference(values=[], display="(no answer)")
        if answer is None
        else Reference(values=[answer], display=answer)
    )  # import_questions keeps no answerable question without its answer
    return QueryRecord(
        query_id=stable_id(
            "imported",
            pair.pair_id,
            pair.question,
            answer,
            [(i, contexts[i]) for i in pair.gold_ids],
        ),
        group_id=f"imp-{pair.pair_id}",
        template_id=f"imported:{pair.source}",
        variant=IMPORTED_VARIANT,
        query=pair.question,
        reference=reference,
        gold_ids=[] if unanswerable else list(pair.gold_ids),
        gold_kind="states",
        source="imported",
    )


# The fields every imported query has from the import itself; the others (a label, ...)
# are what later steps may have written into the dataset.
_FROM_IMPORT = frozenset(
    {"schema_version", "query_id", "group_id", "template_id", "variant", "query"}
    | {"reference", "gold_ids", "gold_kind", "source"}
)
_LATER = frozenset(QueryRecord.model_fields) - _FROM_IMPORT
_DEFAULTS = {
    name: QueryRecord.model_fields[name].get_default(call_default_factory=True) for name in _LATER
}


def context_digests(contexts: Mapping[str, str]) -> dict[str, str]:
    """A hash of each context's text, by context id: what an imported query's id holds of
    its context (hashed once per context, however many questions it has)."""
    return {i: stable_id(text, length=32) for i, text in contexts.items()}


def _imported_queries(dataset: Path) -> dict[str, dict[str, Any] | None]:
    """The imported part of ``dataset`` (empty when there is none yet): query id -> what
    later steps wrote into that query (the fields the import does not set, where they are
    not the default), or None when they wrote nothing (most queries)."""
    if not dataset.exists():
        return {}
    out: dict[str, dict[str, Any] | None] = {}
    for q in read_queries(dataset):
        if q.source == "imported":
            later = {k: v for k in _LATER if (v := getattr(q, k)) != _DEFAULTS[k]}
            out[q.query_id] = later or None  # None: nothing, and small
    return out


def _with_later_fields(query: QueryRecord, later: dict[str, Any] | None) -> QueryRecord:
    """``query`` as the dataset held it before: with what later steps wrote into it (the
    label step's label, ...), so that importing a question again that did not change (the
    same query id) keeps all that, and importing the same file again changes nothing."""
    if not later:
        return query
    # The values are the typed ones the dataset's record held; a copy shares the rest (no
    # second validation of every labelled query).
    kept = {
        k: v
        for k, v in later.items()
        if k not in query.model_fields_set  # what this import gives is this import's
    }
    return query.model_copy(update=kept) if kept else query


def _corpus_ids(config: Config, run: RunDir, contexts: dict[str, str]) -> set[str] | None:
    """The ids of the configured corpus, read (and so checked) before anything is
    written; the imported contexts themselves when corpus.path names the file this import
    writes; None when no corpus is configured."""
    path = config.corpus.path
    if path is None:
        return None
    if path.resolve() == run.imported_contexts.resolve():
        return set(contexts)
    return {d.id for d in load_corpus(path)}


def import_questions(config: Config, run: RunDir, path: Path) -> ImportStats:
    """Write the questions of ``path`` as the imported part of dataset.jsonl (the other
    parts stay; an earlier import is replaced) and their contexts to
    imported/contexts.jsonl. A question the set marks answerable but gives no answer to
    (or an empty one) cannot be judged (an empty reference would mean "unanswerable"): it
    is left out, and counted; so are the questions of an empty SQuAD context. The records
    (responses, judgements, scores) of questions of the last import that changed or left
    the set are removed, and counted, so that run and judge ask them again; a question
    that did not change (nor its context) keeps its query id, its records and what later
    steps wrote into its query (its label).

    Everything is read and checked first (the file, the configured corpus): an import
    that fails writes nothing. Nothing left is an error, and the dataset stays as it was."""
    pairs = read_input(path)  # a file it cannot read is a PairsError, one line
    usable = [p for p in pairs.pairs if p.impossible or p.answer is not None]
    stats = ImportStats(
        queries=len(usable),
        unanswerable=sum(bool(p.impossible) for p in usable),
        no_answer=len(pairs.pairs) - len(usable),
        contexts=len(pairs.contexts),
        skipped=dict(pairs.skipped),
    )
    if not usable:
        raise UserError(
            f"{path}: none of its {len(pairs.pairs)} questions has an answer or is marked "
            "unanswerable, so none can be judged"
        )
    for reason, n in sorted(pairs.skipped.items()):
        stats.warnings.append(f"{n} questions left out: {reason}")
    if stats.no_answer:
        stats.warnings.append(
            f"{stats.no_answer} questions have no answer and are not marked unanswerable: "
            "left out (an empty answer is none; give an answer, or answerable: false)"
        )
    digests = context_digests(pairs.contexts)
    queries = [query_of(pair, digests) for pair in usable]
    corpus_ids = _corpus_ids(config, run, pairs.contexts)  # may fail: nothing written yet
    # Both halves from one read of the dataset, held while they are taken.
    _held = read_queries(run.dataset) if run.dataset.exists() else None
    kept = list(other_half(run.dataset, "imported"))
    before = _imported_queries(run.dataset)
    gone = set(before) - {q.query_id for q in queries}
    # An unchanged question keeps what later steps wrote into it (its label, ...); in
    # place, so that a labelled set is not held twice.
    for n, query in enumerate(queries):
        later = before.pop(query.query_id, None)
        if later:
            queries[n] = _with_later_fields(query, later)
    # Stale records go first: a crash after this leaves questions to ask again, never
    # answers to questions that are not asked any more.
    stats.replaced = len(gone)
    stats.records_removed = sum(remove_records(run, gone).values()) if gone else 0
    if stats.records_removed:
        stats.warnings.append(
            f"{len(gone)} questions changed or left the set since the last import: their "
            f"{stats.records_removed} responses, judgements and scores are removed (run and "
            "judge ask the changed ones again)"
        )
    run.imported_contexts.parent.mkdir(parents=True, exist_ok=True)
    # Two files replaced one after the other: killed between them, the run would ask the
    # old questions of the new contexts. The marker says so until both are written.
    atomic_write_text(run.import_incomplete, "an import was interrupted: run it again\n")
    write_jsonl_atomic(
        run.imported_contexts, [{"id": i, "text": text} for i, text in pairs.contexts.items()]
    )
    write_jsonl_atomic(run.dataset, [*kept, *queries])
    run.import_incomplete.unlink()
    if corpus_ids is None:
        stats.warnings.append(
            f"corpus.path is not set: point it at {run.imported_contexts} (or a corpus whose "
            "ids are the contexts' ids) for the built-in systems to retrieve them"
        )
    else:
        named = Counter(doc for q in queries for doc in q.gold_ids or ())
        warning = gold_outside_corpus(named, corpus_ids)
        if warning:
            stats.warnings.append(warning)
    return stats
