"""Systems under test from their ``systems:`` entries in ragaudit.yaml."""

from __future__ import annotations

from pathlib import Path

from ragaudit.errors import ConfigError
from ragaudit.llm.client import LLMClient
from ragaudit.systems.adapters import function, http_endpoint, langchain, llamaindex
from ragaudit.systems.base import Retriever, System
from ragaudit.systems.builtin import BuiltinSystemConfig, RAGSystem
from ragaudit.systems.corpus import Chunk
from ragaudit.systems.options import SystemConfig
from ragaudit.systems.retrievers import make_retriever


def needs_llm(sc: SystemConfig) -> bool:
    """Whether the system calls ragaudit's LLM (to answer or to re-rank)."""
    return isinstance(sc, BuiltinSystemConfig) and sc.needs_llm


def needs_corpus(sc: SystemConfig) -> bool:
    """Whether the system retrieves from the configured corpus."""
    return isinstance(sc, BuiltinSystemConfig) and sc.retriever != "none"


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
    if isinstance(sc, http_endpoint.HTTPSystemConfig):
        return http_endpoint.build(sc, concurrency=concurrency)
    if isinstance(sc, function.CallableSystemConfig):
        return function.build(sc, concurrency=concurrency)
    if isinstance(sc, langchain.LangChainSystemConfig):
        return langchain.build(sc)
    if isinstance(sc, llamaindex.LlamaIndexSystemConfig):
        return llamaindex.build(sc)
    return _builtin(sc, chunks=chunks, llm=llm, index_dir=index_dir, retrievers=retrievers)


def _builtin(
    sc: BuiltinSystemConfig,
    *,
    chunks: list[Chunk] | None,
    llm: LLMClient | None,
    index_dir: Path | None,
    retrievers: dict[tuple[str, float], Retriever] | None,
) -> RAGSystem:
    where = f"systems.{sc.name}"
    retriever: Retriever | None = None
    if sc.retriever != "none":
        if not chunks:
            raise ConfigError(f"{where}: retriever {sc.retriever} needs corpus.path (documents)")
        cache = retrievers if retrievers is not None else {}
        key = (sc.retriever, sc.text_weight if sc.retriever == "hybrid" else 0.0)
        if key not in cache:
            cache[key] = make_retriever(
                sc.retriever, chunks, text_weight=sc.text_weight, index_dir=index_dir, shared=cache
            )
        retriever = cache[key]
    if sc.needs_llm and llm is None:
        raise ConfigError(f"{where}: generator {sc.generator} needs an LLM")
    return RAGSystem(
        sc.name,
        retriever=retriever,
        k=sc.depth,
        generator=sc.generator,
        llm=llm if sc.needs_llm else None,
        rerank_candidates=sc.rerank_candidates,
    )
