"""Usage accounting: calls, cache hits, tokens, time and money, per step of a run.

A :class:`UsageMeter` is shared by every client of a command. Steps are entered with
``with meter.step("generate"):``; the figures are printed at the end of the command and
merged into ``<run>/usage.json`` so the report can show where the calls, the time and the
money went. Tokens are counted per model as well (a step can ask several: the systems'
models in ``run``), and per named part of a step (:func:`usage_part`: each system of
``run``), because a price is per model.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from ragaudit.llm.prices import Cost, ModelPrice, PriceUsed, model_cost, total_cost
from ragaudit.records.io import atomic_write_json

_current_step: contextvars.ContextVar[str] = contextvars.ContextVar(
    "ragaudit_step", default="other"
)
# The named part of a step a call belongs to (a system of ``run``), "" outside any.
_current_part: contextvars.ContextVar[str] = contextvars.ContextVar("ragaudit_part", default="")


@contextlib.contextmanager
def usage_part(name: str) -> Iterator[None]:
    """Count every LLM call inside the block (in this task and the tasks it starts) under
    part ``name`` of its step as well: what one system of ``run`` cost."""
    token = _current_part.set(name)
    try:
        yield
    finally:
        _current_part.reset(token)


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
class ModelUsage:
    """What one model was asked within a step (or a part of one): real backend calls and
    their tokens (what is billed), and the calls the cache answered (free)."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, other: ModelUsage) -> None:
        """Accumulate ``other`` into this one."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def _merge_models(into: dict[str, ModelUsage], other: Mapping[str, ModelUsage]) -> None:
    for model, usage in other.items():
        into.setdefault(model, ModelUsage()).add(usage)


@dataclass
class StepUsage:
    """Counters of one step. ``calls`` are real backend calls; cache hits cost none.
    ``models``: the same per model (the calls' tokens add up to the step's); ``parts``:
    per named part of the step (a system of ``run``), per model. Files written before
    issue 38 have neither."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    failures: int = 0
    oversized: int = 0  # of the failures: replies larger than the request could need
    # Of prompt_tokens, those the server took from its prompt cache (a shared prefix).
    cached_prompt_tokens: int = 0
    llm_seconds: float = 0.0
    wall_seconds: float = 0.0
    models: dict[str, ModelUsage] = field(default_factory=dict)
    parts: dict[str, dict[str, ModelUsage]] = field(default_factory=dict)

    def add(self, other: StepUsage) -> None:
        """Accumulate ``other`` into this one."""
        for f in fields(self):
            if f.name == "models":
                _merge_models(self.models, other.models)
            elif f.name == "parts":
                for part, models in other.parts.items():
                    _merge_models(self.parts.setdefault(part, {}), models)
            else:
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def copy(self) -> StepUsage:
        """A copy that shares no counter with this one."""
        return replace(
            self,
            models={m: replace(u) for m, u in self.models.items()},
            parts={p: {m: replace(u) for m, u in ms.items()} for p, ms in self.parts.items()},
        )


class ModelCost(Cost):
    """What one model cost within a step, and the price it was computed at (null when
    the model has no known price)."""

    price: PriceUsed | None = Field(None, description="the price used, and where it came from")


class StepCost(Cost):
    """What one step cost: the sum of its models' costs (null when one of them with
    billed tokens has no price), per model, and per part (a system of ``run``)."""

    models: dict[str, ModelCost] = Field(default_factory=dict)
    parts: dict[str, Cost] = Field(default_factory=dict)


def _models_cost(
    models: Mapping[str, ModelUsage], prices: Mapping[str, ModelPrice] | None
) -> dict[str, ModelCost]:
    out: dict[str, ModelCost] = {}
    for model, usage in models.items():
        cost, price = model_cost(model, usage.prompt_tokens, usage.completion_tokens, prices)
        out[model] = ModelCost(**cost.model_dump(), price=price)
    return out


