"""Recorded LLM replies, answered again: a backend that replies to a request exactly as the
real model did when the recording was made (keyed like the LLM cache, by the full request),
and fails on any request that was not recorded. Tests that use it pin what ragaudit does
with the real model's replies, without running the model."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from ragaudit.errors import LLMError
from ragaudit.llm.cache import cache_key, request_payload
from ragaudit.llm.client import LLMClient
from ragaudit.llm.model_assets import MODEL_FILENAME
from ragaudit.llm.types import Completion, GenerationParams, Messages, RawCompletion


class ReplayBackend:
    """Answers from ``{cache key: reply}``, as the embedded model's backend would key it."""

    kind = "local"
    model = MODEL_FILENAME
    max_concurrency = 1

    def __init__(self, replies: dict[str, str]) -> None:
        self.replies = replies
        self.missing = 0
        self.asked = 0  # requests received, answered or not

    @classmethod
    def from_file(cls, path: Path) -> ReplayBackend:
        """The replies recorded in a JSON file."""
        return cls(json.loads(path.read_text(encoding="utf-8")))

    def describe(self) -> str:
        """Where calls go."""
        return "replay:recorded"

    async def acomplete(self, messages: Messages, params: GenerationParams) -> RawCompletion:
        """The recorded reply to this exact request."""
        self.asked += 1
        key = cache_key(request_payload(self.kind, self.model, messages, params))
        text = self.replies.get(key)
        if text is None:
            self.missing += 1
            raise LLMError("no recorded reply for this request (re-record the replies)")
        return RawCompletion(text=text, prompt_tokens=0, completion_tokens=0)

    async def aclose(self) -> None:
        """Nothing to release."""


class Recording(LLMClient):
    """A client that notes the cache key of every request it is asked, so that a script
    can record exactly the replies a measurement used (for :class:`ReplayBackend`)."""

    keys: set[str]

    @classmethod
    def around(cls, base: LLMClient) -> Recording:
        """A recording client with ``base``'s backend, cache, meter and parameters."""
        client = cls(
            base.backend, cache=base.cache, meter=base.meter, default_params=base.default_params
        )
        client.keys = set()
        return client

    async def acomplete(
        self, messages: Messages, params: GenerationParams | None = None, *, fresh: bool = False
    ) -> Completion:
        """The client's completion, its request's key noted."""
        payload = request_payload(
            self.backend.kind, self.backend.model, messages, params or self.default_params
        )
        self.keys.add(cache_key(payload))
        return await super().acomplete(messages, params, fresh=fresh)

    def recorded(self, cache_path: Path) -> dict[str, str]:
        """``{cache key: reply}`` of every request this client was asked, from its cache."""
        rows = sqlite3.connect(cache_path).execute("SELECT key, text FROM llm_cache")
        return {k: t for k, t in rows.fetchall() if k in self.keys}


def seed_cache(cache_path: Path, replies: dict[str, str]) -> None:
    """Put recorded replies (``{cache key: reply}``, the same model's to the same requests)
    in a new or existing LLM cache, keeping an entry already there: a measurement started
    from a recording asks the model only what the recording lacks."""
    from ragaudit.llm.cache import LLMCache

    LLMCache(cache_path).close()  # creates the table
    with sqlite3.connect(cache_path) as conn:
        conn.executemany(
            "INSERT OR IGNORE INTO llm_cache (key, backend, model, request, text, "
            "prompt_tokens, completion_tokens, finish_reason) VALUES (?,?,?,?,?,0,0,'stop')",
            [(k, "local", MODEL_FILENAME, "{}", text) for k, text in replies.items()],
        )
