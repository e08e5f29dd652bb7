"""Typed readers of a run's other files of known shape: drilldown.jsonl (what
``analyze`` writes, one line per analyzed query), usage.json and documents.stats.json."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NotRequired

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

# pydantic reads a TypedDict from typing only from Python 3.12 on.
from typing_extensions import TypedDict

from ragaudit.analysis.summary import Source, Tag
from ragaudit.generate.sql.coverage import SchemaCoverage
from ragaudit.llm.usage import UsageFile
from ragaudit.records.io import (
    RecordFileError,
    atomic_write_json,
    iter_jsonl_dicts,
    parse_json,
    read_jsonl,
    read_utf8_text,
)
from ragaudit.rundir import RunDir
from ragaudit.store.manifest import hash_file, notify, open_manifest


class DrilldownRow(TypedDict):
    """One line of drilldown.jsonl: an analyzed query with its group's tag, its verdicts
    and where it went wrong (``source``). A query of the run has its texts (``query``,
    ``reference``); a line of a neutral input (``analyze --neutral``) has the input line
    as it was (``record``) instead."""

    system: str
    variant: str
    group_id: str
    tag: Tag
    query_id: str
    query: NotRequired[str | None]
    reference: NotRequired[str | None]
    correct: bool
    retrieval_correct: bool | None
    source: Source
    record: NotRequired[dict[str, Any]]


_DRILLDOWN_ROW: TypeAdapter[DrilldownRow] = TypeAdapter(DrilldownRow)


def read_drilldown(run: RunDir, tags: frozenset[str] | None = None) -> Iterator[DrilldownRow]:
    """The lines of the run's drilldown.jsonl (none when ``analyze`` has not written it),
    each checked against :class:`DrilldownRow`; with ``tags``, only the lines of those
    group tags are checked and given (the file holds a line per query: a million lines
    for a million queries). A line that is not a row is a one-line error naming it."""
    path = run.drilldown
    if not path.exists():
        return
    for number, obj in iter_jsonl_dicts(path):
        if tags is not None and obj.get("tag") not in tags:
            continue
        try:
            yield _DRILLDOWN_ROW.validate_python(obj)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "(record)"
            raise RecordFileError(f"{path}:{number}: {where}: {err['msg']}") from None


def read_usage(run: RunDir) -> UsageFile | None:
    """The run's usage.json (the LLM usage of every step), or None when no step wrote
    one; a file that is not one is a one-line error naming it."""
    path = run.usage
    if not path.exists():
        return None
    text = read_utf8_text(path)
    try:
        return UsageFile.model_validate(parse_json(text))
    except json.JSONDecodeError as exc:
        raise RecordFileError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(file)"
        raise RecordFileError(f"{path}: {where}: {err['msg']}") from None


class _GenerationOptions(BaseModel):
    """What documents.stats.json says of the options it ran with that the analysis reads."""

    model_config = ConfigDict(extra="ignore")

    thresholds: dict[str, int] = Field(default_factory=dict)


class DocumentsStatsFile(BaseModel):
    """What the analysis reads of documents.stats.json (the counts and costs of the last
    generation from documents): the critique thresholds the candidates were checked at."""

    model_config = ConfigDict(extra="ignore")

    options: _GenerationOptions = Field(default_factory=_GenerationOptions)


def read_documents_thresholds(run: RunDir) -> dict[str, int]:
    """The critique thresholds of the run's last generation from documents, by critique;
    none when there is no documents.stats.json, or it cannot be read (the analysis then
    uses the default thresholds)."""
    try:
        text = read_utf8_text(run.documents_stats)
        return DocumentsStatsFile.model_validate(parse_json(text)).options.thresholds
    except (RecordFileError, ValueError):
        return {}


def write_coverage(run: RunDir, coverage: SchemaCoverage | None) -> None:
    """``templates/coverage.json``: the coverage, with the digest of the templates/sql.yaml
    it was computed from, so that a reader (the report) shows it only while that file is
    the one the run holds."""
    if coverage is None:
        run.templates_coverage.unlink(missing_ok=True)
        return
    atomic_write_json(
        run.templates_coverage,
        {"templates_sha256": hash_file(run.templates_sql), **coverage.to_dict()},
    )


def read_coverage(run: RunDir) -> tuple[SchemaCoverage | None, str | None]:
    """The coverage ``templates sql`` recorded, and why there is none to show: no file, a
    file that cannot be read, or one computed from another templates/sql.yaml than the
    run's (edited since: run ``ragaudit templates sql`` to count it again)."""
    path = run.templates_coverage
    if not path.is_file():
        return None, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        coverage = SchemaCoverage.from_dict(data)
    except (ValueError, OSError, KeyError, TypeError, AttributeError):
        return None, f"{path} cannot be read: run ragaudit templates sql to write it again"
    if not run.templates_sql.is_file() or data.get("templates_sha256") != hash_file(
        run.templates_sql
    ):
        return None, (
            "templates/sql.yaml changed since its coverage was counted: run ragaudit "
            "templates sql to count it again"
        )
    return coverage, None


def current_dataset_stats(run: RunDir) -> Path | None:
    """dataset.stats.json as it describes the dataset now, or None where there is none:
    where the dataset changed since the file was written (copied from another run by
    ``use_dataset``, edited by hand), its counts are recounted from dataset.jsonl as
    ``generate --refresh`` recounts them (what only generation saw is kept, and the
    overview says which is which), the file rewritten and said once. Every reader of the
    counts (the report's Dataset section, ``Project.dataset()``) goes through it."""
    from ragaudit.generate.dataset import recounted
    from ragaudit.records.models import QueryRecord

    path = run.dataset_stats
    if not path.is_file() or not run.dataset.is_file():
        return path if path.is_file() else None
    manifest = open_manifest(run)
    fresh = manifest.check("dataset_stats")
    if fresh.current:
        return path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return path  # its reader says what is wrong with it
    if not isinstance(data, dict):
        return path
    # The tables each template reads, as generation recorded them (a template it did
    # not see, in a dataset from elsewhere, counts in the overview alone).
    tables_of = {
        str(t["template_id"]): list(t.get("tables") or [])
        for t in data.get("templates") or []
        if isinstance(t, dict) and "template_id" in t
    }
    atomic_write_json(path, recounted(data, read_jsonl(run.dataset, QueryRecord), tables_of))
    manifest.record("dataset_stats")
    notify(
        f"{path.name} was recounted from dataset.jsonl ({fresh.why}): its groups and "
        "questions are the dataset's as it is now"
    )
    return path
