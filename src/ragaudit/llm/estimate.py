"""What a step would ask an LLM before it asks anything (``--dry-run``): requests, tokens
and cost per line of work, and how each figure was come by.

A request the cache already holds is free and its tokens are known; one it does not hold
is counted as billed, its tokens measured where earlier calls of the same kind were (the
cache, the system's recorded answers) and estimated otherwise, with the estimate named.
:class:`CacheProbe` reads a cache file without writing it (nor creating one).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ragaudit.frames import frame
from ragaudit.llm.cache import cache_key, request_payload
from ragaudit.llm.options import LLMConfig
from ragaudit.llm.prices import Cost, ModelPrice, model_cost, total_cost
from ragaudit.llm.types import GenerationParams, Messages

if TYPE_CHECKING:
    import pandas as pd


def backend_identity(config: LLMConfig) -> tuple[str, str]:
    """The (backend, model) pair a cache key of ``config``'s model is made of, as its
    backend names itself, without making the backend (nothing is loaded or dialled)."""
    if config.backend == "local":
        from ragaudit.llm.model_assets import MODEL_FILENAME

        return "local", Path(config.model_name).name if config.model_name else MODEL_FILENAME
    return config.backend, config.model_name


class CacheProbe:
    """Read-only questions to one model's cache file: is a request in it, and how many
    tokens did its calls take. A file that does not exist is an empty cache; nothing is
    ever written."""

    def __init__(self, path: Path | None, config: LLMConfig) -> None:
        self.config = config
        self.backend, self.model = backend_identity(config)
        self._conn: sqlite3.Connection | None = None
        if path is not None and path.exists() and config.cache:
            self._conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)

    def tokens(self, messages: Messages, params: GenerationParams) -> tuple[int, int] | None:
        """The (prompt, completion) tokens of the stored reply to this exact request, or
        None when the cache does not hold one (it would be asked)."""
        if self._conn is None:
            return None
        key = cache_key(request_payload(self.backend, self.model, messages, params))
        row = self._conn.execute(
            "SELECT prompt_tokens, completion_tokens, text FROM llm_cache WHERE key = ?", (key,)
        ).fetchone()
        if row is None or not str(row[2]).strip():
            return None  # an empty reply is asked again, never replayed
        return int(row[0]), int(row[1])

    def mean_tokens(self, containing: str | None = None) -> tuple[float, float, int] | None:
        """The mean prompt and completion tokens of this model's stored calls (those
        whose messages hold the text ``containing``, when given: calls of one kind, since a
        model's cache holds every step's calls, a wording's and a verdict's beside an
        answer's), and how many there are; None when there is none."""
        if self._conn is None:
            return None
        sql = (
            "SELECT AVG(prompt_tokens), AVG(completion_tokens), COUNT(*) FROM llm_cache "
            "WHERE backend = ? AND model = ?"
        )
        params: tuple[str, ...] = (self.backend, self.model)
        if containing is not None:
            # As the request is stored: JSON, not ASCII-escaped.
            sql += " AND instr(request, ?) > 0"
            params += (json.dumps(containing, ensure_ascii=False)[1:-1],)
        row = self._conn.execute(sql, params).fetchone()
        if not row or not row[2]:
            return None
        return float(row[0]), float(row[1]), int(row[2])

    def close(self) -> None:
        """Close the file."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> CacheProbe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EstimateLine(BaseModel):
    """One line of work of a dry run: a system to ask, a judge, a generation."""

    what: str = Field(description="the work: 'system rag', 'judge rag', 'documents', ...")
    model: str | None = Field(
        description="the model ragaudit would ask (llm.model's name); null: the work asks no "
        "LLM of ragaudit's (an adapter answers with its own)"
    )
    items: int = Field(ge=0, description="what it would do: askings, answers to judge, pairs")
    requests: int = Field(ge=0, description="LLM requests the backend would answer (billed)")
    cached: int = Field(ge=0, description="LLM requests the cache would answer (free)")
    prompt_tokens: int = Field(ge=0, description="input tokens of the billed requests")
    completion_tokens: int = Field(ge=0, description="output tokens of the billed requests")
    tokens_from: str = Field(description="how the tokens were come by: measured or estimated")
    cost: Cost = Field(description="the billed tokens at the model's price")


def priced_line(
    *,
    what: str,
    model: str | None,
    items: int,
    requests: int,
    cached: int,
    prompt_tokens: float,
    completion_tokens: float,
    tokens_from: str,
    prices: Mapping[str, ModelPrice] | None,
) -> EstimateLine:
    """An :class:`EstimateLine` with its cost at ``prices`` (tokens rounded up); an
    adapter's line (no model) has no cost, and says why."""
    prompt, completion = round(prompt_tokens + 0.499), round(completion_tokens + 0.499)
    if model is None:
        cost = Cost(
            usd=None, reason="answers with its own model, which ragaudit neither asks nor prices"
        )
    else:
        cost = model_cost(model, prompt, completion, prices)[0]
    return EstimateLine(
        what=what,
        model=model,
        items=items,
        requests=requests,
        cached=cached,
        prompt_tokens=prompt,
        completion_tokens=completion,
        tokens_from=tokens_from,
        cost=cost,
    )


