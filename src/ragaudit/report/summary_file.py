"""summary.json on disk: written from, and read back into, the typed
:class:`~ragaudit.analysis.summary.Summary`; and its JSON Schema.

``python -m ragaudit.report.summary_file [PATH]`` writes the schema generated from the
models (to PATH, or to stdout): ``docs/summary.schema.json`` is its output.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from pydantic import ValidationError

from ragaudit.analysis.summary import Summary, summary_schema
from ragaudit.errors import UserError
from ragaudit.records.io import atomic_write_json, atomic_write_text


def write_summary(path: Path, summary: Summary) -> None:
    """Write ``summary`` as indented, strict JSON (no NaN), atomically."""
    atomic_write_json(path, summary.model_dump(mode="json"))


def read_summary(path: Path) -> Summary:
    """summary.json as a :class:`Summary`; one without ``schema_version`` (written by an
    older ragaudit) reads as version 1. A missing, unreadable or broken file is a
    :class:`UserError` of one line that names it."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"no {path}: run ragaudit analyze first") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read it: {exc.strerror}") from None
    try:
        summary = Summary.model_validate_json(data)
    except ValidationError as exc:
        raise UserError(_problem(path, exc)) from None
    if b'"schema_version"' not in data:  # written before the field existed
        summary = summary.model_copy(update={"schema_version": 1})
    return summary


def _problem(path: Path, exc: ValidationError) -> str:
    """The first problem of a broken summary.json, in one line: where in the file (the
    line for JSON that does not parse, the field otherwise) and what is wrong."""
    err = exc.errors(include_url=False)[0]
    if err["type"] == "json_invalid":
        detail = str((err.get("ctx") or {}).get("error", err["msg"]))
        at = re.search(r" at line (\d+) column \d+$", detail)
        where = f"{path}:{at.group(1)}" if at else str(path)
        return f"{where}: not valid JSON: {detail[: at.start()] if at else detail}"
    field = ".".join(str(part) for part in err["loc"]) or "(summary)"
    if err["type"] == "extra_forbidden":
        message = "unknown field"
    elif err["type"] == "value_error":
        message = str((err.get("ctx") or {}).get("error", err["msg"]))
    else:
        message = err["msg"]
    return f"{path}: not a valid summary: {field}: {message}"


def schema_text() -> str:
    """docs/summary.schema.json as the models generate it."""
    return json.dumps(summary_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> None:
    """Write the schema to the path given, or to stdout."""
    if argv:
        atomic_write_text(Path(argv[0]), schema_text())
    else:
        sys.stdout.write(schema_text())


if __name__ == "__main__":
    main(sys.argv[1:])
