"""The text-weight scan as "Know Your RAG"'s Table 2: per label and for all queries, the
dense and lexical Recall@k, the best recall and its weight, and what the label loses at
the weight tuned on all queries (with a paired bootstrap interval). Pure: it takes the
recall of each query at each weight (``ragaudit.systems.weight_scan`` computes it).

A label's best weight "differs" from the inclusive one when its queries gain at the label's
best weight significantly more often than they lose: an exact sign test over the queries
whose recall changes, at alpha 0.05. (The best weight is chosen on the same queries, so a
label of few queries can look better by chance; the test keeps one query from making a
claim.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ragaudit.analysis.retrieval_metrics import mean_interval
from ragaudit.analysis.summary import ScanRow, WeightScan

INCLUSIVE = "inclusive"
BOOTSTRAP_RESAMPLES = 2000
ALPHA = 0.05


def weight_name(weight: float) -> str:
    """A weight as a key: ``0``, ``0.05``, ``1``.

    >>> [weight_name(w) for w in (0.0, 0.05, 1.0)]
    ['0', '0.05', '1']
    """
    return f"{weight:g}"


def _best(recall: np.ndarray) -> int:
    """The column with the highest mean recall; the first (lowest weight) on a tie (a
    label that ties with the inclusive best weight keeps that weight)."""
    means = recall.mean(axis=0)
    return int(np.flatnonzero(np.isclose(means, means.max(), rtol=0, atol=1e-12))[0])


def _row(
    label: str,
    recall: np.ndarray,
    weights: Sequence[float],
    inclusive_best: int | None,
    seed: int,
) -> ScanRow:
    names = [weight_name(w) for w in weights]
    per_weight = {name: mean_interval(recall[:, j]) for j, name in enumerate(names)}

    def at(weight: float) -> float | None:
        if weight not in weights or not len(recall):
            return None
        return per_weight[weight_name(weight)].value

    if not len(recall):
        empty = mean_interval([])
        return ScanRow(
            label=label, n=0, recall=per_weight, best_weight=None, best_recall=empty,
            at_inclusive_weight=empty, difference=None, difference_ci95=None, differs=False,
        )  # fmt: skip
    best = _best(recall)
    reference = best if inclusive_best is None else inclusive_best
    means = recall.mean(axis=0)
    if np.isclose(means[reference], means[best], rtol=0, atol=1e-12):
        best = reference  # a tie with the inclusive weight is no reason to move

    diff = recall[:, best] - recall[:, reference]
    ci = None
    p_value = None
    if best != reference:
        from scipy.stats import binomtest

        gains, losses = int((diff > 0).sum()), int((diff < 0).sum())
        p_value = float(binomtest(gains, gains + losses).pvalue) if gains + losses else 1.0
        rng = np.random.default_rng(seed)
        n = len(diff)
        means = np.concatenate(
            [  # in slices, so that a label of many queries does not hold 2000 x n at once
                diff[rng.integers(0, n, (200, n))].mean(axis=1)
                for _ in range(BOOTSTRAP_RESAMPLES // 200)
            ]
        )
        ci = (float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5)))
    return ScanRow(
        label=label,
        n=len(recall),
        recall=per_weight,
        dense=at(0.0),
        lexical=at(1.0),
        best_weight=float(weights[best]),
        best_recall=per_weight[names[best]],
        at_inclusive_weight=per_weight[names[reference]],
        difference=float(diff.mean()),
        difference_ci95=ci,
        p_value=p_value,
        differs=p_value is not None and p_value < ALPHA and diff.mean() > 0,
    )


def weight_scan_table(
    recall: np.ndarray,
    labels: Sequence[str | None],
    weights: Sequence[float],
    *,
    k: int,
    documents: int,
    left_out: Mapping[str, int] | None = None,
    seed: int = 0,
) -> WeightScan:
    """Table 2 from the recall of each query (rows) at each weight (columns) and each
    query's label (None: in the inclusive row only). Labels are listed in order of first
    appearance after sorting; ``unanswerable`` queries belong in no row of their own (the
    caller leaves them out, as the paper does).

    >>> weights = [0.0, 0.5, 1.0]  # text weight: 0 dense only, 1 lexical only
    >>> recall = np.array([[1, 1, 0], [1, 1, 0], [0, 1, 1], [0, 1, 1],  # per query and weight
    ...                    [0, 0, 1], [0, 0, 1], [0, 0, 1], [0, 0, 1], [0, 0, 1], [0, 0, 1]])
    >>> labels = ["summary"] * 4 + ["fact_single"] * 6
    >>> scan = weight_scan_table(recall, labels, weights, k=5, documents=100)
    >>> [(row.label, row.best_weight, round(row.best_recall.value, 2)) for row in scan.rows]
    [('inclusive', 1.0, 0.8), ('fact_single', 1.0, 1.0), ('summary', 0.5, 1.0)]
    >>> scan.rows[2].differs, round(scan.rows[2].difference, 2)  # 2 of 4 queries gain: no claim
    (False, 0.5)
    """
    recall = np.asarray(recall, dtype=np.float64).reshape(len(labels), len(weights))
    inclusive = _row(INCLUSIVE, recall, weights, None, seed)
    reference = (
        None if inclusive.best_weight is None else list(weights).index(inclusive.best_weight)
    )
    rows = [inclusive]
    notes = []
    for label in sorted({lab for lab in labels if lab is not None}):
        mask = np.array([lab == label for lab in labels])
        row = _row(label, recall[mask], weights, reference, seed)
        rows.append(row)
        if row.differs and row.difference_ci95 is not None:
            low, high = row.difference_ci95
            notes.append(
                f"{label}: best at text weight {row.best_weight:g}, not the inclusive "
                f"{inclusive.best_weight:g}; tuned on all queries, these {row.n} lose "
                f"{row.difference:.3f} Recall@{k} (95% interval {low:.3f} to {high:.3f}; sign test "
                f"p = {row.p_value:.3g})"
            )
    return WeightScan(
        k=k,
        weights=[float(w) for w in weights],
        documents=documents,
        queries=len(labels),
        left_out=dict(left_out or {}),
        rows=rows,
        notes=notes,
    )
