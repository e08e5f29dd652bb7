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
import math
import numbers
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import cached_property
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
from ragaudit.records.values import (
    answer_text,
    document_id,
    missing,
    passage_text,
    row_name,
    unicode_text,
)
from ragaudit.rundir import RunDir
from ragaudit.steps.analyze import run_analysis

if TYPE_CHECKING:
    import pandas as pd

    from ragaudit.llm.client import Backend, LLMClient

ROW_COLUMNS = [
    "query_id",
    "system",
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
    over the judged rows (``summary``: None when no row had a reference; per system by
    name, as ``analyze`` gives them).

    Rows of several systems (their ``system`` column) are told apart: :attr:`systems`
    holds each system's own evaluation, and :attr:`accuracy`, one figure, is refused over
    more than one, since it would mix their answers.

    Examples:
        >>> result = evaluate([
        ...     {"question": "Capital of France?", "answer": "Paris.", "reference": "Paris",
        ...      "system": "a"},
        ...     {"question": "Capital of France?", "answer": "Lyon.", "reference": "Paris",
        ...      "system": "b"}])
        >>> list(result.systems), result.systems["a"].accuracy, result.systems["b"].accuracy
        (['a', 'b'], 1.0, 0.0)
        >>> result.accuracy
        Traceback (most recent call last):
        ...
        ragaudit.errors.UserError: evaluate: the rows hold 2 systems (a, b): ...
    """

    queries: list[QueryRecord]
    responses: list[ResponseRecord]
    judgements: list[Judgement | None]
    summary: Summary | None
    # How the verdicts were reached (match:<rule>, llm, unmatched), counted over every
    # row, whichever system: counts add up, so they may be pooled; :attr:`systems` has
    # each system's own.
    methods: dict[str, int]
    # The neutral file the figures were computed from, in ``out`` (None without ``out``:
    # the temporary one is gone with the call).
    neutral: Path | None
    scores: list[FreeScoreRecord | None] = field(default_factory=list)
    metrics: tuple[FreeMetric, ...] = ()  # the reference-free metrics scored
    # How the figures were computed, so that one system's can be computed alike: whether
    # each row said what it retrieved, the retrieval rule and the seed.
    retrieval_known: list[bool] = field(default_factory=list, repr=False)
    retrieval_rule: RetrievalRule = field(default=DEFAULT_RULE, repr=False)
    seed: int = field(default=0, repr=False)

    @cached_property
    def systems(self) -> Mapping[str, Evaluation]:
        """Each system's own evaluation, by name, in the order the rows first name them:
        its rows, verdicts, scores and ``methods``, its :attr:`accuracy`, and its
        ``summary``, computed from its rows alone as ``analyze --neutral`` computes it
        (when first asked for; ``neutral`` is None, the file is not kept). Rows without a
        ``system`` are the ``system`` that :func:`evaluate` was given."""
        return _BySystem(self)

    @property
    def accuracy(self) -> float | None:
        """Correct verdicts over decided ones (None when none was decided). Over the rows
        of one system only: rows of several are a :class:`~ragaudit.errors.UserError`
        (``result.systems[name].accuracy`` gives each)."""
        names = _names(self.responses)
        if len(names) > 1:
            shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
            raise UserError(
                f"evaluate: the rows hold {len(names)} systems ({shown}): one accuracy over "
                "them all would mix their answers; use result.systems"
                f"[{names[0]!r}].accuracy, each system's own"
            )
        decided = [j.correct for j in self.judgements if j is not None and j.correct is not None]
        return sum(decided) / len(decided) if decided else None

    def to_pandas(self) -> pd.DataFrame:
        """One row per input row: query_id, system, group_id, variant, question,
        reference, answer, correct, method, retrieval_correct, rationale, and a column per
        reference-free metric scored (its score; null where it is undefined, its reason in
        :attr:`scores`). A row without a reference has no reference and no verdict."""

        scores = self.scores or [None] * len(self.queries)
        rows = []
        for q, r, j, sc in zip(self.queries, self.responses, self.judgements, scores, strict=True):
            row: dict[str, Any] = {
                "query_id": q.query_id,
                "system": r.system,
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

    def _of_system(self, name: str) -> Evaluation:
        """The evaluation of ``name``'s rows alone (this one, when they are all its)."""
        names = _names(self.responses)
        if name not in names:
            raise KeyError(name)
        if names == [name]:
            return self
        rows = [i for i, r in enumerate(self.responses) if r.system == name]
        scores = self.scores or [None] * len(self.queries)
        known = self.retrieval_known or [True] * len(self.queries)
        queries = [self.queries[i] for i in rows]
        responses = [self.responses[i] for i in rows]
        judgements = [self.judgements[i] for i in rows]
        retrieval_known = [known[i] for i in rows]
        judged = [i for i, j in enumerate(judgements) if j is not None]
        summary = _analyzed(
            None,
            queries,
            responses,
            judgements,
            retrieval_known,
            judged,
            self.retrieval_rule,
            self.seed,
            name,
        )
        return Evaluation(
            queries,
            responses,
            judgements,
            summary,
            dict(Counter(j.method for j in judgements if j is not None)),
            None,
            scores=[scores[i] for i in rows],
            metrics=self.metrics,
            retrieval_known=retrieval_known,
            retrieval_rule=self.retrieval_rule,
            seed=self.seed,
        )


class _BySystem(Mapping[str, Evaluation]):
    """:attr:`Evaluation.systems`: each system's evaluation, made when first looked up
    (its figures are an analysis of their own), then kept."""

    def __init__(self, evaluation: Evaluation) -> None:
        self._evaluation = evaluation
        self._names = _names(evaluation.responses)
        self._made: dict[str, Evaluation] = {}

    def __getitem__(self, name: str) -> Evaluation:
        if name not in self._made:
            if name not in self._names:
                raise KeyError(f"{name!r}: the rows hold the systems {', '.join(self._names)}")
            self._made[name] = self._evaluation._of_system(name)
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return f"<systems {', '.join(self._names)}>"


def _names(responses: list[ResponseRecord]) -> list[str]:
    """The systems of the rows, in the order they first appear."""
    return list(dict.fromkeys(r.system for r in responses))


def _records(
    rows: Iterable[Mapping[str, Any]], system: str
) -> tuple[list[QueryRecord], list[ResponseRecord], list[bool], list[bool]]:
    """The rows as queries and responses, whether each row says what was retrieved (an
    empty list is a retrieval that found nothing; no list, a retrieval not known), and
    whether it has a reference (a row without one is not judged). Each field of a row has
    one rule, and a value that breaks it is a :class:`UserError` naming the row and the
    field: text is Unicode text (:func:`_text`), an id follows the one id rule
    (:func:`~ragaudit.records.values.document_id`), and a name (the group, system, variant,
    query id) the name rule (:func:`~ragaudit.records.values.row_name`), where a name not
    given takes the default: the ``system`` given, ``logged``, a query id made from the
    question, the row's own group. A query id is one per system: rows of several systems
    may share one, for the same question. The rows are those of :func:`_rows`, whose
    missing values (None, NaN) are None, whichever door they came in by."""
    queries, responses, known, referenced = [], [], [], []
    seen: dict[str, QueryRecord] = {}  # the question of each query id, by its first row
    answered: set[tuple[str, str]] = set()  # (system, query id)
    for i, row in enumerate(rows, 1):
        where = f"row {i}"
        question = row.get("question", row.get("query"))
        if not isinstance(question, str) or not question.strip():
            raise UserError(f"{where}: question: expected a non-empty string")
        question = _text(question, where, "question") or question
        has_reference = row.get("reference") is not None
        referenced.append(has_reference)
        values = _values(row["reference"], where) if has_reference else []
        if "answer" not in row and "response" not in row:
            raise UserError(f"{where}: answer: missing (the system's answer; null for none)")
        try:  # the answer rule every system's answer is read by
            answer = answer_text(row["answer"] if "answer" in row else row["response"])
        except ValueError as exc:
            raise UserError(f"{where}: answer: {exc}") from None
        answer = _text(answer, where, "answer")
        error = _text(row.get("error"), where, "error")
        who = _name(row.get("system"), where, "system") or system
        given_id = _name(row.get("query_id"), where, "query_id")
        query_id = given_id if given_id is not None else stable_id("evaluate", i, question)
        if (who, query_id) in answered:
            raise UserError(f"{where}: query_id {query_id!r} appears twice for system {who!r}")
        answered.add((who, query_id))
        ids = _ids(row.get("retrieved_ids"), where, "retrieved_ids")
        contexts = _texts(row.get("contexts"), where)
        known.append(ids is not None or contexts is not None)
        retrieved = [
            RetrievedItem(id=doc, text=text)
            for doc, text in zip(
                ids if ids is not None else [f"context-{k}" for k in range(len(contexts or []))],
                contexts if contexts is not None else [None] * len(ids or []),
                strict=False,
            )
        ]
        gold = _ids(row.get("gold_ids"), where, "gold_ids")
        group = _name(row.get("group"), where, "group")
        if group is None:
            group = _name(row.get("group_id"), where, "group_id")
        variant = _name(row.get("variant"), where, "variant")
        query = QueryRecord(
            query_id=query_id,
            group_id=group if group is not None else query_id,  # each row its own group
            variant=variant if variant is not None else "logged",
            query=question,
            reference=Reference.from_values(values),
            gold_ids=gold,
            gold_kind="states" if gold is not None else None,
            source="imported",
        )
        first = seen.setdefault(query_id, query)
        if first != query:
            # Another system's row of this query id: the same query, or the systems'
            # figures would be paired on different questions.
            raise UserError(
                f"{where}: query_id {query_id!r} is given to another question (or another "
                "reference, group, variant or gold ids) by an earlier row: one query id, "
                "one query, whichever system answered it"
            )
        queries.append(query)
        responses.append(
            ResponseRecord(
                query_id=query_id,
                system=who,
                response=answer,
                retrieved=retrieved,
                error=error,
            )
        )
    if not queries:
        raise UserError("evaluate: no rows")
    return queries, responses, known, referenced


def _text(value: Any, where: str, field: str) -> str | None:
    """A text field of a row (question, answer, error, a context, a reference value):
    None when not given; a string, which must be Unicode text. A lone UTF-16 surrogate
    (``"\\ud800"``, half of a character) can be held by no file, hash or terminal, so it
    is refused here, naming the row and the field, rather than failing wherever the text
    goes next; a pair of surrogates is the character it encodes, and is read as it."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise UserError(f"{where}: {field}: expected a string or null, not {type(value).__name__}")
    text, lone = unicode_text(value)
    if lone:
        raise UserError(
            f"{where}: {field}: not valid Unicode text (a lone surrogate such as \\ud800 is "
            "half of a character, e.g. an emoji cut in two): fix or remove it"
        )
    return text


def _id(value: Any, where: str, field: str) -> str:
    """An id of a row (a retrieved or gold id, the query id), by the one id rule."""
    try:
        doc = document_id(value)
    except ValueError as exc:
        raise UserError(f"{where}: {field}: {exc}") from None
    text = _text(doc, where, field)
    assert text is not None  # an id is a string
    return text


def _name(value: Any, where: str, field: str) -> str | None:
    """A name of a row (its group, system, variant, query id), by the one name rule: None
    when not given (None, NaN, blank text), so that the caller's default applies."""
    try:
        name = row_name(value)
    except ValueError as exc:
        raise UserError(f"{where}: {field}: {exc}") from None
    return _text(name, where, field) if name is not None else None


def _values(reference: Any, where: str) -> list[Any]:
    """The reference's values: a value or a list of them, every one required (a set);
    dates and times as ISO text; ``[]`` means no answer exists (a refusal is right). A
    number is finite: infinity matches no answer, and a NaN is a missing value (a row
    without a reference gives none, or None or NaN, and is not judged)."""
    values = list(reference) if isinstance(reference, list | tuple) else [reference]
    out: list[Any] = []
    for value in values:
        if hasattr(value, "isoformat"):  # datetime, date, pandas' Timestamp
            midnight = hasattr(value, "hour") and not (value.hour or value.minute or value.second)
            value = value.date().isoformat() if midnight else value.isoformat()
        elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
            value = int(value)  # numpy's integers too (a DataFrame's cells)
        elif isinstance(value, float) and not math.isfinite(value):
            raise UserError(
                f"{where}: reference: {value!r} is not a finite number (a row without a "
                "reference leaves it out, or gives None; [] means no answer exists)"
            )
        if not isinstance(value, str | int | float | bool):
            raise UserError(
                f"{where}: reference: expected text, a number or a date (or a list of them), "
                f"not {type(value).__name__}"
            )
        if isinstance(value, str):
            value = _text(value, where, "reference") or value
            if not value.strip():
                raise UserError(f"{where}: reference: empty text (use [] for no answer)")
        out.append(value)
    return out


def _listed(value: Any, where: str, field: str) -> list[Any] | None:
    """A list of ids or texts: None when not given; one string is refused, not split into
    its characters."""
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise UserError(
            f"{where}: {field}: expected a list of strings, not {type(value).__name__} "
            f"(one id is [{value!r:.60}])"
        )
    return list(value)


def _ids(value: Any, where: str, field: str) -> list[str] | None:
    """A list of ids (retrieved_ids, gold_ids), each by the one id rule."""
    listed = _listed(value, where, field)
    if listed is None:
        return None
    return [_id(v, where, f"{field}[{k}]") for k, v in enumerate(listed)]


def _texts(value: Any, where: str) -> list[str | None] | None:
    """``contexts``: the retrieved passages' texts, each by the one text rule
    (:func:`~ragaudit.records.values.passage_text`: a string, or null where the text is
    not known), and Unicode text."""
    listed = _listed(value, where, "contexts")
    if listed is None:
        return None
    out: list[str | None] = []
    for k, v in enumerate(listed):
        try:
            text = passage_text(v)
        except ValueError as exc:
            raise UserError(f"{where}: contexts[{k}]: {exc}") from None
        out.append(_text(text, where, f"contexts[{k}]"))
    return out


def _rows(rows: Any) -> list[dict[str, Any]]:
    """The rows as dicts whose missing values (:func:`~ragaudit.records.values.missing`:
    None, NaN, pandas' NA) are None: a DataFrame's, and a list of dicts alike, since
    ``df.to_dict("records")`` hands on the NaN of each empty cell, and a row read either
    way is then the same row (a NaN group is no group, as an absent one)."""
    if isinstance(rows, Mapping):
        raise UserError("evaluate: rows: one dict is one row: give a list of them")
    to_dict = getattr(rows, "to_dict", None)
    records = to_dict(orient="records") if callable(to_dict) else list(rows)  # a DataFrame
    out = []
    for i, row in enumerate(records, 1):
        if not isinstance(row, Mapping):
            raise UserError(
                f"row {i}: expected a dict of fields (question, answer, ...), not "
                f"{type(row).__name__}"
            )
        out.append({k: (None if missing(v) else v) for k, v in row.items()})
    return out


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

    Each field has one rule, and a row that breaks one is a :class:`UserError` naming the
    row and the field: text (the question, the answer, the reference's text, each
    context) is Unicode text, without half a character (a lone surrogate); an id (each
    of ``retrieved_ids`` and ``gold_ids``) is a non-empty string or an integer, never None,
    a float or a list; a name (``group``, ``system``, ``variant``, ``query_id``) is one
    too, or not given (None, NaN, blank text), which is the same as the key left out. A
    NaN anywhere in a row is a missing value, as in a DataFrame's cell: a row whose
    ``reference`` is NaN has no reference. Rows of several systems (``system``) are
    evaluated each on its own (:attr:`Evaluation.systems`), and may share query ids.

    Examples:
        >>> result = evaluate([{"question": "Capital of France?", "answer": "Paris.",
        ...                     "reference": "Paris"}])
        >>> result.judgements[0].correct, result.judgements[0].method
        (True, 'match:exact')
    """
    check_rule(retrieval_rule)
    if not isinstance(system, str) or not system.strip():
        raise UserError(f"evaluate: system={system!r}: expected a non-empty string")
    system = _text(system, "evaluate", "system=") or system
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
    summary = _analyzed(
        None if out is None else Path(out),
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
        retrieval_known=retrieval_known,
        retrieval_rule=retrieval_rule,
        seed=seed,
    )


def _analyzed(
    out: Path | None,
    queries: list[QueryRecord],
    responses: list[ResponseRecord],
    judgements: list[Judgement | None],
    retrieval_known: list[bool],
    judged: list[int],
    retrieval_rule: RetrievalRule,
    seed: int,
    system: str,
) -> Summary | None:
    """The figures of the judged rows (None when none is), computed as ``analyze
    --neutral`` computes them from the neutral file written in ``out``: one analysis,
    whichever door it came in by. Without ``out`` the files are only the way to the
    figures: they go with the call, so that a notebook calling evaluate in a loop leaves
    nothing behind."""
    if not judged:
        return None
    with (
        nullcontext(str(out))
        if out is not None
        else tempfile.TemporaryDirectory(prefix="ragaudit-evaluate-")
    ) as where:
        return _analyze_rows(
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


def _analyze_rows(
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
    """:func:`_analyzed` in ``folder``: the neutral file written there, then analyzed."""
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
    # By system and query: rows of several systems may share a query id.
    by_row = {(record.system, record.query_id): record for record in records}
    return [
        by_row.get((r.system, q.query_id)) if wanted else None
        for q, r, wanted in zip(queries, responses, scored, strict=True)
    ]


aevaluate = twin(evaluate)
