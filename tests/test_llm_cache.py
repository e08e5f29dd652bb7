"""The persistent LLM cache: keys cover the whole request, replies survive reopening,
first stored reply wins, and batched writes are committed on close."""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

import pytest

from ragaudit.llm.cache import LLMCache, cache_key, request_payload
from ragaudit.llm.types import GenerationParams, RawCompletion, user


def _key(text: str, **params: object) -> tuple[str, dict]:
    payload = request_payload("openai", "m", [user(text)], GenerationParams(**params))
    return cache_key(payload), payload


def test_key_changes_with_every_part_of_the_request() -> None:
    base = _key("q")[0]
    assert base == _key("q")[0]
    assert base != _key("q2")[0]
    assert base != _key("q", temperature=0.5)[0]
    assert base != _key("q", sample_index=1)[0]
    assert base != _key("q", max_tokens=7)[0]
    other_model = cache_key(request_payload("openai", "m2", [user("q")], GenerationParams()))
    assert base != other_model


def test_replies_survive_reopening_and_first_reply_wins(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    cache = LLMCache(path)
    key, payload = _key("q")
    cache.put(key, payload, RawCompletion("first", 3, 1, "stop"))
    cache.put(key, payload, RawCompletion("second", 3, 1, "stop"))
    assert cache.get(key) == RawCompletion("first", 3, 1, "stop")  # visible before commit
    cache.close()
    reopened = LLMCache(path)
    assert reopened.get(key) == RawCompletion("first", 3, 1, "stop")
    assert reopened.get(_key("never asked")[0]) is None
    reopened.close()


def test_batches_are_committed_by_the_writer_without_close(tmp_path: Path) -> None:
    cache = LLMCache(tmp_path / "llm.sqlite", batch_size=10, flush_interval_s=0.05)
    for i in range(25):
        key, payload = _key(f"q{i}")
        cache.put(key, payload, RawCompletion(f"a{i}", 1, 1))
    assert len(cache) == 25
    cache.close()


def _fill_then_die(path: str, n: int, ready) -> None:  # type: ignore[no-untyped-def]
    cache = LLMCache(Path(path), batch_size=8, flush_interval_s=60)
    for i in range(n):
        key, payload = _key(f"q{i}")
        cache.put(key, payload, RawCompletion(f"a{i}", 1, 1))
    cache.flush()
    key, payload = _key("unflushed")
    cache.put(key, payload, RawCompletion("lost", 1, 1))
    ready.set()
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_killed_process_keeps_every_committed_reply(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    proc = ctx.Process(target=_fill_then_die, args=(str(path), 20, ready))
    proc.start()
    proc.join(60)
    assert proc.exitcode == -signal.SIGKILL
    cache = LLMCache(path)
    assert all(cache.get(_key(f"q{i}")[0]) is not None for i in range(20))
    assert cache.get(_key("unflushed")[0]) is None  # at most the open batch is lost
    assert len(cache) == 20
    cache.close()


def test_an_unusable_reply_is_replayed_and_asked_again_only_with_retry_failed(
    tmp_path: Path,
) -> None:
    """Issue 41 item 6: an unusable reply is a reply. Stored with its re-asks, a rerun
    replays the same failure without a call; ``retry_failed`` asks for it again."""
    from ragaudit.errors import StructuredOutputError
    from ragaudit.llm.backends.scripted import Scripted
    from ragaudit.llm.client import LLMClient

    path = tmp_path / "llm.sqlite"
    ask = [user('Reply with {"n": <a number>}')]

    def client(backend: Scripted, retry_failed: bool = False) -> LLMClient:
        return LLMClient(backend, cache=LLMCache(path), retry_failed=retry_failed)

    broken = Scripted(default="no number today")
    with client(broken) as llm, pytest.raises(StructuredOutputError):
        llm.complete_json(ask, dict[str, int])
    assert len(broken.requests) == 2  # asked, re-asked, the same reply: not a third time
    fixed = Scripted(default='{"n": 4}')
    with client(fixed) as llm, pytest.raises(StructuredOutputError):
        llm.complete_json(ask, dict[str, int])
    assert fixed.requests == [] and llm.meter.total().calls == 0
    assert llm.meter.total().cache_hits == 2 and llm.meter.total().llm_seconds == 0
    with client(fixed, retry_failed=True) as llm:
        assert llm.complete_json(ask, dict[str, int]) == {"n": 4}
    assert len(fixed.requests) == 1
