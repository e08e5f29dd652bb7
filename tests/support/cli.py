"""Running the installed ``ragaudit`` command as a user would: a subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path


def ragaudit(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``ragaudit ARGS`` in ``cwd`` and capture its output."""
    full_env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ragaudit", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# A line of the progress a command writes where stderr is not a terminal
# (ragaudit.progress.LogProgress): started, how far, done before, done.
PROGRESS_LINE = re.compile(
    r"^.+: (started(, \d+ to do)?|\d+(/\d+ \(\d+%\))?(; .+)?, \S+ elapsed(, ETA \S+)?"
    r"|\d+/\d+ done before, going on|done, \d+/\d+(; .+)?, in \S+)$"
)


def without_progress(stderr: str) -> str:
    """``stderr`` without its progress lines: what a command said besides its progress."""
    return "".join(
        line for line in stderr.splitlines(keepends=True) if not PROGRESS_LINE.match(line.strip())
    )
