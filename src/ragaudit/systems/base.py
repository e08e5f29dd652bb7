"""What every system under test is to the harness: something that answers one query."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from pydantic import Field

from ragaudit.options import StrictOptions
from ragaudit.records.models import QueryRecord, RetrievedItem, TokenUsage


class SystemOptions(StrictOptions):
    """What every entry of ``systems:`` has, whatever its kind; each kind's module adds its
    own options (:mod:`ragaudit.systems.builtin`, :mod:`ragaudit.systems.adapters`)."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    k: int | None = Field(
        None,
        ge=1,
        le=1000,
        description="Documents retrieved (built-in: given to the generator; default 3). An "
        "adapter is given k only when it is set (else the system keeps its own depth), and "
        "one that cannot take it is an error.",
    )
    timeout_s: float | None = Field(None, gt=0, description="Per-query timeout (else harness).")


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
