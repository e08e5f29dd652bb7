"""The ``generate`` step: templates instantiated into dataset.jsonl, with gold ids."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ragaudit.config import Config, GenerateOptions
from ragaudit.db import Database, SchemaInfo
from ragaudit.errors import ConfigError, UserError, looked_in
from ragaudit.generate.dataset import (
    DatasetStats,
    TextConflicts,
    WordingTally,
    generate,
    gold_part,
    table_stats,
)
from ragaudit.generate.facts import derive_facts, read_row_map
from ragaudit.generate.sql.enumeration import FILE_HAS_NONE, untemplated
from ragaudit.generate.sql.templates import (
    SqlTemplate,
    TemplateFileError,
    load_templates,
)
from ragaudit.generate.text.templates import (
    TextTemplates,
    Verdict,
    WordingKey,
    load_text_templates,
)
from ragaudit.generate.text.verifier import held, reason_kind, wording_counts
from ragaudit.progress import SILENT, Progress
from ragaudit.records.io import atomic_write_json, read_jsonl, write_jsonl_atomic
from ragaudit.records.models import QueryRecord
from ragaudit.rundir import RunDir
from ragaudit.steps.templates import check, open_database
from ragaudit.store.manifest import open_manifest
from ragaudit.store.records import RECORD_FOLDERS, read_queries, record_files, remove_records
from ragaudit.systems.corpus import load_corpus


def usable_texts(
    texts: TextTemplates,
    verdicts: dict[WordingKey, Verdict],
    sql: list[SqlTemplate],
    *,
    unverified: bool = False,
) -> tuple[TextTemplates, dict[str, dict[str, int]]]:
    """The wordings ``generate`` asks: verified ones (and, with ``unverified``, those never
    verified; a rejected wording never), and per style how many were left out, and why."""
    by_id = {t.id: t for t in sql}
    out: TextTemplates = {}
    dropped: dict[str, dict[str, int]] = {}
    for tid, styles in texts.items():
        for style, wordings in styles.items():
            keep = []
            for text in wordings:
                key = (tid, style, text)
                if held(by_id, key, verdicts):
                    if verdicts[key].verified:
                        keep.append(text)
                        continue
                    why = f"rejected ({reason_kind(verdicts[key].reason or '')})"
                elif unverified:
                    keep.append(text)
                    continue
                else:
                    why = "not verified"
                counts = dropped.setdefault(style, {})
                counts[why] = counts.get(why, 0) + 1
            out.setdefault(tid, {})[style] = keep
    return out, dropped


def _drop_groups(path: Path, bad: set[int], stats: DatasetStats) -> Iterator[QueryRecord]:
    """The queries of a written dataset without the groups in ``bad``
    (``hash(group_id)``), taking them out of the per-template counts."""
    by_template = {t.template_id: t for t in stats.templates}
    gone: set[str] = set()
    for q in read_jsonl(path, QueryRecord):
        if hash(q.group_id) not in bad:
            yield q
            continue
        tstats = by_template[q.template_id or ""]  # the SQL half: every query has one
        tstats.queries[q.variant] -= 1
        if q.group_id not in gone:
            gone.add(q.group_id)
            tstats.kept_groups -= 1
            part = gold_part(q.gold_ids, q.gold_kind)
            tstats.gold[part] -= 1  # the overview's gold groups add up to the groups kept
            if not tstats.gold[part]:
                del tstats.gold[part]
    stats.conflicting_groups = len(gone)


def _no_queries(stats: DatasetStats) -> str:
    """Why a dataset came out empty, in one line."""
    skipped = {t.template_id: t.skipped for t in stats.templates if t.skipped}
    dropped = "; ".join(
        f"{style}: " + ", ".join(f"{n} {why}" for why, n in reasons.items())
        for style, reasons in stats.wordings_dropped.items()
    )
    parts = []
    if skipped:
        first, why = next(iter(skipped.items()))
        parts.append(f"{len(skipped)} of {len(stats.templates)} templates skipped ({first}: {why})")
    if dropped:
        parts.append(f"wordings left out: {dropped}")
    groups = sum(t.groups for t in stats.templates)
    if not skipped and not groups:
        parts.append("no template has a group with an answer")
    if stats.conflicting_groups:
        parts.append(f"{stats.conflicting_groups} groups dropped as conflicting")
    hint = (
        " (run ragaudit templates verify, or generate --unverified)"
        if any("not verified" in r for r in stats.wordings_dropped.values())
        else ""
    )
    return "no query generated: " + ("; ".join(parts) or "nothing to ask") + hint


def facts_from_rows(
    config: Config, path: Path, db: Database, schema: SchemaInfo, run: RunDir
) -> tuple[Path, dict[str, int], list[str]]:
    """The facts file ``generate.gold_rows`` implies: each mapped document's facts are the
    cells of its rows whose value its text states (:mod:`ragaudit.generate.facts`),
    written to ``<run>/gold_facts.jsonl``; with the counts, and warnings for map entries
    the corpus or the database does not hold."""
    where = "generate.gold_rows"
    if config.corpus.path is None:
        raise ConfigError(f"{where}: needs corpus.path (the documents' texts are checked)")
    if not path.is_file():
        raise ConfigError(f"{where}: {path}: no such file{looked_in(path)}")
    rows = read_row_map(path)
    texts = {d.id: d.text for d in load_corpus(config.corpus.path)}
    wanted: dict[str, set[str]] = {}
    for _, table_name, key in rows:
        wanted.setdefault(table_name, set()).add(key)
    found: dict[tuple[str, str], dict[str, Any]] = {}
    q = db.engine.dialect.identifier_preparer.quote
    for table_name, keys in wanted.items():
        table = schema.table(table_name)
        if table is None:
            raise ConfigError(f"{where}: {path}: the database has no table {table_name}")
        if len(table.primary_key) != 1:
            raise ConfigError(
                f"{where}: {path}: table {table.name} has no one-column primary key to "
                "name its rows by"
            )
        names = [c.name for c in table.columns]
        at = names.index(table.primary_key[0])
        select = ", ".join(q(n) for n in names)
        # One pass over each mapped table; keys compare as text, as the facts file has them.
        for values in db.stream(f"SELECT {select} FROM {q(table.name)}"):
            if str(values[at]) in keys:
                found[(table_name, str(values[at]))] = dict(zip(names, values, strict=True))
    records, counted = derive_facts(rows, texts, lambda t, k: found.get((t, k)))
    # Every mapped document with the rows it is about: a question about a row no document
    # is about was never checked, so its gold ids stay unknown rather than [] (a hole).
    stated = {r["id"]: r["facts"] for r in records}
    about: dict[str, list[dict[str, str]]] = {}
    for doc, table_name, key in rows:
        if doc in texts and (table_name, key) in found:
            about.setdefault(doc, []).append({"table": table_name, "row_key": key})
    out = run.gold_facts
    write_jsonl_atomic(
        out,
        (
            {"id": doc, "rows": entries, "facts": stated.get(doc, [])}
            for doc, entries in about.items()
        ),
    )
    notes = []
    if counted.cells_checked and not counted.cells_stated:
        notes.append(
            f"{where}: no document states any of the {counted.cells_checked} values of its "
            "rows: check row_key against the primary keys, and the map's ids against the "
            "corpus"
        )
    if counted.missing_documents:
        notes.append(
            f"{where}: {len(counted.missing_documents)} documents of the map are not in the "
            f"corpus (e.g. {counted.missing_documents[0]!r}): they state nothing"
        )
    if counted.missing_rows:
        doc, table_name, key = counted.missing_rows[0]
        notes.append(
            f"{where}: {len(counted.missing_rows)} rows of the map are not in the database "
            f"(e.g. {table_name} {key!r} for {doc!r})"
        )
    figures = {
        "documents": counted.documents,
        "rows": counted.rows,
        "cells_checked": counted.cells_checked,
        "cells_stated": counted.cells_stated,
        "cells_not_found": counted.cells_not_found,
    }
    return out, figures, notes


def why_untemplated(db: Database, schema: SchemaInfo, stats: DatasetStats) -> dict[str, str]:
    """Why no template reads each table with rows that none reads (table -> why):
    :func:`~ragaudit.generate.sql.enumeration.untemplated`. A dataset that reads every
    table costs nothing more; the enumerator's search of the data, which ``templates
    sql`` runs, is not run again."""
    found = untemplated(db, schema, {n for t in stats.templates for n in t.tables})
    return {
        name: FILE_HAS_NONE if why is None else f"no template: {why}" for name, why in found.items()
    }


def _count_gold(records: Iterable[QueryRecord], named: Counter[str]) -> Iterator[QueryRecord]:
    """Pass the records through, counting the queries that name each gold id."""
    for record in records:
        if record.gold_ids:
            named.update(set(record.gold_ids))
        yield record


def gold_outside_corpus(named: Counter[str], corpus_ids: set[str]) -> str | None:
    """A warning when gold ids (``named``: gold id -> queries naming it) name documents the
    corpus does not hold: those queries' retrieval can never be correct."""
    missing = sorted(doc for doc in named if doc not in corpus_ids)
    if not missing:
        return None
    return (
        f"{len(missing)} of {len(named)} distinct gold ids name no document of the corpus "
        f"(e.g. {missing[0]!r}), in {sum(named[d] for d in missing)} query-gold pairs: no "
        "retriever can find them; check generate.gold_ids (format, id_column) against the "
        "corpus ids"
    )


