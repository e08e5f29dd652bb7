"""Systems under test from their ``systems:`` entries in ragaudit.yaml."""

from __future__ import annotations

from pathlib import Path

from ragaudit.config import SystemConfig
from ragaudit.errors import ConfigError
from ragaudit.llm.client import LLMClient
from ragaudit.systems.adapters import (
    CallableSystem,
    HTTPSystem,
    LangChainSystem,
    LlamaIndexSystem,
    load_target,
)
from ragaudit.systems.base import System
from ragaudit.systems.builtin import RAGSystem
from ragaudit.systems.corpus import Chunk
from ragaudit.systems.retrievers import Retriever, make_retriever

BUILTIN_K = 3  # documents a built-in system retrieves when its k is not set


def needs_llm(sc: SystemConfig) -> bool:
    """Whether the system calls ragaudit's LLM (to answer or to re-rank)."""
    return sc.kind == "builtin" and (sc.generator != "none" or bool(sc.rerank_candidates))


def needs_corpus(sc: SystemConfig) -> bool:
    """Whether the system retrieves from the configured corpus."""
    return sc.kind == "builtin" and sc.retriever != "none"


def build_system(
    sc: SystemConfig,
    *,
    chunks: list[Chunk] | None = None,
    llm: LLMClient | None = None,
    index_dir: Path | None = None,
    concurrency: int = 8,
    retrievers: dict[tuple[str, float], Retriever] | None = None,
) -> System:
    """The system ``sc`` declares. ``retrievers`` shares indexes between systems that use
    the same retriever (e.g. top-1 and top-3 keyword)."""
    where = f"systems.{sc.name}"
    # An adapter is given k only when the user set it: its own depth otherwise.
    k = sc.k
    if sc.kind == "http":
        assert sc.url is not None
        return HTTPSystem(
            sc.name,
            sc.url,
            method=sc.method,
            headers=sc.headers,
            request=sc.request,
            answer_path=sc.answer_path,
            ids_path=sc.ids_path,
            contexts_path=sc.contexts_path,
            retries=sc.retries,
            connections=concurrency,
            k=k,
        )
    if sc.kind in ("callable", "langchain", "llamaindex"):
        assert sc.target is not None
        obj = load_target(sc.target, where)
        if sc.kind == "callable":
            return CallableSystem(sc.name, obj, threads=concurrency, k=k)
        if sc.kind == "langchain":
            return LangChainSystem(sc.name, obj, id_field=sc.id_field, k=k)
        return LlamaIndexSystem(sc.name, obj, id_field=sc.id_field, k=k)
    retriever: Retriever | None = None
    if sc.retriever != "none":
        if not chunks:
            raise ConfigError(f"{where}: retriever {sc.retriever} needs corpus.path (documents)")
        cache = retrievers if retrievers is not None else {}
        key = (sc.retriever, sc.text_weight if sc.retriever == "hybrid" else 0.0)
        if key not in cache:
            cache[key] = make_retriever(
                sc.retriever, chunks, text_weight=sc.text_weight, index_dir=index_dir
            )
        retriever = cache[key]
    if needs_llm(sc) and llm is None:
        raise ConfigError(f"{where}: generator {sc.generator} needs an LLM")
    return RAGSystem(
        sc.name,
        retriever=retriever,
        k=sc.k if sc.k is not None else BUILTIN_K,
        generator=sc.generator,
        llm=llm if needs_llm(sc) else None,
        rerank_candidates=sc.rerank_candidates,
    )
