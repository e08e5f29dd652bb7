"""How the API's calls run: each plain call also works inside a running event loop (a
notebook cell, an ``async def``), and each has an async twin. A step runs an event loop of
its own, which cannot run inside another: there it runs in a worker thread."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

from ragaudit.errors import StaleInputError, UserError

P = ParamSpec("P")
T = TypeVar("T")


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


# The command a message advises, and what a Python caller does instead.
_ADVICE = {
    "ragaudit judge --reference-free": "project.score()",
    "ragaudit generate --import": "project.import_questions(path)",
    "ragaudit generate --documents": "project.generate_documents()",
    "ragaudit generate --refresh": "project.refresh()",
    "ragaudit templates": "project.templates_sql() and project.templates_text()",
    "ragaudit generate": "project.generate()",
    "ragaudit judge": "project.judge()",
    "ragaudit run": "project.run()",
    "ragaudit analyze": "project.analyze()",
    "ragaudit label": "project.label()",
    "ragaudit world": "ra.make_world()",
}
# A command and the flags written after it (``ragaudit judge --reference-free``).
_COMMAND = re.compile(r"ragaudit [a-z]+(?: --[a-z-]+)*")


# Set while the command line calls the API: its errors are printed as they are.
_COMMAND_LINE = contextvars.ContextVar("ragaudit_command_line", default=False)


@contextlib.contextmanager
def command_line() -> Iterator[None]:
    """While the command line calls the API: its users run commands, not Python."""
    token = _COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)


def on_command_line() -> bool:
    """Whether the command line is the caller (its users are told of flags, not keyword
    arguments)."""
    return _COMMAND_LINE.get()


def for_python(message: str) -> str:
    """``message`` with the Python calls that do what the commands it advises do, at its
    end, for a caller of the API: the errors are the command line's, word for word.

    >>> for_python("no judgements: run ragaudit judge --system x first")
    'no judgements: run ragaudit judge --system x first (from Python: project.judge())'
    """
    if "(from Python:" in message:
        return message
    calls: list[str] = []
    for match in _COMMAND.finditer(message):
        command = match.group()
        keys = [k for k in _ADVICE if command == k or command.startswith(k + " ")]
        if keys and (call := _ADVICE[max(keys, key=len)]) not in calls:
            calls.append(call)
    return f"{message} (from Python: {'; '.join(calls)})" if calls else message


def step(method: Callable[P, T]) -> Callable[P, T]:
    """A step of the API: callable from plain code and from inside a running event loop
    (a notebook), where it runs in a worker thread, since a step runs its own loop. Its
    :class:`UserError` messages name the Python call beside the command they advise."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            if not _loop_running():
                return method(*args, **kwargs)
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragaudit") as pool:
                return pool.submit(method, *args, **kwargs).result()
        except UserError as err:
            if _COMMAND_LINE.get():
                raise
            if isinstance(err, StaleInputError):
                err.args = (err.for_python(),)
            elif err.args and isinstance(err.args[0], str):
                err.args = (for_python(err.args[0]), *err.args[1:])
            raise

    return wrapper


def twin(method: Callable[P, T]) -> Callable[P, Any]:
    """The async twin of a step: awaits it in a worker thread."""

    @functools.wraps(method)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        return await asyncio.to_thread(method, *args, **kwargs)

    wrapper.__doc__ = f"Async twin of :meth:`{method.__name__}`."
    return wrapper
