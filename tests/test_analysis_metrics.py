"""The GRAMMAR metrics on small hand-made cases, and the Wilson interval."""

from __future__ import annotations

import pytest

from ragaudit.analysis import Example, analyze, group_tags, variant_metrics, wilson


def _ex(
    group: str, correct: bool, variant: str = "short", retrieval: bool | None = True, n: int = 0
) -> Example:
    return Example(f"{group}-{variant}-{n}", group, variant, correct, retrieval)


def test_tags_accuracy_robustness_and_gap_fraction() -> None:
    examples = [
        _ex("a", True, n=0),
        _ex("a", True, n=1),  # robust
        _ex("b", True, n=0),
        _ex("b", False, n=1),  # non-robust
        _ex("c", False, n=0, retrieval=False),
        _ex("c", False, n=1, retrieval=False),  # gap
    ]
    assert group_tags(examples) == {"a": "robust", "b": "non-robust", "c": "gap"}
    m = variant_metrics(examples)
    assert (m.accuracy.k, m.accuracy.n) == (3, 6)
    assert (m.robustness.k, m.robustness.n) == (3, 4)
    assert (m.gap_fraction.k, m.gap_fraction.n) == (2, 6)
    assert (m.accuracy_retrieval.k, m.accuracy_retrieval.n) == (4, 6)
    assert (m.robustness_retrieval.k, m.robustness_retrieval.n) == (4, 4)
    assert (m.acc_retrieval_db.k, m.acc_retrieval_db.n) == (2, 3)


def test_retrieval_database_gap_must_hold_in_every_variant() -> None:
    examples = [
        _ex("a", False, "short"),
        _ex("a", True, "long"),
        _ex("b", False, "short"),
        _ex("b", False, "long"),
    ]
    summary = analyze(examples).systems["system"]
    assert (summary.acc_retrieval_db.k, summary.acc_retrieval_db.n) == (1, 2)
    assert summary.variants["short"].acc_retrieval_db.k == 0


def test_without_retrieval_verdicts_retrieval_metrics_are_absent() -> None:
    m = variant_metrics([_ex("a", True, retrieval=None)])
    assert m.accuracy_retrieval is None and m.robustness_retrieval is None


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (0, 10, 0.0, 0.2775),
        (5, 10, 0.2366, 0.7634),
        (10, 10, 0.7225, 1.0),
        (50, 100, 0.4038, 0.5962),
    ],
)
def test_wilson_interval_matches_known_values(k: int, n: int, low: float, high: float) -> None:
    lo, hi = wilson(k, n)
    assert lo == pytest.approx(low, abs=1e-4) and hi == pytest.approx(high, abs=1e-4)


