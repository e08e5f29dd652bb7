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

Where there is no terminal to draw bars on (a log, CI), :class:`LogProgress` writes plain
lines instead: the command line's display falls back to it, so that every long step says
how far it got, whatever the step.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping
from typing import Protocol, TextIO


class Task(Protocol):
    """One bar: started with a total (and what was already done), advanced as work ends."""

    def start(self, total: int | None, done: int = 0) -> None:
        """(Re)start the bar at ``done`` of ``total``."""
        ...

    def advance(self, n: int = 1) -> None:
        """``n`` more units done."""
        ...


def show_counts(task: Task, **counts: int) -> None:
    """Tell ``task`` the tallies beside its count (``accepted=3, dropped=5``), for a display
    that shows them: a task with a ``counts(mapping)`` method (every display of ragaudit's
    has one). A task without it (a display of the caller's) shows its count alone, so the
    contract stays the two methods of :class:`Task`."""
    show = getattr(task, "counts", None)
    if callable(show):
        show(counts)


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


def _duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h07m``: a log line's time, to the second or the minute."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class _LogTask:
    """One task of :class:`LogProgress`: a line when it opens, one every ``every`` units or
    ``interval_s`` seconds (whichever comes first, checked as work is reported), and one
    when it is done."""

    def __init__(self, log: LogProgress, description: str, total: int | None) -> None:
        self._log = log
        self._description = description
        self._total = total
        self._done = 0
        self._counts: dict[str, int] = {}
        self._finished = False
        now = log.clock()
        self._since = now
        self._last_at, self._last_done = now, 0  # the pace is measured from here
        log.write(f"{description}: started" + (f", {total} to do" if total else ""))

    def _every(self) -> int:
        if self._log.every is not None:
            return max(1, self._log.every)
        return max(1, math.ceil(self._total / 10)) if self._total else 10

    def _line(self, now: float) -> str:
        done = f"{self._done}/{self._total}" if self._total else f"{self._done}"
        if self._total:
            done += f" ({self._done / self._total:.0%})"
        tallies = ", ".join(f"{name} {n}" for name, n in self._counts.items())
        text = f"{self._description}: {done}" + (f"; {tallies}" if tallies else "")
        elapsed = now - self._since
        text += f", {_duration(elapsed)} elapsed"
        # The pace since the last line, not since the start: work answered from a cache
        # goes by in an instant, and a pace that counts it promises "ETA 0s" for what the
        # model still has to do. No unit done since the last line: no ETA.
        made, took = self._done - self._last_done, now - self._last_at
        if self._total and made > 0 and took > 0:
            left = (self._total - self._done) * took / made
            text += f", ETA {_duration(left)}"
        return text

    def _report(self, force: bool = False) -> None:
        if self._finished:
            return
        now = self._log.clock()
        if self._total and self._done >= self._total:
            self._finished = True
            tallies = ", ".join(f"{name} {n}" for name, n in self._counts.items())
            self._log.write(
                f"{self._description}: done, {self._done}/{self._total}"
                + (f"; {tallies}" if tallies else "")
                + f", in {_duration(now - self._since)}"
            )
            return
        due = self._done - self._last_done >= self._every()
        if force or due or now - self._last_at >= self._log.interval_s:
            self._log.write(self._line(now))
            self._last_at, self._last_done = now, self._done

    def start(self, total: int | None, done: int = 0) -> None:
        """(Re)start at ``done`` of ``total``: said when work was done before."""
        self._total, self._done, self._finished = total, done, False
        self._since = self._last_at = self._log.clock()
        self._last_done = done
        if done:
            self._log.write(f"{self._description}: {done}/{total} done before, going on")
        self._report()

    def advance(self, n: int = 1) -> None:
        """``n`` more units done: a line when enough work or time has passed."""
        self._done += n
        self._report()

    def counts(self, counts: Mapping[str, int]) -> None:
        """The tallies beside the count, shown from the next line on (a line now when the
        interval has passed: a step whose count stands still still says what it does)."""
        self._counts = dict(counts)
        self._report()


class LogProgress:
    """Progress as plain lines, for a log or CI where bars cannot be drawn: each task says
    when it starts, how far it got every ``every`` units (a tenth of its total by default)
    or every ``interval_s`` seconds, with its tallies (``accepted 3, dropped 5``), the time
    spent and the time left, and when it is done. Lines go to ``stream`` (stderr by
    default).

    >>> import io
    >>> out = io.StringIO()
    >>> clock = iter([0.0, 10.0, 20.0]).__next__
    >>> task = LogProgress(out, every=2, clock=clock).task("judge rag", 4)
    >>> task.advance(2)
    >>> task.advance(2)
    >>> print(out.getvalue(), end="")
    judge rag: started, 4 to do
    judge rag: 2/4 (50%), 10s elapsed, ETA 10s
    judge rag: done, 4/4, in 20s
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        every: int | None = None,
        interval_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.every = every
        self.interval_s = interval_s
        self.clock = clock

    def write(self, line: str) -> None:
        """One line, flushed at once (a log read while the step runs)."""
        stream = self.stream if self.stream is not None else sys.stderr
        print(line, file=stream, flush=True)

    def task(self, description: str, total: int | None = None) -> Task:
        """A task that writes its lines."""
        return _LogTask(self, description, total)

    def close(self) -> None:
        """Nothing to take down: every line is written already."""
