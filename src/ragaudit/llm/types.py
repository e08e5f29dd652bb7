"""Value types of the LLM layer: messages, generation parameters, completions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict

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


@dataclass(frozen=True)
class Completion:
    """A reply with its cost: tokens, whether it came from the cache, and how long it took."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool
    latency_s: float
    finish_reason: str | None = None
