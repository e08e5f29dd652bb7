"""Any OpenAI-compatible chat server (OpenAI, vLLM, Ollama, llama.cpp server).

Two transports share one retry and error policy:

* ``aiohttp`` (default): posts ``/chat/completions`` directly with aiohttp. The official
  SDK spends about 1.2 ms of CPU per call on typed-parameter transforms and response
  models; on a 2-core machine that caps it near 400-500 calls/s where the server's
  latency allows 640 (docs/benchmarks.md). The direct path costs about 0.35 ms.
* ``openai-sdk``: the official async client (``openai.AsyncOpenAI``), for servers or
  proxies that only the SDK handles.

Retries: 429, 5xx, 408/409, timeouts, dropped connections and replies that are not valid
HTTP (a wrong port), with exponential backoff and jitter, honouring ``Retry-After`` /
``retry-after-ms`` up to ``max_retry_wait_s``. 401/403/404 are configuration mistakes and
fail at once with one line naming the server, never the key.

A reply is refused when it is larger than the request could need (:func:`reply_size_limit`:
64 KiB + 32 bytes a token of ``max_tokens``): a server that ignores ``max_tokens`` must not
fill memory or the cache. aiohttp stops reading at the bound; the SDK's client is given a
hook that does the same. Such a reply fails the call at once (asking again gets the same).
"""

from __future__ import annotations

import asyncio
import contextvars
import email.utils
import json
import random
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Literal

from ragaudit.errors import (
    LLMAuthError,
    LLMError,
    LLMNotFoundError,
    LLMReplyTooLongError,
    LLMTimeoutError,
)
from ragaudit.llm.types import GenerationParams, Messages, RawCompletion, cached_prompt_tokens
from ragaudit.records.values import unicode_text
from ragaudit.secrets import redact, register_secret

DEFAULT_BASE_URL = "https://api.openai.com/v1"
Transport = Literal["aiohttp", "openai-sdk"]


# What a reply may take beyond its text (the JSON envelope, usage, a server's own fields),
# and the most bytes one token of text can take in it: a token is a few characters, and
# JSON may write a character as \uXXXX (6 bytes; 12 for one outside the BMP).
REPLY_BYTES_BASE = 64 * 1024
REPLY_BYTES_PER_TOKEN = 32


def reply_size_limit(max_tokens: int) -> int:
    """The most bytes a chat-completion body may have for a request of ``max_tokens``:
    more than that, the server did not honour ``max_tokens`` (or sent something else), and
    the reply is refused rather than read into memory and cached.

    >>> reply_size_limit(512)
    81920
    """
    return REPLY_BYTES_BASE + REPLY_BYTES_PER_TOKEN * max_tokens


class _TooLong(Exception):
    def __init__(self, limit: int) -> None:
        self.limit = limit


# The bound of the reply being read, for the SDK's response hook (set around each call).
_reply_limit: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "ragaudit_reply_limit", default=None
)


def _too_long_by_header(headers: Mapping[str, str], limit: int) -> bool:
    """Whether the announced length alone is past ``limit`` (an uncompressed body)."""
    length = headers.get("Content-Length") or headers.get("content-length") or ""
    encoded = headers.get("Content-Encoding") or headers.get("content-encoding") or "identity"
    return encoded == "identity" and length.isdigit() and int(length) > limit


