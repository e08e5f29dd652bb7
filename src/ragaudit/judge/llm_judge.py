"""The reference-based LLM judge: given the question, the true answer and the response, is
the response correct? Used only for answers the deterministic matchers left open."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ValidationError

from ragaudit.aio import gather_all
from ragaudit.llm.client import LLMClient, schema_errors, schema_request
from ragaudit.llm.parsing import extract_json, marked_cut, read_cut_object
from ragaudit.llm.types import GenerationParams, Messages, system, user


class Verdict(BaseModel):
    """What the judge must reply."""

    verdict: Literal["Correct", "Incorrect"]
    reason: str = ""


def _shape(reasons: bool) -> str:
    return (
        '{"verdict": "Correct" or "Incorrect", "reason": "<at most eight words>"}'
        if reasons
        else '{"verdict": "Correct" or "Incorrect"}'
    )


def judge_prompt(
    query: str, reference: str, response: str, *, reasons: bool = True, note: str | None = None
) -> Messages:
    """Ask whether ``response`` gives the true answer to ``query``; with ``reasons``, also
    why in a few words (most of the reply's tokens: a small local model writes about ten
    tokens a second, so the demo leaves the reason out). ``note``: why the matchers did
    not credit a response that holds the true answer
    (:attr:`~ragaudit.judge.matchers.Decision.why`: it names another value beside it, or
    seems to deny it), told to the judge so that it reads the response for that."""
    shape = _shape(reasons)
    # Only a declined response's prompt says more, so every other prompt (and its cached
    # reply) stays as it was.
    told = (
        f"\nNote: the response {note}; it is Correct only if it still gives the true answer "
        "as its answer."
        if note
        else ""
    )
    # The instructions come first and never change, so a local model's prompt cache reads
    # them once; only the question, the true answer and the response are new each call.
    return [
        system(
            "You grade answers against a known true answer. You are strict and brief. Is "
            "the response correct, i.e. does it give the true answer (other wording, "
            "formatting or extra detail is fine; a different answer, a refusal or a hedge "
            "without the answer is not)? Reply with JSON only: " + shape
        ),
        user(f"Question: {query}\nTrue answer: {reference}\nResponse: {response}{told}"),
    ]


def parse_verdict(reply: str) -> Verdict:
    """The verdict of a :func:`judge_prompt` reply: its JSON, or such JSON cut at the token
    limit after a complete verdict (a small model's reason runs on; asking again gets the
    same long reason), read as the critiques and the labels are read
    (:func:`~ragaudit.llm.parsing.read_cut_object`): the reason is kept as far as it got
    and marked cut. Raises ``ValueError`` for anything else (no verdict, a verdict cut
    inside its word, one not of the two), so that it is re-asked.

    >>> parse_verdict('{"verdict": "Incorrect", "reason": "it names Ly').reason
    'it names Ly…(cut)'
    """
    # A reply refused is re-asked with the error the JSON reader gives (as
    # acomplete_json words it), so that the re-asks a cache holds stay valid.
    try:
        value = extract_json(reply)
    except ValueError as exc:
        value, error = None, exc
    else:
        try:
            return Verdict.model_validate(value)
        except ValidationError as exc:
            error = ValueError(f"the JSON does not match the schema: {schema_errors(exc)}")
    cut = read_cut_object(reply)  # none found, or a part of a cut one (a list, say)
    if cut is None or "verdict" not in cut:
        raise error
    try:
        return Verdict.model_validate({**cut, "reason": marked_cut(str(cut.get("reason", "")))})
    except ValidationError:  # a verdict cut inside its word, or not one of the two
        raise error from None


@dataclass(frozen=True)
class LLMDecision:
    """The judge's verdict; with k samples, the majority and how many agreed with it."""

    correct: bool
    agreement: float
    samples: int
    reason: str


async def llm_judge(
    llm: LLMClient,
    query: str,
    reference: str,
    response: str,
    samples: int = 1,
    *,
    reasons: bool = True,
    note: str | None = None,
) -> LLMDecision:
    """Judge once, or ``samples`` times (sampled, k cache entries) by majority vote;
    ``note`` as :func:`judge_prompt` takes it."""
    messages = judge_prompt(query, reference, response, reasons=reasons, note=note)
    # Re-asked as acomplete_json re-asks, so that the re-asks a cache holds still count.
    what = schema_request(Verdict)

    async def ask(params: GenerationParams | None = None) -> Verdict:
        return await llm.acomplete_parsed(messages, parse_verdict, what, params, expected="JSON")

    if samples <= 1:
        verdict = await ask()
        return LLMDecision(verdict.verdict == "Correct", 1.0, 1, verdict.reason)
    base = llm.default_params.model_copy(update={"temperature": 0.7})
    verdicts = await gather_all(
        *(
            ask(base.model_copy(update={"sample_index": i, "seed": (base.seed or 0) + i}))
            for i in range(samples)
        )
    )
    yes = sum(v.verdict == "Correct" for v in verdicts)
    correct = yes * 2 > samples
    agreeing = yes if correct else samples - yes
    return LLMDecision(correct, agreeing / samples, samples, verdicts[0].reason)
