"""A persistent cache of LLM calls, keyed by the full request.

The key is a hash of (backend, model, messages, every generation parameter including the
sample index). It never includes credentials or the server URL, so a key rotation does not
empty the cache and no secret can leak into it. Replies are stored with their token counts
so a rerun reports what the original calls cost. SQLite in WAL mode keeps writes cheap
(no fsync per call) and lets several processes read one cache.
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
    """SQLite-backed request -> reply store, safe to share between threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA busy_timeout=10000")
        self._conn.execute(_SCHEMA)

    def get(self, key: str) -> RawCompletion | None:
        """The stored reply for ``key``, or None."""
        with self._lock:
            row = self._conn.execute(
                "SELECT text, prompt_tokens, completion_tokens, finish_reason "
                "FROM llm_cache WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        return RawCompletion(
            text=row[0], prompt_tokens=row[1], completion_tokens=row[2], finish_reason=row[3]
        )

    def put(self, key: str, payload: dict[str, Any], reply: RawCompletion) -> None:
        """Store a reply (the first one stored for a key wins)."""
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO llm_cache (key, backend, model, request, text, "
                "prompt_tokens, completion_tokens, finish_reason) VALUES (?,?,?,?,?,?,?,?)",
                (
                    key,
                    payload["backend"],
                    payload["model"],
                    json.dumps(payload, ensure_ascii=False, sort_keys=True),
                    reply.text,
                    reply.prompt_tokens,
                    reply.completion_tokens,
                    reply.finish_reason,
                ),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0])

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()
