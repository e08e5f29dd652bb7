"""A RAG system behind an HTTP endpoint: POST (or GET) a JSON request built from a
template, read the answer and the retrieved ids from the reply by JSON paths; retries 5xx,
429 (honouring Retry-After) and connection errors."""

from __future__ import annotations

import asyncio
import json
import math
import re
from typing import Any, Literal

from pydantic import Field, field_validator

from ragaudit.errors import ConfigError
from ragaudit.records.models import QueryRecord
from ragaudit.secrets import mask_secret_fields, redact, register_header_secrets
from ragaudit.systems.adapters.common import _answer, _items, _no_k, expand_env
from ragaudit.systems.base import SystemAnswer, SystemFailure, SystemOptions
from ragaudit.systems.jsonpath import JSONPathError, extract, parse_path


class HTTPSystemConfig(SystemOptions):
    """``kind: http``: the endpoint, the request template, and where the reply holds the
    answer and the retrieved documents."""

    kind: Literal["http"] = "http"
    url: str = Field(description="The endpoint.")
    method: Literal["POST", "GET"] = "POST"
    headers: dict[str, str] = Field(
        default_factory=dict, description="${VAR} is read from the environment (a secret)."
    )
    request: Any = Field(
        default_factory=lambda: {"query": "{query}"},
        description="JSON body; {query}, {query_id}, {variant}, {k} and {repeat} (which "
        "asking of the query: 0 to N - 1 with run --repeat N) are filled in.",
    )
    answer_path: str | None = Field("answer", description="JSON path of the answer.")
    ids_path: str | None = Field(None, description="JSON path of the retrieved document ids.")
    contexts_path: str | None = Field(None, description="JSON path of the retrieved texts.")
    retries: int = Field(2, ge=0, le=20, description="Retries on 5xx, 429 and connection errors.")

    @field_validator("request")
    @classmethod
    def _finite_numbers(cls, value: Any) -> Any:
        """The template is free-form JSON, so the base class's rule on floats does not
        reach it: a ``.inf`` or ``.nan`` in it could be sent as no valid JSON and would
        break every file the configuration is written to (``provenance.json``). Walked
        without recursion, so that a deeply nested template cannot overflow the stack."""
        stack: list[tuple[str, Any]] = [("", value)]
        while stack:
            where, item = stack.pop()
            if isinstance(item, float) and not math.isfinite(item):
                place = f"{where}: " if where else ""
                raise ValueError(f"{place}{item} is not a finite number (JSON has no such value)")
            if isinstance(item, dict):
                named = [(f"{where}.{key}" if where else str(key), v) for key, v in item.items()]
                stack.extend(reversed(named))  # the first in the file is reported first
            elif isinstance(item, list):
                stack.extend(reversed([(f"{where}[{i}]", v) for i, v in enumerate(item)]))
        return value


_FIELD = re.compile(r"\{(query|query_id|variant|k|repeat)\}")


def fill_template(template: Any, query: QueryRecord, k: int | None = None, repeat: int = 0) -> Any:
    """The request body: ``{query}``, ``{query_id}``, ``{variant}``, ``{k}`` and
    ``{repeat}`` (which asking of the query, 0 to N - 1 with ``run --repeat N``: a seed
    for a system that samples) filled into every string of the JSON template (values are
    inserted as text, never parsed; a string that is exactly ``{k}`` or ``{repeat}``
    becomes the number). One pass: a query that itself contains ``{variant}`` reaches the
    system as written.

    >>> q = QueryRecord(query_id="q1", group_id="g1", variant="short", query="Who?",
    ...                 reference={"values": ["Ann"], "display": "Ann"})
    >>> fill_template({"q": "{query}", "seed": "{repeat}"}, q, repeat=2)
    {'q': 'Who?', 'seed': 2}
    """
    if isinstance(template, str):
        if template == "{k}" and k is not None:
            return k
        if template == "{repeat}":
            return repeat
        values = {
            "query": query.query,
            "query_id": query.query_id,
            "variant": query.variant,
            "k": "" if k is None else str(k),
            "repeat": str(repeat),
        }
        return _FIELD.sub(lambda m: values[m.group(1)], template)
    if isinstance(template, dict):
        return {key: fill_template(v, query, k, repeat) for key, v in template.items()}
    if isinstance(template, list):
        return [fill_template(v, query, k, repeat) for v in template]
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
        # A credential written out in the request (api_key: "...") or in a header named
        # like one is a secret, as a ${VAR} is: registered, so that it is masked in every
        # record and message, also when the system echoes its URL or body back.
        mask_secret_fields(self.request)
        register_header_secrets(headers or {})
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

    async def answer(self, query: QueryRecord, *, repeat: int = 0) -> SystemAnswer:
        """Send the request (``repeat``: which asking of the query, for ``{repeat}``), read
        the answer and the retrieved documents by their paths."""
        data = await self._send(fill_template(self.request, query, self.k, repeat))
        try:
            answer = extract(data, self.answer_path) if self.answer_path else None
            ids = extract(data, self.ids_path) if self.ids_path else None
            texts = extract(data, self.contexts_path) if self.contexts_path else None
        except JSONPathError as exc:
            raise SystemFailure(str(exc)) from None
        source = f"system {self.name}"
        return SystemAnswer(
            response=_answer(answer, source),
            retrieved=_items(ids, texts, source=source, strict=False),
        )

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self._session is not None:
            await self._session.close()


def _flat(body: Any) -> dict[str, str]:
    if not isinstance(body, dict):
        raise SystemFailure("a GET request template must be a mapping of query parameters")
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in body.items()}


def build(sc: HTTPSystemConfig, *, concurrency: int) -> HTTPSystem:
    """The HTTP system ``sc`` declares, with one connection per query in flight."""
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
        k=sc.k,
    )
