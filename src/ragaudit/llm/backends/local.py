"""The embedded backend: a GGUF model run on the CPU by llama.cpp (through xllamacpp),
in-process and offline.

llama.cpp keeps one context; calls are serialized with a lock and run in a worker thread so
the event loop stays responsive. The model loads lazily on the first call.

One loaded model serves the whole process: every backend with the same file and settings
shares it, and loading another one releases the previous. Each loaded llama.cpp server keeps
its own pool of OpenMP threads, and on few cores idle pools make the busy one about 25%
slower (measured: 3.5 s -> 4.3 s per judge call with three loaded), besides costing a load
(about 4 s) and 1 GB per step of a pipeline.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

from ragaudit.errors import LLMError, ModelAssetError
from ragaudit.llm.model_assets import INSTALL_HINT, MODEL_FILENAME, ensure_embedded_model
from ragaudit.llm.types import GenerationParams, Messages, RawCompletion, cached_prompt_tokens

# (model path, threads, context size) -> the loaded server; at most one entry.
_LOADED: dict[tuple[str, int, int], Any] = {}
# Serializes loads and calls: one llama.cpp context, one caller at a time.
_PROCESS_LOCK = threading.RLock()


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
        self._path: Path | None = None  # resolved (and checked) on the first load
        self._lock = _PROCESS_LOCK

    def describe(self) -> str:
        """``local:<model file>``."""
        return f"local:{self.model}"

    def _server(self) -> Any:
        """The process's loaded server for this model and settings (call under the lock)."""
        path = self._model_path()
        key = (str(path), self.threads, self.context_size)
        server = _LOADED.get(key)
        if server is None:
            _LOADED.clear()  # release the other model (and its threads) before loading
            server = _LOADED[key] = self._load(path)
        return server

    def _model_path(self) -> Path:
        if self._path is None:
            if self._explicit_path is None:
                self._path = ensure_embedded_model()
            elif not self._explicit_path.is_file():
                raise ModelAssetError(f"local model not found: {self._explicit_path}")
            else:
                self._path = self._explicit_path
        return self._path

    def _load(self, path: Path) -> Any:
        try:
            import xllamacpp
        except ImportError:
            raise ModelAssetError(
                f"the local backend needs llama.cpp bindings (xllamacpp): {INSTALL_HINT}"
            ) from None
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
            self._server()

    def _complete_blocking(self, messages: Messages, params: GenerationParams) -> RawCompletion:
        with self._lock:
            server = self._server()
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
            reply = server.handle_chat_completions(request)
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
            cached_prompt_tokens=cached_prompt_tokens(reply),
        )

    async def acomplete(self, messages: Messages, params: GenerationParams) -> RawCompletion:
        """One completion, run in a worker thread (calls are serialized)."""
        return await asyncio.to_thread(self._complete_blocking, messages, params)

    async def aclose(self) -> None:
        """Nothing per loop to release; the model stays loaded for the process's next
        client (the next step of a pipeline) until another model is loaded."""
