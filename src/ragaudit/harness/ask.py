"""The harness behind ``ragaudit run``: one system, every query.

* bounded concurrency: ``concurrency`` workers pull queries from one iterator, so a million
  queries never become a million tasks;
* a per-query timeout; a failure or a timeout is recorded on that query's record (``error``)
  and the run goes on;
* resumable: records are appended to ``responses/<system>.jsonl`` in durable batches, and a
  restarted run skips the query ids already there. A run killed at any moment and restarted
  ends with exactly one record per query: a record is either wholly written (then skipped)
  or not at all (then asked again); a torn last line is cut off on reopening;
* repeats (``run --repeat N``): each query asked N times, the first asking into the
  responses file as without repeats, the others (repeats 1 to N - 1) into the repeats
  file, each (query, repeat) once; all the queries' first askings go first, then every
  query's second, and so on, so that an interrupted run has whole repeats. A system whose
  ``answer`` takes ``repeat`` is told which asking it is (a built-in system seeds its
  LLM with it);
* text: an answer holding half a character (a lone UTF-16 surrogate, an emoji cut in two)
  is recorded with U+FFFD in its place, and the run's warnings name the askings whose
  answer holds U+FFFD, so that one such answer never fails the batch it is written with.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragaudit.aio import gather_all
from ragaudit.records.io import JsonlAppender, read_jsonl, write_jsonl_atomic
from ragaudit.records.models import QueryRecord, RepeatResponse, ResponseRecord
from ragaudit.records.values import unicode_text
from ragaudit.secrets import redact, redact_known
from ragaudit.systems.base import System, SystemAnswer, SystemFailure

FLUSH_RECORDS = 256
FLUSH_SECONDS = 0.25


@dataclass
class SystemRunStats:
    """What one system's run did."""

    system: str
    asked: int = 0
    already_done: int = 0
    errors: int = 0
    error_examples: list[str] = field(default_factory=list)
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    warnings: list[str] = field(default_factory=list)  # what its retrieved ids say is wrong
    repeats: int = 1  # times each query is asked (run --repeat N)
    # The askings whose recorded answer holds U+FFFD in place of text that was not
    # Unicode (half a character): how many, and the first few ("q0001 (repeat 2)").
    replaced_text: int = 0
    replaced_examples: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        """Askings answered per second in this run (queries, times their repeats)."""
        return self.asked / self.seconds if self.seconds > 0 else 0.0


def answered_ids(path: Path, *, retry_errors: bool = False) -> set[str]:
    """Query ids that already have a record in ``path``. With ``retry_errors``, records
    that carry an error are first removed from the file (atomically), so those queries are
    asked again and the file still ends with one record per query."""
    if not path.exists():
        return set()
    if not retry_errors:
        # Only the ids are needed: a million-record file is streamed, not held.
        return {r.query_id for r in read_jsonl(path, ResponseRecord)}
    records = list(read_jsonl(path, ResponseRecord))
    kept = [r for r in records if not r.error]
    if len(kept) < len(records):
        write_jsonl_atomic(path, kept)
    return {r.query_id for r in kept}


def answered_repeats(path: Path, *, retry_errors: bool = False) -> set[tuple[str, int]]:
    """(query id, repeat) of the repeats that already have a record in ``path`` (a
    repeats file); with ``retry_errors``, those that carry an error are first removed
    from the file (atomically), as :func:`answered_ids` does."""
    if not path.exists():
        return set()
    if not retry_errors:
        return {(r.query_id, r.repeat) for r in read_jsonl(path, RepeatResponse)}
    records = list(read_jsonl(path, RepeatResponse))
    kept = [r for r in records if not r.error]
    if len(kept) < len(records):
        write_jsonl_atomic(path, kept)
    return {(r.query_id, r.repeat) for r in kept}


def takes_repeat(system: System) -> bool:
    """Whether ``system.answer`` takes a ``repeat`` keyword: such a system is told which
    asking of a query each call is (0 for the first), and may seed itself with it."""
    try:
        return "repeat" in inspect.signature(system.answer).parameters
    except (TypeError, ValueError):
        return False


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, SystemFailure):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return redact(" ".join(text.split()))[:500]


