"""The joined answer table: one row per answer of the run (its question, the response,
the verdict, the reference-free scores and where the answer went wrong), kept as
``answers.parquet`` beside the JSON Lines it is built from. With ``run --repeat N``, one
row per asking: ``repeat`` says which (0, the first asking, for a run without repeats).

The JSON Lines stay the source of truth, which a user may edit. The Parquet file holds
what they gave when it was built, with their fingerprint in its metadata (and its entry in
the run's manifest): the path and content digest of each source file (``dataset.jsonl``
and every file under ``responses/``, ``judgements/``, ``scores/`` and ``repeats/``), the
table's version and ragaudit's. A reader compares it with the files as they are now: a
file that does not match (a source appended to, rewritten or edited by hand, added or
removed), or that cannot be read, is rebuilt from the JSON Lines, never trusted.
``run``, ``judge`` and ``judge --reference-free`` build it once at their end, so that the
readers after them (``Project.answers()``) find it ready.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragaudit.analysis.metrics import Example, by_system_and_variant, source_of, without_retriever
from ragaudit.analysis.metrics import analyze as analyze_examples
from ragaudit.errors import UserError
from ragaudit.judge.cascade import retrieval_rule_of
from ragaudit.records.io import write_parquet_atomic
from ragaudit.records.models import (
    FreeScoreRecord,
    Judgement,
    QueryRecord,
    RepeatJudgement,
    RepeatResponse,
    ResponseRecord,
)
from ragaudit.rundir import RunDir
from ragaudit.store.examples import judged_examples
from ragaudit.store.manifest import open_manifest
from ragaudit.store.records import (
    check_fresh,
    check_fresh_repeats,
    read_dataset,
    read_fresh_scores,
    read_run_records,
    record_files,
)
from ragaudit.version import __version__

if TYPE_CHECKING:
    import pyarrow as pa

# Raised whenever the table's columns or how they are computed change: a file of another
# version is rebuilt. 2: a judgement of another response than the table's is refused;
# 3: ``where`` counts a refusal to an unanswerable question, and any right answer, as
# correct (issue 41); 4: a judgement given against another reference than the question
# has now is refused (issue 38, refresh); 5: repeat, and a row per repeat of
# run --repeat N (issue 38, repeats); 6: label, gold_kind and answerable, which the
# figures need, so that analyze can aggregate the table in SQL (issue 40); 7: a system
# without a retriever has no retriever to blame in ``where`` (as analyze says it); 8: the
# footer records the retrieval rules of its judgements, which a table of 7 lacks: rebuilt,
# never labelled by judge.stats.json instead.
TABLE_VERSION = 8
FINGERPRINT_KEY = b"ragaudit.fingerprint"
# The retrieval rules the table's judgements were given by (a JSON list): what labels the
# retrieval verdicts it holds.
RULES_KEY = b"ragaudit.retrieval_rules"

# The columns, in order, and what each holds (docs/records.md describes them).
COLUMNS = (
    "system",
    "query_id",
    "repeat",  # which asking of the query (run --repeat N): 0 for the first
    "query",
    "variant",
    "group_id",
    "source",
    "label",  # the question type (document-grounded queries), or null
    "reference",  # its display string
    "answer",  # the response's text; null when the system failed
    "error",
    "correct",  # null: not judged yet, or the judge failed
    "method",  # how the verdict was reached (match:<rule>, llm, ...)
    "retrieval_correct",
    "retrieved_ids",
    "gold_ids",
    "gold_kind",  # what the gold ids mean: states, entity, or null
    "answerable",  # false for a question that has no answer (a refusal is right)
    "where",  # correct, or the module at fault (docs/records.md); null when unjudged
    "rationale",
    "scores",  # reference-free metric -> score (null: could not be computed)
)


def _schema() -> pa.Schema:
    import pyarrow as pa

    text, flag, ids = pa.string(), pa.bool_(), pa.list_(pa.string())
    types = {
        "repeat": pa.int64(),
        "correct": flag,
        "retrieval_correct": flag,
        "answerable": flag,
        "retrieved_ids": ids,
        "gold_ids": ids,
        "scores": pa.map_(pa.string(), pa.float64()),
    }
    return pa.schema([(name, types.get(name, text)) for name in COLUMNS])


def source_files(run: RunDir) -> list[Path]:
    """The files the table is built from: the dataset, then every responses, judgements
    and scores file of the run, and those of the repeats."""
    return [
        run.dataset,
        *record_files(run, ResponseRecord),
        *record_files(run, Judgement),
        *record_files(run, FreeScoreRecord),
        *record_files(run, RepeatResponse),
        *record_files(run, RepeatJudgement),
    ]


def fingerprint(run: RunDir) -> str:
    """The source files as they are now (each by its path in the run and its digest in the
    run's manifest, :mod:`ragaudit.store.manifest`: a content digest, so a run folder
    copied elsewhere keeps its table), with the table's version and ragaudit's, as JSON
    text: a table built from other files, or by another version, has another
    fingerprint."""
    manifest = open_manifest(run)
    files = manifest.digests(source_files(run))
    manifest.save()
    return json.dumps(
        {"table": TABLE_VERSION, "ragaudit": __version__, "files": sorted(files.items())},
        separators=(",", ":"),
    )


def _where(
    examples: list[Example], judge_failed: list[Example] | None = None
) -> dict[tuple[str, str], str]:
    """(system, query id) -> where each judged answer went wrong, or ``correct``, as
    ``analyze`` says it (its group's tag for the system and wording; the gold documents
    when known), so that the table's ``where`` counts what summary.json's blame counts:
    the answers read as analyze reads them, a system without a retriever with no
    retrieval to blame (``without_retriever``, which ``judge_failed`` informs)."""
    examples, _ = without_retriever(examples, judge_failed or [])
    tags = analyze_examples(examples).tags
    where: dict[tuple[str, str], str] = {}
    # The examples with the retrieval verdicts analyze gives them.
    for variants in by_system_and_variant(examples).values():
        for items in variants.values():
            for ex in items:
                tag = tags.get(ex.system, {}).get(ex.variant, {}).get(ex.group_id)
                if tag is not None:
                    where[ex.system, ex.query_id] = source_of(ex, tag)[0]
    return where


def build_answer_table(run: RunDir, mark: str | None = None) -> pa.Table:
    """The table from the run's JSON Lines: one row per response to a question the dataset
    holds, in the order of the responses files (by name) and their lines, joined by query
    id with the system's judgement and scores. ``mark`` (the :func:`fingerprint` of the
    sources, taken before they are read) goes into the table's metadata.

    A second response, judgement or score of one (system, query), in its file or in
    another, is a one-line error naming both files, as in every reader of the run's
    records; so is a judgement of a query the dataset does not hold. No dataset is a
    :class:`UserError`."""
    import pyarrow as pa

    if not run.dataset.exists():
        raise UserError(f"no dataset at {run.dataset}: generate one first")
    queries = read_dataset(run)
    index = queries.by_id
    judgement_files = [list(records) for _, records in read_run_records(run, Judgement)]
    judged = {(j.system, j.query_id): j for file in judgement_files for j in file}
    scores: dict[tuple[str, str], list[tuple[str, float | None]]] = {}
    for _, records in read_fresh_scores(run):
        for s in records:
            scores[s.system, s.query_id] = [(name, m.score) for name, m in s.metrics.items()]
    columns: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    keys: list[tuple[str, str]] = []
    retrieved: dict[str, dict[str, tuple[str, ...]]] = {}
    # System -> query id -> the fingerprint of the response now, where a judgement of it
    # keeps the one it judged: what check_fresh compares.
    digests: dict[str, dict[str, str]] = {}
    for _, responses in read_run_records(run, ResponseRecord):
        for r in responses:
            ids = r.retrieved_ids
            retrieved.setdefault(r.system, {})[r.query_id] = tuple(ids)
            key = (r.system, r.query_id)
            j = judged.get(key)
            if j is not None and j.response_digest is not None:
                digests.setdefault(r.system, {})[r.query_id] = r.digest
            q = index.get(r.query_id)
            if q is None:
                continue  # a response to a question no longer in the dataset
            keys.append(key)
            _add_row(columns, r, q, j, 0, scores.get(key, []))
    # A verdict of another response than the one in the table (the system run again) is
    # refused here, where the table is built: a table on disk was built from the files
    # its fingerprint names, so a response changed since makes it stale and rebuilt here.
    for judgements in judgement_files:
        if judgements:
            check_fresh(run, judgements, digests.get(judgements[0].system, {}), index)
    failed: list[Example] = []
    examples = judged_examples(index, judgement_files, retrieved, judge_failed=failed)
    where = _where(examples, failed) if judged else {}
    columns["where"] = [where.get(key) for key in keys]
    _add_repeats(run, index, columns)
    schema = _schema()
    rules = sorted({rule for j in judged.values() if (rule := retrieval_rule_of(j.judged_under))})
    metadata = {RULES_KEY: json.dumps(rules).encode("utf-8")}
    if mark is not None:
        metadata[FINGERPRINT_KEY] = mark.encode("utf-8")
    schema = schema.with_metadata(metadata)
    return pa.Table.from_pydict(columns, schema=schema)


def judged_rules(path: Path) -> set[str] | None:
    """The retrieval rules the judgements of the answer table at ``path`` were given by,
    from its footer alone; None for a footer without them (never one that
    :func:`fresh_answer_table` returns: such a table is built again)."""
    import pyarrow.parquet as pq

    raw = (pq.read_schema(path).metadata or {}).get(RULES_KEY)
    return None if raw is None else set(json.loads(raw))


def _add_repeats(
    run: RunDir, index: Mapping[str, QueryRecord], columns: dict[str, list[Any]]
) -> None:
    """The rows of the repeats (``run --repeat N``), after the first askings': one per
    (system, query, repeat) of the repeats' responses files, joined with its judgement;
    where it went wrong as analyze would say it of that repeat alone (its groups' tags
    among the answers of the same repeat). Their reference-free scores are empty: those
    are computed for first askings only."""
    judgement_files = [list(records) for _, records in read_run_records(run, RepeatJudgement)]
    judged = {(j.system, j.query_id, j.repeat): j for file in judgement_files for j in file}
    retrieved: dict[int, dict[str, dict[str, tuple[str, ...]]]] = {}
    digests: dict[str, dict[tuple[str, int], str]] = {}
    keys: list[tuple[str, str, int]] = []
    for _, responses in read_run_records(run, RepeatResponse):
        for r in responses:
            ids = r.retrieved_ids
            retrieved.setdefault(r.repeat, {}).setdefault(r.system, {})[r.query_id] = tuple(ids)
            digests.setdefault(r.system, {})[r.query_id, r.repeat] = r.digest
            q = index.get(r.query_id)
            if q is None:
                continue  # a repeat of a question no longer in the dataset
            key = (r.system, r.query_id, r.repeat)
            j = judged.get(key)
            keys.append(key)
            _add_row(columns, r, q, j, r.repeat, [])
    for judgements in judgement_files:
        if judgements:
            check_fresh_repeats(run, judgements, digests.get(judgements[0].system, {}))
    where: dict[tuple[str, str, int], str] = {}
    for repeat in sorted({j.repeat for file in judgement_files for j in file}):
        files: list[list[Judgement]] = [
            [j for j in file if j.repeat == repeat] for file in judgement_files
        ]
        failed: list[Example] = []
        examples = judged_examples(index, files, retrieved.get(repeat, {}), judge_failed=failed)
        for (system, query_id), part in _where(examples, failed).items():
            where[system, query_id, repeat] = part
    columns["where"] += [where.get(key) for key in keys]


def _current(schema: pa.Schema, mark: str) -> bool:
    """Whether a table's footer says it was built from the sources as they are now (its
    fingerprint is ``mark``) and records its judgements' retrieval rules: a footer
    without them (stripped, or written before they were kept) cannot label its verdicts,
    so the table is built again rather than labelled by judge.stats.json."""
    metadata = schema.metadata or {}
    return metadata.get(FINGERPRINT_KEY) == mark.encode("utf-8") and RULES_KEY in metadata


def _stored(path: Path, mark: str) -> pa.Table | None:
    """The table in ``path`` when it was built from the sources as they are now (its
    fingerprint is ``mark``) and reads whole; None otherwise."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.is_file():
        return None
    try:
        if not _current(pq.read_schema(path), mark):
            return None
        table = pq.read_table(path)
    except (OSError, ValueError, pa.ArrowException):
        return None  # not Parquet, cut short, unreadable: built again
    return table if table.schema.equals(_schema()) else None


