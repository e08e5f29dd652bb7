"""The judging cascade: deterministic matchers first, then the LLM judge for what they
leave open; retrieval judged from gold ids; an optional closed-domain rule."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel

from ragaudit.aio import gather_all
from ragaudit.errors import FATAL_LLM_ERRORS, LLMError
from ragaudit.judge.llm_judge import llm_judge
from ragaudit.judge.matchers import match
from ragaudit.judge.retrieval import DEFAULT_RULE, RetrievalRule, retrieval_correct
from ragaudit.llm.client import LLMClient
from ragaudit.records.models import (
    JUDGE_FAILED,
    Judgement,
    QueryRecord,
    ResponseRecord,
    gold_digest,
)

# The version of the judge's rules: raised whenever a matcher, the LLM judge's prompt or the
# reading of its reply changes what it decides, so that a verdict given under older rules
# is judged again (the LLM's replies come from the cache where its prompt is the same).
# 2: a response that says nothing its question did not is Incorrect (match:question-only,
# issue 39).
# 3: a response that holds the reference but names another value beside it, or denies it,
# is left to the LLM judge, told why (the matchers credited "either X or Y").
JUDGE_RULES = 3


def judged_under(closed_domain: bool, rule: RetrievalRule) -> str:
    """What a judgement's verdicts depend on besides its response and reference: the
    judge's rules, the closed-domain rule and the retrieval rule, as one comparable line."""
    closed = "on" if closed_domain else "off"
    return f"rules {JUDGE_RULES}; closed domain {closed}; retrieval {rule}"


def retrieval_rule_of(under: str | None) -> str | None:
    """The retrieval rule a :func:`judged_under` line names, or None (no line, or one
    written before the rule was recorded): the rule the judgement's retrieval verdict was
    given by, which no stats file can contradict.

    >>> retrieval_rule_of(judged_under(False, "any_hit")), retrieval_rule_of(None)
    ('any_hit', None)
    """
    if not under:
        return None
    for part in under.split(";"):
        name, _, value = part.strip().partition(" ")
        if name == "retrieval" and value:
            return value
    return None


class JudgeFailure(BaseModel):
    """A judgement the LLM judge could not give: the query, and why (its error)."""

    query_id: str
    reason: str


class JudgeCounts(BaseModel):
    """How one judge run decided a system's answers: the count per method, the mean
    agreement of the LLM judge's samples (None without ``--samples``), and the
    judgements the LLM judge failed to give (the first ten named)."""

    methods: dict[str, int]
    llm_sample_agreement: float | None
    judge_failed: int
    judge_failures: list[JudgeFailure]


@dataclass
class JudgeStats:
    """How answers were decided: counts per method, and LLM sample agreement."""

    methods: Counter[str] = field(default_factory=Counter)
    agreements: list[float] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)  # query id, reason

    def counts(self) -> JudgeCounts:
        """What these stats add up to, as judge.stats.json records it."""
        mean = sum(self.agreements) / len(self.agreements) if self.agreements else None
        return JudgeCounts(
            methods=dict(self.methods),
            llm_sample_agreement=mean,
            judge_failed=len(self.failures),
            judge_failures=[JudgeFailure(query_id=q, reason=r) for q, r in self.failures[:10]],
        )


async def judge_one(
    query: QueryRecord,
    response: ResponseRecord,
    llm: LLMClient | None,
    *,
    samples: int = 1,
    closed_domain: bool = False,
    rule: RetrievalRule = DEFAULT_RULE,
    stats: JudgeStats | None = None,
    reasons: bool = True,
) -> Judgement:
    """One judgement, recording how it was decided (``match:<rule>``, ``llm``, ``error``,
    ``unmatched`` when no LLM may decide). When the LLM judge fails after its retries
    (unparseable replies, server errors, timeouts) the judgement says so: ``correct`` is
    None and ``method`` is ``judge-failed``, with the reason; the other answers are judged
    as usual. A wrong key or model name stops the step instead."""
    stats = stats if stats is not None else JudgeStats()
    retrieval = retrieval_correct(
        response.retrieved_ids, query.gold_ids, rule, failed=response.error is not None
    )
    rationale: str | None = None
    correct: bool | None
    if response.error is not None:
        correct, method, rationale = False, "error", response.error[:200]
    else:
        decision = match(query.reference, response.response, question=query.query)
        if decision.decided:
            correct, method = bool(decision.correct), f"match:{decision.rule}"
        elif llm is not None:
            try:
                verdict = await llm_judge(
                    llm,
                    query.query,
                    query.reference.display,
                    response.response or "",
                    samples,
                    reasons=reasons,
                    note=decision.why,  # what the matchers saw, where they declined
                )
            except FATAL_LLM_ERRORS:
                raise
            except LLMError as exc:
                correct, method, rationale = None, JUDGE_FAILED, str(exc)[:300]
                stats.failures.append((query.query_id, rationale))
            else:
                correct, method, rationale = verdict.correct, "llm", verdict.reason
                if samples > 1:
                    stats.agreements.append(verdict.agreement)
                    rationale = f"{verdict.agreement:.0%} of {samples} samples: {verdict.reason}"
        else:
            correct, method = False, "unmatched"
    hole = query.gold_ids == [] and bool(query.reference.values)
    if closed_domain and correct and (retrieval is False or hole):
        # Closed domain: an answer the documents could not have given is not credited,
        # nor one that no document holds (a hole answered from elsewhere); a refusal to a
        # question that has no answer is right, and is.
        correct, method = False, f"{method}+closed-domain"
    stats.methods[method] += 1
    return Judgement(
        query_id=query.query_id,
        system=response.system,
        correct=correct,
        method=method,
        retrieval_correct=retrieval,
        rationale=rationale,
        response_digest=response.digest,
        reference_digest=query.reference.digest,
        gold_digest=gold_digest(query.gold_ids),
        judged_under=judged_under(closed_domain, rule),
    )


async def judge_many(
    pairs: Iterable[tuple[QueryRecord, ResponseRecord]],
    llm: LLMClient | None,
    *,
    samples: int = 1,
    closed_domain: bool = False,
    rule: RetrievalRule = DEFAULT_RULE,
    stats: JudgeStats | None = None,
    reasons: bool = True,
    on_judged: Callable[[int], None] | None = None,
) -> list[Judgement]:
    """Judge every pair; LLM calls run concurrently (bounded by the client).
    ``on_judged(1)`` is called as each judgement is made, for a progress display."""
    stats = stats if stats is not None else JudgeStats()

    async def one(q: QueryRecord, r: ResponseRecord) -> Judgement:
        judgement = await judge_one(
            q,
            r,
            llm,
            samples=samples,
            closed_domain=closed_domain,
            rule=rule,
            stats=stats,
            reasons=reasons,
        )
        if on_judged is not None:
            on_judged(1)
        return judgement

    return await gather_all(*(one(q, r) for q, r in pairs))
