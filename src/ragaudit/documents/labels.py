"""The question-type labeller of "Know Your RAG": an LLM reads a (context, question) pair
and says what the context gives as the answer: one simple value (``fact_single``), a
composite answer (``summary``), an answer only reasoning reaches (``reasoning``), or none
(``unanswerable``).

Zero-shot: the prompt describes the four labels and nothing else. A reply must be JSON
naming one of them (case, spaces and hyphens forgiven); anything else is re-asked, and a
reply that stays unusable is recorded as undecided with its reason, never guessed.

A *rater* is one way of asking: a model, a prompt phrasing and a sample index. Several
raters over the same pairs are what agreement is measured on (``analysis/agreement.py``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pydantic import BaseModel, ValidationError, field_validator

from ragaudit.aio import gather_all
from ragaudit.errors import FATAL_LLM_ERRORS, LLMError
from ragaudit.llm.client import LLMClient
from ragaudit.llm.parsing import CUT, extract_json, marked_cut, read_cut_object
from ragaudit.llm.types import GenerationParams, Messages, system, user
from ragaudit.records.models import LABELS, LabelPair, LabelRecord, QuestionLabel

# Enough for the label and a reason of about eight words. The label comes first in the
# reply, so a reply cut here still names it: the label is kept, the reason as far as it
# got. A rambling small model (its reasons ran to 60 tokens) cannot make labelling slow.
MAX_TOKENS = 40
# Sampled raters need different replies to disagree at all; the LLM judge samples so too.
SAMPLE_TEMPERATURE = 0.7

_REPLY_SHAPE = (
    '{"label": "fact_single" or "summary" or "reasoning" or '
    '"unanswerable", "reason": "<at most eight words>"}'
)
_REPLY = f"Reply with JSON only: {_REPLY_SHAPE}"
# What a re-ask tells the model to reply with: the prompt's own shape.
LABEL_REPLY = f"JSON: {_REPLY_SHAPE}"

# The instructions come first and never change, and the context comes before the question,
# so a local model's prompt cache reads the instructions once and each context once for
# all of its questions.
_PHRASINGS: dict[str, str] = {
    "default": (
        "You sort questions by what a given context says about their answer. Pick one label:\n"
        "fact_single: the context states the complete answer, and it is one simple value "
        "(a name, a number, a date, a place) that is either right or wrong.\n"
        "summary: the context states the complete answer, and it is made of several parts "
        "(a list, a description, a procedure); a shorter answer would be partly right.\n"
        "reasoning: the context does not state the answer, but it follows from what the "
        "context says by simple reasoning.\n"
        "unanswerable: the context neither states the answer nor lets one work it out.\n" + _REPLY
    ),
    "steps": (
        "Read the context, then the question, and decide in this order.\n"
        "1. If nothing in the context gives or implies the answer, the label is "
        "unanswerable.\n"
        "2. Else, if the answer must be worked out (compared, counted, concluded) because "
        "the context does not say it in so many words, the label is reasoning.\n"
        "3. Else the context says the answer. If the answer is a single value (one name, "
        "number, date or place), the label is fact_single.\n"
        "4. Else (several items, an explanation, steps) the label is summary.\n" + _REPLY
    ),
}
PHRASINGS: tuple[str, ...] = tuple(_PHRASINGS)

_SEPARATORS = re.compile(r"[\s\-]+")


class LabelReply(BaseModel):
    """What the labeller must reply: one of the four labels, and why in a few words."""

    label: QuestionLabel
    reason: str = ""

    @field_validator("label", mode="before")
    @classmethod
    def _forgive_spelling(cls, value: object) -> object:
        # "Fact single" and "fact-single" name a label unambiguously; anything else is
        # left for the schema to refuse, so that it is re-asked.
        if isinstance(value, str):
            return _SEPARATORS.sub("_", value.strip().lower())
        return value


def parse_label_reply(reply: str) -> LabelReply:
    """The label and reason of ``reply``: JSON as asked, or the start of such JSON cut at
    the token limit, whose label is complete (read by the one reader of cut replies,
    :func:`~ragaudit.llm.parsing.read_cut_object`: the reason is kept as far as it got and
    marked cut), or the bare label. Raises ``ValueError`` for anything else (no JSON, no
    label, a label not of the four), so that it is re-asked."""
    named = ValueError(f"the reply must name one label of {', '.join(LABELS)}")
    try:
        value = extract_json(reply)
    except ValueError as exc:
        value, error = None, exc
    else:
        error = named
    if isinstance(value, dict) and "label" in value:
        try:
            return LabelReply.model_validate(value)
        except ValidationError:
            raise named from None
    cut = read_cut_object(reply)  # none found, or a part of a cut one (a list, say)
    label = cut.get("label") if cut is not None else None
    if isinstance(label, str) and not label.endswith(CUT):
        assert cut is not None
        try:
            return LabelReply.model_validate(
                {**cut, "reason": marked_cut(str(cut.get("reason", "")).rstrip())}
            )
        except ValidationError:  # a complete label, not one of the four
            raise named from None
    bare = _SEPARATORS.sub("_", reply.strip().strip("\"'`.").strip().lower())
    if bare in LABELS:  # the label alone, without the JSON around it
        return LabelReply.model_validate({"label": bare})
    if isinstance(value, dict) or value is not None:
        raise named  # JSON, but no label in it
    raise error  # no JSON, or a label cut inside its word


def label_prompt(context: str, question: str, phrasing: str = "default") -> Messages:
    """The messages that ask for the label of (``context``, ``question``) in ``phrasing``."""
    try:
        instructions = _PHRASINGS[phrasing]
    except KeyError:
        raise ValueError(f"unknown phrasing {phrasing!r}: use {', '.join(PHRASINGS)}") from None
    return [
        system(instructions),
        user(f"Context:\n{context.strip()}\n\nQuestion: {question.strip()}"),
    ]


@dataclass(frozen=True)
class Rater:
    """One way of asking for labels: a model, a prompt phrasing and, for sampled runs, the
    sample index (its own seed, at :data:`SAMPLE_TEMPERATURE`)."""

    model: str
    phrasing: str = "default"
    sample: int | None = None

    @property
    def name(self) -> str:
        """``model:phrasing`` and ``#n`` for the n-th sample (from 1), e.g.
        ``local:default#2``: what labels.jsonl and the agreement tables call the rater."""
        tail = f"#{self.sample + 1}" if self.sample is not None else ""
        return f"{self.model}:{self.phrasing}{tail}"

    def params(self, base: GenerationParams) -> GenerationParams:
        """The generation parameters of this rater's calls."""
        update: dict[str, object] = {"max_tokens": MAX_TOKENS}
        if self.sample is not None:
            update |= {
                "temperature": SAMPLE_TEMPERATURE,
                "sample_index": self.sample,
                "seed": (base.seed or 0) + self.sample,
            }
        return base.model_copy(update=update)


