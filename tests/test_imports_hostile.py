"""Hostile input files for the imports and the corpus (issue 37, items 7-12, 14-16, 21, 22,
24): what a user's file holds is either read as it means or refused in one line that says
what and where, with exit 2 and nothing written; nothing is lost or paired silently."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragaudit.records.io import (
    atomic_write_json,
    atomic_write_text,
    export_parquet,
    iter_jsonl_dicts,
    write_jsonl_atomic,
)
from ragaudit.records.models import QueryRecord, Reference
from ragaudit.systems.corpus import CorpusError, load_corpus
from tests.support.cli import ragaudit
from tests.support.scripted_llm_server import ScriptedLLMServer

RUN = Path("runs/default")


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _one_line_error(result: Any, *expected: str) -> None:
    """Exit 2, one line on stderr holding every ``expected`` piece, no traceback."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    for piece in expected:
        assert piece in result.stderr, result.stderr


def _squad(*articles: tuple[str, str, list[dict[str, Any]]]) -> dict[str, Any]:
    """SQuAD JSON of (title, context, qas) articles, one paragraph each."""
    return {
        "version": "v2.0",
        "data": [
            {"title": title, "paragraphs": [{"context": context, "qas": qas}]}
            for title, context, qas in articles
        ],
    }


def _qa(qid: str, question: Any, answer: Any = "x", **extra: Any) -> dict[str, Any]:
    return {"id": qid, "question": question, "answers": [{"text": answer}], **extra}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with a run whose dataset already holds one SQL question."""
    (tmp_path / "ragaudit.yaml").write_text("run: {name: default}\n")
    (tmp_path / RUN).mkdir(parents=True)
    query = QueryRecord(
        query_id="s1",
        group_id="g1",
        variant="short",
        query="How many?",
        reference=Reference.from_values([3]),
        source="sql",
    )
    write_jsonl_atomic(tmp_path / RUN / "dataset.jsonl", [query])
    return tmp_path


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file of a run directory but its lock file (which says who held it last)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.name != ".lock"
    }


# -- item 8: a bad last line of an input file ---------------------------------------------


def _torn(path: Path, rows: list[dict[str, Any]]) -> Path:
    """``rows`` as JSON Lines and a last line that is not JSON, without its newline."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"id": "f", "conte')
    return path


def test_a_bad_last_line_of_a_corpus_loses_no_document(tmp_path: Path) -> None:
    corpus = _torn(tmp_path / "docs.jsonl", [{"id": "a", "text": "Alpha."}])
    with pytest.raises(CorpusError, match=r"docs\.jsonl:2: not valid JSON"):
        load_corpus(corpus)


def test_the_appenders_torn_tail_is_still_skipped(tmp_path: Path) -> None:
    # ragaudit's own appended files keep their rule: a torn last line is a killed append.
    path = _torn(tmp_path / "responses.jsonl", [{"query_id": "q1"}])
    assert [row for _, row in iter_jsonl_dicts(path)] == [{"query_id": "q1"}]


EDIT_CONFIG = """\
run: {name: default}
corpus: {path: runs/default/imported/contexts.jsonl}
systems:
  - name: ret
    generator: none
    retriever: keyword
    k: 1
"""


# -- item 12: duplicate document ids -------------------------------------------------------


