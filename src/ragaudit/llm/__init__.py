"""The LLM layer: one client interface over an OpenAI-compatible HTTP backend and the
embedded local model, with a persistent cache, bounded concurrency and usage accounting."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from ragaudit.errors import ConfigError
from ragaudit.lazy import lazy_exports
from ragaudit.llm.options import LLMConfig
from ragaudit.llm.types import Completion, GenerationParams, Message, assistant, system, user
from ragaudit.llm.usage import StepUsage, UsageMeter

if TYPE_CHECKING:
    from ragaudit.llm.backends.scripted import Scripted
    from ragaudit.llm.cache import LLMCache
    from ragaudit.llm.client import Backend, LLMClient

# The client and its cache load on first use: the options and value types above are all a
# configuration or a usage table needs.
__getattr__ = lazy_exports(
    __name__,
    {
        "LLMCache": "cache",
        "Backend": "client",
        "LLMClient": "client",
        "Scripted": "backends.scripted",
    },
)


def make_backend(config: LLMConfig) -> Backend:
    """The backend named by ``config.model`` (``local``, ``local:<gguf>``, ``openai:<model>``)."""
    if config.backend == "scripted":
        raise ConfigError(
            f"llm.model {config.model!r}: a scripted LLM lives in the Python process that made "
            "it (ra.llm.Scripted, given to ra.Project); name a real model here"
        )
    if config.backend == "openai":
        from ragaudit.llm.backends.openai_http import OpenAIBackend

        return OpenAIBackend(
            config.model_name,
            base_url=config.resolved_base_url(),
            api_key=config.resolved_api_key(),
            max_concurrency=config.max_concurrency,
            timeout_s=config.timeout_s,
            max_retries=config.max_retries,
            max_retry_wait_s=config.max_retry_wait_s,
            transport=config.transport,
        )
    from ragaudit.llm.backends.local import LocalBackend

    path = Path(config.model_name).expanduser() if config.model_name else None
    return LocalBackend(path, threads=config.threads, context_size=config.context_size)


def make_llm(
    config: LLMConfig,
    *,
    cache_path: Path | None = None,
    meter: UsageMeter | None = None,
    loop: asyncio.AbstractEventLoop | None = None,
    backend: Backend | None = None,
    retry_failed: bool = False,
) -> LLMClient:
    """A ready client: backend from the config (or ``backend``, an object of the caller's
    such as a :class:`Scripted`, never cached), cache at ``cache_path`` when caching is on;
    on ``loop`` when given (a session's), else on a loop of its own. ``retry_failed``: a
    stored reply that a structured call cannot use is asked for again instead of replayed
    (``--retry-failed``)."""
    from ragaudit.llm.cache import LLMCache
    from ragaudit.llm.client import LLMClient

    cached = config.cache and cache_path is not None and backend is None
    cache = LLMCache(cache_path) if cached and cache_path is not None else None
    params = GenerationParams(
        temperature=config.temperature, max_tokens=config.max_tokens, seed=config.seed
    )
    return LLMClient(
        backend if backend is not None else make_backend(config),
        cache=cache,
        meter=meter,
        default_params=params,
        structured_attempts=config.structured_attempts,
        loop=loop,
        retry_failed=retry_failed,
        name=config.model,
    )


__all__ = [
    "Completion",
    "GenerationParams",
    "LLMCache",
    "LLMClient",
    "Message",
    "Scripted",
    "StepUsage",
    "UsageMeter",
    "assistant",
    "make_backend",
    "make_llm",
    "system",
    "user",
]
