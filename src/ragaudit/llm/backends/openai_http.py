"""Any OpenAI-compatible chat server (OpenAI, vLLM, Ollama, llama.cpp server) through the
official async client.

The client's own retries are switched off: this backend retries 429, 5xx, timeouts and
dropped connections itself, with exponential backoff and jitter, honouring ``Retry-After``
(and ``retry-after-ms``) up to ``max_retry_wait_s``. 401/403/404 are configuration mistakes
and fail at once with one line that names the server, never the key.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
import weakref
from typing import Any

import openai

from ragaudit.errors import LLMAuthError, LLMError, LLMNotFoundError, LLMTimeoutError
from ragaudit.llm.types import GenerationParams, Messages, RawCompletion
from ragaudit.secrets import redact, register_secret

try:  # openai >= 2 is built on httpx2; older releases on httpx
    import httpx2 as _httpx
except ImportError:  # pragma: no cover - depends on the installed openai
    import httpx as _httpx  # type: ignore[no-redef]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _server_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return redact(" ".join(str(message).split()))[:200]
    return ""


class OpenAIBackend:
    """Calls ``/chat/completions`` on an OpenAI-compatible server."""

    kind = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_concurrency: int = 8,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        max_retry_wait_s: float = 60.0,
        backoff_base_s: float = 0.5,
    ) -> None:
        self.model = model
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        if api_key is None and self.base_url == DEFAULT_BASE_URL:
            raise LLMAuthError(
                f"openai:{model}: no API key: set OPENAI_API_KEY (or llm.api_key in ragaudit.yaml)"
            )
        register_secret(api_key)
        # Local servers (vLLM, Ollama, llama.cpp) often need no key; the client needs a string.
        self._api_key = api_key or "no-key"
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.max_retry_wait_s = max_retry_wait_s
        self.backoff_base_s = backoff_base_s
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI]
        self._clients = weakref.WeakKeyDictionary()

    def describe(self) -> str:
        """``openai:<model> at <url>``: where calls go, without credentials."""
        return f"openai:{self.model} at {redact(self.base_url)}"

    def _client(self) -> openai.AsyncOpenAI:
        # An async HTTP connection pool belongs to one event loop: keep one client per loop.
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            limits = _httpx.Limits(
                max_connections=self.max_concurrency,
                max_keepalive_connections=self.max_concurrency,
            )
            client = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self.base_url,
                max_retries=0,
                timeout=self.timeout_s,
                http_client=openai.DefaultAsyncHttpxClient(limits=limits, timeout=self.timeout_s),
            )
            self._clients[loop] = client
        return client

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_wait_s)
        delay = self.backoff_base_s * (2**attempt)
        return min(self.max_retry_wait_s, delay * (0.5 + random.random() / 2))

    async def acomplete(self, messages: Messages, params: GenerationParams) -> RawCompletion:
        """One chat completion with retries; raises a one-line :class:`LLMError` subclass."""
        client = self._client()
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
        }
        if params.top_p is not None:
            request["top_p"] = params.top_p
        if params.seed is not None:
            request["seed"] = params.seed
        if params.stop:
            request["stop"] = list(params.stop)
        where = self.describe()
        last_problem = ""
        for attempt in range(self.max_retries + 1):
            retry_after: float | None = None
            try:
                response = await client.chat.completions.create(**request)
                if not response.choices:
                    raise ValueError("reply has no choices")
                choice = response.choices[0]
                usage = response.usage
                return RawCompletion(
                    text=choice.message.content or "",
                    prompt_tokens=usage.prompt_tokens if usage else 0,
                    completion_tokens=usage.completion_tokens if usage else 0,
                    finish_reason=choice.finish_reason,
                    retries=attempt,
                )
            except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
                detail = _server_message(exc)
                raise LLMAuthError(
                    f"{where}: the server refused the credentials (HTTP {exc.status_code})"
                    f"{': ' + detail if detail else ''}; check OPENAI_API_KEY or llm.api_key"
                ) from None
            except openai.NotFoundError as exc:
                detail = _server_message(exc)
                raise LLMNotFoundError(
                    f"{where}: model '{self.model}' or the endpoint was not found (HTTP 404)"
                    f"{': ' + detail if detail else ''}; check llm.model and the base URL"
                ) from None
            except openai.APIStatusError as exc:
                status = exc.status_code
                detail = _server_message(exc)
                if status != 429 and status < 500 and status not in (408, 409):
                    raise LLMError(
                        f"{where}: the server rejected the request (HTTP {status})"
                        f"{': ' + detail if detail else ''}"
                    ) from None
                retry_after = parse_retry_after(exc.response.headers)
                last_problem = f"HTTP {status}{': ' + detail if detail else ''}"
            except openai.APITimeoutError:
                last_problem = f"no reply within {self.timeout_s:g} s"
                if attempt == self.max_retries:
                    raise LLMTimeoutError(
                        f"{where}: {last_problem} ({attempt + 1} attempts); "
                        "raise llm.timeout_s or check the server"
                    ) from None
            except openai.APIConnectionError as exc:
                cause = exc.__cause__ or exc
                last_problem = f"cannot connect ({type(cause).__name__})"
            except (ValueError, openai.APIResponseValidationError) as exc:
                last_problem = f"malformed reply ({redact(str(exc))[:120]})"
            if attempt < self.max_retries:
                await asyncio.sleep(self._backoff(attempt, retry_after))
        raise LLMError(f"{where}: gave up after {self.max_retries + 1} attempts: {last_problem}")

    async def aclose(self) -> None:
        """Close the HTTP client of the running loop, if any."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        client = self._clients.pop(loop, None)
        if client is not None:
            await client.close()
