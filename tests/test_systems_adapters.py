"""External systems: an HTTP endpoint (a real local server that also fails and hangs), a
Python callable, and LangChain / LlamaIndex objects, all driven by the real harness."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ragaudit import aio
from ragaudit.config import parse_config
from ragaudit.errors import ConfigError
from ragaudit.harness.ask import run_system
from ragaudit.records.io import read_jsonl
from ragaudit.records.models import ResponseRecord
from ragaudit.systems.adapters import (
    CallableSystem,
    CallableSystemConfig,
    HTTPSystem,
    HTTPSystemConfig,
    LangChainSystem,
    LlamaIndexSystem,
    to_answer,
)
from ragaudit.systems.factory import build_system
from ragaudit.systems.jsonpath import JSONPathError, extract
from ragaudit.systems.options import parse_system
from tests.support.datasets import queries
from tests.support.rag_server import RAGServer


def _http(server: RAGServer, **overrides: object) -> HTTPSystem:
    settings: dict[str, object] = {
        "name": "api",
        "kind": "http",
        "url": server.url,
        "request": {"question": "{query}", "meta": {"id": "{query_id}"}},
        "answer_path": "data.answer",
        "ids_path": "sources[*].id",
        "contexts_path": "sources[*].text",
        "retries": 2,
    }
    settings.update(overrides)
    system = build_system(parse_system(settings))
    assert isinstance(system, HTTPSystem)
    return system


def _run(system, texts: list[str], tmp_path: Path, **kw) -> dict[str, ResponseRecord]:  # type: ignore[no-untyped-def]
    out = tmp_path / "r.jsonl"
    kw.setdefault("store_texts", True)  # these tests read what the adapters extract

    async def go():  # type: ignore[no-untyped-def]
        try:
            return await run_system(system, queries(texts), out, **kw)
        finally:
            await system.aclose()

    aio.run(go())
    return {r.query_id: r for r in read_jsonl(out, ResponseRecord)}


def test_http_endpoint_answers_and_retrieved_ids_come_from_json_paths(tmp_path: Path) -> None:
    with RAGServer() as server:
        records = _run(_http(server), ["Who runs Aurp?"], tmp_path, store_texts=False)
    r = records["q0000"]
    assert r.response == "answer to Who runs Aurp?" and r.error is None
    # Passage texts are kept only on request (harness.store_texts): ids always.
    assert r.retrieved_ids == ["doc-1", "doc-2"] and r.retrieved[0].text is None
    assert server.bodies[0] == {"question": "Who runs Aurp?", "meta": {"id": "q0000"}}
    with RAGServer() as server:
        kept = _run(_http(server), ["Who runs Aurp?"], tmp_path / "texts", store_texts=True)
    assert kept["q0000"].retrieved[0].text == "first passage"


def test_http_500s_are_retried_then_recorded_and_a_hang_times_out(tmp_path: Path) -> None:
    with RAGServer() as server:
        start = time.perf_counter()
        records = _run(
            _http(server),
            ["flaky one", "fail500 always", "hang here", "notjson please", "plain"],
            tmp_path,
            concurrency=5,
            timeout_s=2.0,
        )
        elapsed = time.perf_counter() - start
    assert records["q0000"].response == "answer to flaky one"  # two 500s, then success
    assert server.calls["flaky one"] == 3
    assert records["q0001"].error == "HTTP 500 Internal Server Error after 3 attempts"
    assert server.calls["fail500 always"] == 3
    assert records["q0002"].error == "timed out after 2 s"
    assert records["q0003"].error is not None and "not JSON" in records["q0003"].error
    assert records["q0004"].response == "answer to plain"
    assert elapsed < 8  # the hang cost its timeout, not the run


def test_http_header_tokens_come_from_the_environment_and_stay_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_TOKEN", "tok-SECRET-123")
    with RAGServer() as server:
        system = _http(server, headers={"Authorization": "Bearer ${RAG_TOKEN}"}, retries=0)
        records = _run(system, ["fail500 x", "fine"], tmp_path)
    assert server.headers_seen[0]["Authorization"] == "Bearer tok-SECRET-123"
    assert "tok-SECRET-123" not in (tmp_path / "r.jsonl").read_text()
    assert records["q0001"].response == "answer to fine"


def test_http_config_errors_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="environment variable NOPE_TOKEN is not set"):
        build_system(HTTPSystemConfig(name="a", url="http://x", headers={"A": "${NOPE_TOKEN}"}))
    with pytest.raises(ConfigError, match="cannot read it"):
        build_system(HTTPSystemConfig(name="a", url="http://x", answer_path="a..[x"))
    with pytest.raises(ConfigError, match=r"ragaudit.yaml:2: systems.0.url: Field required"):
        parse_config("systems:\n  - {name: a, kind: http}\n")


def test_json_paths() -> None:
    data = {"a": {"b": [{"id": 1}, {"id": 2}]}, "c": "x"}
    assert extract(data, "a.b[*].id") == [1, 2]
    assert extract(data, "$.a.b[1].id") == 2
    assert extract(data, "c") == "x"
    with pytest.raises(JSONPathError, match="no key 'd'"):
        extract(data, "d")
    with pytest.raises(JSONPathError, match=r"no element \[5\]"):
        extract(data, "a.b[5]")


def test_callable_targets_load_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_rag_mod.py").write_text(
        "async def ask(query, record):\n"
        "    return (query[::-1], ['d-' + record.query_id], ['ctx'])\n"
        "def broken(query):\n"
        "    return 42\n"
    )
    monkeypatch.chdir(tmp_path)
    system = build_system(CallableSystemConfig(name="f", target="my_rag_mod:ask"))
    records = _run(system, ["abc"], tmp_path)
    assert records["q0000"].response == "cba" and records["q0000"].retrieved_ids == ["d-q0000"]
    bad = build_system(CallableSystemConfig(name="g", target="my_rag_mod:broken"))
    out = tmp_path / "bad"
    out.mkdir()
    records = _run(bad, ["abc"], out)
    assert "returned int" in (records["q0000"].error or "")
    with pytest.raises(ConfigError, match="has no attribute missing"):
        build_system(CallableSystemConfig(name="h", target="my_rag_mod:missing"))
    with pytest.raises(ConfigError, match="cannot import no_such_module"):
        build_system(CallableSystemConfig(name="h", target="no_such_module:f"))


def test_return_values_of_callables() -> None:
    assert to_answer("plain", "x").response == "plain"
    dict_answer = to_answer(
        {"answer": "a", "retrieved_ids": ["1"], "scores": [0.5], "usage": {"prompt_tokens": 3}},
        "x",
    )
    assert dict_answer.retrieved[0].score == 0.5 and dict_answer.usage.prompt_tokens == 3
    assert [i.id for i in to_answer(("a", None, ["t1", "t2"]), "x").retrieved] == [
        "context-1",
        "context-2",
    ]


def test_langchain_retriever_and_chain(tmp_path: Path) -> None:
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableLambda

    class Finder(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager):  # type: ignore[no-untyped-def]
            return [
                Document(page_content=f"about {query}", metadata={"doc": "d7", "score": 0.9}),
                Document(page_content="other", id="d8"),
                # Documents numbered by the user: 0 is an id, not a missing one.
                Document(page_content="zero", metadata={"doc": 0}),
            ]

    retriever = LangChainSystem("lc", Finder(), id_field="doc")
    records = _run(retriever, ["cats"], tmp_path)
    assert records["q0000"].response is None
    assert records["q0000"].retrieved_ids == ["d7", "d8", "0"]
    assert records["q0000"].retrieved[0].text == "about cats"

    chain = RunnableLambda(
        lambda q: {"answer": f"chain says {q}", "context": [Document(page_content="c", id="z1")]}
    )
    out = tmp_path / "chain"
    out.mkdir()
    records = _run(LangChainSystem("chain", chain), ["dogs"], out)
    assert records["q0000"].response == "chain says dogs"
    assert records["q0000"].retrieved_ids == ["z1"]
    with pytest.raises(ConfigError, match="not a LangChain"):
        LangChainSystem("x", object())


def test_llamaindex_retriever_and_query_engine(tmp_path: Path) -> None:
    from llama_index.core.base.response.schema import Response
    from llama_index.core.query_engine import CustomQueryEngine
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    def nodes(query: str) -> list[NodeWithScore]:
        return [
            NodeWithScore(node=TextNode(text=f"on {query}", metadata={"id": "n1"}), score=0.7),
            NodeWithScore(node=TextNode(text="more", id_="n2"), score=0.2),
            NodeWithScore(node=TextNode(text="zero", metadata={"id": 0}), score=0.1),
        ]

    class Finder(BaseRetriever):
        def _retrieve(self, query_bundle):  # type: ignore[no-untyped-def]
            return nodes(query_bundle.query_str)

    records = _run(LlamaIndexSystem("li", Finder()), ["owls"], tmp_path)
    assert records["q0000"].retrieved_ids == ["n1", "n2", "0"]
    assert records["q0000"].retrieved[0].score == 0.7

    class Engine(CustomQueryEngine):
        def custom_query(self, query_str: str):  # type: ignore[no-untyped-def]
            return Response(response=f"engine: {query_str}", source_nodes=nodes(query_str))

    out = tmp_path / "engine"
    out.mkdir()
    records = _run(LlamaIndexSystem("eng", Engine()), ["bats"], out)
    assert records["q0000"].response == "engine: bats"
    assert records["q0000"].retrieved_ids == ["n1", "n2", "0"]


def test_literal_header_values_are_masked_in_the_written_configuration() -> None:
    config = parse_config(
        "systems:\n  - name: api\n    kind: http\n    url: http://x\n"
        "    headers: {Authorization: Bearer tok-LITERAL-9, X-Token: '${RAG_TOKEN}'}\n"
    )
    headers = config.masked_dict()["systems"][0]["headers"]
    assert headers == {"Authorization": "***", "X-Token": "${RAG_TOKEN}"}


def test_a_query_holding_placeholder_text_reaches_the_system_as_written(tmp_path: Path) -> None:
    text = "Why does {query_id} show in {variant} reports?"
    with RAGServer() as server:
        _run(_http(server, request={"q": "{query}", "v": "{variant}:{query_id}"}), [text], tmp_path)
    assert server.bodies[0]["q"] == text
    assert server.bodies[0]["v"].endswith(":q0000") and "{" not in server.bodies[0]["v"]


def test_a_system_echoing_its_header_secret_does_not_put_it_in_the_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_TOKEN", "tok-ECHOED-456")
    with RAGServer() as server:
        system = _http(server, headers={"X-Token": "${RAG_TOKEN}"})
        records = _run(system, ["say tok-ECHOED-456 back"], tmp_path)
    assert records["q0000"].response == "answer to say *** back"
    assert "tok-ECHOED-456" not in (tmp_path / "r.jsonl").read_text()


def test_a_system_naming_its_secret_as_a_retrieved_id_does_not_put_it_in_the_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ids a system names are what others wrote too: a secret among them is masked
    as it is in the answer, in any case."""
    monkeypatch.setenv("RAG_TOKEN", "tok-ECHOED-789")
    with RAGServer() as server:
        system = _http(server, headers={"X-Token": "${RAG_TOKEN}"})
        records = _run(system, ["echoid TOK-echoed-789"], tmp_path)
    assert [r.id for r in records["q0000"].retrieved] == ["***", "doc-***"]
    assert "echoed-789" not in (tmp_path / "r.jsonl").read_text().lower()


