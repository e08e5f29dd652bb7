"""Reference-free metrics (issue 18): faithfulness, answer relevancy, context precision and
self-consistency of one response, each kept with its parts so that a score can be
explained, and each ``None`` with the reason when it cannot be computed.

These are the metrics teams use when they have no ground truth (Ragas's definitions, and
GRAMMAR's adaptation of SelfCheck). ragaudit computes them to measure, against its grounded
verdicts, how far they can be trusted (``ragaudit.analysis.reliability``).

Every prompt puts its unchanging instructions first and the passages before the answer, so
that a local model's prompt cache reads them once. Metric calls are deterministic
(temperature 0, a fixed seed) and cached; self-consistency's samples are drawn at
temperature 1.0 with one seed per sample, so a rerun draws the same samples.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, Field, field_validator

from ragaudit.aio import gather_all
from ragaudit.errors import FATAL_LLM_ERRORS, LLMError, StructuredOutputError
from ragaudit.llm.client import LLMClient
from ragaudit.llm.parsing import extract_json
from ragaudit.llm.types import Messages, system, user
from ragaudit.llm.usage import tally
from ragaudit.records.models import (
    LLM_FAILED,
    MALFORMED,
    ClaimCheck,
    FreeMetric,
    FreeScoreRecord,
    MetricScore,
)

T = TypeVar("T")

# Questions asked of an answer for answer relevancy (Ragas asks for three).
RELEVANCY_QUESTIONS = 3
# Samples drawn for self-consistency (GRAMMAR drew four).
CONSISTENCY_SAMPLES = 4
# A response with more claims than this is scored on its first ones (a runaway list from a
# small model would otherwise make the verification prompt unbounded).
MAX_CLAIMS = 12
# Tokens each kind of reply may take.
CLAIMS_TOKENS = 256
VERDICTS_TOKENS = 96
QUESTIONS_TOKENS = 160
SHORT_TOKENS = 16


class Claims(BaseModel):
    """The claims an answer makes."""

    claims: list[str]

    @field_validator("claims")
    @classmethod
    def _clean(cls, value: list[str]) -> list[str]:
        return [c.strip() for c in value if isinstance(c, str) and c.strip()]


class RelevancyReply(BaseModel):
    """Questions the answer would answer."""

    questions: list[str] = Field(min_length=1)


class Committal(BaseModel):
    """Whether an answer declines or fails to answer its question."""

    noncommittal: bool


class Useful(BaseModel):
    """Whether one passage was useful in arriving at the answer."""

    useful: bool


class Same(BaseModel):
    """Whether two answers give the same answer to the question."""

    same: bool


def claims_prompt(question: str, answer: str) -> Messages:
    """Ask for the factual claims ``answer`` makes (to the question ``question``)."""
    return [
        system(
            "You split an answer into the factual claims it makes. Each claim is one short "
            "sentence that stands alone: name what it is about instead of using a pronoun, "
            "and state one fact the answer asserts. Leave out questions, hedges and "
            "refusals: an answer that asserts no fact (e.g. 'I don't know') has no claims. "
            'Reply with JSON only: {"claims": ["<claim>", ...]}'
        ),
        user(f"Question: {question}\nAnswer: {answer}"),
    ]


def passages_block(contexts: Sequence[str]) -> str:
    """Retrieved passages as numbered blocks."""
    return "\n\n".join(f"[{i}] {text.strip()}" for i, text in enumerate(contexts, 1))


def verify_prompt(contexts: Sequence[str], claims: Sequence[str]) -> Messages:
    """Ask, for each claim, whether the passages state it or directly imply it."""
    numbered = "\n".join(f"{i}. {c}" for i, c in enumerate(claims, 1))
    return [
        system(
            "You check claims against passages, using the passages only. A claim is "
            "supported (yes) when the passages state it or it follows directly from them; "
            "otherwise (contradicted, or not stated) it is not (no). Reply with JSON only, "
            'one verdict per claim in the order given: {"verdicts": ["yes" or "no", ...]}'
        ),
        user(f"Passages:\n{passages_block(contexts)}\n\nClaims:\n{numbered}"),
    ]


def relevancy_prompt(answer: str, n: int = RELEVANCY_QUESTIONS) -> Messages:
    """Ask for ``n`` questions that ``answer`` answers (the answer alone: the question
    would leak into them)."""
    return [
        system(
            f"You are given an answer. Write {n} different questions to which it is the "
            'answer. Reply with JSON only: {"questions": ["<question>", ...]}'
        ),
        user(f"Answer: {answer}"),
    ]


def noncommittal_prompt(question: str, answer: str) -> Messages:
    """Ask whether ``answer`` declines or fails to answer ``question``. Asked on its own
    and with the question: asked beside the questions, of the answer alone, the embedded
    model called most short, right answers noncommittal (docs/reference-free.md)."""
    return [
        system(
            "You read a question and an answer to it, and say whether the answer is "
            "noncommittal: it declines or fails to answer (it does not know, could not find "
            "the information, says the information is not given, or is too vague to give "
            "any answer). An answer that states an answer, even a short one (a name, a "
            "place, a date, a number) or a wrong one, is not noncommittal. Reply with JSON "
            'only: {"noncommittal": true or false}'
        ),
        user(f"Question: {question}\nAnswer: {answer}"),
    ]


def usefulness_prompt(passage: str, question: str, answer: str) -> Messages:
    """Ask whether ``passage`` was useful in arriving at ``answer`` to ``question``."""
    return [
        system(
            "You judge whether a passage was useful in arriving at a given answer to a "
            "question: does it hold information the answer uses? Reply with JSON only: "
            '{"useful": true or false}'
        ),
        user(f"Passage:\n{passage.strip()}\n\nQuestion: {question}\nAnswer: {answer}"),
    ]


def same_prompt(question: str, answer: str, other: str) -> Messages:
    """Ask whether two answers to ``question`` give it the same answer (SelfCheck-QA as
    GRAMMAR adapted it: the question is part of the prompt)."""
    return [
        system(
            "You compare two answers to the same question. Do both give the same answer "
            "to it, with equivalent meaning (wording and extra detail do not matter; a "
            'different value or a refusal does)? Reply with JSON only: {"same": true or false}'
        ),
        user(f"Question: {question}\nAnswer A: {answer}\nAnswer B: {other}"),
    ]


def _yes(word: str) -> bool:
    value = word.strip().strip(".\"'").lower()
    if value in ("yes", "1", "true", "supported"):
        return True
    if value in ("no", "0", "false", "not supported", "unsupported"):
        return False
    raise ValueError(f"verdict {word!r} is neither yes nor no")


def verdicts_reply(n: int) -> str:
    """What a re-ask of :func:`verify_prompt` for ``n`` claims tells the model to reply
    with."""
    return f'JSON: {{"verdicts": [one "yes" or "no" for each of the {n} claims, in order]}}'


def parse_verdicts(n: int) -> Callable[[str], list[bool]]:
    """A reader of a verification reply that must hold exactly ``n`` yes/no verdicts
    (``{"verdicts": [...]}``, or the bare list); anything else is re-asked."""

    def read(reply: str) -> list[bool]:
        value = extract_json(reply)
        if isinstance(value, dict):
            value = value.get("verdicts")
        if not isinstance(value, list):
            raise ValueError('the reply has no "verdicts" list')
        if len(value) != n:
            raise ValueError(f"{len(value)} verdicts for {n} claims")
        return [_yes(str(v)) for v in value]

    return read


def average_precision(useful: Sequence[bool]) -> float:
    """Average precision at k of passages in rank order: the mean of precision@i over the
    ranks i that hold a useful passage; 0.0 when none is useful (every passage was judged,
    and none helped)."""
    hits = 0
    total = 0.0
    for i, good in enumerate(useful, 1):
        if good:
            hits += 1
            total += hits / i
    return total / hits if hits else 0.0


def cosine_mean(question: Sequence[float], others: Sequence[Sequence[float]]) -> list[float]:
    """Cosine similarity of ``question``'s embedding to each of ``others``."""
    out = []
    norm_q = math.sqrt(sum(x * x for x in question))
    for vec in others:
        norm_v = math.sqrt(sum(x * x for x in vec))
        dot = sum(a * b for a, b in zip(question, vec, strict=True))
        out.append(dot / (norm_q * norm_v) if norm_q and norm_v else 0.0)
    return out


