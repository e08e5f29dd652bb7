"""Rankings per test set and their agreement: tau-b checked against scipy, Holm against
statsmodels, and the separated pairs and flips of a constructed pair of sets."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau
from statsmodels.stats.multitest import multipletests

from ragaudit.analysis.metrics import Example
from ragaudit.analysis.ranking import (
    SetScores,
    average_ranks,
    example_score,
    holm,
    kendall_tau_b,
    rank_sets,
    set_scores,
)


@pytest.mark.parametrize("seed", range(40))
def test_tau_b_matches_scipy_with_and_without_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 25))
    # Few distinct values in some lists, so that ties in x, in y and in both occur.
    x = rng.integers(0, 1 + seed % 6 + 1, size=n).astype(float) / 7
    y = rng.normal(size=n) if seed % 3 == 0 else rng.integers(0, 4, size=n).astype(float)
    ours = kendall_tau_b(list(x), list(y))
    theirs = kendalltau(x, y, variant="b").statistic
    if np.isnan(theirs):
        assert ours is None
    else:
        assert ours == pytest.approx(theirs, abs=1e-12)


def test_tau_b_undefined_and_extremes() -> None:
    assert kendall_tau_b([0.5], [0.2]) is None
    assert kendall_tau_b([0.3, 0.3, 0.3], [0.1, 0.2, 0.3]) is None
    assert kendall_tau_b([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau_b([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    with pytest.raises(ValueError):
        kendall_tau_b([1, 2], [1])


def test_holm_matches_statsmodels() -> None:
    rng = np.random.default_rng(3)
    p = list(rng.uniform(0, 0.2, size=30))
    expected = multipletests(p, method="holm")[1]
    assert holm(p) == pytest.approx(list(expected))


def test_average_ranks_share_ties() -> None:
    assert average_ranks([0.9, 0.5, 0.9, 0.1]) == [1.5, 3.0, 1.5, 4.0]


def _examples(
    source: str, accuracy: dict[str, float], groups: int, seed: int, per_group: int = 2
) -> list[Example]:
    """Examples whose correctness makes each system's accuracy close to ``accuracy``."""
    rng = np.random.default_rng(seed)
    out = []
    for g in range(groups):
        difficulty = rng.uniform(-0.1, 0.1)
        for system, p in accuracy.items():
            for v in range(per_group):
                out.append(
                    Example(
                        query_id=f"{source}-{g}-{v}",
                        group_id=f"{source}-g{g}",
                        variant=f"v{v}",
                        correct=bool(rng.random() < min(1.0, max(0.0, p + difficulty))),
                        system=system,
                        origin=source,
                    )
                )
    return out


def test_sets_that_agree_and_a_flip() -> None:
    truth = {"a": 0.9, "b": 0.7, "c": 0.5, "d": 0.3}
    flipped = {"a": 0.9, "b": 0.3, "c": 0.5, "d": 0.7}  # b and d swap on the other set
    examples = _examples("sql", truth, 150, 0) + _examples("document", flipped, 150, 1)
    study = rank_sets(set_scores(examples, example_score("accuracy")), metric="accuracy")
    assert study.reference == "sql"
    assert [r.system for r in study.sets[0].systems] == ["a", "b", "c", "d"]
    assert [r.system for r in study.sets[1].systems] == ["a", "d", "c", "b"]
    (agreement,) = study.agreements
    # Concordant: (a,b) (a,c) (a,d) (c,b)... tau-b of [4,3,2,1] vs [4,1,2,3] is 0.0.
    assert agreement.tau_b == pytest.approx(kendalltau([4, 3, 2, 1], [4, 1, 2, 3]).statistic)
    low, high = agreement.tau_ci95 or (9, 9)
    assert low <= agreement.tau_b <= high
    assert agreement.separated == 6  # 150 groups separate every 20-point gap
    flipped_pairs = {(o.better, o.worse) for o in agreement.flips}
    assert flipped_pairs == {("b", "c"), ("b", "d"), ("c", "d")}
    assert agreement.agree.k == 3
    assert "reverses 3" in agreement.sentence
    for order in agreement.flips:
        assert order.other_difference < 0 < order.reference_difference
        assert order.reference_p < 0.05


