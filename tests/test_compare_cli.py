"""ragaudit compare and ragaudit gate as a user runs them: a grid of retrieval-only systems
run over two test sets (no LLM), ranked and compared; a candidate run gated against a
baseline, with markdown and JUnit XML; a question set imported beside them."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from ragaudit.records.io import write_jsonl_atomic
from ragaudit.records.models import QueryRecord, Reference
from ragaudit.steps.gate import assert_no_regression
from tests.support.cli import ragaudit
from tests.support.judged_runs import judged_run, verdicts

TOPICS = [
    ("harbour", "ferry tides pier cargo cranes"),
    ("orchard", "apples pears blossom cider ladders"),
    ("foundry", "molten iron moulds furnace slag"),
    ("library", "books shelves catalogue readers silence"),
    ("glacier", "ice crevasse moraine melt snow"),
    ("bakery", "ovens flour loaves yeast crust"),
    ("observatory", "telescope stars dome lens night"),
    ("vineyard", "grapes barrels harvest cellar wine"),
]


def _corpus(tmp_path: Path) -> Path:
    path = tmp_path / "docs.jsonl"
    rows = [
        {"id": name, "text": f"The {name} report. It mentions {words}. " * 3}
        for name, words in TOPICS
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _dataset(run: Path) -> None:
    """SQL-like questions name a topic's words plainly; the document-like ones use one
    word each, so that keyword and BM25 retrieval fare differently on the two sets."""
    records = []
    for i, (name, words) in enumerate(TOPICS):
        first, second, *_ = words.split()
        for v, text in enumerate((f"What about the {first} and {second}?", f"{name} {first}")):
            records.append(
                QueryRecord(
                    query_id=f"s{i}-{v}",
                    group_id=f"s{i}",
                    variant=("short", "long")[v],
                    query=text,
                    reference=Reference.from_values([name]),
                    gold_ids=[name],
                    gold_kind="states",
                    source="sql",
                )
            )
        records.append(
            QueryRecord(
                query_id=f"d{i}",
                group_id=f"d{i}",
                variant="generated",
                query=f"Which report is about {words.split()[-1]}?",
                reference=Reference.from_values([name]),
                gold_ids=[name],
                gold_kind="states",
                source="document",
            )
        )
    run.mkdir(parents=True, exist_ok=True)
    write_jsonl_atomic(run / "dataset.jsonl", records)


CONFIG = """\
run: {{name: study}}
corpus: {{path: {corpus}}}
systems:
  - name: ret
    generator: none
    grid:
      retriever: [keyword, bm25]
      k: [1, 3]
