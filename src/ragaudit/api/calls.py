"""How the API's calls run: each plain call also works inside a running event loop (a
notebook cell, an ``async def``), and each has an async twin. A step runs an event loop of
its own, which cannot run inside another: there it runs in a worker thread."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def step(method: Callable[P, T]) -> Callable[P, T]:
    """A step of the API: callable from plain code and from inside a running event loop
    (a notebook), where it runs in a worker thread, since a step runs its own loop."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        if not _loop_running():
            return method(*args, **kwargs)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragaudit") as pool:
            return pool.submit(method, *args, **kwargs).result()

    return wrapper


def twin(method: Callable[P, T]) -> Callable[P, Any]:
    """The async twin of a step: awaits it in a worker thread."""

    @functools.wraps(method)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        return await asyncio.to_thread(method, *args, **kwargs)

    wrapper.__doc__ = f"Async twin of :meth:`{method.__name__}`."
    return wrapper
