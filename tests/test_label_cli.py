"""ragaudit label: pairs from SQuAD JSON, JSONL or the run's dataset, labelled by the LLM
(the scripted server over real HTTP) and by human files; replies that are not a label are
re-asked, then recorded as undecided; labels flow into the dataset; reruns ask nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragaudit.documents.labels import parse_label_reply
from ragaudit.records import LabelRecord, QueryRecord, Reference, read_jsonl, write_jsonl_atomic
from tests.support.cli import ragaudit
from tests.support.scripted_llm_server import ScriptedLLMServer

SQUAD = {
    "version": "v2.0",
    "data": [
        {
            "title": "Rivers",
            "paragraphs": [
                {
                    "context": "The Rhine flows through six countries. It is 1,230 km long.",
                    "qas": [
                        {"id": "a1", "question": "How long is the Rhine?", "is_impossible": False,
                         "answers": [{"text": "1,230 km", "answer_start": 50}]},
                        {"id": "a2", "question": "Which countries does it cross?",
                         "is_impossible": False, "answers": [{"text": "six", "answer_start": 0}]},
                        {"id": "a3", "question": "Who named the Rhine?", "is_impossible": True,
                         "answers": []},
                    ],
                }
            ],
        }
    ],
}  # fmt: skip

# What the scripted labeller answers per question: good JSON, a label cut at the token
# limit, a bare label, or something that is never a label.
REPLIES = {
    "How long is the Rhine?": '{"label": "fact_single", "reason": "one number"}',
    "Which countries does it cross?": '```json\n{"label": "Summary", "reason": "a list of the',
    "Who named the Rhine?": "unanswerable",
    "Is it long?": "I think it is a nice question.",
}


def _responder(body: dict[str, Any]) -> str:
    question = body["messages"][1]["content"].rsplit("Question: ", 1)[1]
    return REPLIES[question]


def _env(server: ScriptedLLMServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-t-0000000000"}


def _labels(tmp_path: Path) -> list[LabelRecord]:
    return list(read_jsonl(tmp_path / "runs" / "default" / "labels.jsonl", LabelRecord))


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ('{"label": "fact_single", "reason": "x"}', "fact_single"),
        ('{"label": "Fact-Single"}', "fact_single"),
        ('Sure! {"label": "reasoning", "reason": "it follows"}', "reasoning"),
        ('{"label": "summary", "reason": "the context lists sev', "summary"),
        ('json {"label": "summary", "reason": "cut', "summary"),
        ('"unanswerable".', "unanswerable"),
    ],
)
def test_a_reply_that_names_one_label_is_read(reply: str, label: str) -> None:
    assert parse_label_reply(reply).label == label


@pytest.mark.parametrize(
    "reply",
    ['{"label": "factual"}', "no idea", '{"label": "summ', '{"reason": "no label"}', ""],
)
def test_a_reply_that_names_no_label_is_refused(reply: str) -> None:
    with pytest.raises(ValueError):
        parse_label_reply(reply)


def test_squad_pairs_are_labelled_with_samples_and_reruns_ask_nothing(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    (tmp_path / "squad.json").write_text(json.dumps(SQUAD))
    llm_server.responder = _responder
    args = ("label", "--input", "squad.json", "--llm", "openai:labeller", "--samples", "3")
    result = ragaudit(*args, cwd=tmp_path, env=_env(llm_server))
    assert result.returncode == 0, result.stderr
    got = _labels(tmp_path)
    assert len(got) == 9  # three pairs, three sampled raters
    by = {(r.pair_id, r.rater): r for r in got}
    assert by["a1", "openai:labeller:default#1"].label == "fact_single"
    assert by["a2", "openai:labeller:default#3"].label == "summary"  # salvaged from a cut reply
    assert by["a2", "openai:labeller:default#3"].reason.startswith("a list of the")
    assert by["a3", "openai:labeller:default#2"].label == "unanswerable"
    samples = [r for r in llm_server.requests if "Who named" in r["messages"][1]["content"]]
    assert sorted(r["seed"] for r in samples) == [0, 1, 2]
    assert {r["temperature"] for r in samples} == {0.7}
    assert "Fleiss' kappa over 3 raters" in result.stdout
    # The set flags a3 impossible, and it is labelled unanswerable: recall 1 of 1.
    assert "labelled unanswerable: 1.00" in result.stdout
    asked = llm_server.request_count
    again = ragaudit(*args, cwd=tmp_path, env=_env(llm_server))
    assert again.returncode == 0, again.stderr
    assert llm_server.request_count == asked  # every reply came from the cache
    assert _labels(tmp_path) == got


def test_a_reply_that_stays_unusable_is_undecided_and_counted(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    rows = [{"id": "b1", "context": "The Rhine is long.", "question": "Is it long?"}]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    llm_server.responder = _responder
    result = ragaudit(
        "label", "--input", "pairs.jsonl", "--llm", "openai:labeller", cwd=tmp_path,
        env=_env(llm_server),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (record,) = _labels(tmp_path)
    assert record.label is None
    assert "no valid reply after 2 attempts (the last two the same)" in record.reason
    assert llm_server.request_count == 2  # asked, re-asked, the same reply: never guessed
    assert "undecided" in result.stdout and "openai:labeller:default 1" in result.stdout
    assert "0 of 1 pairs with a consensus" in result.stdout
    # Issue 41 item 6: a rerun replays the unusable replies from the cache (asks nothing);
    # --retry-failed asks for them again.
    args = ("label", "--input", "pairs.jsonl", "--llm", "openai:labeller")
    again = ragaudit(*args, cwd=tmp_path, env=_env(llm_server))
    assert again.returncode == 0, again.stderr
    assert llm_server.request_count == 2 and _labels(tmp_path) == [record]
    retried = ragaudit(*args, "--retry-failed", cwd=tmp_path, env=_env(llm_server))
    assert retried.returncode == 0, retried.stderr
    assert llm_server.request_count == 4  # the stored reply and its re-ask, asked anew


def test_human_label_files_are_raters_and_bad_ones_are_refused(tmp_path: Path) -> None:
    (tmp_path / "squad.json").write_text(json.dumps(SQUAD))
    (tmp_path / "ann.csv").write_text("id,label\na1,fact_single\na2,summary\na3,unanswerable\n")
    (tmp_path / "bob.jsonl").write_text(
        "".join(
            json.dumps({"id": i, "label": lab}) + "\n"
            for i, lab in (("a1", "fact_single"), ("a2", "reasoning"), ("a3", "unanswerable"))
        )
    )
    ok = ragaudit(
        "label", "--input", "squad.json", "--no-llm", "--human", "ann.csv", "--human",
        "bob.jsonl", cwd=tmp_path,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert {r.rater for r in _labels(tmp_path)} == {"human:ann", "human:bob"}
    assert "2 of 3 pairs with a consensus" in ok.stdout  # a2 ties
    (tmp_path / "bad.csv").write_text("id,label\na1,factoid\n")
    bad = ragaudit("label", "--input", "squad.json", "--no-llm", "--human", "bad.csv", cwd=tmp_path)
    assert bad.returncode != 0
    assert "bad.csv:2: label 'factoid' is not one of" in bad.stderr
    assert "Traceback" not in bad.stderr
    (tmp_path / "other.csv").write_text("id,label\nzz,summary\n")
    other = ragaudit(
        "label", "--input", "squad.json", "--no-llm", "--human", "other.csv", cwd=tmp_path
    )
    assert other.returncode != 0 and "not among the pairs" in other.stderr
    assert len(_labels(tmp_path)) == 6  # the refused runs wrote nothing


def test_a_broken_input_is_one_line_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "squad.json").write_text('{"data": [')
    result = ragaudit("label", "--input", "squad.json", "--no-llm", cwd=tmp_path)
    assert result.returncode != 0
    assert "squad.json:1: not valid JSON" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs" / "default" / "labels.jsonl").exists()


def test_the_runs_dataset_is_labelled_and_the_labels_flow_into_it(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    (tmp_path / "docs.json").write_text(json.dumps({"d1": "The Rhine is 1,230 km long."}))
    (tmp_path / "ragaudit.yaml").write_text("corpus:\n  path: docs.json\n")
    root = tmp_path / "runs" / "default"
    queries = [
        QueryRecord(query_id="q1", group_id="g1", variant="short", query="How long is the Rhine?",
                    reference=Reference.from_values([1230]), gold_ids=["d1"]),
        QueryRecord(query_id="q2", group_id="g2", variant="short", query="Who named the Rhine?",
                    reference=Reference.from_values([]), gold_ids=[]),
        QueryRecord(query_id="q3", group_id="g3", variant="short", query="Who named the Rhine?",
                    reference=Reference.from_values(["x"]), gold_ids=["d1"], label="summary",
                    source="document"),
    ]  # fmt: skip
    write_jsonl_atomic(root / "dataset.jsonl", queries)
    llm_server.responder = _responder
    result = ragaudit("label", "--llm", "openai:labeller", cwd=tmp_path, env=_env(llm_server))
    assert result.returncode == 0, result.stderr
    assert "1 queries not labelled: no document holds the answer" in result.stderr
    after = {q.query_id: q for q in read_jsonl(root / "dataset.jsonl", QueryRecord)}
    assert after["q1"].label == "fact_single"
    assert after["q2"].label is None
    assert after["q3"].label == "summary"  # generated for this label: kept
    assert "1 kept the label they were generated for" in result.stdout
    context = llm_server.requests[0]["messages"][1]["content"]
    assert "The Rhine is 1,230 km long." in context
