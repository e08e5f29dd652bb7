"""The ``scan`` step: the text-weight scan of a hybrid retriever over the run's labelled
queries, into scan.json. Retrieval only: no LLM.

The queries are the labelled pairs (``ragaudit label``) with their consensus labels, else
the dataset's queries with the labels they carry. Their gold ids name the documents that
should be retrieved. The corpus is the one given, else the contexts of pairs imported from
a file, else the configured corpus (chunked as the configuration says, as the built-in
systems see it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from ragaudit.analysis.agreement import consensus_labels
from ragaudit.analysis.summary import WeightScan
from ragaudit.analysis.weight_scan import weight_scan_table
from ragaudit.config import Config
from ragaudit.errors import UserError
from ragaudit.progress import SILENT, Progress
from ragaudit.records.io import atomic_write_text, read_jsonl
from ragaudit.records.models import LabelPair, LabelRecord
from ragaudit.rundir import RunDir
from ragaudit.store.records import read_dataset
from ragaudit.systems.corpus import chunk, load_corpus
from ragaudit.systems.weight_scan import DEFAULT_WEIGHTS, scan_recall


def _queries(run: RunDir) -> tuple[list[tuple[str, list[str], str | None]], bool, Counter[str]]:
    """(query, gold ids, label) of every query to scan; whether they are pairs imported from
    a file; and the queries left out, by reason."""
    left_out: Counter[str] = Counter()
    out: list[tuple[str, list[str], str | None]] = []
    if run.label_pairs.exists() and run.labels.exists():
        pairs = list(read_jsonl(run.label_pairs, LabelPair))
        labels = consensus_labels(pairs, read_jsonl(run.labels, LabelRecord))
        for p in pairs:
            if p.impossible:
                left_out["flagged unanswerable by the set"] += 1
                continue
            out.append((p.question, p.gold_ids, labels.get(p.pair_id)))
        imported = any(p.source != "dataset" for p in pairs)
        return out, imported, left_out
    if not run.dataset.exists():
        raise UserError(
            f"nothing to scan: neither {run.labels} nor {run.dataset} (run ragaudit label or "
            "ragaudit generate first)"
        )
    for q in read_dataset(run):
        if not q.gold_ids:
            left_out["no gold ids" if q.gold_ids is None else "no document holds the answer"] += 1
            continue
        out.append((q.query, list(q.gold_ids), q.label))
    return out, False, left_out


def scan_run(
    run: RunDir,
    config: Config,
    *,
    k: int = 5,
    weights: Sequence[float] = DEFAULT_WEIGHTS,
    corpus: Path | None = None,
    seed: int = 0,
    progress: Progress = SILENT,
) -> WeightScan:
    """Scan ``weights`` at Recall@``k`` and write scan.json; ``progress`` shows the queries
    scanned (``scanning``)."""
    task = progress.task("scanning")
    if not weights:
        raise UserError("scan: give at least one text weight")
    bad = [w for w in weights if not 0.0 <= w <= 1.0]
    if bad:
        raise UserError(f"scan: text weight {bad[0]:g} is not in [0, 1]")
    weights = sorted(set(weights))
    queries, imported, left_out = _queries(run)
    chunking: Literal["document", "paragraph", "window"] = config.corpus.chunking
    if corpus is None and imported:
        corpus, chunking = run.label_contexts, "document"  # each context is one document
    else:
        corpus = corpus or config.corpus.path
    if corpus is None:
        raise UserError(
            "scan needs the documents: set corpus.path in the configuration or pass --corpus"
        )
    documents = load_corpus(corpus)
    ids = {d.id for d in documents}
    kept = []
    for query in queries:
        if not set(query[1]) & ids:
            left_out["gold ids not in the corpus"] += 1
        else:
            kept.append(query)
    if not kept:
        why = ", ".join(f"{n} {r}" for r, n in sorted(left_out.items())) or "no queries"
        raise UserError(f"nothing to scan: no query has gold ids in {corpus} ({why})")
    chunks = chunk(
        documents, chunking, size=config.corpus.chunk_size, overlap=config.corpus.chunk_overlap
    )
    task.start(len(kept))
    scanned = 0

    def scanned_up_to(done: int) -> None:
        nonlocal scanned
        task.advance(done - scanned)
        scanned = done

    index_dir = config.harness.index_dir or run.index_dir
    recall = scan_recall(
        chunks,
        [q for q, _, _ in kept],
        [g for _, g, _ in kept],
        weights=weights,
        k=k,
        index_dir=index_dir,
        progress=scanned_up_to,
    )
    labels = [None if label == "unanswerable" else label for _, _, label in kept]
    table = weight_scan_table(
        recall, labels, weights, k=k, documents=len(documents), left_out=left_out, seed=seed
    )
    atomic_write_text(run.scan, table.model_dump_json(indent=2) + "\n")
    return table


def read_scan(run: RunDir) -> WeightScan | None:
    """The run's scan.json, or None when no scan was run."""
    if not run.scan.exists():
        return None
    try:
        return WeightScan.model_validate_json(run.scan.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UserError(
            f"{run.scan}: not a scan this ragaudit can read: {str(exc).splitlines()[0]}"
        ) from None
