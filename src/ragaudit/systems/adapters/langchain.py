"""A LangChain retriever (retrieval only) or runnable chain as a system
(``ragaudit[langchain]``)."""

from __future__ import annotations

from typing import Any, Literal

from ragaudit.errors import ConfigError
from ragaudit.records.models import QueryRecord, RetrievedItem
from ragaudit.systems.adapters.common import (
    RetrieverTargetOptions,
    _as_list,
    _built,
    _doc_item,
    _first_id,
    _no_k,
    load_target,
)
from ragaudit.systems.base import SystemAnswer


class LangChainSystemConfig(RetrieverTargetOptions):
    """``kind: langchain``: a retriever or chain of the user's, named by ``target``."""

    kind: Literal["langchain"] = "langchain"


class LangChainSystem:
    """A LangChain ``BaseRetriever`` (retrieval only) or any runnable chain (its output: a
    string, a message, or a dict with ``answer`` and ``context`` documents)."""

    def __init__(self, name: str, obj: Any, *, id_field: str = "id", k: int | None = None) -> None:
        try:
            from langchain_core.retrievers import BaseRetriever
            from langchain_core.runnables import Runnable
        except ImportError:
            raise ConfigError(
                f"system {name}: LangChain adapter needs pip install 'ragaudit[langchain]'"
            ) from None
        obj = _built(obj)
        if not isinstance(obj, Runnable):
            raise ConfigError(f"system {name}: target is not a LangChain retriever or runnable")
        self.name = name
        self.obj = obj
        self.is_retriever = isinstance(obj, BaseRetriever)
        self.id_field = id_field
        if k is not None:
            if not self.is_retriever:
                raise _no_k(name, "the target is a chain, not a retriever")
            search_kwargs = getattr(obj, "search_kwargs", None)
            if isinstance(search_kwargs, dict):
                search_kwargs["k"] = k  # vector store retrievers
            elif hasattr(obj, "k"):
                obj.k = k  # BM25Retriever, TFIDFRetriever and the like
            else:
                raise _no_k(name, f"{type(obj).__name__} has neither k nor search_kwargs")

    def _documents(self, docs: Any) -> list[RetrievedItem]:
        out = []
        for i, doc in enumerate(_as_list(docs)):
            meta = getattr(doc, "metadata", None) or {}
            doc_id = _first_id(
                meta.get(self.id_field), getattr(doc, "id", None), f"context-{i + 1}"
            )
            text, score = getattr(doc, "page_content", None), meta.get("score")
            out.append(_doc_item(doc_id, text, score, f"system {self.name}", i))
        return out

    async def answer(self, query: QueryRecord) -> SystemAnswer:
        """Invoke the retriever or the chain with the query text."""
        result = await self.obj.ainvoke(query.query)
        if self.is_retriever:
            return SystemAnswer(response=None, retrieved=self._documents(result))
        if isinstance(result, dict):
            answer = result.get("answer", result.get("result", result.get("output")))
            docs = result.get("context", result.get("source_documents"))
            return SystemAnswer(
                response=None if answer is None else str(getattr(answer, "content", answer)),
                retrieved=self._documents(docs),
            )
        return SystemAnswer(response=str(getattr(result, "content", result)))

    async def aclose(self) -> None:
        """Nothing to release."""


def build(sc: LangChainSystemConfig) -> LangChainSystem:
    """The retriever or chain ``sc.target`` names (a factory function is called)."""
    obj = load_target(sc.target, f"systems.{sc.name}")
    return LangChainSystem(sc.name, obj, id_field=sc.id_field, k=sc.k)
