"""Ranking metrics of retrieval against gold document ids (binary relevance). Pure.

Per system and variant (and per question label where queries carry one): Recall@k for
several k, MRR, and nDCG@k, each the mean over the queries that have gold ids and a
retrieved list, with a 95% normal-approximation interval of the mean.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ragaudit.analysis.metrics import wilson, wilson_share
from ragaudit.analysis.summary import MeanInterval, RankingMetrics, SystemRanking

if TYPE_CHECKING:
    from ragaudit.analysis.metrics import Example

DEFAULT_KS = (1, 3, 5, 10)


def is_ranked(ex: Example) -> bool:
    """Whether ``ex`` counts in the ranking metrics (Recall@k, MRR, nDCG@k): it has a
    retrieved list and gold ids that name a document. The one rule of ``analyze`` and
    ``compare`` alike: whether the judge decided the answer plays no part.

    >>> from ragaudit.analysis.metrics import Example
    >>> is_ranked(Example("q1", "g1", "short", True, retrieved=("d1",), gold=("d1",)))
    True
    >>> is_ranked(Example("q2", "g2", "short", True, retrieved=("d1",), gold=()))  # a hole
    False
    """
    return ex.retrieved is not None and bool(ex.gold)


def recall_at_k(retrieved: Sequence[str], gold: Sequence[str], k: int) -> float:
    """Share of the gold documents found in the top ``k``.

    >>> recall_at_k(["d3", "d1", "d7"], gold=["d1", "d2"], k=2)  # d1 of the two found in the top 2
    0.5
    """
    wanted = set(gold)
    return len(wanted & set(retrieved[:k])) / len(wanted) if wanted else 0.0


def reciprocal_rank(retrieved: Sequence[str], gold: Sequence[str]) -> float:
    """1 / rank of the first gold document (0 if none was retrieved); MRR is its mean.

    >>> reciprocal_rank(["d3", "d1", "d7"], gold=["d1"]), reciprocal_rank(["d3"], gold=["d1"])
    (0.5, 0.0)
    """
    wanted = set(gold)
    for rank, doc in enumerate(retrieved, start=1):
        if doc in wanted:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(retrieved: Sequence[str], gold: Sequence[str], k: int) -> float:
    """Normalized discounted cumulative gain of the top ``k`` with binary relevance.

    >>> round(ndcg_at_k(["d3", "d1", "d7"], gold=["d1"], k=3), 3)  # 1 / log2(3)
    0.631
    >>> ndcg_at_k(["d1", "d3"], gold=["d1"], k=3)
    1.0
    """
    wanted = set(gold)
    if not wanted:
        return 0.0
    seen: set[str] = set()
    dcg = 0.0
    for rank, doc in enumerate(retrieved[:k], start=1):
        if doc in wanted and doc not in seen:
            dcg += 1.0 / math.log2(rank + 1)
            seen.add(doc)
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(k, len(wanted)) + 1))
    return dcg / ideal


def mean_interval(
    values: Sequence[float] | npt.NDArray[np.float64], z: float = 1.959963984540054
) -> MeanInterval:
    """The mean of per-query scores in [0, 1] with a 95% interval over ``n`` queries: the
    Wilson interval where every score is 0 or 1 (e.g. Recall@k with one gold document),
    else the normal approximation clipped to [0, 1]. Where every score is the same, the
    normal interval would be a point (22 of 22 found is not certainty), so the Wilson
    interval at the mean stands in: a score in [0, 1] varies at most as a 0/1 one does.

    >>> m = mean_interval([1.0, 0.5, 0.5, 0.0, 1.0])
    >>> m.value, m.n, [round(x, 3) for x in m.ci95]
    (0.6, 5, [0.233, 0.967])
    >>> [round(x, 3) for x in mean_interval([1.0] * 22).ci95]  # 22 of 22 found is not certainty
    [0.851, 1.0]
    """
    n = len(values)
    if n == 0:
        return MeanInterval(value=None, n=0, ci95=(0.0, 1.0))
    array = np.asarray(values, dtype=np.float64)
    mean = float(array.mean())
    half = z * float(array.std(ddof=1)) / math.sqrt(n) if n > 1 else 0.0
    if bool(np.all((array == 0.0) | (array == 1.0))):
        return MeanInterval(value=mean, n=n, ci95=wilson(int(array.sum()), n, z))
    if half == 0.0:
        return MeanInterval(value=mean, n=n, ci95=wilson_share(mean, n, z))
    return MeanInterval(value=mean, n=n, ci95=(max(0.0, mean - half), min(1.0, mean + half)))


def _gold_positions(retrieved: Sequence[str], gold: Sequence[str]) -> list[int]:
    """0-based ranks at which each distinct gold document first appears."""
    if len(gold) == 1:
        try:
            return [retrieved.index(gold[0])]
        except ValueError:
            return []
    wanted = set(gold)
    seen: set[str] = set()
    positions = []
    for rank, doc in enumerate(retrieved):
        if doc in wanted and doc not in seen:
            seen.add(doc)
            positions.append(rank)
    return positions


Shape = tuple[int, tuple[int, ...]]  # (gold documents wanted, 0-based ranks where found)


def query_shape(retrieved: Sequence[str], gold: Sequence[str]) -> Shape:
    """What the ranking metrics of one query depend on: how many distinct gold documents
    it wants (1 where one is named) and the sorted 0-based ranks at which each is first
    retrieved. Queries of one shape have the same scores, so a million queries are a few
    shapes with their counts (the same figures in memory and from SQL).

    >>> query_shape(["d3", "d1", "d7", "d1"], gold=["d1", "d2"])
    (2, (1,))
    """
    wanted = len(set(gold)) if len(gold) > 1 else 1
    return wanted, tuple(_gold_positions(retrieved, gold))


def shape_scores(shapes: Mapping[Shape, int], ks: Sequence[int]) -> RankingMetrics:
    """Recall@k, MRR and nDCG@max(k) of queries given as shapes (:func:`query_shape`) and
    how many queries have each: the same figures as :func:`recall_at_k`,
    :func:`reciprocal_rank` and :func:`ndcg_at_k` averaged over the queries. The scores
    are laid out in sorted order before they are averaged, so the figures depend on the
    queries only, never on the order they came in.

    >>> shape_scores({(1, (0,)): 2, (1, ()): 1}, ks=(1,))["mrr"].value  # two found first
    0.6666666666666666
    """
    deepest = max(ks)
    discount = [1.0 / math.log2(rank + 2) for rank in range(deepest)]
    ideal = list(itertools.accumulate(discount))
    counts = np.fromiter(shapes.values(), dtype=np.int64, count=len(shapes))
    recall = {k: np.zeros(len(shapes)) for k in ks}
    rr = np.zeros(len(shapes))
    ndcg = np.zeros(len(shapes))
    for i, (wanted, positions) in enumerate(shapes):
        if not positions:
            continue
        for k in ks:
            recall[k][i] = sum(p < k for p in positions) / wanted
        rr[i] = 1.0 / (positions[0] + 1)
        ndcg[i] = (
            sum(discount[p] for p in positions if p < deepest) / ideal[min(deepest, wanted) - 1]
        )

    def spread(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        order = np.argsort(values, kind="stable")
        out: npt.NDArray[np.float64] = np.repeat(values[order], counts[order])
        return out

    out: RankingMetrics = {f"recall@{k}": mean_interval(spread(recall[k])) for k in ks}
    out["mrr"] = mean_interval(spread(rr))
    out[f"ndcg@{deepest}"] = mean_interval(spread(ndcg))
    return out


def _scores(examples: list[Example], ks: Sequence[int]) -> RankingMetrics:
    """Recall@k, MRR and nDCG@max(k) of the examples (:func:`shape_scores` of their
    shapes)."""
    shapes: Counter[Shape] = Counter()
    for ex in examples:
        assert ex.retrieved is not None and ex.gold is not None
        shapes[query_shape(ex.retrieved, ex.gold)] += 1
    return shape_scores(shapes, ks)


def ranking_cuts(depth: int, ks: Sequence[int] = DEFAULT_KS) -> list[int]:
    """The cut-offs of a system that retrieves up to ``depth`` documents: those beyond it
    would only repeat the last one.

    >>> ranking_cuts(3), ranking_cuts(20)
    ([1, 3], [1, 3, 5, 10])
    """
    return [k for k in ks if k <= depth] or [min(ks)]


def ranking_summary(
    examples: Iterable[Example], ks: Sequence[int] = DEFAULT_KS
) -> dict[str, SystemRanking]:
    """Each system's ranking metrics per variant and per label, over the examples that
    have both gold ids (non-empty) and a retrieved list; systems without any, or that
    never retrieved a document, are left out.

    >>> from ragaudit.analysis.metrics import Example
    >>> def query(i, retrieved, gold):
    ...     return Example(f"q{i}", f"g{i}", "short", True, system="bm25",
    ...                    retrieved=retrieved, gold=gold)
    >>> examples = [query(1, ("d1", "d2", "d3"), ("d1",)), query(2, ("d4", "d5", "d2"), ("d2",)),
    ...             query(3, ("d6", "d7", "d8"), ("d9",))]
    >>> ranking = ranking_summary(examples)
    >>> ranking["bm25"].depth, list(ranking["bm25"].variants["short"])  # cut-offs up to the depth
    (3, ['recall@1', 'recall@3', 'mrr', 'ndcg@3'])
    >>> mrr = ranking["bm25"].variants["short"]["mrr"]
    >>> round(mrr.value, 3), mrr.n  # (1 + 1/3 + 0) / 3
    (0.444, 3)
    """
    by_variant: dict[str, dict[str, list[Example]]] = defaultdict(lambda: defaultdict(list))
    by_label: dict[str, dict[str, list[Example]]] = defaultdict(lambda: defaultdict(list))
    for ex in examples:
        if not is_ranked(ex):
            continue
        by_variant[ex.system][ex.variant].append(ex)
        if ex.label is not None:
            by_label[ex.system][ex.label].append(ex)
    out: dict[str, SystemRanking] = {}
    for system, variants in by_variant.items():
        # Cut-offs beyond the system's retrieval depth would only repeat the last one.
        depth = max(len(ex.retrieved or ()) for exs in variants.values() for ex in exs)
        if depth == 0:
            continue  # never retrieves (LLM only, or ids not reported): nothing to rank
        cuts = ranking_cuts(depth, ks)
        out[system] = SystemRanking(
            depth=depth,
            variants={v: _scores(exs, cuts) for v, exs in sorted(variants.items())},
            labels={lab: _scores(exs, cuts) for lab, exs in sorted(by_label[system].items())},
        )
    return out


def ranking_columns(ranking: Mapping[str, SystemRanking]) -> list[str]:
    """Every metric name of a :func:`ranking_summary`, in a stable order for tables.

    >>> from ragaudit.analysis.metrics import Example
    >>> examples = [Example("q1", "g1", "short", True, system="bm25", retrieved=("d1", "d2", "d3"),
    ...                     gold=("d1",))]
    >>> ranking_columns(ranking_summary(examples))
    ['recall@1', 'recall@3', 'mrr', 'ndcg@3']
    """
    names: dict[str, None] = {}
    for entry in ranking.values():
        for metrics in entry.variants.values():
            names.update(dict.fromkeys(metrics))

    def order(name: str) -> tuple[int, int]:
        kind, _, cut = name.partition("@")
        return ({"recall": 0, "mrr": 1, "ndcg": 2}.get(kind, 3), int(cut or 0))

    return sorted(names, key=order)
