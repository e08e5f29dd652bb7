"""Usage accounting: calls, cache hits, tokens and time, per step of a run.

A :class:`UsageMeter` is shared by every client of a command. Steps are entered with
``with meter.step("generate"):``; the figures are printed at the end of the command and
merged into ``<run>/usage.json`` so the report can show where the calls and the time went.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, fields, replace
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from ragaudit.records.io import atomic_write_json

_current_step: contextvars.ContextVar[str] = contextvars.ContextVar(
    "ragaudit_step", default="other"
)


@dataclass
class CallTally:
    """The requests made inside one :func:`tally` block, cached ones included, with their
    tokens: what one piece of work (e.g. one generated pair) costs, however much of it a
    rerun finds in the cache."""

    calls: int = 0
    tokens: int = 0


# Every tally open in this context, innermost last: a request counts in each of them.
_open_tallies: contextvars.ContextVar[tuple[CallTally, ...]] = contextvars.ContextVar(
    "ragaudit_tallies", default=()
)


@contextlib.contextmanager
def tally() -> Iterator[CallTally]:
    """Count every LLM request made inside the block (in this task and the tasks it
    starts), answered by the backend or by the cache. Tallies nest: a request counts in
    every open one."""
    counter = CallTally()
    token = _open_tallies.set((*_open_tallies.get(), counter))
    try:
        yield counter
    finally:
        _open_tallies.reset(token)


def count_request(prompt_tokens: int, completion_tokens: int) -> None:
    """Add one request to every open :func:`tally`."""
    for counter in _open_tallies.get():
        counter.calls += 1
        counter.tokens += prompt_tokens + completion_tokens


@dataclass
class StepUsage:
    """Counters of one step. ``calls`` are real backend calls; cache hits cost none."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    failures: int = 0
    oversized: int = 0  # of the failures: replies larger than the request could need
    llm_seconds: float = 0.0
    wall_seconds: float = 0.0

    def add(self, other: StepUsage) -> None:
        """Accumulate ``other`` into this one."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


class UsageFile(BaseModel):
    """usage.json: the usage of every step of a run that called the LLM, by step name
    (a step run again replaces its entry)."""

    steps: dict[str, StepUsage] = Field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> UsageFile:
        """The file at ``path``; an empty one where there is none, or it cannot be read
        (it is then written anew)."""
        if not path.exists():
            return cls()
        try:
            return cls.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (json.JSONDecodeError, ValidationError):
            return cls()


class UsageMeter:
    """Thread-safe per-step usage counters."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.steps: dict[str, StepUsage] = {}

    def _get(self, step: str | None) -> StepUsage:
        name = step or _current_step.get()
        if name not in self.steps:
            self.steps[name] = StepUsage()
        return self.steps[name]

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[StepUsage]:
        """Attribute every call inside the block to step ``name`` and time the block."""
        token = _current_step.set(name)
        with self._lock:
            usage = self._get(name)
        start = time.perf_counter()
        try:
            yield usage
        finally:
            elapsed = time.perf_counter() - start
            with self._lock:
                usage.wall_seconds += elapsed
            _current_step.reset(token)

    def record_call(
        self, *, prompt_tokens: int, completion_tokens: int, seconds: float, retries: int = 0
    ) -> None:
        """Count one real backend call."""
        with self._lock:
            usage = self._get(None)
            usage.calls += 1
            usage.prompt_tokens += prompt_tokens
            usage.completion_tokens += completion_tokens
            usage.llm_seconds += seconds
            usage.retries += retries

    def record_cache_hit(self) -> None:
        """Count one call answered by the cache."""
        with self._lock:
            self._get(None).cache_hits += 1

    def record_failure(self, *, oversized: bool = False) -> None:
        """Count one call that failed for good; ``oversized`` when its reply was refused as
        larger than the request could need (counted apart, so that a server ignoring
        max_tokens shows)."""
        with self._lock:
            usage = self._get(None)
            usage.failures += 1
            usage.oversized += int(oversized)

    def __repr__(self) -> str:
        """What a notebook shows: the calls and tokens of each step so far.

        >>> meter = UsageMeter()
        >>> with meter.step("judge"):
        ...     meter.record_call(prompt_tokens=120, completion_tokens=30, seconds=0.5)
        >>> meter
        UsageMeter(judge: 1 call, 0 from the cache, 150 tokens, 0 failed)
        """
        parts = [
            f"{name}: {u.calls} call{'s' if u.calls != 1 else ''}, {u.cache_hits} from the "
            f"cache, {u.prompt_tokens + u.completion_tokens} tokens, {u.failures} failed"
            for name, u in self.snapshot().items()
        ]
        return f"UsageMeter({'; '.join(parts) or 'no LLM call yet'})"

    def total(self) -> StepUsage:
        """All steps added together."""
        total = StepUsage()
        with self._lock:
            for usage in self.steps.values():
                total.add(usage)
        return total

    def snapshot(self) -> dict[str, StepUsage]:
        """A copy of the counters, one entry per step."""
        with self._lock:
            return {name: replace(usage) for name, usage in self.steps.items()}

    def write(self, path: Path) -> None:
        """Merge this command's steps into ``path`` (a step run again replaces its entry)."""
        usage = UsageFile.read(path)
        usage.steps.update(self.snapshot())
        atomic_write_json(path, usage.model_dump())