def test_a_set_that_separates_nothing_checks_no_order() -> None:
    close = {"a": 0.6, "b": 0.58, "c": 0.62}
    examples = _examples("sql", close, 15, 0) + _examples("document", close, 15, 1)
    study = rank_sets(set_scores(examples, example_score("accuracy")), metric="accuracy")
    (agreement,) = study.agreements
    assert agreement.separated == 0
    assert agreement.agree.value is None
    assert "separates none" in agreement.sentence


def test_recall_at_k_scores_only_queries_with_gold() -> None:
    def ex(system: str, q: int, retrieved: tuple[str, ...], gold: tuple[str, ...]) -> Example:
        return Example(
            query_id=f"q{q}",
            group_id=f"g{q}",
            variant="v",
            correct=False,
            system=system,
            retrieved=retrieved,
            gold=gold,
        )

    examples = [
        ex("s", 0, ("d1", "d2"), ("d2",)),
        ex("s", 1, ("d1", "d2"), ("d3",)),
        ex("s", 2, ("d1",), ()),  # no gold document: not scored
    ]
    scores = set_scores(examples, example_score("recall@1"))["sql"]
    assert scores.values() == [0.0]
    assert set_scores(examples, example_score("recall@2"))["sql"].values() == [0.5]
    assert int(scores.den.sum()) == 2
    with pytest.raises(ValueError, match="unknown metric"):
        example_score("recall@x")


def test_unknown_reference_and_one_system() -> None:
    examples = _examples("sql", {"a": 0.5}, 10, 0) + _examples("document", {"a": 0.5}, 10, 1)
    scores = set_scores(examples, example_score("accuracy"))
    with pytest.raises(ValueError, match="no test set named"):
        rank_sets(scores, metric="accuracy", reference="human")
    study = rank_sets(scores, metric="accuracy")
    assert study.agreements[0].tau_b is None
    assert study.agreements[0].undefined == "fewer than two systems are ranked on both sets"


def test_many_pairs_get_enough_permutations_to_be_separated() -> None:
    # 12 systems (66 pairs): with 1,000 permutations, Holm could separate none of them.
    truth = {f"s{i:02d}": 0.2 + 0.06 * i for i in range(12)}
    examples = _examples("sql", truth, 200, 0) + _examples("document", truth, 200, 1)
    scores = set_scores(examples, example_score("accuracy"))
    (agreement,) = rank_sets(scores, metric="accuracy", n_boot=200).agreements
    assert agreement.pairs == 66
    assert agreement.separated >= 50  # gaps of 12 points and more on 200 groups
    assert agreement.tau_b is not None and agreement.tau_b > 0.8


# -- many systems, few groups: what the pair tests can and cannot say -----------------------


def _copies(systems: int, groups: int, better: np.ndarray, rest: np.ndarray) -> SetScores:
    """``systems`` systems on ``groups`` one-query groups: the first answers ``better``,
    every other one ``rest`` (the same verdicts)."""
    num = np.tile(rest.astype(float), (systems, 1))
    num[0] = better
    return SetScores(
        "sql",
        [f"s{i:03d}" for i in range(systems)],
        [f"g{i}" for i in range(groups)],
        num,
        np.ones((systems, groups)),
    )


def test_a_grid_past_the_permutation_ceiling_still_separates_a_clear_pair() -> None:
    """143 systems make 10,153 pairs: Holm needs p < 4.9e-6 for the first, which 200,000
    permutations cannot show (their smallest p-value times the pairs is 0.05). The exact
    or bounded sign-flip p-value can: 0.45 against 0.90 on 100 groups is separated."""
    rng = np.random.default_rng(0)
    better = rng.random(100) < 0.9
    rest = rng.random(100) < 0.45
    ref = _copies(143, 100, better, rest)
    other = SetScores("document", ref.systems, ref.groups, ref.num.copy(), ref.den.copy())
    study = rank_sets({"sql": ref, "document": other}, metric="accuracy", n_boot=100, n_perm=100)
    (agreement,) = study.agreements
    assert agreement.pairs == 10_153
    assert agreement.separated == 142  # the better system against each of the others
    assert {o.better for o in agreement.orders} == {"s000"}
    assert all(o.reference_p < 0.05 for o in agreement.orders)


def test_a_grid_that_cannot_separate_says_it_had_no_power() -> None:
    rng = np.random.default_rng(1)
    ref = _copies(143, 5, np.ones(5, bool), rng.random(5) < 0.5)
    other = SetScores("document", ref.systems, ref.groups, ref.num.copy(), ref.den.copy())
    study = rank_sets({"sql": ref, "document": other}, metric="accuracy", n_boot=100, n_perm=100)
    (agreement,) = study.agreements
    assert agreement.separated == 0
    assert agreement.smallest_p is not None and agreement.smallest_p >= 0.05 / 10_153
    assert "Holm needs a p-value below 4.9e-06" in agreement.sentence
    assert "no power to separate any pair at this size" in agreement.sentence


