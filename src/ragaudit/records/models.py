"""QueryRecord, ResponseRecord and Judgement: the spine of every run (DESIGN.md, Records).

Each record carries ``schema_version`` so that files written by one version of ragaudit
can be recognised by the next. Unknown fields are rejected: a typo in a hand-written
record is an error, not a silently dropped value.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SCHEMA_VERSION = 1

# A value from a database cell or a binding: typed, JSON-representable.
Scalar = bool | int | float | str | None


def stable_id(*parts: Any, length: int = 16) -> str:
    """A short, stable hex id of ``parts`` (same inputs, same id, across runs and machines)."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:length]


def supported_version(value: int, newest: int) -> int:
    """``value``, a file's ``schema_version``, if this ragaudit reads it (``newest`` or
    older); a file written by a newer ragaudit is refused rather than half understood."""
    if value > newest:
        raise ValueError(
            f"schema_version {value} is newer than this ragaudit understands "
            f"({newest}); upgrade ragaudit"
        )
    return value


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = SCHEMA_VERSION

    @field_validator("schema_version")
    @classmethod
    def _supported(cls, value: int) -> int:
        return supported_version(value, SCHEMA_VERSION)


class Reference(BaseModel):
    """A known answer: the typed values the SQL returned and how to show them.

    ``values`` has one element for a single answer and several for a set-valued answer
    (order-insensitive); ``[None]`` is an explicit NULL answer and ``[]`` means the question
    is unanswerable from the data.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    values: list[Scalar]
    display: str

    @property
    def is_set(self) -> bool:
        """Several values: the answer is a set."""
        return len(self.values) > 1

    @property
    def is_null(self) -> bool:
        """The data holds the row but the answer cell is NULL."""
        return self.values == [None]

    @property
    def digest(self) -> str:
        """What a judgement records of the reference it judged against
        (:func:`reference_digest`)."""
        return reference_digest(self.values, self.display)

    @classmethod
    def from_values(cls, values: list[Scalar]) -> Reference:
        """Build a reference with the conventional display string (``a; b`` for sets)."""
        if list(values) == [None]:  # what a judge must hear: the value is not recorded
            return cls(values=[None], display="(no value is recorded)")
        shown = ["NULL" if v is None else str(v) for v in values]
        return cls(values=list(values), display="; ".join(shown) if shown else "(no answer)")


class RetrievedItem(BaseModel):
    """One retrieved passage: its document id, score and, optionally, its text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    score: float | None = None
    text: str | None = None


