"""The ``llm`` section of ragaudit.yaml: which model ragaudit itself uses, and how it is
called (concurrency, timeouts, retries, sampling, cache)."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field, SecretStr, field_validator

from ragaudit.errors import ConfigError
from ragaudit.llm.prices import ModelPrice
from ragaudit.options import MAX_CONCURRENCY, MAX_SEED, MAX_TIMEOUT_S, StrictOptions
from ragaudit.secrets import mask_url_query, register_secret

# The most threads llama.cpp's compute library is built for (ggml's GGML_MAX_N_THREADS).
MAX_LOCAL_THREADS = 512


class LLMConfig(StrictOptions):
    """The language model ragaudit itself uses (for wording, judging, ...)."""

    model: str = Field(
        "local",
        description="'local' (embedded model), 'local:/path/model.gguf', or 'openai:<model>' "
        "('scripted:<name>': a ra.llm.Scripted of the Python process, never in a file).",
    )
    base_url: str | None = Field(
        None, description="OpenAI-compatible server; else OPENAI_BASE_URL."
    )
    api_key: SecretStr | None = Field(None, description="Else OPENAI_API_KEY. Never printed.")
    transport: Literal["aiohttp", "openai-sdk"] = Field(
        "aiohttp",
        description="HTTP client for openai:<model>: 'aiohttp' (fast, default) or the official "
        "SDK ('openai-sdk').",
    )
    max_concurrency: int = Field(8, ge=1, le=MAX_CONCURRENCY)
    timeout_s: float = Field(120.0, gt=0, le=MAX_TIMEOUT_S, description="Per-call timeout.")
    max_retries: int = Field(4, ge=0, le=50, description="Retries on 429/5xx/timeouts.")
    max_retry_wait_s: float = Field(
        60.0, gt=0, le=3600, description="Cap on one backoff or Retry-After (at most an hour)."
    )
    temperature: float = Field(0.0, ge=0, le=2)
    # A million tokens: more than any model's reply, so a cap above it is a typo.
    max_tokens: int = Field(512, ge=1, le=1_000_000)
    seed: int = Field(0, ge=0, le=MAX_SEED)
    structured_attempts: int = Field(3, ge=1, le=10, description="Asks for one structured reply.")
    threads: int | None = Field(
        None,
        ge=1,
        le=MAX_LOCAL_THREADS,
        description="Local model CPU threads (default: all).",
    )
    context_size: int = Field(
        4096,
        ge=256,
        le=10_000_000,  # the longest context windows models have are of this order
        description="The model's context window in tokens: the local model is loaded with it; "
        "doctor flags corpus chunks longer than it.",
    )
    cache: bool = Field(True, description="Persistent cache of every call in the run directory.")
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="USD per million input and output tokens, per model ('gpt-4o-mini' or "
        "'openai:gpt-4o-mini': {input: 0.15, output: 0.60}); overrides the default table "
        "(ragaudit.llm.prices.DEFAULT_PRICES, a dated snapshot). The embedded model costs 0.",
    )

    @field_validator("model")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        backend, _, rest = value.partition(":")
        if backend == "scripted" and rest:
            return value  # a ra.llm.Scripted given to ra.Project: checked where it is used
        if backend not in {"local", "openai"}:
            raise ValueError(
                f"unknown backend '{backend}': use 'local', 'local:/path.gguf' or 'openai:<model>'"
            )
        if backend == "openai" and not rest:
            raise ValueError("'openai:' needs a model name, e.g. 'openai:gpt-4o-mini'")
        return value

    @field_validator("base_url")
    @classmethod
    def _no_credentials(cls, value: str | None) -> str | None:
        problem = url_credentials_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @property
    def backend(self) -> str:
        """The backend kind: ``local``, ``openai`` (or ``scripted``, from Python)."""
        return self.model.partition(":")[0]

    @property
    def model_name(self) -> str:
        """What follows the backend: a model name, a GGUF path, or '' for the embedded model."""
        return self.model.partition(":")[2]

    def resolved_base_url(self) -> str | None:
        """The server URL: the config's, else ``OPENAI_BASE_URL``, else None (OpenAI's default)."""
        url = self.base_url or os.environ.get("OPENAI_BASE_URL") or None
        problem = url_credentials_problem(url)
        if problem:
            raise ConfigError(f"OPENAI_BASE_URL: {problem}")
        return url

    def resolved_api_key(self) -> str | None:
        """The API key: the config's, else ``OPENAI_API_KEY``; registered for redaction."""
        key = self.api_key.get_secret_value() if self.api_key else os.environ.get("OPENAI_API_KEY")
        register_secret(key)
        return key


def url_credentials_problem(url: str | None) -> str | None:
    """Why an LLM server URL cannot be used as given, or None. A user or password in it
    (``http://user:pw@host/v1``), or a query or fragment (``?api_key=...``), is refused,
    and what could be a secret in it registered, so that it is masked wherever it could
    appear: OpenAI-compatible servers take the key as a Bearer token, which the URL's
    credentials would clash with, and the request path goes after the base URL, past any
    query, so no query there is sent as one, whatever its parameters are called (a key
    under a name no rule knows, such as ``?code=``, is not shown either: the message never
    quotes the URL)."""
    if not url:
        return None
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        credentials = parts.username is not None or parts.password is not None
    except ValueError:
        parts, credentials = None, False  # not a URL: the HTTP client reports that
    if credentials and parts is not None:
        register_secret(parts.password)
    if mask_url_query(url) != url:  # registers every secret-like value it masks
        return (
            "a password or key in the URL's query is not supported (it is not sent): give "
            "the server's key as llm.api_key or OPENAI_API_KEY, and the URL without it"
        )
    if credentials:
        return (
            "a user or password in the URL is not supported (it is not sent): give the "
            "server's key as llm.api_key or OPENAI_API_KEY, and the URL without credentials"
        )
    if "?" in url or "#" in url:
        return (
            "a query in the URL is not supported (the request path goes after the base URL, "
            "so it is not sent as one): give the URL without it, and the server's key as "
            "llm.api_key or OPENAI_API_KEY"
        )
    return None
