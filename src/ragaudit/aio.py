"""Event loops for ragaudit's own async work: uvloop where it is installed (Linux, macOS),
the standard loop elsewhere. uvloop roughly halves the event loop's cost per HTTP call,
which matters when hundreds of LLM calls per second are in flight."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
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