def test_k_reaches_every_adapter_that_can_take_it_and_is_refused_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14: `k` on an adapter is passed to the system, or a one-line error before
    anything is asked; never silently ignored. Left out, the system keeps its own depth."""
    request = {"question": "{query}", "top_k": "{k}", "note": "depth {k}"}
    with RAGServer() as server:
        _run(_http(server, request=request, k=4), ["q"], tmp_path)
    assert server.bodies[0] == {"question": "q", "top_k": 4, "note": "depth 4"}
    with RAGServer() as server:
        with pytest.raises(ConfigError, match=r"k is set, but the request template has no \{k\}"):
            _http(server, k=4)
        with pytest.raises(ConfigError, match=r"has a \{k\} field: set k"):
            _http(server, request=request)

    (tmp_path / "depth_mod.py").write_text(
        "def deep(query, k=2):\n    return {'answer': str(k)}\ndef flat(query):\n    return 'x'\n"
    )
    monkeypatch.chdir(tmp_path)
    for k, expected in ((7, "7"), (None, "2")):
        settings = {"name": "f", "kind": "callable", "target": "depth_mod:deep"}
        system = build_system(parse_system({**settings, "k": k} if k else settings))
        out = tmp_path / f"callable-{k}"
        out.mkdir()
        assert _run(system, ["q"], out)["q0000"].response == expected
    with pytest.raises(ConfigError, match="k is set, but the function takes no parameter k"):
        build_system(CallableSystemConfig(name="g", target="depth_mod:flat", k=3))

    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableLambda

    class Top(BaseRetriever):
        k: int = 2

        def _get_relevant_documents(self, query: str, *, run_manager):  # type: ignore[no-untyped-def]
            return [Document(page_content="t", id=f"d{i}") for i in range(self.k)]

    out = tmp_path / "lc"
    out.mkdir()
    assert len(_run(LangChainSystem("lc", Top(), k=5), ["q"], out)["q0000"].retrieved) == 5
    with pytest.raises(ConfigError, match="k is set, but the target is a chain"):
        LangChainSystem("chain", RunnableLambda(lambda q: q), k=5)

    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    texts = [f"report {i} about owls and bats number {i}" for i in range(6)]
    nodes = [TextNode(text=t, metadata={"id": f"r{i}"}) for i, t in enumerate(texts)]
    engine = RetrieverQueryEngine.from_args(
        BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=1), llm=MockLLM()
    )
    out = tmp_path / "engine"
    out.mkdir()
    records = _run(LlamaIndexSystem("eng", engine, k=3), ["owls"], out)
    assert len(records["q0000"].retrieved) == 3 and records["q0000"].error is None


def test_an_id_that_is_no_id_is_that_answers_error_naming_the_system_and_the_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One id rule for every adapter: a non-empty string, or an integer (its digits);
    None, a float, a bool or a list is the answer's error in one line, never recorded as
    the id 'None'. The other answers of the run are kept."""
    (tmp_path / "ids_mod.py").write_text(
        "import ragaudit as ra\n"
        "def ask(query):\n"
        "    if 'none' in query:\n"
        "        return ra.Answer('x', retrieved_ids=[1, None])\n"
        "    if 'nested' in query:\n"
        "        return {'answer': 'x', 'retrieved_ids': [['d1', 'd2']]}\n"
        "    return {'answer': 'x', 'retrieved_ids': (7, 'd2'), 'contexts': ('a', 'b')}\n"
    )
    monkeypatch.chdir(tmp_path)
    system = build_system(CallableSystemConfig(name="fn", target="ids_mod:ask"))
    records = _run(system, ["ids none", "ids nested", "fine"], tmp_path)
    assert records["q0000"].error == (
        "system fn returned retrieved_ids[1] None is not an id "
        "(an id is a non-empty string or an integer)"
    )
    assert records["q0000"].retrieved == [] and records["q0000"].response is None
    assert records["q0001"].error is not None
    assert "retrieved_ids[0] ['d1', 'd2'] is not an id" in records["q0001"].error
    fine = records["q0002"]
    assert fine.error is None and fine.retrieved_ids == ["7", "d2"]  # a tuple is a list
    assert [item.text for item in fine.retrieved] == ["a", "b"]
    with RAGServer() as server:
        http = _run(_http(server), ["badids please"], tmp_path / "http")
    assert http["q0000"].error is not None
    assert http["q0000"].error.startswith("system api returned retrieved_ids[1] None is not an id")


