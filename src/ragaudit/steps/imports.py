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
from ragaudit.records.io import write_jsonl_atomic
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
    warnings: list[str] = field(default_factory=list)


def query_of(pair: LabelPair) -> QueryRecord:
    """One imported question as a query: its own semantic group, its context as the gold
    document (none when the set marks it unanswerable: a hole of the knowledge base)."""
    unanswerable = bool(pair.impossible)
    reference = (
        Reference(values=[], display="(no answer)")
        if unanswerable or pair.answer is None
        else Reference(values=[pair.answer], display=pair.answer)
    )  # import_questions keeps no answerable question without its answer
    return QueryRecord(
        query_id=stable_id("imported", pair.pair_id),
        group_id=f"imp-{pair.pair_id}",
        template_id=f"imported:{pair.source}",
        variant=IMPORTED_VARIANT,
        query=pair.question,
        reference=reference,
        gold_ids=[] if unanswerable else list(pair.gold_ids),
        gold_kind="states",
        source="imported",
    )


def import_questions(config: Config, run: RunDir, path: Path) -> ImportStats:
    """Write the questions of ``path`` as the imported part of dataset.jsonl (the other
    parts stay; an earlier import is replaced) and their contexts to
    imported/contexts.jsonl. A question the set marks answerable but gives no answer to
    cannot be judged (an empty reference would mean "unanswerable"): it is left out, and
    counted. Nothing left is an error, and the dataset stays as it was."""
    pairs = read_input(path)  # a file it cannot read is a PairsError, one line
    usable = [p for p in pairs.pairs if p.impossible or p.answer is not None]
    stats = ImportStats(
        queries=len(usable),
        unanswerable=sum(bool(p.impossible) for p in usable),
        no_answer=len(pairs.pairs) - len(usable),
        contexts=len(pairs.contexts),
    )
    if not usable:
        raise UserError(
            f"{path}: none of its {len(pairs.pairs)} questions has an answer or is marked "
            "unanswerable, so none can be judged"
        )
    if stats.no_answer:
        stats.warnings.append(
            f"{stats.no_answer} questions have no answer and are not marked unanswerable: "
            "left out (give an answer, or answerable: false)"
        )
    queries = [query_of(pair) for pair in usable]
    run.imported_contexts.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl_atomic(
        run.imported_contexts, [{"id": i, "text": text} for i, text in pairs.contexts.items()]
    )
    kept = list(other_half(run.dataset, "imported"))
    write_jsonl_atomic(run.dataset, [*kept, *queries])
    if config.corpus.path is None:
        stats.warnings.append(
            f"corpus.path is not set: point it at {run.imported_contexts} (or a corpus whose "
            "ids are the contexts' ids) for the built-in systems to retrieve them"
        )
    else:
        named = Counter(doc for q in queries for doc in q.gold_ids or ())
        warning = gold_outside_corpus(named, {d.id for d in load_corpus(config.corpus.path)})
        if warning:
            stats.warnings.append(warning)
    return stats