async def _read_bounded(response: Any, limit: int) -> bytes | None:
    """An aiohttp response's body, or None once it passes ``limit`` bytes (decoded): the
    connection is then dropped, not drained."""
    if _too_long_by_header(response.headers, limit):
        response.close()
        return None
    if response.content_length is not None and "Content-Encoding" not in response.headers:
        data: bytes = await response.read()  # framed by its length, within the bound
        return data
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > limit:
            response.close()
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _sdk_reply_hook(httpx: Any) -> Callable[[Any], Awaitable[None]]:
    """A response hook for the SDK's httpx client that refuses a body past the bound of
    the call (:data:`_reply_limit`) while it is read, before the SDK holds all of it."""

    class Bounded(httpx.AsyncByteStream):  # type: ignore[misc]  # httpx is Any here
        def __init__(self, inner: Any, limit: int) -> None:
            self.inner, self.limit = inner, limit

        async def __aiter__(self) -> AsyncIterator[bytes]:
            size = 0
            async for chunk in self.inner:
                size += len(chunk)
                if size > self.limit:
                    raise _TooLong(self.limit)
                yield chunk

        async def aclose(self) -> None:
            await self.inner.aclose()

    async def hook(response: Any) -> None:
        limit = _reply_limit.get()
        if limit is None:
            return
        if _too_long_by_header(response.headers, limit):
            raise _TooLong(limit)
        response.stream = Bounded(response.stream, limit)

    return hook


def _sdk_httpx() -> Any:
    """The HTTP library the installed openai SDK is built on (its errors are the causes of
    the SDK's connection errors)."""
    try:  # openai >= 2 is built on httpx2; older releases on httpx
        import httpx2 as httpx
    except ImportError:  # pragma: no cover - depends on the installed openai
        # The fallback binds the same name as httpx2 above, which mypy calls a redefinition.
        import httpx  # type: ignore[no-redef]
    return httpx


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    value = lowered.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
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


def _error_detail(body: Any) -> str:
    """The server's own error message from an OpenAI-style error body, redacted, short."""
    if isinstance(body, bytes | str):
        try:
            body = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return ""
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return redact(" ".join(str(message).split()))[:200]
    return ""


class _HTTPStatus(Exception):
    def __init__(self, status: int, headers: Mapping[str, str], detail: str) -> None:
        self.status, self.headers, self.detail = status, headers, detail


class _Timeout(Exception):
    pass


class _Unreachable(Exception):
    """A call that got no usable HTTP exchange: no connection (``protocol`` false), or a
    connection whose bytes are not a valid HTTP reply (``protocol`` true: a wrong port,
    an SSH daemon, a body cut short). Both are retried: a restarting server does either."""

    def __init__(self, cause: str, *, protocol: bool = False) -> None:
        self.cause, self.protocol = cause, protocol


def _completion_from(data: Any, attempt: int) -> RawCompletion:
    """Read an OpenAI chat-completion body; ValueError if it is not one."""
    try:
        choice = data["choices"][0]
        text = (choice.get("message") or {}).get("content") or ""
        usage = data.get("usage") or {}
        # A reply cut inside a character (an emoji's "\ud83d" without its other half) is
        # valid JSON but no text: with U+FFFD in place of the half, it can be cached,
        # hashed, written and judged like any other reply.
        text, _ = unicode_text(str(text))
        return RawCompletion(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=choice.get("finish_reason"),
            retries=attempt,
            cached_prompt_tokens=cached_prompt_tokens(data),
        )
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a chat completion ({type(exc).__name__}: {exc})") from None


