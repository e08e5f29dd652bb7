"""Adapters to the user's own RAG system, whatever it is built with:

* ``HTTPSystem``: POST (or GET) a JSON request built from a template to an endpoint, read
  the answer and the retrieved ids from the reply by JSON paths; retries 5xx, 429 (honouring
  Retry-After) and connection errors.
* ``CallableSystem``: a Python function ``module:function``, sync (run in worker threads) or
  async, returning the answer, or a dict / tuple with the answer, retrieved ids and texts.
* ``LangChainSystem``: a LangChain retriever or runnable chain (``ragaudit[langchain]``).
* ``LlamaIndexSystem``: a LlamaIndex retriever or query engine (``ragaudit[llamaindex]``).

An adapter raises on failure; the harness records the message on the query's record and
goes on with the others.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ragaudit.errors import ConfigError
from ragaudit.records.models import QueryRecord, RetrievedItem, TokenUsage
from ragaudit.secrets import redact, register_secret
from ragaudit.systems.base import SystemAnswer, SystemFailure
from ragaudit.systems.jsonpath import JSONPathError, extract, parse_path

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(value: str, where: str) -> str:
    """``${VAR}`` replaced by the environment variable; the result is treated as a secret
    (headers carry tokens), so it never shows in logs or records."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in os.environ:
            raise ConfigError(f"{where}: environment variable {name} is not set")
        register_secret(os.environ[name])
        return os.environ[name]

    return _ENV.sub(sub, value)


_FIELD = re.compile(r"\{(query|query_id|variant|k)\}")


def fill_template(template: Any, query: QueryRecord, k: int | None = None) -> Any:
    """The request body: ``{query}``, ``{query_id}``, ``{variant}`` and ``{k}`` filled into
    every string of the JSON template (values are inserted as text, never parsed; a string
    that is exactly ``{k}`` becomes the number). One pass: a query that itself contains
    ``{variant}`` reaches the system as written."""
    if isinstance(template, str):
        if template == "{k}" and k is not None:
            return k
        values = {
            "query": query.query,
            "query_id": query.query_id,
            "variant": query.variant,
            "k": "" if k is None else str(k),
        }
        return _FIELD.sub(lambda m: values[m.group(1)], template)
    if isinstance(template, dict):
        return {key: fill_template(v, query, k) for key, v in template.items()}
    if isinstance(template, list):
        return [fill_template(v, query, k) for v in template]
    return template


def _mentions_k(template: Any) -> bool:
    """Whether a request template has a ``{k}`` field anywhere."""
    if isinstance(template, str):
        return "{k}" in template
    if isinstance(template, dict):
        return any(_mentions_k(v) for v in template.values())
    if isinstance(template, list):
        return any(_mentions_k(v) for v in template)
    return False


def _no_k(name: str, what: str) -> ConfigError:
    """The error for a ``k`` a system cannot be given: ignoring it would report a depth
    the system never used."""
    return ConfigError(
        f"system {name}: k is set, but {what}; remove k and set the depth in the system "
        "itself, or make it accept one"
    )


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _items(ids: Any, texts: Any = None, scores: Any = None) -> list[RetrievedItem]:
    id_list, text_list, score_list = _as_list(ids), _as_list(texts), _as_list(scores)
    if not id_list and text_list:
        # Contexts without ids: number them so that they still show in the report.
        id_list = [f"context-{i}" for i in range(1, len(text_list) + 1)]
    out = []
    for i, doc_id in enumerate(id_list):
        text = text_list[i] if i < len(text_list) else None
        score = score_list[i] if i < len(score_list) else None
        out.append(
            RetrievedItem(
                id=str(doc_id),
                text=None if text is None else str(text),
                score=None if score is None else float(score),
            )
        )
    return out


def to_answer(value: Any, source: str) -> SystemAnswer:
    """A callable's return value as an answer: a string; a dict with ``answer`` (or
    ``response``) and optionally ``retrieved_ids``, ``contexts``, ``scores``, ``usage``; or a
    tuple ``(answer, ids[, contexts])``."""
    if isinstance(value, SystemAnswer):
        return value
    if value is None or isinstance(value, str):
        return SystemAnswer(response=value)
    if isinstance(value, tuple) and 1 <= len(value) <= 3:
        answer, ids, texts = [*value, None, None][:3]
        return SystemAnswer(
            response=None if answer is None else str(answer), retrieved=_items(ids, texts)
        )
    if isinstance(value, dict):
        answer = value.get("answer", value.get("response"))
        usage = value.get("usage") or {}
        return SystemAnswer(
            response=None if answer is None else str(answer),
            retrieved=_items(
                value.get("retrieved_ids", value.get("ids")),
                value.get("contexts"),
                value.get("scores"),
            ),
            usage=TokenUsage(
                prompt_tokens=int(usage.get("prompt_tokens", 0)),
                completion_tokens=int(usage.get("completion_tokens", 0)),
            ),
        )
    raise SystemFailure(
        f"{source} returned {type(value).__name__}: expected a string, a dict with 'answer', "
        "or (answer, ids[, contexts])"
    )


