"""A real HTTP server standing in for a user's RAG endpoint (what is *around* the HTTP
adapter under test). It answers POST /ask with JSON, and misbehaves on request:

* a query containing ``fail500`` always gets HTTP 500;
* ``flaky`` gets 500 twice per query, then an answer;
* ``hang`` never gets a reply (until the server stops);
* ``notjson`` gets a 200 whose body is not JSON;
* ``halfemoji`` gets an answer that ends in half a character: the JSON escape ``\\ud83d``
  of an emoji cut in two, written out as a truncating server sends it;
* ``badids`` gets sources whose ids are ``1`` and ``null``;
* anything else: ``{"data": {"answer": "answer to <query>"}, "sources": [{"id", "text"}]}``.

It counts requests per query and the most requests in flight at once.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from typing import Any

from aiohttp import web


class RAGServer:
    """Start as a context manager; ``url`` is the endpoint."""

    def __init__(self) -> None:
        self.port = 0
        self.calls: Counter[str] = Counter()
        self.headers_seen: list[dict[str, str]] = []
        self.bodies: list[Any] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/ask"

    async def _ask(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.bodies.append(body)
        self.headers_seen.append(dict(request.headers))
        query = str(body.get("question", ""))
        self.calls[query] += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if "hang" in query:
                assert self._stop is not None
                await self._stop.wait()
                return web.Response(status=503)
            if "fail500" in query or ("flaky" in query and self.calls[query] <= 2):
                return web.Response(status=500, text="boom")
            if "notjson" in query:
                return web.Response(status=200, text="<html>oops</html>")
            if "halfemoji" in query:
                cut = '{"data": {"answer": "cut \\ud83d"}, "sources": [{"id": "d", "text": "t"}]}'
                return web.Response(status=200, text=cut, content_type="application/json")
            if "echoid" in query:  # the question's last word, and a header, as ids
                token = request.headers.get("X-Token", "")
                sources = [
                    {"id": query.split()[-1], "text": "x"},
                    {"id": f"doc-{token}", "text": "y"},
                ]
                return web.json_response({"data": {"answer": "a"}, "sources": sources})
            if "badids" in query:
                sources = [{"id": 1, "text": "x"}, {"id": None, "text": "y"}]
                return web.json_response({"data": {"answer": "a"}, "sources": sources})
            await asyncio.sleep(float(body.get("delay", 0)))
            return web.json_response(
                {
                    "data": {"answer": f"answer to {query}"},
                    "sources": [
                        {"id": "doc-1", "text": "first passage"},
                        {"id": "doc-2", "text": "second passage"},
                    ],
                }
            )
        finally:
            self.in_flight -= 1

    def __enter__(self) -> RAGServer:
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            self._stop = asyncio.Event()
            app = web.Application()
            app.router.add_post("/ask", self._ask)
            self._runner = web.AppRunner(app, handle_signals=False)
            loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
