"""The run's records as tables a notebook user works with: the dataset (one row per
question) and the answers (one row per system and question, and per repeat with ``run
--repeat N``, joined with the verdict, the reference-free scores and where the answer went
wrong), each with ``.to_pandas()``.

They are read from the run's files (JSON Lines, the source of truth a user may edit; the
answers through the run's answer table, answers.parquet, rebuilt whenever they changed),
so that what the command line wrote and what Python wrote read the same.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragaudit.errors import UserError
from ragaudit.frames import frame
from ragaudit.generate.dataset import TableStats, read_table_stats
from ragaudit.records.models import QueryRecord
from ragaudit.rundir import RunDir
from ragaudit.store.answers import read_answer_table
from ragaudit.store.files import current_dataset_stats
from ragaudit.store.records import read_queries

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


def _frame(rows: list[dict[str, Any]] | dict[str, list[Any]], columns: list[str]) -> pd.DataFrame:
    return frame(rows, columns)


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


PER_TABLE_COLUMNS = [
    "table",
    "rows",
    "attributes",
    "attributes_asked",
    "sql_templates",
    "text_templates",
    "semantic_groups",
    "text_queries",
    "why",
]


@dataclass(frozen=True)
class PerTable:
    """The dataset per table of the database (GRAMMAR v1's Table 4): for each table its
    rows and attributes, the templates that read it, their wordings, semantic groups and
    questions, and why no question reads it (``why``) where none does. A template that
    reads two tables counts for both."""

    tables: list[TableStats]

    def __iter__(self) -> Iterator[TableStats]:
        return iter(self.tables)

    def __len__(self) -> int:
        return len(self.tables)

    def __getitem__(self, name: str) -> TableStats:
        """The table called ``name`` (case-insensitive)."""
        found = [t for t in self.tables if t.table.lower() == name.lower()]
        if not found:
            raise KeyError(name)
        return found[0]

    @property
    def uncovered(self) -> list[TableStats]:
        """The tables no question of the dataset reads."""
        return [t for t in self.tables if t.why is not None]

    def to_pandas(self) -> pd.DataFrame:
        """One row per table: its rows, attributes, the attributes asked (a list),
        templates, wordings and questions (all styles together), groups, and why none."""
        rows = [
            {
                **t.model_dump(),
                "text_templates": sum(t.text_templates.values()),
                "text_queries": t.queries,
            }
            for t in self.tables
        ]
        return _frame(rows, PER_TABLE_COLUMNS)


class Dataset:
    """The questions of a run (dataset.jsonl), one :class:`QueryRecord` each, read when
    first needed; ``stats``: what the step that wrote it reported (counts, warnings);
    ``tables``: the dataset per table of the database."""

    def __init__(self, path: Path, stats: Any = None, stats_path: Path | None = None) -> None:
        self.path = path
        self.stats = stats
        self.stats_path = stats_path
        self._queries: list[QueryRecord] | None = None

    @classmethod
    def read(cls, run: RunDir, stats: Any = None) -> Dataset:
        """The run's dataset as it is on disk."""
        if not run.dataset.exists():
            raise UserError(f"no dataset at {run.dataset}: generate one first")
        # The counts of the dataset as it is: recounted where it changed since they were.
        counted = run.dataset_stats if stats is not None else current_dataset_stats(run)
        return cls(run.dataset, stats, counted)

    @property
    def tables(self) -> PerTable:
        """Which tables of the database the questions read, and which they do not
        (GRAMMAR v1's Table 4): from the step that just wrote the dataset, else from its
        dataset.stats.json. A file written before ragaudit kept the view is a
        :class:`UserError` that says to generate again."""
        tables = getattr(self.stats, "tables", None)
        if not tables and self.stats_path is not None and self.stats_path.is_file():
            tables = read_table_stats(self.stats_path)
        if not tables:
            raise UserError(
                f"{self.stats_path or self.path}: no per-table counts (a dataset generated "
                "before they were kept, or questions from documents or an import only): "
                "run generate again"
            )
        return PerTable(list(tables))

    @property
    def queries(self) -> list[QueryRecord]:
        """Every question, in the file's order."""
        if self._queries is None:
            self._queries = list(read_queries(self.path))
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
    repeat: int  # which asking of the query (run --repeat N): 0 for the first
    query: str
    variant: str
    group_id: str
    source: str
    label: str | None  # the question type (document-grounded queries)
    reference: str
    answer: str | None
    error: str | None
    correct: bool | None  # None: not judged yet, or the judge failed
    method: str | None  # how the verdict was reached (match:<rule>, llm, ...)
    retrieval_correct: bool | None
    retrieved_ids: list[str]
    gold_ids: list[str] | None
    gold_kind: str | None  # what the gold ids mean: states, entity
    answerable: bool  # False: the question has no answer, so a refusal is right
    where: str | None  # correct, knowledge base, retriever, language model, system error;
    # None unjudged
    rationale: str | None
    scores: dict[str, float | None] = field(default_factory=dict)


ANSWER_COLUMNS = [f for f in AnswerRow.__dataclass_fields__ if f != "scores"]


class Answers:
    """Every answer of the run: dataset x responses x judgements x reference-free scores,
    one :class:`AnswerRow` each, as the run's answer table (answers.parquet) holds them."""

    def __init__(self, table: pa.Table) -> None:
        self._table = table
        self._rows: list[AnswerRow] | None = None

    @property
    def rows(self) -> list[AnswerRow]:
        """Every answer, in the order of the responses files (by name) and their lines,
        then the repeats' (``run --repeat N``) in the order of theirs."""
        if self._rows is None:
            rows = self._table.to_pylist()
            for row in rows:
                row["scores"] = dict(row["scores"])  # a Parquet map: (metric, score) pairs
            self._rows = [AnswerRow(**row) for row in rows]
        return self._rows

    def __repr__(self) -> str:
        return f"Answers({len(self)} rows)"

    def __len__(self) -> int:
        return int(self._table.num_rows)

    def __iter__(self) -> Iterator[AnswerRow]:
        return iter(self.rows)

    def to_arrow(self) -> pa.Table:
        """The table as Arrow, as answers.parquet holds it: the scores as one map column
        (reference-free metric -> score)."""
        return self._table

    def to_pandas(self) -> pd.DataFrame:
        """One row per answer: system, query_id, repeat (which asking of the query, 0
        without repeats), query, variant, group_id, source, label, reference, answer,
        error, correct, method, retrieval_correct, retrieved_ids, gold_ids, gold_kind,
        answerable, where (the module the answer went wrong in, or ``correct``), rationale,
        and one column per reference-free metric scored."""

        table = self._table
        if not table.num_rows:
            return _frame([], ANSWER_COLUMNS)
        # Column by column from the Arrow table: the values (plain lists, None for null)
        # and so the dtypes pandas infers are those of one dict per row.
        data: dict[str, list[Any]] = {
            name: table.column(name).to_pylist() for name in ANSWER_COLUMNS
        }
        scores = [dict(pairs) for pairs in table.column("scores").to_pylist()]
        metrics = sorted({m for row in scores for m in row})
        for m in metrics:
            data[m] = [row.get(m) for row in scores]
        return _frame(data, ANSWER_COLUMNS + metrics)


def read_answers(run: RunDir) -> Answers:
    """The run's answers, joined by query id; where each went wrong as ``analyze`` says
    (its group's tag for the system and wording, the gold documents when known). Read from
    the run's answer table (answers.parquet), which is built again from the JSON Lines
    whenever they changed since it was written (:mod:`ragaudit.store.answers`). A second
    response, judgement or score of one (system, query), in its file or in another, is a
    one-line error naming both files, as in every reader of the run's records. The
    retrieval verdicts are the judge's, under the retrieval rule it judged by. While
    another process writes the run (``ragaudit run`` still answering), the answers are
    what it has written so far: a warning says so, and the table is not stored."""
    if not run.dataset.exists():
        raise UserError(f"no dataset at {run.dataset}: generate one first")
    holder = run.writer_elsewhere()
    if holder is not None:
        warnings.warn(
            f"{run.root} is being written by {holder}: these answers are those written so far",
            stacklevel=3,
        )
    return Answers(read_answer_table(run, write=holder is None))