def _protocol_cause(exc: BaseException) -> str:
    """What was wrong with a reply aiohttp could not read, short and on one line: the error's
    class and the first line of its message (``HttpProcessingError: Bad status line``), with
    what the server sent left out (it comes after the first line) and redacted if not."""
    name = type(exc.__cause__ or exc).__name__
    message = str(getattr(exc, "message", "") or "").strip()
    first = message.splitlines()[0].rstrip(" :") if message else ""
    return redact(f"{name}: {first}"[:100]) if first else name


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
        transport: Transport = "aiohttp",
    ) -> None:
        self.model = model
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        if api_key is None and self.base_url == DEFAULT_BASE_URL:
            raise LLMAuthError(
                f"openai:{model}: no API key: set OPENAI_API_KEY (or llm.api_key in ragaudit.yaml)"
            )
        register_secret(api_key)
        # Local servers (vLLM, Ollama, llama.cpp) often need no key; clients need a string.
        self._api_key = api_key or "no-key"
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.max_retry_wait_s = max_retry_wait_s
        self.backoff_base_s = backoff_base_s
        if transport not in ("aiohttp", "openai-sdk"):
            raise LLMError(f"unknown transport {transport!r}: use 'aiohttp' or 'openai-sdk'")
        self.transport: Transport = transport
        # HTTP connection pools belong to one event loop: one session per loop.
        self._sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]
        self._sessions = weakref.WeakKeyDictionary()

    def describe(self) -> str:
        """``openai:<model> at <url>``: where calls go, without credentials."""
        return f"openai:{self.model} at {redact(self.base_url)}"

    # -- transports -----------------------------------------------------------------------

    def _session(self) -> Any:
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None:
            session = self._new_aiohttp() if self.transport == "aiohttp" else self._new_sdk()
            self._sessions[loop] = session
        return session

    def _new_aiohttp(self) -> Any:
        import aiohttp

        connector = aiohttp.TCPConnector(
            limit=self.max_concurrency, limit_per_host=self.max_concurrency, ttl_dns_cache=300
        )
        return aiohttp.ClientSession(
            connector=connector,
            headers={
                "Authorization": f"Bearer {self._api_key}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
            timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            raise_for_status=False,
        )

    def _new_sdk(self) -> Any:
        import openai

        httpx = _sdk_httpx()
        limits = httpx.Limits(
            max_connections=self.max_concurrency, max_keepalive_connections=self.max_concurrency
        )
        return openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=self.base_url,
            max_retries=0,  # retries are ours, so both transports behave the same
            timeout=self.timeout_s,
            http_client=openai.DefaultAsyncHttpxClient(
                limits=limits,
                timeout=self.timeout_s,
                event_hooks={"response": [_sdk_reply_hook(httpx)]},
            ),
        )

    async def _post_aiohttp(self, body: dict[str, Any]) -> Any:
        import aiohttp

        session = self._session()
        try:
            async with session.post(
                f"{self.base_url}/chat/completions", data=json.dumps(body).encode("utf-8")
            ) as response:
                limit = reply_size_limit(body["max_tokens"])
                raw = await _read_bounded(response, limit)
                if response.status >= 400:
                    detail = _error_detail(raw) if raw is not None else ""
                    raise _HTTPStatus(response.status, response.headers, detail)
                if raw is None:
                    raise _TooLong(limit)
                try:
                    return json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    raise ValueError(f"reply is not JSON ({raw[:60]!r})") from None
                except RecursionError:  # some thousand '[': not a completion either
                    raise ValueError("reply is JSON nested too deeply to read") from None
        except TimeoutError:
            raise _Timeout() from None
        except aiohttp.ClientConnectionError as exc:
            raise _Unreachable(type(exc).__name__) from None
        except (aiohttp.ClientResponseError, aiohttp.ClientPayloadError) as exc:
            # With raise_for_status off, a ClientResponseError is a reply aiohttp could not
            # parse as HTTP (its cause: BadStatusLine, LineTooLong, ...) or a redirect loop.
            raise _Unreachable(_protocol_cause(exc), protocol=True) from None
        except aiohttp.ClientError as exc:  # whatever else aiohttp raises: one line, retried
            raise _Unreachable(type(exc).__name__) from None

    async def _post_sdk(self, body: dict[str, Any]) -> Any:
        import openai

        client = self._session()
        limit = reply_size_limit(body["max_tokens"])
        bound = _reply_limit.set(limit)
        try:
            response = await client.chat.completions.create(**body)
        except openai.APIStatusError as exc:
            raise _HTTPStatus(
                exc.status_code, exc.response.headers, _error_detail(exc.body)
            ) from None
        except openai.APITimeoutError:
            raise _Timeout() from None
        except openai.APIConnectionError as exc:
            cause, httpx = exc.__cause__ or exc, _sdk_httpx()
            protocol = isinstance(cause, httpx.ProtocolError | httpx.DecodingError)
            raise _Unreachable(type(cause).__name__, protocol=protocol) from None
        except openai.APIResponseValidationError as exc:
            raise ValueError(str(exc)) from None
        except RecursionError:  # a body of some thousand '[' the SDK parsed
            raise ValueError("reply is JSON nested too deeply to read") from None
        finally:
            _reply_limit.reset(bound)
        data = response.model_dump()
        # A compressed body is bounded as sent: its text is checked once decoded.
        text = ((data.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
        if len(text) > limit:
            raise _TooLong(limit)
        return data

    # -- the call -------------------------------------------------------------------------

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_wait_s)
        delay: float = self.backoff_base_s * (2**attempt)  # int ** int is Any to mypy
        return min(self.max_retry_wait_s, delay * (0.5 + random.random() / 2))

    def _request(self, messages: Messages, params: GenerationParams) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
        }
        if params.top_p is not None:
            body["top_p"] = params.top_p
        if params.seed is not None:
            body["seed"] = params.seed
        if params.stop:
            body["stop"] = list(params.stop)
        return body

    async def acomplete(self, messages: Messages, params: GenerationParams) -> RawCompletion:
        """One chat completion with retries; raises a one-line :class:`LLMError` subclass."""
        body = self._request(messages, params)
        post = self._post_aiohttp if self.transport == "aiohttp" else self._post_sdk
        last_problem = ""
        for attempt in range(self.max_retries + 1):
            retry_after: float | None = None
            try:
                return _completion_from(await post(body), attempt)
            except _HTTPStatus as exc:
                where = self.describe()
                detail = f": {exc.detail}" if exc.detail else ""
                if exc.status in (401, 403):
                    raise LLMAuthError(
                        f"{where}: the server refused the credentials (HTTP {exc.status}){detail}; "
                        "check OPENAI_API_KEY or llm.api_key"
                    ) from None
                if exc.status == 404:
                    raise LLMNotFoundError(
                        f"{where}: model '{self.model}' or the endpoint was not found (HTTP 404)"
                        f"{detail}; check llm.model and the base URL"
                    ) from None
                if exc.status != 429 and exc.status < 500 and exc.status not in (408, 409):
                    raise LLMError(
                        f"{where}: the server rejected the request (HTTP {exc.status}){detail}"
                    ) from None
                retry_after = parse_retry_after(exc.headers)
                last_problem = f"HTTP {exc.status}{detail}"
            except _Timeout:
                last_problem = f"no reply within {self.timeout_s:g} s"
                if attempt == self.max_retries:
                    raise LLMTimeoutError(
                        f"{self.describe()}: {last_problem} ({attempt + 1} attempts); "
                        "raise llm.timeout_s or check the server"
                    ) from None
            except _TooLong as exc:
                # Not asked again: a server that ignored max_tokens does so the next time.
                raise LLMReplyTooLongError(
                    f"{self.describe()}: a reply of more than {exc.limit:,} bytes, more than "
                    f"max_tokens={params.max_tokens} can need ({REPLY_BYTES_BASE // 1024} KiB + "
                    f"{REPLY_BYTES_PER_TOKEN} bytes a token): refused, not cached"
                ) from None
            except _Unreachable as exc:
                what = "no valid HTTP reply" if exc.protocol else "cannot connect"
                last_problem = f"{what} ({exc.cause})"
            except ValueError as exc:
                last_problem = f"malformed reply ({redact(str(exc))[:120]})"
            if attempt < self.max_retries:
                await asyncio.sleep(self._backoff(attempt, retry_after))
        raise LLMError(
            f"{self.describe()}: gave up after {self.max_retries + 1} attempts: {last_problem}"
        )

    async def aclose(self) -> None:
        """Close the HTTP session of the running loop, if any."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        session = self._sessions.pop(loop, None)
        if session is not None:
            await session.close()
