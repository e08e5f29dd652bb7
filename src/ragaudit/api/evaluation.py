"""``ra.evaluate``: the logs of any system (question, answer, reference, ...) judged and
analyzed, with no project and no run: what Ragas's ``evaluate(...)`` is to a dataset.

Each row with a reference is judged as ``ragaudit judge`` judges a response
(deterministic matchers first, then the LLM judge when one is given), and the verdicts are
analyzed exactly as ``ragaudit analyze --neutral`` analyzes a neutral file: the rows are
written as one (in a folder of the caller's, or a temporary one) and read back by the same
code. Rows without a reference (production logs) are scored with the reference-free
metrics instead, as ``ragaudit judge --reference-free`` scores a run's answers.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragaudit.aio import new_event_loop
from ragaudit.analysis.summary import Summary
from ragaudit.api.calls import step, twin
from ragaudit.errors import UserError
from ragaudit.frames import frame
from ragaudit.judge.cascade import JudgeStats, judge_many
from ragaudit.judge.retrieval import DEFAULT_RULE, RetrievalRule, check_rule
from ragaudit.llm.options import LLMConfig
from ragaudit.records.io import write_jsonl_atomic
from ragaudit.records.models import (
    FREE_METRICS,
    FreeMetric,
    FreeScoreRecord,
    Judgement,
    QueryRecord,
    Reference,
    ResponseRecord,
    RetrievedItem,
    stable_id,
)
from ragaudit.rundir import RunDir
from ragaudit.steps.analyze import run_analysis

if TYPE_CHECKING:
    import pandas as pd

    from ragaudit.llm.client import Backend, LLMClient

ROW_COLUMNS = [
    "query_id",
    "group_id",
    "variant",
    "question",
    "reference",
    "answer",
    "correct",
    "method",
    "retrieval_correct",
    "rationale",
]

# The reference-free metrics a row without a reference is scored with, unless asked
# otherwise (self-consistency needs answers drawn again, which logs do not have).
DEFAULT_FREE_METRICS: tuple[FreeMetric, ...] = (
    "faithfulness",
    "answer_relevancy",
    "context_precision",
)


@dataclass(frozen=True)
class Evaluation:
    """What :func:`evaluate` found: per row its verdict (None for a row without a
    reference) and its reference-free scores (None where none was asked), and the figures
    over the judged rows (``summary``: None when no row had a reference)."""

    queries: list[QueryRecord]
    responses: list[ResponseRecord]
    judgements: list[Judgement | None]
    summary: Summary | None
    methods: dict[str, int]  # how the verdicts were reached (match:<rule>, llm, unmatched)
    # The neutral file the figures were computed from, in ``out`` (None without ``out``:
    # the temporary one is gone with the call).
    neutral: Path | None
    scores: list[FreeScoreRecord | None] = field(default_factory=list)
    metrics: tuple[FreeMetric, ...] = ()  # the reference-free metrics scored

    @property
    def accuracy(self) -> float | None:
        """Correct verdicts over decided ones (None when none was decided)."""
        decided = [j.correct for j in self.judgements if j is not None and j.correct is not None]
        return sum(decided) / len(decided) if decided else None

    def to_pandas(self) -> pd.DataFrame:
        """One row per input row: query_id, group_id, variant, question, reference,
        answer, correct, method, retrieval_correct, rationale, and a column per
        reference-free metric scored (its score; null where it is undefined, its reason in
        :attr:`scores`). A row without a reference has no reference and no verdict."""

        scores = self.scores or [None] * len(self.queries)
        rows = []
        for q, r, j, sc in zip(self.queries, self.responses, self.judgements, scores, strict=True):
            row: dict[str, Any] = {
                "query_id": q.query_id,
                "group_id": q.group_id,
                "variant": q.variant,
                "question": q.query,
                "reference": q.reference.display if j is not None else None,
                "answer": r.response,
                "correct": j.correct if j is not None else None,
                "method": j.method if j is not None else None,
                "retrieval_correct": j.retrieval_correct if j is not None else None,
                "rationale": j.rationale if j is not None else None,
            }
            for metric in self.metrics:
                scored = sc.metrics.get(metric) if sc is not None else None
                row[metric] = scored.score if scored is not None else None
            rows.append(row)
        # Nullable floats: an undefined score stays missing (<NA>), never becomes NaN.
        return frame(rows, ROW_COLUMNS + list(self.metrics), floats=self.metrics)


def _records(
    rows: Iterable[Mapping[str, Any]], system: str
) -> tuple[list[QueryRecord], list[ResponseRecord], list[bool], list[bool]]:
    """The rows as queries and responses, whether each row says what was retrieved (an
    empty list is a retrieval that found nothing; no list, a retrieval not known), and
    whether it has a reference (a row without one is not judged)."""
    queries, responses, known, referenced = [], [], [], []
    seen: set[str] = set()
    for i, row in enumerate(rows, 1):
        where = f"row {i}"
        question = row.get("question", row.get("query"))
        if not isinstance(question, str) or not question.strip():
            raise UserError(f"{where}: question: expected a non-empty string")
        has_reference = row.get("reference") is not None
        referenced.append(has_reference)
        values = _values(row["reference"], where) if has_reference else []
        if "answer" not in row and "response" not in row:
            raise UserError(f"{where}: answer: missing (the system's answer; null for none)")
        answer = row.get("answer", row.get("response"))
        if answer is not None and not isinstance(answer, str):
            raise UserError(f"{where}: answer: expected a string or null")
        given_id = row.get("query_id")
        query_id = str(given_id) if _present(given_id) else stable_id("evaluate", i, question)
        if query_id in seen:
            raise UserError(f"{where}: query_id {query_id!r} appears twice")
        seen.add(query_id)
        ids = _strings(row.get("retrieved_ids"), where, "retrieved_ids")
        contexts = _strings(row.get("contexts"), where, "contexts")
        known.append(ids is not None or contexts is not None)
        retrieved = [
            RetrievedItem(id=str(doc), text=text)
            for doc, text in zip(
                ids if ids is not None else [f"context-{k}" for k in range(len(contexts or []))],
                contexts if contexts is not None else [None] * len(ids or []),
                strict=False,
            )
        ]
        gold = _strings(row.get("gold_ids"), where, "gold_ids")
        group = row.get("group", row.get("group_id"))
        queries.append(
            QueryRecord(
                query_id=query_id,
                group_id=str(group) if _present(group) else query_id,
                variant=str(row["variant"]) if _present(row.get("variant")) else "logged",
                query=question,
                reference=Reference.from_values(values),
                gold_ids=[str(g) for g in gold] if gold is not None else None,
                gold_kind="states" if gold is not None else None,
                source="imported",
            )
        )
        responses.append(
            ResponseRecord(
                query_id=query_id,
                system=str(row.get("system") or system),
                response=answer,
                retrieved=retrieved,
                error=row.get("error"),
            )
        )
    if not queries:
        raise UserError("evaluate: no rows")
    return queries, responses, known, referenced


def _present(value: Any) -> bool:
    """Given: not None and not empty text (0 is a value: a group may be named 0)."""
    return value is not None and not (isinstance(value, str) and not value.strip())


def _values(reference: Any, where: str) -> list[Any]:
    """The reference's values: a value or a list of them, every one required (a set);
    dates and times as ISO text; ``[]`` means no answer exists (a refusal is right)."""
    values = list(reference) if isinstance(reference, list | tuple) else [reference]
    out: list[Any] = []
    for value in values:
        if hasattr(value, "isoformat"):  # datetime, date, pandas' Timestamp
            midnight = hasattr(value, "hour") and not (value.hour or value.minute or value.second)
            value = value.date().isoformat() if midnight else value.isoformat()
        if not isinstance(value, str | int | float | bool):
            raise UserError(
                f"{where}: reference: expected text, a number or a date (or a list of them), "
                f"not {type(value).__name__}"
            )
        if isinstance(value, str) and not value.strip():
            raise UserError(f"{where}: reference: empty text (use [] for no answer)")
        out.append(value)
    return out


def _strings(value: Any, where: str, field: str) -> list[str] | None:
    """A list of ids or texts: None when not given; one string is refused, not split into
    its characters."""
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise UserError(
            f"{where}: {field}: expected a list of strings, not {type(value).__name__} "
            f"(one id is [{value!r}])"
        )
    return [str(v) for v in value]


def _rows(rows: Any) -> list[Mapping[str, Any]]:
    to_dict = getattr(rows, "to_dict", None)
    if callable(to_dict):  # a pandas DataFrame
        records = to_dict(orient="records")
        return [{k: (None if _missing(v) else v) for k, v in r.items()} for r in records]
    return list(rows)


def _missing(value: Any) -> bool:
    try:
        return bool(value != value)  # NaN, pandas' missing value
    except (TypeError, ValueError):
        return False


@step
def evaluate(
    rows: Iterable[Mapping[str, Any]] | Any,
    *,
    llm: str | Backend | None = None,
    metrics: Sequence[FreeMetric] | None = None,
    system: str = "external",
    retrieval_rule: RetrievalRule = DEFAULT_RULE,
    seed: int = 0,
    out: str | Path | None = None,
) -> Evaluation:
    """Judge and analyze logged rows (dicts, or a DataFrame): ``question``, ``answer``,
    and optionally ``reference`` (a value or a list of values, the known answer),
    ``group`` (rows of one group are wordings of one question: robustness is computed
    over them), ``variant``, ``contexts``, ``retrieved_ids``, ``gold_ids``, ``system``,
    ``query_id``. A row with a reference is judged: the matchers first, then ``llm`` (a
    model name or a :class:`ragaudit.llm.Scripted`) for what they leave open; without it
    those answers are ``unmatched`` and count incorrect. A row without a reference
    (production logs) is scored with the reference-free ``metrics`` (faithfulness, answer
    relevancy and context precision by default, from its ``contexts``), which needs
    ``llm``; ``metrics`` given scores every row with them. ``out``: a folder for the
    neutral file and the figures (default: a temporary one).

    Examples:
        >>> result = evaluate([{"question": "Capital of France?", "answer": "Paris.",
        ...                     "reference": "Paris"}])
        >>> result.judgements[0].correct, result.judgements[0].method
        (True, 'match:exact')
    """
    check_rule(retrieval_rule)
    unknown = [m for m in metrics or () if m not in FREE_METRICS]
    if unknown:
        raise UserError(
            f"evaluate: unknown reference-free metric {unknown[0]!r}: use {', '.join(FREE_METRICS)}"
        )
    queries, responses, retrieval_known, referenced = _records(_rows(rows), system)
    wanted = tuple(metrics) if metrics is not None else ()
    if not all(referenced) and metrics is None:
        wanted = DEFAULT_FREE_METRICS
    scored = [bool(metrics) or not has for has in referenced] if wanted else []
    if wanted and llm is None:
        first = referenced.index(False) + 1 if not all(referenced) else 1
        raise UserError(
            f"row {first}: {'no reference: ' if not all(referenced) else ''}the reference-free "
            f"metrics ({', '.join(wanted)}) need an LLM: give llm= (a model name or "
            "ra.llm.Scripted), or a reference to judge the answer against"
        )
    client = None
    loop = new_event_loop()
    if llm is not None:
        from ragaudit.llm import make_llm

        if isinstance(llm, str):
            client = make_llm(LLMConfig(model=llm), loop=loop)
        else:
            spec = getattr(llm, "spec", None) or f"scripted:{llm.model}"
            client = make_llm(LLMConfig(model=spec), loop=loop, backend=llm)
    stats = JudgeStats()
    judged = [i for i, has in enumerate(referenced) if has]
    try:
        verdicts = loop.run_until_complete(
            judge_many(
                ((queries[i], responses[i]) for i in judged),
                client,
                rule=retrieval_rule,
                stats=stats,
            )
        )
        scores: list[FreeScoreRecord | None] = []
        if wanted:
            assert client is not None  # checked above: the metrics need an LLM
            scores = loop.run_until_complete(
                _free_scores(client, queries, responses, scored, retrieval_known, wanted)
            )
    finally:
        if client is not None:
            client.close()
        loop.close()
    judgements: list[Judgement | None] = [None] * len(queries)
    for i, verdict in zip(judged, verdicts, strict=True):
        judgements[i] = verdict
    summary = None
    if judged:
        # Without ``out`` the files are only the way to analyze's figures: they go with
        # the call, so that a notebook calling evaluate in a loop leaves nothing behind.
        with (
            nullcontext(str(out))
            if out is not None
            else tempfile.TemporaryDirectory(prefix="ragaudit-evaluate-")
        ) as where:
            summary = _analyzed(
                Path(where),
                queries,
                responses,
                judgements,
                retrieval_known,
                judged,
                retrieval_rule,
                seed,
                system,
            )
    return Evaluation(
        queries,
        responses,
        judgements,
        summary,
        dict(stats.methods),
        Path(out) / "neutral.jsonl" if summary is not None and out is not None else None,
        scores=scores or [None] * len(queries),
        metrics=wanted,
    )


def _analyzed(
    folder: Path,
    queries: list[QueryRecord],
    responses: list[ResponseRecord],
    judgements: list[Judgement | None],
    retrieval_known: list[bool],
    judged: list[int],
    retrieval_rule: RetrievalRule,
    seed: int,
    system: str,
) -> Summary:
    """The figures of the judged rows, computed as ``analyze --neutral`` computes them from
    the neutral file written in ``folder``: one analysis, whichever door it came in by."""
    folder.mkdir(parents=True, exist_ok=True)
    neutral = folder / "neutral.jsonl"
    lines = []
    for i in judged:
        q, r, j, known = queries[i], responses[i], judgements[i], retrieval_known[i]
        assert j is not None
        if j.correct is None:
            continue  # the judge failed: left out, as analyze leaves judge-failed answers out
        lines.append(
            {
                "query_id": q.query_id,
                "group_id": q.group_id,
                "variant": q.variant,
                "query": q.query,
                "reference": q.reference.display,
                "response": r.response,
                "retrieved_ids": r.retrieved_ids if known else None,
                "gold_ids": q.gold_ids,
                "gold_kind": q.gold_kind,
                "answerable": bool(q.reference.values),
                "correct": j.correct,
                "system": r.system,
                "error": r.error,
            }
        )
    write_jsonl_atomic(neutral, [json.loads(json.dumps(line)) for line in lines])
    return run_analysis(
        RunDir(folder), neutral=[neutral], rule=retrieval_rule, seed=seed, system=system
    ).summary


async def _free_scores(
    client: LLMClient,
    queries: list[QueryRecord],
    responses: list[ResponseRecord],
    scored: list[bool],
    retrieval_known: list[bool],
    metrics: tuple[FreeMetric, ...],
) -> list[FreeScoreRecord | None]:
    """The reference-free scores of the rows ``scored`` marks, by the same scorer as
    ``ragaudit judge --reference-free`` (None for the others)."""
    from ragaudit.judge.reference_free import FreeItem, FreeScorer, score_items
    from ragaudit.steps.reference_free import sentence_encoder

    def passages(r: ResponseRecord, known: bool) -> tuple[str, ...] | None:
        # None: the texts are not known (no contexts given), and the metrics that read
        # them say so; an empty tuple: nothing was retrieved.
        texts = [item.text for item in r.retrieved]
        if not known or any(text is None for text in texts):
            return None
        return tuple(text for text in texts if text is not None)

    items = [
        FreeItem(q.query_id, r.system, q.query, r.response, passages(r, known))
        for q, r, wanted, known in zip(queries, responses, scored, retrieval_known, strict=True)
        if wanted
    ]
    embed = sentence_encoder() if "answer_relevancy" in metrics else None
    records = await score_items(FreeScorer(client, embed=embed), items, list(metrics))
    by_id = {record.query_id: record for record in records}
    return [
        by_id.get(q.query_id) if wanted else None for q, wanted in zip(queries, scored, strict=True)
    ]


aevaluate = twin(evaluate)
