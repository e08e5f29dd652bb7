"""Corpora, chunking, the keyword and BM25 retrievers, and ranking metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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


# -- dense, hybrid, persisted indexes (the real all-MiniLM-L6-v2 on the CPU) -------------

SEMANTIC = {
    "pets": "Dogs and cats are the most common household animals people keep at home.",
    "money": "The central bank raised interest rates to slow down inflation this quarter.",
    "space": "The rocket carried a satellite into orbit around the earth.",
}


def test_dense_retrieval_finds_paraphrases_that_share_no_words() -> None:
    from ragaudit.systems.retrievers import DenseRetriever

    dense = DenseRetriever(chunk([Document(k, v) for k, v in SEMANTIC.items()]))
    assert dense.retrieve("puppies and kittens as companions", k=1)[0].doc_id == "pets"
    assert dense.retrieve("monetary policy of lenders", k=1)[0].doc_id == "money"
    hits = dense.retrieve("astronaut launch", k=3)
    assert hits[0].doc_id == "space" and len(hits) == 3
    assert all(-1.0 <= h.score <= 1.0 for h in hits)
    # Queries embedded ahead in a batch give the same scores as one at a time.
    single = dense.scores("astronaut launch")
    dense.prepare(["astronaut launch"])
    assert dense.scores("astronaut launch") == pytest.approx(single, abs=1e-5)


def test_hybrid_weight_one_is_bm25_and_zero_is_dense() -> None:
    from ragaudit.systems.retrievers import DenseRetriever, HybridRetriever

    chunks = chunk([Document(k, v) for k, v in {**DOCS, **SEMANTIC}.items()])
    bm25, dense = BM25Retriever(chunks), DenseRetriever(chunks)
    for query in ("Who manages the Orrin Footbridge?", "puppies as companions", "rail 2023"):
        # BM25 alone: the same scores, min-max scaled (documents scoring 0 tie in any order).
        raw = bm25.scores(query)
        only_text = HybridRetriever(chunks, 1.0)
        if raw.max() > raw.min():
            expected = (raw - raw.min()) / (raw.max() - raw.min())
            assert only_text.scores(query) == pytest.approx(expected)
            assert only_text.retrieve(query, k=1)[0].doc_id == bm25.retrieve(query, k=1)[0].doc_id
        else:  # no query word in the corpus: BM25 has no opinion, and neither has w = 1
            assert not only_text.scores(query).any()
        semantic = [h.doc_id for h in dense.retrieve(query, k=3)]
        assert [h.doc_id for h in HybridRetriever(chunks, 0.0).retrieve(query, k=3)] == semantic
    mixed = HybridRetriever(chunks, 0.5)
    scores = mixed.scores("Orrin Footbridge puppies")
    assert scores.min() >= 0 and scores.max() <= 1.0 + 1e-9
    with pytest.raises(UserError, match="not in"):
        HybridRetriever(chunks, 1.5)


def test_indexes_persist_and_are_rebuilt_only_when_the_corpus_changes(tmp_path: Path) -> None:
    from ragaudit.systems import retrievers as r

    chunks = chunk([Document(k, v) for k, v in DOCS.items()])
    r.BM25Retriever(chunks, tmp_path)
    r.DenseRetriever(chunks, tmp_path)
    built = sorted(p.name for p in tmp_path.iterdir())
    assert [n.split("-")[0] for n in built] == ["bm25", "dense"]
    stamps = {p: (p / "complete").stat().st_mtime_ns for p in tmp_path.iterdir()}
    calls = []
    real_embed = r.embed
    r.embed = lambda texts, batch_size=64: calls.append(len(texts)) or real_embed(texts)  # type: ignore[assignment]
    try:
        again = r.DenseRetriever(chunks, tmp_path)
        assert calls == []  # loaded, not re-embedded
        assert again.retrieve("Orrin footbridge manager", k=1)[0].doc_id == "orrin"
        assert calls == [1]  # the query alone
        r.BM25Retriever(chunks, tmp_path)
        assert {p: (p / "complete").stat().st_mtime_ns for p in tmp_path.iterdir()} == stamps
        changed = [*chunks[:-1], chunks[-1].__class__("viaduct", 0, "Norbury Viaduct, 2024.")]
        r.DenseRetriever(changed, tmp_path)
        assert calls == [1, 3]  # the changed corpus was embedded, once
    finally:
        r.embed = real_embed  # type: ignore[assignment]
    assert len(list(tmp_path.iterdir())) == 3


def test_a_damaged_index_is_built_again_never_a_traceback(tmp_path: Path) -> None:
    """An index is a cache of the corpus: a file of it truncated (a full disk, a killed
    copy) or garbled is built again, and retrieves as before."""
    from ragaudit.systems import retrievers as r

    chunks = chunk([Document(k, v) for k, v in DOCS.items()])
    want = [h.doc_id for h in r.BM25Retriever(chunks, tmp_path).retrieve("Orrin bridge", k=2)]
    files = [f for f in tmp_path.rglob("*") if f.is_file() and f.name != "complete"]
    assert files
    for damage in ("truncate", "garble"):
        for f in files:
            data = f.read_bytes()
            f.write_bytes(data[: len(data) // 3] if damage == "truncate" else b"\x00{" * 40)
        again = r.BM25Retriever(chunks, tmp_path)
        assert [h.doc_id for h in again.retrieve("Orrin bridge", k=2)] == want, damage


def test_make_retriever_rejects_unknown_kinds() -> None:
    from ragaudit.systems.retrievers import make_retriever

    with pytest.raises(UserError, match="unknown retriever 'fuzzy'"):
        make_retriever("fuzzy", [])
