"""Retrievers over chunks, returning documents (best chunk per document), best first.

* ``KeywordRetriever``: the number of distinct query words a chunk contains. The paper's
  deliberately weak baseline: long, wordy queries share many unhelpful words with wrong
  documents.
* ``BM25Retriever``: Okapi BM25 through bm25s (sparse matrices; English stop words removed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragaudit.systems.corpus import Chunk

_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    """Lower-case word tokens."""
    return _WORD.findall(text.lower())


@dataclass(frozen=True, slots=True)
class Hit:
    """A retrieved document, with the score and text of its best chunk."""

    doc_id: str
    score: float
    text: str


def _best_per_document(scored: list[tuple[float, Chunk]], k: int) -> list[Hit]:
    best: dict[str, tuple[float, Chunk]] = {}
    for score, ch in scored:
        if ch.doc_id not in best or score > best[ch.doc_id][0]:
            best[ch.doc_id] = (score, ch)
    ranked = sorted(best.values(), key=lambda item: -item[0])  # stable: ties keep corpus order
    return [Hit(ch.doc_id, float(score), ch.text) for score, ch in ranked[:k]]


class KeywordRetriever:
    """Counts the distinct query words in each chunk (no weighting, no stop words)."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = chunks
        self._sets = [set(words(c.text)) for c in chunks]

    def retrieve(self, query: str, k: int = 1) -> list[Hit]:
        """The top ``k`` documents by shared word count."""
        q = set(words(query))
        scored = [(float(len(q & s)), c) for s, c in zip(self._sets, self.chunks, strict=True)]
        return _best_per_document(scored, k)


class BM25Retriever:
    """BM25 over the chunks (bm25s), documents ranked by their best chunk."""

    def __init__(self, chunks: list[Chunk]) -> None:
        import bm25s

        self.chunks = chunks
        tokens = bm25s.tokenize([c.text for c in chunks], stopwords="en", show_progress=False)
        self._bm25 = bm25s.BM25()
        self._bm25.index(tokens, show_progress=False)

    def retrieve(self, query: str, k: int = 1) -> list[Hit]:
        """The top ``k`` documents by BM25 score of their best chunk."""
        import bm25s

        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        n = min(len(self.chunks), max(k * 4, k))
        ids, scores = self._bm25.retrieve(tokens, k=n, show_progress=False)
        scored = [(float(s), self.chunks[int(i)]) for i, s in zip(ids[0], scores[0], strict=True)]
        return _best_per_document(scored, k)
