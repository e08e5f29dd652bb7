"""What every system under test is to the harness: something that answers one query."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ragaudit.records.models import QueryRecord, RetrievedItem, TokenUsage


class SystemFailure(Exception):
    """A system failed on one query; the harness records the message and goes on."""


@dataclass
class SystemAnswer:
    """One system's answer to one query: the text, what it retrieved, and its token cost."""

    response: str | None
    retrieved: list[RetrievedItem] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=TokenUsage)


class System(Protocol):
    """A system under test. ``answer`` may raise: the harness records the error."""

    name: str

    async def answer(self, query: QueryRecord) -> SystemAnswer:
        """Answer one query."""
        ...

    # Optional: ``async def prepare(self, queries: list[QueryRecord]) -> None`` is awaited
    # once with the queries still to ask, before any ``answer`` (to batch work ahead), and
    # ``def order(self, queries) -> list[QueryRecord]`` may reorder them (e.g. so that
    # queries sharing a retrieved context follow each other, for prompt caches).

    async def aclose(self) -> None:
        """Release connections and threads."""
        ...
