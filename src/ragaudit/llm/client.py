"""One LLM interface for every backend: plain and structured completions, sync and async,
with the persistent cache, bounded concurrency and usage accounting in one place.

Backends only know how to make one call (with their own retries); everything that must
behave the same whatever the model is lives here.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import time
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar

from pydantic import TypeAdapter, ValidationError

from ragaudit.aio import gather_all, new_event_loop
from ragaudit.errors import LLMError, LLMReplyTooLongError, StructuredOutputError
from ragaudit.llm.cache import LLMCache, cache_key, request_payload
from ragaudit.llm.parsing import extract_json, parse_lines
from ragaudit.llm.types import (
    Completion,
    GenerationParams,
    Messages,
    RawCompletion,
    assistant,
    user,
)
from ragaudit.llm.usage import UsageMeter, count_request
from ragaudit.secrets import redact, redact_known

T = TypeVar("T")


class Backend(Protocol):
    """What a backend provides: one call, its identity for the cache, and its parallelism."""

    kind: str
    model: str
    max_concurrency: int

    def describe(self) -> str:
        """Where calls go, for messages (never a secret)."""
        ...

    async def acomplete(self, messages: Messages, params: GenerationParams) -> RawCompletion:
        """Make one call, retrying what is worth retrying; raise an LLMError otherwise."""
        ...

    async def aclose(self) -> None:
        """Release connections bound to the running event loop."""
        ...


def schema_errors(exc: ValidationError, limit: int = 3) -> str:
    """The first ``limit`` errors of a validation, one clause each (``verdict: Input should
    be 'Correct' or 'Incorrect'``): what a re-ask tells the model was wrong."""
    return _short_errors(exc, limit)


def _short_errors(exc: ValidationError, limit: int = 3) -> str:
    parts = []
    for err in exc.errors()[:limit]:
        loc = ".".join(str(p) for p in err["loc"]) or "value"
        parts.append(f"{loc}: {err['msg']}")
    more = f" (+{len(exc.errors()) - limit} more)" if len(exc.errors()) > limit else ""
    return "; ".join(parts) + more


# Asks for one request whose replies keep coming back empty, before the empty one is kept.
EMPTY_ATTEMPTS = 3


def _build_schema(schema: Any) -> tuple[TypeAdapter[Any], str]:
    adapter: TypeAdapter[Any] = TypeAdapter(schema)
    return adapter, json.dumps(adapter.json_schema(), separators=(",", ":"))[:1500]


_cached_schema = functools.lru_cache(maxsize=256)(_build_schema)


def _schema(schema: Any) -> tuple[TypeAdapter[Any], str]:
    """The validator of ``schema`` and its JSON schema as a re-ask quotes it, built once
    per schema. Building them takes about 0.13 ms, some 7% of the client's time per request
    at the benchmark's pace, and a scoring run asks a few schemas tens of thousands of
    times."""
    try:
        return _cached_schema(schema)
    except TypeError:  # an unhashable schema: built each time
        return _build_schema(schema)


def json_schema_request(schema_text: str) -> str:
    """What a re-ask of :meth:`LLMClient.acomplete_json` asks for: JSON matching the JSON
    schema ``schema_text``."""
    return f"JSON matching this JSON schema: {schema_text}"


def schema_request(schema: Any) -> str:
    """What a re-ask of :meth:`LLMClient.acomplete_json` with ``schema`` asks for, for a
    structured call that reads its replies itself but re-asks as ``acomplete_json`` would
    (its cached re-asks stay valid)."""
    return json_schema_request(_schema(schema)[1])


class LLMClient:
    """The client every step uses. Create it with :func:`ragaudit.llm.make_llm`."""

    def __init__(
        self,
        backend: Backend,
        *,
        cache: LLMCache | None = None,
        meter: UsageMeter | None = None,
        default_params: GenerationParams | None = None,
        structured_attempts: int = 3,
        loop: asyncio.AbstractEventLoop | None = None,
        retry_failed: bool = False,
        name: str | None = None,
    ) -> None:
        self.backend = backend
        # The model as llm.model names it ("openai:gpt-4o-mini", "local"): what its calls
        # are counted and priced under.
        self.name = name or f"{backend.kind}:{backend.model}"
        self.cache = cache
        self.meter = meter or UsageMeter()
        self.default_params = default_params or GenerationParams()
        self.structured_attempts = structured_attempts
        # A stored reply that a structured call cannot use is replayed, as any stored reply
        # is (its re-asks are stored too, so a rerun asks nothing); asked again only when
        # the caller says so (--retry-failed: the server or the model has changed since).
        self.retry_failed = retry_failed
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._semaphores = weakref.WeakKeyDictionary()
        # A loop given by the caller (a session's) is borrowed: used, never closed here.
        self._sync_loop: asyncio.AbstractEventLoop | None = loop
        self._owns_loop = loop is None

    # -- plumbing -------------------------------------------------------------------------

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._semaphores.get(loop)
        if sem is None:
            sem = asyncio.Semaphore(max(1, self.backend.max_concurrency))
            self._semaphores[loop] = sem
        return sem

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine from synchronous code on this client's event loop, its own or
        the one it was given (its HTTP sessions are reused from one call to the next)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            coro.close()
            raise RuntimeError("inside a running event loop: use the a* methods (acomplete, ...)")
        if self._sync_loop is None or self._sync_loop.is_closed():
            self._sync_loop = new_event_loop()
            self._owns_loop = True
        return self._sync_loop.run_until_complete(coro)

    # -- plain completions ----------------------------------------------------------------

    async def acomplete(
        self, messages: Messages, params: GenerationParams | None = None, *, fresh: bool = False
    ) -> Completion:
        """One completion: from the cache if this exact request was made before, else from
        the backend (bounded by ``max_concurrency``); counted either way. ``fresh`` drops
        the stored reply and asks the backend again. An empty reply is asked again (up to
        ``EMPTY_ATTEMPTS`` times) and never stored: a server that hiccuped once must not
        make the run empty for good."""
        params = params or self.default_params
        payload = request_payload(self.backend.kind, self.backend.model, messages, params)
        key = cache_key(payload)
        start = time.perf_counter()
        if self.cache is not None and fresh:
            self.cache.forget(key)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None and not hit.text.strip():
                self.cache.forget(key)  # stored by an older version: ask, and store anew
            elif hit is not None:
                hit = dataclasses.replace(hit, text=redact_known(hit.text) or "")
                self.meter.record_cache_hit(self.name)
                count_request(hit.prompt_tokens, hit.completion_tokens)
                return Completion(
                    text=hit.text,
                    prompt_tokens=hit.prompt_tokens,
                    completion_tokens=hit.completion_tokens,
                    cached=True,
                    latency_s=time.perf_counter() - start,
                    finish_reason=hit.finish_reason,
                )
        for _ in range(EMPTY_ATTEMPTS):
            async with self._semaphore():
                call_start = time.perf_counter()
                try:
                    raw = await self.backend.acomplete(messages, params)
                except LLMError as exc:
                    self.meter.record_failure(oversized=isinstance(exc, LLMReplyTooLongError))
                    raise
                seconds = time.perf_counter() - call_start
            count_request(raw.prompt_tokens, raw.completion_tokens)
            self.meter.record_call(
                prompt_tokens=raw.prompt_tokens,
                completion_tokens=raw.completion_tokens,
                seconds=seconds,
                retries=raw.retries,
                model=self.name,
                cached_prompt_tokens=raw.cached_prompt_tokens,
            )
            if raw.text.strip():
                break
        if redact_known(raw.text) != raw.text:
            # A server that echoes the API key: the key never reaches the cache, the
            # records or the screen.
            raw = dataclasses.replace(raw, text=redact_known(raw.text) or "")
        if self.cache is not None and raw.text.strip():
            self.cache.put(key, payload, raw)
        return Completion(
            text=raw.text,
            prompt_tokens=raw.prompt_tokens,
            completion_tokens=raw.completion_tokens,
            cached=False,
            latency_s=time.perf_counter() - start,
            finish_reason=raw.finish_reason,
        )

    def complete(self, messages: Messages, params: GenerationParams | None = None) -> Completion:
        """Synchronous :meth:`acomplete`."""
        return self.run(self.acomplete(messages, params))

    async def asample(
        self, messages: Messages, k: int, params: GenerationParams | None = None
    ) -> list[Completion]:
        """k samples of one request: sample indices 0..k-1 (k cache entries) and seeds
        offset by the index so that servers return different samples."""
        base = params or self.default_params
        seed = base.seed or 0
        calls = [
            self.acomplete(messages, base.model_copy(update={"sample_index": i, "seed": seed + i}))
            for i in range(k)
        ]
        return await gather_all(*calls)

    def sample(
        self, messages: Messages, k: int, params: GenerationParams | None = None
    ) -> list[Completion]:
        """Synchronous :meth:`asample`."""
        return self.run(self.asample(messages, k, params))

    # -- structured completions -----------------------------------------------------------

    async def _astructured(
        self,
        messages: Messages,
        parse: Callable[[str], T],
        what: str,
        params: GenerationParams | None,
        attempts: int | None,
        expected: str | None = None,
    ) -> T:
        attempts = attempts or self.structured_attempts
        greedy = (params or self.default_params).temperature == 0
        conversation = list(messages)
        error = ""
        reply = ""
        previous: str | None = None
        asked = 0
        stuck = ""
        stored = 0  # unusable replies read from the cache, not from this server
        while asked < attempts:
            asked += 1
            completion = await self.acomplete(conversation, params)
            reply = completion.text
            stored += completion.cached
            try:
                return parse(reply)
            except ValueError as exc:
                error = str(exc)
            if completion.cached and self.retry_failed:
                # --retry-failed: a stored reply that cannot be used is asked for again,
                # not replayed (a rerun after a broken server can get a usable one).
                reply = (await self.acomplete(conversation, params, fresh=True)).text
                stored -= 1
                try:
                    return parse(reply)
                except ValueError as exc:
                    error = str(exc)
            if greedy and reply == previous:
                # Told what was wrong, a model sampled greedily gave the same reply: in
                # the trial caches every third ask after such a repeat gave it once more
                # (7 of 7), so asking again spends a request for nothing.
                stuck = " (the last two the same)"
                break
            previous = reply
            conversation = [
                *conversation,
                assistant(reply),
                user(f"That reply could not be used: {error}. Reply again with only {what}."),
            ]
        # The cache key leaves the server's address out (a moved server keeps its
        # replies), so a rerun replays these replies whichever server is named. The note
        # says so in the same words on every run: the reason stored in a record stays the
        # same when a rerun replays it (a changed reason would rewrite the record).
        origin = (
            " (kept in the cache: a rerun replays them; --retry-failed asks the server again)"
            if self.cache is not None
            else ""
        )
        raise StructuredOutputError(
            redact(
                f"{self.backend.describe()}: no valid reply after {asked} attempts{stuck}"
                f" (expected {expected or what}): {error}{origin}"
            ),
            from_cache=stored,
            last_reply=reply,
            attempts=asked,
        )

    async def acomplete_parsed(
        self,
        messages: Messages,
        parse: Callable[[str], T],
        what: str,
        params: GenerationParams | None = None,
        *,
        attempts: int | None = None,
        expected: str | None = None,
    ) -> T:
        """A reply read by ``parse``, which raises ``ValueError`` to reject it: rejected
        replies are re-asked with the error and ``what`` was expected, up to ``attempts``
        asks (fewer when a model sampled at temperature 0 gives the same reply again: it
        would a third time); then :class:`StructuredOutputError`, which names what was expected as
        ``expected`` words it (``what`` itself by default). For replies that JSON schemas
        cannot describe (e.g. a label to be salvaged from a reply cut at ``max_tokens``).
        ``what`` is an instruction the model is given: a reply that follows it to the
        letter must be one ``parse`` accepts."""
        return await self._astructured(messages, parse, what, params, attempts, expected)

    async def acomplete_json(
        self,
        messages: Messages,
        schema: Any,
        params: GenerationParams | None = None,
        *,
        attempts: int | None = None,
    ) -> Any:
        """A reply parsed as JSON and validated against ``schema`` (a pydantic model or any
        type pydantic can validate, e.g. ``list[str]``). Invalid replies are re-asked with
        the validation error, up to ``attempts`` asks; then :class:`StructuredOutputError`."""
        adapter, schema_text = _schema(schema)

        def parse(reply: str) -> Any:
            value = extract_json(reply)
            try:
                return adapter.validate_python(value)
            except ValidationError as exc:
                raise ValueError(
                    f"the JSON does not match the schema: {_short_errors(exc)}"
                ) from None

        return await self._astructured(
            messages, parse, json_schema_request(schema_text), params, attempts, "JSON"
        )

    def complete_json(
        self,
        messages: Messages,
        schema: Any,
        params: GenerationParams | None = None,
        *,
        attempts: int | None = None,
    ) -> Any:
        """Synchronous :meth:`acomplete_json`."""
        return self.run(self.acomplete_json(messages, schema, params, attempts=attempts))

    async def acomplete_lines(
        self,
        messages: Messages,
        item: Callable[[str], T] | None = None,
        params: GenerationParams | None = None,
        *,
        min_items: int = 1,
        max_items: int | None = None,
        attempts: int | None = None,
    ) -> list[T]:
        """A reply read as a list, one item per line (bullets and numbering removed). Each
        line goes through ``item``, which raises ``ValueError`` to reject it; too few valid
        lines is re-asked like malformed JSON. Extra lines past ``max_items`` are dropped."""

        def parse(reply: str) -> list[T]:
            lines = parse_lines(reply)
            values: list[Any] = []
            problems: list[str] = []
            for number, line in enumerate(lines, start=1):
                if item is None:
                    values.append(line)
                    continue
                try:
                    values.append(item(line))
                except ValueError as exc:
                    problems.append(f"line {number} ({line[:60]!r}): {exc}")
            if problems:
                raise ValueError("; ".join(problems[:3]))
            if len(values) < min_items:
                raise ValueError(f"expected at least {min_items} lines, got {len(values)}")
            return values[:max_items] if max_items else values

        what = f"a list with one item per line (at least {min_items})"
        return await self._astructured(messages, parse, what, params, attempts)

    def complete_lines(
        self,
        messages: Messages,
        item: Callable[[str], T] | None = None,
        params: GenerationParams | None = None,
        *,
        min_items: int = 1,
        max_items: int | None = None,
        attempts: int | None = None,
    ) -> list[T]:
        """Synchronous :meth:`acomplete_lines`."""
        return self.run(
            self.acomplete_lines(
                messages, item, params, min_items=min_items, max_items=max_items, attempts=attempts
            )
        )

    # -- lifetime -------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Release the backend's connections on the running loop."""
        await self.backend.aclose()

    def close(self) -> None:
        """Release everything: the connections, the loop when it is the client's own, the
        cache."""
        if self._sync_loop is not None and not self._sync_loop.is_closed():
            self._sync_loop.run_until_complete(self.backend.aclose())
            if self._owns_loop:
                self._sync_loop.close()
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
