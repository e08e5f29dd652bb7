"""The run's records as tables a notebook user works with: the dataset (one row per
question) and the answers (one row per system and question, joined with the verdict,
the reference-free scores and where the answer went wrong), each with ``.to_pandas()``.

They are read from the run's files (JSON Lines, the source of truth a user may edit), so
that what the command line wrote and what Python wrote read the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragaudit.analysis.metrics import analyze as analyze_examples
from ragaudit.analysis.metrics import by_system_and_variant, source_of
from ragaudit.errors import UserError
from ragaudit.judge.retrieval import DEFAULT_RULE, RetrievalRule
from ragaudit.records.io import read_jsonl
from ragaudit.records.models import FreeScoreRecord, Judgement, QueryRecord, ResponseRecord
from ragaudit.rundir import RunDir
from ragaudit.steps.analyze import load_examples
from ragaudit.steps.inputs import check_fresh, read_run_records

if TYPE_CHECKING:
    import pandas as pd


def _frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(rows, columns=columns)


DATASET_COLUMNS = [
    "query_id",
    "group_id",
    "variant",
    "query",
    "reference",
    "source",
    "template_id",
    "label",
    "gold_ids",
]


class Dataset:
    """The questions of a run (dataset.jsonl), one :class:`QueryRecord` each, read when
    first needed; ``stats``: what the step that wrote it reported (counts, warnings)."""

    def __init__(self, path: Path, stats: Any = None) -> None:
        self.path = path
        self.stats = stats
        self._queries: list[QueryRecord] | None = None

    @classmethod
    def read(cls, run: RunDir, stats: Any = None) -> Dataset:
        """The run's dataset as it is on disk."""
        if not run.dataset.exists():
            raise UserError(f"no dataset at {run.dataset}: generate one first")
        return cls(run.dataset, stats)

    @property
    def queries(self) -> list[QueryRecord]:
        """Every question, in the file's order."""
        if self._queries is None:
            self._queries = list(read_jsonl(self.path, QueryRecord))
        return self._queries

    def __repr__(self) -> str:
        return f"Dataset({str(self.path)!r})"

    def __len__(self) -> int:
        return len(self.queries)

    def __iter__(self) -> Iterator[QueryRecord]:
        return iter(self.queries)

    def to_pandas(self) -> pd.DataFrame:
        """One row per question: query_id, group_id, variant, query, reference (its display
        string), source, template_id, label, gold_ids."""
        rows = [
            {
                "query_id": q.query_id,
                "group_id": q.group_id,
                "variant": q.variant,
                "query": q.query,
                "reference": q.reference.display,
                "source": q.source,
                "template_id": q.template_id,
                "label": q.label,
                "gold_ids": q.gold_ids,
            }
            for q in self.queries
        ]
        return _frame(rows, DATASET_COLUMNS)


@dataclass(frozen=True)
class AnswerRow:
    """One answer of one system to one question, with everything known about it."""

    system: str
    query_id: str
    query: str
    variant: str
    group_id: str
    source: str
    reference: str
    answer: str | None
    error: str | None
    correct: bool | None  # None: not judged yet, or the judge failed
    method: str | None  # how the verdict was reached (match:<rule>, llm, ...)
    retrieval_correct: bool | None
    retrieved_ids: list[str]
    gold_ids: list[str] | None
    where: str | None  # correct, knowledge base, retriever, language model, system error;
    # None unjudged
    rationale: str | None
    scores: dict[str, float | None] = field(default_factory=dict)


ANSWER_COLUMNS = [f for f in AnswerRow.__dataclass_fields__ if f != "scores"]


@dataclass(frozen=True)
class Answers:
    """Every answer of the run: dataset x responses x judgements x reference-free scores."""

    rows: list[AnswerRow]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[AnswerRow]:
        return iter(self.rows)

    def to_pandas(self) -> pd.DataFrame:
        """One row per answer: system, query_id, query, variant, group_id, source,
        reference, answer, error, correct, method, retrieval_correct, retrieved_ids,
        gold_ids, where (the module the answer went wrong in, or ``correct``), rationale,
        and one column per reference-free metric scored."""
        metrics = sorted({m for r in self.rows for m in r.scores})
        rows = []
        for r in self.rows:
            row = asdict(r)
            scores = row.pop("scores")
            row.update({m: scores.get(m) for m in metrics})
            rows.append(row)
        return _frame(rows, ANSWER_COLUMNS + metrics)


def read_answers(run: RunDir, rule: RetrievalRule = DEFAULT_RULE) -> Answers:
    """The run's answers, joined by query id; where each went wrong as ``analyze`` says
    (its group's tag for the system and wording, the gold documents when known). A second
    response, judgement or score of one (system, query), in its file or in another, is a
    one-line error naming both files, as in every reader of the run's records."""
    if not run.dataset.exists():
        raise UserError(f"no dataset at {run.dataset}: generate one first")
    queries = {q.query_id: q for q in read_jsonl(run.dataset, QueryRecord)}
    # read_run_records refuses a second record of a (system, query), in its file or another:
    # a row is never doubled, nor a verdict or score silently taken from one of two files.
    judged: dict[tuple[str, str], Judgement] = {}
    for _, judgements in read_run_records(run, Judgement):
        for judgement in judgements:
            judged[judgement.system, judgement.query_id] = judgement
    scores: dict[tuple[str, str], dict[str, float | None]] = {}
    for _, records in read_run_records(run, FreeScoreRecord):
        for s in records:
            scores[s.system, s.query_id] = {
                name: metric.score for name, metric in s.metrics.items() if metric is not None
            }
    where: dict[tuple[str, str], str] = {}
    if judged:
        examples = load_examples(run, [], rule, outcome="answer")
        tags = analyze_examples(examples).tags
        # The examples with the retrieval verdicts analyze gives them, so that "where"
        # says what summary.json's blame says.
        prepared = by_system_and_variant(examples)
        for variants in prepared.values():
            for items in variants.values():
                for ex in items:
                    tag = tags.get(ex.system, {}).get(ex.variant, {}).get(ex.group_id)
                    if tag is not None:
                        where[ex.system, ex.query_id] = source_of(ex, tag)[0]
    rows = []
    for _, responses in read_run_records(run, ResponseRecord):
        for r in responses:
            q = queries.get(r.query_id)
            if q is None:
                continue  # a response to a question no longer in the dataset
            j = judged.get((r.system, r.query_id))
            if j is not None:
                check_fresh(run, [j], {r.query_id: r.digest})  # never an old verdict
            rows.append(
                AnswerRow(
                    system=r.system,
                    query_id=q.query_id,
                    query=q.query,
                    variant=q.variant,
                    group_id=q.group_id,
                    source=q.source,
                    reference=q.reference.display,
                    answer=r.response,
                    error=r.error,
                    correct=j.correct if j else None,
                    method=j.method if j else None,
                    retrieval_correct=j.retrieval_correct if j else None,
                    retrieved_ids=r.retrieved_ids,
                    gold_ids=q.gold_ids,
                    where=where.get((r.system, r.query_id)),
                    rationale=j.rationale if j else None,
                    scores=scores.get((r.system, r.query_id), {}),
                )
            )
    return Answers(rows)
