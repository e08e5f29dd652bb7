"""Recorded LLM replies, answered again: a backend that replies to a request exactly as the
real model did when the recording was made (keyed like the LLM cache, by the full request),
and fails on any request that was not recorded. Tests that use it pin what ragaudit does
with the real model's replies, without running the model."""

from __future__ import annotations

import json
from pathlib import Path

from ragaudit.errors import LLMError
from ragaudit.llm.cache import cache_key, request_payload
from ragaudit.llm.model_assets import MODEL_FILENAME
from ragaudit.llm.types import GenerationParams, Messages, RawCompletion


class ReplayBackend:
    """Answers from ``{cache key: reply}``, as the embedded model's backend would key it."""

    kind = "local"
    model = MODEL_FILENAME
    max_concurrency = 1

    def __init__(self, replies: dict[str, str]) -> None:
        self.replies = replies
        self.missing = 0

    @classmethod
    def from_file(cls, path: Path) -> ReplayBackend:
        """The replies recorded in a JSON file."""
        return cls(json.loads(path.read_text(encoding="utf-8")))

    def describe(self) -> str:
        """Where calls go."""
        return "replay:recorded"

    async def acomplete(self, messages: Messages, params: GenerationParams) -> RawCompletion:
        """The recorded reply to this exact request."""
        key = cache_key(request_payload(self.kind, self.model, messages, params))
        text = self.replies.get(key)
        if text is None:
            self.missing += 1
            raise LLMError("no recorded reply for this request (re-record the replies)")
        return RawCompletion(text=text, prompt_tokens=0, completion_tokens=0)

    async def aclose(self) -> None:
        """Nothing to release."""
