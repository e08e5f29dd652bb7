"""Importing a question set again (issue 37, second hostile pass, findings 4 and 10): a
question whose context changed is a new query, asked and judged afresh; one that did not
change keeps its query id, its records and its label, so the same file changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import ragaudit
from tests.support.hostile_files import (
    BERLIN,
    CONFIG,
    PARIS,
    RUN,
    imported,
    rows,
    squad,
    write_jsonl,
)


def test_reimporting_with_an_edited_context_asks_the_question_again(tmp_path: Path) -> None:
    (tmp_path / "ragaudit.yaml").write_text(CONFIG)
    pairs = write_jsonl(tmp_path / "pairs.jsonl", [PARIS, BERLIN])
    assert ragaudit("generate", "--import", str(pairs), cwd=tmp_path).returncode == 0
    assert ragaudit("run", cwd=tmp_path).returncode == 0
    assert ragaudit("judge", "--no-llm", cwd=tmp_path).returncode == 0
    old = {g: r["query_id"] for g, r in imported(tmp_path).items()}
    # Question and answer unchanged: only the context's text (and so its id) changes.
    edited = {**PARIS, "context": "Paris is the capital of France, on the Seine."}
    write_jsonl(pairs, [edited, BERLIN])
    result = ragaudit("generate", "--import", str(pairs), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "1 questions changed or left the set" in result.stderr
    new = {g: r["query_id"] for g, r in imported(tmp_path).items()}
    assert new["imp-q1"] != old["imp-q1"] and new["imp-q2"] == old["imp-q2"]
    for folder in ("responses", "judgements"):
        ids = [r["query_id"] for r in rows(tmp_path / RUN / folder / "ret.jsonl")]
        assert ids == [old["imp-q2"]]  # the old response named a document that is gone
    result = ragaudit("run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "│ ret    │         1 │            1 │" in result.stdout  # asked now, already done
    assert ragaudit("judge", "--no-llm", cwd=tmp_path).returncode == 0
    result = ragaudit("analyze", "--outcome", "retrieval", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    judged = rows(tmp_path / RUN / "judgements" / "ret.jsonl")
    assert [j["retrieval_correct"] for j in judged] == [True, True]


@pytest.mark.parametrize("form", ["squad", "jsonl with context_id"])
def test_an_edited_context_under_the_same_context_id_is_a_new_query(
    tmp_path: Path, form: str
) -> None:
    # Here the context id stays (a SQuAD title, a given context_id): the text decides.
    (tmp_path / "ragaudit.yaml").write_text("run: {name: default}\n")

    def write(context: str) -> Path:
        if form == "squad":
            path = tmp_path / "set.json"
            path.write_text(json.dumps(squad(context)))
            return path
        return write_jsonl(
            tmp_path / "set.jsonl", [{**PARIS, "context": context, "context_id": "c1"}]
        )

    path = write("Paris is the capital of France.")
    assert ragaudit("generate", "--import", str(path), cwd=tmp_path).returncode == 0
    (before,) = imported(tmp_path).values()
    write("Paris is the capital of France, on the Seine.")
    assert ragaudit("generate", "--import", str(path), cwd=tmp_path).returncode == 0
    (after,) = imported(tmp_path).values()
    assert after["gold_ids"] == before["gold_ids"]
    assert after["query_id"] != before["query_id"]


# -- finding 10: importing the same file again keeps the labels ------------------------------


def test_reimporting_the_same_file_keeps_the_labels_and_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "ragaudit.yaml").write_text(CONFIG)
    pairs = write_jsonl(tmp_path / "pairs.jsonl", [PARIS, BERLIN])
    assert ragaudit("generate", "--import", str(pairs), cwd=tmp_path).returncode == 0
    ids = {g: r["query_id"] for g, r in imported(tmp_path).items()}
    human = write_jsonl(
        tmp_path / "ann.jsonl",
        [
            {"id": ids["imp-q1"], "label": "fact_single"},
            {"id": ids["imp-q2"], "label": "summary"},
        ],
    )
    result = ragaudit("label", "--no-llm", "--human", str(human), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    labelled = (tmp_path / RUN / "dataset.jsonl").read_bytes()
    assert {g: r["label"] for g, r in imported(tmp_path).items()} == {
        "imp-q1": "fact_single",
        "imp-q2": "summary",
    }
    result = ragaudit("generate", "--import", str(pairs), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / RUN / "dataset.jsonl").read_bytes() == labelled  # nothing changed
    # An edited question is a new query: its label (of the old pair) does not follow it.
    write_jsonl(pairs, [{**PARIS, "question": "Which city is the capital of France?"}, BERLIN])
    assert ragaudit("generate", "--import", str(pairs), cwd=tmp_path).returncode == 0
    assert {g: r["label"] for g, r in imported(tmp_path).items()} == {
        "imp-q1": None,
        "imp-q2": "summary",
    }


def test_an_interrupted_import_is_refused_until_it_is_run_again(tmp_path: Path) -> None:
    """Import replaces two files, the dataset and its contexts: killed between them, the
    run asked the old questions of the new contexts without a word (fifth hostile pass).
    A marker stands while the two are replaced; every step but generate refuses the run
    while it is there."""
    (tmp_path / "ragaudit.yaml").write_text(CONFIG)
    pairs = write_jsonl(tmp_path / "pairs.jsonl", [PARIS, BERLIN])
    assert ragaudit("generate", "--import", str(pairs), cwd=tmp_path).returncode == 0
    marker = tmp_path / RUN / "imported" / "INCOMPLETE"
    assert not marker.exists()  # a finished import leaves none
    marker.write_text("an import was interrupted: run it again\n")  # as a kill leaves it
    result = ragaudit("run", cwd=tmp_path)
    assert result.returncode == 2
    assert "an import into this run was interrupted" in result.stderr
    assert not list((tmp_path / RUN).glob("responses/*.jsonl"))  # nothing asked
    assert ragaudit("generate", "--import", str(pairs), cwd=tmp_path).returncode == 0
    assert not marker.exists()
    assert ragaudit("run", cwd=tmp_path).returncode == 0