def test_an_http_path_that_selects_one_value_gives_one_id(tmp_path: Path) -> None:
    """A reply that names one source (``sources[0].id``): the user's path selects a single
    value, so it is one id with its one text; a Python system's lone string is refused
    (test below), since nothing there says which was meant."""
    with RAGServer() as server:
        system = _http(server, ids_path="sources[0].id", contexts_path="sources[0].text")
        records = _run(system, ["one please"], tmp_path)
    record = records["q0000"]
    assert record.error is None and record.retrieved_ids == ["doc-1"]
    assert [item.text for item in record.retrieved] == ["first passage"]


def test_return_values_with_bad_ids_contexts_or_scores_are_refused_in_one_line() -> None:
    from ragaudit.systems.base import SystemFailure

    assert [i.id for i in to_answer(("a", [3, "d"]), "system x").retrieved] == ["3", "d"]
    for value, message in (
        (("a", [True]), r"system x returned retrieved_ids\[0\] True is not an id"),
        (("a", [""]), r"retrieved_ids\[0\] '' is not an id"),
        (("a", [1.5]), r"retrieved_ids\[0\] 1.5 is not an id"),
        (("a", ["d"], [{"text": "t"}]), r"contexts\[0\] \{'text': 't'\} of type dict is not a"),
        (("a", ["d"], [7]), r"system x returned contexts\[0\] 7 of type int"),
        ({"answer": "a", "retrieved_ids": ["d"], "scores": ["high"]}, r"scores\[0\] 'high'"),
        # One string where a list is due is refused as ra.Answer refuses it, never read
        # as its characters nor guessed to be one id.
        ({"answer": "a", "retrieved_ids": "doc1"}, r"retrieved_ids 'doc1': expected a list"),
        (("a", "doc1"), r"system x returned retrieved_ids 'doc1': expected a list \(one id is"),
        (("a", ["d"], "text"), r"returned contexts 'text': expected a list"),
        ({"answer": "a", "ids": 7}, r"returned retrieved_ids 7: expected a list"),
    ):
        with pytest.raises(SystemFailure, match=message):
            to_answer(value, "system x")