def _reason(exc: LLMError) -> str:
    """The first line of an LLM error, short (it carries no secret: the client redacts)."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:300]


@dataclass
class _Cost:
    """LLM requests (re-asks included) and tokens one metric of one response took."""

    calls: int = 0
    tokens: int = 0


@dataclass
class Extracted:
    """The claims of an answer, and what extracting them cost."""

    claims: list[str]
    cost: _Cost


@dataclass
class Draft:
    """The questions written for one answer, before they are embedded."""

    question: str
    questions: list[str]
    noncommittal: bool
    cost: _Cost

    def score(self, vectors: Mapping[str, Sequence[float]]) -> MetricScore:
        """The draft's answer relevancy, from the embeddings of its texts."""
        similarities = [
            round(s, 6)
            for s in cosine_mean(vectors[self.question], [vectors[q] for q in self.questions])
        ]
        mean = sum(similarities) / len(similarities)
        return MetricScore(
            score=0.0 if self.noncommittal else max(-1.0, min(1.0, mean)),
            questions=self.questions,
            similarities=similarities,
            noncommittal=self.noncommittal,
            calls=self.cost.calls,
            tokens=self.cost.tokens,
        )


def _failure(exc: LLMError, cost: _Cost) -> MetricScore:
    """The undefined score of a metric whose model call failed, by how it failed."""
    kind = MALFORMED if isinstance(exc, StructuredOutputError) else LLM_FAILED
    return _undefined(f"{kind}: {_reason(exc)}", cost)


