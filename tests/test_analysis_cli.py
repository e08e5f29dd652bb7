"""ragaudit analyze on the neutral results of a system ragaudit did not run."""

from __future__ import annotations

import json
import re
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
    # Gold ids of unknown meaning: the GRAMMAR convention blames each gap on the knowledge
    # base, and says so.
    assert short["blame"]["rule"] == "convention"
    assert short["blame"]["counts"]["knowledge base"] == short["gap_fraction"]["k"]
    assert system["knowledge_base_holes"] is None
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
    assert {"tag", "correct", "retrieval_correct", "source", "group_id", "record"} <= set(rows[0])
    assert all(r["source"] == "knowledge base" for r in rows if r["tag"] == "gap")
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
    bad.write_text(
        '{"query_id": "q", "group_id": "g", "variant": "short", "correct": true, '
        '"gold_ids": [], "gold_kind": "stated"}\n'
    )
    result = ragaudit("analyze", "--neutral", str(bad), cwd=tmp_path)
    assert result.returncode == 2
    assert f"{bad}:1: gold_kind: expected states, computed, entity or null" in result.stderr
    # A user's file: a cut last line is an error with its number, not a row silently lost.
    good = '{"query_id": "q%d", "group_id": "g", "variant": "short", "correct": true}\n'
    bad.write_text(good % 1 + good % 2 + '{"query_id": "q3", "group_id": "g", "vari')
    result = ragaudit("analyze", "--neutral", str(bad), cwd=tmp_path)
    assert result.returncode == 2
    assert f"{bad}:3" in result.stderr and "Traceback" not in result.stderr


def _strict(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def test_a_system_that_is_always_wrong_gets_no_robustness_verdict(tmp_path: Path) -> None:
    """Robustness of a system whose every group is a gap is undefined: null with why, never
    tested, never significant, whatever the order of the names (issue 13, defect 2)."""
    rows = []
    for system, good in (("up", True), ("down", False)):
        for g in range(40):
            for variant in ("short", "long"):
                rows.append(
                    {
                        "system": system,
                        "query_id": f"{system}-{g}-{variant}",
                        "group_id": f"g{g}",
                        "variant": variant,
                        "correct": good and not (g % 10 == 0 and variant == "long"),
                    }
                )
    for order in ("up-first", "down-first"):
        folder = tmp_path / order
        folder.mkdir()
        data = rows if order == "up-first" else rows[::-1]
        path = folder / "results.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in data))
        result = ragaudit("analyze", "--neutral", str(path), cwd=folder)
        assert result.returncode == 0, result.stderr
        summary_text = (folder / "runs/default/summary.json").read_text()
        summary = json.loads(summary_text, parse_constant=_strict)  # no NaN anywhere
        robust = [
            c
            for c in summary["comparisons"]
            if c["metric"] == "robustness"
            and {c["a"]["system"], c["b"]["system"]} == {"up", "down"}
        ]
        assert len(robust) == 2  # short and long
        for c in robust:
            assert c["p_value"] is None and c["difference"] is None and c["ci95"] is None
            down = "a" if c["a"]["system"] == "down" else "b"
            assert c[down]["value"] is None
            assert c["undefined"].startswith(f"side {down}: every group is a gap")
            assert "less robust" not in c["verdict"]
            assert "No robustness comparison" in c["verdict"] or "no robustness" in c["verdict"]
            assert "on down, every group is a gap" in c["verdict"]
        # Accuracy stays comparable, and 'down' is the less accurate one.
        accurate = [
            c
            for c in summary["comparisons"]
            if c["metric"] == "accuracy" and {c["a"]["system"], c["b"]["system"]} == {"up", "down"}
        ]
        assert all("down is less accurate than up" in c["verdict"] for c in accurate)
        shown = result.stdout + (folder / "runs/default/summary.md").read_text()
        assert "nan" not in shown.lower().replace("financ", "")


def test_errors_are_counted_and_a_verdict_they_drive_says_so(tmp_path: Path) -> None:
    """A system that times out on a fifth of the queries looks less accurate; the figures
    show the errors per system and variant, and the verdict says errors drive it."""
    rows = []
    for system in ("steady", "flaky"):
        for g in range(60):
            for variant in ("short", "long"):
                failed = system == "flaky" and g % 5 == 0
                row = {
                    "system": system,
                    "query_id": f"{system}-{g}-{variant}",
                    "group_id": f"g{g}",
                    "variant": variant,
                    "correct": not failed,
                }
                if failed:
                    row["error"] = "timed out after 30 s"
                rows.append(row)
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = ragaudit("analyze", "--neutral", str(path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "runs/default/summary.json").read_text())
    assert summary["systems"]["flaky"]["variants"]["short"]["n_errors"] == 12
    assert summary["systems"]["steady"]["variants"]["short"]["n_errors"] == 0
    accuracy = [
        c
        for c in summary["comparisons"]
        if c["metric"] == "accuracy" and c["a"]["system"] != c["b"]["system"]
    ]
    assert len(accuracy) == 2
    for c in accuracy:
        flaky = "a" if c["a"]["system"] == "flaky" else "b"
        assert c[flaky]["errors"] == 12
        assert "flaky is less accurate than steady" in c["verdict"]
        assert "Errors, not answers, may drive this verdict: flaky failed on 12" in c["verdict"]
    assert "| flaky | short | 60 | 60 | 12 |" in (tmp_path / "runs/default/summary.md").read_text()
    assert "n_errors" in result.stdout
    report = ragaudit("report", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "runs/default/report.html").read_text()
    # The column has a tooltip saying what it counts (issue 41, item 14).
    assert re.search(r'<th title="[^"]+">errors</th>', html) and '<td class="num">12</td>' in html


def test_errors_that_cannot_explain_a_difference_are_only_counted(tmp_path: Path) -> None:
    """'wrong' answers badly and failed on 3 queries: had those 3 been right it would still
    be far worse, so the verdict gives the counts but does not blame the errors."""
    rows = []
    for system in ("steady", "wrong"):
        for g in range(60):
            failed = system == "wrong" and g < 3
            row = {
                "system": system,
                "query_id": f"{system}-{g}",
                "group_id": f"g{g}",
                "variant": "short",
                "correct": system == "steady" or (g % 4 == 0 and not failed),
            }
            if failed:
                row["error"] = "HTTP 503"
            rows.append(row)
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert ragaudit("analyze", "--neutral", str(path), cwd=tmp_path).returncode == 0
    summary = json.loads((tmp_path / "runs/default/summary.json").read_text())
    accuracy = next(c for c in summary["comparisons"] if c["metric"] == "accuracy")
    assert "wrong is less accurate than steady" in accuracy["verdict"]
    assert accuracy["verdict"].endswith("(errors: steady 0, wrong 3)")
    assert "may drive" not in accuracy["verdict"]


def test_a_neutral_file_with_a_query_twice_is_refused(tmp_path: Path) -> None:
    row = {"query_id": "q1", "group_id": "g", "variant": "short", "correct": True}
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(row) + "\n" + json.dumps({**row, "correct": False}) + "\n")
    result = ragaudit("analyze", "--neutral", str(path), cwd=tmp_path)
    assert result.returncode == 2
    assert f"{path}:2: two rows of query q1 by external" in result.stderr


