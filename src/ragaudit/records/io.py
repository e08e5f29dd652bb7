"""File IO for records: streaming JSON Lines, atomic whole-file writes, durable appends,
and Parquet export.

Two write disciplines, one per kind of file:

* whole files (a dataset, a summary) are written to a temporary file beside the target and
  renamed over it, so a reader never sees half a file and a crash leaves the old one;
* resumable steps append one record per line and fsync, so a run killed at any moment
  keeps every record it reported done; a torn last line (the kill landed mid-write) is
  cut off when the file is next opened for appending.

Only the files ragaudit appends to may end in a torn line: a user's input file (a question
set, a corpus, a label file) is read with ``skip_torn_tail=False``, so that its bad last
line is an error with its line number rather than a record silently lost. Whole files are
created with the permissions the user's umask gives (0644 under umask 022), as any other
tool creates its output; a file that exists keeps its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, TypeVar

from pydantic import BaseModel, ValidationError

from ragaudit.errors import UserError

M = TypeVar("M", bound=BaseModel)


class RecordFileError(UserError):
    """A records file has a line that is not valid JSON or not a valid record."""


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; not possible on every platform/filesystem.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _umask() -> int:
    """The process's umask. Linux states it in /proc; elsewhere it can only be read by
    setting it, so it is set and put back at once."""
    with (
        contextlib.suppress(OSError, ValueError),
        open("/proc/self/status", encoding="ascii", errors="replace") as status,
    ):
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _target_mode(path: Path) -> int:
    """The permission bits a whole-file write gives ``path``: those it has when it exists
    (a file the user made private stays private), else 0666 less the umask, as ``open``
    creates a file. A temporary file is created 0600, so it is set explicitly."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _temp_beside(path: Path) -> tuple[int, Path]:
    """A new temporary file next to ``path`` (same filesystem, so the rename is atomic),
    open as ``fd``, with the permissions ``path`` is to have."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, _target_mode(path))
        else:  # pragma: no cover - Windows has no fchmod and no umask to honour
            os.chmod(tmp_name, _target_mode(path))
    except BaseException:
        os.close(fd)
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return fd, Path(tmp_name)


@contextlib.contextmanager
def _atomic_open(path: Path) -> Iterator[IO[str]]:
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` all at once (temp file + fsync + rename)."""
    with _atomic_open(path) as handle:
        handle.write(text)


def atomic_write_json(path: Path, data: Any) -> None:
    """Replace ``path`` with ``data`` as indented JSON, atomically. Strict JSON: a NaN or
    an infinity is a bug upstream (an undefined figure is written as null, with why), so
    it raises here rather than produce a file other tools cannot parse."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str, allow_nan=False)
    atomic_write_text(path, text + "\n")


# One encoder for every line: json.dumps with options builds a new one per call, which
# is a third of the cost of writing a million small records.
_LINE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _dump_line(record: BaseModel | Mapping[str, Any] | str) -> str:
    if isinstance(record, str):  # already one JSON document
        return record if record.endswith("\n") else record + "\n"
    if isinstance(record, BaseModel):
        return record.model_dump_json() + "\n"
    return _LINE.encode(record) + "\n"


def write_jsonl_atomic(path: Path, records: Iterable[BaseModel | Mapping[str, Any] | str]) -> int:
    """Write every record as one JSON line (a ``str`` is taken as an already serialized
    line), replacing ``path`` atomically; return the count."""
    count = 0
    with _atomic_open(path) as handle:
        for record in records:
            handle.write(_dump_line(record))
            count += 1
    return count


def not_utf8(path: Path, data: bytes, exc: UnicodeDecodeError, *, line: int | None = None) -> str:
    """The one-line message for ``path`` whose bytes ``data`` are not UTF-8: the line and
    the byte that broke, so that the user can find and convert it."""
    number = line if line is not None else data.count(b"\n", 0, exc.start) + 1
    byte = data[exc.start : exc.start + 1].hex()
    return (
        f"{path}:{number}: not UTF-8 text (byte 0x{byte}): save the file as UTF-8 "
        "(it may be Latin-1 or Windows-1252)"
    )


def read_utf8_text(path: Path) -> str:
    """The text of ``path``, read as UTF-8 (a leading byte order mark is dropped); bytes that
    are not UTF-8 are a :class:`RecordFileError` that names the line, never a traceback."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RecordFileError(f"{path}: no such file") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RecordFileError(not_utf8(path, data, exc)) from None


