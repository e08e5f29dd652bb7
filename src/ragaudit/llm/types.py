"""Value types of the LLM layer: messages, generation parameters, completions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field


class Message(TypedDict):
    """One chat message, as every OpenAI-compatible server takes it."""

    role: Literal["system", "user", "assistant"]
    content: str


Messages = Sequence[Message]


def user(content: str) -> Message:
    """A user message."""
    return {"role": "user", "content": content}


def system(content: str) -> Message:
    """A system message."""
    return {"role": "system", "content": content}


def assistant(content: str) -> Message:
    """An assistant message (a previous reply, e.g. when re-asking)."""
    return {"role": "assistant", "content": content}


class GenerationParams(BaseModel):
    """Sampling parameters of one call; all of them are part of the cache key.

    ``sample_index`` distinguishes the k samples of one request (e.g. judging k times):
    the same request with indices 0..k-1 is k cache entries, so k samples stay k samples
    on a rerun.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(0.0, ge=0, le=2)
    max_tokens: int = Field(512, ge=1)
    top_p: float | None = Field(None, gt=0, le=1)
    seed: int | None = 0
    stop: tuple[str, ...] | None = None
    sample_index: int = Field(0, ge=0)


@dataclass(frozen=True)
class RawCompletion:
    """What a backend returns for one successful call."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None = None
    retries: int = 0
    # Of prompt_tokens, those the server found in its prompt cache (a prefix shared with
    # an earlier call): they cost almost no time, so the model-limit benchmark leaves
    # them out of the processed tokens. 0 where the server does not say.
    cached_prompt_tokens: int = 0


def cached_prompt_tokens(reply: Mapping[str, Any]) -> int:
    """How many of a chat completion's prompt tokens the server took from its prompt
    cache: OpenAI's ``usage.prompt_tokens_details.cached_tokens``, else llama.cpp's
    ``timings.cache_n``; 0 where neither is given or readable, and never more than the
    prompt's tokens.

    >>> cached_prompt_tokens({"usage": {"prompt_tokens": 50,
    ...     "prompt_tokens_details": {"cached_tokens": 32}}})
    32
    >>> cached_prompt_tokens({"usage": {"prompt_tokens": 50}, "timings": {"cache_n": 40}})
    40
    >>> cached_prompt_tokens({"usage": {"prompt_tokens": 5}, "timings": {"cache_n": "x"}})
    0
    """
    usage = reply.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    details = usage.get("prompt_tokens_details")
    found: Any = details.get("cached_tokens") if isinstance(details, Mapping) else None
    if found is None:
        timings = reply.get("timings")
        found = timings.get("cache_n") if isinstance(timings, Mapping) else None
    try:
        cached = max(0, int(found or 0))
        prompt = int(usage.get("prompt_tokens") or 0)
    except (TypeError, ValueError):
        return 0
    return min(cached, prompt) if prompt else cached


@dataclass(frozen=True)
class Completion:
    """A reply with its cost: tokens, whether it came from the cache, and how long it took."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool
    latency_s: float
    finish_reason: str | None = None
