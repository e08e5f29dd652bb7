"""docs/architecture.md shows the tree as it is: every module of the package has its row,
and every row names a module that exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "ragaudit"


def _modules() -> set[str]:
    return {
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py")
    }


def _rows() -> set[str]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    return set(re.findall(r"^\| `([\w/]+\.py)` \|", text, re.MULTILINE))


def test_every_module_has_a_row() -> None:
    missing = _modules() - _rows()
    assert not missing, f"docs/architecture.md has no row for {sorted(missing)}"


def test_every_row_names_a_module_that_exists() -> None:
    gone = _rows() - _modules()
    assert not gone, f"docs/architecture.md describes modules that do not exist: {sorted(gone)}"