def _undefined(why: str, cost: _Cost | None = None, **parts: Any) -> MetricScore:
    cost = cost or _Cost()
    return MetricScore(undefined=why, calls=cost.calls, tokens=cost.tokens, **parts)


Embed = Callable[[list[str]], Sequence[Sequence[float]]]


class FreeScorer:
    """Computes the reference-free metrics of responses with one LLM client and, for
    answer relevancy, a sentence encoder ``embed`` (texts to vectors). Metric calls run at
    temperature 0 with the client's seed, so that scores are the same from run to run."""

    def __init__(
        self,
        llm: LLMClient,
        *,
        embed: Embed | None = None,
        relevancy_questions: int = RELEVANCY_QUESTIONS,
    ) -> None:
        self.llm = llm
        self.embed = embed
        self.relevancy_questions = relevancy_questions
        base = llm.default_params.model_copy(update={"temperature": 0.0})
        self._params = {
            n: base.model_copy(update={"max_tokens": n})
            for n in (CLAIMS_TOKENS, VERDICTS_TOKENS, QUESTIONS_TOKENS, SHORT_TOKENS)
        }

    async def _counted(self, call: Awaitable[T], cost: _Cost) -> T:
        """Await ``call``, adding the requests it made (re-asks included) to ``cost``."""
        with tally() as counted:
            try:
                return await call
            finally:
                cost.calls += counted.calls
                cost.tokens += counted.tokens

    async def _json(self, messages: Messages, schema: Any, max_tokens: int, cost: _Cost) -> Any:
        return await self._counted(
            self.llm.acomplete_json(messages, schema, self._params[max_tokens]), cost
        )

    @staticmethod
    async def _guarded(
        work: Callable[[_Cost], Awaitable[MetricScore]], spent: _Cost | None = None
    ) -> MetricScore:
        """``work``'s score, or undefined with the reason when the model's replies stayed
        malformed after re-asking or the model could not be reached (a wrong key or model
        name still stops the command). ``spent``: what earlier steps of the metric cost."""
        cost = spent or _Cost()
        try:
            return await work(cost)
        except FATAL_LLM_ERRORS:
            raise
        except LLMError as exc:
            return _failure(exc, cost)

    async def extract_claims(self, question: str, answer: str | None) -> Extracted | MetricScore:
        """Faithfulness's first step: the answer's claims (with what asking cost), or the
        undefined score when there is no answer, no claim, or no usable reply."""
        if not answer or not answer.strip():
            return _undefined("no answer to check")

        async def work(cost: _Cost) -> Extracted:
            reply = await self._json(claims_prompt(question, answer), Claims, CLAIMS_TOKENS, cost)
            return Extracted(reply.claims[:MAX_CLAIMS], cost)

        cost = _Cost()
        try:
            extracted = await work(cost)
        except FATAL_LLM_ERRORS:
            raise
        except LLMError as exc:
            return _failure(exc, cost)
        if not extracted.claims:
            return _undefined("the answer makes no factual claim", cost, claims=[])
        return extracted

    async def check_claims(self, contexts: Sequence[str], extracted: Extracted) -> MetricScore:
        """Faithfulness's second step: the share of the claims that the passages support."""
        if not contexts:
            return _undefined("nothing was retrieved to check the answer against", extracted.cost)
        claims = extracted.claims

        async def work(cost: _Cost) -> MetricScore:
            verdicts = await self._counted(
                self.llm.acomplete_parsed(
                    verify_prompt(contexts, claims),
                    parse_verdicts(len(claims)),
                    verdicts_reply(len(claims)),
                    self._params[VERDICTS_TOKENS],
                ),
                cost,
            )
            checks = [
                ClaimCheck(claim=c, supported=v) for c, v in zip(claims, verdicts, strict=True)
            ]
            return MetricScore(
                score=sum(verdicts) / len(verdicts),
                claims=checks,
                calls=cost.calls,
                tokens=cost.tokens,
            )

        return await self._guarded(work, extracted.cost)

    async def faithfulness(
        self, question: str, answer: str | None, contexts: Sequence[str]
    ) -> MetricScore:
        """The share of the answer's claims that the retrieved passages support."""
        if not contexts:
            return _undefined("nothing was retrieved to check the answer against")
        extracted = await self.extract_claims(question, answer)
        if isinstance(extracted, MetricScore):
            return extracted
        return await self.check_claims(contexts, extracted)

    async def relevancy_draft(self, question: str, answer: str | None) -> Draft | MetricScore:
        """Answer relevancy's first step: the questions the model writes for the answer
        alone, or the undefined score when there is no answer or no usable reply."""
        if not answer or not answer.strip():
            return _undefined("no answer to check")
        if self.embed is None:
            return _undefined("no sentence encoder (answer relevancy needs the dense extra)")
        cost = _Cost()
        try:
            reply, flag = await gather_all(
                self._json(
                    relevancy_prompt(answer, self.relevancy_questions),
                    RelevancyReply,
                    QUESTIONS_TOKENS,
                    cost,
                ),
                self._json(noncommittal_prompt(question, answer), Committal, SHORT_TOKENS, cost),
            )
        except FATAL_LLM_ERRORS:
            raise
        except LLMError as exc:
            return _failure(exc, cost)
        questions = [q.strip() for q in reply.questions if q.strip()][: self.relevancy_questions]
        if not questions:
            return _undefined("the model wrote no question for the answer", cost)
        return Draft(question, questions, flag.noncommittal, cost)

    async def relevancy_scores(self, drafts: Sequence[Draft]) -> list[MetricScore]:
        """Answer relevancy's second step, for many drafts at once: every text embedded in
        one batch of the encoder (off the event loop), then each draft's mean cosine."""
        assert self.embed is not None
        texts = list(dict.fromkeys(t for d in drafts for t in (d.question, *d.questions)))
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        vectors = dict(zip(texts, await loop.run_in_executor(None, self.embed, texts), strict=True))
        return [d.score(vectors) for d in drafts]

    async def answer_relevancy(self, question: str, answer: str | None) -> MetricScore:
        """The mean cosine similarity between the question and questions written for the
        answer alone; 0 when the model finds the answer noncommittal (as Ragas scores it)."""
        draft = await self.relevancy_draft(question, answer)
        if isinstance(draft, MetricScore):
            return draft
        return (await self.relevancy_scores([draft]))[0]

    async def context_precision(
        self, question: str, answer: str | None, contexts: Sequence[str]
    ) -> MetricScore:
        """Average precision of the retrieved passages, in rank order, each judged useful
        or not in arriving at the answer (Ragas's reference-free context precision)."""
        if not answer or not answer.strip():
            return _undefined("no answer to judge the passages against")
        if not contexts:
            return _undefined("nothing was retrieved")

        async def work(cost: _Cost) -> MetricScore:
            replies = await gather_all(
                *(
                    self._json(usefulness_prompt(c, question, answer), Useful, SHORT_TOKENS, cost)
                    for c in contexts
                )
            )
            useful = [r.useful for r in replies]
            return MetricScore(
                score=average_precision(useful), useful=useful, calls=cost.calls, tokens=cost.tokens
            )

        return await self._guarded(work)

    async def self_consistency(
        self, question: str, answer: str | None, samples: Sequence[str | None]
    ) -> MetricScore:
        """The share of ``samples`` (answers drawn again at temperature 1.0 from the same
        system and passages) that give the same answer as ``answer``. GRAMMAR counts a
        response correct when every sample agrees: a threshold of 1."""
        if not answer or not answer.strip():
            return _undefined("no answer to compare")
        drawn = [s.strip() for s in samples if s and s.strip()]
        if not drawn:
            return _undefined("no sampled answer to compare with", samples=[])

        async def work(cost: _Cost) -> MetricScore:
            replies = await gather_all(
                *(
                    self._json(same_prompt(question, answer, s), Same, SHORT_TOKENS, cost)
                    for s in drawn
                )
            )
            agree = [r.same for r in replies]
            return MetricScore(
                score=sum(agree) / len(agree),
                samples=drawn,
                agree=agree,
                calls=cost.calls,
                tokens=cost.tokens,
            )

        return await self._guarded(work)


