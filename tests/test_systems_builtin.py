"""The built-in RAG systems answering through ragaudit's LLM client, with the LLM played by
the scripted OpenAI-compatible server over real HTTP; and their declaration in ragaudit.yaml."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragaudit import aio
from ragaudit.config import LLMConfig
from ragaudit.llm import make_llm
from ragaudit.records.io import read_jsonl
from ragaudit.records.models import ResponseRecord
from ragaudit.systems.answer_prompts import is_yes
from ragaudit.systems.builtin import RAGSystem
from ragaudit.systems.corpus import Document, chunk
from ragaudit.systems.retrievers import KeywordRetriever
from tests.support.cli import ragaudit
from tests.support.datasets import queries, write_dataset
from tests.support.scripted_llm_server import ScriptedLLMServer

DOCS = {
    "orrin": "Orrin Footbridge is managed by Rafferty Dunmore.",
    "quay": "Selbeck Quay was delivered for Selbeck Ports in 2023.",
    "mill": "Millbrook Dam is managed by Ida Calloway.",
}


def _llm(server: ScriptedLLMServer):  # type: ignore[no-untyped-def]
    return make_llm(
        LLMConfig(model="openai:scripted", base_url=server.base_url, api_key="sk-t-000000")
    )


def _answer(system: RAGSystem, text: str):  # type: ignore[no-untyped-def]
    return aio.run(system.answer(queries([text])[0]))


def test_concise_rag_puts_the_context_before_the_question(llm_server: ScriptedLLMServer) -> None:
    llm_server.responder = lambda body: "Rafferty Dunmore"
    retriever = KeywordRetriever(chunk([Document(k, v) for k, v in DOCS.items()]))
    with _llm(llm_server) as llm:
        system = RAGSystem("rag", retriever=retriever, k=2, generator="concise", llm=llm)
        answer = _answer(system, "Who manages Orrin Footbridge?")
    assert answer.response == "Rafferty Dunmore"
    assert answer.retrieved[0].id == "orrin" and len(answer.retrieved) == 2
    prompt = llm_server.requests[0]["messages"][-1]["content"]
    assert prompt.index("Orrin Footbridge is managed") < prompt.index("Question: Who manages")
    assert "I don't know" in llm_server.requests[0]["messages"][0]["content"]
    assert answer.usage.prompt_tokens > 0 and answer.usage.completion_tokens == 2


def test_strict_prompt_and_llm_only(llm_server: ScriptedLLMServer) -> None:
    llm_server.responder = lambda body: "I don't know."
    retriever = KeywordRetriever(chunk([Document(k, v) for k, v in DOCS.items()]))
    with _llm(llm_server) as llm:
        strict = RAGSystem("s", retriever=retriever, k=1, generator="strict", llm=llm)
        _answer(strict, "Who manages Millbrook Dam?")
        only = RAGSystem("o", retriever=None, k=1, generator="llm_only", llm=llm)
        bare = _answer(only, "Who manages Millbrook Dam?")
    strict_body = llm_server.requests[0]["messages"]
    assert "Never make up an answer" in strict_body[0]["content"]
    assert "#####\n[1] (mill)\nMillbrook Dam" in strict_body[1]["content"]
    only_body = llm_server.requests[1]["messages"]
    assert "Millbrook Dam is managed" not in json.dumps(only_body)
    assert bare.retrieved == []


def test_the_reranker_puts_relevant_passages_first(llm_server: ScriptedLLMServer) -> None:
    def judge(body: dict[str, Any]) -> str:
        content = body["messages"][-1]["content"]
        if content.startswith("Passage:"):
            return "Yes." if "Ida Calloway" in content else "no"
        return "Ida Calloway"

    llm_server.responder = judge
    retriever = KeywordRetriever(chunk([Document(k, v) for k, v in DOCS.items()]))
    with _llm(llm_server) as llm:
        plain = RAGSystem("p", retriever=retriever, k=1, generator="none", llm=None)
        before = _answer(plain, "Who manages the footbridge or the dam?")
        system = RAGSystem(
            "r", retriever=retriever, k=1, generator="concise", llm=llm, rerank_candidates=3
        )
        after = _answer(system, "Who manages the footbridge or the dam?")
    assert before.retrieved[0].id == "orrin"  # keyword order: the footbridge first
    assert after.retrieved[0].id == "mill" and len(after.retrieved) == 1
    assert llm_server.request_count == 4  # three relevance questions, one answer


def test_yes_detection() -> None:
    assert is_yes("Yes") and is_yes(" **yes**, it does") and is_yes("YES.")
    assert not is_yes("No") and not is_yes("") and not is_yes("yesterday")


def test_ragaudit_run_with_builtin_systems_end_to_end(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    llm_server.responder = lambda body: "Ida Calloway"
    (tmp_path / "docs.json").write_text(json.dumps(DOCS))
    write_dataset(
        tmp_path / "runs" / "default" / "dataset.jsonl",
        queries(["Who manages Millbrook Dam?", "Who manages Orrin Footbridge?"], gold=["mill"]),
    )
    (tmp_path / "ragaudit.yaml").write_text(
        "llm: {model: 'openai:scripted'}\n"
        "corpus: {path: docs.json}\n"
        "systems:\n"
        "  - {name: kw, retriever: keyword, k: 1}\n"
        "  - {name: bm25-only, retriever: bm25, k: 2, generator: none}\n"
        "  - {name: bare, generator: llm_only}\n"
    )
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "sk-t-0000000000"}
    result = ragaudit("run", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    root = tmp_path / "runs" / "default"
    kw = {r.query_id: r for r in read_jsonl(root / "responses" / "kw.jsonl", ResponseRecord)}
    assert kw["q0000"].retrieved_ids == ["mill"] and kw["q0000"].response == "Ida Calloway"
    only = list(read_jsonl(root / "responses" / "bm25-only.jsonl", ResponseRecord))
    assert all(r.response is None and len(r.retrieved) == 2 for r in only)
    assert llm_server.request_count == 4  # kw and bare answer; bm25-only asks no LLM
    assert "kw" in result.stdout and "errors" in result.stdout
    again = ragaudit("run", cwd=tmp_path, env=env)
    assert again.returncode == 0 and llm_server.request_count == 4
    analysis = ragaudit("analyze", "--outcome", "retrieval", cwd=tmp_path)
    assert analysis.returncode == 0, analysis.stderr
    summary = json.loads((root / "summary.json").read_text())
    assert summary["outcome"] == "retrieval"
    ranking = summary["retrieval_ranking"]["bm25-only"]["variants"]["short"]
    assert ranking["recall@1"]["value"] == 0.5 and ranking["recall@1"]["n"] == 2
    assert "bare" not in summary["retrieval_ranking"]  # retrieved nothing


def test_run_without_systems_or_dataset_is_one_line(tmp_path: Path) -> None:
    result = ragaudit("run", cwd=tmp_path)
    assert result.returncode == 2 and "no systems to run" in result.stderr
    (tmp_path / "ragaudit.yaml").write_text("systems:\n  - {name: kw, retriever: keyword}\n")
    result = ragaudit("run", cwd=tmp_path)
    assert result.returncode == 2 and "run ragaudit generate first" in result.stderr
    assert "Traceback" not in result.stderr
    write_dataset(tmp_path / "runs" / "default" / "dataset.jsonl", queries(["x"]))
    result = ragaudit("run", cwd=tmp_path)
    assert result.returncode == 2 and "corpus.path is not set" in result.stderr
    result = ragaudit("run", "--system", "nope", cwd=tmp_path)
    assert "no system named 'nope'" in result.stderr


def test_queries_that_retrieve_the_same_documents_are_asked_together() -> None:
    retriever = KeywordRetriever(chunk([Document(k, v) for k, v in DOCS.items()]))
    system = RAGSystem("r", retriever=retriever, k=1, generator="none", llm=None)
    qs = queries(
        ["Orrin Footbridge?", "Millbrook Dam?", "Who at Orrin Footbridge?", "Millbrook Dam who?"]
    )
    system.generator = "concise"  # ordering matters only for systems that prompt an LLM
    aio.run(system.prepare(qs))
    ordered = [q.query for q in system.order(qs)]
    docs = [retriever.retrieve(text, k=1)[0].doc_id for text in ordered]
    assert docs == sorted(docs)  # the same context follows itself: one prompt-cache prefix
    assert set(ordered) == {q.query for q in qs}
