"""ragaudit analyze on the neutral results of a system ragaudit did not run."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import ragaudit

FIELDS = (
    "accuracy",
    "robustness",
    "accuracy_retrieval",
    "robustness_retrieval",
    "acc_retrieval_db",
    "gap_fraction",
)


def test_analyze_neutral_files(tmp_path: Path, grammar_reference: Path) -> None:
    files = [grammar_reference / f"aurp_{v}_unbalanced.jsonl" for v in ("short", "long")]
    args = [a for f in files for a in ("--neutral", str(f))]
    result = ragaudit("analyze", *args, "--system", "keyword-top1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "runs/default/summary.json").read_text())
    system = summary["systems"]["keyword-top1"]
    assert (system["acc_retrieval_db"]["k"], system["acc_retrieval_db"]["n"]) == (45, 157)
    short = system["variants"]["short"]
    assert short["n_queries"] == 314 and short["n_groups"] == 157
    for field in FIELDS:
        cell = short[field]
        low, high = cell["ci95"]
        assert low <= cell["value"] <= high and cell["n"] > 0
    assert round(short["robustness"]["value"], 2) == 0.95
    verdicts = [c["verdict"] for c in summary["comparisons"]]
    assert len(verdicts) == 4 and all("groups)" in v for v in verdicts)
    # The last two compare retrieval correctness, which needs no judge.
    metrics = [c["metric"] for c in summary["comparisons"]]
    assert metrics == ["accuracy", "robustness", "accuracy_retrieval", "robustness_retrieval"]
    assert all(v.startswith("retrieval: ") for v in verdicts[2:])
    assert "keyword-top1 | short | 314 | 157" in (tmp_path / "runs/default/summary.md").read_text()
    drill = (tmp_path / "runs/default/drilldown.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in drill]
    assert len(rows) == 314 + 257
    assert {r["tag"] for r in rows} == {"gap", "robust", "non-robust"}
    assert {"tag", "correct", "retrieval_correct", "group_id", "record"} <= set(rows[0])
    assert {"query", "reference", "response", "retrieved_ids"} <= set(rows[0]["record"])
    assert all(r["record"]["query_id"] == r["query_id"] for r in rows)
    gaps = {r["group_id"] for r in rows if r["variant"] == "short" and r["tag"] == "gap"}
    assert len(gaps) == 113


def test_analyze_without_inputs_is_one_line(tmp_path: Path) -> None:
    result = ragaudit("analyze", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("error: nothing to analyze: no judgements in")
    assert "Traceback" not in result.stderr


def test_malformed_neutral_line_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "q", "group_id": "g", "variant": "short", "correct": "yes"}\n')
    result = ragaudit("analyze", "--neutral", str(bad), cwd=tmp_path)
    assert result.returncode == 2
    assert f"{bad}:1: correct: expected true or false" in result.stderr