def load_target(target: str, where: str) -> Any:
    """The object ``module:attribute`` names (the current directory is importable, as for
    uvicorn's app strings); a one-line error when it cannot be found."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"{where}: target {target!r} must be 'module:attribute'")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{where}: cannot import {module_name}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{where}: {module_name} has no attribute {attr}")
        obj = getattr(obj, part)
    return obj


class CallableSystem:
    """A Python function as a system: ``fn(query)`` or ``fn(query, record=QueryRecord)``."""

    def __init__(self, name: str, fn: Any, *, threads: int = 8, k: int | None = None) -> None:
        if not callable(fn):
            raise ConfigError(f"system {name}: target is not callable")
        self.name = name
        self.fn = fn
        self._async = inspect.iscoroutinefunction(fn)
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}  # type: ignore[assignment]
        self._takes_record = "record" in params
        takes_k = "k" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
        if k is not None and not takes_k:
            raise _no_k(name, "the function takes no parameter k")
        self.k = k
        self._pool = None if self._async else ThreadPoolExecutor(max_workers=threads)

    async def answer(self, query: QueryRecord) -> SystemAnswer:
        """Call the function with the query text (and the record, if it asks for one)."""
        kwargs: dict[str, Any] = {"record": query} if self._takes_record else {}
        if self.k is not None:
            kwargs["k"] = self.k
        if self._async:
            value = await self.fn(query.query, **kwargs)
        else:
            loop = asyncio.get_running_loop()
            value = await loop.run_in_executor(self._pool, lambda: self.fn(query.query, **kwargs))
        return to_answer(value, f"system {self.name}")

    async def aclose(self) -> None:
        """Stop the worker threads (a call still running in one is abandoned)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


class HTTPSystem:
    """A RAG system behind an HTTP endpoint that takes and returns JSON."""

    def __init__(
        self,
        name: str,
        url: str,
        *,
        method: str = "POST",
        headers: dict[str, str] | None = None,
        request: Any = None,
        answer_path: str | None = "answer",
        ids_path: str | None = None,
        contexts_path: str | None = None,
        retries: int = 2,
        connections: int = 8,
        k: int | None = None,
    ) -> None:
        where = f"system {name}"
        for path in (answer_path, ids_path, contexts_path):
            if path:
                try:
                    parse_path(path)
                except JSONPathError as exc:
                    raise ConfigError(f"{where}: {exc}") from None
        self.name = name
        self.url = url
        self.method = method
        self.headers = {
            k: expand_env(v, f"{where}: headers.{k}") for k, v in (headers or {}).items()
        }
        self.request = {"query": "{query}"} if request is None else request
        if k is not None and not _mentions_k(self.request):
            raise _no_k(name, "the request template has no {k} field to send it in")
        if k is None and _mentions_k(self.request):
            raise ConfigError(f"{where}: the request template has a {{k}} field: set k")
        self.k = k
        self.answer_path = answer_path
        self.ids_path = ids_path
        self.contexts_path = contexts_path
        self.retries = retries
        self.connections = connections
        self._session: Any = None

    def _client(self) -> Any:
        import aiohttp

        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.connections),
                headers={"Content-Type": "application/json", **self.headers},
            )
        return self._session

    async def _send(self, body: Any) -> Any:
        import aiohttp

        attempt = 0
        while True:
            wait = min(8.0, 0.25 * 2**attempt)
            try:
                if self.method == "GET":
                    call = self._client().get(self.url, params=_flat(body))
                else:
                    call = self._client().post(self.url, data=json.dumps(body))
                async with call as reply:
                    text = await reply.text()
                    if reply.status < 300:
                        try:
                            return json.loads(text)
                        except json.JSONDecodeError:
                            raise SystemFailure(
                                f"HTTP {reply.status} reply is not JSON: {text[:80]!r}"
                            ) from None
                    retryable = reply.status == 429 or reply.status >= 500
                    problem = f"HTTP {reply.status} {reply.reason or ''}".strip()
                    retry_after = reply.headers.get("Retry-After", "")
                    if retry_after.replace(".", "", 1).isdigit():
                        wait = min(30.0, float(retry_after))
            except aiohttp.ClientError as exc:
                retryable, problem = True, f"connection failed: {type(exc).__name__}: {exc}"
            if not retryable or attempt >= self.retries:
                tries = f" after {attempt + 1} attempts" if attempt else ""
                raise SystemFailure(redact(f"{problem}{tries}"))
            attempt += 1
            await asyncio.sleep(wait)

    async def answer(self, query: QueryRecord) -> SystemAnswer:
        """Send the request, read the answer and the retrieved documents by their paths."""
        data = await self._send(fill_template(self.request, query, self.k))
        try:
            answer = extract(data, self.answer_path) if self.answer_path else None
            ids = extract(data, self.ids_path) if self.ids_path else None
            texts = extract(data, self.contexts_path) if self.contexts_path else None
        except JSONPathError as exc:
            raise SystemFailure(str(exc)) from None
        if answer is not None and not isinstance(answer, str):
            answer = json.dumps(answer, ensure_ascii=False)
        return SystemAnswer(response=answer, retrieved=_items(ids, texts))

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self._session is not None:
            await self._session.close()


def _flat(body: Any) -> dict[str, str]:
    if not isinstance(body, dict):
        raise SystemFailure("a GET request template must be a mapping of query parameters")
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in body.items()}


def _built(obj: Any) -> Any:
    """A factory function is called (without arguments) to build the object."""
    if inspect.isfunction(obj):
        return obj()
    return obj


def _doc_item(doc_id: Any, text: Any, score: Any) -> RetrievedItem:
    return RetrievedItem(
        id=str(doc_id),
        text=None if text is None else str(text),
        score=None if score is None else float(score),
    )


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
        for i, doc in enumerate(_as_list(docs), 1):
            meta = getattr(doc, "metadata", None) or {}
            doc_id = meta.get(self.id_field) or getattr(doc, "id", None) or f"context-{i}"
            out.append(_doc_item(doc_id, getattr(doc, "page_content", None), meta.get("score")))
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
        for item in _as_list(nodes):
            node = getattr(item, "node", item)
            meta = getattr(node, "metadata", None) or {}
            doc_id = meta.get(self.id_field) or getattr(node, "ref_doc_id", None) or node.node_id
            out.append(_doc_item(doc_id, node.get_content(), getattr(item, "score", None)))
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
