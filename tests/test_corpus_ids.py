"""A corpus document's id is text or a whole number, as an imported question's is: any
other JSON value (null, true, a list, a fraction) or an empty id is a one-line error naming
the file and line, never a document named "None", "True", "[1]" or "" (issue 37, third
hostile pass, item 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragaudit.systems.corpus import CorpusError, load_corpus
from tests.support.cli import ragaudit
from tests.support.hostile_files import one_line_error
from tests.support.scripted_llm_server import ScriptedLLMServer

TEXT = "The harbour ferries cross at dawn and again at dusk, every day of the week."


def _jsonl(path: Path, ids: list[Any]) -> Path:
    path.write_text(
        "".join(json.dumps({"id": i, "text": f"{TEXT} {n}"}) + "\n" for n, i in enumerate(ids))
    )
    return path


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (None, "expected text or a whole number, not null"),
        (True, "expected text or a whole number, not true"),
        ([1], "expected text or a whole number, not [1]"),
        (1.0, "expected text or a whole number, not 1.0"),
        ({"a": 1}, 'expected text or a whole number, not {"a": 1}'),
        ("", "empty (every document needs an id)"),
        ("  ", "empty (every document needs an id)"),
    ],
)
def test_a_jsonl_document_id_of_the_wrong_type_is_one_line(
    tmp_path: Path, bad: Any, problem: str
) -> None:
    path = _jsonl(tmp_path / "c.jsonl", [1, bad])
    with pytest.raises(CorpusError) as caught:
        load_corpus(path)
    assert str(caught.value) == f"{path}: line 2: id: {problem}"


def test_a_json_list_document_id_of_the_wrong_type_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps([{"id": "a", "text": TEXT}, {"id": None, "text": TEXT}]))
    with pytest.raises(
        CorpusError, match=r"c\.json: item 2: id: expected text or a whole number, not null"
    ):
        load_corpus(path)


def test_an_empty_key_of_a_json_object_corpus_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"a": TEXT, "": TEXT + " again"}))
    with pytest.raises(CorpusError, match=r"c\.json: '': id: empty \(every document needs an id\)"):
        load_corpus(path)


def test_text_and_whole_number_ids_are_read_as_text(tmp_path: Path) -> None:
    docs = load_corpus(_jsonl(tmp_path / "c.jsonl", [1, "doc-2", -3, "None"]))
    assert [d.id for d in docs] == ["1", "doc-2", "-3", "None"]


def test_generate_documents_stops_on_a_null_document_id_before_asking(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    _jsonl(tmp_path / "c.jsonl", ["d1", None])
    (tmp_path / "ragaudit.yaml").write_text(
        "run: {name: default}\ncorpus: {path: c.jsonl}\n"
        f"llm: {{model: 'openai:m', base_url: '{llm_server.base_url}'}}\n"
    )
    result = ragaudit("generate", "--documents", cwd=tmp_path, env={"OPENAI_API_KEY": "sk-t-0"})
    one_line_error(result, "c.jsonl: line 2: id: expected text or a whole number, not null")
    assert llm_server.request_count == 0
    assert not (tmp_path / "runs/default/dataset.jsonl").exists()
