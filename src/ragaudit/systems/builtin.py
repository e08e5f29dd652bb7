"""The built-in RAG pipelines: a retriever (keyword, BM25, dense, hybrid), an optional LLM
re-ranker, and a generator prompt (concise, strict) answered by an LLM; or the LLM alone
(``llm_only``), or retrieval alone (generator ``none``, to study retrievers)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from pydantic import Field, model_validator

from ragaudit.aio import gather_all
from ragaudit.llm.client import LLMClient
from ragaudit.llm.types import GenerationParams
from ragaudit.records.models import QueryRecord, RetrievedItem, TokenUsage
from ragaudit.systems.answer_prompts import answer_messages, is_yes, rerank_messages
from ragaudit.systems.base import Hit, Retriever, SystemAnswer, SystemOptions

BUILTIN_K = 3  # documents a built-in system retrieves when its k is not set


class BuiltinSystemConfig(SystemOptions):
    """``kind: builtin`` (the default): a retriever over the configured corpus, an optional
    LLM re-ranker, and an answer prompt answered by ragaudit's LLM (or another model)."""

    kind: Literal["builtin"] = "builtin"
    retriever: Literal["keyword", "bm25", "dense", "hybrid", "none"] = "bm25"
    text_weight: float = Field(0.5, ge=0, le=1, description="Hybrid: weight of BM25 vs dense.")
    rerank_candidates: int | None = Field(
        None, ge=1, le=100, description="LLM re-ranker: judge this many candidates (off: null)."
    )
    generator: Literal["concise", "strict", "llm_only", "none"] = "concise"
    llm: str | None = Field(None, description="Model of this system (default: the llm section).")

    @model_validator(mode="before")
    @classmethod
    def _llm_only_retrieves_nothing(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("generator") == "llm_only":
            data = {"retriever": "none", **data}
        return data

    @model_validator(mode="after")
    def _complete(self) -> BuiltinSystemConfig:
        if self.generator == "llm_only" and self.retriever != "none":
            raise ValueError("generator llm_only retrieves nothing: set retriever: none")
        if self.retriever == "none" and self.generator in ("concise", "strict"):
            raise ValueError(f"generator {self.generator} needs a retriever")
        if self.retriever == "none" and self.generator == "none":
            raise ValueError("a system with neither retriever nor generator does nothing")
        return self

    @property
    def needs_llm(self) -> bool:
        """Whether the system calls an LLM (to answer or to re-rank)."""
        return self.generator != "none" or bool(self.rerank_candidates)

    @property
    def depth(self) -> int:
        """Documents it retrieves: ``k``, else :data:`BUILTIN_K`."""
        return self.k if self.k is not None else BUILTIN_K


_RERANK_PARAMS = GenerationParams(temperature=0.0, max_tokens=3)


def for_repeat(params: GenerationParams, repeat: int) -> GenerationParams:
    """The sampling parameters of a query's ``repeat``-th asking: repeat 0 keeps
    ``params`` (its requests, and their cache entries, are those of a run without
    repeats); repeat r is sample r with the seed moved by r, so that a server that samples
    draws anew and a rerun finds each repeat in the cache. At temperature 0 a
    deterministic model gives the same answer every time, and that is what its repeats
    then show.

    >>> base = GenerationParams(seed=7)
    >>> for_repeat(base, 0) is base
    True
    >>> second = for_repeat(base, 2)
    >>> second.seed, second.sample_index, second.temperature
    (9, 2, 0.0)
    """
    if not repeat:
        return params
    return params.model_copy(
        update={"seed": (params.seed or 0) + repeat, "sample_index": params.sample_index + repeat}
    )


PREFETCH_LIMIT = 20_000  # queries whose hits are kept ahead (a run's answers need them once)


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
        self._hits: dict[str, list[Hit]] = {}

    async def _retrieve(self, query: str) -> list[Hit]:
        if self.retriever is None:
            return []
        if query in self._hits:
            return self._hits.pop(query)
        n = max(self.k, self.rerank_candidates or 0)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self.retriever.retrieve, query, n)

    async def prepare(self, queries: list[QueryRecord]) -> None:
        """Retrieve for every query ahead (the dense encoder embeds them in batches), when
        there are few enough to keep their hits, so that :meth:`order` can group queries
        by what they retrieved."""
        if self.retriever is None:
            return
        texts = list(dict.fromkeys(q.query for q in queries))
        n = max(self.k, self.rerank_candidates or 0)
        retriever = self.retriever

        def work() -> None:
            prepare = getattr(retriever, "prepare", None)
            if prepare is not None:
                prepare(texts)
            if len(texts) <= PREFETCH_LIMIT:
                self._hits.update((t, retriever.retrieve(t, n)) for t in texts)

        await asyncio.get_running_loop().run_in_executor(self._pool, work)

    def order(self, queries: list[QueryRecord]) -> list[QueryRecord]:
        """Queries that retrieve the same documents one after the other: their prompts
        share the context prefix, which an inference server's prompt cache (llama.cpp's
        included) then reads once."""
        if not self._hits or self.generator == "none":
            return queries
        keys = {q.query_id: tuple(h.doc_id for h in self._hits.get(q.query, [])) for q in queries}
        return sorted(queries, key=lambda q: keys[q.query_id])

    async def _rerank(
        self, query: str, hits: list[Hit], usage: list[int], repeat: int = 0
    ) -> list[Hit]:
        assert self.llm is not None
        params = for_repeat(_RERANK_PARAMS, repeat)
        replies = await gather_all(
            *(self.llm.acomplete(rerank_messages(query, h.text), params) for h in hits)
        )
        for r in replies:
            usage[0] += r.prompt_tokens
            usage[1] += r.completion_tokens
        # Relevant first, each part in the retriever's order.
        yes = [h for h, r in zip(hits, replies, strict=True) if is_yes(r.text)]
        no = [h for h, r in zip(hits, replies, strict=True) if not is_yes(r.text)]
        return yes + no

    async def answer(self, query: QueryRecord, *, repeat: int = 0) -> SystemAnswer:
        """Retrieve, re-rank, generate. ``repeat`` (``run --repeat N``: which asking of the
        query this is) seeds the LLM's calls (:func:`for_repeat`): each repeat is its own
        request, drawn and cached on its own; repeat 0 is the run without repeats."""
        tokens = [0, 0]
        hits = await self._retrieve(query.query)
        if self.rerank_candidates and hits:
            hits = await self._rerank(query.query, hits, tokens, repeat)
        hits = hits[: self.k]
        response: str | None = None
        if self.generator != "none":
            assert self.llm is not None
            reply = await self.llm.acomplete(
                answer_messages(self.generator, query.query, hits),
                for_repeat(self._params, repeat),
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


# Self-consistency draws its samples at this temperature (GRAMMAR's adaptation of SelfCheck).
RESAMPLE_TEMPERATURE = 1.0


async def resample_answers(
    llm: LLMClient,
    generator: str,
    question: str,
    retrieved: list[RetrievedItem],
    n: int,
    *,
    max_tokens: int = 128,
) -> list[str]:
    """``n`` answers drawn again at temperature 1.0 from a built-in generator, on the
    passages it was given the first time (``retrieved``, with their texts): what
    self-consistency compares the answer with. Each sample has its own seed and cache
    entry, so a rerun draws the same ones."""
    if generator in ("none",):
        raise ValueError(f"generator {generator!r} writes no answer")
    hits = [Hit(doc_id=r.id, score=r.score or 0.0, text=r.text or "") for r in retrieved]
    messages = answer_messages(generator, question, hits)
    base = llm.default_params.model_copy(
        update={"temperature": RESAMPLE_TEMPERATURE, "max_tokens": max_tokens}
    )
    replies = await gather_all(
        *(
            llm.acomplete(
                messages,
                base.model_copy(update={"sample_index": i + 1, "seed": (base.seed or 0) + i + 1}),
            )
            for i in range(n)
        )
    )
    return [r.text.strip() for r in replies]
