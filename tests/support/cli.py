"""Running the installed ``ragaudit`` command as a user would: a subprocess."""

from __future__ import annotations

import os
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
