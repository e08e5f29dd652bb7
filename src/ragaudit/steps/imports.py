"""``generate --import``: a question set of the user's (SQuAD JSON, or JSON Lines of
``{id, context, question, answer, answerable}``), e.g. human-written, as the ``imported``
part of dataset.jsonl, so that systems are run and judged on it beside the SQL-grounded
and document-generated questions, and ``ragaudit compare`` can say whether the sets rank
the systems alike."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ragaudit.config import Config
from ragaudit.documents.pairs import read_input
from ragaudit.errors import UserError
from ragaudit.records.io import iter_jsonl_dicts, write_jsonl_atomic
from ragaudit.records.models import LabelPair, QueryRecord, Reference, stable_id
from ragaudit.rundir import RunDir
from ragaudit.steps.generate import gold_outside_corpus, other_half
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


def query_of(pair: LabelPair) -> QueryRecord:
    """One imported question as a query: its own semantic group, its context as the gold
    document (none when the set marks it unanswerable: a hole of the knowledge base).

    The query id is a hash of the question's id, text and reference, so an edited question
    (new wording, new answer, now unanswerable) is a new query that is asked and judged
    afresh, never one that inherits the old question's answers and verdicts; the group id
    stays the set's own id."""
    unanswerable = bool(pair.impossible)
    answer = None if unanswerable else pair.answer  # the reference is this answer, or none
    reference = (
        Reference(values=[], display="(no answer)")
        if answer is None
        else Reference(values=[answer], display=answer)
    )  # import_questions keeps no answerable question without its answer
    return QueryRecord(
        query_id=stable_id("imported", pair.pair_id, pair.question, answer),
        group_id=f"imp-{pair.pair_id}",
        template_id=f"imported:{pair.source}",
        variant=IMPORTED_VARIANT,
        query=pair.question,
        reference=reference,
        gold_ids=[] if unanswerable else list(pair.gold_ids),
        gold_kind="states",
        source="imported",
    )


def _record_files(run: RunDir) -> list[Path]:
    """Every file of per-query records: responses, judgements, reference-free scores."""
    folders = (run.responses_dir, run.judgements("_").parent, run.scores_dir)
    return [f for d in folders if d.is_dir() for f in sorted(d.glob("*.jsonl"))]


def _remove_records(run: RunDir, gone: set[str]) -> int:
    """Remove the records of the queries ``gone`` from every per-query file (each file
    rewritten atomically, and only when it holds one); return how many were removed. A
    record of a query the dataset no longer holds would be read as stale, or refused."""
    removed = 0
    for path in _record_files(run):
        kept = []
        dropped = 0
        for _, row in iter_jsonl_dicts(path):  # ragaudit's own appended files
            if str(row.get("query_id")) in gone:
                dropped += 1
            else:
                kept.append(row)
        if dropped:
            write_jsonl_atomic(path, kept)
            removed += dropped
    return removed


def _imported_ids(dataset: Path) -> set[str]:
    """The query ids of the imported part of ``dataset`` (none when there is none yet)."""
    if not dataset.exists():
        return set()
    rows = iter_jsonl_dicts(dataset)
    return {str(row["query_id"]) for _, row in rows if row.get("source") == "imported"}


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
    the set are removed, and counted, so that run and judge ask them again.

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
    queries = [query_of(pair) for pair in usable]
    corpus_ids = _corpus_ids(config, run, pairs.contexts)  # may fail: nothing written yet
    kept = list(other_half(run.dataset, "imported"))
    gone = _imported_ids(run.dataset) - {q.query_id for q in queries}
    # Stale records go first: a crash after this leaves questions to ask again, never
    # answers to questions that are not asked any more.
    stats.replaced = len(gone)
    stats.records_removed = _remove_records(run, gone) if gone else 0
    if stats.records_removed:
        stats.warnings.append(
            f"{len(gone)} questions changed or left the set since the last import: their "
            f"{stats.records_removed} responses, judgements and scores are removed (run and "
            "judge ask the changed ones again)"
        )
    run.imported_contexts.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl_atomic(
        run.imported_contexts, [{"id": i, "text": text} for i, text in pairs.contexts.items()]
    )
    write_jsonl_atomic(run.dataset, [*kept, *queries])
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