def _neutral_row(
    qid: str, group: str, variant: str, gold: list[str] | None, **extra: object
) -> str:
    row = {
        "query_id": qid, "group_id": group, "template_id": "t", "variant": variant,
        "query": qid, "reference": "x", "response": "x", "retrieved_ids": ["d1", "d2"],
        "gold_ids": gold, "correct": True, **extra,
    }  # fmt: skip
    return json.dumps(row) + "\n"


def test_retrieval_outcome_leaves_out_queries_without_gold_documents_and_says_so(
    tmp_path: Path,
) -> None:
    """Neutral rows whose gold ids are unknown or [] are left out of the retrieval outcome
    and counted; the drill-down keeps each remaining line next to its own verdict; a
    variant with nothing left is a warning, not a silent absence."""
    lines = [
        _neutral_row("s1", "a", "short", ["d1"]),
        _neutral_row("s2", "b", "short", []),  # no document holds the answer
        _neutral_row("s3", "c", "short", None),  # not known
        _neutral_row("s4", "d", "short", ["d9"]),
        _neutral_row("s5", "e", "short", ["d2", "d3"]),  # one of two: not all_gold
        _neutral_row("l1", "a", "long", None),
        _neutral_row("l2", "b", "long", []),
    ]
    (tmp_path / "n.jsonl").write_text("".join(lines))
    result = ragaudit(
        "analyze", "--neutral", "n.jsonl", "--outcome", "retrieval", "--system", "ext",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "runs/default/summary.json").read_text())
    short = summary["systems"]["ext"]["variants"]["short"]
    assert (short["accuracy"]["k"], short["accuracy"]["n"]) == (1, 3)
    assert short["retrieval_left_out"] == {"no document": 1, "unknown": 1}
    assert "long" not in summary["systems"]["ext"]["variants"]
    warning = (
        "ext / long: no query has gold ids that name a document, so it has no retrieval "
        "figures (left out: 1 no document, 1 unknown)"
    )
    assert warning in summary["warnings"] and f"warning: {warning}" in result.stderr
    drill = [json.loads(line) for line in (tmp_path / "runs/default/drilldown.jsonl").open()]
    assert [r["query_id"] for r in drill] == ["s1", "s4", "s5"]
    assert all(r["record"]["query_id"] == r["query_id"] for r in drill)
    assert [r["correct"] for r in drill] == [True, False, False]
    assert (
        "3; left out: 1 no document, 1 gold ids unknown"
        in (tmp_path / "runs/default/summary.md").read_text()
    )


def test_a_system_that_answered_but_was_not_judged_is_named(tmp_path: Path) -> None:
    """analyze left out a system with responses and no judgements without a word (issue 36,
    a notebook user's finding D15)."""
    import numpy as np

    from tests.support.judged_runs import judged_run

    run = judged_run(tmp_path / "runs" / "default", {"rag": np.ones((6, 2), dtype=bool)})
    responses = (run / "responses" / "rag.jsonl").read_text()
    (run / "responses" / "bm25.jsonl").write_text(responses.replace('"rag"', '"bm25"'))
    result = ragaudit("analyze", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    said = "bm25 answered (bm25.jsonl) but has no judgements, so it is not in these figures"
    assert said in " ".join((result.stdout + result.stderr).split())
    summary = json.loads((run / "summary.json").read_text())
    assert list(summary["systems"]) == ["rag"]
    assert any(said in w for w in summary["warnings"])
