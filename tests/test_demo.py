"""ragaudit demo end to end, with the LLM played by the scripted OpenAI-compatible server
(the real embedded model runs it in `make demo`): every step's files, the report, and a
resumed rerun that asks nothing again."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

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
    # Top-3 retrieval is right when the gold report is among the three; a question whose
    # fact no report states has nothing to retrieve, and no retrieval verdict.
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
    assert any(not gold[j["query_id"]] for j in judged)  # the demo has a hole
    for j in judged:
        want = gold[j["query_id"]]
        expected = want <= retrieved[j["query_id"]] if want else None
        assert j["retrieval_correct"] == expected
    summary = json.loads((run / "summary.json").read_text())
    assert set(summary["systems"]) == {"keyword-top1", "hybrid-top3"}
    assert "keyword-top1: " in first.stdout and "report:" in first.stdout
    assert "keyword-top1, retrieval: " in first.stdout  # the retriever's own verdicts
    assert "Where the time went" in first.stdout
    # Its step lines are in a log too, not only on a terminal (issue 41 item 5).
    for stage in ("world", "templates", "generate", "run", "judge", "analyze", "report"):
        assert re.search(rf"^demo: {stage}: done, 1/1, in \d", first.stderr, re.M), stage
    _blame_follows_the_evidence(tmp_path / "d", run, summary)
    report = (run / "report.html").read_text()
    assert "Decided by evidence: the gold ids list the documents that state" in report
    asked = llm_server.request_count
    again = ragaudit(*args, cwd=tmp_path, env=env, timeout=600)
    assert again.returncode == 0, again.stderr
    assert llm_server.request_count == asked  # resumed: every answer and verdict kept


# The fact each demo question asks for: (table, column) and how its row is reached from
# the project the question names (the project itself, or its client).
_ASKED = {
    "location-by-project-name": ("Project", "Location", "project"),
    "startdate-by-project-name": ("Project", "StartDate", "project"),
    "client-name-by-project-name-via-client": ("Project", "Client", "project"),
    "client-location-by-project-name-via-client": ("Client", "Location", "client"),
}


def _blame_follows_the_evidence(demo: Path, run: Path, summary: dict[str, Any]) -> None:
    """The knowledge base's share, with the holes answered anyway, is the share of
    questions no report answers, computed here from the world's own files, the same for
    both systems; keyword-top1's gap groups
    whose answer a report states, but which no wording retrieved, are the retriever's."""
    stated = defaultdict(set)
    for line in (demo / "world" / "document_facts.jsonl").read_text().splitlines():
        doc = json.loads(line)
        for fact in doc["facts"]:
            stated[(fact["table"], fact["row_key"], fact["column"])].add(doc["id"])
    with sqlite3.connect(demo / "world" / "company.sqlite") as db:
        client_of = dict(db.execute('SELECT Name, Client FROM "Project"').fetchall())
    queries = [json.loads(line) for line in (run / "dataset.jsonl").read_text().splitlines()]
    docs_of = {}
    for q in queries:
        table, column, via = _ASKED[q["template_id"]]
        project = q["bindings"]["Project.Name"]
        row = project if via == "project" else client_of[project]
        docs_of[q["query_id"]] = stated[(table, row, column)]
        assert q["gold_kind"] == "states" and set(q["gold_ids"]) == docs_of[q["query_id"]]
    holes = sum(not docs for docs in docs_of.values()) / len(queries)
    assert 0 < holes < 1  # the client's location is never stated; the rest mostly is
    for system in ("keyword-top1", "hybrid-top3"):
        blamed = defaultdict(int)
        answered_anyway = 0
        for m in summary["systems"][system]["variants"].values():
            assert m["blame"]["rule"] == "evidence"
            assert m["blame"]["counts"]["correct"] == m["accuracy"]["k"]
            for part, n in m["blame"]["counts"].items():
                blamed[part] += n
            # A hole answered right is correct, and counted as answered anyway.
            answered_anyway += m["blame"]["holes_answered"]
        assert (blamed["knowledge base"] + answered_anyway) / sum(blamed.values()) == holes
    rows = [json.loads(line) for line in (run / "drilldown.jsonl").read_text().splitlines()]
    retrieved = {
        r["query_id"]: {item["id"] for item in r["retrieved"]}
        for r in map(json.loads, (run / "responses/keyword-top1.jsonl").read_text().splitlines())
    }
    groups = defaultdict(list)
    for row in rows:
        if row["system"] == "keyword-top1" and row["tag"] == "gap":
            groups[(row["variant"], row["group_id"])].append(row)
    missed = [
        group
        for group in groups.values()
        if docs_of[group[0]["query_id"]]
        and not any(retrieved[r["query_id"]] & docs_of[r["query_id"]] for r in group)
    ]
    assert missed, "the scripted demo should have stated facts that top-1 never retrieved"
    assert all(r["source"] == "retriever" for group in missed for r in group)


def test_the_demo_adds_pairs_from_the_reports_once_and_goes_on_without_them(
    llm_server: ScriptedLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The document half joins the SQL half of the dataset; a rerun asks nothing; when
    nothing is accepted the demo says so and keeps the SQL half alone."""
    from ragaudit.progress import SILENT
    from ragaudit.records import QueryRecord, Reference, read_jsonl, write_jsonl_atomic
    from ragaudit.rundir import RunDir
    from ragaudit.steps.demo import DOCUMENT_PAIRS, _document_half, demo_config
    from ragaudit.world.build import build_world
    from tests.test_documents_cli import Script

    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-t-0000000000")
    world = tmp_path / "world"
    build_world(world, size=30, seed=1, force=True)
    sql = QueryRecord(
        query_id="q-sql",
        group_id="g-sql",
        variant="short",
        query="Where is project X?",
        reference=Reference.from_values(["Oslo"]),
    )

    def half(out: Path, script: Script) -> tuple[RunDir, dict[str, tuple[float, str]]]:
        config = demo_config(world, out, groups=1, use_llm=True, llm="openai:scripted")
        run = RunDir.from_config(config).create()
        write_jsonl_atomic(run.dataset, [sql])
        llm_server.responder = script
        timings: dict[str, tuple[float, str]] = {}
        _document_half(config, run, None, SILENT, timings)
        return run, timings

    run, timings = half(tmp_path / "ok", Script())
    queries = list(read_jsonl(run.dataset, QueryRecord))
    assert queries[0] == sql
    documents = [q for q in queries if q.source == "document"]
    assert len({q.group_id for q in documents}) == DOCUMENT_PAIRS
    assert {q.variant for q in documents} == {"generated", "short"}
    assert timings["documents"][1].startswith(f"{DOCUMENT_PAIRS} of {DOCUMENT_PAIRS} pairs")
    asked = llm_server.request_count
    config = demo_config(world, tmp_path / "ok", groups=1, use_llm=True, llm="openai:scripted")
    again: dict[str, tuple[float, str]] = {}
    _document_half(config, run, None, SILENT, again)
    assert llm_server.request_count == asked and again["documents"][1] == "written before"

    broken, timings = half(tmp_path / "broken", Script(broken=frozenset({"facts"})))
    assert list(read_jsonl(broken.dataset, QueryRecord)) == [sql]
    assert timings["documents"][1].startswith("none kept (no pair accepted")