def test_a_tau_interval_from_mostly_tied_resamples_is_not_shown() -> None:
    """Two systems that differ on one group of four: a resample without that group ties
    them, and tau-b is undefined there (about a third of the resamples)."""
    num = np.array([[1.0, 1.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    ref = SetScores("sql", ["a", "b"], ["g0", "g1", "g2", "g3"], num, np.ones((2, 4)))
    other = SetScores("document", ["a", "b"], ["h0", "h1"], np.array([[0.0, 1.0], [1.0, 1.0]]),
                      np.ones((2, 2)))  # fmt: skip
    study = rank_sets({"sql": ref, "document": other}, metric="accuracy", n_boot=400)
    (agreement,) = study.agreements
    assert agreement.tau_b == 1.0
    assert agreement.tau_undefined_share is not None and agreement.tau_undefined_share > 0.3
    assert agreement.tau_ci95 is None
    assert "no interval: in" in agreement.sentence and "ties every system" in agreement.sentence


def test_the_tau_interval_covers_the_systems_true_agreement() -> None:
    """50 systems on 60 two-wording groups per set: noise in both rankings pulls the
    observed tau-b below the agreement of the systems' true accuracies, and the resamples
    lie lower still. The percentile interval then misses the truth almost always (and lay
    above its own estimate's reach: 0.71 [0.55, 0.65] on 150 systems); the basic interval
    reflects the shift back and covers it most of the time."""
    from ragaudit.analysis.ranking import _basic_interval, _interval, _resampled, _tau_b_rows

    rng = np.random.default_rng(0)
    systems, groups, trials = 50, 60, 40
    truth_a = np.linspace(0.3, 0.8, systems)
    truth_b = np.clip(truth_a + rng.normal(0, 0.08, systems), 0.05, 0.95)
    true_tau = kendall_tau_b(list(truth_a), list(truth_b))
    assert true_tau is not None
    basic = percentile = 0
    for _ in range(trials):
        sets = []
        for name, p in (("sql", truth_a), ("document", truth_b)):
            num = (rng.random((systems, groups, 2)) < p[:, None, None]).sum(axis=2)
            sets.append(
                SetScores(
                    name, [f"s{i}" for i in range(systems)], [f"g{j}" for j in range(groups)],
                    num.astype(float), np.full((systems, groups), 2.0),
                )
            )  # fmt: skip
        tau = kendall_tau_b(sets[0].values(), sets[1].values())
        assert tau is not None
        taus = _tau_b_rows(_resampled(sets[0], 300, rng), _resampled(sets[1], 300, rng))
        low, high = _basic_interval(tau, taus) or (9.0, 9.0)
        basic += low <= true_tau <= high
        low, high = _interval(taus) or (9.0, 9.0)
        percentile += low <= true_tau <= high
    assert basic / trials >= 0.75, basic
    assert percentile / trials <= 0.2, percentile


def test_a_system_right_or_wrong_everywhere_on_a_small_set_has_no_point_interval() -> None:
    """Every resample of five groups gives 0 (or 1): the bootstrap interval would be the
    point [0, 0]; the interval is Wilson's over the five groups scored instead, which
    covers what five groups cannot rule out, and a system in between keeps its
    bootstrap interval."""
    from ragaudit.analysis.metrics import wilson

    num = np.array([[0.0] * 5, [1.0] * 5, [1.0, 0.0, 1.0, 0.0, 1.0]])
    scores = SetScores("imported", ["none", "all", "some"], [f"g{i}" for i in range(5)],
                       num, np.ones((3, 5)))  # fmt: skip
    study = rank_sets({"imported": scores}, metric="accuracy", n_boot=200, n_perm=100)
    (ranking,) = study.sets
    by = {r.system: r for r in ranking.systems}
    assert by["none"].ci95 == pytest.approx(wilson(0, 5)) and by["none"].ci95[1] > 0.4
    assert by["all"].ci95 == pytest.approx(wilson(5, 5)) and by["all"].ci95[0] < 0.6
    low, high = by["some"].ci95
    assert low < 0.6 < high and (low, high) != pytest.approx(wilson(3, 5))