@dataclass(frozen=True)
class FreeItem:
    """One response to score: the question, the answer, and the passages the system
    answered from (``contexts``; None when their texts are unknown)."""

    query_id: str
    system: str
    question: str
    answer: str | None
    contexts: tuple[str, ...] | None


# Draws ``n`` answers again from the system that answered ``item``, on the same passages.
Resampler = Callable[[FreeItem, int], Awaitable[list[str]]]

NO_TEXTS = "the retrieved passages' texts are unknown (give the corpus, or record texts)"
NO_RESAMPLER = "the system cannot be asked again on the same passages (only built-in ones can)"


async def _pool(jobs: Sequence[Callable[[], Awaitable[None]]], workers: int) -> None:
    """Run ``jobs`` in their order, ``workers`` at a time."""
    queue: asyncio.Queue[Callable[[], Awaitable[None]]] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)

    async def worker() -> None:
        while not queue.empty():
            await queue.get_nowait()()

    await asyncio.gather(*(worker() for _ in range(min(workers, len(jobs)))))


async def score_items(
    scorer: FreeScorer,
    items: Sequence[FreeItem],
    metrics: Sequence[FreeMetric],
    *,
    resample: Resampler | None = None,
    samples: int = CONSISTENCY_SAMPLES,
    on_step: Callable[[int], None] | None = None,
) -> list[FreeScoreRecord]:
    """Score every item on ``metrics``; the records come back in the items' order.
    ``on_step(1)`` follows the progress: once per item and step (:func:`steps_of`).

    The work goes step by step over all items (the claims of every answer, then their
    verification, ...), each step with the items that share passages one after the other
    and as many calls at once as the model's backend takes: a local model, which answers
    one call at a time, then reads each passage's prompt prefix once per step instead of
    once per call."""
    workers = max(1, int(getattr(scorer.llm.backend, "max_concurrency", 1)))
    by_passages = sorted(range(len(items)), key=lambda i: (items[i].contexts or (), i))
    scores: list[dict[FreeMetric, MetricScore]] = [{} for _ in items]

    async def step(order: Sequence[int], one: Callable[[int], Awaitable[None]]) -> None:
        async def job(i: int) -> None:
            await one(i)
            if on_step is not None:
                on_step(1)

        await _pool([lambda i=i: job(i) for i in order], workers)  # type: ignore[misc]

    for metric in metrics:
        if metric == "faithfulness":
            await _faithfulness(scorer, items, scores, by_passages, step)
        elif metric == "answer_relevancy":
            await _relevancy(scorer, items, scores, step, on_step)
        elif metric == "context_precision":

            async def precision(i: int) -> None:
                item = items[i]
                scores[i]["context_precision"] = (
                    _undefined(NO_TEXTS)
                    if item.contexts is None
                    else await scorer.context_precision(item.question, item.answer, item.contexts)
                )

            await step(by_passages, precision)
        else:
            await _consistency(scorer, items, scores, by_passages, resample, samples, step)
    records = [
        FreeScoreRecord(
            query_id=item.query_id,
            system=item.system,
            metrics={m: scores[i][m] for m in metrics},
        )
        for i, item in enumerate(items)
    ]
    return records