def raters_for(models: Iterable[str], phrasings: Iterable[str], samples: int) -> list[Rater]:
    """Every rater of a labelling command: each model in each phrasing, once (at the
    configured temperature) or ``samples`` times sampled."""
    out = []
    for model in dict.fromkeys(models):
        for phrasing in dict.fromkeys(phrasings):
            if phrasing not in _PHRASINGS:
                raise ValueError(f"unknown phrasing {phrasing!r}: use {', '.join(PHRASINGS)}")
            if samples <= 1:
                out.append(Rater(model, phrasing))
            else:
                out.extend(Rater(model, phrasing, i) for i in range(samples))
    return out


async def label_one(
    llm: LLMClient,
    rater: Rater,
    pair: LabelPair,
    context: str,
    params: GenerationParams | None = None,
) -> LabelRecord:
    """``rater``'s label of ``pair`` (whose context is ``context``); undecided, with the
    reason, when the model's replies stay unusable or the model cannot be reached.
    ``params``: the rater's generation parameters, if already made. A refused key or an
    unknown model (:data:`~ragaudit.errors.FATAL_LLM_ERRORS`) is raised: every other call
    would fail the same way, so it stops the step rather than make every pair undecided."""
    messages = label_prompt(context, pair.question, rater.phrasing)
    try:
        reply = await llm.acomplete_parsed(
            messages,
            parse_label_reply,
            LABEL_REPLY,
            params or rater.params(llm.default_params),
        )
    except FATAL_LLM_ERRORS:
        raise
    except LLMError as exc:
        reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        return LabelRecord(pair_id=pair.pair_id, rater=rater.name, label=None, reason=reason)
    return LabelRecord(
        pair_id=pair.pair_id, rater=rater.name, label=reply.label, reason=reply.reason.strip()
    )


async def label_pairs(
    clients: dict[str, LLMClient],
    raters: list[Rater],
    pairs: list[LabelPair],
    contexts: dict[str, str],
    *,
    on_done: Callable[[LabelRecord], None] | None = None,
) -> list[LabelRecord]:
    """Every rater's label of every pair, in the order that reuses a local model's prompt
    cache (model by model, then context by context, its questions, then the raters), with
    as many calls in flight as each model's backend takes. ``contexts`` maps a pair id to
    its context text; ``clients`` a model name to its client. A fatal LLM error (a refused
    key, an unknown model) stops every worker and is raised."""
    by_model: dict[str, list[Rater]] = {}
    for rater in raters:
        by_model.setdefault(rater.model, []).append(rater)
    ordered = sorted(pairs, key=lambda p: (p.gold_ids, p.pair_id))
    out: list[LabelRecord] = []
    for model, model_raters in by_model.items():
        llm = clients[model]
        params = {r: r.params(llm.default_params) for r in model_raters}
        jobs = [(r, p) for p in ordered for r in model_raters]
        queue: asyncio.Queue[tuple[Rater, LabelPair]] = asyncio.Queue()
        for job in jobs:
            queue.put_nowait(job)

        async def worker(
            llm: LLMClient = llm,
            queue: asyncio.Queue[tuple[Rater, LabelPair]] = queue,
            params: dict[Rater, GenerationParams] = params,
        ) -> None:
            while not queue.empty():
                rater, pair = queue.get_nowait()
                record = await label_one(llm, rater, pair, contexts[pair.pair_id], params[rater])
                out.append(record)
                if on_done is not None:
                    on_done(record)

        workers = max(1, int(getattr(llm.backend, "max_concurrency", 1)))
        await gather_all(*(worker() for _ in range(min(workers, len(jobs)) or 1)))
    return out


__all__ = [
    "LABELS",
    "LABEL_REPLY",
    "MAX_TOKENS",
    "PHRASINGS",
    "SAMPLE_TEMPERATURE",
    "LabelReply",
    "Rater",
    "label_one",
    "label_pairs",
    "label_prompt",
    "parse_label_reply",
    "raters_for",
]
