"""The lambda study: accuracy and R of each system and variant at several shares of
queries in gap groups (lambda), set by resampling whole semantic groups. Pure.

Accuracy is R x (1 - lambda) (grammar-v2, eq. 3), so two datasets, variants or systems
whose lambda differs can rank one way on accuracy and the other way on R: accuracy
hides non-robustness that R shows. The paper's remedy is stratified sampling (every
group asked the same number of times, so lambda is the same everywhere); this study
shows the effect on the answers at hand, by setting lambda and watching what moves.

How a target is reached: the groups of one system and variant are split by their tag
into gap groups (every query wrong) and the others. To raise lambda, every gap group is
kept and the others are subsampled; to lower it, every other group is kept and the gap
groups are subsampled. Each draw shuffles the subsampled kind and keeps the prefix whose
lambda is nearest the target. Whole groups, never single queries: a group's tag belongs
to all its queries, and taking some of them would change the tags the study holds fixed.
R then stays what it is below the observed lambda (the groups it counts are all kept) and
moves only by which groups a draw keeps above it, while accuracy follows R x (1 - lambda).

The figures of a draw are those of :mod:`ragaudit.analysis.significance`'s resamples (a
resample there is a weight per group; here a weight of 0 or 1): the same per-group parts
of accuracy and R, so the study's figure at the observed lambda is the summary's.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import numpy as np

from ragaudit.analysis.comparisons import _group_counts
from ragaudit.analysis.group_counts import GroupCounts, _tags
from ragaudit.analysis.metrics import ALL_GAPS, ONE_QUERY, Example
from ragaudit.analysis.significance import _parts, _ratio
from ragaudit.analysis.summary import DrawSpread, LambdaPoint, LambdaSide, LambdaStudy

DEFAULT_TARGETS: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
DEFAULT_DRAWS = 500
TOLERANCE = 0.05  # a target is reached when its draws' mean lambda is this close to it

SideKey = tuple[str, str]  # (system, variant)
GroupVerdicts = Mapping[str, tuple[int, int]]  # group -> (correct, total)

# The columns of a side's per-group parts: correct answers, answers (accuracy's
# denominator), answers outside gap groups (R's), and whether the group is outside the gaps
# with two answers or more (R is measured only where a draw keeps one such group).
_CORRECT, _ANSWERS, _OUTSIDE, _MEASURES_R = range(4)


def check_targets(targets: Iterable[float]) -> tuple[float, ...]:
    """The targets sorted and without repeats; a value outside [0, 1] (or not a number)
    is a ValueError that names it.

    >>> check_targets([0.5, 0.1, 0.5])
    (0.1, 0.5)
    >>> check_targets([1.5])
    Traceback (most recent call last):
    ...
    ValueError: a lambda target is a share of queries, from 0 to 1, not 1.5
    """
    out = set()
    for value in targets:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"a lambda target is a number from 0 to 1, not {value!r}")
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise ValueError(f"a lambda target is a share of queries, from 0 to 1, not {value!r}")
        out.add(float(value))
    if not out:
        raise ValueError("the lambda study needs at least one target")
    return tuple(sorted(out))


def example_verdicts(examples: Iterable[Example]) -> dict[SideKey, dict[str, tuple[int, int]]]:
    """Per system and variant, each group's (correct, total) of the judged answers, as the
    paired comparisons count them.

    >>> examples = [Example("q1", "g1", "short", True), Example("q2", "g1", "short", False)]
    >>> example_verdicts(examples)
    {('system', 'short'): {'g1': (1, 2)}}
    """
    by: dict[SideKey, list[Example]] = defaultdict(list)
    for ex in examples:
        by[ex.system, ex.variant].append(ex)
    return {key: _group_counts(items) for key, items in sorted(by.items())}


def table_verdicts(table: GroupCounts) -> dict[SideKey, dict[str, tuple[int, int]]]:
    """The same from an engine's per-group counts (the SQL path): groups with judged
    answers only.

    >>> table = GroupCounts.from_rows([("rag", "short", "g1", {"n": 2, "k": 1}),
    ...                                ("rag", "short", "g2", {"n": 0})])
    >>> table_verdicts(table)
    {('rag', 'short'): {'g1': (1, 2)}}
    """
    n, k = table.counts["n"], table.counts["k"]
    out: dict[SideKey, dict[str, tuple[int, int]]] = {}
    for key, rows in table.sides().items():
        found = {
            table.group[i]: (int(k[i]), int(n[i])) for i in range(rows.start, rows.stop) if n[i]
        }
        if found:
            out[key] = found
    return out


def _parts_of(verdicts: GroupVerdicts) -> tuple[np.ndarray, np.ndarray]:
    """Each group's parts (groups x the four columns above, in group order) and whether it
    is a gap."""
    groups = sorted(verdicts)
    correct = np.array([verdicts[g][0] for g in groups], dtype=np.int64)
    total = np.array([verdicts[g][1] for g in groups], dtype=np.int64)
    gap = np.array([tag == "gap" for tag in _tags(total, correct)], dtype=bool)
    num, answers = _parts("accuracy", correct, total)
    _, outside = _parts("robustness", correct, total)
    measures = (~gap & (total > 1)).astype(np.float64)
    return np.stack([num, answers, outside, measures], axis=1), gap


def _figures(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str | None]]:
    """Lambda, accuracy and R of summed parts (draws x columns); R is NaN where undefined,
    with why."""
    lam = _ratio(sums[:, _ANSWERS] - sums[:, _OUTSIDE], sums[:, _ANSWERS])  # in gaps / all
    accuracy = _ratio(sums[:, _CORRECT], sums[:, _ANSWERS])
    robustness = _ratio(sums[:, _CORRECT], sums[:, _OUTSIDE])
    why: list[str | None] = [
        None if measured > 0 else ALL_GAPS if outside == 0 else ONE_QUERY
        for measured, outside in zip(sums[:, _MEASURES_R], sums[:, _OUTSIDE], strict=True)
    ]
    robustness[np.array([w is not None for w in why], dtype=bool)] = np.nan
    return lam, accuracy, robustness, why


def _spread(values: np.ndarray) -> DrawSpread | None:
    """The mean and the 2.5th and 97.5th percentiles of the finite values; None if none."""
    values = values[np.isfinite(values)]
    if not values.size:
        return None
    low, high = np.quantile(values, [0.025, 0.975])
    return DrawSpread(
        mean=float(values.mean()), low=float(low), high=float(high), draws=int(values.size)
    )


def _rng(seed: int, system: str, variant: str, target: float) -> np.random.Generator:
    """The draws of one system, variant and target: the same whatever else is studied
    (``hash`` of a string changes between processes; a CRC does not)."""
    key = [seed, zlib.crc32(system.encode()), zlib.crc32(variant.encode()), round(target * 1e6)]
    return np.random.default_rng(key)


def _unreached(
    target: float,
    why: str,
    kept: Literal["gap", "non-gap"] | None = None,
    reached: DrawSpread | None = None,
) -> LambdaPoint:
    """A target whose figures are null, with why (and the lambda its draws reached)."""
    return LambdaPoint(
        target=target,
        kept=kept,
        lambda_reached=reached,
        accuracy=None,
        robustness=None,
        undefined=why,
    )


def _point(
    parts: np.ndarray,
    gap: np.ndarray,
    observed: float,
    target: float,
    draws: int,
    tolerance: float,
    rng: np.random.Generator,
) -> LambdaPoint:
    """One target: keep one kind of group whole, subsample the other ``draws`` times."""
    # At the observed lambda itself every draw keeps every group, whichever kind is "kept".
    raise_it = target > observed or (target == observed and bool(gap.all()))
    kept_mask = gap if raise_it else ~gap
    kept: Literal["gap", "non-gap"] = "gap" if raise_it else "non-gap"
    if not kept_mask.any():
        return _unreached(
            target,
            "no gap group: lambda is 0 here, and leaving groups out cannot raise it"
            if raise_it
            else f"{ALL_GAPS}: lambda is 1 here, and leaving groups out cannot lower it",
        )
    base = parts[kept_mask].sum(axis=0)
    pool = parts[~kept_mask]
    # Every pooled group is of one kind, so a prefix's lambda depends on its answers only:
    # the kept gap answers over the kept answers plus the prefix's (and the prefix's own
    # answers are in gaps too when the pool is the gap groups).
    in_gaps, answers = base[_ANSWERS] - base[_OUTSIDE], base[_ANSWERS]
    pooled_gaps = not raise_it
    sums = np.empty((draws, parts.shape[1]))
    for d in range(draws):
        order = rng.permutation(len(pool))
        added = np.concatenate([[0.0], np.cumsum(pool[order, _ANSWERS])])  # first j groups
        lam = (in_gaps + added * pooled_gaps) / (answers + added)
        chosen = int(np.argmin(np.abs(lam - target)))
        sums[d] = base + pool[order[:chosen]].sum(axis=0)
    lam, accuracy, robustness, why = _figures(sums)
    reached = _spread(lam)
    assert reached is not None  # every draw keeps the kept kind's answers
    if abs(reached.mean - target) > tolerance + 1e-9:  # 0.8 - 0.75 is 0.05000000000000004
        why_not = f"whole groups bring lambda no nearer than {reached.mean:.3f} to {target:g}"
        return _unreached(target, why_not, kept, reached)
    missing = Counter(w for w in why if w is not None)
    note = None
    if len(missing) == 1 and sum(missing.values()) == draws:
        note = next(iter(missing))  # R is undefined in every draw, for one reason
    elif missing:
        note = "; ".join(
            f"{reason} in {n} of {draws} draws" for reason, n in sorted(missing.items())
        )
    return LambdaPoint(
        target=target,
        kept=kept,
        lambda_reached=reached,
        accuracy=_spread(accuracy),
        robustness=_spread(robustness),
        robustness_undefined=note,
    )


def lambda_side(
    verdicts: GroupVerdicts,
    targets: Sequence[float] = DEFAULT_TARGETS,
    *,
    draws: int = DEFAULT_DRAWS,
    tolerance: float = TOLERANCE,
    rng_for: Mapping[float, np.random.Generator] | None = None,
) -> LambdaSide:
    """The study of one system and variant from its groups' (correct, total): one point
    per target. ``rng_for`` gives each target its generator (default: seeded by the
    target alone).

    >>> verdicts = {f"g{i}": (3, 3) if i < 4 else (0, 3) for i in range(8)}  # lambda 0.5
    >>> side = lambda_side(verdicts, [0.25, 0.75], draws=20)
    >>> side.observed_lambda, side.observed_accuracy, side.observed_robustness
    (0.5, 0.5, 1.0)
    >>> [(p.kept, round(p.lambda_reached.mean, 2), round(p.accuracy.mean, 2), p.robustness.mean)
    ...  for p in side.points]
    [('non-gap', 0.2, 0.8, 1.0), ('gap', 0.8, 0.2, 1.0)]
    """
    targets = check_targets(targets)
    if draws < 1:
        raise ValueError(f"the lambda study needs at least one draw, not {draws}")
    parts, gap = _parts_of(verdicts)
    lam, accuracy, robustness, why = _figures(parts.sum(axis=0, keepdims=True))
    undefined = None
    if why[0] == ONE_QUERY:
        # A group of one query is a gap exactly when its answer is wrong: lambda is
        # 1 - accuracy, and setting it would only choose the right and wrong answers.
        undefined = (
            f"{ONE_QUERY}: lambda is undefined (a group of one query is a gap exactly when "
            "its answer is wrong)"
        )
    observed = float(lam[0])
    return LambdaSide(
        groups=len(gap),
        gap_groups=int(gap.sum()),
        queries=int(parts[:, _ANSWERS].sum()),
        queries_in_gaps=int(parts[gap, _ANSWERS].sum()),
        observed_lambda=None if undefined else observed,
        observed_accuracy=float(accuracy[0]),
        observed_robustness=None if why[0] else float(robustness[0]),
        undefined=undefined,
        points=[
            _unreached(t, undefined)
            if undefined
            else _point(
                parts,
                gap,
                observed,
                t,
                draws,
                tolerance,
                (rng_for or {}).get(t) or np.random.default_rng(round(t * 1e6)),
            )
            for t in targets
        ],
    )


def lambda_study(
    verdicts: Mapping[SideKey, GroupVerdicts],
    targets: Sequence[float] = DEFAULT_TARGETS,
    *,
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
    tolerance: float = TOLERANCE,
) -> LambdaStudy:
    """Accuracy and R of every system and variant (``verdicts``: per (system, variant),
    each group's (correct, total), from :func:`example_verdicts` or
    :func:`table_verdicts`) at each target lambda, ``draws`` resamples of whole groups
    each. The draws of a system, variant and target depend on ``seed`` and those three
    only, so adding a system or a target changes no other figure.

    >>> verdicts = {("rag", "long"): {f"g{i}": (2, 3) if i < 3 else (0, 3) for i in range(6)}}
    >>> study = lambda_study(verdicts, [0.2, 0.8], draws=50, seed=1)
    >>> side = study.systems["rag"]["long"]
    >>> side.observed_lambda, round(side.observed_robustness, 3)
    (0.5, 0.667)
    >>> [(p.target, p.undefined) for p in side.points]  # whole groups of 3: 0.25 and 0.75
    [(0.2, None), (0.8, None)]
    >>> [round(p.robustness.mean, 3) for p in side.points]  # R does not move with lambda
    [0.667, 0.667]
    """
    targets = check_targets(targets)
    systems: dict[str, dict[str, LambdaSide]] = defaultdict(dict)
    for (system, variant), groups in sorted(verdicts.items()):
        if not groups:
            continue
        rngs = {t: _rng(seed, system, variant, t) for t in targets}
        systems[system][variant] = lambda_side(
            groups, targets, draws=draws, tolerance=tolerance, rng_for=rngs
        )
    return LambdaStudy(
        targets=list(targets), draws=draws, seed=seed, tolerance=tolerance, systems=dict(systems)
    )