def steps_of(metrics: Sequence[FreeMetric]) -> int:
    """How many steps :func:`score_items` takes over each item for ``metrics``: context
    precision one, the others two (claims then verification; questions then embedding;
    samples then comparison)."""
    return sum(1 if m == "context_precision" else 2 for m in metrics)


Step = Callable[[Sequence[int], Callable[[int], Awaitable[None]]], Awaitable[None]]


async def _faithfulness(
    scorer: FreeScorer,
    items: Sequence[FreeItem],
    scores: list[dict[FreeMetric, MetricScore]],
    by_passages: Sequence[int],
    step: Step,
) -> None:
    """Faithfulness in two steps: every answer's claims, then every verification (on its
    passages, so sorted by them)."""
    extracted: dict[int, Extracted] = {}

    async def extract(i: int) -> None:
        item = items[i]
        if item.contexts is None:
            scores[i]["faithfulness"] = _undefined(NO_TEXTS)
        elif not item.contexts:
            scores[i]["faithfulness"] = _undefined(
                "nothing was retrieved to check the answer against"
            )
        else:
            got = await scorer.extract_claims(item.question, item.answer)
            if isinstance(got, MetricScore):
                scores[i]["faithfulness"] = got
            else:
                extracted[i] = got

    async def check(i: int) -> None:
        if i in extracted:
            contexts = items[i].contexts or ()
            scores[i]["faithfulness"] = await scorer.check_claims(contexts, extracted[i])

    await step(range(len(items)), extract)
    await step(by_passages, check)


