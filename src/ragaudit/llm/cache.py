"""A persistent cache of LLM calls, keyed by the full request.

The key is a hash of (backend, model, messages, every generation parameter including the
sample index). It never includes credentials or the server URL, so a key rotation does not
empty the cache and no secret can leak into it. Replies are stored with their token counts
so a rerun reports what the original calls cost.

Cost per call matters at hundreds of calls per second: misses are answered from an
in-memory index of the stored keys (no SQL), and new replies are committed by a writer
thread in small batches (every ``batch_size`` replies or ``flush_interval_s``, and on
close). A process killed between two commits loses at most that batch, which is simply
asked again. A reply stored by another process after this one opened the cache is not
seen until the next open (the call is made again and the first stored reply is kept).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from ragaudit.llm.types import GenerationParams, Messages, RawCompletion

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_cache (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    finish_reason TEXT,
    created_at TEXT NOT NULL DEFAULT (datetime('now'))
)
"""
_INSERT = (
    "INSERT OR IGNORE INTO llm_cache (key, backend, model, request, text, prompt_tokens, "
    "completion_tokens, finish_reason) VALUES "
)
_ROW = "(?,?,?,?,?,?,?,?)"


def request_payload(
    backend: str, model: str, messages: Messages, params: GenerationParams
) -> dict[str, Any]:
    """The canonical description of a request: exactly what the cache key covers."""
    return {
        "backend": backend,
        "model": model,
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "params": params.model_dump(mode="json"),
    }


def cache_key(payload: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a request payload."""
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class LLMCache:
    """SQLite-backed request -> reply store, safe to share between threads.

    Lookups and stores touch only memory on the caller's thread; a writer thread commits
    new replies in batches, so an event loop making hundreds of calls per second never
    waits for the disk.
    """

    def __init__(self, path: Path, *, batch_size: int = 64, flush_interval_s: float = 0.5) -> None:
        self.path = path
        self.batch_size = batch_size
        self.flush_interval_s = flush_interval_s
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()  # the in-memory index and the pending batch
        self._db_lock = threading.Lock()  # the SQLite connection
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA busy_timeout=10000")
        self._conn.execute(_SCHEMA)
        self._keys = {row[0] for row in self._conn.execute("SELECT key FROM llm_cache")}
        self._pending: dict[str, tuple[Any, ...]] = {}
        self._flushing: dict[str, tuple[Any, ...]] = {}
        self._wake = threading.Event()
        self._closed = False
        self._writer: threading.Thread | None = None

    def get(self, key: str) -> RawCompletion | None:
        """The stored reply for ``key``, or None (a miss costs no disk access)."""
        with self._lock:
            row = self._pending.get(key) or self._flushing.get(key)
            if row is not None:
                return RawCompletion(*row[3:])
            if key not in self._keys:
                return None
        with self._db_lock:
            found = self._conn.execute(
                "SELECT text, prompt_tokens, completion_tokens, finish_reason "
                "FROM llm_cache WHERE key = ?",
                (key,),
            ).fetchone()
        return RawCompletion(*found) if found else None

    def put(self, key: str, payload: dict[str, Any], reply: RawCompletion) -> None:
        """Store a reply (the first one stored for a key wins); committed in batches."""
        with self._lock:
            if key in self._keys or key in self._pending or key in self._flushing:
                return
            self._pending[key] = (
                payload["backend"],
                payload["model"],
                payload,  # serialized by the writer, off the caller's thread
                reply.text,
                reply.prompt_tokens,
                reply.completion_tokens,
                reply.finish_reason,
            )
            full = len(self._pending) >= self.batch_size
            if self._writer is None:
                self._writer = threading.Thread(
                    target=self._write_loop, daemon=True, name="ragaudit-llm-cache"
                )
                self._writer.start()
        if full:
            self._wake.set()

    def forget(self, key: str) -> None:
        """Drop the reply stored for ``key``, so that the next call asks the backend again
        (a stored reply that turned out unusable must not be replayed forever)."""
        with self._db_lock:  # flush holds it while a batch is in flight: none is now
            with self._lock:
                self._pending.pop(key, None)
                self._keys.discard(key)
            self._conn.execute("DELETE FROM llm_cache WHERE key = ?", (key,))

    def _write_loop(self) -> None:
        while not self._closed:
            self._wake.wait(self.flush_interval_s)
            self._wake.clear()
            self.flush()

    def flush(self) -> None:
        """Commit every pending reply now (one transaction)."""
        with self._db_lock:
            with self._lock:
                if not self._pending:
                    return
                self._flushing, self._pending = self._pending, {}
                batch = self._flushing
            # One multi-row statement in autocommit: one SQLite step, so the writer thread
            # takes the GIL from the event loop once per batch rather than once per row.
            params = [
                value
                for key, (backend, model, payload, *reply) in batch.items()
                for value in (key, backend, model, json.dumps(payload, ensure_ascii=False), *reply)
            ]
            self._conn.execute(_INSERT + ",".join([_ROW] * len(batch)), params)
            with self._lock:
                self._keys.update(batch)
                self._flushing = {}

    def __len__(self) -> int:
        self.flush()
        with self._db_lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0])

    def close(self) -> None:
        """Commit pending replies, stop the writer and close the connection."""
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        if self._writer is not None:
            self._writer.join(10)
        self.flush()
        with self._db_lock:
            self._conn.close()
