"""One figure, one number (issue 41, "Figures that mislead"): the blame's "correct" is the
accuracy of the metrics table on every run, unanswerable questions included; robustness
that cannot be measured is undefined, said once, not a silent 1.00; a retrieval figure is
the same over the same queries in analyze and compare; the document half's cost per pair
is one figure under one label everywhere."""

from __future__ import annotations

import asyncio
import io
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from ragaudit.errors import UserError
from ragaudit.judge.cascade import judge_many, judge_one
from ragaudit.records.io import write_jsonl_atomic
from ragaudit.records.models import QueryRecord, Reference, ResponseRecord, RetrievedItem
from ragaudit.report.build import collect
from ragaudit.report.summary_file import read_summary
from ragaudit.rundir import RunDir
from ragaudit.steps.analyze import run_analysis
from ragaudit.steps.compare import run_compare
from ragaudit.steps.gate import gate_runs
from ragaudit.store.answers import read_answer_table
from tests.support.cli import ragaudit
from tests.support.judged_runs import judged_run

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


def _unanswerable_run(root: Path, prefix: str = "") -> RunDir:
    """The run written as generate, run and judge (the deterministic judge; no LLM) write
    it (``prefix``: put before each system's name)."""
    run = RunDir(root)
    queries = _dataset()
    write_jsonl_atomic(run.dataset, queries)
    for name, answers in ANSWERS.items():
        system = prefix + name
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


# -- 2. robustness where it cannot be measured ---------------------------------------------


