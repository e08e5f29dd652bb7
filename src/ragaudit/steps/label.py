"""The ``label`` step: every (context, question) pair of a test set labelled by each rater,
into labels.jsonl, and the consensus label into the run's dataset.

Pairs come from an input file (SQuAD JSON or JSON Lines) or from the run's dataset (its
contexts from the corpus, through gold ids). Raters are LLM runs (models x phrasings x
samples) and human label files. Resumable: every LLM call is cached, so a killed run asks
again only what it had not been answered; labels.jsonl is written whole at the end, keeping
the labels of raters this command did not ask.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ragaudit.analysis.agreement import consensus_labels, label_figures, unlabelled_pairs
from ragaudit.analysis.summary import LabelFigures
from ragaudit.documents.labels import LabelReply, Rater, label_pairs, raters_for
from ragaudit.documents.pairs import PairSet, pairs_from_dataset, read_input
from ragaudit.errors import UserError
from ragaudit.progress import SILENT, Progress
from ragaudit.records.io import iter_jsonl_dicts, read_jsonl, read_utf8_text, write_jsonl_atomic
from ragaudit.records.models import LABELS, LabelPair, LabelRecord
from ragaudit.rundir import RunDir
from ragaudit.steps.session import Session
from ragaudit.store.records import read_dataset
from ragaudit.systems.corpus import load_corpus


@dataclass
class LabelResult:
    """What ``label`` did: the figures, the pairs it could not label and why, and what
    flowed into the dataset."""

    figures: LabelFigures
    raters: list[str]
    skipped: dict[str, int] = field(default_factory=dict)
    # Per rater, pairs it has no label for (a human file covering part of the set): not
    # undecided, which is a rater asked that gave no usable label.
    unlabelled: dict[str, int] = field(default_factory=dict)
    dataset_labelled: int = 0
    dataset_kept: int = 0


def load_pairs(run: RunDir, input_path: Path | None, corpus: Path | None) -> PairSet:
    """The pairs to label: from ``input_path``, else the run's dataset over ``corpus``."""
    if input_path is not None:
        return read_input(input_path)
    if not run.dataset.exists():
        raise UserError(
            f"nothing to label: no {run.dataset} (run ragaudit generate, or pass --input FILE "
            "with SQuAD JSON or JSONL pairs)"
        )
    if corpus is None:
        raise UserError(
            "labelling the run's dataset needs its documents: set corpus.path in the "
            "configuration (or pass --input FILE)"
        )
    documents = {d.id: d.text for d in load_corpus(corpus)}
    pairs = pairs_from_dataset(read_dataset(run), documents)
    if not pairs.pairs:
        why = ", ".join(f"{n} {k}" for k, n in sorted(pairs.skipped.items()))
        raise UserError(f"nothing to label: no query of {run.dataset} has a context ({why})")
    return pairs


def read_human_labels(path: Path, pair_ids: set[str]) -> list[LabelRecord]:
    """A human rater's labels: JSON Lines or CSV with ``id`` and ``label`` (and, optionally,
    ``rater``, else the file's name, and ``reason``). A label must be one of the four
    (spelling forgiven as for the LLM); ids not among the pairs are an error, so that a
    file for another set is not half-read. One rater gives a pair one label: two different
    ones are an error naming both lines (agreement would count the rater twice, once on
    each side); the same label again is read once."""
    if path.is_dir():
        raise UserError(f"{path}: is a directory, not a file")
    if not path.is_file():
        raise UserError(f"{path}: no such label file")
    rows: Iterable[tuple[int, dict[str, object]]]
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(read_utf8_text(path), newline=""))
        if not reader.fieldnames or not {"id", "label"} <= set(reader.fieldnames):
            raise UserError(f"{path}: a CSV label file needs the columns id and label")
        rows = [(n, dict(r)) for n, r in enumerate(reader, start=2)]
    else:  # the user's file: a bad last line is an error, not a torn append
        rows = list(iter_jsonl_dicts(path, skip_torn_tail=False, unique_keys=True))
    out = []
    unknown = []
    given: dict[tuple[str, str], tuple[int, str]] = {}  # (pair, rater) -> (line, label)
    for line, row in rows:
        pair_id = str(row.get("id") or "").strip()
        if not pair_id:
            raise UserError(f"{path}:{line}: no id")
        if pair_id not in pair_ids:
            unknown.append(pair_id)
            continue
        try:
            label = LabelReply.model_validate({"label": row.get("label")}).label
        except ValueError:
            raise UserError(
                f"{path}:{line}: label {row.get('label')!r} is not one of {', '.join(LABELS)}"
            ) from None
        rater = str(row.get("rater") or f"human:{path.stem}")
        first = given.setdefault((pair_id, rater), (line, label))
        if first[0] != line:
            if first[1] != label:
                raise UserError(
                    f"{path}: lines {first[0]} and {line} give pair {pair_id!r} two labels "
                    f"({first[1]}, {label}) from rater {rater!r}: keep one"
                )
            continue  # the same label twice: one label
        out.append(
            LabelRecord(
                pair_id=pair_id, rater=rater, label=label, reason=str(row.get("reason") or "")
            )
        )
    if unknown:
        raise UserError(
            f"{path}: {len(unknown)} ids are not among the pairs labelled "
            f"(first: {unknown[0]!r}): is it the label file of another set?"
        )
    return out