def test_interval_always_contains_the_estimate() -> None:
    for n in range(1, 400):
        for k in (0, 1, n // 2, n - 1, n):
            low, high = wilson(k, n)
            assert low <= k / n <= high


def _r(q: str, group: str, correct: bool, docs: tuple[str, ...], system: str = "rag") -> Example:
    return Example(q, group, "short", correct, None, system, docs)


def test_context_comparison_blames_the_right_module() -> None:
    from ragaudit.analysis.metrics import context_comparison

    examples = [
        _r("a1", "a", True, ("d1",)),
        _r("a2", "a", False, ("d1",)),  # same context as a correct answer: the LM's fault
        _r("a3", "a", False, ("d9",)),  # another context: the retriever's fault
        _r("b1", "b", False, ("d2",)),  # gap group: the retriever (or the knowledge base)
        _r("b2", "b", False, ("d2",)),
    ]
    judged = {ex.query_id: ex.retrieval_correct for ex in context_comparison(examples)}
    assert judged == {"a1": True, "a2": True, "a3": False, "b1": False, "b2": False}
    summary = analyze(examples).systems["rag"].variants["short"]
    assert (summary.accuracy_retrieval.k, summary.accuracy_retrieval.n) == (2, 5)
    assert (summary.robustness_retrieval.k, summary.robustness_retrieval.n) == (2, 3)


def test_open_domain_groups_are_flagged_and_excluded() -> None:
    examples = [
        _r("x1", "known", True, ("d",), "llm-only"),
        _r("x2", "closed", False, ("d",), "llm-only"),
        _r("r1", "known", False, ("d",)),
        _r("r2", "closed", False, ("d",)),
        _r("r3", "other", True, ("d",)),
    ]
    summary = analyze(examples, llm_only="llm-only").systems["rag"]
    assert (summary.acc_retrieval_db.k, summary.acc_retrieval_db.n) == (1, 3)
    assert summary.open_domain_groups == 1
    closed = summary.acc_retrieval_db_closed_domain
    assert (closed.k, closed.n) == (1, 2)
    llm_only = analyze(examples, llm_only="llm-only").systems["llm-only"]
    assert llm_only.acc_retrieval_db_closed_domain is None


def test_retrieval_rules() -> None:
    from ragaudit.errors import UserError
    from ragaudit.judge.retrieval import check_rule, retrieval_correct

    got, gold = ["d3", "d1", "d2"], ["d1", "d2"]
    assert retrieval_correct(got, gold, "same_set") is False
    assert retrieval_correct(got, gold, "any_hit") is True
    assert retrieval_correct(got, gold, "all_gold") is True
    assert retrieval_correct(got, gold, "recall@2") is False
    assert retrieval_correct(got, gold, "recall@3") is True
    assert retrieval_correct(got, None, "same_set") is None
    with pytest.raises(UserError, match="recall@K"):
        check_rule("recall@x")
    # No document holds the answer: nothing to retrieve, under every rule, even when the
    # system failed (it used to be a hit for all_gold and a miss for any_hit).
    for rule in ("same_set", "any_hit", "all_gold", "recall@3"):
        for retrieved in ([], got):
            assert retrieval_correct(retrieved, [], rule) is None
            assert retrieval_correct(retrieved, [], rule, failed=True) is None


def test_rules_that_cannot_fit_a_retrieval_are_warned() -> None:
    from ragaudit.judge.retrieval import RuleFit, unreachable

    top5 = ["d1", "d2", "d2", "d3", "d4"]  # chunks of one document count once
    assert unreachable("same_set", top5, ["d1"]) is not None
    assert unreachable("same_set", ["d1"], ["d1"]) is None
    assert unreachable("all_gold", ["d1"], ["d1", "d2"]) is not None
    assert unreachable("recall@1", top5, ["d1", "d2"]) is not None
    assert unreachable("recall@2", top5, ["d1", "d2"]) is None
    assert unreachable("any_hit", ["d1"], ["d1", "d2"]) is None
    fit = RuleFit("same_set")
    for gold in (["d1"], ["d1"], ["d1", "d2", "d3", "d4"], [], None):
        fit.add("top5", top5, gold)
    assert fit.warnings() == [
        "retrieval rule same_set: top5: in 2 of 3 queries more documents retrieved than the "
        "gold ids name, so retrieval could never be correct; use all_gold (every gold "
        "document retrieved) or recall@K"
    ]
    assert RuleFit("all_gold").warnings() == []


def test_retrieval_figures_count_the_queries_whose_gold_ids_name_a_document() -> None:
    """Unknown gold ids (None) and holes ([]) are left out of accuracy_retrieval, the
    ranking metrics and the context comparison alike, and counted by why."""
    from ragaudit.analysis.retrieval_metrics import ranking_summary
    from ragaudit.judge.retrieval import retrieval_correct

    def ex(qid: str, group: str, correct: bool, gold: list[str] | None) -> Example:
        retrieved = ("d1", "d2")
        return Example(
            qid, group, "short", correct, retrieval_correct(retrieved, gold), "rag",
            retrieved=retrieved, gold=tuple(gold) if gold is not None else None,
        )  # fmt: skip

    examples = [
        ex("q1", "a", True, ["d1"]),
        ex("q2", "a", False, ["d9"]),
        ex("q3", "b", True, []),  # a hole answered anyway
        ex("q4", "c", False, None),  # unknown: no context-comparison verdict either
        ex("q5", "c", True, None),
    ]
    m = analyze(examples).systems["rag"].variants["short"]
    assert (m.accuracy.k, m.accuracy.n) == (3, 5)  # the answers count them all
    assert (m.accuracy_retrieval.k, m.accuracy_retrieval.n) == (1, 2)
    assert m.retrieval_left_out == {"no document": 1, "unknown": 2}
    recall = ranking_summary(examples)["rag"].variants["short"]["recall@1"]
    assert recall.n == m.accuracy_retrieval.n and recall.value == 0.5
    assert m.model_dump(mode="json")["retrieval_left_out"] == {"no document": 1, "unknown": 2}


def _stated(
    group: str, correct: bool, retrieved: tuple[str, ...], gold: tuple[str, ...], n: int = 0
) -> Example:
    return Example(
        f"{group}-{n}",
        group,
        "short",
        correct,
        set(gold) <= set(retrieved) if gold else True,
        "s",
        retrieved,
        gold,
        gold_kind="states",
    )


def test_blame_by_evidence_when_gold_ids_say_which_documents_state_the_answer() -> None:
    from ragaudit.analysis.metrics import blame

    examples = [
        # A hole: no document states it. The wrong answer is the knowledge base's; the
        # right one is correct, answered from elsewhere (a hole answered anyway).
        _stated("hole", False, ("d1",), ()),
        _stated("hole", True, ("d1",), (), n=1),
        # A gap group of a stated fact that no wording retrieved: the retriever's.
        _stated("missed", False, ("d9",), ("d2",)),
        _stated("missed", False, ("d8",), ("d2",), n=1),
        # Retrieved, answered wrong: the language model's, even in a gap group.
        _stated("misread", False, ("d3", "d9"), ("d3",)),
        _stated("misread", False, ("d9",), ("d3",), n=1),  # this wording missed it
        _stated("fine", True, ("d4",), ("d4",)),
    ]
    got = analyze(examples).systems["s"]
    b = got.variants["short"].blame
    assert b.counts == {
        "correct": 2, "knowledge base": 1, "retriever": 3, "language model": 1, "system error": 0
    }  # fmt: skip
    assert b.counts["correct"] == got.variants["short"].accuracy.k  # the chart is the table
    assert (b.rule, b.by_evidence, b.by_convention, b.holes_answered) == ("evidence", 7, 0, 1)
    # The same groups under the convention: both gap groups would be the knowledge base's,
    # and the hole, answered once, the language model's.
    plain = [
        Example(e.query_id, e.group_id, e.variant, e.correct, e.retrieval_correct) for e in examples
    ]
    tags = group_tags(plain)
    convention = blame(plain, tags)
    assert convention.rule == "convention" and convention.counts["knowledge base"] == 4
    holes = got.knowledge_base_holes
    assert holes is not None and (holes.k, holes.n) == (1, 4)


def test_blame_of_a_failed_response_and_of_mixed_gold() -> None:
    from ragaudit.analysis.metrics import source_of

    down = Example("q", "g", "v", False, False, "s", (), ("d1",), errored=True, gold_kind="states")
    # A failed call gave no answer: a system error, not the retriever's nor (in a gap
    # group) the knowledge base's (issue 36, a notebook user's finding D11).
    assert source_of(down, "gap") == ("system error", False)
    hole = Example("q", "g", "v", False, False, "s", (), (), errored=True, gold_kind="states")
    assert source_of(hole, "gap") == ("knowledge base", True)  # a hole for every system
    entity = Example("q2", "g", "v", False, True, "s", ("d1",), ("d1",), gold_kind="entity")
    assert source_of(entity, "gap") == ("knowledge base", False)
    assert source_of(entity, "non-robust") == ("language model", False)
    unknown = Example("q3", "g", "v", False, False, "s", ("d1",), None, gold_kind="states")
    assert source_of(unknown, "non-robust") == ("retriever", False)
    m = variant_metrics([down, entity])
    assert m.blame.counts["system error"] == 1
    # Neither rule decided the failed call.
    assert m.blame.rule == "convention" and (m.blame.by_evidence, m.blame.by_convention) == (0, 1)


def test_a_system_that_retrieves_nothing_has_no_retriever_to_blame() -> None:
    """Issue 41's trial: llm-only (no retrieval, by design) had 5 wrong answers blamed on a
    retriever it does not have, and a retrieval accuracy of 0. A system that retrieved
    nothing for any question has no retrieval figures, and its wrong answers are the
    language model's; a system that retrieved nothing for one question still has a
    retriever, which missed it."""

    def answers(system: str, retrieved: list[tuple[str, ...]]) -> list[Example]:
        return [
            Example(
                f"{system}{i}", f"g{i}", "short", i == 0, system=system, gold=("d1",),
                gold_kind="states", retrieved=found, retrieval_correct="d1" in found,
            )
            for i, found in enumerate(retrieved)
        ]  # fmt: skip

    systems = analyze(
        answers("llm-only", [(), (), ()]) + answers("rag", [("d1",), (), ("d1",)])
    ).systems
    alone = systems["llm-only"].variants["short"]
    assert alone.blame is not None and alone.blame.counts["retriever"] == 0
    assert alone.blame.counts["language model"] == 2 and alone.blame.counts["correct"] == 1
    assert alone.accuracy_retrieval is None
    rag = systems["rag"].variants["short"]
    assert rag.blame is not None and rag.blame.counts["retriever"] == 1
    assert rag.accuracy_retrieval is not None and rag.accuracy_retrieval.k == 2


def test_a_system_without_retriever_gets_no_retrieval_figure_from_judge_failures() -> None:
    """The judge's failures keep their retrieval (it needs no judge), but a system that
    retrieved nothing for any question has no retriever: its answers the judge failed on
    (recorded retrieval_correct=False, as the judge records a retrieval that missed) must
    not give it a retrieval accuracy, nor a retrieval comparison, that its judged answers
    do not."""
    from ragaudit.analysis.comparisons import comparisons

    def answers(system: str, found: tuple[str, ...], start: int, end: int) -> list[Example]:
        return [
            Example(
                f"q{g}", f"g{g // 2}", "short", g % 3 != 0, system=system, gold=("d1",),
                gold_kind="states", retrieved=found, retrieval_correct="d1" in found,
            )
            for g in range(start, end)
        ]  # fmt: skip

    judged = answers("llm-only", (), 0, 16) + answers("rag", ("d1",), 0, 16)
    failed = answers("llm-only", (), 16, 20) + answers("rag", ("d1",), 16, 20)
    alone = analyze(judged, judge_failed=failed).systems["llm-only"].variants["short"]
    assert alone.accuracy_retrieval is None, alone.accuracy_retrieval
    assert alone.robustness_retrieval is None
    # Every query with gold ids is left out of the retrieval figures, and says why.
    assert alone.retrieval_left_out == {"no retrieved ids": 20}
    found = comparisons(judged, outcomes=("answer", "retrieval"), judge_failed=failed)
    retrieval = [c for c in found if c.metric.endswith("_retrieval")]
    assert not [c for c in retrieval if "llm-only" in (c.a.system, c.b.system)], [
        c.verdict for c in retrieval
    ]
    assert [c.metric for c in found] == ["accuracy", "robustness"]  # rag alone: no pair
