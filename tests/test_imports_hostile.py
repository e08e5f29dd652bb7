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

from ragaudit.analysis.agreement import label_figures, unlabelled_pairs
from ragaudit.documents.pairs import PairsError, read_input
from ragaudit.records.io import (
    atomic_write_json,
    atomic_write_text,
    export_parquet,
    iter_jsonl_dicts,
    write_jsonl_atomic,
)
from ragaudit.records.models import LabelPair, LabelRecord, QueryRecord, Reference
from ragaudit.systems.corpus import CorpusError, load_corpus
from tests.support.cli import ragaudit
from tests.support.hostile_files import one_line_error, rows, write_jsonl
from tests.support.scripted_llm_server import ScriptedLLMServer

RUN = Path("runs/default")


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


# -- item 7: one context id, two texts ----------------------------------------------------


def test_squad_articles_sharing_a_title_keep_each_text(project: Path) -> None:
    squad = _squad(
        (
            "Rivers",
            "The Rhine is 1,230 km long.",
            [_qa("r1", "How long is the Rhine?", "1,230 km")],
        ),
        (
            "Rivers",
            "The Danube flows into the Black Sea.",
            [_qa("r2", "Where does it flow?", "the Black Sea")],
        ),
        ("Rivers", "The Rhine is 1,230 km long.", [_qa("r3", "Is the Rhine long?", "yes")]),
    )
    (project / "squad.json").write_text(json.dumps(squad))
    result = ragaudit("generate", "--import", "squad.json", cwd=project)
    assert result.returncode == 0, result.stderr
    texts = {r["id"]: r["text"] for r in rows(project / RUN / "imported/contexts.jsonl")}
    imported = {
        r["group_id"]: r for r in rows(project / RUN / "dataset.jsonl") if r["source"] == "imported"
    }
    gold = {g: texts[r["gold_ids"][0]] for g, r in imported.items()}
    assert gold == {
        "imp-r1": "The Rhine is 1,230 km long.",
        "imp-r2": "The Danube flows into the Black Sea.",
        "imp-r3": "The Rhine is 1,230 km long.",
    }
    # label --input reads the file the same way: each pair is labelled against its own text.
    (project / "ann.csv").write_text("id,label\nr1,fact_single\nr2,fact_single\nr3,reasoning\n")
    result = ragaudit(
        "label", "--input", "squad.json", "--no-llm", "--human", "ann.csv", cwd=project
    )
    assert result.returncode == 0, result.stderr
    texts = {r["id"]: r["text"] for r in rows(project / RUN / "labels/contexts.jsonl")}
    pairs = {
        r["pair_id"]: texts[r["gold_ids"][0]] for r in rows(project / RUN / "labels/pairs.jsonl")
    }
    assert pairs["r2"] == "The Danube flows into the Black Sea."
    assert pairs["r1"] == pairs["r3"] == "The Rhine is 1,230 km long."


def test_one_context_id_with_two_texts_is_refused(project: Path) -> None:
    pairs = write_jsonl(
        project / "pairs.jsonl",
        [
            {
                "id": "a",
                "context_id": "c1",
                "context": "Ferries cross at dawn.",
                "question": "When?",
                "answer": "at dawn",
            },
            {
                "id": "b",
                "context_id": "c1",
                "context": "Ferries cross at dawn.",
                "question": "What?",
                "answer": "ferries",
            },
            {
                "id": "c",
                "context_id": "c1",
                "context": "Cranes unload cargo.",
                "question": "Who?",
                "answer": "cranes",
            },
        ],
    )
    before = _snapshot(project / RUN)
    result = ragaudit("generate", "--import", str(pairs), cwd=project)
    one_line_error(result, "pairs.jsonl:3", "context_id 'c1'", "line 1")
    assert _snapshot(project / RUN) == before
    result = ragaudit("label", "--input", str(pairs), "--no-llm", "--human", "x.csv", cwd=project)
    one_line_error(result, "pairs.jsonl:3", "context_id 'c1'")
    assert not (project / RUN / "labels.jsonl").exists()
    assert not (project / RUN / "labels").exists()


