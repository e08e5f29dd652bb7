"""Reference-free metrics: the scorer's arithmetic and parts over real HTTP (the scripted
server plays a careful model), undefined scores with their reasons when the model misbehaves
(a chaos test: malformed JSON, empty claims, 500s), determinism and the cache."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from ragaudit.analysis.metrics import Example
from ragaudit.analysis.reliability import reference_free_figures
from ragaudit.judge.reference_free import (
    FreeItem,
    FreeScorer,
    average_precision,
    cosine_mean,
    parse_verdicts,
    score_items,
)
from ragaudit.llm import make_llm
from ragaudit.llm.client import LLMClient
from ragaudit.llm.options import LLMConfig
from ragaudit.records.models import FREE_METRICS, FreeScoreRecord
from tests.support.free_responder import free_reply
from tests.support.scripted_llm_server import Reply, ScriptedLLMServer

PARIS = "Paris is the capital of France. It has two million inhabitants."
LYON = "Lyon is a city on the Rhone."


def _client(server: ScriptedLLMServer, cache: Path | None = None, **kw: Any) -> LLMClient:
    config = LLMConfig(
        model="openai:scorer",
        base_url=server.base_url,
        api_key="sk-test-0000000000",
        max_retries=kw.pop("max_retries", 0),
        max_retry_wait_s=0.01,
        **kw,
    )
    return make_llm(config, cache_path=cache)


def _encoder(texts: list[str]) -> list[list[float]]:
    """A bag-of-letters encoder: enough to tell similar questions from different ones
    without loading the sentence model (which test_reference_free_cli uses)."""
    out = []
    for text in texts:
        vec = [0.0] * 26
        for ch in text.lower():
            if "a" <= ch <= "z":
                vec[ord(ch) - 97] += 1
        out.append(vec)
    return out


def test_average_precision_and_cosine_by_hand() -> None:
    assert average_precision([True, False, True]) == pytest.approx((1 + 2 / 3) / 2)
    assert average_precision([False, True]) == pytest.approx(0.5)
    assert average_precision([False, False]) == 0.0
    assert average_precision([]) == 0.0
    assert cosine_mean([1, 0], [[1, 0], [0, 1], [1, 1]]) == pytest.approx([1, 0, 1 / math.sqrt(2)])


def test_verdict_reader_wants_one_yes_or_no_per_claim() -> None:
    read = parse_verdicts(2)
    assert read('{"verdicts": ["yes", "No"]}') == [True, False]
    assert read('["1", "0"]') == [True, False]
    with pytest.raises(ValueError, match="1 verdicts for 2 claims"):
        read('{"verdicts": ["yes"]}')
    with pytest.raises(ValueError, match="neither yes nor no"):
        read('{"verdicts": ["yes", "maybe"]}')
    with pytest.raises(ValueError, match="no valid JSON"):
        read("both are fine")


def _score(llm: LLMClient, items: list[FreeItem], **kw: Any) -> list[FreeScoreRecord]:
    scorer = FreeScorer(llm, embed=_encoder)

    try:
        return llm.run(score_items(scorer, items, list(FREE_METRICS), **kw))
    finally:
        llm.close()  # commits the cache


async def _again(item: FreeItem, n: int) -> list[str]:
    return [item.answer or ""] * (n - 1) + ["Marseille is the capital."]


def test_each_metric_with_its_parts(llm_server: ScriptedLLMServer) -> None:
    llm_server.responder = free_reply
    items = [
        FreeItem(
            "faithful",
            "rag",
            "What is the capital of France?",
            "Paris is the capital of France.",
            (PARIS, LYON),
        ),
        FreeItem(
            "half",
            "rag",
            "What is the capital of France?",
            "Paris is the capital. Lyon has ten million people.",
            (PARIS,),
        ),
        FreeItem(
            "refusal", "rag", "What is the capital of France?", "I don't know.", (LYON, PARIS)
        ),
    ]
    got = {r.query_id: r.metrics for r in _score(_client(llm_server), items, resample=_again)}
    faithful = got["faithful"]
    assert faithful["faithfulness"].score == 1.0
    assert [c.supported for c in faithful["faithfulness"].claims or []] == [True]
    # Passages in rank order: Paris (useful), Lyon (not): AP = 1.
    assert faithful["context_precision"].useful == [True, False]
    assert faithful["context_precision"].score == 1.0
    # Three of four samples agree.
    assert faithful["self_consistency"].agree == [True, True, True, False]
    assert faithful["self_consistency"].score == 0.75
    relevancy = faithful["answer_relevancy"]
    assert relevancy.noncommittal is False and len(relevancy.questions or []) == 3
    assert relevancy.score == pytest.approx(sum(relevancy.similarities or []) / 3)
    assert faithful["faithfulness"].calls == 2  # claims, then one verification for all

    half = got["half"]
    assert half["faithfulness"].score == 0.5
    assert [c.supported for c in half["faithfulness"].claims or []] == [True, False]

    refusal = got["refusal"]
    assert refusal["faithfulness"].score is None
    assert refusal["faithfulness"].undefined == "the answer makes no factual claim"
    assert refusal["answer_relevancy"].score == 0.0 and refusal["answer_relevancy"].noncommittal
    # Neither passage holds "know": none useful, a defined 0, with its verdicts shown.
    assert refusal["context_precision"].score == 0.0
    assert refusal["context_precision"].useful == [False, False]


def test_undefined_without_answer_passages_or_resampler(llm_server: ScriptedLLMServer) -> None:
    llm_server.responder = free_reply
    items = [
        FreeItem("empty", "rag", "Q?", "", (PARIS,)),
        FreeItem("nothing", "rag", "Q?", "Paris.", ()),
        FreeItem("unknown", "rag", "Q?", "Paris.", None),
    ]
    got = {r.query_id: r.metrics for r in _score(_client(llm_server), items)}
    assert got["empty"]["faithfulness"].undefined == "no answer to check"
    assert got["nothing"]["faithfulness"].undefined.startswith("nothing was retrieved")
    assert got["nothing"]["context_precision"].undefined == "nothing was retrieved"
    assert got["unknown"]["context_precision"].undefined.startswith("the retrieved passages")
    for metrics in got.values():
        assert metrics["self_consistency"].undefined.startswith("the system cannot be asked")
    # Only the answer relevancy of the two answers asked the model: questions and flag.
    assert llm_server.request_count == 4


def _chaos(server: ScriptedLLMServer) -> None:
    """Malformed JSON, a wrong number of verdicts, and 500s, by the kind of prompt."""

    def reply(body: dict[str, Any]) -> str | Reply:
        instructions = str(body["messages"][0]["content"])
        prompt = str(body["messages"][1]["content"])  # the first ask, also when re-asked
        if "broken" in prompt and instructions.startswith("You split"):
            return "Here are the claims: Paris, France (sorry, no JSON)"
        if "short" in prompt and instructions.startswith("You check"):
            return '{"verdicts": []}'
        if "down" in prompt:
            return Reply(status=500)
        if instructions.startswith("You are given an answer") and "odd" in prompt:
            return '{"questions": []}'
        if instructions.startswith("You read a question") and "vague" in prompt:
            return '{"noncommittal": "perhaps"}'
        return free_reply(body)

    server.responder = reply


def test_chaos_gives_no_nan_and_counts_every_reason(llm_server: ScriptedLLMServer) -> None:
    _chaos(llm_server)
    answers = {
        "ok": "Paris is the capital of France.",
        "broken": "Paris is the capital, broken.",
        "short": "Paris is short.",
        "down": "Paris is down.",
        "odd": "Paris is odd.",
        "vague": "Paris is vague.",
        "idk": "I don't know.",
    }
    items = [FreeItem(q, "rag", "What is the capital?", a, (PARIS,)) for q, a in answers.items()]
    records = _score(_client(llm_server), items, resample=_again)
    got = {r.query_id: r.metrics for r in records}
    assert got["broken"]["faithfulness"].undefined.startswith("malformed reply: ")
    # Asked, re-asked, the same reply: given up after two asks, not three.
    assert got["broken"]["faithfulness"].calls == 2
    assert got["short"]["faithfulness"].undefined.startswith("malformed reply: ")
    assert got["down"]["faithfulness"].undefined.startswith("LLM failed: ")
    assert got["odd"]["answer_relevancy"].undefined.startswith("malformed reply: ")
    assert got["vague"]["answer_relevancy"].undefined.startswith("malformed reply: ")
    assert got["idk"]["faithfulness"].undefined == "the answer makes no factual claim"
    for metrics in got.values():
        for score in metrics.values():
            assert score.score is None or math.isfinite(score.score)
            assert (score.score is None) == bool(score.undefined)

    # The analysis counts each reason, computes on what was scored, and holds no NaN.
    examples = [
        Example(query_id=q, group_id=q, variant="short", correct=q in ("ok", "short"), system="rag")
        for q in answers
    ]
    figures = reference_free_figures(examples, records, {m: 0.5 for m in FREE_METRICS})
    assert figures is not None
    faith = figures.metrics["faithfulness"]
    assert faith.undefined == {
        "LLM failed": 1,
        "malformed reply": 2,
        "the answer makes no factual claim": 1,
    }
    # ok (right, its claim supported: 1.0); odd and vague (wrong, not in the passage: 0.0)
    assert faith.responses == 3
    assert (faith.precision.k, faith.precision.n) == (1, 1)
    assert (faith.let_through.k, faith.let_through.n) == (0, 2)
    assert faith.auroc.value == 1.0
    text = figures.model_dump_json()
    assert "NaN" not in text and "Infinity" not in text
    assert "could not score 4 answers" in faith.sentence


def test_scores_are_deterministic_and_cached(llm_server: ScriptedLLMServer, tmp_path: Path) -> None:
    llm_server.responder = free_reply
    items = [
        FreeItem(f"q{i}", "rag", f"Question {i}?", f"Paris is the capital {i}.", (PARIS,))
        for i in range(5)
    ]
    cache = tmp_path / "cache.sqlite"
    first = _score(_client(llm_server, cache), items, resample=_again)
    asked = llm_server.request_count
    assert asked > 0
    again = _score(_client(llm_server, cache), items, resample=_again)
    assert llm_server.request_count == asked  # every call from the cache
    assert [r.model_dump() for r in again] == [r.model_dump() for r in first]
    # Every metric call ran at temperature 0 with a fixed seed.
    bodies = [b for b in llm_server.requests if "Answer A:" not in json.dumps(b)]
    assert {b.get("temperature") for b in bodies} == {0.0}


def test_items_sharing_passages_are_asked_together(llm_server: ScriptedLLMServer) -> None:
    llm_server.responder = free_reply
    items = [
        FreeItem(f"q{i}", "rag", "Q?", "Paris is the capital.", (PARIS if i % 2 else LYON,))
        for i in range(6)
    ]
    scorer = FreeScorer(_client(llm_server, max_concurrency=1), embed=_encoder)
    records = scorer.llm.run(score_items(scorer, items, ["context_precision"]))
    scorer.llm.close()
    assert [r.query_id for r in records] == [f"q{i}" for i in range(6)]  # the items' order
    passages = [
        "Lyon" in str(b["messages"][-1]["content"]).split("Question:")[0]
        for b in llm_server.requests
    ]
    assert passages == sorted(passages, reverse=True) or passages == sorted(passages)