def iter_jsonl_dicts(
    path: Path, *, skip_torn_tail: bool = True
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each line of a JSON Lines file, streaming.

    A last line without its newline that does not parse is the trace of a killed append and
    is skipped when ``skip_torn_tail``: only for the files ragaudit itself appends to. A
    user's input file is read with ``skip_torn_tail=False``, so that its bad last line is
    an error. Anywhere else a bad line, or one that is not UTF-8, is a
    :class:`RecordFileError` naming the line.
    """
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise RecordFileError(f"{path}: no such file") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                # Decoded line by line, so that a bad byte is reported at its own line.
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                if skip_torn_tail and not raw.endswith(b"\n"):  # cut inside a character
                    return
                raise RecordFileError(not_utf8(path, raw, exc, line=number)) from None
            if number == 1 and line.startswith("\ufeff"):  # a byte order mark (Windows tools)
                line = line[1:]
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                if skip_torn_tail and not line.endswith("\n"):
                    return
                raise RecordFileError(f"{path}:{number}: not valid JSON: {exc.msg}") from None
            if not isinstance(obj, dict):
                raise RecordFileError(f"{path}:{number}: expected a JSON object per line")
            yield number, obj


def read_jsonl(path: Path, model: type[M]) -> Iterator[M]:
    """Stream ``model`` records from a JSON Lines file; errors name the file and line."""
    for number, obj in iter_jsonl_dicts(path):
        try:
            yield model.model_validate(obj)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "(record)"
            message = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
            raise RecordFileError(f"{path}:{number}: {where}: {message}") from None


def _cut_torn_tail(path: Path) -> None:
    """Drop a trailing partial line left by a process killed in the middle of a write."""
    with path.open("rb+") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        if size == 0:
            return
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return
        # Walk back to the last newline; everything after it is the torn record.
        block = 65536
        end = size
        while end > 0:
            start = max(0, end - block)
            handle.seek(start)
            chunk = handle.read(end - start)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                handle.truncate(start + cut + 1)
                return
            end = start
        handle.truncate(0)


class JsonlAppender:
    """Append records to a JSON Lines file durably (flush + fsync per write).

    Use as a context manager. Opening it repairs a torn last line, so a step killed at any
    moment can reopen its file and go on appending.
    """

    def __init__(self, path: Path, *, fsync: bool = True) -> None:
        self.path = path
        self._fsync = fsync
        self._handle: IO[str] | None = None

    def __enter__(self) -> JsonlAppender:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            _cut_torn_tail(self.path)
        self._handle = self.path.open("a", encoding="utf-8", newline="\n")
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def append(self, record: BaseModel | Mapping[str, Any]) -> None:
        """Write one record and make it durable before returning."""
        self.append_many([record])

    def append_many(self, records: Iterable[BaseModel | Mapping[str, Any]]) -> None:
        """Write several records with one flush and fsync (a batch is durable as a whole)."""
        if self._handle is None:
            raise RuntimeError("JsonlAppender used outside its 'with' block")
        self._handle.write("".join(_dump_line(r) for r in records))
        self._handle.flush()
        if self._fsync:
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def _column(values: list[Any]) -> Any:
    import pyarrow as pa

    if any(isinstance(v, dict) for v in values):
        return pa.array([None if v is None else json.dumps(v, ensure_ascii=False) for v in values])
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        # Mixed types (e.g. a set of values of several kinds): keep them exact as JSON text.
        return pa.array([None if v is None else json.dumps(v, ensure_ascii=False) for v in values])


def export_parquet(records: Iterable[BaseModel], path: Path) -> int:
    """Write records to a Parquet file (atomically); nested fields become JSON text columns.

    Returns the number of rows written.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [r.model_dump(mode="json") for r in records]
    names: list[str] = []
    for row in rows:
        names.extend(k for k in row if k not in names)
    table = pa.table({name: _column([row.get(name) for row in rows]) for name in names})
    fd, tmp = _temp_beside(path)
    os.close(fd)
    tmp_name = str(tmp)
    try:
        pq.write_table(table, tmp_name)
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return len(rows)
