"""The built-in RAG pipelines: a retriever (keyword, BM25, dense, hybrid), an optional LLM
re-ranker, and a generator prompt (concise, strict) answered by an LLM; or the LLM alone
(``llm_only``), or retrieval alone (generator ``none``, to study retrievers)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from ragaudit.llm.client import LLMClient
from ragaudit.llm.types import GenerationParams
from ragaudit.records.models import QueryRecord, RetrievedItem, TokenUsage
from ragaudit.systems.base import SystemAnswer
from ragaudit.systems.generators import answer_messages, is_yes, rerank_messages
from ragaudit.systems.retrievers import Hit, Retriever

_RERANK_PARAMS = GenerationParams(temperature=0.0, max_tokens=3)


class RAGSystem:
    """Retrieve ``k`` documents (after re-ranking ``rerank_candidates`` when set), then ask
    the LLM with the generator's prompt."""

    def __init__(
        self,
        name: str,
        *,
        retriever: Retriever | None,
        k: int,
        generator: str,
        llm: LLMClient | None,
        rerank_candidates: int | None = None,
        max_tokens: int = 128,
    ) -> None:
        if generator != "none" and llm is None:
            raise ValueError(f"system {name}: generator {generator} needs an LLM")
        if rerank_candidates and llm is None:
            raise ValueError(f"system {name}: the re-ranker needs an LLM")
        self.name = name
        self.retriever = retriever
        self.k = k
        self.generator = generator
        self.llm = llm
        self.rerank_candidates = rerank_candidates
        self._params = (llm.default_params if llm else GenerationParams()).model_copy(
            update={"max_tokens": max_tokens}
        )
        # Retrieval is CPU work in a library call: one worker keeps it off the event loop
        # without running several torch/numpy searches against each other on few cores.
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"retrieve-{name}")

    async def _retrieve(self, query: str) -> list[Hit]:
        if self.retriever is None:
            return []
        n = max(self.k, self.rerank_candidates or 0)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self.retriever.retrieve, query, n)

    async def prepare(self, queries: list[QueryRecord]) -> None:
        """Let the retriever work ahead in batches (the dense encoder embeds all queries)."""
        prepare = getattr(self.retriever, "prepare", None)
        if prepare is not None:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._pool, prepare, [q.query for q in queries])

    async def _rerank(self, query: str, hits: list[Hit], usage: list[int]) -> list[Hit]:
        assert self.llm is not None
        replies = await asyncio.gather(
            *(self.llm.acomplete(rerank_messages(query, h.text), _RERANK_PARAMS) for h in hits)
        )
        for r in replies:
            usage[0] += r.prompt_tokens
            usage[1] += r.completion_tokens
        # Relevant first, each part in the retriever's order.
        yes = [h for h, r in zip(hits, replies, strict=True) if is_yes(r.text)]
        no = [h for h, r in zip(hits, replies, strict=True) if not is_yes(r.text)]
        return yes + no

    async def answer(self, query: QueryRecord) -> SystemAnswer:
        """Retrieve, re-rank, generate."""
        tokens = [0, 0]
        hits = await self._retrieve(query.query)
        if self.rerank_candidates and hits:
            hits = await self._rerank(query.query, hits, tokens)
        hits = hits[: self.k]
        response: str | None = None
        if self.generator != "none":
            assert self.llm is not None
            reply = await self.llm.acomplete(
                answer_messages(self.generator, query.query, hits), self._params
            )
            tokens[0] += reply.prompt_tokens
            tokens[1] += reply.completion_tokens
            response = reply.text.strip()
        return SystemAnswer(
            response=response,
            retrieved=[RetrievedItem(id=h.doc_id, score=h.score, text=h.text) for h in hits],
            usage=TokenUsage(prompt_tokens=tokens[0], completion_tokens=tokens[1]),
        )

    async def aclose(self) -> None:
        """Stop the retrieval worker."""
        self._pool.shutdown(wait=False)