def write_answer_table(run: RunDir) -> pa.Table:
    """Build the table from the run's JSON Lines and write it to ``answers.parquet``
    (atomically), recorded in the run's manifest; return it."""
    mark = fingerprint(run)  # before the sources are read: a change during the read shows
    table = build_answer_table(run, mark)
    _write(run, table, mark)
    return table


def _write(run: RunDir, table: pa.Table, mark: str) -> None:
    """Write the table and record it in the manifest with the digests it was built from."""
    manifest = open_manifest(run)  # before the table is there to be taken in
    write_parquet_atomic(run.answers_table, table)
    manifest.record("answers", inputs=dict(json.loads(mark)["files"]))


def fresh_answer_table(run: RunDir) -> Path:
    """The path of the run's ``answers.parquet``, built again and written first where its
    fingerprint does not match the source files as they are now: for a reader that
    queries the file itself (the SQL path of ``analyze``) rather than loading it. Only
    the file's footer is read when it is fresh."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = run.answers_table
    mark = fingerprint(run)
    try:
        schema = pq.read_schema(path)
        fresh = _current(schema, mark) and schema.remove_metadata().equals(_schema())
    except (OSError, ValueError, pa.ArrowException):
        fresh = False
    if not fresh:
        _write(run, build_answer_table(run, mark), mark)
    return path


def read_answer_table(run: RunDir, *, write: bool = True) -> pa.Table:
    """The run's answer table: ``answers.parquet`` when its fingerprint matches the source
    files as they are now, else built from them again and (``write``) written back (where
    the run directory cannot be written, the table built is returned all the same)."""
    mark = fingerprint(run)
    table = _stored(run.answers_table, mark)
    if table is not None or not write:
        return table if table is not None else build_answer_table(run, mark)
    table = build_answer_table(run, mark)
    with contextlib.suppress(OSError, UserError):  # a read-only run: the file stays as it is
        _write(run, table, mark)
    return table


def refresh_answer_table(run: RunDir) -> None:
    """What a step that changed the table's sources (``run``, ``judge``, ``judge
    --reference-free``) calls at its end: the table built and written once. Where the
    run's files cannot be joined (a second judgements file of a system, a judgement of a
    query no longer in the dataset) the step has still done its work: the table is
    removed, and whoever reads it next gets the one-line error."""
    try:
        write_answer_table(run)
    except UserError:
        with contextlib.suppress(OSError):
            run.answers_table.unlink()
        open_manifest(run).forget("answers")


def _add_row(
    columns: dict[str, list[Any]],
    r: ResponseRecord,
    q: QueryRecord,
    j: Judgement | None,
    repeat: int,
    scores: list[tuple[str, float | None]],
) -> None:
    """Append one answer's row (an asking ``repeat`` of query ``q``, its response ``r``
    and judgement ``j``) to ``columns``: one place for what a row holds, first askings
    and repeats alike."""
    for name, value in (
        ("system", r.system),
        ("query_id", q.query_id),
        ("repeat", repeat),
        ("query", q.query),
        ("variant", q.variant),
        ("group_id", q.group_id),
        ("source", q.source),
        ("label", q.label),
        ("reference", q.reference.display),
        ("answer", r.response),
        ("error", r.error),
        ("correct", j.correct if j else None),
        ("method", j.method if j else None),
        ("retrieval_correct", j.retrieval_correct if j else None),
        ("retrieved_ids", r.retrieved_ids),
        ("gold_ids", q.gold_ids),
        ("gold_kind", q.gold_kind),
        ("answerable", bool(q.reference.values)),
        ("rationale", j.rationale if j else None),
        ("scores", scores),
    ):
        columns[name].append(value)
