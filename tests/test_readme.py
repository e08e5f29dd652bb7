"""The README's "From Python" example runs as written and prints what the README shows:
a new user copies it first, so it may not drift from the code."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_from_python_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    section = _section("From Python")
    code, after = re.split(r"```python\n(.*?)```", section, maxsplit=1, flags=re.S)[1:]
    shown = re.findall(r"\n```\n(.*?)```", after, re.S)[0]  # the block after "prints"
    (tmp_path / "example.py").write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown
    # The run folder it made is the command line's: the same project, read by the CLI.
    assert (tmp_path / "runs" / "default" / "summary.json").is_file()
