"""Event loops for ragaudit's own async work: uvloop where it is installed (Linux, macOS),
the standard loop elsewhere. uvloop roughly halves the event loop's cost per HTTP call,
which matters when hundreds of LLM calls per second are in flight."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A fresh event loop, uvloop's if available."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on a fresh loop (like :func:`asyncio.run`), uvloop if
    available."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(coro)


async def gather_all(*aws: Awaitable[T]) -> list[T]:
    """Like :func:`asyncio.gather`, but the first failure cancels the others and is
    re-raised once they have stopped. A plain ``gather`` leaves the others running past
    the failure; when the caller's loop then closes, each of them dies with its own
    'Event loop is closed' traceback, burying the one error that matters."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
