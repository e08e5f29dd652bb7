"""Output paths that are not files (issue 37, second hostile pass, finding 8): a directory,
a FIFO or a device under an output's name is one line naming it (exit 2), never replaced
by a regular file; a symlink is written through, its target replaced and the link kept."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from ragaudit.errors import UserError
from ragaudit.records.io import (
    atomic_write_json,
    atomic_write_text,
    export_parquet,
    write_jsonl_atomic,
)
from ragaudit.records.models import QueryRecord, Reference
from tests.support.cli import ragaudit
from tests.support.hostile_files import one_line_error
from tests.support.judged_runs import judged_run, verdicts

# -- finding 8: output paths that are not files --------------------------------------------


def _runs(tmp_path: Path) -> tuple[Path, Path]:
    scores = verdicts(3, 0.7, groups=40)
    return (
        judged_run(tmp_path / "base", {"rag": scores}),
        judged_run(tmp_path / "cand", {"rag": scores}),
    )


def test_gate_refuses_a_junit_path_that_is_a_directory(tmp_path: Path) -> None:
    base, cand = _runs(tmp_path)
    (tmp_path / "outdir").mkdir()
    result = ragaudit("gate", str(base), str(cand), "--junit", "outdir", cwd=tmp_path)
    one_line_error(result, "outdir", "is a directory")
    assert (tmp_path / "outdir").is_dir() and not list((tmp_path / "outdir").iterdir())


def test_gate_writes_markdown_through_a_symlink(tmp_path: Path) -> None:
    base, cand = _runs(tmp_path)
    (tmp_path / "target.md").write_text("old")
    (tmp_path / "link.md").symlink_to("target.md")
    result = ragaudit("gate", str(base), str(cand), "--markdown", "link.md", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "link.md").is_symlink()
    assert os.readlink(tmp_path / "link.md") == "target.md"
    assert "ragaudit gate: PASS" in (tmp_path / "target.md").read_text()


def test_gate_refuses_a_markdown_path_that_is_a_fifo(tmp_path: Path) -> None:
    base, cand = _runs(tmp_path)
    os.mkfifo(tmp_path / "pipe")
    result = ragaudit("gate", str(base), str(cand), "--markdown", "pipe", cwd=tmp_path)
    one_line_error(result, "pipe", "not a regular file")
    assert stat.S_ISFIFO((tmp_path / "pipe").lstat().st_mode)  # still the FIFO


def _writers(path: Path) -> list[Any]:
    query = QueryRecord(
        query_id="q", group_id="g", variant="v", query="Q?", reference=Reference.from_values([1])
    )
    return [
        lambda: atomic_write_text(path, "new"),
        lambda: atomic_write_json(path, {"a": 1}),
        lambda: write_jsonl_atomic(path, [query]),
        lambda: export_parquet([query], path),
    ]


@pytest.mark.parametrize("writer", range(4))
def test_every_atomic_writer_refuses_what_is_not_a_file(tmp_path: Path, writer: int) -> None:
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "dirlink").symlink_to("dir")
    for name, said in (
        ("dir", "is a directory"),
        ("pipe", "not a regular file"),
        ("dirlink", "is a directory"),
    ):
        with pytest.raises(UserError, match=said) as caught:
            _writers(tmp_path / name)[writer]()
        assert str(tmp_path / name) in str(caught.value)
    assert not [p for p in tmp_path.rglob(".*.tmp")]  # no temporary file left behind
    assert stat.S_ISFIFO((tmp_path / "pipe").lstat().st_mode)


@pytest.mark.parametrize("writer", range(4))
def test_every_atomic_writer_writes_through_a_symlink(tmp_path: Path, writer: int) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "out"
    target.write_text("old")
    link = tmp_path / "link"
    link.symlink_to(target)
    _writers(link)[writer]()
    assert link.is_symlink() and link.resolve() == target
    assert target.read_bytes() != b"old"
    assert not [p for p in tmp_path.rglob(".*.tmp")]
    # A link whose target does not exist yet: the target is created, the link kept.
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "real" / "new")
    _writers(dangling)[writer]()
    assert dangling.is_symlink() and (tmp_path / "real" / "new").is_file()