def _documents_project(tmp_path: Path, server: ScriptedLLMServer, corpus: str) -> dict[str, str]:
    (tmp_path / "ragaudit.yaml").write_text(
        f"llm:\n  model: openai:scripted\ncorpus:\n  path: {corpus}\n"
    )
    return {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-t-0000000000"}


LONG = "Alder Bridge is being built in Norhaven and work on it began in May of the year 2021."


def test_duplicate_document_ids_are_refused_naming_both(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    _write_jsonl(
        tmp_path / "docs.jsonl",
        [
            {"id": "d", "text": LONG},
            {"id": "e", "text": LONG},
            {"id": "d", "text": "Other " + LONG},
        ],
    )
    env = _documents_project(tmp_path, llm_server, "docs.jsonl")
    result = ragaudit("generate", "--documents", "--size", "1", cwd=tmp_path, env=env)
    _one_line_error(result, "docs.jsonl", "'d'", "line 1", "line 3")
    assert llm_server.request_count == 0
    (tmp_path / "docs.json").write_text(
        json.dumps([{"id": 7, "text": LONG}, {"id": "7", "text": LONG}])
    )
    with pytest.raises(CorpusError, match=r"docs\.json: document id '7' .*item 1.*item 2"):
        load_corpus(tmp_path / "docs.json")
    (tmp_path / "obj.json").write_text('{"a": "one", "b": "two", "a": "three"}')
    with pytest.raises(CorpusError, match=r"obj\.json: document id 'a' appears twice"):
        load_corpus(tmp_path / "obj.json")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a.txt").write_text(LONG)
    (folder / "a.md").write_text(LONG)
    with pytest.raises(CorpusError, match=r"document id 'a' .*a\.md.*a\.txt"):
        load_corpus(folder)


# -- items 14, 15, 16: tracebacks that become one line ------------------------------------


def test_a_latin1_text_file_in_a_corpus_folder_is_one_line(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "good.txt").write_text(LONG)
    (folder / "sub" / "caf\u00e9.txt").write_bytes(("Le caf\u00e9 " + LONG).encode("latin-1"))
    env = _documents_project(tmp_path, llm_server, "docs")
    result = ragaudit("generate", "--documents", "--size", "1", cwd=tmp_path, env=env)
    _one_line_error(result, "caf\u00e9.txt:1: not UTF-8 text (byte 0xe9)")
    assert llm_server.request_count == 0
    (tmp_path / "docs.json").write_bytes(
        json.dumps({"a": "caf\u00e9"}, ensure_ascii=False).encode("latin-1")
    )
    with pytest.raises(CorpusError, match=r"docs\.json:1: not UTF-8 text"):
        load_corpus(tmp_path / "docs.json")


# -- item 21: an empty corpus --------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content"), [("docs.json", "{}"), ("docs.json", "[]"), ("docs.jsonl", "\n")]
)
def test_an_empty_corpus_is_called_empty(
    tmp_path: Path, llm_server: ScriptedLLMServer, name: str, content: str
) -> None:
    (tmp_path / name).write_text(content)
    env = _documents_project(tmp_path, llm_server, name)
    result = ragaudit("generate", "--documents", "--size", "1", cwd=tmp_path, env=env)
    _one_line_error(result, f"{name}: the corpus holds no documents")
    assert "0 chunks" not in result.stderr


# -- item 22: output files honour the umask ------------------------------------------------


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_atomic_writer_honours_the_umask(tmp_path: Path, umask: None) -> None:
    query = QueryRecord(
        query_id="q", group_id="g", variant="v", query="Q?", reference=Reference.from_values([1])
    )
    writers = {
        "a.txt": lambda p: atomic_write_text(p, "x"),
        "a.json": lambda p: atomic_write_json(p, {"a": 1}),
        "a.jsonl": lambda p: write_jsonl_atomic(p, [query]),
        "a.parquet": lambda p: export_parquet([query], p),
    }
    for name, write in writers.items():
        write(tmp_path / name)
        assert _mode(tmp_path / name) == 0o644, name
    os.umask(0o027)
    for name, write in writers.items():
        write(tmp_path / f"new-{name}")
        assert _mode(tmp_path / f"new-{name}") == 0o640, name
        # A file the user made private stays private when it is written again.
        (tmp_path / name).chmod(0o600)
        write(tmp_path / name)
        assert _mode(tmp_path / name) == 0o600, name


def test_an_imported_dataset_is_readable_by_the_group(project: Path, umask: None) -> None:
    (project / RUN / "dataset.jsonl").unlink()
    pairs = _write_jsonl(
        project / "p.jsonl", [{"id": "a", "context": "C.", "question": "Q?", "answer": "x"}]
    )
    assert ragaudit("generate", "--import", str(pairs), cwd=project).returncode == 0
    assert _mode(project / RUN / "dataset.jsonl") == 0o644
    assert _mode(project / RUN / "imported/contexts.jsonl") == 0o644
