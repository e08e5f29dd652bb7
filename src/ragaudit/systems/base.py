"""What every system under test is to the harness: something that answers one query."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import Field, model_validator

from ragaudit.options import MAX_TIMEOUT_S, StrictOptions
from ragaudit.records.models import QueryRecord, RetrievedItem, TokenUsage

# The keys of the one flat class all systems once shared (before each kind had its own),
# and the values that meant "not set" for a kind that had no use for them.
FLAT_DEFAULTS: dict[str, Any] = {
    "retriever": "bm25",
    "text_weight": 0.5,
    "rerank_candidates": None,
    "generator": "concise",
    "llm": None,
    "url": None,
    "method": "POST",
    "headers": {},
    "request": {"query": "{query}"},
    "answer_path": "answer",
    "ids_path": None,
    "contexts_path": None,
    "retries": 2,
    "target": None,
    "id_field": "id",
}


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
    timeout_s: float | None = Field(
        None, gt=0, le=MAX_TIMEOUT_S, description="Per-query timeout (else harness)."
    )
    repeat: int = Field(
        1,
        ge=1,
        le=1000,
        description="Times each query is asked (run --repeat N overrides it): each asking is "
        "judged, and analyze gives every query's pass rate and the share of flaky queries "
        "(right in some repeats, wrong in others).",
    )
    grid: dict[str, list[Any]] | None = Field(
        None,
        description="Options to vary, each with its values (e.g. {retriever: [bm25, dense], "
        "k: [1, 3, 5]}): the entry becomes one system per combination, named "
        "<name>-<values> (ragaudit.systems.options.expand_grids).",
    )

    @model_validator(mode="before")
    @classmethod
    def _unset_keys_of_other_kinds(cls, data: Any) -> Any:
        """Before each kind had its own options, every entry carried every key; run
        directories (ragaudit.yaml, provenance.json) written then hold the other kinds'
        keys at their "not set" values. Those are dropped so such files still load; a key
        of another kind with a real value stays an error."""
        if not isinstance(data, dict):
            return data
        return {
            key: value
            for key, value in data.items()
            if key in cls.model_fields or key not in FLAT_DEFAULTS or value != FLAT_DEFAULTS[key]
        }

    @model_validator(mode="after")
    def _grid_expands(self) -> SystemOptions:
        """A grid is checked where it is written, so that a bad value names its line;
        ragaudit.yaml's loader expands it into the systems."""
        if self.grid:
            from ragaudit.systems.options import expand_grid  # the kinds import this module

            expand_grid(self)
        return self


class SystemFailure(Exception):
    """A system failed on one query; the harness records the message and goes on."""


@dataclass
class SystemAnswer:
    """One system's answer to one query: the text, what it retrieved, and its token cost."""

    response: str | None
    retrieved: list[RetrievedItem] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=TokenUsage)


@dataclass(frozen=True)
class Answer:
    """What a Python callable under test may return (``ra.Answer``): the answer's text and
    the ids of the documents it retrieved (best first), and optionally their texts, so
    that ragaudit can say whether retrieval or generation went wrong. An id is a
    non-empty string or an integer (recorded as its digits), a text a string (None: not
    known), as :mod:`ragaudit.records.values` rules; another value (None as an id, a
    float, a list) is that answer's error, in one line naming the system and the value."""

    text: str | None
    retrieved_ids: Sequence[str | int] = field(default_factory=list)
    contexts: Sequence[str | None] | None = None

    def __post_init__(self) -> None:
        for name in ("retrieved_ids", "contexts"):
            value = getattr(self, name)
            if isinstance(value, str | bytes) or (
                value is not None and not isinstance(value, list | tuple)
            ):
                raise TypeError(
                    f"Answer.{name} must be a list of strings, not {type(value).__name__} "
                    f"(a single id is [{value!r}])"
                )


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
    # ``answer`` may take a keyword ``repeat: int`` (0 for a query's first asking): with
    # ``run --repeat N`` such a system is told which asking each call is, so that a
    # system that samples draws a different, reproducible answer each time (the built-in
    # one seeds its LLM with it); a system without it is simply asked N times.

    async def aclose(self) -> None:
        """Release connections and threads."""
        ...


@dataclass(frozen=True, slots=True)
class Hit:
    """A retrieved document, with the score and text of its best chunk."""

    doc_id: str
    score: float
    text: str


class Retriever(Protocol):
    """What a built-in RAG system needs from a retriever."""

    name: str

    def retrieve(self, query: str, k: int = 1) -> list[Hit]:
        """The top ``k`` documents for ``query``, best first."""
        ...
