"""The displays of the one progress protocol for long work called from Python: a bar per
task, shown by rich in a terminal, by tqdm in a notebook (where it is installed), as plain
lines in a log, or not at all.

Every step that reports progress takes a :class:`Progress` (the protocol is
:mod:`ragaudit.progress`, below every layer) and opens its own tasks on it, so that the
API's methods, and the command line's, all report the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Literal

from ragaudit.progress import LogProgress, Progress, SilentProgress, Task

__all__ = [
    "LogProgress",
    "Progress",
    "ProgressChoice",
    "RichProgress",
    "SilentProgress",
    "Task",
    "TqdmProgress",
    "make_progress",
]

ProgressChoice = Literal["auto", "rich", "tqdm", "log", "none"]


def _tallies(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counts.items())


class _RichTask:
    def __init__(self, progress: Any, description: str, total: int | None) -> None:
        self._progress = progress
        self._description = description
        self._id = progress.add_task(description, total=total)

    def start(self, total: int | None, done: int = 0) -> None:
        self._progress.reset(self._id, total=total, completed=done, start=True)

    def advance(self, n: int = 1) -> None:
        self._progress.advance(self._id, n)

    def counts(self, counts: Mapping[str, int]) -> None:
        shown = _tallies(counts)
        described = f"{self._description} ({shown})" if shown else self._description
        self._progress.update(self._id, description=described)


class RichProgress:
    """Bars on stderr with rich (the terminal's display), started on first use."""

    def __init__(self) -> None:
        self._progress: Any = None

    def task(self, description: str, total: int | None = None) -> Task:
        """A new bar, with its count and time left."""
        if self._progress is None:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichBars

            # A description names the user's systems: shown as written, neither read as
            # markup nor with rich's :code: emoji put in ("gpt:smile:v2").
            self._progress = RichBars(
                TextColumn("{task.description}", markup=False),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True, emoji=False),
                transient=True,
            )
            self._progress.start()
        return _RichTask(self._progress, description, total)

    def close(self) -> None:
        """Stop the display."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


class _TqdmTask:
    def __init__(self, tqdm: Any, description: str, total: int | None) -> None:
        self._bar = tqdm(total=total, desc=description, leave=True)

    def start(self, total: int | None, done: int = 0) -> None:
        self._bar.reset(total=total)
        self._bar.update(done)

    def advance(self, n: int = 1) -> None:
        self._bar.update(n)

    def counts(self, counts: Mapping[str, int]) -> None:
        self._bar.set_postfix_str(_tallies(counts))

    def close(self) -> None:
        self._bar.close()


class TqdmProgress:
    """Bars with tqdm: widgets in a notebook with ipywidgets, text bars otherwise."""

    def __init__(self) -> None:
        import importlib.util

        # Widgets where ipywidgets is installed; text bars otherwise (tqdm.auto would warn
        # "IProgress not found" and show nothing).
        if importlib.util.find_spec("ipywidgets") is not None:
            from tqdm.auto import tqdm
        else:
            from tqdm.std import tqdm
        self._tqdm = tqdm
        self._tasks: list[_TqdmTask] = []

    def task(self, description: str, total: int | None = None) -> Task:
        """A new bar."""
        task = _TqdmTask(self._tqdm, description, total)
        self._tasks.append(task)
        return task

    def close(self) -> None:
        """Close every bar."""
        for task in self._tasks:
            task.close()
        self._tasks.clear()


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    kernel = get() if callable(get) else None
    return kernel is not None and type(kernel).__name__ == "ZMQInteractiveShell"


def make_progress(choice: ProgressChoice | Progress) -> Progress:
    """The display ``choice`` names: ``auto`` is tqdm in a notebook (if installed), rich
    on a terminal, nothing otherwise; ``log`` is plain lines on stderr
    (:class:`LogProgress`, for a script whose output goes to a log); or a
    :class:`Progress` of the caller's."""
    if not isinstance(choice, str):
        return choice
    if choice == "auto":
        if _in_notebook():
            choice = "tqdm"
        elif sys.stderr.isatty():
            choice = "rich"
        else:
            choice = "none"
    if choice == "tqdm":
        try:
            return TqdmProgress()
        except ImportError:
            return SilentProgress()
    if choice == "rich":
        return RichProgress()
    if choice == "log":
        return LogProgress()
    if choice == "none":
        return SilentProgress()
    raise ValueError(f"progress {choice!r}: use auto, rich, tqdm, log, none or a Progress")