def read_human_files(
    paths: Iterable[Path], pair_ids: set[str]
) -> tuple[list[LabelRecord], dict[str, Path]]:
    """The labels of every human label file (:func:`read_human_labels`) and the file each
    rater comes from. One rater, one file: a file given twice, or two files that would be
    the same rater (``h/a.jsonl`` and ``h/sub/a.jsonl`` are both ``human:a``; a rater column
    naming another file's rater) is an error naming both. Read together, the last file
    would replace the other's labels of a pair in the figures while labels.jsonl kept both,
    and agreement would count one person as one rater either way."""
    records: list[LabelRecord] = []
    files: dict[Path, Path] = {}  # the file as resolved -> as given
    source: dict[str, Path] = {}  # rater -> the file that gives it
    for path in paths:
        if path.is_file():
            first = files.setdefault(path.resolve(), path)
            if first is not path:
                raise UserError(
                    f"{path} is given twice as --human (also as {first}): its labels would "
                    "be counted twice"
                )
        read = read_human_labels(path, pair_ids)
        for rater in dict.fromkeys(r.rater for r in read):
            other = source.setdefault(rater, path)
            if other is not path:
                raise UserError(
                    f"--human {other} and {path} are both rater {rater!r}: one rater is one "
                    "file (merge them, or name each file's rater in a rater column)"
                )
        records += read
    return records, source


def _write_pairs(run: RunDir, pairs: PairSet) -> None:
    write_jsonl_atomic(run.label_pairs, pairs.pairs)
    write_jsonl_atomic(
        run.label_contexts, ({"id": i, "text": t} for i, t in sorted(pairs.contexts.items()))
    )


def _into_dataset(run: RunDir, consensus: dict[str, str | None]) -> tuple[int, int]:
    """Write each labelled query's consensus label into dataset.jsonl; a document-generated
    query keeps the label it was generated for. Returns (labelled, kept)."""
    queries = read_dataset(run)
    labelled = kept = 0
    out = []
    for q in queries:
        label = consensus.get(q.query_id)
        if q.query_id in consensus and q.source == "document" and q.label is not None:
            kept += 1
        elif q.query_id in consensus and label != q.label:
            q = q.model_copy(update={"label": label})
            labelled += label is not None
        elif label is not None:
            labelled += 1
        out.append(q)
    write_jsonl_atomic(run.dataset, out)
    return labelled, kept


def label_run(
    session: Session,
    *,
    input_path: Path | None = None,
    models: list[str] | None = None,
    phrasings: list[str] | None = None,
    samples: int = 1,
    human: list[Path] | None = None,
    use_llm: bool = True,
    progress: Progress = SILENT,
) -> LabelResult:
    """Label every pair with every rater and write labels.jsonl (and labels/pairs.jsonl,
    labels/contexts.jsonl); the consensus labels flow into the run's dataset when the pairs
    are its queries. A pair an LLM rater cannot label is undecided, with why; a refused key
    or an unknown model stops the step with that one error, and nothing is written.
    ``progress`` shows the labels asked of the LLM raters (``labelling``)."""
    run = session.run_dir
    config = session.config
    pairs = load_pairs(run, input_path, config.corpus.path)
    ids = {p.pair_id for p in pairs.pairs}
    records, human_source = read_human_files(human or [], ids)
    raters: list[Rater] = []
    if use_llm:
        try:
            raters = raters_for(models or [config.llm.model], phrasings or ["default"], samples)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    for rater in raters:  # a human file's rater column may name one: two raters in one
        if rater.name in human_source:
            raise UserError(
                f"{human_source[rater.name]}: rater {rater.name!r} is also an LLM rater of "
                "this command: name the file's rater otherwise"
            )
    if not raters and not records:
        raise UserError("no rater: drop --no-llm, or give human label files (--human FILE)")
    if raters:
        task = progress.task("labelling", len(raters) * len(pairs.pairs))
        contexts = {p.pair_id: pairs.context_of(p) for p in pairs.pairs}
        with session.clients("label", [r.model for r in raters]) as clients:
            records += session.run(
                label_pairs(
                    clients, raters, pairs.pairs, contexts, on_done=lambda _r: task.advance()
                )
            )
    names = {r.rater for r in records}
    if run.labels.exists():  # labels of raters not asked now stay
        kept = [
            r
            for r in read_jsonl(run.labels, LabelRecord)
            if r.rater not in names and r.pair_id in ids
        ]
        records = kept + records
    order = {p.pair_id: i for i, p in enumerate(pairs.pairs)}
    records.sort(key=lambda r: (order[r.pair_id], r.rater))
    # Written once every rater is done: a step stopped on the way (a refused key) leaves
    # the pairs and labels of the last labelling as they were, never one without the other.
    _write_pairs(run, pairs)
    write_jsonl_atomic(run.labels, records)
    figures = label_figures(pairs.pairs, records)
    result = LabelResult(
        figures=figures,
        raters=figures.raters,
        skipped=pairs.skipped,
        unlabelled={r: n for r, n in unlabelled_pairs(pairs.pairs, records).items() if n},
    )
    if input_path is None:
        consensus = consensus_labels(pairs.pairs, records)
        result.dataset_labelled, result.dataset_kept = _into_dataset(run, consensus)
    return result


def read_label_figures(run: RunDir) -> LabelFigures | None:
    """The label figures of the run's labels.jsonl, or None when it was never labelled."""
    if not run.labels.exists() or not run.label_pairs.exists():
        return None
    pairs = list(read_jsonl(run.label_pairs, LabelPair))
    if run.dataset.is_file() and any(p.source == "dataset" for p in pairs):
        # Questions of the dataset that left it since (generate --refresh, a new dataset)
        # are no pairs of it any more: their labels are counted as unknown pairs, so
        # that the composition describes the questions asked now, as by_label does.
        asked = {q.query_id for q in read_dataset(run)}
        pairs = [p for p in pairs if p.source != "dataset" or p.pair_id in asked]
    return label_figures(pairs, read_jsonl(run.labels, LabelRecord))