"""


def test_a_retrieval_grid_runs_without_an_llm_and_is_compared(tmp_path: Path) -> None:
    (tmp_path / "ragaudit.yaml").write_text(CONFIG.format(corpus=_corpus(tmp_path)))
    _dataset(tmp_path / "runs" / "study")
    # No LLM is configured or reachable: retrieval-only systems never ask one.
    result = ragaudit("run", cwd=tmp_path, env={"RAGAUDIT_LLM_BASE_URL": "http://127.0.0.1:9"})
    assert result.returncode == 0, result.stderr
    responses = sorted(p.name for p in (tmp_path / "runs/study/responses").iterdir())
    assert responses == [
        "ret-bm25-k1.jsonl", "ret-bm25-k3.jsonl", "ret-keyword-k1.jsonl", "ret-keyword-k3.jsonl"
    ]  # fmt: skip
    result = ragaudit("compare", "--metric", "recall@1", "--resamples", "200", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    study = json.loads((tmp_path / "runs/study/compare.json").read_text())["studies"][0]
    assert (study["metric"], study["by"], study["reference"]) == ("recall@1", "source", "sql")
    names = [s["name"] for s in study["sets"]]
    assert names == ["sql", "document"]
    sql = {r["system"]: r for r in study["sets"][0]["systems"]}
    # k does not change Recall@1: the k=1 and k=3 systems of a retriever tie.
    assert sql["ret-bm25-k1"]["value"] == sql["ret-bm25-k3"]["value"]
    assert sql["ret-bm25-k1"]["rank"] == sql["ret-bm25-k3"]["rank"]
    (agreement,) = study["agreements"]
    assert agreement["pairs"] == 6
    assert "Kendall's tau-b" in agreement["sentence"]
    assert "Kendall's tau-b" in result.stdout
    markdown = (tmp_path / "runs/study/compare.md").read_text()
    assert "| ret-bm25-k1 |" in markdown
    # A second metric is kept beside the first; the same metric again replaces it.
    for metric in ("recall@3", "recall@1"):
        result = ragaudit("compare", "--metric", metric, "--resamples", "200", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    studies = json.loads((tmp_path / "runs/study/compare.json").read_text())["studies"]
    assert [s["metric"] for s in studies] == ["recall@3", "recall@1"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--metric", "recall@x"], "unknown metric 'recall@x'"),
        (
            ["--metric", "recall@1", "--system", "nope-*"],
            "--system nope-*: no system of the run matches it",
        ),
        (["--metric", "recall@1", "--reference", "human"], "no test set named 'human'"),
        (["--metric", "accuracy"], "accuracy needs them (run ragaudit judge), or rank retrieval"),
        (["--metric", "recall@1", "--by", "label"], "compare needs two test sets"),
    ],
)
def test_compare_mistakes_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "ragaudit.yaml").write_text(CONFIG.format(corpus=_corpus(tmp_path)))
    _dataset(tmp_path / "runs" / "study")
    assert ragaudit("run", "--system", "ret-bm25-k1", cwd=tmp_path).returncode == 0
    result = ragaudit("compare", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


# -- the gate ------------------------------------------------------------------------------


def _judged_run(root: Path, correct: np.ndarray, *, system: str = "rag") -> Path:
    return judged_run(root, {system: correct}, answer="{g}")


_verdicts = verdicts


def test_gate_fails_a_drop_and_passes_a_rerun(tmp_path: Path) -> None:
    baseline = _judged_run(tmp_path / "base", _verdicts(1, 0.7))
    rerun = _judged_run(tmp_path / "rerun", _verdicts(1, 0.7))  # the same verdicts
    worse = _judged_run(tmp_path / "worse", _verdicts(1, 0.5))
    junit, md = tmp_path / "gate.xml", tmp_path / "gate.md"
    result = ragaudit(
        "gate", str(baseline), str(worse), "--junit", str(junit), "--markdown", str(md),
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "ragaudit gate: FAIL" in result.stdout
    assert "REGRESSION" in md.read_text()
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("1", "1")
    case = suite.find("testcase")
    assert case is not None and case.get("classname") == "ragaudit.gate"
    assert case.get("name") == "rag accuracy"
    assert case.find("failure") is not None
    # The same drop, tolerated by a margin wider than it: no failure.
    result = ragaudit("gate", str(baseline), str(worse), "--margin", "0.5", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    result = ragaudit("gate", str(baseline), str(rerun), "--junit", str(junit), cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert "ragaudit gate: PASS" in result.stdout
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0"
    # From pytest: the same verdicts, as an assertion.
    assert assert_no_regression(baseline, rerun).passed
    with pytest.raises(AssertionError, match="REGRESSION"):
        assert_no_regression(baseline, worse)


def test_gate_refuses_to_pass_when_nothing_is_compared(tmp_path: Path) -> None:
    baseline = _judged_run(tmp_path / "base", _verdicts(1, 0.7))
    other = _judged_run(tmp_path / "other", _verdicts(1, 0.7), system="another")
    result = ragaudit("gate", str(baseline), str(other), cwd=tmp_path)
    assert result.returncode == 1  # the baseline's system is missing: a failure
    assert "MISSING" in result.stdout and "only the candidate has another" in result.stdout
    (tmp_path / "empty").mkdir()
    result = ragaudit("gate", str(baseline), str(tmp_path / "empty"), cwd=tmp_path)
    assert result.returncode == 2
    assert "empty" in result.stderr and "Traceback" not in result.stderr
    result = ragaudit("gate", str(baseline), str(tmp_path / "missing"), cwd=tmp_path)
    assert result.returncode == 2 and "no such run directory" in result.stderr


# -- an imported question set -----------------------------------------------------------------


def test_an_imported_set_is_kept_beside_the_other_parts(tmp_path: Path) -> None:
    (tmp_path / "ragaudit.yaml").write_text("run: {name: imp}\n")
    run = tmp_path / "runs" / "imp"
    _dataset(run)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        json.dumps({"id": "h1", "context": "Ferries cross at dawn.", "question": "When?",
                    "answer": "at dawn"}) + "\n"
        + json.dumps({"id": "h2", "context": "Ferries cross at dawn.", "question": "Who?",
                      "answerable": False}) + "\n"
    )  # fmt: skip
    with pairs.open("a") as handle:  # answerable, no answer: cannot be judged
        handle.write(json.dumps({"id": "h3", "context": "Ferries.", "question": "What?"}) + "\n")
    for _ in range(2):  # importing again replaces the imported part only
        result = ragaudit("generate", "--import", str(pairs), cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in (run / "dataset.jsonl").read_text().splitlines()]
    imported = [r for r in rows if r["source"] == "imported"]
    assert len(rows) == 3 * len(TOPICS) + 2 and len(imported) == 2
    answerable, unanswerable = imported
    assert answerable["reference"]["values"] == ["at dawn"]
    assert answerable["gold_ids"] == [
        json.loads((run / "imported/contexts.jsonl").read_text().splitlines()[0])["id"]
    ]
    assert unanswerable["gold_ids"] == [] and unanswerable["reference"]["values"] == []
    assert "corpus.path is not set" in result.stderr
    assert "1 questions have no answer and are not marked unanswerable" in result.stderr
    pairs.write_text(json.dumps({"id": "h3", "context": "Ferries.", "question": "What?"}) + "\n")
    result = ragaudit("generate", "--import", str(pairs), cwd=tmp_path)
    assert result.returncode == 2 and "none can be judged" in result.stderr
    assert len((run / "dataset.jsonl").read_text().splitlines()) == len(rows)  # untouched


def test_gate_leaves_out_groups_one_run_did_not_score(tmp_path: Path) -> None:
    from ragaudit.steps.gate import gate_runs

    verdicts = _verdicts(3, 0.7)
    baseline = _judged_run(tmp_path / "base", verdicts)
    fewer = _judged_run(tmp_path / "fewer", verdicts[:90])  # 10 groups never asked
    report = gate_runs(baseline, fewer)
    (check,) = report.checks
    assert check.n_groups == 90
    assert check.difference == pytest.approx(0.0)  # the same verdicts on the groups paired
    assert check.status == "pass"
    assert any("no score for 40 of the 400 queries" in note for note in report.notes)
    assert check.coverage == "90 / 100 (360 / 400)"
