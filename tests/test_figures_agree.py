"""One figure, one number (issue 41, "Figures that mislead"): the blame's "correct" is the
accuracy of the metrics table on every run, unanswerable questions included; robustness
that cannot be measured is undefined, said once, not a silent 1.00; a retrieval figure is
the same over the same queries in analyze and compare; the document half's cost per pair
is one figure under one label everywhere."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest

from ragaudit.judge.cascade import judge_many, judge_one
from ragaudit.records.io import write_jsonl_atomic
from ragaudit.records.models import QueryRecord, Reference, ResponseRecord, RetrievedItem
from ragaudit.report.build import collect
from ragaudit.report.summary_file import read_summary
from ragaudit.rundir import RunDir
from ragaudit.steps.analyze import run_analysis
from ragaudit.store.answers import read_answer_table

# -- 1. unanswerable questions in the blame ------------------------------------------------

NO_ANSWER = Reference(values=[], display="(no answer)")


def _document_query(
    group: str, variant: str, reference: Reference, gold: list[str], label: str
) -> QueryRecord:
    return QueryRecord(
        query_id=f"{group}-{variant}",
        group_id=group,
        variant=variant,
        query=f"What does {group} say ({variant})?",
        reference=reference,
        gold_ids=gold,
        gold_kind="states",
        label=label,
        source="document",
    )


def _dataset() -> list[QueryRecord]:
    """Two answerable pairs, two generated as unanswerable (as the document generator and
    an import write them: no reference value, gold ids []), and one answerable question no
    document states (a hole of the knowledge base), in two wordings each."""
    out = []
    for variant in ("generated", "short"):
        out += [
            _document_query("a", variant, Reference.from_values(["Lisbon"]), ["d1"], "fact_single"),
            _document_query("b", variant, Reference.from_values(["42"]), ["d2"], "fact_single"),
            _document_query("u1", variant, NO_ANSWER, [], "unanswerable"),
            _document_query("u2", variant, NO_ANSWER, [], "unanswerable"),
            _document_query("hole", variant, Reference.from_values(["Paris"]), [], "fact_single"),
        ]
    return out


# What each system answers to each group: "careful" refuses the unanswerable questions
# and answers the hole from elsewhere; "bold" answers the unanswerable ones anyway
# ("100", "4": the hallucinations of the issue) and misses the hole.
ANSWERS = {
    "careful": {
        "a": ("Lisbon.", ["d1"]),
        "b": ("41", ["d2"]),
        "u1": ("I don't know.", ["d3"]),
        "u2": ("I don't know.", ["d4"]),
        "hole": ("Paris", ["d5"]),
    },
    "bold": {
        "a": ("Lisbon", ["d9"]),
        "b": ("I don't know.", ["d8"]),
        "u1": ("100", ["d3"]),
        "u2": ("4", ["d4"]),
        "hole": ("Rome", ["d5"]),
    },
}


def _unanswerable_run(root: Path) -> RunDir:
    """The run written as generate, run and judge (the deterministic judge; no LLM) write
    it."""
    run = RunDir(root)
    queries = _dataset()
    write_jsonl_atomic(run.dataset, queries)
    for system, answers in ANSWERS.items():
        responses = [
            ResponseRecord(
                query_id=q.query_id,
                system=system,
                response=answers[q.group_id][0],
                retrieved=[RetrievedItem(id=i) for i in answers[q.group_id][1]],
            )
            for q in queries
        ]
        judgements = asyncio.run(judge_many(zip(queries, responses, strict=True), None))
        write_jsonl_atomic(run.responses(system), responses)
        write_jsonl_atomic(run.judgements(system), judgements)
    return run


def test_the_blame_counts_as_correct_what_the_accuracy_counts_unanswerable_pairs_included(
    tmp_path: Path,
) -> None:
    run = _unanswerable_run(tmp_path)
    summary = run_analysis(run).summary
    written = read_summary(run.summary)
    assert written == summary
    table = read_answer_table(run).to_pandas()
    report = collect(run)
    charted = {row.label: row.counts for row in report.blame}
    for name, system in written.systems.items():
        for variant, figures in system.variants.items():
            blame = figures.blame
            assert blame is not None
            accuracy = figures.accuracy
            assert accuracy.value is not None
            # The chart, the metrics table and the answers table say the same.
            assert blame.counts["correct"] == accuracy.k == round(accuracy.value * accuracy.n)
            assert charted[f"{name} / {variant}"][0] == accuracy.k
            rows = table[(table["system"] == name) & (table["variant"] == variant)]
            assert Counter(rows["where"]) == {k: n for k, n in blame.counts.items() if n}
    where = {(r.system, r.group_id, r.variant): r.where for r in table.itertuples()}
    for variant in ("generated", "short"):
        for group in ("u1", "u2"):
            # A refusal to a question meant to be unanswerable is right; an answer to it
            # is the language model's error, not a hole of the knowledge base.
            assert where["careful", group, variant] == "correct"
            assert where["bold", group, variant] == "language model"
        # An answerable question no document states: a hole, answered anyway or not.
        assert where["careful", "hole", variant] == "correct"
        assert where["bold", "hole", variant] == "knowledge base"
    careful = written.systems["careful"].variants["generated"].blame
    bold = written.systems["bold"].variants["generated"].blame
    assert careful is not None and bold is not None
    assert careful.holes_answered == 1 and bold.holes_answered == 0
    assert bold.counts["knowledge base"] == 1 and bold.counts["language model"] == 2
    # The holes are the answerable questions no document states: 1 of a, b and hole.
    holes = written.systems["careful"].knowledge_base_holes
    assert holes is not None and (holes.k, holes.n) == (1, 3)
    drilled = [json.loads(line) for line in run.drilldown.read_text().splitlines()]
    assert {(r["system"], r["query_id"]): r["source"] for r in drilled} == {
        (r.system, r.query_id): r.where for r in table.itertuples()
    }


def test_a_closed_domain_judge_credits_a_refusal_to_an_unanswerable_question() -> None:
    """Closed domain withholds credit from an answer no document could give (a hole
    answered from elsewhere), never from "I don't know" to a question with no answer."""
    unanswerable = _document_query("u1", "short", NO_ANSWER, [], "unanswerable")
    hole = _document_query("hole", "short", Reference.from_values(["Paris"]), [], "fact_single")

    def judged(query: QueryRecord, answer: str) -> bool | None:
        response = ResponseRecord(query_id=query.query_id, system="s", response=answer)
        return asyncio.run(judge_one(query, response, None, closed_domain=True)).correct

    assert judged(unanswerable, "I don't know.") is True
    assert judged(hole, "Paris") is False


@pytest.mark.parametrize("answerable", [True, False])
def test_a_neutral_row_says_whether_its_question_has_an_answer(
    tmp_path: Path, answerable: bool
) -> None:
    """Results of a system ragaudit did not run carry ``answerable``: false makes a wrong
    answer the language model's, not the knowledge base's."""
    row = {
        "query_id": "q1",
        "group_id": "g1",
        "variant": "short",
        "correct": False,
        "gold_ids": [],
        "gold_kind": "states",
        "retrieved_ids": ["d1"],
        "answerable": answerable,
    }
    path = tmp_path / "neutral.jsonl"
    path.write_text(json.dumps(row) + "\n")
    summary = run_analysis(RunDir(tmp_path / "out"), neutral=[path], system="s").summary
    blame = summary.systems["s"].variants["short"].blame
    assert blame is not None
    assert blame.counts["knowledge base" if answerable else "language model"] == 1