class TokenUsage(BaseModel):
    """Tokens one call (or one record) consumed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_tokens: int = Field(0, ge=0)
    completion_tokens: int = Field(0, ge=0)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


# What a query's gold ids mean (QueryRecord.gold_kind).
GoldKind = Literal["states", "computed", "entity"]
# The kinds whose gold ids are evidence of what the knowledge base holds: the documents
# that state every fact the answer is, or is computed from ([]: some fact none states, a
# hole). Blame and the knowledge base's holes rest on them; "entity" gold does not say.
EVIDENCE_GOLD_KINDS = frozenset({"states", "computed"})


class QueryRecord(_Record):
    """One text query: a wording (``variant``) of one semantic group (``group_id``)."""

    query_id: str = Field(min_length=1)
    group_id: str = Field(min_length=1)
    template_id: str | None = None
    text_template_id: str | None = None
    variant: str = Field(min_length=1)
    query: str = Field(min_length=1)
    reference: Reference
    bindings: dict[str, Scalar] = Field(default_factory=dict)
    gold_ids: list[str] | None = None
    gold_kind: GoldKind | None = Field(
        None,
        description="what gold_ids mean: 'states' (the documents that state the answer; [] "
        "when none does), 'computed' (the documents that state every fact a computed "
        "answer, a count, a sum, a yes or no, is computed from; [] when one is stated "
        "nowhere) or 'entity' (the documents about the entity the question names, which "
        "may not state the answer); null when there are no gold ids",
    )
    label: str | None = None
    source: Literal["sql", "document", "imported"] = Field(
        "sql",
        description="sql (grounded by SQL), document (generated from the corpus) or imported "
        "(a question set of the user's, e.g. human-written: generate --import)",
    )


class ResponseRecord(_Record):
    """What one system answered to one query, with what it retrieved and what it cost."""

    query_id: str = Field(min_length=1)
    system: str = Field(min_length=1)
    response: str | None = None
    retrieved: list[RetrievedItem] = Field(default_factory=list)
    latency_s: float | None = Field(None, ge=0)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    error: str | None = None
    note: str | None = Field(
        None,
        description="what ragaudit changed to record the answer: text that was not Unicode "
        "(half a character, a lone surrogate) recorded as U+FFFD; null when nothing was",
    )

    @property
    def retrieved_ids(self) -> list[str]:
        return [item.id for item in self.retrieved]

    @property
    def digest(self) -> str:
        """What a judgement of this response records of it (:func:`response_digest`)."""
        return response_digest(self.response, self.retrieved_ids, self.error)


def response_digest(response: str | None, retrieved_ids: Sequence[str], error: str | None) -> str:
    """A short fingerprint of what a judgement judged: the answer's text, the ids it
    retrieved and its error. A judgement keeps it, so that a response written again (the
    system run anew after its file was deleted) is never scored by the old verdict.

    >>> response_digest("Paris", ["d1"], None) == response_digest("Paris", ["d1"], None)
    True
    >>> response_digest("Paris", ["d1"], None) == response_digest("I don't know.", [], None)
    False
    """
    data = json.dumps([response, list(retrieved_ids), error], ensure_ascii=False)
    return f"{zlib.crc32(data.encode('utf-8', 'surrogatepass')):08x}"


def reference_digest(values: Sequence[Scalar], display: str) -> str:
    """A short fingerprint of the reference an answer was judged against: its values
    (types included) and its display string. A judgement keeps it, so that a dataset
    generated again on changed data (the same question, another answer) never keeps a
    verdict given against the old answer.

    >>> reference_digest([12], "12") == reference_digest([12], "12")
    True
    >>> reference_digest([12], "12") == reference_digest([13], "13")
    False
    """
    data = json.dumps([list(values), display], ensure_ascii=False)
    return f"{zlib.crc32(data.encode('utf-8', 'surrogatepass')):08x}"


def gold_digest(gold_ids: Sequence[str] | None) -> str:
    """A short fingerprint of the gold ids a retrieval verdict was given against (null
    and ``[]`` told apart). A judgement keeps it, so that a dataset generated again with
    other gold documents (a changed facts file, a corpus rebuilt) never keeps retrieval
    verdicts, or closed-domain ones, given against the old gold ids.

    >>> gold_digest(["d1", "d2"]) == gold_digest(["d1", "d2"]), gold_digest(None) == gold_digest([])
    (True, False)
    """
    data = json.dumps(None if gold_ids is None else list(gold_ids), ensure_ascii=False)
    return f"{zlib.crc32(data.encode('utf-8', 'surrogatepass')):08x}"


# The method of a judgement the LLM judge could not give (after its retries): undecided.
JUDGE_FAILED = "judge-failed"


class Judgement(_Record):
    """Whether one response is correct, how that was decided, and whether retrieval was.
    ``correct`` is None only when the judge failed (``method`` ``judge-failed``, the reason
    in ``rationale``): such an answer is neither right nor wrong, and the analysis leaves it
    out and counts it."""

    query_id: str = Field(min_length=1)
    system: str = Field(min_length=1)
    correct: bool | None
    method: str = Field(min_length=1, description="match | llm | error | judge-failed | ...")
    retrieval_correct: bool | None = None
    rationale: str | None = None
    response_digest: str | None = Field(
        None,
        description="the judged response's fingerprint (text, retrieved ids, error); a "
        "judgement whose response has changed since is stale. Absent in judgements written "
        "before it existed: those are not checked.",
    )
    reference_digest: str | None = Field(
        None,
        description="the fingerprint of the reference it was judged against (values and "
        "display); a judgement whose question's reference has changed since (the dataset "
        "generated again on changed data) is stale. Absent in judgements written before it "
        "existed: those are not checked.",
    )
    gold_digest: str | None = Field(
        None,
        description="the fingerprint of the gold ids its retrieval verdict was given against "
        "(:func:`gold_digest`); a judgement whose question's gold ids have changed since is "
        "stale. Absent in judgements written before it existed: those are not checked.",
    )
    judged_under: str | None = Field(
        None,
        description="the rules it was given under: the version of the judge's rules (its "
        "matchers and its prompt), whether the closed-domain rule applied, and the retrieval "
        "rule ('rules 3; closed domain off; retrieval all_gold'). A judgement given under "
        "other rules than the judge's now is judged again, as one without this field is "
        "(written before it existed, under rules that may have changed since).",
    )

    @model_validator(mode="after")
    def _undecided_only_when_failed(self) -> Judgement:
        if (self.correct is None) != (self.method == JUDGE_FAILED):
            raise ValueError(f"correct is null exactly when method is {JUDGE_FAILED!r}")
        return self


class RepeatResponse(ResponseRecord):
    """One more asking of a query (``run --repeat N``): the same record as a response,
    with ``repeat``, its index (1 to N - 1). The first asking (repeat 0) is the query's
    record in ``responses/<system>.jsonl``, as in a run without repeats; the others are in
    ``repeats/responses/<system>.jsonl``, one per (query, repeat), so that every reader of
    ``responses/`` still finds one record per query."""

    repeat: int = Field(ge=1, description="which asking: 1 to N - 1 (0 is responses/)")


class RepeatJudgement(Judgement):
    """The judgement of one :class:`RepeatResponse`
    (``repeats/judgements/<system>.jsonl``): a judgement, with the repeat it judged."""

    repeat: int = Field(ge=1, description="which asking: 1 to N - 1 (0 is judgements/)")


# The question types of "Know Your RAG": what a context gives as the answer to a question.
QuestionLabel = Literal["fact_single", "summary", "reasoning", "unanswerable"]
LABELS: tuple[QuestionLabel, ...] = ("fact_single", "summary", "reasoning", "unanswerable")


class LabelPair(_Record):
    """One (context, question) pair to label: a query of the run's dataset, or a question of
    an imported set (SQuAD JSON, plain JSONL). ``gold_ids`` are the documents that make up
    its context (one for an imported pair); ``impossible`` is the set's own flag that the
    context does not answer it (SQuAD 2.0's ``is_impossible``), when the set has one."""

    pair_id: str = Field(min_length=1)
    gold_ids: list[str] = Field(min_length=1)
    question: str = Field(min_length=1)
    answer: str | None = None
    impossible: bool | None = None
    source: Literal["dataset", "squad", "jsonl"] = "dataset"


class LabelRecord(_Record):
    """One rater's label of one pair, with its reason. ``label`` is None only when the rater
    gave no usable label (an LLM reply that stayed malformed after re-asking): undecided,
    counted, never guessed; ``reason`` then says why."""

    pair_id: str = Field(min_length=1)
    rater: str = Field(min_length=1)
    label: QuestionLabel | None
    reason: str = ""


class CritiqueRating(BaseModel):
    """One critique of a generated pair: a rating from 1 (bad) to 5 (good) and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rating: int = Field(ge=1, le=5)
    reason: str = ""


class WordingCheck(BaseModel):
    """One wording of a generated question in one style, and whether it was kept (it fits
    the style and asks for the same answer) or why not."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    style: str = Field(min_length=1)
    text: str | None = None
    kept: bool
    reason: str | None = None


class CandidateRecord(_Record):
    """One question-answer pair generated from a context (``candidates.jsonl``), accepted
    or not: what was asked for, what the checks found, and, when dropped, the first check
    it failed (``dropped``, as ``<check>: <why>``). Accepted candidates become the
    document half of dataset.jsonl, one semantic group each."""

    candidate_id: str = Field(min_length=1)
    context_id: str = Field(min_length=1, description="the chunk: <document id>#<chunk index>")
    gold_ids: list[str] = Field(min_length=1, description="the document the chunk is from")
    strategy: Literal["simple", "statements"]
    requested_label: QuestionLabel | None = Field(
        None, description="the label asked for (statements); null for simple"
    )
    theme: str | None = None
    statement_kind: Literal["fact", "summary", "conclusion"] | None = None
    statement: str | None = None
    question: str | None = None
    answer: str | None = Field(None, description="the reference; null for unanswerable")
    support: str | None = Field(
        None, description="how the answer was found supported: words, critique, or why not"
    )
    critiques: dict[str, CritiqueRating] | None = None
    observed_label: QuestionLabel | None = Field(None, description="the labeller's label")
    accepted: bool = False
    dropped: str | None = None
    round: int = Field(0, ge=0, description="the pass over the contexts that wrote it (from 0)")
    wordings: list[WordingCheck] = Field(
        default_factory=list, description="the accepted question in each style, checked"
    )
    calls: int = Field(
        0,
        ge=0,
        description="LLM requests this candidate made (cached or not), its wordings' "
        "included: the records add up to the whole generation's requests",
    )
    tokens: int = Field(0, ge=0, description="their prompt and completion tokens")

    @model_validator(mode="after")
    def _accepted_or_dropped(self) -> CandidateRecord:
        if self.accepted == (self.dropped is not None):
            raise ValueError("a candidate is either accepted or dropped with a reason")
        return self


# The reference-free metrics (issue 18), in the order they are computed and shown.
FreeMetric = Literal["faithfulness", "answer_relevancy", "context_precision", "self_consistency"]
FREE_METRICS: tuple[FreeMetric, ...] = (
    "faithfulness",
    "answer_relevancy",
    "context_precision",
    "self_consistency",
)


# How an undefined metric's reason begins when the model failed; the detail follows a colon.
MALFORMED = "malformed reply"  # the replies stayed malformed after re-asking
LLM_FAILED = "LLM failed"  # the model could not be reached, or kept failing
FAILURE_KINDS = (MALFORMED, LLM_FAILED)


class ClaimCheck(BaseModel):
    """One claim extracted from an answer and whether the retrieved passages support it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    claim: str
    supported: bool


class MetricScore(BaseModel):
    """One reference-free metric of one response, with the parts that explain it.

    ``score`` is None exactly when the metric could not be computed, and ``undefined`` then
    says why (no claims, no passages, a reply that stayed malformed after re-asking, ...):
    an undefined score is counted and shown, never NaN and never a silent 0 or 1. Which of
    the parts are set depends on the metric: ``claims`` (faithfulness), ``questions``,
    ``similarities`` and ``noncommittal`` (answer relevancy), ``useful`` (context
    precision, one verdict per retrieved passage in rank order), ``samples`` and ``agree``
    (self-consistency)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    score: float | None = Field(None, ge=-1, le=1)
    undefined: str | None = None
    claims: list[ClaimCheck] | None = None
    questions: list[str] | None = None
    similarities: list[float] | None = None
    noncommittal: bool | None = None
    useful: list[bool] | None = None
    samples: list[str] | None = None
    agree: list[bool] | None = None
    calls: int = Field(0, ge=0, description="LLM requests made for it (cached or not)")
    tokens: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _undefined_only_without_score(self) -> MetricScore:
        if (self.score is None) != bool(self.undefined):
            raise ValueError("a metric has a score or says why it is undefined, not both")
        return self


class FreeScoreRecord(_Record):
    """The reference-free metrics of one system's response to one query
    (``scores/<system>.jsonl``): only the metrics that were asked for are present."""

    query_id: str = Field(min_length=1)
    system: str = Field(min_length=1)
    metrics: dict[FreeMetric, MetricScore]
    response_digest: str | None = Field(
        None,
        description="the fingerprint of the response scored (ResponseRecord.digest): scores "
        "of a response replaced since are refused until scored again; null in files "
        "written before scores kept it, or for rows scored without a run",
    )


# What became of a semantic group when its SQL was executed again (generate --refresh).
RefreshStatus = Literal["changed", "vanished", "new"]


class RefreshedGroup(_Record):
    """One semantic group that moved when ``generate --refresh`` executed its SQL again on
    the database as it is now (a ``group`` line of ``refresh.jsonl``): its answer changed
    (``changed``: the old and the new reference, and its questions under new ids), a value
    it names no longer exists (``vanished``: its questions left the dataset), or its
    bindings are new (``new``: asked only with ``--new``)."""

    kind: Literal["group"] = "group"
    status: RefreshStatus
    group_id: str = Field(min_length=1)
    template_id: str = Field(min_length=1)
    bindings: dict[str, Scalar] = Field(default_factory=dict)
    old: Reference | None = Field(None, description="the reference before; null: new")
    new: Reference | None = Field(
        None,
        description="the reference now; null where a value it names is gone (a group that "
        "left by the dataset's rules keeps its answer now)",
    )
    old_query_ids: list[str] = Field(
        default_factory=list,
        description="its questions' ids before; their responses, judgements and scores "
        "moved to retired/",
    )
    new_query_ids: list[str] = Field(
        default_factory=list, description="its questions' ids now (none when vanished)"
    )
    stale_documents: list[str] = Field(
        default_factory=list,
        description="of the documents that stated its old answer, those that state a fact "
        "that is no longer true",
    )


class StaleFact(BaseModel):
    """One fact a document states that the database no longer holds: its row is gone
    (``now`` null, ``gone``), or its value is another than the document states."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    table: str
    row_key: str
    column: str
    stated: str | None = Field(None, description="what the document states, when known")
    now: Scalar = Field(None, description="the value in the database now")
    gone: bool = Field(False, description="the row is no longer in the database")


class StaleDocument(_Record):
    """A document of the corpus that states facts the database no longer holds (a
    ``document`` line of ``refresh.jsonl``): its text is stale, and a system that
    retrieves it answers with the old value."""

    kind: Literal["document"] = "document"
    document: str = Field(min_length=1)
    facts: list[StaleFact] = Field(min_length=1)
