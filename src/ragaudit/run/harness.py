"""The harness behind ``ragaudit run``: one system, every query.

* bounded concurrency: ``concurrency`` workers pull queries from one iterator, so a million
  queries never become a million tasks;
* a per-query timeout; a failure or a timeout is recorded on that query's record (``error``)
  and the run goes on;
* resumable: records are appended to ``responses/<system>.jsonl`` in durable batches, and a
  restarted run skips the query ids already there. A run killed at any moment and restarted
  ends with exactly one record per query: a record is either wholly written (then skipped)
  or not at all (then asked again); a torn last line is cut off on reopening.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ragaudit.aio import gather_all
from ragaudit.records.io import JsonlAppender, read_jsonl, write_jsonl_atomic
from ragaudit.records.models import QueryRecord, ResponseRecord
from ragaudit.secrets import redact, redact_known
from ragaudit.systems.base import System, SystemFailure

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

    @property
    def rate(self) -> float:
        """Queries answered per second in this run."""
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


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, SystemFailure):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return redact(" ".join(text.split()))[:500]


async def _ask(
    system: System, query: QueryRecord, timeout_s: float, store_texts: bool = False
) -> ResponseRecord:
    start = time.perf_counter()
    try:
        answer = await asyncio.wait_for(system.answer(query), timeout_s)
    except TimeoutError:
        error = f"timed out after {timeout_s:g} s"
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # any failure of the system under test is a result, not a crash
        error = _one_line(exc)
    else:
        # A system that echoes a secret it was sent (a header token) must not put it
        # into responses/*.jsonl.
        # Passage texts only on request: they are the corpus again, once per query.
        retrieved = [
            item.model_copy(update={"text": redact_known(item.text) if store_texts else None})
            if item.text
            else item
            for item in answer.retrieved
        ]
        return ResponseRecord(
            query_id=query.query_id,
            system=system.name,
            response=redact_known(answer.response),
            retrieved=retrieved,
            latency_s=time.perf_counter() - start,
            usage=answer.usage,
        )
    return ResponseRecord(
        query_id=query.query_id,
        system=system.name,
        latency_s=time.perf_counter() - start,
        error=error,
    )


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
    on_start: Callable[[int, int], None] | None = None,
    advance: Callable[[int], None] | None = None,
) -> SystemRunStats:
    """Ask ``system`` every query not yet answered in ``out``, appending one record each
    (with the retrieved passages' texts only if ``store_texts``).
    ``on_start(total, done)`` and ``advance(n)`` drive a progress display."""
    done = answered_ids(out, retry_errors=retry_errors)
    todo = list(pending(queries, done))
    stats = SystemRunStats(system.name, already_done=len(queries) - len(todo))
    if on_start:
        on_start(len(queries), stats.already_done)
    if not todo:
        return stats
    buffer: list[ResponseRecord] = []
    start = time.perf_counter()
    prepare = getattr(system, "prepare", None)
    if prepare is not None:
        await prepare(todo)
    order = getattr(system, "order", None)
    source = iter(order(todo) if order is not None else todo)
    last_flush = start

    with JsonlAppender(out) as sink:

        def flush() -> None:
            nonlocal last_flush
            if buffer:
                sink.append_many(buffer)
                if advance:
                    advance(len(buffer))
                buffer.clear()
            last_flush = time.perf_counter()

        async def worker() -> None:
            for query in source:  # shared iterator: each query goes to exactly one worker
                record = await _ask(system, query, timeout_s, store_texts)
                stats.asked += 1
                stats.prompt_tokens += record.usage.prompt_tokens
                stats.completion_tokens += record.usage.completion_tokens
                if record.error:
                    stats.errors += 1
                    if len(stats.error_examples) < 5:
                        stats.error_examples.append(f"{query.query_id}: {record.error}")
                buffer.append(record)
                if len(buffer) >= FLUSH_RECORDS or time.perf_counter() - last_flush > FLUSH_SECONDS:
                    flush()

        try:
            await gather_all(*(worker() for _ in range(min(concurrency, len(todo)))))
        finally:
            # Whatever finished is kept, also when the run is interrupted.
            flush()
            stats.seconds = time.perf_counter() - start
    return stats
