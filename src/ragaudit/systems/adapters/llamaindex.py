"""A LlamaIndex retriever (retrieval only) or query engine as a system
(``ragaudit[llamaindex]``)."""

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


class LlamaIndexSystemConfig(RetrieverTargetOptions):
    """``kind: llamaindex``: a retriever or query engine of the user's, named by ``target``."""

    kind: Literal["llamaindex"] = "llamaindex"


class LlamaIndexSystem:
    """A LlamaIndex retriever (``aretrieve``: retrieval only) or query engine (``aquery``:
    the answer and its source nodes)."""

    def __init__(self, name: str, obj: Any, *, id_field: str = "id", k: int | None = None) -> None:
        obj = _built(obj)
        if not (hasattr(obj, "aretrieve") or hasattr(obj, "aquery")):
            raise ConfigError(
                f"system {name}: target is not a LlamaIndex retriever or query engine"
            )
        self.name = name
        self.obj = obj
        self.id_field = id_field
        if k is not None:
            # A query engine retrieves through its retriever.
            retriever = getattr(obj, "retriever", None) if hasattr(obj, "aquery") else obj
            if retriever is None or not hasattr(retriever, "similarity_top_k"):
                raise _no_k(name, f"{type(obj).__name__} has no similarity_top_k to set")
            retriever.similarity_top_k = k

    def _nodes(self, nodes: Any) -> list[RetrievedItem]:
        out = []
        for i, item in enumerate(_as_list(nodes)):
            node = getattr(item, "node", item)
            meta = getattr(node, "metadata", None) or {}
            doc_id = _first_id(
                meta.get(self.id_field), getattr(node, "ref_doc_id", None), node.node_id
            )
            score = getattr(item, "score", None)
            out.append(_doc_item(doc_id, node.get_content(), score, f"system {self.name}", i))
        return out

    async def answer(self, query: QueryRecord) -> SystemAnswer:
        """Retrieve, or query the engine, with the query text."""
        if hasattr(self.obj, "aquery"):
            result = await self.obj.aquery(query.query)
            answer = getattr(result, "response", result)
            return SystemAnswer(
                response=None if answer is None else str(answer),
                retrieved=self._nodes(getattr(result, "source_nodes", None)),
            )
        return SystemAnswer(
            response=None, retrieved=self._nodes(await self.obj.aretrieve(query.query))
        )

    async def aclose(self) -> None:
        """Nothing to release."""


def build(sc: LlamaIndexSystemConfig) -> LlamaIndexSystem:
    """The retriever or query engine ``sc.target`` names (a factory function is called)."""
    obj = load_target(sc.target, f"systems.{sc.name}")
    return LlamaIndexSystem(sc.name, obj, id_field=sc.id_field, k=sc.k)