def other_half(path: Path, source: str) -> Iterator[str]:
    """The lines of the dataset at ``path`` (if any) whose queries do not come from
    ``source`` (``sql``, ``document`` or ``imported``): what a generation of ``source``
    keeps when it writes its own part again. Each is read as its record and written back
    with the fields its line had (a line written by hand keeps its shape), without the
    newline."""
    if not path.exists():
        return
    for q in read_queries(path):
        if q.source != source:
            yield q.model_dump_json(exclude_unset=True)


def _query_ids(path: Path) -> set[str]:
    """The query ids of a dataset file (none where there is none, or it cannot be read:
    an unreadable earlier dataset is replaced, its records left as they are)."""
    if not path.exists():
        return set()
    ids: set[str] = set()
    try:
        with path.open("rb") as handle:
            for line in handle:
                if line.strip():
                    ids.add(json.loads(line)["query_id"])
    except (OSError, ValueError, KeyError, TypeError):
        return set()
    return ids


def generate_dataset(
    config: Config,
    run: RunDir,
    options: GenerateOptions,
    *,
    progress: Progress = SILENT,
) -> DatasetStats:
    """Instantiate every template with its usable wordings (verified ones; see
    :func:`usable_texts`) and write ``dataset.jsonl`` (atomically, streaming) and
    ``dataset.stats.json``. Groups whose question reads the same as another group's with
    another answer are dropped and counted. An empty dataset is a :class:`UserError` that
    says why, and nothing is written. ``progress`` shows the SQL templates instantiated
    (``generating``)."""
    problems = check(config, run)
    if problems:
        more = f" (and {len(problems) - 1} more; see ragaudit templates check)"
        raise TemplateFileError(problems[0] + (more if len(problems) > 1 else ""))
    templates = load_templates(run.templates_sql).templates
    task = progress.task("generating", len(templates))
    loaded = load_text_templates(run.templates_text)
    texts, dropped = usable_texts(
        loaded.templates, loaded.verdicts, templates, unverified=options.unverified
    )
    db, schema = open_database(config)
    counts = wording_counts(loaded.templates, loaded.verdicts, {t.id: t for t in templates})
    by_id = {t.id: t for t in templates}
    stats = DatasetStats(
        wordings_dropped=dropped,
        wordings={s: WordingTally.of(c) for s, c in counts.items()},
        unverified_asked=sum(
            not held(by_id, (tid, style, text), loaded.verdicts)
            for tid, styles in texts.items()
            for style, wordings in styles.items()
            for text in wordings
        ),
    )
    if options.gold_rows is not None:
        try:
            facts_file, stats.gold_rows, notes = facts_from_rows(
                config, options.gold_rows, db, schema, run
            )
        except BaseException:
            db.dispose()
            raise
        stats.warnings.extend(notes)
        options = options.model_copy(update={"gold_facts": facts_file, "gold_rows": None})
    records = generate(
        db,
        schema,
        templates,
        texts,
        options,
        stats=stats,
        on_template=lambda _template, _stats: task.advance(),
    )
    conflicts = TextConflicts()
    named: Counter[str] = Counter()
    partial = run.dataset.with_name(run.dataset.name + ".partial")
    try:
        write_jsonl_atomic(partial, conflicts.watch(_count_gold(records, named)))
        bad = conflicts.conflicting_groups()
        if bad:  # rare: read the file while its filtered copy replaces it
            write_jsonl_atomic(partial, _drop_groups(partial, bad, stats))
        if not stats.queries:
            raise UserError(_no_queries(stats))
        stats.tables = table_stats(stats, schema, why_untemplated(db, schema, stats))
        documents = list(other_half(run.dataset, "sql"))
        if documents:  # the other parts (generate --documents, --import) stay
            with partial.open("a", encoding="utf-8") as handle:
                handle.writelines(line + "\n" for line in documents)
        # The records of questions the new dataset no longer asks (another seed, other
        # templates) go first, kept under retired/: read beside it they would be refused
        # as answers to unknown questions, and a crash after this leaves only questions
        # to ask again.
        has_records = any(record_files(run, m) for m in RECORD_FOLDERS.values())
        gone = _query_ids(run.dataset) - _query_ids(partial) if has_records else set()
        if gone:
            retired = remove_records(run, gone, run.retired_dir)
            if retired:
                stats.warnings.append(
                    f"{len(gone)} questions of the earlier dataset are not asked any more: "
                    f"their {sum(retired.values())} responses, judgements and scores were "
                    f"moved to {run.retired_dir}"
                )
        os.replace(partial, run.dataset)
    finally:
        partial.unlink(missing_ok=True)
        db.dispose()
    if config.corpus.path is not None and named:
        warning = gold_outside_corpus(named, {d.id for d in load_corpus(config.corpus.path)})
        if warning:
            stats.warnings.append(warning)
    manifest = open_manifest(run)  # before the file: a new run has nothing to fingerprint
    atomic_write_json(
        run.dataset_stats,
        {
            "overview": stats.overview().model_dump(mode="json"),
            "templates": [vars(t) for t in stats.templates],
            "tables": [t.model_dump(mode="json") for t in stats.tables],
            "options": options.model_dump(mode="json"),
        },
    )
    manifest.record("dataset_stats")  # the counts of this dataset, as it is
    return stats