def _as_text(answer: SystemAnswer) -> tuple[SystemAnswer, bool]:
    """``answer`` with every string of it (the response, each retrieved id and text) as
    Unicode text (:func:`~ragaudit.records.values.unicode_text`), and whether it holds
    U+FFFD in place of text that was not: a lone surrogate replaced here, or a response
    that came with U+FFFD already (an LLM backend replaces the half character of a reply
    before it caches it). A system of any kind can return half a character (an HTTP
    server that cut an emoji in two sends ``"\\ud83d"``; Python code can hold one); no
    file can hold it, so kept as it is it would fail the write of its whole batch, and of
    every rerun alike. Replaced, the answer is kept and judged as what the system said,
    and the run's warnings name it."""
    changed = False
    lone = 0
    response = answer.response
    if response:
        response, lone = unicode_text(response)
        changed = response is not answer.response
    retrieved = []
    for item in answer.retrieved:
        doc_id, in_id = unicode_text(item.id)
        text, in_text = unicode_text(item.text) if item.text else (item.text, 0)
        if doc_id is not item.id or text is not item.text:
            item = item.model_copy(update={"id": doc_id, "text": text})
            changed = True
        lone += in_id + in_text
        retrieved.append(item)
    replaced = bool(lone) or "\ufffd" in (response or "")
    if changed:
        # Pairs of surrogates joined into their character change the text too.
        answer = SystemAnswer(response=response, retrieved=retrieved, usage=answer.usage)
    return answer, replaced


async def _ask(
    system: System,
    query: QueryRecord,
    timeout_s: float,
    store_texts: bool = False,
    repeat: int = 0,
    seeded: bool = False,
) -> tuple[ResponseRecord, bool]:
    """The record of one asking, and whether its answer holds U+FFFD in place of text
    that was not Unicode (:func:`_as_text`)."""
    start = time.perf_counter()
    try:
        # ``repeat`` only to a system that takes it (takes_repeat): the protocol's option.
        told: dict[str, int] = {"repeat": repeat} if seeded else {}
        answer = await asyncio.wait_for(system.answer(query, **told), timeout_s)
    except TimeoutError:
        error = f"timed out after {timeout_s:g} s"
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # any failure of the system under test is a result, not a crash
        error = _one_line(exc)
    else:
        answer, replaced = _as_text(answer)
        # A system that echoes a secret it was sent (a header token) must not put it
        # into responses/*.jsonl: in its answer, its passages or the ids it names.
        # Passage texts only on request: they are the corpus again, once per query.
        retrieved = [
            item.model_copy(
                update={
                    "id": redact_known(item.id) or item.id,
                    "text": redact_known(item.text) if store_texts and item.text else None,
                }
            )
            if item.text or redact_known(item.id) != item.id
            else item
            for item in answer.retrieved
        ]
        record = _record(
            repeat,
            query_id=query.query_id,
            system=system.name,
            response=redact_known(answer.response),
            retrieved=retrieved,
            latency_s=time.perf_counter() - start,
            usage=answer.usage,
            note=REPLACED_NOTE if replaced else None,
        )
        return record, replaced
    # The message of a failure may quote what the system sent, half characters included:
    # written as Unicode text too (what failed is said by the message itself).
    record = _record(
        repeat,
        query_id=query.query_id,
        system=system.name,
        latency_s=time.perf_counter() - start,
        error=unicode_text(error)[0],
    )
    return record, False


# What a response record says of an answer that held text that was not Unicode.
REPLACED_NOTE = "text that was not Unicode (half a character) is recorded as U+FFFD"


def _record(repeat: int, **fields: Any) -> ResponseRecord:
    """The record of one asking: a response, or a repeat's (:class:`RepeatResponse`)."""
    if repeat:
        return RepeatResponse(repeat=repeat, **fields)
    return ResponseRecord(**fields)


def pending(queries: Iterable[QueryRecord], done: set[str]) -> Iterator[QueryRecord]:
    """The queries still to ask, in dataset order, each id once."""
    seen = set(done)
    for q in queries:
        if q.query_id not in seen:
            seen.add(q.query_id)
            yield q