def step_cost(usage: StepUsage, prices: Mapping[str, ModelPrice] | None = None) -> StepCost:
    """What ``usage`` cost at ``prices`` (the configuration's, over the default table):
    each model's billed tokens at its price, summed exactly; each part the same. Cache
    hits cost nothing.

    >>> usage = StepUsage(models={"openai:gpt-4o-mini": ModelUsage(1, 0, 1000, 500)})
    >>> step_cost(usage).usd
    0.00045
    >>> usage.models["openai:my-model"] = ModelUsage(1, 0, 10, 10)
    >>> step_cost(usage).reason
    'no price for openai:my-model: give it under llm.prices (USD per million tokens)'
    """
    models = _models_cost(usage.models, prices)
    total = total_cost(models.values())
    if not usage.models and usage.prompt_tokens + usage.completion_tokens:
        total = Cost(usd=None, reason="its tokens were recorded without their model")
    parts = {
        part: total_cost(_models_cost(ms, prices).values()) for part, ms in usage.parts.items()
    }
    return StepCost(**total.model_dump(), models=models, parts=parts)


class UsageFile(BaseModel):
    """usage.json: the usage of every step of a run that called the LLM, by step name
    (a step run again replaces its entry), what each cost at the prices of the command
    that ran it, and the total of those costs."""

    steps: dict[str, StepUsage] = Field(default_factory=dict)
    costs: dict[str, StepCost] = Field(
        default_factory=dict, description="per step: its cost (absent: written before issue 38)"
    )
    total: Cost | None = Field(None, description="the sum of the steps' costs")

    def total_cost(self) -> Cost:
        """The sum of every step's cost; null with a reason when a step has none."""
        missing = [name for name in self.steps if name not in self.costs]
        if missing:
            return Cost(usd=None, reason=f"step {missing[0]} was recorded without its cost")
        return total_cost(self.costs[name] for name in self.steps)

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
    """Thread-safe per-step usage counters. ``prices``: the configuration's (llm.prices),
    over the default table, for what the steps cost."""

    def __init__(self, prices: Mapping[str, ModelPrice] | None = None) -> None:
        self._lock = threading.Lock()
        self.steps: dict[str, StepUsage] = {}
        self.prices: dict[str, ModelPrice] = dict(prices or {})

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

    def _model_counters(self, usage: StepUsage, model: str) -> list[ModelUsage]:
        counters = [usage.models.setdefault(model, ModelUsage())]
        part = _current_part.get()
        if part:
            counters.append(usage.parts.setdefault(part, {}).setdefault(model, ModelUsage()))
        return counters

    def record_call(
        self,
        *,
        prompt_tokens: int,
        completion_tokens: int,
        seconds: float,
        retries: int = 0,
        model: str = "unknown",
        cached_prompt_tokens: int = 0,
    ) -> None:
        """Count one real backend call of ``model`` (as llm.model names it);
        ``cached_prompt_tokens`` of its prompt tokens came from the server's prompt cache."""
        with self._lock:
            usage = self._get(None)
            usage.calls += 1
            usage.prompt_tokens += prompt_tokens
            usage.cached_prompt_tokens += cached_prompt_tokens
            usage.completion_tokens += completion_tokens
            usage.llm_seconds += seconds
            usage.retries += retries
            for counter in self._model_counters(usage, model):
                counter.calls += 1
                counter.prompt_tokens += prompt_tokens
                counter.completion_tokens += completion_tokens

    def record_cache_hit(self, model: str = "unknown") -> None:
        """Count one call of ``model`` answered by the cache."""
        with self._lock:
            usage = self._get(None)
            usage.cache_hits += 1
            for counter in self._model_counters(usage, model):
                counter.cache_hits += 1

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
            return {name: usage.copy() for name, usage in self.steps.items()}

    def costs(self) -> dict[str, StepCost]:
        """What each step cost at the meter's prices."""
        return {name: step_cost(usage, self.prices) for name, usage in self.snapshot().items()}

    def write(self, path: Path) -> None:
        """Merge this command's steps, and their costs, into ``path`` (a step run again
        replaces its entry); the total is the sum of every step's cost."""
        usage = UsageFile.read(path)
        usage.steps.update(self.snapshot())
        usage.costs.update(self.costs())
        usage.total = usage.total_cost()
        atomic_write_json(path, usage.model_dump(exclude_none=False))