def test_r_is_undefined_where_every_group_has_one_query_and_said_once(tmp_path: Path) -> None:
    """A document set has one query per group in each variant: no group can be non-robust,
    so R would be 1.00 by construction. It is null with its reason, said once, shown as
    undefined in summary.md, the terminal and the report, and never compared."""
    run = _unanswerable_run(tmp_path / "runs" / "default")
    result = ragaudit("analyze", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = read_summary(run.summary)
    for system in summary.systems.values():
        for figures in system.variants.values():
            assert figures.robustness.value is None
            assert figures.robustness_undefined == "one query per group"
            # A group of one query is a gap exactly when its answer is wrong: lambda,
            # Acc_retrieval_db and retrieval R go undefined with R, not 1 - accuracy.
            assert figures.gap_fraction.value is None and figures.acc_retrieval_db.value is None
            assert figures.robustness_retrieval is None or (
                figures.robustness_retrieval.value is None
            )
            assert figures.accuracy.value is not None
    for system in summary.systems.values():  # across variants too: one query a group
        assert system.acc_retrieval_db.value is None
    notes = [w for w in summary.warnings if "R is undefined" in w]
    assert len(notes) == 1 and "one query" in notes[0]
    warned = [line for line in result.stderr.splitlines() if "R is undefined" in line]
    assert len(warned) == 1
    for c in [*summary.comparisons, *summary.label_comparisons]:
        if c.metric.startswith("robustness"):
            assert c.p_value is None and c.difference is None and c.undefined
    # Each reason a comparison could not be made is said on one line, not one per pair.
    said = [line for line in result.stdout.splitlines() if "not made" in line]
    reasons = [line.rsplit(": ", 1)[-1] for line in said]
    assert said and len(reasons) == len(set(reasons))
    lines = result.stdout.splitlines()
    single = [line for line in lines if "two queries" in line]
    assert len(single) == 1 and "not made" in single[0]  # not one "no comparison" per pair
    rows = [line.strip("│ ") for line in lines if line.strip("│ ").startswith("robustness ")]
    assert len(rows) == 2  # one per system's table
    assert all("undefined (one query per group)" in row and "1.00" not in row for row in rows)
    titles = [line for line in lines if "Acc_retrieval_db across variants" in line]
    assert len(titles) == 2 and all("undefined (one query per group)" in t for t in titles)
    for name in ("gap_fraction", "acc_retrieval_db"):
        rows = [line.strip("│ ") for line in lines if line.strip("│ ").startswith(f"{name} ")]
        assert len(rows) == 2 and all("undefined (one query per group)" in r for r in rows)
    markdown = run.summary_md.read_text()
    assert "undefined (one query per group)" in markdown and "R is undefined" in markdown
    report = collect(run)
    assert all(
        row.cells[1] == "undefined (one query per group)" for t in report.tables for row in t.rows
    )
    # The drill-down names a wrong answer as such, not as a group the knowledge base lacks.
    tags = {section.tag for section in report.drilldown}
    assert tags and not tags & {"gap"}
    assert all(t.startswith("wrong-answer") for t in tags - {"non-robust"})


def test_the_terminal_tables_cut_no_name_at_80_columns(tmp_path: Path) -> None:
    """Two systems whose names differ at their end ("...-careful", "...-bold") and the
    variants' names stay whole on an 80-column terminal: long names fold, never end in an
    ellipsis."""
    from rich.console import Console

    from ragaudit.report.terminal import blame_table, system_tables

    run = _unanswerable_run(tmp_path / "runs" / "default", prefix="bm25-top3-dense-")
    result = ragaudit("analyze", cwd=tmp_path, env={"COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    assert "Where the answers go wrong" in result.stdout
    assert "…" not in result.stdout
    summary = read_summary(run.summary)
    for table in [*system_tables(summary), blame_table(summary)]:
        console = Console(width=80, record=True, file=io.StringIO())
        console.print(table)
        lines = console.export_text().splitlines()
        assert max(len(line) for line in lines) <= 80 and "…" not in "".join(lines)


def test_the_gate_does_not_check_r_where_every_group_has_one_query(tmp_path: Path) -> None:
    """One query per group on both runs: R is 1.00 by construction, so the gate's check
    of it is untestable, with why, never a pass (nor a regression)."""
    rng = np.random.default_rng(0)
    base = judged_run(tmp_path / "base", {"rag": rng.random((40, 1)) < 0.8})
    cand = judged_run(tmp_path / "cand", {"rag": rng.random((40, 1)) < 0.5})
    (check,) = gate_runs(base, cand, metrics=["robustness"]).checks
    assert check.status == "untestable"
    assert check.reason is not None and "one query" in check.reason
    (accuracy,) = gate_runs(base, cand, metrics=["accuracy"]).checks
    assert accuracy.status != "untestable"  # the same runs stay testable on accuracy


def test_compare_does_not_rank_on_r_where_every_group_has_one_query(tmp_path: Path) -> None:
    run = _unanswerable_run(tmp_path)
    with pytest.raises(UserError, match="one query per group"):
        run_compare(run, metric="robustness", by="variant")


# -- 3. one definition per figure ------------------------------------------------------------


def test_a_judge_failure_leaves_the_retrieval_figures_as_compare_computes_them(
    tmp_path: Path,
) -> None:
    """Whether the retriever found the gold document does not depend on the judge: an
    answer the judge failed on still counts in analyze's Recall@k and retrieval accuracy,
    as in compare's, which reads the responses alone."""
    run = RunDir(tmp_path)
    queries = [
        QueryRecord(
            query_id=f"q{i}-{variant}",
            group_id=f"g{i}",
            variant=variant,
            query=f"Which city is number {i} ({variant})?",
            reference=Reference.from_values([f"City {i}"]),
            gold_ids=[f"d{i}"],
            gold_kind="states",
            source="document",
        )
        for i in range(9)
        for variant in ("generated", "short")
    ]
    write_jsonl_atomic(run.dataset, queries)
    for system, hits in (("dense", 7), ("bm25", 4)):
        # The first ``hits`` groups find their document at rank 2, the rest miss it.
        responses = [
            ResponseRecord(
                query_id=q.query_id,
                system=system,
                response=q.reference.display if int(q.group_id[1:]) % 2 else "I don't know.",
                retrieved=[
                    RetrievedItem(id=i)
                    for i in (
                        "dx",
                        q.group_id.replace("g", "d") if int(q.group_id[1:]) < hits else "dy",
                        "dz",
                    )
                ],
            )
            for q in queries
        ]
        judged = asyncio.run(judge_many(zip(queries, responses, strict=True), None))
        # The LLM judge failed on three answers: no verdict, the retrieval's kept.
        judgements = [
            j.model_copy(update={"correct": None, "method": "judge-failed"})
            if j.query_id in ("q0-generated", "q8-generated", "q3-short")
            else j
            for j in judged
        ]
        write_jsonl_atomic(run.responses(system), responses)
        write_jsonl_atomic(run.judgements(system), judgements)
    summary = run_analysis(run).summary
    assert summary.judge_failed == {"dense": 3, "bm25": 3}
    for metric in ("recall@3", "mrr", "accuracy_retrieval"):
        study, _ = run_compare(run, metric=metric, by="variant")
        for ranking in study.sets:
            for ranked in ranking.systems:
                figures = summary.systems[ranked.system].variants[ranking.name]
                if metric == "accuracy_retrieval":
                    analyzed = figures.accuracy_retrieval
                    assert analyzed is not None
                    value, n = analyzed.value, analyzed.n
                else:
                    mean = summary.retrieval_ranking[ranked.system].variants[ranking.name][metric]
                    value, n = mean.value, mean.n
                assert n == ranked.queries == 9  # every response, judged or not
                assert value == pytest.approx(ranked.value)
    dense = summary.retrieval_ranking["dense"].variants["generated"]["recall@3"]
    assert dense.value == pytest.approx(7 / 9)
