"""The one progress contract of the steps: a step that reports progress takes
``progress: Progress`` and opens a task (a bar) per piece of counted work.

Whoever calls the step owns the display and closes it: the Python API makes one from
``Project(progress=...)`` (rich in a terminal, tqdm in a notebook, nothing with
``"none"``, or the caller's own object), the command line its bars on stderr
(:mod:`ragaudit.api.progress`, :mod:`ragaudit.cli.progress`). The contract sits below every
layer so that a step, or an engine under it, needs nothing above itself to report.

>>> class Log:
...     def task(self, description, total=None):
...         print("task", description, total)
...         return SILENT_TASK
...     def close(self):
...         pass
>>> with_prefix(Log(), "judge ").task("mine", 3).advance()
task judge mine 3
"""

from __future__ import annotations

from typing import Protocol


class Task(Protocol):
    """One bar: started with a total (and what was already done), advanced as work ends."""

    def start(self, total: int | None, done: int = 0) -> None:
        """(Re)start the bar at ``done`` of ``total``."""
        ...

    def advance(self, n: int = 1) -> None:
        """``n`` more units done."""
        ...


class Progress(Protocol):
    """A progress display: tasks open until :meth:`close`."""

    def task(self, description: str, total: int | None = None) -> Task:
        """A new bar."""
        ...

    def close(self) -> None:
        """Take the display down."""
        ...


class _SilentTask:
    def start(self, total: int | None, done: int = 0) -> None:
        """Nothing to show."""

    def advance(self, n: int = 1) -> None:
        """Nothing to show."""


SILENT_TASK: Task = _SilentTask()


class SilentProgress:
    """Shows nothing (``progress="none"``): for scripts, tests and CI logs, and what a step
    reports to when its caller gives no display."""

    def task(self, description: str, total: int | None = None) -> Task:
        """A bar that shows nothing."""
        return SILENT_TASK

    def close(self) -> None:
        """Nothing to take down."""


SILENT: Progress = SilentProgress()


class _Prefixed:
    """``progress`` with every task's description behind ``prefix``."""

    def __init__(self, progress: Progress, prefix: str) -> None:
        self._progress = progress
        self._prefix = prefix

    def task(self, description: str, total: int | None = None) -> Task:
        """A bar of the display underneath, its description prefixed."""
        return self._progress.task(self._prefix + description, total)

    def close(self) -> None:
        """The display underneath belongs to the caller: left open."""


def with_prefix(progress: Progress, prefix: str) -> Progress:
    """``progress`` with ``prefix`` before every task's description: one display shared by
    several steps whose bars would otherwise read alike (``judge mine``, ``score
    mine``)."""
    return _Prefixed(progress, prefix)