def test_an_http_reply_cut_inside_a_character_is_recorded_with_the_replacement_character(
    tmp_path: Path,
) -> None:
    """A server that truncates its reply inside an emoji sends the JSON escape of half of
    it. Before, the run crashed on writing the batch and kept none of it, and every rerun
    crashed the same way; now the answer is kept with U+FFFD in place of the half, the
    rest of the batch with it, and the run's warnings name the asking."""
    out = tmp_path / "r.jsonl"
    with RAGServer() as server:
        system = _http(server)
        stats = aio.run(run_system(system, queries(["halfemoji now", "plain"]), out))
        aio.run(system.aclose())
    records = {r.query_id: r for r in read_jsonl(out, ResponseRecord)}
    assert records["q0000"].response == "cut \ufffd" and records["q0000"].error is None
    assert records["q0001"].response == "answer to plain"
    assert stats.replaced_text == 1 and len(stats.warnings) == 1
    assert stats.warnings[0].startswith("api: 1 answer held text that is not Unicode")
    assert stats.warnings[0].endswith(": q0000")


def test_every_string_of_an_answer_is_written_as_unicode_text(tmp_path: Path) -> None:
    """Half characters in the retrieved ids and texts are replaced too (no file can hold
    them), a pair of surrogates that Python code built by hand is joined into its
    character, and a failure's message quoting half a character is kept as well."""

    def rag(query: str) -> dict[str, object]:
        if "fail" in query:
            raise RuntimeError("bad reply: \udc80")
        return {
            "answer": "smile \ud83d\ude00",  # the emoji, written in UTF-16
            "retrieved_ids": ["doc-\ud800"],
            "contexts": ["text \udfff"],
        }

    system = CallableSystem("fn", rag)
    records = _run(system, ["ask", "fail"], tmp_path)
    ok, failed = records["q0000"], records["q0001"]
    assert ok.response == "smile \U0001f600"
    assert ok.retrieved_ids == ["doc-\ufffd"] and ok.retrieved[0].text == "text \ufffd"
    assert failed.error == "RuntimeError: bad reply: \ufffd"
