"""The embedded backend: a GGUF model run on the CPU by llama.cpp (through xllamacpp),
in-process and offline.

llama.cpp keeps one context; calls are serialized with a lock and run in a worker thread so
the event loop stays responsive. The model loads lazily on the first call.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

from ragaudit.errors import LLMError, ModelAssetError
from ragaudit.llm.model_assets import INSTALL_HINT, MODEL_FILENAME, ensure_embedded_model
from ragaudit.llm.types import GenerationParams, Messages, RawCompletion


class LocalBackend:
    """Chat completions from a local GGUF model; the default is the embedded model."""

    kind = "local"
    max_concurrency = 1

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        threads: int | None = None,
        context_size: int = 4096,
    ) -> None:
        self._explicit_path = model_path
        # The cache key names the model file, not its folder: moving it keeps the cache.
        self.model = model_path.name if model_path else MODEL_FILENAME
        self.threads = threads or os.cpu_count() or 1
        self.context_size = context_size
        self._server: Any = None
        self._lock = threading.Lock()

    def describe(self) -> str:
        """``local:<model file>``."""
        return f"local:{self.model}"

    def _load(self) -> Any:
        try:
            import xllamacpp
        except ImportError:
            raise ModelAssetError(
                f"the local backend needs llama.cpp bindings (xllamacpp): {INSTALL_HINT}"
            ) from None
        if self._explicit_path is not None:
            path = self._explicit_path
            if not path.is_file():
                raise ModelAssetError(f"local model not found: {path}")
        else:
            path = ensure_embedded_model()
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = self.context_size
        params.n_parallel = 1
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        params.warmup = False
        params.verbosity = -1
        try:
            return xllamacpp.Server(params)
        except Exception as exc:  # the binding raises plain exceptions on load failure
            raise ModelAssetError(f"cannot load local model {path}: {exc}") from None

    def load(self) -> None:
        """Load the model now rather than on the first call (idempotent)."""
        with self._lock:
            if self._server is None:
                self._server = self._load()

    def _complete_blocking(self, messages: Messages, params: GenerationParams) -> RawCompletion:
        with self._lock:
            if self._server is None:
                self._server = self._load()
            request: dict[str, Any] = {
                "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
                "max_tokens": params.max_tokens,
                "temperature": params.temperature,
                "seed": params.seed if params.seed is not None else 0,
            }
            if params.top_p is not None:
                request["top_p"] = params.top_p
            if params.stop:
                request["stop"] = list(params.stop)
            reply = self._server.handle_chat_completions(request)
        if not isinstance(reply, dict) or "error" in reply or not reply.get("choices"):
            detail = reply.get("error") if isinstance(reply, dict) else reply
            if isinstance(detail, dict):
                detail = detail.get("message", detail)
            raise LLMError(f"{self.describe()}: the model failed: {str(detail)[:200]}")
        choice = reply["choices"][0]
        usage = reply.get("usage") or {}
        return RawCompletion(
            text=(choice.get("message") or {}).get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            finish_reason=choice.get("finish_reason"),
        )

    async def acomplete(self, messages: Messages, params: GenerationParams) -> RawCompletion:
        """One completion, run in a worker thread (calls are serialized)."""
        return await asyncio.to_thread(self._complete_blocking, messages, params)

    async def aclose(self) -> None:
        """Nothing per loop to release; the model stays loaded until the process ends."""
