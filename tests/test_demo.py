"""ragaudit demo end to end, with the LLM played by the scripted OpenAI-compatible server
(the real embedded model runs it in `make demo`): every step's files, the report, and a
resumed rerun that asks nothing again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.cli import ragaudit
from tests.support.scripted_llm_server import ScriptedLLMServer


def _responder(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    if "True answer: " in prompt:  # the judge
        return json.dumps({"verdict": "Incorrect", "reason": "scripted"})
    # The answering prompt: name the first document of the context, a plausible miss.
    return prompt.split("(", 1)[1].split(")", 1)[0] if "(" in prompt else "I don't know."


def test_demo_runs_every_step_and_resumes(llm_server: ScriptedLLMServer, tmp_path: Path) -> None:
    llm_server.responder = _responder
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "sk-t-0000000000"}
    args = ("demo", "d", "--no-llm", "--llm", "openai:scripted", "--groups", "2")
    first = ragaudit(*args, cwd=tmp_path, env=env, timeout=600)
    assert first.returncode == 0, first.stderr
    run = tmp_path / "d" / "runs" / "demo"
    for name in ("dataset.jsonl", "summary.json", "report.html", "usage.json"):
        assert (run / name).exists(), name
    queries = (run / "dataset.jsonl").read_text().count("\n")
    for system in ("keyword-top1", "hybrid-top3"):
        assert (run / "responses" / f"{system}.jsonl").read_text().count("\n") == queries
        assert (run / "judgements" / f"{system}.jsonl").read_text().count("\n") == queries
    # Top-3 retrieval is right when the gold report is among the three.
    gold = {
        q["query_id"]: set(q["gold_ids"])
        for q in map(json.loads, (run / "dataset.jsonl").read_text().splitlines())
    }
    retrieved = {
        r["query_id"]: {item["id"] for item in r["retrieved"]}
        for r in map(json.loads, (run / "responses" / "hybrid-top3.jsonl").read_text().splitlines())
    }
    judged = [
        json.loads(line)
        for line in (run / "judgements" / "hybrid-top3.jsonl").read_text().splitlines()
    ]
    assert any(j["retrieval_correct"] for j in judged)
    for j in judged:
        assert j["retrieval_correct"] == (gold[j["query_id"]] <= retrieved[j["query_id"]])
    summary = json.loads((run / "summary.json").read_text())
    assert set(summary["systems"]) == {"keyword-top1", "hybrid-top3"}
    assert "keyword-top1: " in first.stdout and "report:" in first.stdout
    assert "keyword-top1, retrieval: " in first.stdout  # the retriever's own verdicts
    assert "Where the time went" in first.stdout
    asked = llm_server.request_count
    again = ragaudit(*args, cwd=tmp_path, env=env, timeout=600)
    assert again.returncode == 0, again.stderr
    assert llm_server.request_count == asked  # resumed: every answer and verdict kept
