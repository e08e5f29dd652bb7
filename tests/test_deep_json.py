"""JSON nested deeper than the parser follows (200,000 '[') is one line naming the file and
line, exit 2, wherever a file is read: a SQuAD file, an imported or labelled JSON Lines
line, a corpus, a candidate's judgements read by the gate; never a RecursionError traceback
with exit 1, which CI reads as the gate's FAIL (issue 37, third hostile pass, item 10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragaudit.config import LLMConfig
from ragaudit.llm import make_llm, user
from ragaudit.records.io import RecordFileError, iter_jsonl_dicts
from ragaudit.systems.corpus import CorpusError, load_corpus
from tests.support.cli import ragaudit
from tests.support.hostile_files import one_line_error
from tests.support.judged_runs import judged_run, verdicts
from tests.support.scripted_llm_server import Reply, ScriptedLLMServer

DEEP = "[" * 200_000
GOOD = {"id": "a", "context": "Paris is in France.", "question": "Where is Paris?", "answer": "x"}


def test_parse_json_reports_deep_nesting_as_a_decode_error_at_its_line() -> None:
    from ragaudit.records.io import parse_json

    text = '{"data":\n [1,\n  ' + DEEP + "\n}"
    with pytest.raises(json.JSONDecodeError) as caught:
        parse_json(text)
    assert caught.value.lineno == 3 and "nested too deeply" in caught.value.msg
    assert parse_json('{"a": [[1]]}') == {"a": [[1]]}


def test_a_deep_jsonl_line_is_a_record_file_error_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + DEEP + "\n" + json.dumps(GOOD) + "\n")
    for torn in (True, False):  # not the last line: an error either way
        with pytest.raises(
            RecordFileError,
            match=r"r\.jsonl:2: not valid JSON: arrays or objects nested too deeply",
        ):
            list(iter_jsonl_dicts(path, skip_torn_tail=torn))


@pytest.mark.parametrize(
    ("name", "content", "where"),
    [
        ("c.jsonl", '{"id": "d1", "text": "ok"}\n' + DEEP + "\n", "c.jsonl:2"),
        ("c.json", '{\n "d1": "ok",\n "d2": ' + DEEP + "\n}\n", "c.json:3"),
    ],
)
def test_a_deep_corpus_is_one_line(tmp_path: Path, name: str, content: str, where: str) -> None:
    (tmp_path / name).write_text(content)
    with pytest.raises(CorpusError, match="nested too deeply") as caught:
        load_corpus(tmp_path / name)
    assert where in str(caught.value) and "\n" not in str(caught.value)


def test_import_and_label_refuse_deep_json_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "ragaudit.yaml").write_text("run: {name: default}\n")
    (tmp_path / "set.jsonl").write_text(json.dumps(GOOD) + "\n" + '{"id": ' + DEEP + "\n")
    (tmp_path / "squad.json").write_text('{"version": "v2.0",\n "data": ' + DEEP + "\n}")
    for name, where in (("set.jsonl", "set.jsonl:2"), ("squad.json", "squad.json:2")):
        result = ragaudit("generate", "--import", name, cwd=tmp_path)
        one_line_error(result, where, "nested too deeply")
        result = ragaudit("label", "--input", name, "--no-llm", "--human", "x", cwd=tmp_path)
        one_line_error(result, where, "nested too deeply")
    assert not (tmp_path / "runs/default/dataset.jsonl").exists()


def test_the_gate_refuses_a_deep_judgements_line_with_exit_2(tmp_path: Path) -> None:
    v = verdicts(5, 0.7, groups=20)
    baseline = judged_run(tmp_path / "base", {"rag": v})
    candidate = judged_run(tmp_path / "cand", {"rag": v})
    judgements = candidate / "judgements" / "rag.jsonl"
    judgements.write_text(judgements.read_text() + DEEP + "\n")
    result = ragaudit("gate", str(baseline), str(candidate), cwd=tmp_path)
    one_line_error(result, f"{judgements}:81", "nested too deeply")


# -- what an LLM server sends: a body, or a reply's text, nested too deeply ------------------


@pytest.mark.parametrize("transport", ["aiohttp", "openai-sdk"])
def test_a_deep_reply_body_is_a_malformed_reply_asked_again(
    transport: str, llm_server: ScriptedLLMServer
) -> None:
    llm_server.enqueue(Reply(body="[" * 60_000))
    config = LLMConfig(
        model="openai:m", base_url=llm_server.base_url, api_key="k", transport=transport
    )
    with make_llm(config) as client:
        client.backend.backoff_base_s = 0.01
        assert client.complete([user("q")]).text == "echo: q"  # asked again, then answered
    assert llm_server.request_count == 2


def test_a_deep_json_reply_text_is_re_asked_not_a_traceback(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    """label reads a label from the reply's JSON: a reply of 60,000 '[' is no label, asked
    again and then undecided with the reason, as any malformed reply."""
    for _ in range(2):  # the same reply twice: a greedy model is not asked a third time
        llm_server.enqueue(Reply(content="[" * 60_000))
    (tmp_path / "pairs.jsonl").write_text(json.dumps(GOOD) + "\n")
    (tmp_path / "ragaudit.yaml").write_text(
        f"llm: {{model: 'openai:m', base_url: '{llm_server.base_url}'}}\n"
    )
    result = ragaudit("label", "--input", "pairs.jsonl", cwd=tmp_path, env={"OPENAI_API_KEY": "x"})
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-1500:]
    (record,) = [json.loads(line) for line in (tmp_path / "runs/default/labels.jsonl").open()]
    assert record["label"] is None and "nested too deeply" in record["reason"]
    assert llm_server.request_count == 2


def test_a_deep_configuration_file_is_one_line(tmp_path: Path) -> None:
    """The same for YAML: ragaudit.yaml (and a templates file) nested some thousand deep."""
    (tmp_path / "ragaudit.yaml").write_text("run: " + DEEP + "\n")
    result = ragaudit("doctor", "--skip-llm", cwd=tmp_path)
    one_line_error(result, "ragaudit.yaml: invalid YAML: nested too deeply to read")
