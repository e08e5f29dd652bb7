"""A Python function as a system: ``fn(query)`` or ``fn(query, record=QueryRecord)``, sync
(run in worker threads) or async, returning the answer, or a dict / tuple with the answer,
the retrieved ids and texts. A function that takes ``repeat`` is told which asking of the
query each call is (``run --repeat N``: 0 to N - 1), to seed itself with."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from ragaudit.errors import ConfigError
from ragaudit.records.models import QueryRecord
from ragaudit.systems.adapters.common import TargetOptions, _no_k, load_target, to_answer
from ragaudit.systems.base import SystemAnswer, SystemFailure


class CallableSystemConfig(TargetOptions):
    """``kind: callable``: a function of the user's, named by ``target``."""

    kind: Literal["callable"] = "callable"


class CallableSystem:
    """A Python function as a system: ``fn(query)`` or ``fn(query, record=QueryRecord)``."""

    def __init__(self, name: str, fn: Any, *, threads: int = 8, k: int | None = None) -> None:
        if not callable(fn):
            raise ConfigError(f"system {name}: target is not callable")
        self.name = name
        self.fn = fn
        self._async = inspect.iscoroutinefunction(fn)
        params: Mapping[str, inspect.Parameter]
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}
        self._takes_record = "record" in params
        self._takes_repeat = "repeat" in params
        takes_k = "k" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
        if k is not None and not takes_k:
            raise _no_k(name, "the function takes no parameter k")
        self.k = k
        self._threads = threads
        # Made when first needed, and again after a close: one system object may be run
        # again (a notebook runs the same system in several cells).
        self._pool: ThreadPoolExecutor | None = None

    async def answer(self, query: QueryRecord, *, repeat: int = 0) -> SystemAnswer:
        """Call the function with the query text (and the record, and which asking of
        the query this is, if it asks for them)."""
        kwargs: dict[str, Any] = {"record": query} if self._takes_record else {}
        if self._takes_repeat:
            kwargs["repeat"] = repeat
        if self.k is not None:
            kwargs["k"] = self.k
        if self._async:
            try:
                value = await self.fn(query.query, **kwargs)
            except SystemExit as exc:
                raise _exited(self.name, exc) from None
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self._threads)
            loop = asyncio.get_running_loop()
            value = await loop.run_in_executor(self._pool, lambda: self._call(query, kwargs))
        return to_answer(value, f"system {self.name}")

    def _call(self, query: QueryRecord, kwargs: dict[str, Any]) -> Any:
        """The function called in a worker thread, a ``sys.exit()`` in it made that
        answer's failure: raised as it is, it would end the whole run (asyncio lets no
        task swallow SystemExit)."""
        try:
            return self.fn(query.query, **kwargs)
        except SystemExit as exc:
            raise _exited(self.name, exc) from None

    async def aclose(self) -> None:
        """Stop the worker threads (a call still running in one is abandoned); a later
        run starts new ones."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def build(sc: CallableSystemConfig, *, concurrency: int) -> CallableSystem:
    """The function ``sc.target`` names, run in ``concurrency`` threads when it is sync."""
    return CallableSystem(
        sc.name, load_target(sc.target, f"systems.{sc.name}"), threads=concurrency, k=sc.k
    )


def _exited(name: str, exc: SystemExit) -> SystemFailure:
    """The failure of an answer whose code called ``sys.exit()``."""
    return SystemFailure(f"system {name} called sys.exit({exc.code!r}) while answering")
