"""A real HTTP server speaking the OpenAI chat-completions protocol, with scripted replies.

It is the fake *around* the unit under test (the OpenAI-compatible backend): the backend
talks real HTTP to it over loopback. Replies are consumed from a script in order (status,
headers, body, delay, hang); when the script is empty it answers ``echo: <last user
message>`` after ``latency`` seconds. It counts requests and the most in flight at once.

Run as a program (for benchmarks) it serves until killed and prints ``PORT <n>``;
``GET /stats`` returns the counters.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    """One scripted reply. ``content`` is the assistant text; ``body`` a raw body instead."""

    status: int = 200
    content: str | None = None
    body: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    hang: bool = False


def _completion(content: str, model: str, prompt_words: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_words,
            "completion_tokens": len(content.split()),
            "total_tokens": prompt_words + len(content.split()),
        },
    }


class ScriptedLLMServer:
    """Start with :meth:`start` (a background thread) or use as a context manager."""

    def __init__(self, latency: float = 0.0, host: str = "127.0.0.1") -> None:
        self.latency = latency
        self.host = host
        self.port = 0
        self.script: deque[Reply] = deque()
        # When the script is empty: content (or a Reply) from the request body, if set.
        self.responder: Callable[[dict[str, Any]], str | Reply] | None = None
        self.requests: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None
        self._hangers: list[asyncio.Event] = []
        # Event-loop timers fire late by a fraction of a millisecond; measured at start-up
        # and subtracted, so that "latency 50 ms" holds each reply 50 ms on average.
        self._timer_overshoot = 0.0
        self._held_s = 0.0
        self._held_n = 0

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def enqueue(self, *replies: Reply) -> None:
        """Add replies to the script, consumed one per request, in order."""
        with self._lock:
            self.script.extend(replies)

    def reset_counters(self) -> None:
        with self._lock:
            self.requests.clear()
            self.headers_seen.clear()
            self.max_in_flight = 0

    # -- HTTP -----------------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    if line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                raw = await reader.readexactly(length) if length else b""
                if method == "GET" and path.endswith("/stats"):
                    stats = {
                        "requests": self.request_count,
                        "max_in_flight": self.max_in_flight,
                        "mean_hold_ms": 1000 * self._held_s / max(1, self._held_n),
                    }
                    await self._send(writer, 200, json.dumps(stats), {})
                    continue
                keep_open = await self._chat(writer, raw, headers)
                if not keep_open or headers.get("connection", "").lower() == "close":
                    return
        except (
            ConnectionError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            ValueError,
        ):
            return
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _chat(
        self, writer: asyncio.StreamWriter, raw: bytes, headers: dict[str, str]
    ) -> bool:
        loop = asyncio.get_running_loop()
        arrival = loop.time()
        body = json.loads(raw or b"{}")
        with self._lock:
            self.requests.append(body)
            self.headers_seen.append(headers)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            reply = self.script.popleft() if self.script else None
        try:
            if reply is not None and reply.hang:
                event = asyncio.Event()
                self._hangers.append(event)
                await event.wait()  # released only when the server stops
                return False
            delay = reply.delay if reply is not None else self.latency
            if delay:
                wait = arrival + delay - self._timer_overshoot - loop.time()
                await asyncio.sleep(max(0.0, wait))
                held = loop.time() - arrival
                with self._lock:
                    self._held_s += held
                    self._held_n += 1
                    # Feedback: nudge the correction so the mean hold converges on `delay`.
                    # Aim 0.1 ms above: an error then favours the server, not the client.
                    error = held - (delay + 0.0001)
                    self._timer_overshoot = min(
                        0.005, max(0.0, self._timer_overshoot + 0.05 * error)
                    )
            messages = body.get("messages") or [{}]
            prompt_words = sum(len(str(m.get("content", "")).split()) for m in messages)
            if reply is None and self.responder is not None:
                produced = self.responder(body)  # a text, or a Reply (e.g. an error status)
                reply = produced if isinstance(produced, Reply) else Reply(content=produced)
                if reply.hang:  # a responder may hang a request too
                    event = asyncio.Event()
                    self._hangers.append(event)
                    with contextlib.suppress(asyncio.CancelledError):  # the server stopping
                        await event.wait()
                    return False
            if reply is None or (reply.status == 200 and reply.body is None):
                if reply is not None and reply.content is not None:
                    content = reply.content
                elif self.responder is not None:
                    content = self.responder(body)
                else:
                    content = "echo: " + str(messages[-1].get("content", ""))
                payload = json.dumps(_completion(content, body.get("model", "?"), prompt_words))
                await self._send(writer, 200, payload, reply.headers if reply else {})
            else:
                text = reply.body
                if text is None:
                    text = json.dumps({"error": {"message": f"scripted {reply.status}"}})
                await self._send(writer, reply.status, text, reply.headers)
            return True
        finally:
            with self._lock:
                self.in_flight -= 1

    async def _send(
        self, writer: asyncio.StreamWriter, status: int, body: str, headers: dict[str, str]
    ) -> None:
        data = body.encode("utf-8")
        head = [
            f"HTTP/1.1 {status} X",
            "Content-Type: application/json",
            f"Content-Length: {len(data)}",
        ]
        head += [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
        await writer.drain()

    # -- lifetime -------------------------------------------------------------------------

    async def _calibrate(self) -> None:
        loop = asyncio.get_running_loop()
        late = []
        for _ in range(20):
            start = loop.time()
            await asyncio.sleep(0.01)
            late.append(loop.time() - start - 0.01)
        self._timer_overshoot = max(0.0, sorted(late)[len(late) // 2])

    async def _serve(self, ready: threading.Event) -> None:
        if self.latency:
            await self._calibrate()
        self._server = await asyncio.start_server(self._handle, self.host, self.port, backlog=512)
        self.port = self._server.sockets[0].getsockname()[1]
        ready.set()
        async with self._server:
            await self._server.serve_forever()

    def start(self) -> ScriptedLLMServer:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            with contextlib.suppress(asyncio.CancelledError):
                self._loop.run_until_complete(self._serve(ready))

        self._thread = threading.Thread(target=run, daemon=True, name="scripted-llm")
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("scripted LLM server did not start")
        return self

    def stop(self) -> None:
        if self._loop is None:
            return

        def shutdown() -> None:
            for event in self._hangers:
                event.set()
            if self._server is not None:
                self._server.close()
            for task in asyncio.all_tasks(self._loop):
                task.cancel()

        self._loop.call_soon_threadsafe(shutdown)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--reply", default=None, help="Answer every request with this text.")
    args = parser.parse_args()
    server = ScriptedLLMServer(latency=args.latency)
    server.port = args.port
    if args.reply is not None:
        fixed = args.reply
        server.responder = lambda _body: fixed
    ready = threading.Event()

    async def run() -> None:
        await server._serve(ready)

    async def announce() -> None:
        await asyncio.get_running_loop().run_in_executor(None, ready.wait)
        print(f"PORT {server.port}", flush=True)

    async def both() -> None:
        await asyncio.gather(run(), announce())

    try:  # a faster event loop keeps the fake server out of the client's measurements
        import uvloop

        uvloop.run(both())
    except ImportError:
        asyncio.run(both())


if __name__ == "__main__":
    main()
