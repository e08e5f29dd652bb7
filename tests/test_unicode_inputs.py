"""Text that is not Unicode (issue 37, second hostile pass, finding 7): a lone surrogate
escape in a user's JSON or JSON Lines file (a question set, a label file, a corpus) is one
line naming the file, the line and the field, never a traceback where the string next
goes; valid escapes (pairs, escaped backslashes) are read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragaudit.documents.pairs import read_input
from ragaudit.errors import UserError
from ragaudit.records.io import (
    RecordFileError,
    iter_jsonl_dicts,
)
from ragaudit.steps.label import read_human_labels
from ragaudit.systems.corpus import CorpusError, load_corpus
from tests.support.cli import ragaudit
from tests.support.hostile_files import RUN, one_line_error, squad
from tests.support.scripted_llm_server import ScriptedLLMServer

# -- finding 7: text that is not Unicode -------------------------------------------------------

LONE = "What is the capital of France? \\ud800"  # a JSON escape, written as is


def _raw_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _pair_line(question: str = "Q?", context: str = "C.", answer: str = "x", id_: str = "a") -> str:
    # Built by hand: json.dumps would escape the backslash of the surrogate escape.
    return (
        f'{{"id": "{id_}", "context": "{context}", "question": "{question}", "answer": "{answer}"}}'
    )


def test_a_lone_surrogate_in_an_imported_jsonl_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "ragaudit.yaml").write_text("run: {name: default}\n")
    _raw_jsonl(tmp_path / "set.jsonl", [_pair_line(id_="b"), _pair_line(question=LONE)])
    result = ragaudit("generate", "--import", "set.jsonl", cwd=tmp_path)
    one_line_error(result, "set.jsonl:2: question: not valid Unicode text")
    assert not (tmp_path / RUN / "dataset.jsonl").exists()
    result = ragaudit("label", "--input", "set.jsonl", "--no-llm", "--human", "x", cwd=tmp_path)
    one_line_error(result, "set.jsonl:2: question: not valid Unicode text")


def test_a_lone_surrogate_in_a_squad_file_names_its_line_and_field(tmp_path: Path) -> None:
    (tmp_path / "ragaudit.yaml").write_text("run: {name: default}\n")
    text = json.dumps(squad("Paris is the capital."), indent=1).replace(
        "Paris is the capital.", "Paris is \\udc80 the capital."
    )
    (tmp_path / "set.json").write_text(text)
    line = next(n for n, s in enumerate(text.splitlines(), 1) if "\\udc80" in s)
    result = ragaudit("generate", "--import", "set.json", cwd=tmp_path)
    one_line_error(
        result, f"set.json:{line}: data[0].paragraphs[0].context: not valid Unicode text"
    )


def test_a_lone_surrogate_in_a_human_label_file_is_one_line(tmp_path: Path) -> None:
    path = _raw_jsonl(
        tmp_path / "ann.jsonl",
        ['{"id": "a", "label": "summary"}', '{"id": "b", "label": "summary", "reason": "\\udfff"}'],
    )
    with pytest.raises(UserError, match=r"ann.jsonl:2: reason: not valid Unicode text"):
        read_human_labels(path, {"a", "b"})


@pytest.mark.parametrize(
    ("name", "content", "where"),
    [
        (
            "c.jsonl",
            '{"id": "d1", "text": "ok"}\n{"id": "d2", "text": "bad \\ud834"}\n',
            ":2: text",
        ),
        ("c.json", '{\n "d1": "ok",\n "d2": "bad \\ud834"\n}\n', ":3: d2"),
        ("c.json", '[\n {"id": "d1",\n  "text": "\\uDBFF"}\n]\n', ":3: [0].text"),
    ],
)
def test_a_lone_surrogate_in_a_corpus_is_one_line(
    tmp_path: Path, name: str, content: str, where: str
) -> None:
    (tmp_path / name).write_text(content)
    with pytest.raises(CorpusError, match="not valid Unicode text") as caught:
        load_corpus(tmp_path / name)
    assert f"{name}{where}: not valid Unicode text" in str(caught.value)


def test_a_lone_surrogate_in_a_corpus_stops_generate_documents(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    text = "The harbour ferries cross at dawn and again at dusk \\ud834 every day of the week."
    (tmp_path / "c.jsonl").write_text(f'{{"id": "d1", "text": "{text}"}}\n')
    (tmp_path / "ragaudit.yaml").write_text(
        "run: {name: default}\ncorpus: {path: c.jsonl}\n"
        f"llm: {{model: 'openai:m', base_url: '{llm_server.base_url}'}}\n"
    )
    result = ragaudit("generate", "--documents", cwd=tmp_path, env={"OPENAI_API_KEY": "sk-t-0"})
    one_line_error(result, "c.jsonl:1: text: not valid Unicode text")
    assert llm_server.request_count == 0


@pytest.mark.parametrize(
    "text",
    [
        "an emoji escaped as a pair \\ud83d\\ude00",
        "a path C:\\\\ud800 (an escaped backslash, then letters)",
        "a plain é and 😀",
    ],
)
def test_valid_text_with_escapes_is_read(tmp_path: Path, text: str) -> None:
    path = _raw_jsonl(tmp_path / "set.jsonl", [_pair_line(question=text)])
    (pair,) = read_input(path).pairs
    assert pair.question == json.loads(f'"{text}"')
    (tmp_path / "c.json").write_text(f'{{"d": "{text}"}}')
    assert load_corpus(tmp_path / "c.json")[0].text == json.loads(f'"{text}"')


def test_a_lone_surrogate_in_a_records_file_is_a_record_file_error(tmp_path: Path) -> None:
    path = _raw_jsonl(tmp_path / "r.jsonl", ['{"query_id": "q1", "response": "x \\udc00"}'])
    with pytest.raises(RecordFileError, match=r"r.jsonl:1: response: not valid Unicode"):
        list(iter_jsonl_dicts(path))
    with pytest.raises(UserError, match="not valid Unicode"):
        read_input(_raw_jsonl(tmp_path / "p.jsonl", [_pair_line(id_="\\ud800")]))