class DryRun(BaseModel):
    """What a step would spend, asked with ``dry_run=True`` (``--dry-run``): nothing was
    asked and nothing written. ``requests`` and ``cost`` add up its lines (an adapter's
    own model is not ragaudit's and is left out of the cost, with a note)."""

    step: str = Field(description="the step: generate, run, judge")
    lines: list[EstimateLine] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="what the figures rest on")

    @property
    def requests(self) -> int:
        """LLM requests the backends would answer: what is billed."""
        return sum(line.requests for line in self.lines)

    @property
    def cached(self) -> int:
        """LLM requests the cache would answer, free."""
        return sum(line.cached for line in self.lines)

    @property
    def prompt_tokens(self) -> int:
        """Input tokens of the billed requests."""
        return sum(line.prompt_tokens for line in self.lines)

    @property
    def completion_tokens(self) -> int:
        """Output tokens of the billed requests."""
        return sum(line.completion_tokens for line in self.lines)

    @property
    def cost(self) -> Cost:
        """The lines' costs added exactly (the lines of ragaudit's models); null with the
        reason when one of them has no price."""
        return total_cost(line.cost for line in self.lines if line.model is not None)

    def rows(self) -> list[dict[str, Any]]:
        """One row per line: what, model, items, requests, cached, tokens, usd, how."""
        return [
            {
                "what": line.what,
                "model": line.model,
                "items": line.items,
                "requests": line.requests,
                "cached": line.cached,
                "prompt_tokens": line.prompt_tokens,
                "completion_tokens": line.completion_tokens,
                "usd": line.cost.usd,
                "tokens_from": line.tokens_from,
            }
            for line in self.lines
        ]

    def to_pandas(self) -> pd.DataFrame:
        """:meth:`rows` as a DataFrame (a missing figure is <NA>)."""
        return frame(self.rows())

    def to_json(self) -> str:
        """The estimate with its totals, as JSON."""
        data = self.model_dump(mode="json")
        data.update(
            requests=self.requests,
            cached=self.cached,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cost=self.cost.model_dump(mode="json"),
        )
        return json.dumps(data, indent=2)

    def __repr__(self) -> str:
        """Short in a notebook: the step, its requests, tokens and cost."""
        return (
            f"<DryRun {self.step}: {self.requests} requests ({self.cached} from the cache), "
            f"{self.prompt_tokens + self.completion_tokens} tokens, cost {self.cost}>"
        )


__all__ = ["CacheProbe", "DryRun", "EstimateLine", "backend_identity", "priced_line"]