async def _relevancy(
    scorer: FreeScorer,
    items: Sequence[FreeItem],
    scores: list[dict[FreeMetric, MetricScore]],
    step: Step,
    on_step: Callable[[int], None] | None,
) -> None:
    """Answer relevancy in two steps: every answer's questions, then one batch of the
    encoder for all of them (far cheaper than an encoder call per answer)."""
    drafts: dict[int, Draft] = {}

    async def draft(i: int) -> None:
        got = await scorer.relevancy_draft(items[i].question, items[i].answer)
        if isinstance(got, MetricScore):
            scores[i]["answer_relevancy"] = got
        else:
            drafts[i] = got

    await step(range(len(items)), draft)
    order = sorted(drafts)
    done = await scorer.relevancy_scores([drafts[i] for i in order])
    for i, score in zip(order, done, strict=True):
        scores[i]["answer_relevancy"] = score
    if on_step is not None:
        on_step(len(items))


async def _consistency(
    scorer: FreeScorer,
    items: Sequence[FreeItem],
    scores: list[dict[FreeMetric, MetricScore]],
    by_passages: Sequence[int],
    resample: Resampler | None,
    samples: int,
    step: Step,
) -> None:
    """Self-consistency in two steps: every answer drawn again (on its passages, so
    sorted by them), then every comparison."""
    drawn: dict[int, tuple[list[str], _Cost]] = {}

    async def draw(i: int) -> None:
        item = items[i]
        if resample is None:
            scores[i]["self_consistency"] = _undefined(NO_RESAMPLER)
            return
        if not item.answer or not item.answer.strip():
            scores[i]["self_consistency"] = _undefined("no answer to compare")
            return
        cost = _Cost()
        try:
            drawn[i] = (await scorer._counted(resample(item, samples), cost), cost)
        except FATAL_LLM_ERRORS:
            raise
        except LLMError as exc:
            scores[i]["self_consistency"] = _undefined(
                f"{LLM_FAILED}: sampling: {_reason(exc)}", cost
            )

    async def compare(i: int) -> None:
        if i not in drawn:
            return
        texts, cost = drawn[i]
        score = await scorer.self_consistency(items[i].question, items[i].answer, texts)
        scores[i]["self_consistency"] = score.model_copy(
            update={"calls": score.calls + cost.calls, "tokens": score.tokens + cost.tokens}
        )

    await step(by_passages, draw)
    await step(range(len(items)), compare)
