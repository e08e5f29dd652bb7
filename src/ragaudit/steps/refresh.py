"""The ``generate --refresh`` step: the dataset's references executed again on the
database as it is now (:mod:`ragaudit.generate.refresh`), dataset.jsonl written again,
what moved in refresh.jsonl and refresh.stats.json, and the records of every question
that left the dataset moved to ``retired/``.

Files are replaced in an order that leaves a usable run wherever a process is killed:
the records of the questions that leave are copied to ``retired/`` and taken out of
``responses/``, ``judgements/`` and ``scores/`` first (a question without a response is
one still to ask), then dataset.jsonl is replaced, then refresh.jsonl and
refresh.stats.json. A refresh run again after a kill finds the same changes and finishes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

from ragaudit.config import Config, GenerateOptions
from ragaudit.errors import UserError
from ragaudit.generate.dataset import recounted, template_reads
from ragaudit.generate.refresh import (
    VALUE_GONE,
    Refresher,
    RefreshReport,
    RefreshTally,
    stale_cells,
    stale_documents,
)
from ragaudit.generate.sql.templates import TemplateFileError, load_templates
from ragaudit.generate.text.templates import load_text_templates
from ragaudit.progress import SILENT, Progress
from ragaudit.records.io import (
    atomic_write_json,
    read_jsonl,
    read_jsonl_numbered,
    write_jsonl_atomic,
)
from ragaudit.records.models import QueryRecord, RefreshedGroup, StaleDocument
from ragaudit.rundir import RunDir
from ragaudit.steps.generate import usable_texts
from ragaudit.steps.templates import check, open_database
from ragaudit.store.manifest import open_manifest
from ragaudit.store.records import remove_records
from ragaudit.systems.corpus import load_corpus

# The options of dataset.stats.json that shaped the dataset: a refresh keeps the dataset's
# groups (changed, unchanged and new) and words new ones as the generation did, whatever
# flags it was given.
SHAPING = (
    "allow_multi",
    "include_unanswerable",
    "include_null",
    "max_groups_per_template",
    "balanced",
    "unverified",
    "seed",
    "styles",
)


def _options(config: Config, run: RunDir) -> GenerateOptions:
    """The generation's options: the configuration's, with those that shaped the dataset
    (styles, balance, what was kept) as dataset.stats.json recorded them, and the facts
    ``generate.gold_rows`` derived into the run."""
    options = config.generate
    if run.dataset_stats.is_file():
        try:
            recorded = json.loads(run.dataset_stats.read_text(encoding="utf-8")).get("options")
        except (ValueError, OSError):
            recorded = None
        if isinstance(recorded, dict):
            shaped = {k: recorded[k] for k in SHAPING if k in recorded}
            options = GenerateOptions.model_validate(options.model_dump() | shaped)
    if options.gold_rows is not None:
        facts = run.gold_facts if run.gold_facts.is_file() else None
        options = options.model_copy(update={"gold_facts": facts, "gold_rows": None})
    return options


def _dumped(records: Iterator[QueryRecord]) -> Iterator[str]:
    """Each record as its line, with the fields its line had (a line written by hand keeps
    its shape)."""
    for q in records:
        yield q.model_dump_json(exclude_unset=True)


def refresh_dataset(
    config: Config, run: RunDir, *, new: bool = False, progress: Progress = SILENT
) -> RefreshReport:
    """Execute every grounded group's SQL again with its bindings on the database as it is
    now, and classify it: unchanged (kept as it is, ids and records too), changed (the new
    reference under new question ids; the old questions' records retired), vanished (a
    value it names is gone, or ``generate`` would leave it out now: its answer is one the
    dataset's options do not keep, or a question of it reads as another group's with
    another answer; it leaves the dataset, its records retired), new (bindings the dataset
    lacks; added only with ``new``, worded and kept as ``generate`` words and keeps them).
    Questions with no SQL (from documents, imported) are left as they are and counted. Where the
    configuration names the facts each document states (``generate.gold_facts``, as a
    generated world does), the documents stating a fact no longer true are listed. Writes
    dataset.jsonl, refresh.jsonl and refresh.stats.json; ``progress`` shows the templates
    executed (``refreshing``)."""
    if not run.dataset.exists():
        raise UserError(f"nothing to refresh: no dataset at {run.dataset} (run ragaudit generate)")
    problems = check(config, run)
    if problems:
        more = f" (and {len(problems) - 1} more; see ragaudit templates check)"
        raise TemplateFileError(problems[0] + (more if len(problems) > 1 else ""))
    options = _options(config, run)
    templates = load_templates(run.templates_sql).templates
    loaded = load_text_templates(run.templates_text)
    texts, _dropped = usable_texts(
        loaded.templates, loaded.verdicts, templates, unverified=options.unverified
    )
    db, schema = open_database(config)
    partial = run.dataset.with_name(run.dataset.name + ".partial")
    try:
        stale: list[StaleDocument] = []
        stale_notes: list[str] = []
        if options.gold_facts is not None:
            corpus = config.corpus.path

            def corpus_texts() -> dict[str, str]:
                return {d.id: d.text for d in load_corpus(corpus)} if corpus else {}

            stale, stale_notes = stale_documents(db, schema, options.gold_facts, corpus_texts)
        refresher = Refresher(
            db, schema, templates, texts, options, new=new, stale=stale_cells(stale)
        )
        for number, query in read_jsonl_numbered(run.dataset, QueryRecord):
            refresher.observe(number, query)
        task = progress.task("refreshing", max(1, len(templates)))
        refresher.execute(on_template=lambda _tid: task.advance())
        # Written again from its lines: only the questions that moved are read as records.
        with run.dataset.open(encoding="utf-8", newline="") as lines:
            write_jsonl_atomic(partial, refresher.rewrite(lines))
        # As generate does, groups a question of which reads as another group's with
        # another answer leave (rare: the file is read again only then).
        conflicting = refresher.conflicting()
        if conflicting:
            kept = refresher.without_conflicting(read_jsonl(partial, QueryRecord), conflicting)
            write_jsonl_atomic(partial, _dumped(kept))
        retired = remove_records(run, refresher.retired, run.retired_dir)
        os.replace(partial, run.dataset)
        # The tables each template reads, as generate counts them (from its SQL).
        tables_of = {t.id: template_reads(t, schema, db.sqlglot_dialect)[0] for t in templates}
    finally:
        partial.unlink(missing_ok=True)
        db.dispose()
    moved = refresher.moved
    _recount(run, tables_of)
    write_jsonl_atomic(run.refresh_log, [*moved, *stale])
    report = _report(refresher.tally, moved, stale, retired, new)
    report.notes.extend(stale_notes)
    atomic_write_json(run.refresh_stats, report.model_dump(mode="json"))
    # answers.parquet is not built here: its fingerprint no longer matches the dataset, so
    # the next reader (or run, or judge) builds it, as after generate.
    return report


def _recount(run: RunDir, tables_of: dict[str, list[str]]) -> None:
    """dataset.stats.json's counts of the dataset recounted from it as the refresh left
    it (:func:`~ragaudit.generate.dataset.recounted`), so that no reader (the report, the
    overview) shows the groups and questions the dataset had before. A stats file that
    cannot be read is left as it is: nothing is made up in its place."""
    if not run.dataset_stats.is_file():
        return
    try:
        data = json.loads(run.dataset_stats.read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return
    if not isinstance(data, dict):
        return
    atomic_write_json(
        run.dataset_stats, recounted(data, read_jsonl(run.dataset, QueryRecord), tables_of)
    )
    open_manifest(run).record("dataset_stats")


def _groups(n: int, kind: str = "") -> str:
    return f"{n} {kind}group" + ("" if n == 1 else "s")


def _report(
    tally: RefreshTally,
    moved: list[RefreshedGroup],
    stale: list[StaleDocument],
    retired: dict[str, int],
    new: bool,
) -> RefreshReport:
    notes = list(tally.notes)
    if tally.dropped_new:
        notes.append(
            f"{_groups(tally.dropped_new, 'new ')} left out: a question of theirs reads as "
            "another group's with another answer"
        )
    for why, n in tally.vanished_why.items():
        if why != VALUE_GONE:  # the others are groups generate would leave out now
            notes.append(
                f"{_groups(n)} left the dataset because generate leaves such a group out: {why}"
            )
    return RefreshReport(
        unchanged=tally.unchanged,
        changed=tally.changed,
        vanished=tally.vanished,
        new=tally.new,
        new_not_added=tally.new_not_added,
        new_asked=new,
        dropped_new=tally.dropped_new,
        vanished_why=dict(tally.vanished_why),
        left_as_is=dict(tally.left_as_is),
        retired=retired,
        stale_documents=len(stale),
        notes=notes,
        moved=moved,
        stale=stale,
    )
