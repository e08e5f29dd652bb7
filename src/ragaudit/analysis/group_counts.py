"""Every figure of ``analyze`` from per-group counts, for answers counted by an engine
built for it (DuckDB over the run's Parquet; Spark or Trino could run the same SQL). Pure.

An engine aggregates the answers into one row per (system, variant, semantic group)
(:class:`GroupCounts`) and a few counts per (system, variant) that need each answer's
own fields (:class:`SideCounts`: where each answer went wrong, the queries without a
retrieval verdict), and the shapes of the retrieved lists
(:func:`~ragaudit.analysis.retrieval_metrics.query_shape`). From these, the functions here
give the same figures as :func:`~ragaudit.analysis.metrics.analyze`,
:func:`~ragaudit.analysis.comparisons.comparisons` and
:func:`~ragaudit.analysis.retrieval_metrics.ranking_summary` give from the answers
themselves: the same formulas (shared where they are one function), the groups in one
order (sorted by group id, as :class:`~ragaudit.analysis.significance.PairedCounts`
sorts them), so that the paired resamples draw the same numbers from the same seed.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ragaudit.analysis.comparisons import _comparison, side_pairs
from ragaudit.analysis.metrics import (
    ALL_GAPS,
    ONE_QUERY,
    _undefined,
    balanced_mean,
    proportion,
)
from ragaudit.analysis.retrieval_metrics import Shape, ranking_cuts, shape_scores
from ragaudit.analysis.significance import PairedCounts, compare_many, compare_sets
from ragaudit.analysis.summary import (
    Blame,
    Comparison,
    Outcome,
    Proportion,
    SystemFigures,
    SystemRanking,
    Tag,
    VariantFigures,
)

Ints = npt.NDArray[np.int64]

# The count columns of GroupCounts, in order, and what each holds (per group of a system
# and variant). "Judged": an answer with a verdict; the judge's failures are counted apart.
COUNTS = (
    "n",  # judged answers
    "k",  # of them correct
    "errors",  # of them failed calls (timeouts, HTTP errors)
    "rn",  # judged answers with a retrieval verdict, as the figures read it (no retriever:
    # none; gold ids unknown everywhere in the variant: the context comparison's)
    "rk",  # of them retrieval-correct
    "cn",  # judged answers with a retrieval verdict as recorded (what comparisons pair)
    "ck",  # of them retrieval-correct
    "ce",  # of them failed calls
    "fn",  # answers the judge failed on that have a retrieval verdict
    "fk",  # of them retrieval-correct
    "hk",  # judged answers whose gold ids say whether a document states the answer
    "hh",  # of them with none that does: a hole of the knowledge base
)


@dataclass(frozen=True)
class GroupCounts:
    """One row per (system, variant, group) that has an answer, judged or not: the names,
    and each count of :data:`COUNTS` as an int64 column. Rows are sorted by system,
    variant and group id; ``code`` numbers the group ids of the whole table in sorted
    order (so equal codes are equal groups, and codes sort as the ids do)."""

    system: list[str]
    variant: list[str]
    group: list[str]
    code: Ints
    counts: dict[str, Ints]

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[str, str, str, Mapping[str, int]]]) -> GroupCounts:
        """A table from (system, variant, group, counts) rows, in any order (a count not
        given is 0): for examples and tests; an engine builds the columns directly.

        >>> table = GroupCounts.from_rows([("rag", "short", "g2", {"n": 2}),
        ...                                ("rag", "short", "g1", {"n": 2, "k": 2})])
        >>> len(table), table.group, table.code.tolist(), table.sides()
        (2, ['g1', 'g2'], [0, 1], {('rag', 'short'): slice(0, 2, None)})
        """
        ordered = sorted(rows, key=lambda row: row[:3])
        codes = {g: i for i, g in enumerate(sorted({row[2] for row in ordered}))}
        return cls(
            system=[row[0] for row in ordered],
            variant=[row[1] for row in ordered],
            group=[row[2] for row in ordered],
            code=np.array([codes[row[2]] for row in ordered], dtype=np.int64),
            counts={
                name: np.array([row[3].get(name, 0) for row in ordered], dtype=np.int64)
                for name in COUNTS
            },
        )

    def __len__(self) -> int:
        return len(self.system)

    def sides(self) -> dict[tuple[str, str], slice]:
        """(system, variant) -> its rows (a slice: the rows are sorted)."""
        out: dict[tuple[str, str], slice] = {}
        start = 0
        keys = list(zip(self.system, self.variant, strict=True))
        for key, rows in itertools.groupby(keys):
            size = sum(1 for _ in rows)
            out[key] = slice(start, start + size)
            start += size
        return out


@dataclass(frozen=True)
class SideCounts:
    """What one system and variant counts answer by answer: where each judged answer went
    wrong (its blame, by :func:`~ragaudit.analysis.metrics.source_of` of the answer as the
    figures read it), and the queries without a retrieval verdict, by why (judged ones as
    the figures read them, those the judge failed on as recorded).

    >>> blame = Blame(rule="convention", counts={"correct": 3, "language model": 1},
    ...               by_evidence=0, by_convention=4, holes_answered=0)
    >>> SideCounts(blame, {"unknown": 2}).left_out
    {'unknown': 2}
    """

    blame: Blame
    left_out: dict[str, int] = field(default_factory=dict)
    # Retrievals of computed answers (gold ids "computed") with a verdict, and of them
    # the correct ones, those the judge failed on included: reported apart.
    computed: tuple[int, int] = (0, 0)


def _tags(n: Ints, k: Ints) -> list[Tag]:
    return [
        "gap" if not c else "robust" if c == t else "non-robust" for c, t in zip(k, n, strict=True)
    ]


def variant_figures(rows: Mapping[str, Ints], side: SideCounts) -> VariantFigures:
    """The figures of one system and variant from its groups' counts (``rows``: each
    column of :data:`COUNTS` over its groups), as
    :func:`~ragaudit.analysis.metrics.variant_metrics` gives them from its answers.

    >>> import numpy as np
    >>> rows = {name: np.zeros(2, dtype=np.int64) for name in COUNTS}
    >>> rows["n"][:] = [2, 2]; rows["k"][:] = [2, 0]
    >>> blame = Blame(rule="convention", counts={"correct": 2, "knowledge base": 2},
    ...               by_evidence=0, by_convention=4, holes_answered=0)
    >>> figures = variant_figures(rows, SideCounts(blame))
    >>> str(figures.accuracy), str(figures.robustness), figures.groups
    ('0.50 [0.15, 0.85]', '1.00 [0.34, 1.00]', {'gap': 1, 'robust': 1, 'non-robust': 0})
    """
    judged = rows["n"] > 0
    n_g, k_g = rows["n"][judged], rows["k"][judged]
    gap = k_g == 0
    n = int(n_g.sum())
    correct = int(k_g.sum())
    in_gap = int(n_g[gap].sum())
    robustness = proportion(correct, n - in_gap)
    outside = n_g[~gap]
    undefined = None if np.any(outside > 1) else ONE_QUERY if outside.size else ALL_GAPS
    if undefined is not None and n:
        robustness = _undefined(robustness)
    rn, rk = rows["rn"][judged], rows["rk"][judged]
    any_judged = int(rows["rn"].sum()) > 0
    retrievals = int(rows["rn"].sum() + rows["fn"].sum())
    gap_groups = int(gap.sum())
    groups = int(judged.sum())
    gap_fraction = proportion(in_gap, n)
    retrieval_db = proportion(groups - gap_groups, groups)
    robustness_retrieval = (
        proportion(int(rk[~gap].sum()), int(rn[~gap].sum())) if any_judged else None
    )
    if undefined == ONE_QUERY:
        gap_fraction = _undefined(gap_fraction)
        retrieval_db = _undefined(retrieval_db)
        if robustness_retrieval is not None:
            robustness_retrieval = _undefined(robustness_retrieval)
    tags = _tags(n_g, k_g)
    return VariantFigures(
        n_queries=n,
        n_groups=groups,
        n_errors=int(rows["errors"].sum()),
        groups={t: tags.count(t) for t in ("gap", "robust", "non-robust")},
        accuracy=proportion(correct, n),
        robustness=robustness,
        robustness_undefined=undefined if n else None,
        gap_fraction=gap_fraction,
        accuracy_retrieval=proportion(int(rows["rk"].sum() + rows["fk"].sum()), retrievals)
        if retrievals
        else None,
        accuracy_retrieval_computed=proportion(side.computed[1], side.computed[0])
        if side.computed[0]
        else None,
        retrieval_left_out=dict(side.left_out),
        robustness_retrieval=robustness_retrieval,
        acc_retrieval_db=retrieval_db,
        accuracy_balanced=balanced_mean((k_g / n_g).tolist()),
        blame=side.blame,
    )


def system_figures(
    table: GroupCounts,
    sides: Mapping[tuple[str, str], SideCounts],
    llm_only: str | None = None,
) -> dict[str, SystemFigures]:
    """Every system's figures from the table, as :func:`~ragaudit.analysis.metrics.analyze`
    gives them: per variant, and across variants (a group is a gap of the retrieval
    database when it is a gap in every variant it was judged in; with ``llm_only``, the
    groups that system answers right in some variant are open domain).

    >>> table = GroupCounts.from_rows([
    ...     ("rag", "short", "g1", {"n": 2, "k": 2}), ("rag", "short", "g2", {"n": 2}),
    ...     ("rag", "long", "g1", {"n": 2, "k": 1}), ("rag", "long", "g2", {"n": 2, "k": 1})])
    >>> blame = Blame(rule="convention", counts={}, by_evidence=0, by_convention=4,
    ...               holes_answered=0)
    >>> sides = {("rag", "short"): SideCounts(blame), ("rag", "long"): SideCounts(blame)}
    >>> rag = system_figures(table, sides)["rag"]
    >>> str(rag.variants["short"].accuracy), str(rag.acc_retrieval_db)  # g2: no gap in long
    ('0.50 [0.15, 0.85]', '1.00 [0.34, 1.00]')
    """
    where = table.sides()
    open_domain: set[int] = set()
    if llm_only:
        for (system, _), rows in where.items():
            if system == llm_only:
                n, k, code = table.counts["n"][rows], table.counts["k"][rows], table.code[rows]
                open_domain |= set(code[(n > 0) & (k == n)].tolist())
    out: dict[str, SystemFigures] = {}
    for system in sorted({s for s, _ in where}):
        keys = sorted(v for s, v in where if s == system)
        figures: dict[str, VariantFigures] = {}
        codes: list[Ints] = []
        gaps: list[Ints] = []
        hole_rows: list[tuple[Ints, Ints, Ints]] = []
        for variant in keys:
            rows = where[system, variant]
            columns = {name: table.counts[name][rows] for name in COUNTS}
            if not np.any(columns["n"] > 0):
                continue  # only answers the judge failed on: no figures of its own
            figures[variant] = variant_figures(columns, sides[system, variant])
            mask = columns["n"] > 0
            codes.append(table.code[rows][mask])
            gaps.append((columns["k"][mask] == 0).astype(np.int64))
            hole_rows.append((table.code[rows][mask], columns["hk"][mask], columns["hh"][mask]))
        if not figures:
            continue
        code = np.concatenate(codes)
        gap = np.concatenate(gaps)
        unique, inverse = np.unique(code, return_inverse=True)
        seen = np.bincount(inverse, minlength=unique.size)
        gap_in = np.bincount(inverse, weights=gap, minlength=unique.size)
        always_gap = gap_in == seen
        open_groups: int | None = None
        closed_db: Proportion | None = None
        if llm_only and system != llm_only:
            closed = ~np.isin(unique, np.fromiter(open_domain, dtype=np.int64))
            open_groups = int(unique.size - closed.sum())
            closed_db = proportion(int((closed & ~always_gap).sum()), int(closed.sum()))
        retrieval_db = proportion(int(unique.size - always_gap.sum()), int(unique.size))
        if all(m.robustness_undefined == ONE_QUERY for m in figures.values()):
            retrieval_db = _undefined(retrieval_db)
        out[system] = SystemFigures(
            system=system,
            acc_retrieval_db=retrieval_db,
            knowledge_base_holes=_holes(hole_rows),
            open_domain_groups=open_groups,
            acc_retrieval_db_closed_domain=closed_db,
            variants=figures,
        )
    return out


def _holes(rows: list[tuple[Ints, Ints, Ints]]) -> Proportion | None:
    """Groups no document answers, among those whose gold ids say which do (over every
    variant): ``rows`` holds, per variant, each group's code, answers with such gold ids
    and answers of them with none."""
    code = np.concatenate([c for c, _, _ in rows])
    known = np.concatenate([k for _, k, _ in rows])
    hole = np.concatenate([h for _, _, h in rows])
    code, known, hole = code[known > 0], known[known > 0], hole[known > 0]
    if not code.size:
        return None
    unique, inverse = np.unique(code, return_inverse=True)
    holes = np.bincount(inverse, weights=hole, minlength=unique.size) > 0
    return proportion(int(holes.sum()), int(unique.size))


def _paired(
    table: GroupCounts, a: slice, b: slice, outcome: Outcome
) -> tuple[PairedCounts, Ints, Ints]:
    """The groups of sides ``a`` and ``b`` present on both, in sorted order, with their
    (correct, total) of the answers or of the retrievals; and the row of each paired
    group in the table, per side."""
    c = table.counts

    def side(rows: slice) -> tuple[Ints, Ints, Ints, Ints]:
        index = np.arange(rows.start, rows.stop, dtype=np.int64)
        if outcome == "answer":
            correct, total = c["k"][rows], c["n"][rows]
        else:
            correct, total = c["ck"][rows] + c["fk"][rows], c["cn"][rows] + c["fn"][rows]
        keep = total > 0
        return table.code[rows][keep], correct[keep], total[keep], index[keep]

    code_a, correct_a, total_a, index_a = side(a)
    code_b, correct_b, total_b, index_b = side(b)
    _, ia, ib = np.intersect1d(code_a, code_b, assume_unique=True, return_indices=True)
    groups = [table.group[i] for i in index_a[ia].tolist()]
    counts = PairedCounts(groups, correct_a[ia], total_a[ia], correct_b[ib], total_b[ib])
    return counts, index_a[ia], index_b[ib]


def group_comparisons(
    table: GroupCounts,
    seed: int = 0,
    *,
    outcomes: tuple[Outcome, ...] = ("answer",),
) -> list[Comparison]:
    """Every pair of variants within a system, and of systems within a variant, compared
    from the table, as :func:`~ragaudit.analysis.comparisons.comparisons` compares them
    from the answers (the same pairs, order, resamples and sentences).

    >>> table = GroupCounts.from_rows(
    ...     [("rag", "short", f"g{g}", {"n": 1, "k": 1}) for g in range(8)]
    ...     + [("rag", "long", f"g{g}", {"n": 1, "k": int(g < 2)}) for g in range(8)])
    >>> print(group_comparisons(table)[0].verdict)  # as comparisons() says it of the answers
    long is less accurate than short (accuracy 0.25 vs 1.00, difference -0.75 [-1.00, -0.40],
    p = 0.033, 8 groups).
    """
    where = {key: rows for key, rows in table.sides().items() if np.any(table.counts["n"][rows])}
    failed = {key for key, rows in where.items() if np.any(table.counts["errors"][rows])}
    systems = sorted({s for s, _ in where})
    variants = sorted({v for _, v in where})
    pairs = side_pairs(where)
    out: dict[Outcome, list[Comparison]] = {outcome: [] for outcome in outcomes}
    for left, right in pairs:
        if left not in where or right not in where:
            continue
        counted = {o: _paired(table, where[left], where[right], o) for o in outcomes}
        counted = {o: c for o, c in counted.items() if o == "answer" or c[0].groups}
        shared = [c[0].groups for c in counted.values()]
        items = [(o, m, c) for o, c in counted.items() for m in ("accuracy", "robustness")]
        if all(groups == shared[0] for groups in shared):
            results = compare_sets([(m, c[0]) for _, m, c in items], seed=seed)
        else:
            results = [r for _, m, c in items for r in compare_many(c[0], (m,), seed=seed)]
        for (outcome, _, (counts, rows_a, rows_b)), result in zip(items, results, strict=True):
            column = "errors" if outcome == "answer" else "ce"
            errors = [
                _errors(table, rows, column) if side in failed else Counter()
                for side, rows in ((left, rows_a), (right, rows_b))
            ]
            out[outcome].append(
                _comparison(left, right, counts, result, outcome, errors, systems, variants)
            )
    return [row for outcome in outcomes for row in out[outcome]]


def _errors(table: GroupCounts, rows: Ints, column: str) -> Counter[str]:
    """Per paired group (its rows in the table), the failed calls counted in ``column``."""
    counts = table.counts[column][rows]
    hit = np.nonzero(counts)[0]
    return Counter({table.group[int(rows[i])]: int(counts[i]) for i in hit})


def shape_ranking(
    shapes: Mapping[str, Mapping[str, Mapping[Shape, int]]],
    labels: Mapping[str, Mapping[str, Mapping[Shape, int]]],
    depth: Mapping[str, int],
    ks: Sequence[int] | None = None,
) -> dict[str, SystemRanking]:
    """The ranking metrics from the shapes of the ranked queries (system -> variant, or
    label -> shape -> queries) and each system's retrieval depth, as
    :func:`~ragaudit.analysis.retrieval_metrics.ranking_summary` gives them from the
    queries.

    >>> found = {(1, (0,)): 1, (1, (2,)): 1, (1, ()): 1}  # first, third, not found
    >>> ranking = shape_ranking({"bm25": {"short": found}}, {}, depth={"bm25": 3})
    >>> mrr = ranking["bm25"].variants["short"]["mrr"]
    >>> round(mrr.value, 3), mrr.n  # (1 + 1/3 + 0) / 3
    (0.444, 3)
    """
    out: dict[str, SystemRanking] = {}
    for system, variants in sorted(shapes.items()):  # by name, as the run's files
        deepest = depth.get(system, 0)
        if deepest == 0:
            continue
        cuts = ranking_cuts(deepest) if ks is None else ranking_cuts(deepest, ks)
        out[system] = SystemRanking(
            depth=deepest,
            variants={v: shape_scores(s, cuts) for v, s in sorted(variants.items())},
            labels={
                lab: shape_scores(s, cuts) for lab, s in sorted(labels.get(system, {}).items())
            },
        )
    return out
