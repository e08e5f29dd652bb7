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
tool creates its output; a file that exists keeps its own. A whole-file write through a
symlink replaces the link's target and keeps the link; a name that is a directory, a FIFO or
a device is refused in one line, never replaced by a regular file.

JSON text read from a file is checked to be Unicode text: a lone UTF-16 surrogate escape
(``"\\ud800"``) decodes to a string no UTF-8 file, hash or terminal can hold, so it is a
:class:`RecordFileError` naming the line and the field where it is read, not a traceback
wherever the string next goes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from ragaudit.errors import UserError

if TYPE_CHECKING:
    import pyarrow as pa

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


def _kind(mode: int) -> str:
    """What a file that is not a regular one is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _write_target(path: Path) -> Path:
    """The file a whole-file write of ``path`` replaces: ``path``, or the file a symlink at
    ``path`` points to (which need not exist yet), so that the rename replaces the target
    and the link stays. A name that is a directory, a FIFO, a socket or a device (itself or
    through a link) is a :class:`UserError` naming it: the rename would fail with a
    traceback, or replace the special file with a regular one."""
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return target
    except OSError as exc:  # a loop of links, a folder that cannot be searched
        raise UserError(f"{path}: cannot write: {exc.strerror}") from None
    if stat.S_ISREG(mode):
        return target
    shown = str(path) if target == path else f"{path} (a link to {target})"
    kind = _kind(mode)
    what = kind if kind == "not a regular file" else f"is {kind}, not a regular file"
    raise UserError(f"{shown} {what}: give the path of a file to write")


def check_output_path(path: Path) -> Path:
    """The file a write of ``path`` will replace; a :class:`UserError` now when ``path``
    cannot be one (a directory, a FIFO, a device), so that a command can refuse an output
    path before it does its work rather than after."""
    return _write_target(path)


def _temp_beside(path: Path) -> tuple[int, Path]:
    """A new temporary file next to ``path`` (same filesystem, so the rename is atomic),
    open as ``fd``, with the permissions ``path`` is to have. A folder that cannot hold it
    (a file stands in the path, no permission) is a :class:`UserError` naming ``path``."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise UserError(f"{path}: cannot write: {exc.strerror or exc}") from None
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
    target = _write_target(path)
    fd, tmp = _temp_beside(target)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
        _fsync_dir(target.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` all at once (temp file + fsync + rename); through a
    symlink, its target. A directory or a special file under the name is a
    :class:`UserError`."""
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


# Any character of a string json decoded from a UTF-8 file is Unicode text but a UTF-16
# surrogate, which only a "\\ud800"-style escape can give (json joins a high one and the
# low one right after it into one character, so any left is lone).
_SURROGATE = re.compile("[\ud800-\udfff]")
# A JSON escape: \uXXXX (group 1), or a backslash and one character (so that an escaped
# backslash followed by "ud800" is not read as an escape).
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)", re.S)


def _has_surrogate_escape(text: str) -> bool:
    """Whether ``text`` may hold a surrogate escape: the cheap test that lets the files
    without one (nearly all) skip the check."""
    return "\\ud" in text or "\\uD" in text


def _not_unicode(value: object, where: str = "") -> str | None:
    """Where in ``value`` (decoded JSON) the first string that is not Unicode text is:
    ``question``, ``data[0].paragraphs[1].context``, ``""`` for ``value`` itself; None when
    every string (keys too) is text."""
    if isinstance(value, str):
        return where if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            key = str(key)
            if _SURROGATE.search(key):  # shown escaped: the key itself cannot be printed
                return f"{where}.{key!a}" if where else ascii(key)
            found = _not_unicode(item, f"{where}.{key}" if where else key)
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _not_unicode(item, f"{where}[{i}]")
            if found is not None:
                return found
    return None


def _lone_escape_line(text: str) -> int:
    """The line of ``text`` (JSON) where its first lone surrogate escape is: a high one
    (``\\ud800``-``\\udbff``) not followed at once by a low one, or a low one alone."""
    high: tuple[int, int] | None = None  # (start, end) of a high escape waiting for its pair
    at = 0
    for match in _ESCAPE.finditer(text):
        code = int(match.group(1), 16) if match.group(1) else None
        if high is not None:
            if code is not None and 0xDC00 <= code <= 0xDFFF and match.start() == high[1]:
                high = None
                continue
            at = high[0]
            break
        if code is not None and 0xD800 <= code <= 0xDBFF:
            high = (match.start(), match.end())
        elif code is not None and 0xDC00 <= code <= 0xDFFF:
            at = match.start()
            break
    else:
        at = high[0] if high is not None else 0
    return text.count("\n", 0, at) + 1


def check_unicode_text(path: Path, value: object, text: str, *, line: int | None = None) -> None:
    """Refuse ``value``, the JSON decoded from ``text`` (line ``line`` of ``path``, or the
    whole file), when a string in it is not Unicode text (a lone surrogate escape such as
    ``"\\ud800"``): a :class:`RecordFileError` naming the file, the line and the field.
    Such a string passes ``json`` but breaks whatever writes, hashes or prints it next. Free
    on text without a ``\\ud`` escape; only text with one is looked through."""
    if not _has_surrogate_escape(text):
        return
    where = _not_unicode(value)
    if where is None:
        return
    number = line if line is not None else _lone_escape_line(text)
    field = f" {where}:" if where else ""
    raise RecordFileError(
        f"{path}:{number}:{field} not valid Unicode text (a lone surrogate escape such as "
        "\\ud800 is half of a character): fix or remove it"
    )


def _deepest_at(text: str) -> int:
    """Where in ``text`` (JSON) its nesting of arrays and objects first reaches its greatest
    depth (brackets inside strings do not count): where to point at JSON nested too deeply."""
    depth = deepest = at = 0
    in_string = escaped = False
    for i, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest, at = depth, i
        elif char in "]}":
            depth -= 1
    return at


class RepeatedKeyError(ValueError):
    """One object of a user's JSON gives a key twice: JSON would keep the last silently."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} is given twice in one object (JSON keeps only the last)")
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise RepeatedKeyError(key)
            seen.add(key)
    return out


def parse_json(text: str, *, unique_keys: bool = False, **kwargs: Any) -> Any:
    """``json.loads(text, **kwargs)``, where JSON nested deeper than the parser can follow
    (some thousand ``[``: Python's recursion limit) is a :class:`json.JSONDecodeError`
    ("nested too deeply", at the line of its deepest point) like any other JSON ragaudit
    cannot read, rather than a RecursionError: every reader of a file already reports
    a decode error in one line with the file and line. No record of ragaudit nests more
    than a few levels.

    With ``unique_keys`` (a user's input file, where a key given twice is a mistake to
    report, never a silent choice of the last), such an object is a
    :class:`RepeatedKeyError`; ragaudit's own files are read without the check, which
    costs time on millions of lines.

    >>> parse_json('{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> parse_json('{"a": 1, "a": 2}', unique_keys=True)
    Traceback (most recent call last):
    ...
    ragaudit.records.io.RepeatedKeyError: key 'a' is given twice in one object ...
    """
    if unique_keys:
        kwargs.setdefault("object_pairs_hook", _unique_keys)
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        raise json.JSONDecodeError(
            "arrays or objects nested too deeply to read", text, _deepest_at(text)
        ) from None


def _open_to_read(path: Path) -> IO[bytes]:
    """``path`` open for reading bytes. A name that is missing, a directory where a file is
    expected (``--import DIR``, a run's ``judgements/x.jsonl`` made a folder) or a file
    that cannot be read is a :class:`RecordFileError` naming it, in one line: every reader
    of a user's or a run's file opens it here."""
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise RecordFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise RecordFileError(f"{path}: is a directory, not a file") from None
    except OSError as exc:  # no permission, a loop of links, ...
        raise RecordFileError(f"{path}: cannot read: {exc.strerror or exc}") from None


def read_utf8_text(path: Path) -> str:
    """The text of ``path``, read as UTF-8 (a leading byte order mark is dropped); bytes that
    are not UTF-8 are a :class:`RecordFileError` that names the line, never a traceback, and
    so is a name that is no file (:func:`_open_to_read`)."""
    with _open_to_read(path) as handle:
        data = handle.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RecordFileError(not_utf8(path, data, exc)) from None


_BOM = b"\xef\xbb\xbf"  # the byte order mark some Windows tools start a UTF-8 file with
# What a line of a JSON Lines file is, once read: an object, nothing (a blank line), or the
# end of the file (a torn last line of an appended file, skipped).
_BLANK = object()
_END = object()


def _line_object(
    path: Path, number: int, raw: bytes, skip_torn_tail: bool, unique_keys: bool = False
) -> object:
    """Line ``number`` of ``path`` (its bytes ``raw``) as a JSON object (a dict), or
    :data:`_BLANK` or :data:`_END`; a line that is not one (or, with ``unique_keys``, one
    that gives a key twice) is a :class:`RecordFileError` naming it (see
    :func:`iter_jsonl_dicts`)."""
    try:
        # Decoded line by line, so that a bad byte is reported at its own line.
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if skip_torn_tail and not raw.endswith(b"\n"):  # cut inside a character
            return _END
        raise RecordFileError(not_utf8(path, raw, exc, line=number)) from None
    if number == 1 and line.startswith("\ufeff"):  # a byte order mark (Windows tools)
        line = line[1:]
    if not line.strip():
        return _BLANK
    try:
        obj = parse_json(line, unique_keys=unique_keys)
    except json.JSONDecodeError as exc:
        if skip_torn_tail and not line.endswith("\n"):
            return _END
        raise RecordFileError(f"{path}:{number}: not valid JSON: {exc.msg}") from None
    except RepeatedKeyError as exc:
        raise RecordFileError(f"{path}:{number}: {exc}") from None
    if not isinstance(obj, dict):
        raise RecordFileError(f"{path}:{number}: expected a JSON object per line")
    if "\\ud" in line or "\\uD" in line:  # the test of check_unicode_text, inline
        check_unicode_text(path, obj, line, line=number)
    return obj


def iter_jsonl_dicts(
    path: Path, *, skip_torn_tail: bool = True, unique_keys: bool = False
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each line of a JSON Lines file, streaming.

    A last line without its newline that does not parse is the trace of a killed append and
    is skipped when ``skip_torn_tail``: only for the files ragaudit itself appends to. A
    user's input file is read with ``skip_torn_tail=False``, so that its bad last line is
    an error. Anywhere else a bad line, one that is not UTF-8, or one whose strings are not
    Unicode text (:func:`check_unicode_text`) is a :class:`RecordFileError` naming the line,
    and so is, with ``unique_keys`` (a user's input), an object that gives a key twice.
    """
    with _open_to_read(path) as handle:
        for number, raw in enumerate(handle, start=1):
            obj = _line_object(path, number, raw, skip_torn_tail, unique_keys)
            if obj is _END:
                return
            if obj is not _BLANK:
                yield number, obj  # type: ignore[misc]  # a dict: the only other outcome


def validate_record(path: Path, number: int, obj: dict[str, Any], model: type[M]) -> M:
    """``obj``, line ``number`` of ``path``, as a ``model`` record; a record that is not
    one is a :class:`RecordFileError` naming the line and the field."""
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(record)"
        message = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
        raise RecordFileError(f"{path}:{number}: {where}: {message}") from None


def read_jsonl_numbered(
    path: Path, model: type[M], *, skip_torn_tail: bool = True
) -> Iterator[tuple[int, M]]:
    """Stream ``(line_number, record)`` of ``model`` from a JSON Lines file; errors name
    the file and line, as :func:`iter_jsonl_dicts` and :func:`read_jsonl` word them.

    A line is validated straight from its bytes (pydantic's JSON parser: a typed read costs
    what ``json.loads`` alone does); a line that fails there, or that holds a surrogate
    escape or a byte order mark, takes the line-by-line path of :func:`iter_jsonl_dicts`,
    so that what is refused, skipped (a torn last line) or reported is the same."""
    validate_json = model.model_validate_json
    with _open_to_read(path) as handle:
        for number, raw in enumerate(handle, start=1):
            if not (b"\\ud" in raw or b"\\uD" in raw or (number == 1 and raw[:3] == _BOM)):
                try:
                    record = validate_json(raw)
                except ValidationError:
                    pass  # a blank, torn or bad line: read and worded below, as ever
                else:
                    yield number, record
                    continue
            obj = _line_object(path, number, raw, skip_torn_tail)
            if obj is _END:
                return
            if obj is not _BLANK:
                yield number, validate_record(path, number, obj, model)  # type: ignore[arg-type]


def read_jsonl(path: Path, model: type[M]) -> Iterator[M]:
    """Stream ``model`` records from a JSON Lines file; errors name the file and line."""
    for _, record in read_jsonl_numbered(path, model):
        yield record


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

    rows = [r.model_dump(mode="json") for r in records]
    names: list[str] = []
    for row in rows:
        names.extend(k for k in row if k not in names)
    table = pa.table({name: _column([row.get(name) for row in rows]) for name in names})
    write_parquet_atomic(path, table)
    return len(rows)


def write_parquet_atomic(path: Path, table: pa.Table) -> None:
    """Replace ``path`` with ``table`` as Parquet all at once (a temporary file beside it,
    renamed over it), keeping the table's schema metadata; as :func:`atomic_write_text`,
    a directory or a special file under the name is a :class:`UserError`."""
    import pyarrow.parquet as pq

    target = _write_target(path)
    fd, tmp = _temp_beside(target)
    os.close(fd)
    try:
        pq.write_table(table, str(tmp))
        os.replace(tmp, target)
        _fsync_dir(target.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def staged_folder(out: Path) -> Iterator[Path]:
    """A folder beside ``out`` to write into, renamed into place when the block ends
    (replacing ``out``) and removed if it fails: a killed build never leaves a half folder
    (a world, an index) that looks complete."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        yield tmp
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
