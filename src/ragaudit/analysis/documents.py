"""Figures of test sets generated from documents, and of the queries split by source. Pure.

From candidates.jsonl: per strategy, what the candidates cost per accepted pair, the
requested label against the labeller's (the confusion table of "Know Your RAG", Figure 2),
the critique ratings per label (its Figure 3), and how far the labeller's composition is
from uniform (total variation distance, with a bootstrap interval), which says whether a
strategy balances its question types.

From judged examples: each source's figures on its own (SQL-grounded queries and
document-generated ones are different test sets over the same systems).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragaudit.analysis.comparisons import comparisons
from ragaudit.analysis.metrics import Example, analyze, proportion
from ragaudit.analysis.summary import (
    CritiqueStat,
    Distance,
    DocumentFigures,
    Outcome,
    SourceFigures,
    StrategyFigures,
)
from ragaudit.records.models import LABELS, CandidateRecord

DEFAULT_THRESHOLD = 3
ANY = "any"  # the requested label of a strategy that asks for none (simple)
_BOOTSTRAP = 2000


def total_variation(counts: Sequence[int] | np.ndarray) -> float:
    """Half the summed absolute differences between the shares of ``counts`` and equal
    shares over as many categories.

    >>> [total_variation(counts) for counts in ([5, 5, 5, 5], [20, 0, 0, 0], [10, 10, 0, 0])]
    [0.0, 0.75, 0.5]
    """
    shares = np.asarray(counts, dtype=float)
    shares = shares / shares.sum()
    return float(0.5 * np.abs(shares - 1.0 / len(shares)).sum())


def composition_distance(
    labels: Sequence[str], *, categories: Sequence[str] = LABELS, seed: int = 0
) -> Distance:
    """The total variation distance of ``labels``' composition to uniform over
    ``categories``, with a 95% percentile bootstrap interval (labels resampled).

    >>> labels = ["fact_single"] * 6 + ["summary"] * 2 + ["reasoning", "unanswerable"]
    >>> str(composition_distance(labels))
    '0.35 [0.15, 0.65] (n=10)'
    """
    index = {c: i for i, c in enumerate(categories)}
    coded = np.array([index[label] for label in labels if label in index], dtype=int)
    n = len(coded)
    if n == 0:
        return Distance(value=None, n=0, ci95=(0.0, 1.0))
    k = len(categories)
    value = total_variation(np.bincount(coded, minlength=k))
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(_BOOTSTRAP, n))
    counts = np.stack([np.bincount(row, minlength=k) for row in coded[draws]])
    shares = counts / n
    resampled = 0.5 * np.abs(shares - 1.0 / k).sum(axis=1)
    low, high = np.percentile(resampled, [2.5, 97.5])
    return Distance(value=value, n=n, ci95=(float(low), float(high)))


def distance_difference(
    a: Sequence[str], b: Sequence[str], *, categories: Sequence[str] = LABELS, seed: int = 0
) -> tuple[float, tuple[float, float]] | None:
    """How much closer to uniform ``a``'s composition is than ``b``'s (b's distance minus
    a's), with a 95% bootstrap interval (each side resampled on its own); None when either
    side has no label. An interval above 0 says ``a`` is measurably closer.

    >>> balanced = ["fact_single", "summary", "reasoning", "unanswerable"] * 5
    >>> skewed = ["fact_single"] * 14 + ["summary"] * 4 + ["reasoning"] * 2
    >>> point, (low, high) = distance_difference(balanced, skewed)
    >>> round(point, 2), low > 0  # the balanced set is measurably closer to uniform
    (0.45, True)
    """
    index = {c: i for i, c in enumerate(categories)}
    sides = [np.array([index[x] for x in s if x in index], dtype=int) for s in (a, b)]
    if any(len(s) == 0 for s in sides):
        return None
    k = len(categories)
    rng = np.random.default_rng(seed)
    distances = []
    for side in sides:
        draws = side[rng.integers(0, len(side), size=(_BOOTSTRAP, len(side)))]
        shares = np.stack([np.bincount(row, minlength=k) for row in draws]) / len(side)
        distances.append(0.5 * np.abs(shares - 1.0 / k).sum(axis=1))
    point = total_variation(np.bincount(sides[1], minlength=k)) - total_variation(
        np.bincount(sides[0], minlength=k)
    )
    low, high = np.percentile(distances[1] - distances[0], [2.5, 97.5])
    return point, (float(low), float(high))


def _label_of(c: CandidateRecord) -> str:
    """The label a candidate's critiques are filed under: the one asked for, else the
    labeller's, else "unlabelled"."""
    return str(c.requested_label or c.observed_label or "unlabelled")


def drop_kind(reason: str) -> str:
    """The check a candidate's drop reason names (``critique: ...`` -> ``critique``).

    >>> drop_kind("critique: groundedness rated 2 < 3"), drop_kind("duplicate")
    ('critique', 'duplicate')
    """
    return reason.split(":", 1)[0].strip() or "dropped"


@dataclass(frozen=True)
class GenerationCost:
    """What a generation from documents cost: every LLM request of its candidates (each
    one's writing and checks, dropped ones included, and an accepted pair's wordings;
    cached requests included) and their tokens, and the pairs accepted. The one
    definition of "LLM requests per accepted pair" that the terminal, documents.stats.json,
    summary.json and the report show.

    >>> cost = GenerationCost(calls=27, tokens=9000, accepted=4)
    >>> cost.calls_per_pair, cost.tokens_per_pair
    (6.75, 2250.0)
    >>> GenerationCost(calls=5, tokens=800, accepted=0).calls_per_pair is None
    True
    """

    calls: int
    tokens: int
    accepted: int

    @property
    def calls_per_pair(self) -> float | None:
        """LLM requests per accepted pair; None when none was accepted."""
        return self.calls / self.accepted if self.accepted else None

    @property
    def tokens_per_pair(self) -> float | None:
        """Tokens per accepted pair; None when none was accepted."""
        return self.tokens / self.accepted if self.accepted else None


def generation_cost(candidates: Iterable[CandidateRecord]) -> GenerationCost:
    """The cost of the generation that wrote ``candidates`` (candidates.jsonl): the sum of
    their requests and tokens, over the pairs accepted.

    >>> def candidate(i, calls, **outcome):
    ...     return CandidateRecord(candidate_id=f"c{i}", context_id=f"d{i}#0", gold_ids=[f"d{i}"],
    ...                            strategy="simple", calls=calls, tokens=100 * calls, **outcome)
    >>> cost = generation_cost([candidate(1, 7, accepted=True),  # its wordings' requests too
    ...                         candidate(2, 3, dropped="critique: specificity 2 < 3")])
    >>> cost.calls, cost.accepted, cost.calls_per_pair  # the dropped one is paid for too
    (10, 1, 10.0)
    """
    calls = tokens = accepted = 0
    for c in candidates:
        calls += c.calls
        tokens += c.tokens
        accepted += c.accepted
    return GenerationCost(calls=calls, tokens=tokens, accepted=accepted)


def strategy_figures(
    candidates: Sequence[CandidateRecord],
    thresholds: Mapping[str, int] | None = None,
    seed: int = 0,
) -> StrategyFigures:
    """The figures of one strategy's candidates.

    >>> def candidate(i, label, rating, **outcome):
    ...     return CandidateRecord(candidate_id=f"c{i}", context_id=f"d{i}#0", gold_ids=[f"d{i}"],
    ...                            strategy="simple", observed_label=label, calls=3,
    ...                            critiques={"groundedness": {"rating": rating}}, **outcome)
    >>> candidates = [candidate(1, "fact_single", 5, accepted=True),
    ...               candidate(2, "summary", 2, dropped="critique: groundedness 2 < 3")]
    >>> figures = strategy_figures(candidates)
    >>> figures.accepted, figures.dropped, figures.calls_per_pair
    (1, {'critique': 1}, 6.0)
    >>> figures.confusion
    {'any': {'fact_single': 1, 'summary': 1}}
    >>> str(figures.critiques["fact_single"]["groundedness"].passed)
    '1.00 [0.21, 1.00]'
    """
    thresholds = thresholds or {}
    cost = generation_cost(candidates)
    confusion: dict[str, Counter[str]] = defaultdict(Counter)
    labels: list[str] = []
    ratings: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for c in candidates:
        if c.observed_label is not None:
            labels.append(str(c.observed_label))
            confusion[str(c.requested_label or ANY)][str(c.observed_label)] += 1
        for name, critique in (c.critiques or {}).items():
            ratings[_label_of(c)][name].append(critique.rating)
    counted = Counter(labels)
    critiques = {
        label: {
            name: CritiqueStat(
                mean=sum(values) / len(values),
                passed=proportion(
                    sum(v >= thresholds.get(name, DEFAULT_THRESHOLD) for v in values),
                    len(values),
                ),
            )
            for name, values in by_name.items()
        }
        for label, by_name in ratings.items()
    }
    return StrategyFigures(
        candidates=len(candidates),
        accepted=cost.accepted,
        dropped=dict(Counter(drop_kind(c.dropped) for c in candidates if c.dropped)),
        calls=cost.calls,
        tokens=cost.tokens,
        calls_per_pair=cost.calls_per_pair,
        tokens_per_pair=cost.tokens_per_pair,
        confusion={k: dict(v) for k, v in confusion.items()},
        composition={label: proportion(counted[label], len(labels)) for label in LABELS},
        distance=composition_distance(labels, seed=seed),
        critiques=critiques,
    )


def generation_figures(
    candidates: Iterable[CandidateRecord],
    thresholds: Mapping[str, int] | None = None,
    seed: int = 0,
) -> DocumentFigures:
    """Per strategy, the figures of its candidates (:func:`strategy_figures`).

    >>> candidates = [
    ...     CandidateRecord(candidate_id=f"c{i}", context_id=f"d{i}#0", gold_ids=[f"d{i}"],
    ...                     strategy=strategy, observed_label=label, accepted=True, calls=2)
    ...     for i, (strategy, label) in enumerate(
    ...         [("simple", "fact_single"), ("simple", "fact_single"), ("statements", "summary")])
    ... ]
    >>> figures = generation_figures(candidates)
    >>> {name: s.accepted for name, s in figures.strategies.items()}
    {'simple': 2, 'statements': 1}
    >>> str(figures.strategies["simple"].distance)
    '0.75 [0.75, 0.75] (n=2)'
    """
    by: dict[str, list[CandidateRecord]] = defaultdict(list)
    for c in candidates:
        by[c.strategy].append(c)
    return DocumentFigures(
        strategies={
            name: strategy_figures(found, thresholds, seed) for name, found in sorted(by.items())
        }
    )


def source_breakdown(
    examples: Sequence[Example],
    seed: int = 0,
    outcomes: tuple[Outcome, ...] = ("answer", "retrieval"),
    judge_failed: Iterable[Example] = (),
) -> dict[str, SourceFigures]:
    """Each source's queries analyzed on their own, with the comparisons among them (for
    ``outcomes``); empty when every query comes from one source (the whole analysis is
    that source's). ``judge_failed``: answers the judge failed on, counted in the
    retrieval figures only.

    >>> answers = {"sql": [True, True, True, False], "document": [True, False, False, False]}
    >>> examples = [Example(f"{origin}{i}", f"{origin}{i}", "short", ok, origin=origin)
    ...             for origin, oks in answers.items() for i, ok in enumerate(oks)]
    >>> by_source = source_breakdown(examples)
    >>> for origin, figures in by_source.items():
    ...     print(origin, figures.systems["system"].variants["short"].accuracy)
    document 0.25 [0.05, 0.70]
    sql 0.75 [0.30, 0.95]
    >>> source_breakdown(examples[:4])  # one source: nothing to break down
    {}
    """
    if not examples:
        return {}
    first = examples[0].origin
    if all(ex.origin == first for ex in examples):  # the usual case, a million long
        return {}
    by: dict[str, list[Example]] = defaultdict(list)
    for ex in examples:
        by[ex.origin].append(ex)
    failed: dict[str, list[Example]] = defaultdict(list)
    for ex in judge_failed:
        failed[ex.origin].append(ex)
    return {
        origin: SourceFigures(
            systems=analyze(found, judge_failed=failed[origin]).systems,
            comparisons=comparisons(
                found, seed=seed, outcomes=outcomes, judge_failed=failed[origin]
            ),
        )
        for origin, found in sorted(by.items())
    }