# -- item 8: a bad last line of an input file ---------------------------------------------


def _torn(path: Path, rows: list[dict[str, Any]]) -> Path:
    """``rows`` as JSON Lines and a last line that is not JSON, without its newline."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"id": "f", "conte')
    return path


def test_a_bad_last_line_of_an_imported_file_is_an_error_with_its_line(project: Path) -> None:
    rows = [
        {"id": str(i), "context": f"Text {i}.", "question": f"Q{i}?", "answer": "a"}
        for i in range(5)
    ]
    pairs = _torn(project / "pairs.jsonl", rows)
    before = _snapshot(project / RUN)
    result = ragaudit("generate", "--import", str(pairs), cwd=project)
    one_line_error(result, "pairs.jsonl:6: not valid JSON")
    assert _snapshot(project / RUN) == before
    result = ragaudit("label", "--input", str(pairs), "--no-llm", "--human", "x.csv", cwd=project)
    one_line_error(result, "pairs.jsonl:6: not valid JSON")


def test_a_bad_last_line_of_a_human_label_file_is_an_error(project: Path) -> None:
    write_jsonl(project / "pairs.jsonl", [{"id": "a", "context": "C.", "question": "Q?"}])
    _torn(project / "ann.jsonl", [{"id": "a", "label": "fact_single"}])
    result = ragaudit(
        "label", "--input", "pairs.jsonl", "--no-llm", "--human", "ann.jsonl", cwd=project
    )
    one_line_error(result, "ann.jsonl:2: not valid JSON")


def test_a_bad_last_line_of_a_corpus_loses_no_document(tmp_path: Path) -> None:
    corpus = _torn(tmp_path / "docs.jsonl", [{"id": "a", "text": "Alpha."}])
    with pytest.raises(CorpusError, match=r"docs\.jsonl:2: not valid JSON"):
        load_corpus(corpus)


def test_the_appenders_torn_tail_is_still_skipped(tmp_path: Path) -> None:
    # ragaudit's own appended files keep their rule: a torn last line is a killed append.
    path = _torn(tmp_path / "responses.jsonl", [{"query_id": "q1"}])
    assert [row for _, row in iter_jsonl_dicts(path)] == [{"query_id": "q1"}]


# -- item 9: an edited question is a new query --------------------------------------------

EDIT_CONFIG = """\
run: {name: default}
corpus: {path: runs/default/imported/contexts.jsonl}
systems:
  - name: ret
    generator: none
    retriever: keyword
    k: 1