async def run_system(
    system: System,
    queries: list[QueryRecord],
    out: Path,
    *,
    concurrency: int = 8,
    timeout_s: float = 120.0,
    retry_errors: bool = False,
    store_texts: bool = False,
    repeats: int = 1,
    repeats_out: Path | None = None,
    on_start: Callable[[int, int], None] | None = None,
    advance: Callable[[int], None] | None = None,
) -> SystemRunStats:
    """Ask ``system`` every query not yet answered in ``out``, appending one record each
    (with the retrieved passages' texts only if ``store_texts``). With ``repeats`` N > 1,
    each query is asked N times: its first asking goes to ``out``, the others (repeats 1
    to N - 1) to ``repeats_out``, each (query, repeat) once, whole repeats first.
    ``on_start(total, done)`` and ``advance(n)`` drive a progress display (askings)."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, not {repeats}")
    if repeats > 1 and repeats_out is None:
        raise ValueError("repeats need a file for them (repeats_out)")
    done = answered_ids(out, retry_errors=retry_errors)
    first = list(pending(queries, done))
    first_ids = {q.query_id for q in first}
    unique = list(pending(queries, set())) if repeats > 1 else first
    done_again = (
        answered_repeats(repeats_out, retry_errors=retry_errors)
        if repeats > 1 and repeats_out is not None
        else set()
    )

    def to_ask(q: QueryRecord, repeat: int) -> bool:
        """Whether the ``repeat``-th asking of ``q`` has no record yet."""
        return q.query_id in first_ids if repeat == 0 else (q.query_id, repeat) not in done_again

    # Counted, not listed: a million queries asked five times are not five million pairs.
    again = sum(to_ask(q, r) for r in range(1, repeats) for q in unique)
    todo_count = len(first) + again
    total = len(queries) + (repeats - 1) * len(unique)
    stats = SystemRunStats(system.name, already_done=total - todo_count, repeats=repeats)
    if on_start:
        on_start(total, stats.already_done)
    if not todo_count:
        return stats
    # Every query with an asking to do, in dataset order, once: what the system prepares
    # and orders (its first askings, then each repeat, in that order).
    todo = first if not again else [q for q in unique if any(to_ask(q, r) for r in range(repeats))]
    buffers: dict[int, list[ResponseRecord]] = {0: [], 1: []}  # the responses, the repeats
    start = time.perf_counter()
    prepare = getattr(system, "prepare", None)
    if prepare is not None:
        await prepare(todo)
    order = getattr(system, "order", None)
    ordered = order(todo) if order is not None else todo
    seeded = repeats > 1 and takes_repeat(system)

    def jobs() -> Iterator[tuple[QueryRecord, int]]:
        # Shared by the workers, consumed without awaiting: each asking goes to one.
        for repeat in range(repeats):
            for q in ordered:
                if to_ask(q, repeat):
                    yield q, repeat

    source = jobs()
    last_flush = start

    with contextlib.ExitStack() as stack:
        sinks = {0: stack.enter_context(JsonlAppender(out))}
        if again and repeats_out is not None:
            sinks[1] = stack.enter_context(JsonlAppender(repeats_out))

        def flush() -> None:
            nonlocal last_flush
            for kind, buffer in buffers.items():
                if buffer:
                    # Taken out before it is written: a Ctrl-C that lands after the write
                    # (in the fsync, in the progress line) must not leave the batch to the
                    # final flush, which wrote it a second time (93 records twice in 2 of
                    # 25 interrupted runs). A batch cut before its write is asked again.
                    batch = buffer[:]
                    buffer.clear()
                    sinks[kind].append_many(batch)
                    if advance:
                        advance(len(batch))
            last_flush = time.perf_counter()

        async def worker() -> None:
            for query, repeat in source:  # shared iterator: each asking goes to one worker
                record, replaced = await _ask(system, query, timeout_s, store_texts, repeat, seeded)
                stats.asked += 1
                if replaced:
                    stats.replaced_text += 1
                    if len(stats.replaced_examples) < 5:
                        which = f" (repeat {repeat})" if repeat else ""
                        stats.replaced_examples.append(f"{query.query_id}{which}")
                stats.prompt_tokens += record.usage.prompt_tokens
                stats.completion_tokens += record.usage.completion_tokens
                if record.error:
                    stats.errors += 1
                    if len(stats.error_examples) < 5:
                        which = f" (repeat {repeat})" if repeat else ""
                        stats.error_examples.append(f"{query.query_id}{which}: {record.error}")
                buffers[min(repeat, 1)].append(record)
                pending_records = len(buffers[0]) + len(buffers[1])
                if (
                    pending_records >= FLUSH_RECORDS
                    or time.perf_counter() - last_flush > FLUSH_SECONDS
                ):
                    flush()

        try:
            await gather_all(*(worker() for _ in range(min(concurrency, todo_count))))
        finally:
            # Whatever finished is kept, also when the run is interrupted.
            flush()
            stats.seconds = time.perf_counter() - start
            if stats.replaced_text:
                stats.warnings.append(_replaced_note(system.name, stats))
    return stats


def _replaced_note(name: str, stats: SystemRunStats) -> str:
    """The warning for the answers recorded with U+FFFD in place of text that was not
    Unicode, with the first askings it names."""
    n = stats.replaced_text
    shown = ", ".join(stats.replaced_examples)
    if n > len(stats.replaced_examples):
        shown += f", ... ({n - len(stats.replaced_examples)} more)"
    return (
        f"{name}: {n} answer{'s' if n > 1 else ''} held text that is not Unicode (half a "
        "character: a lone UTF-16 surrogate, such as an emoji the system or its LLM cut in "
        f"two), recorded with U+FFFD in its place and judged as it reads: {shown}"
    )
