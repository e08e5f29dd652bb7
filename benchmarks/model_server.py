"""The embedded model behind an OpenAI-compatible HTTP server on loopback, for benchmarks
that run ragaudit and another tool on the same model: ``/<client>/v1/chat/completions``
and ``/<client>/v1/embeddings`` (all-MiniLM-L6-v2, the dense extra's encoder), with every
request and its tokens counted per client (the first path segment), so each tool's calls
are counted the same way, by the server, whatever the tool itself reports.

Calls run one at a time, as the embedded model runs them for ragaudit.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter, defaultdict
from typing import Any

from aiohttp import web

from ragaudit.llm.backends.local import LocalBackend
from ragaudit.llm.types import GenerationParams


class ModelServer:
    """Start with :meth:`start` (a background thread); :attr:`base_url` ends before the
    client segment: ``f"{server.base_url}/ragas/v1"`` counts as client ``ragas``."""

    def __init__(self, context_size: int = 4096) -> None:
        self.backend = LocalBackend(context_size=context_size)
        self.counts: dict[str, Counter[str]] = defaultdict(Counter)
        self.base_url = ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self._lock = asyncio.Lock()

    def start(self) -> ModelServer:
        """Load the model and serve on a free loopback port."""
        self.backend.load()
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result()
        return self

    def stop(self) -> None:
        """Stop serving."""
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def usage(self, client: str) -> dict[str, float]:
        """Requests, prompt and completion tokens, and model seconds of one client."""
        c = self.counts[client]
        return {
            "requests": c["requests"],
            "prompt_tokens": c["prompt_tokens"],
            "completion_tokens": c["completion_tokens"],
            "model_seconds": c["model_ms"] / 1000,
            "embedding_requests": c["embedding_requests"],
        }

    async def _serve(self) -> None:
        app = web.Application(client_max_size=32 * 1024 * 1024)
        app.router.add_post("/{client}/v1/chat/completions", self._chat)
        app.router.add_post("/{client}/v1/embeddings", self._embeddings)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"

    async def _chat(self, request: web.Request) -> web.Response:
        client = request.match_info["client"]
        body: dict[str, Any] = await request.json()
        messages = [
            {"role": m["role"], "content": _text(m.get("content"))} for m in body["messages"]
        ]
        n = int(body.get("n") or 1)
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or 1024
        choices, prompt, completion = [], 0, 0
        for i in range(n):
            params = GenerationParams(
                temperature=float(body.get("temperature", 0.0) or 0.0),
                max_tokens=int(max_tokens),
                seed=int(body.get("seed") or 0) + i,
                top_p=body.get("top_p"),
                stop=body.get("stop") if isinstance(body.get("stop"), list) else None,
            )
            async with self._lock:
                start = time.perf_counter()
                raw = await self.backend.acomplete(messages, params)
                self.counts[client]["model_ms"] += int(1000 * (time.perf_counter() - start))
            self.counts[client]["requests"] += 1
            self.counts[client]["prompt_tokens"] += raw.prompt_tokens
            self.counts[client]["completion_tokens"] += raw.completion_tokens
            prompt += raw.prompt_tokens
            completion += raw.completion_tokens
            choices.append(
                {
                    "index": i,
                    "message": {"role": "assistant", "content": raw.text},
                    "finish_reason": raw.finish_reason or "stop",
                }
            )
        return web.json_response(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "local"),
                "choices": choices,
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            }
        )

    async def _embeddings(self, request: web.Request) -> web.Response:
        from ragaudit.systems.retrievers import embed

        client = request.match_info["client"]
        body = await request.json()
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        self.counts[client]["embedding_requests"] += 1
        vectors = await asyncio.to_thread(embed, [str(t) for t in texts])
        return web.json_response(
            {
                "object": "list",
                "data": [
                    {"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                    for i, v in enumerate(vectors)
                ],
                "model": "all-MiniLM-L6-v2",
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            }
        )


def _text(content: Any) -> str:
    """A message's text, whether a string or OpenAI's list of parts."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")
