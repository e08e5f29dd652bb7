"""How far a reference-free metric can be trusted, measured against grounded verdicts.

A metric read at a threshold is a predictor of the grounded verdict (positive = correct),
as GRAMMAR's Table 1 reads RAGAS and SelfCheck: its precision (of the answers it calls
correct, how many are), its recall (of the right answers, how many it calls correct), the
share of wrong answers it lets through, and, whatever the threshold, its AUROC. Pure: the
scores and verdicts come in as plain values.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragaudit.analysis.metrics import Example, group_tags, proportion
from ragaudit.analysis.summary import (
    AUROC,
    MetricReliability,
    PrecisionTarget,
    ReferenceFreeFigures,
    ReliabilityCore,
)
from ragaudit.records.models import FAILURE_KINDS, FREE_METRICS, FreeMetric, FreeScoreRecord

BOOTSTRAP = 1000
TAG_ORDER = ("gap", "non-robust", "robust")


@dataclass(frozen=True, slots=True)
class Scored:
    """One answer's score on one metric (None: undefined, ``undefined`` says why) and its
    grounded verdict (None: the judge could not decide), with the tag of its group and
    its question's label.

    >>> items = [Scored(0.92, correct=False), Scored(0.4, correct=True),
    ...          Scored(None, correct=True, undefined="no claims")]
    >>> figures = core(items, threshold=0.5)  # the metric calls a score of 0.5 or more correct
    >>> figures.responses, figures.let_through.k  # the confident wrong answer is let through
    (2, 1)
    """

    score: float | None
    correct: bool | None
    undefined: str | None = None
    tag: str | None = None
    label: str | None = None


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """The area under the ROC curve: P(a positive scores above a negative), ties half.

    >>> round(auc([0.9, 0.8, 0.6], [0.7, 0.2]), 3)  # 5 of the 6 (right, wrong) pairs ordered right
    0.833
    """
    pos = np.asarray(positives, dtype=float)
    neg = np.asarray(negatives, dtype=float)
    return float(_auc_many(pos[None, :], neg[None, :])[0])


def _auc_many(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """AUC of each row pair (positives and negatives resampled alike), by ranking."""
    both = np.concatenate([pos, neg], axis=1)
    n_pos, n_neg = pos.shape[1], neg.shape[1]
    out = np.empty(both.shape[0])
    for i, row in enumerate(both):
        ranks = _average_ranks(row)
        out[i] = (ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    return out


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties given their average rank (as the Mann-Whitney U needs)."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    ranks = np.empty(len(values))
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[order[start : end + 1]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def auroc(positives: Sequence[float], negatives: Sequence[float], seed: int = 0) -> AUROC:
    """The AUROC with a 95% percentile bootstrap interval that resamples the right and the
    wrong answers each within its own kind; undefined when either kind is absent.

    >>> area = auroc([0.9, 0.8, 0.6, 0.95], [0.7, 0.2, 0.4], seed=0)
    >>> round(area.value, 3), [round(x, 3) for x in area.ci95]
    (0.917, [0.5, 1.0])
    >>> auroc([0.9], []).undefined
    'no wrong answer was scored'
    """
    if not positives or not negatives:
        missing = "right" if not positives else "wrong"
        return AUROC(value=None, ci95=(0.0, 1.0), undefined=f"no {missing} answer was scored")
    pos = np.asarray(positives, dtype=float)
    neg = np.asarray(negatives, dtype=float)
    rng = np.random.default_rng(seed)
    areas = _auc_many(
        pos[rng.integers(0, len(pos), (BOOTSTRAP, len(pos)))],
        neg[rng.integers(0, len(neg), (BOOTSTRAP, len(neg)))],
    )
    low, high = np.percentile(areas, [2.5, 97.5])
    return AUROC(value=auc(positives, negatives), ci95=(float(low), float(high)))


def core(items: Sequence[Scored], threshold: float, seed: int = 0) -> ReliabilityCore:
    """Precision, recall, let-through and AUROC of the items that have both a score and a
    verdict, the metric calling an answer correct at ``threshold`` or above.

    >>> items = [Scored(0.9, True), Scored(0.8, True), Scored(0.7, False), Scored(0.3, False),
    ...          Scored(0.2, True), Scored(None, True, undefined="no claims")]
    >>> figures = core(items, threshold=0.5)
    >>> figures.responses, str(figures.precision), str(figures.let_through)
    (5, '0.67 [0.21, 0.94]', '0.50 [0.09, 0.91]')
    >>> round(figures.auroc.value, 3)
    0.667
    """
    used = [(i.score, i.correct) for i in items if i.score is not None and i.correct is not None]
    tp = sum(1 for s, c in used if c and s >= threshold)
    fp = sum(1 for s, c in used if not c and s >= threshold)
    pos = [s for s, c in used if c]
    neg = [s for s, c in used if not c]
    return ReliabilityCore(
        responses=len(used),
        correct=len(pos),
        precision=proportion(tp, tp + fp),
        recall=proportion(tp, len(pos)),
        let_through=proportion(fp, len(neg)),
        auroc=auroc(pos, neg, seed),
    )


def threshold_for_precision(items: Sequence[Scored], target: float) -> PrecisionTarget:
    """The lowest threshold (among the scores seen) at which the precision reaches
    ``target``: the most answers a user could accept on the metric's word at that
    precision. Undefined, with the best precision seen, when no threshold reaches it.

    >>> items = [Scored(0.9, True), Scored(0.8, True), Scored(0.7, False), Scored(0.3, False),
    ...          Scored(0.2, True)]
    >>> target = threshold_for_precision(items, 0.9)
    >>> target.threshold, str(target.recall)
    (0.8, '0.67 [0.21, 0.94]')
    >>> threshold_for_precision([Scored(0.9, False), Scored(0.1, True)], 0.9).undefined
    'no threshold reaches it: the best precision is 0.50, at 0.1'
    """
    used = [(i.score, i.correct) for i in items if i.score is not None and i.correct is not None]
    if not used:
        return PrecisionTarget(
            target=target, threshold=None, undefined="no answer has both a score and a verdict"
        )
    positives = sum(1 for _, c in used if c)
    best: tuple[float, float] | None = None
    for t in sorted({s for s, _ in used}):
        called = [c for s, c in used if s >= t]
        tp = sum(called)
        precision = tp / len(called)
        if precision >= target:
            return PrecisionTarget(
                target=target,
                threshold=t,
                precision=proportion(tp, len(called)),
                recall=proportion(tp, positives),
            )
        if best is None or precision > best[0]:
            best = (precision, t)
    assert best is not None
    return PrecisionTarget(
        target=target,
        threshold=None,
        undefined=f"no threshold reaches it: the best precision is {best[0]:.2f}, at {best[1]:.3g}",
    )


def _pct(p: float | None) -> str:
    return "n/a" if p is None else f"{100 * p:.0f}%"


def sentence(
    metric: str, threshold: float, figures: ReliabilityCore, undefined: Mapping[str, int]
) -> str:
    """One plain sentence of what the figures mean for a user of the metric, with the
    answers it could not score by reason (``undefined``).

    >>> items = [Scored(0.9, True), Scored(0.8, True), Scored(0.7, False), Scored(0.3, False)]
    >>> print(sentence("faithfulness", 0.5, core(items, 0.5), {"no claims": 2}))
    On this data, faithfulness >= 0.5 calls 50% of the wrong answers correct (1 of 2) and 100% of
    the right ones (2 of 2). Of the answers it calls correct, 67% are (2 of 3). It could not score 2
    answers (no claims: 2).
    """
    if not figures.responses:
        return f"On this data, {metric} could not be set against any grounded verdict."
    wrong = figures.responses - figures.correct
    parts = [f"On this data, {metric} >= {threshold:g}"]
    if wrong:
        lt = figures.let_through
        parts.append(f"calls {_pct(lt.value)} of the wrong answers correct ({lt.k} of {lt.n})")
    else:
        parts.append("had no wrong answer to let through")
    if figures.correct:
        rc = figures.recall
        parts.append(f"and {_pct(rc.value)} of the right ones ({rc.k} of {rc.n})")
    text = " ".join(parts[:2]) + (" " + parts[2] if len(parts) > 2 else "") + "."
    if figures.precision.n:
        text += (
            f" Of the answers it calls correct, {_pct(figures.precision.value)} are "
            f"({figures.precision.k} of {figures.precision.n})."
        )
    count = sum(undefined.values())
    if count:
        reasons = ", ".join(f"{reason}: {n}" for reason, n in undefined.items())
        text += f" It could not score {count} answer{'s' if count != 1 else ''} ({reasons})."
    return text


def _split(items: Iterable[Scored], key: str, order: Sequence[str] = ()) -> dict[str, list[Scored]]:
    groups: dict[str, list[Scored]] = defaultdict(list)
    for item in items:
        value = getattr(item, key)
        if value is not None:
            groups[value].append(item)
    ranked = [k for k in order if k in groups] + sorted(k for k in groups if k not in order)
    return {k: groups[k] for k in ranked}


def undefined_kind(reason: str) -> str:
    """A reason's kind, for counting: a failed model call counts by how it failed
    (``malformed reply``, ``LLM failed``) whatever its detail; other reasons as they are.

    >>> undefined_kind("malformed reply: expected JSON"), undefined_kind("no claims")
    ('malformed reply', 'no claims')
    """
    head, sep, _ = reason.partition(":")
    return head if sep and head in FAILURE_KINDS else reason


def metric_reliability(
    metric: str,
    items: Sequence[Scored],
    threshold: float,
    target_precision: float = 0.9,
    seed: int = 0,
) -> MetricReliability:
    """Everything :mod:`ragaudit.analysis.reliability` says about one metric on one set of
    answers: overall, by group tag and by label, with the undefined scores counted.

    >>> items = [Scored(0.9, True, tag="robust"), Scored(0.8, True, tag="robust"),
    ...          Scored(0.7, False, tag="gap"), Scored(0.3, False, tag="gap"),
    ...          Scored(None, True, undefined="LLM failed: timeout", tag="robust")]
    >>> figures = metric_reliability("faithfulness", items, threshold=0.5)
    >>> figures.undefined, str(figures.let_through), list(figures.by_tag)
    ({'LLM failed': 1}, '0.50 [0.09, 0.91]', ['gap', 'robust'])
    >>> str(figures.by_tag["gap"].let_through)
    '0.50 [0.09, 0.91]'
    """
    overall = core(items, threshold, seed)
    undefined = Counter(
        undefined_kind(i.undefined or "undefined") for i in items if i.score is None
    )
    defined = [i.score for i in items if i.score is not None]
    return MetricReliability(
        metric=metric,
        threshold=threshold,
        mean_score=sum(defined) / len(defined) if defined else None,
        undefined=dict(sorted(undefined.items())),
        unjudged=sum(1 for i in items if i.score is not None and i.correct is None),
        for_precision=threshold_for_precision(items, target_precision),
        by_tag={k: core(v, threshold, seed) for k, v in _split(items, "tag", TAG_ORDER).items()},
        by_label={k: core(v, threshold, seed) for k, v in _split(items, "label").items()},
        sentence=sentence(metric, threshold, overall, dict(sorted(undefined.items()))),
        **overall.model_dump(),
    )


def reliability_table(
    scored: Mapping[str, Sequence[Scored]],
    thresholds: Mapping[str, float],
    target_precision: float = 0.9,
) -> dict[str, MetricReliability]:
    """:func:`metric_reliability` of each metric in ``scored`` (metric -> its items).

    >>> scored = {"faithfulness": [Scored(0.9, True), Scored(0.7, False)],
    ...           "answer_relevancy": [Scored(0.6, True), Scored(0.2, False)]}
    >>> table = reliability_table(scored, {"faithfulness": 0.5, "answer_relevancy": 0.5})
    >>> {metric: str(r.let_through) for metric, r in table.items()}
    {'faithfulness': '1.00 [0.21, 1.00]', 'answer_relevancy': '0.00 [0.00, 0.79]'}
    """
    return {
        metric: metric_reliability(metric, items, thresholds[metric], target_precision)
        for metric, items in scored.items()
    }


def reference_free_figures(
    examples: Sequence[Example],
    records: Iterable[FreeScoreRecord],
    thresholds: Mapping[FreeMetric, float],
    target_precision: float = 0.9,
) -> ReferenceFreeFigures | None:
    """Each metric's reliability over the scored answers of every system and of each one:
    the grounded verdict of an answer from ``examples`` (an answer the judge could not
    decide has none), its group's tag within its system and wording style, and its label.
    None when nothing was scored.

    >>> examples = [Example(f"q{i}", f"g{i}", "short", ok, system="rag")
    ...             for i, ok in enumerate([True, True, False, False])]
    >>> records = [FreeScoreRecord(query_id=f"q{i}", system="rag",
    ...                            metrics={"faithfulness": {"score": score}})
    ...            for i, score in enumerate([0.9, 0.8, 0.7, 0.3])]
    >>> figures = reference_free_figures(examples, records, {"faithfulness": 0.5})
    >>> figures.systems, list(figures.by_system["rag"])
    (['rag'], ['faithfulness'])
    >>> print(figures.metrics["faithfulness"].sentence)
    On this data, faithfulness >= 0.5 calls 50% of the wrong answers correct (1 of 2) and 100% of
    the right ones (2 of 2). Of the answers it calls correct, 67% are (2 of 3).
    """
    verdicts = {(ex.system, ex.query_id): ex for ex in examples}
    tags: dict[tuple[str, str, str], str] = {}
    by_cell: dict[tuple[str, str], list[Example]] = defaultdict(list)
    for ex in examples:
        by_cell[(ex.system, ex.variant)].append(ex)
    for (system, variant), cell in by_cell.items():
        for group, tag in group_tags(cell).items():
            tags[(system, variant, group)] = tag
    pooled: dict[FreeMetric, list[Scored]] = defaultdict(list)
    per_system: dict[str, dict[FreeMetric, list[Scored]]] = defaultdict(lambda: defaultdict(list))
    calls: Counter[FreeMetric] = Counter()
    counted: Counter[FreeMetric] = Counter()
    for record in records:
        judged = verdicts.get((record.system, record.query_id))
        for metric, score in record.metrics.items():
            item = Scored(
                score=score.score,
                correct=None if judged is None else judged.correct,
                undefined=score.undefined,
                tag=None
                if judged is None
                else tags.get((judged.system, judged.variant, judged.group_id)),
                label=None if judged is None else judged.label,
            )
            pooled[metric].append(item)
            per_system[record.system][metric].append(item)
            calls[metric] += score.calls
            counted[metric] += 1
    if not pooled:
        return None
    order = [m for m in FREE_METRICS if m in pooled]
    return ReferenceFreeFigures(
        systems=sorted(per_system),
        metrics={
            m: metric_reliability(m, pooled[m], thresholds[m], target_precision) for m in order
        },
        by_system={
            name: {
                m: metric_reliability(m, items[m], thresholds[m], target_precision)
                for m in order
                if m in items
            }
            for name, items in sorted(per_system.items())
        },
        calls_per_response={m: calls[m] / counted[m] for m in order},
    )
