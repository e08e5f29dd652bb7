"""Corpora, chunking, the keyword and BM25 retrievers, and ranking metrics."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ragaudit.analysis.retrieval_metrics import ndcg_at_k, recall_at_k, reciprocal_rank
from ragaudit.errors import UserError
from ragaudit.systems.corpus import CorpusError, Document, chunk, load_corpus
from ragaudit.systems.retrievers import BM25Retriever, KeywordRetriever

DOCS = {
    "orrin": "The Orrin Footbridge project is managed by Rafferty Dunmore for Orrin Valley "
    "Council.",
    "quay": "Selbeck Quay Extension was delivered for Selbeck Ports Authority in 2023.",
    "viaduct": "Norbury Viaduct Renewal started on 1 March 2023 for Quillfeather Rail.",
}


def test_corpus_formats(tmp_path: Path) -> None:
    (tmp_path / "docs.json").write_text(json.dumps(DOCS))
    (tmp_path / "docs.jsonl").write_text(
        "\n".join(json.dumps({"id": k, "text": v}) for k, v in DOCS.items()) + "\n"
    )
    folder = tmp_path / "folder" / "sub"
    folder.mkdir(parents=True)
    for k, v in DOCS.items():
        (folder / f"{k}.md").write_text(v)
    as_json = load_corpus(tmp_path / "docs.json")
    assert as_json == load_corpus(tmp_path / "docs.jsonl")
    assert [d.id for d in as_json] == list(DOCS)
    from_folder = load_corpus(tmp_path / "folder")
    assert sorted(d.id for d in from_folder) == sorted(f"sub/{k}" for k in DOCS)


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json", "not valid JSON"), ('[{"id": 1}]', "item 1"), ("3", "expected")],
)
def test_bad_corpora_are_one_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "c.json"
    path.write_text(content)
    with pytest.raises(CorpusError, match=message):
        load_corpus(path)
    with pytest.raises(CorpusError, match="no such corpus"):
        load_corpus(tmp_path / "missing.json")


def test_chunks_keep_their_document() -> None:
    doc = Document("d", "one two three four five six seven eight nine ten")
    windows = chunk([doc], "window", size=4, overlap=2)
    assert [c.text for c in windows] == [
        "one two three four",
        "three four five six",
        "five six seven eight",
        "seven eight nine ten",
    ]
    assert {c.doc_id for c in windows} == {"d"}
    paras = chunk([Document("p", "first para\n\n  \nsecond para")], "paragraph")
    assert [c.text for c in paras] == ["first para", "second para"]
    with pytest.raises(UserError, match="overlap"):
        chunk([doc], "window", size=2, overlap=2)


def _chunks():  # type: ignore[no-untyped-def]
    return chunk([Document(k, v) for k, v in DOCS.items()])


def test_keyword_retriever_counts_shared_words() -> None:
    retriever = KeywordRetriever(_chunks())
    assert retriever.retrieve("Orrin Footbridge manager", k=1)[0].doc_id == "orrin"
    top = retriever.retrieve("when did Norbury Viaduct Renewal start", k=2)
    assert top[0].doc_id == "viaduct" and top[0].score == 3.0  # norbury, viaduct, renewal


def test_keyword_retriever_is_fooled_by_wordy_queries() -> None:
    # The paper's weak baseline: common words outvote the one word that matters.
    retriever = KeywordRetriever(_chunks())
    wordy = "for the project that was delivered in 2023 who was it for, the Norbury one"
    assert retriever.retrieve(wordy, k=1)[0].doc_id == "quay"
    assert BM25Retriever(_chunks()).retrieve(wordy, k=1)[0].doc_id == "viaduct"


def test_bm25_ranks_documents_by_their_best_chunk() -> None:
    long_doc = Document("long", "filler words here\n\nSelbeck Quay has a harbour master\n\nmore")
    chunks = chunk([long_doc, *(Document(k, v) for k, v in DOCS.items())], "paragraph")
    hits = BM25Retriever(chunks).retrieve("harbour master at Selbeck Quay", k=3)
    assert hits[0].doc_id == "long" and "harbour" in hits[0].text
    assert len({h.doc_id for h in hits}) == len(hits)  # one hit per document


def test_ranking_metrics() -> None:
    assert recall_at_k(["a", "b", "c"], ["b", "z"], 2) == 0.5
    assert reciprocal_rank(["a", "b"], ["b"]) == 0.5
    assert reciprocal_rank(["a"], ["b"]) == 0.0
    assert ndcg_at_k(["b", "a"], ["b"], 2) == 1.0
    assert ndcg_at_k(["a", "b"], ["b"], 2) == pytest.approx(1 / math.log2(3))
