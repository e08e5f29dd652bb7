"""What the labels of a test set say, and how far the raters agree. Pure.

* The *consensus* label of a pair is the label a strict majority of its decided raters gave;
  a tie has none (counted as "no majority"), and so has a pair every rater failed on.
* The *composition* is the share of each label among the pairs with a consensus, with 95%
  Wilson intervals; where the set flags unanswerable questions itself (SQuAD 2.0's
  ``is_impossible``), also the composition of the answerable ones, the share of flagged
  questions labelled ``unanswerable`` (recall) and of unflagged ones (false alarms).
* *Fleiss' kappa* over all raters (statsmodels computes it), on the pairs every rater
  decided; and, per rater A_i, "Know Your RAG"'s kappa(A_i, M - A_i) against the majority
  of the other raters, on the pairs where the others have a strict majority (the rest are
  discarded and counted), with the confusion matrix of A_i against that majority.
  Intervals are percentile bootstraps over pairs (seeded, so a rerun gives the same).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from ragaudit.analysis.metrics import proportion
from ragaudit.analysis.summary import Kappa, LabelFigures, Proportion, RaterAgreement
from ragaudit.records.models import LABELS, LabelPair, LabelRecord

BOOTSTRAP_RESAMPLES = 1000


def count_table(rows: Sequence[Sequence[str]], categories: Sequence[str]) -> np.ndarray:
    """Subjects x categories: how many raters put each subject (row of labels) in each
    category, the table Fleiss' kappa is computed on.

    >>> rows = [["summary", "summary", "reasoning"], ["reasoning", "reasoning", "reasoning"]]
    >>> count_table(rows, ["summary", "reasoning"]).tolist()  # 2 pairs x 2 labels, 3 raters each
    [[2, 1], [0, 3]]
    """
    index = {c: i for i, c in enumerate(categories)}
    table = np.zeros((len(rows), len(categories)), dtype=np.int64)
    for r, labels in enumerate(rows):
        for label in labels:
            table[r, index[label]] += 1
    return table


def fleiss_kappa_table(table: np.ndarray) -> float | None:
    """Fleiss' kappa of a subjects x categories count table (every subject rated by the
    same number of raters), by statsmodels; None where it is undefined: fewer than two
    raters or subjects, or every rating in one category (chance agreement is then 1).

    >>> round(fleiss_kappa_table(np.array([[3, 0], [0, 3], [3, 0], [1, 2]])), 3)
    0.657
    >>> fleiss_kappa_table(np.array([[3, 0], [3, 0]])) is None  # one label only: undefined
    True
    """
    from statsmodels.stats.inter_rater import fleiss_kappa

    table = np.asarray(table)
    if table.shape[0] < 2 or table.sum(axis=1).min() < 2:
        return None
    totals = table.sum(axis=0)
    if (totals == totals.sum()).any():  # one category holds every rating
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(fleiss_kappa(table, method="fleiss"))
    return value if np.isfinite(value) else None


def kappa(rows: Sequence[Sequence[str]], categories: Sequence[str], seed: int = 0) -> Kappa:
    """Fleiss' kappa of ``rows`` (each the labels one subject got, all of one length), with
    a 95% percentile bootstrap interval over subjects; null with the reason when undefined.

    >>> rows = [["summary"] * 3, ["reasoning"] * 3, ["summary"] * 3]  # 3 raters agree on 3 pairs
    >>> rows.append(["summary", "summary", "reasoning"])  # and split on a fourth
    >>> str(kappa(rows, LABELS))
    '0.62 [-0.33, 1.00]'
    >>> str(kappa([["summary"] * 3, ["summary"] * 3], LABELS))
    'n/a (every rating is the same label, so agreement by chance is 1)'
    """
    n = len(rows)
    table = count_table(rows, categories)
    value = fleiss_kappa_table(table)
    if value is None:
        why = (
            "fewer than two pairs rated"
            if n < 2
            else "fewer than two raters"
            if table.sum(axis=1).min() < 2
            else "every rating is the same label, so agreement by chance is 1"
        )
        return Kappa(value=None, ci95=None, n=n, undefined=why)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(BOOTSTRAP_RESAMPLES):
        resampled = fleiss_kappa_table(table[rng.integers(0, n, n)])
        if resampled is not None:
            draws.append(resampled)
    ci = (
        (round(float(np.percentile(draws, 2.5)), 6), round(float(np.percentile(draws, 97.5)), 6))
        if len(draws) >= BOOTSTRAP_RESAMPLES // 2
        else None
    )
    return Kappa(value=round(value, 6), ci95=ci, n=n, undefined=None)


def majority(labels: Iterable[str | None]) -> str | None:
    """The label a strict majority of the decided ``labels`` gave; None on a tie or when
    none is decided.

    >>> majority(["summary", "summary", "reasoning"])
    'summary'
    >>> majority(["summary", "reasoning"]) is None  # a tie
    True
    >>> majority(["summary", None])  # the undecided rater does not count
    'summary'
    """
    counts = Counter(label for label in labels if label is not None)
    total = sum(counts.values())
    if not total:
        return None
    label, count = counts.most_common(1)[0]
    return label if count * 2 > total else None


def consensus_labels(
    pairs: Iterable[LabelPair], records: Iterable[LabelRecord]
) -> dict[str, str | None]:
    """Pair id -> its consensus label (:func:`majority` of its raters), for every pair.

    >>> pairs = [LabelPair(pair_id=p, gold_ids=["d1"], question="Who?") for p in ("p1", "p2")]
    >>> records = [
    ...     LabelRecord(pair_id="p1", rater="a", label="summary"),
    ...     LabelRecord(pair_id="p1", rater="b", label="summary"),
    ...     LabelRecord(pair_id="p2", rater="a", label="summary"),
    ...     LabelRecord(pair_id="p2", rater="b", label="reasoning"),
    ... ]
    >>> consensus_labels(pairs, records)
    {'p1': 'summary', 'p2': None}
    """
    by_pair: dict[str, list[str | None]] = {p.pair_id: [] for p in pairs}
    for record in records:
        if record.pair_id in by_pair:
            by_pair[record.pair_id].append(record.label)
    return {pid: majority(labels) for pid, labels in by_pair.items()}


def _shares(labels: Iterable[str], categories: Sequence[str]) -> dict[str, Proportion]:
    counts = Counter(labels)
    n = sum(counts.values())
    return {c: proportion(counts.get(c, 0), n) for c in categories}


def _labelled_unanswerable(consensus: Sequence[str | None]) -> Proportion:
    """The share of the pairs with a consensus label whose label is ``unanswerable``."""
    return proportion(
        sum(c == "unanswerable" for c in consensus), sum(c is not None for c in consensus)
    )


def _by_pair(records: Iterable[LabelRecord]) -> dict[str, dict[str, str | None]]:
    """Pair id -> rater -> label (None: the rater was asked and gave no usable label)."""
    by_pair: dict[str, dict[str, str | None]] = defaultdict(dict)
    for record in records:
        by_pair[record.pair_id][record.rater] = record.label
    return by_pair


def unlabelled_pairs(pairs: Sequence[LabelPair], records: Iterable[LabelRecord]) -> dict[str, int]:
    """Per rater, the pairs it has no label record for at all: a human who labelled part
    of the set, or a rater of an earlier run over fewer pairs. These were never asked, so
    they are not *undecided* (asked, with no usable reply); like those, they are left out
    of the rater's agreement.

    >>> pairs = [LabelPair(pair_id=p, gold_ids=["d1"], question="Who?") for p in ("p1", "p2")]
    >>> records = [
    ...     LabelRecord(pair_id="p1", rater="llm", label="summary"),
    ...     LabelRecord(pair_id="p2", rater="llm", label=None),  # asked: undecided
    ...     LabelRecord(pair_id="p1", rater="human", label="summary"),  # p2 never asked
    ... ]
    >>> unlabelled_pairs(pairs, records)
    {'human': 1, 'llm': 0}
    """
    by_pair = _by_pair(records)
    raters = sorted({r for labels in by_pair.values() for r in labels})
    return {r: sum(1 for p in pairs if r not in by_pair.get(p.pair_id, {})) for r in raters}


def label_figures(
    pairs: Sequence[LabelPair], records: Iterable[LabelRecord], seed: int = 0
) -> LabelFigures:
    """The composition of ``pairs`` by consensus label and the raters' agreement, from every
    rater's labels (``records``). A pair a rater gave no usable label (undecided) or has no
    record for (unlabelled: see :func:`unlabelled_pairs`) has no label of that rater; only
    the first kind is counted as undecided.

    >>> pairs = [LabelPair(pair_id=f"p{i}", gold_ids=["d1"], question="Who?") for i in range(4)]
    >>> given = {"a": ["summary", "summary", "reasoning", "fact_single"],
    ...          "b": ["summary", "summary", "reasoning", "reasoning"],
    ...          "c": ["summary", "fact_single", "reasoning", "fact_single"]}
    >>> records = [LabelRecord(pair_id=f"p{i}", rater=rater, label=label)
    ...            for rater, labels in given.items() for i, label in enumerate(labels)]
    >>> figures = label_figures(pairs, records)
    >>> figures.labelled, str(figures.composition["summary"])
    (4, '0.50 [0.15, 0.85]')
    >>> str(figures.fleiss)
    '0.49 [-0.20, 1.00]'
    >>> [(r.rater, r.kappa.value) for r in figures.per_rater]
    [('a', 1.0), ('b', 0.454545), ('c', 0.454545)]
    """
    by_pair = _by_pair(records)
    raters = sorted({r for labels in by_pair.values() for r in labels})
    known = {p.pair_id for p in pairs}
    ratings = {p.pair_id: [by_pair.get(p.pair_id, {}).get(r) for r in raters] for p in pairs}
    consensus = {pid: majority(labels) for pid, labels in ratings.items()}
    undecided = {
        r: sum(
            1 for p in pairs if r in by_pair.get(p.pair_id, {}) and by_pair[p.pair_id][r] is None
        )
        for r in raters
    }
    no_majority = sum(
        1 for pid, c in consensus.items() if c is None and any(x is not None for x in ratings[pid])
    )
    decided = [c for c in consensus.values() if c is not None]
    flagged = [p for p in pairs if p.impossible is not None]
    answerable = [consensus[p.pair_id] for p in flagged if not p.impossible]
    impossible = [consensus[p.pair_id] for p in flagged if p.impossible]
    fleiss = None
    if len(raters) >= 2:
        complete = [
            [x for x in labels if x is not None]
            for labels in ratings.values()
            if all(x is not None for x in labels)
        ]
        fleiss = kappa(complete, LABELS, seed)
    per_rater = [_rater_agreement(i, raters, ratings, seed) for i in range(len(raters))]
    return LabelFigures(
        raters=raters,
        pairs=len(pairs),
        labelled=len(decided),
        no_majority=no_majority,
        unknown_pairs=len(set(by_pair) - known),
        undecided=undecided,
        composition=_shares(decided, LABELS),
        composition_answerable=(
            _shares([c for c in answerable if c is not None], LABELS) if flagged else None
        ),
        unanswerable_recall=_labelled_unanswerable(impossible) if flagged else None,
        unanswerable_false_alarms=_labelled_unanswerable(answerable) if flagged else None,
        fleiss=fleiss,
        per_rater=per_rater if len(raters) >= 2 else [],
    )


def _rater_agreement(
    i: int, raters: list[str], ratings: dict[str, list[str | None]], seed: int
) -> RaterAgreement:
    """kappa(A_i, M - A_i) and the confusion of rater ``i`` against the others' majority."""
    rows: list[tuple[str, str]] = []
    discarded = 0
    for labels in ratings.values():
        own = labels[i]
        if own is None:
            continue
        others = majority(labels[:i] + labels[i + 1 :])
        if others is None:
            discarded += 1
            continue
        rows.append((own, others))
    confusion: dict[str, dict[str, int]] = {m: dict.fromkeys(LABELS, 0) for m in LABELS}
    for own, others in rows:
        confusion[others][own] += 1
    return RaterAgreement(
        rater=raters[i],
        kappa=kappa(rows, LABELS, seed),
        discarded=discarded,
        confusion=confusion,
    )