"""


def test_reimporting_an_edited_question_asks_and_judges_it_again(tmp_path: Path) -> None:
    (tmp_path / "ragaudit.yaml").write_text(EDIT_CONFIG)
    first = {
        "id": "h1",
        "context": "Ferries cross the harbour at dawn.",
        "question": "When do ferries cross?",
        "answer": "at dawn",
    }
    second = {
        "id": "h2",
        "context": "The orchard grows apples.",
        "question": "What does the orchard grow?",
        "answer": "apples",
    }
    pairs = write_jsonl(tmp_path / "pairs.jsonl", [first, second])
    # The corpus is the contexts the import itself writes: the first import works.
    assert ragaudit("generate", "--import", str(pairs), cwd=tmp_path).returncode == 0
    assert ragaudit("run", cwd=tmp_path).returncode == 0
    assert ragaudit("judge", "--no-llm", cwd=tmp_path).returncode == 0
    old = {r["group_id"]: r["query_id"] for r in rows(tmp_path / RUN / "dataset.jsonl")}
    # The same id, a new question that the context does not answer.
    edited = {**first, "question": "Who owns the ferries?", "answerable": False}
    del edited["answer"]
    write_jsonl(pairs, [edited, second])
    result = ragaudit("generate", "--import", str(pairs), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "1 questions changed or left the set" in result.stderr
    new = {r["group_id"]: r["query_id"] for r in rows(tmp_path / RUN / "dataset.jsonl")}
    assert new["imp-h1"] != old["imp-h1"] and new["imp-h2"] == old["imp-h2"]
    for folder in ("responses", "judgements"):
        ids = [r["query_id"] for r in rows(tmp_path / RUN / folder / "ret.jsonl")]
        assert ids == [old["imp-h2"]]  # the edited question's old records are gone
    result = ragaudit("run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "│ ret    │         1 │            1 │" in result.stdout  # asked now, already done
    result = ragaudit("judge", "--no-llm", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "judged 1 now, 1 before" in result.stdout
    # Importing the same file again changes nothing and removes nothing.
    result = ragaudit("generate", "--import", str(pairs), cwd=tmp_path)
    assert result.returncode == 0 and "changed or left" not in result.stderr
    assert len(rows(tmp_path / RUN / "responses/ret.jsonl")) == 2


# -- item 10: a failed import writes nothing ----------------------------------------------


def test_a_failed_import_leaves_every_file_as_it_was(project: Path) -> None:
    pairs = write_jsonl(
        project / "pairs.jsonl", [{"id": "a", "context": "C.", "question": "Q?", "answer": "x"}]
    )
    assert ragaudit("generate", "--import", str(pairs), cwd=project).returncode == 0
    write_jsonl(pairs, [{"id": "b", "context": "D.", "question": "R?", "answer": "y"}])
    (project / "ragaudit.yaml").write_text("run: {name: default}\ncorpus: {path: missing.jsonl}\n")
    before = _snapshot(project / RUN)
    result = ragaudit("generate", "--import", str(pairs), cwd=project)
    one_line_error(result, "missing.jsonl")
    after = _snapshot(project / RUN)
    assert {k: v for k, v in after.items() if k != "provenance.json"} == {
        k: v for k, v in before.items() if k != "provenance.json"
    }


# -- item 11: values read by their meaning -------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "impossible"),
    [(False, False), ("false", False), ("False", False), ("true", True), (True, True)],
)
def test_squad_is_impossible_is_read_by_its_meaning(
    tmp_path: Path, flag: Any, impossible: bool
) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_squad(("T", "Ctx.", [_qa("q", "Q?", "x", is_impossible=flag)]))))
    (pair,) = read_input(path).pairs
    assert pair.impossible is impossible


@pytest.mark.parametrize(
    ("answerable", "impossible"), [("false", True), ("TRUE", False), (False, True), (None, None)]
)
def test_jsonl_answerable_is_read_by_its_meaning(
    tmp_path: Path, answerable: Any, impossible: bool | None
) -> None:
    row = {"id": "q", "context": "C.", "question": "Q?", "answer": "x", "answerable": answerable}
    (pair,) = read_input(write_jsonl(tmp_path / "p.jsonl", [row])).pairs
    assert pair.impossible is impossible


@pytest.mark.parametrize("flag", ["no", "", 1, 0, [], "maybe"])
def test_a_flag_that_is_not_true_or_false_is_refused(tmp_path: Path, flag: Any) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_squad(("T", "Ctx.", [_qa("q", "Q?", "x", is_impossible=flag)]))))
    with pytest.raises(PairsError, match=r"question 1: is_impossible: expected true or false"):
        read_input(path)
    row = {"id": "q", "context": "C.", "question": "Q?", "answerable": flag}
    with pytest.raises(PairsError, match=r"p\.jsonl:1: answerable: expected true or false"):
        read_input(write_jsonl(tmp_path / "p.jsonl", [row]))


def test_empty_answers_are_left_out_and_counted(project: Path) -> None:
    lines = [
        {"id": "a", "context": "C.", "question": "Q1?", "answer": ""},
        {"id": "b", "context": "C.", "question": "Q2?", "answer": "   "},
        {"id": "c", "context": "C.", "question": "Q3?", "answer": "kept"},
    ]
    result = ragaudit(
        "generate", "--import", str(write_jsonl(project / "p.jsonl", lines)), cwd=project
    )
    assert result.returncode == 0, result.stderr
    assert "2 questions have no answer" in result.stderr
    imported = [r for r in rows(project / RUN / "dataset.jsonl") if r["source"] == "imported"]
    assert [r["reference"]["values"] for r in imported] == [["kept"]]
    # SQuAD: a blank first answer gives way to the first answer with text.
    path = project / "s.json"
    qas = [
        {"id": "x", "question": "Q?", "answers": [{"text": " "}, {"text": "second"}]},
        {"id": "y", "question": "R?", "answers": [{"text": ""}]},
    ]
    path.write_text(json.dumps(_squad(("T", "Ctx.", qas))))
    answers = {p.pair_id: p.answer for p in read_input(path).pairs}
    assert answers == {"x": "second", "y": None}


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
    write_jsonl(
        tmp_path / "docs.jsonl",
        [
            {"id": "d", "text": LONG},
            {"id": "e", "text": LONG},
            {"id": "d", "text": "Other " + LONG},
        ],
    )
    env = _documents_project(tmp_path, llm_server, "docs.jsonl")
    result = ragaudit("generate", "--documents", "--size", "1", cwd=tmp_path, env=env)
    one_line_error(result, "docs.jsonl", "'d'", "line 1", "line 3")
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


@pytest.mark.parametrize(
    ("qa", "message"),
    [
        (
            {"id": "q", "question": 42, "answers": [{"text": "x"}]},
            "question 1: question: expected text, not 42",
        ),
        (
            {"id": "q", "question": "Q?", "answers": [{"text": 42}]},
            "question 1: answer 1: expected text, not 42",
        ),
        (
            {"id": "q", "question": "Q?", "answers": [{"text": None}]},
            "question 1: answer 1: expected text, not None",
        ),
        ({"id": ["q"], "question": "Q?", "answers": []}, "question 1: id: expected text"),
    ],
)
def test_a_squad_field_of_the_wrong_type_is_one_line(
    project: Path, qa: dict[str, Any], message: str
) -> None:
    (project / "s.json").write_text(json.dumps(_squad(("T", "Ctx.", [qa]))))
    before = _snapshot(project / RUN)
    result = ragaudit("generate", "--import", "s.json", cwd=project)
    one_line_error(result, "s.json: article 1 (T), paragraph 1", message)
    assert _snapshot(project / RUN) == before


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {"id": "q", "context": "C.", "question": 42},
            "p.jsonl:1: question: expected text, not 42",
        ),
        ({"id": "q", "context": ["C."], "question": "Q?"}, "p.jsonl:1: context: expected text"),
        (
            {"id": "q", "context": "C.", "question": "Q?", "answer": {"t": 1}},
            "p.jsonl:1: answer: expected text",
        ),
    ],
)
def test_a_jsonl_field_of_the_wrong_type_is_refused(
    tmp_path: Path, row: dict[str, Any], message: str
) -> None:
    with pytest.raises(PairsError, match=message.replace(".", r"\.").replace("[", r"\[")):
        read_input(write_jsonl(tmp_path / "p.jsonl", [row]))


def test_a_non_utf8_jsonl_file_is_one_line_with_its_line(project: Path) -> None:
    good = json.dumps({"id": "a", "context": "C.", "question": "Q?", "answer": "x"}) + "\n"
    row = {"id": "b", "context": "Caf\u00e9.", "question": "Q?", "answer": "x"}
    bad = json.dumps(row, ensure_ascii=False)
    (project / "p.jsonl").write_bytes((good + bad + "\n").encode("latin-1"))
    before = _snapshot(project / RUN)
    result = ragaudit("generate", "--import", "p.jsonl", cwd=project)
    one_line_error(result, "p.jsonl:2: not UTF-8 text")
    assert _snapshot(project / RUN) == before
    result = ragaudit("label", "--input", "p.jsonl", "--no-llm", "--human", "x.csv", cwd=project)
    one_line_error(result, "p.jsonl:2: not UTF-8 text")


def test_a_utf8_byte_order_mark_is_read(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"id": "a", "context": "C.", "question": "Q?"}\n')
    assert [p.pair_id for p in read_input(path).pairs] == ["a"]


def test_a_latin1_text_file_in_a_corpus_folder_is_one_line(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "good.txt").write_text(LONG)
    (folder / "sub" / "caf\u00e9.txt").write_bytes(("Le caf\u00e9 " + LONG).encode("latin-1"))
    env = _documents_project(tmp_path, llm_server, "docs")
    result = ragaudit("generate", "--documents", "--size", "1", cwd=tmp_path, env=env)
    one_line_error(result, "caf\u00e9.txt:1: not UTF-8 text (byte 0xe9)")
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
    one_line_error(result, f"{name}: the corpus holds no documents")
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
    pairs = write_jsonl(
        project / "p.jsonl", [{"id": "a", "context": "C.", "question": "Q?", "answer": "x"}]
    )
    assert ragaudit("generate", "--import", str(pairs), cwd=project).returncode == 0
    assert _mode(project / RUN / "dataset.jsonl") == 0o644
    assert _mode(project / RUN / "imported/contexts.jsonl") == 0o644


# -- item 24: .ndjson, empty contexts, a human's unlabelled pairs -------------------------


def test_an_ndjson_file_is_read_as_json_lines(project: Path) -> None:
    pairs = write_jsonl(
        project / "p.ndjson", [{"id": "a", "context": "C.", "question": "Q?", "answer": "x"}]
    )
    result = ragaudit("generate", "--import", str(pairs), cwd=project)
    assert result.returncode == 0, result.stderr
    assert "imported 1 questions" in result.stdout


def test_an_empty_squad_context_is_left_out_with_a_warning(project: Path) -> None:
    squad = _squad(
        ("T", "  ", [_qa("e1", "Q1?"), _qa("e2", "Q2?")]),
        ("U", "Ferries cross at dawn.", [_qa("k", "When?", "at dawn")]),
    )
    (project / "s.json").write_text(json.dumps(squad))
    result = ragaudit("generate", "--import", "s.json", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "2 questions left out: their context is empty" in result.stderr
    imported = [r for r in rows(project / RUN / "dataset.jsonl") if r["source"] == "imported"]
    assert [r["group_id"] for r in imported] == ["imp-k"]
    assert read_input(project / "s.json").skipped == {"their context is empty": 2}


def test_a_human_raters_unlabelled_pairs_are_not_called_undecided(project: Path) -> None:
    (project / "s.json").write_text(
        json.dumps(_squad(("T", "Ctx.", [_qa("a", "Q1?"), _qa("b", "Q2?"), _qa("c", "Q3?")])))
    )
    (project / "ann.csv").write_text("id,label\na,fact_single\nb,summary\n")
    (project / "bob.csv").write_text("id,label\na,fact_single\nb,summary\nc,summary\n")
    result = ragaudit(
        "label",
        "--input",
        "s.json",
        "--no-llm",
        "--human",
        "ann.csv",
        "--human",
        "bob.csv",
        cwd=project,
    )
    assert result.returncode == 0, result.stderr
    assert "no usable reply" not in result.stdout
    assert "pairs a rater did not label: human:ann 1" in result.stdout
    pairs = [LabelPair(pair_id=i, gold_ids=["T/000"], question="Q?") for i in "abc"]
    records = [
        LabelRecord(pair_id="a", rater="human:ann", label="fact_single", reason=""),
        LabelRecord(pair_id="b", rater="llm", label=None, reason="no valid reply"),
        LabelRecord(pair_id="a", rater="llm", label="fact_single", reason=""),
    ]
    figures = label_figures(pairs, records)
    assert figures.undecided == {"human:ann": 0, "llm": 1}
    assert unlabelled_pairs(pairs, records) == {"human:ann": 2, "llm": 1}
