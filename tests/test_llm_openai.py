"""The OpenAI-compatible backend against a real local HTTP server with scripted replies."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from ragaudit.config import LLMConfig
from ragaudit.errors import (
    LLMAuthError,
    LLMError,
    LLMNotFoundError,
    LLMReplyTooLongError,
    LLMTimeoutError,
    StructuredOutputError,
)
from ragaudit.llm import GenerationParams, LLMClient, UsageMeter, make_llm, user
from ragaudit.llm.backends.openai_http import OpenAIBackend, parse_retry_after, reply_size_limit
from tests.support.scripted_llm_server import Reply, ScriptedLLMServer


@pytest.fixture(params=["aiohttp", "openai-sdk"])
def transport(request: pytest.FixtureRequest) -> str:
    """Every behavior holds for both HTTP transports."""
    return str(request.param)


def _client(
    transport: str,
    server: ScriptedLLMServer,
    tmp_path: Path | None = None,
    *,
    max_concurrency: int = 8,
    timeout_s: float = 5.0,
    max_retries: int = 3,
) -> LLMClient:
    config = LLMConfig(
        model="openai:scripted-model",
        base_url=server.base_url,
        api_key="sk-test-key-0123456789abcdef",
        max_concurrency=max_concurrency,
        timeout_s=timeout_s,
        max_retries=max_retries,
        transport=transport,
    )
    client = make_llm(config, cache_path=(tmp_path / "llm.sqlite") if tmp_path else None)
    assert isinstance(client.backend, OpenAIBackend)
    client.backend.backoff_base_s = 0.05  # keep the suite fast; backoff itself is tested below
    return client


def test_plain_completion_returns_text_and_usage(
    transport: str, llm_server: ScriptedLLMServer
) -> None:
    with _client(transport, llm_server) as client:
        reply = client.complete([user("hello there")])
    assert reply.text == "echo: hello there"
    assert reply.prompt_tokens == 2 and reply.completion_tokens == 3
    assert not reply.cached
    assert llm_server.requests[0]["model"] == "scripted-model"
    assert llm_server.headers_seen[0]["authorization"] == "Bearer sk-test-key-0123456789abcdef"


def test_429_with_retry_after_is_waited_out_then_succeeds(
    transport: str, llm_server: ScriptedLLMServer
) -> None:
    llm_server.enqueue(Reply(status=429, headers={"Retry-After": "1"}))
    with _client(transport, llm_server) as client:
        start = time.monotonic()
        reply = client.complete([user("q")])
        elapsed = time.monotonic() - start
        usage = client.meter.total()
    assert reply.text == "echo: q"
    assert llm_server.request_count == 2
    assert elapsed >= 0.95  # honoured Retry-After rather than the 0.05 s backoff
    assert usage.retries == 1 and usage.calls == 1


def test_500_then_success_is_retried(transport: str, llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(Reply(status=500), Reply(status=503))
    with _client(transport, llm_server) as client:
        assert client.complete([user("q")]).text == "echo: q"
    assert llm_server.request_count == 3


def test_persistent_5xx_gives_up_with_one_line(
    transport: str, llm_server: ScriptedLLMServer
) -> None:
    llm_server.enqueue(*[Reply(status=502)] * 3)
    with _client(transport, llm_server, max_retries=2) as client, pytest.raises(LLMError) as info:
        client.complete([user("q")])
    assert "gave up after 3 attempts" in str(info.value) and "HTTP 502" in str(info.value)
    assert "\n" not in str(info.value)


def test_hung_reply_hits_the_timeout_then_the_retry_succeeds(
    transport: str,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.enqueue(Reply(hang=True))
    with _client(transport, llm_server, timeout_s=0.5) as client:
        start = time.monotonic()
        reply = client.complete([user("q")])
    assert reply.text == "echo: q"
    assert 0.45 <= time.monotonic() - start < 5


def test_a_server_that_always_hangs_is_a_timeout_error(
    transport: str, llm_server: ScriptedLLMServer
) -> None:
    llm_server.enqueue(Reply(hang=True), Reply(hang=True))
    with (
        _client(transport, llm_server, timeout_s=0.3, max_retries=1) as client,
        pytest.raises(LLMTimeoutError, match=r"no reply within 0.3 s \(2 attempts\)"),
    ):
        client.complete([user("q")])


@pytest.mark.parametrize(
    ("status", "error", "words"),
    [
        (401, LLMAuthError, "refused the credentials (HTTP 401)"),
        (403, LLMAuthError, "refused the credentials (HTTP 403)"),
        (404, LLMNotFoundError, "model 'scripted-model' or the endpoint was not found"),
    ],
)
def test_auth_and_not_found_fail_at_once_with_one_line(
    transport: str, llm_server: ScriptedLLMServer, status: int, error: type, words: str
) -> None:
    llm_server.enqueue(Reply(status=status))
    with _client(transport, llm_server) as client, pytest.raises(error) as info:
        client.complete([user("q")])
    assert words in str(info.value)
    assert "\n" not in str(info.value)
    assert llm_server.request_count == 1  # not retried


class Verdict(BaseModel):
    correct: bool
    reason: str


def test_structured_call_re_asks_after_malformed_json(
    transport: str, llm_server: ScriptedLLMServer
) -> None:
    llm_server.enqueue(
        Reply(content='{"correct": tru, "reason": '),
        Reply(content='Sure! ```json\n{"correct": true, "reason": "matches"}\n```'),
    )
    with _client(transport, llm_server) as client:
        verdict = client.complete_json([user("judge this")], Verdict)
    assert verdict == Verdict(correct=True, reason="matches")
    assert llm_server.request_count == 2
    second = llm_server.requests[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": '{"correct": tru, "reason": '}
    assert "could not be used" in second[-1]["content"]


def test_structured_call_re_asks_after_schema_mismatch(
    transport: str, llm_server: ScriptedLLMServer
) -> None:
    llm_server.enqueue(
        Reply(content='{"correct": "maybe"}'), Reply(content='{"correct": false, "reason": "no"}')
    )
    with _client(transport, llm_server) as client:
        verdict = client.complete_json([user("judge")], Verdict)
    assert verdict.correct is False
    assert "reason" in llm_server.requests[1]["messages"][-1]["content"]


def test_structured_call_gives_up_with_a_typed_error(
    transport: str, llm_server: ScriptedLLMServer
) -> None:
    llm_server.enqueue(*[Reply(content=f"no json here ({i})") for i in range(3)])
    with _client(transport, llm_server) as client, pytest.raises(StructuredOutputError) as info:
        client.complete_json([user("judge")], Verdict, attempts=3)
    assert info.value.attempts == 3
    assert "no valid reply after 3 attempts (expected" in str(info.value)
    assert llm_server.request_count == 3


def test_a_greedy_model_that_repeats_its_rejected_reply_is_not_asked_a_third_time(
    transport: str, llm_server: ScriptedLLMServer
) -> None:
    """Told what was wrong, a model sampled at temperature 0 that gives the same reply
    again would give it a third time (7 of 7 such re-asks in the trial caches): the call
    gives up after two asks and says why. A sampled model may still vary: it gets all
    three."""
    llm_server.enqueue(*[Reply(content="no json here")] * 2)
    with _client(transport, llm_server) as client, pytest.raises(StructuredOutputError) as info:
        client.complete_json([user("judge")], Verdict, attempts=3)
    assert info.value.attempts == 2 and llm_server.request_count == 2
    assert "no valid reply after 2 attempts (the last two the same)" in str(info.value)
    llm_server.reset_counters()
    llm_server.enqueue(*[Reply(content="no json here")] * 3)
    sampled = GenerationParams(temperature=0.7)
    with _client(transport, llm_server) as client, pytest.raises(StructuredOutputError) as info:
        client.complete_json([user("judge again")], Verdict, sampled, attempts=3)
    assert info.value.attempts == 3 and llm_server.request_count == 3


def test_line_lists_are_validated_item_by_item(
    transport: str, llm_server: ScriptedLLMServer
) -> None:
    def must_have_placeholder(line: str) -> str:
        if "[Client.Name]" not in line:
            raise ValueError("missing placeholder [Client.Name]")
        return line

    llm_server.enqueue(
        Reply(content="1. Industry of [Client.Name]?\n2. What sector is it in?"),
        Reply(content="- Industry of [Client.Name]?\n- Sector of [Client.Name]?"),
    )
    with _client(transport, llm_server) as client:
        lines = client.complete_lines([user("write")], must_have_placeholder, min_items=2)
    assert lines == ["Industry of [Client.Name]?", "Sector of [Client.Name]?"]
    assert "missing placeholder" in llm_server.requests[1]["messages"][-1]["content"]


def test_concurrency_never_exceeds_max_concurrency(
    transport: str, llm_server: ScriptedLLMServer
) -> None:
    llm_server.latency = 0.02
    client = _client(transport, llm_server, max_concurrency=8)

    async def run() -> None:
        await asyncio.gather(*(client.acomplete([user(f"q{i}")]) for i in range(200)))
        await client.aclose()

    asyncio.run(run())
    client.close()
    assert llm_server.request_count == 200
    assert llm_server.max_in_flight == 8  # bounded, and the bound is actually used


def test_second_identical_run_makes_no_http_request(
    transport: str, llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    prompts = [[user(f"question {i}")] for i in range(20)]

    def run() -> tuple[list[str], UsageMeter]:
        with _client(transport, llm_server, tmp_path) as client:
            texts = [client.complete(p).text for p in prompts]
            return texts, client.meter

    first, meter1 = run()
    assert llm_server.request_count == 20 and meter1.total().calls == 20
    llm_server.reset_counters()
    second, meter2 = run()
    assert llm_server.request_count == 0
    assert second == first
    assert meter2.total().cache_hits == 20 and meter2.total().calls == 0


def test_k_samples_are_k_cache_entries(
    transport: str, llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    params = GenerationParams(temperature=0.7, seed=5)
    with _client(transport, llm_server, tmp_path) as client:
        client.sample([user("same")], 3, params)
        assert client.cache is not None and len(client.cache) == 3
        client.sample([user("same")], 3, params)
        assert client.meter.total().cache_hits == 3
    # The k samples are sent at once, so they reach the server in any order.
    assert sorted(r["seed"] for r in llm_server.requests) == [5, 6, 7]


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0


def test_backoff_grows_exponentially_and_is_capped() -> None:
    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", max_retry_wait_s=3.0)
    delays = [backend._backoff(attempt, None) for attempt in range(6)]
    assert all(d >= 0.25 for d in delays) and max(delays) <= 3.0
    assert backend._backoff(4, None) > backend._backoff(0, None)
    assert backend._backoff(0, 100.0) == 3.0  # Retry-After capped by max_retry_wait_s


def test_missing_key_for_the_public_api_is_a_one_line_error(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(LLMAuthError, match="no API key"):
        make_llm(LLMConfig(model="openai:gpt-4o-mini"))


def test_unreachable_server_is_reported(tmp_path: Path) -> None:
    config = LLMConfig(model="openai:m", base_url="http://127.0.0.1:9/v1", max_retries=1)
    with make_llm(config) as client:
        client.backend.backoff_base_s = 0.01
        with pytest.raises(LLMError, match="cannot connect"):
            client.complete([user("q")])


def test_a_200_reply_that_is_not_a_completion_is_retried(
    transport: str, llm_server: ScriptedLLMServer
) -> None:
    llm_server.enqueue(
        Reply(status=200, body="<html>proxy page</html>"),
        Reply(status=200, body='{"object": "nothing useful"}'),
    )
    with _client(transport, llm_server) as client:
        assert client.complete([user("q")]).text == "echo: q"
    assert llm_server.request_count == 3


def test_sync_and_async_calls_share_one_client(
    transport: str, llm_server: ScriptedLLMServer
) -> None:
    from ragaudit import aio

    with _client(transport, llm_server) as client:
        assert client.complete([user("sync")]).text == "echo: sync"

        async def inside() -> str:
            text = (await client.acomplete([user("async")])).text
            with pytest.raises(RuntimeError, match="use the a\\* methods"):
                client.complete([user("blocked")])
            await client.aclose()
            return text

        assert aio.run(inside()) == "echo: async"
    assert client.meter.total().calls == 2


def test_an_empty_reply_is_asked_again_and_never_cached(
    transport: str, llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    llm_server.enqueue(Reply(content=""), Reply(content="   "), Reply(content="Paris"))
    with _client(transport, llm_server, tmp_path) as client:
        assert client.complete([user("capital?")]).text == "Paris"
    assert llm_server.request_count == 3
    llm_server.enqueue(*(Reply(content="") for _ in range(3)))
    with _client(transport, llm_server, tmp_path) as client:
        assert client.complete([user("empty for good?")]).text == ""  # given up: kept empty
    llm_server.reset_counters()
    with _client(transport, llm_server, tmp_path) as client:
        assert client.complete([user("capital?")]).text == "Paris"  # stored
        again = client.complete([user("empty for good?")])  # not stored: asked again
    assert again.text == "echo: empty for good?" and not again.cached
    assert llm_server.request_count == 1


def test_a_stored_reply_that_cannot_be_parsed_is_asked_for_again_only_when_told(
    transport: str, llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """An unusable reply is a reply: replayed from the cache with its re-asks (a rerun asks
    nothing), and asked for again with ``retry_failed`` (issue 41 item 6)."""
    llm_server.enqueue(*(Reply(content='{"correct": tru') for _ in range(2)))
    with (
        _client(transport, llm_server, tmp_path) as client,
        pytest.raises(StructuredOutputError) as fresh,
    ):
        client.complete_json([user("judge this")], Verdict)
    assert llm_server.request_count == 2  # the same broken reply twice: not asked a third time
    assert fresh.value.from_cache == 0  # this server gave them
    llm_server.reset_counters()
    llm_server.enqueue(Reply(content='{"correct": true, "reason": "fixed server"}'))
    with (
        _client(transport, llm_server, tmp_path) as client,
        pytest.raises(StructuredOutputError) as replayed,
    ):
        client.complete_json([user("judge this")], Verdict)
    assert llm_server.request_count == 0  # the broken stored replies were replayed
    # The error says that the cache keeps these replies, in the words of the first run (a
    # record that stores the reason is not rewritten by a replay), and counts them.
    assert str(replayed.value) == str(fresh.value)
    assert "a rerun replays them; --retry-failed asks the server again" in str(replayed.value)
    assert replayed.value.from_cache == 2
    with _client(transport, llm_server, tmp_path) as client:
        client.retry_failed = True
        verdict = client.complete_json([user("judge this")], Verdict)
    assert verdict == Verdict(correct=True, reason="fixed server")
    assert llm_server.request_count == 1  # the broken stored reply was asked for again


def test_a_server_echoing_the_key_does_not_put_it_in_the_cache(
    transport: str, llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    key = "sk-test-key-0123456789abcdef"
    llm_server.enqueue(Reply(content=f"Your key is {key}, all good."))
    with _client(transport, llm_server, tmp_path) as client:
        assert client.complete([user("hi")]).text == "Your key is ***, all good."
    assert key.encode() not in (tmp_path / "llm.sqlite").read_bytes()


# -- replies larger than the request could need (issue 37 item 23) --------------------------


def test_a_reply_larger_than_the_request_could_need_is_refused_counted_and_not_cached(
    transport: str, llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """A 3 MB reply to a request for at most 64 tokens: a server that ignored max_tokens
    (or a proxy gone wrong). Refused at once, counted with its reason, never stored."""
    huge = "word " * 600_000  # 3 MB
    llm_server.enqueue(Reply(content=huge))
    params = GenerationParams(max_tokens=64)
    limit = reply_size_limit(64)
    with _client(transport, llm_server, tmp_path) as client:
        with pytest.raises(LLMReplyTooLongError) as refused:
            client.complete([user("a short answer, please")], params)
        assert client.complete([user("and now?")], params).text == "echo: and now?"
        usage = client.meter.total()
    message = str(refused.value)
    assert f"more than {limit:,} bytes" in message and "max_tokens=64" in message
    assert "not cached" in message and "\n" not in message
    assert (usage.failures, usage.oversized, usage.calls) == (1, 1, 1)
    assert llm_server.request_count == 2  # not retried: the same request gets the same reply
    cache = (tmp_path / "llm.sqlite").read_bytes()
    assert len(cache) < 100_000 and b"word word" not in cache
    llm_server.reset_counters()
    llm_server.enqueue(Reply(content="a fine answer"))
    with _client(transport, llm_server, tmp_path) as client:  # a rerun asks again
        assert client.complete([user("a short answer, please")], params).text == "a fine answer"
    assert llm_server.request_count == 1


def test_the_bound_keeps_what_max_tokens_can_produce_and_no_more(
    transport: str, llm_server: ScriptedLLMServer
) -> None:
    """The bound leaves room for what max_tokens can really produce, escaped: 12,288
    Japanese characters (at most 3 a token for 4,096 tokens) that JSON writes as \\uXXXX,
    74 KB; the same reply to a request for 16 tokens is refused."""
    text = "日本語" * 4096
    llm_server.enqueue(Reply(content=text), Reply(content=text))
    with _client(transport, llm_server) as client:
        reply = client.complete([user("in Japanese")], GenerationParams(max_tokens=4096))
        assert reply.text == text
        with pytest.raises(LLMReplyTooLongError):
            client.complete([user("in Japanese")], GenerationParams(max_tokens=16))


def _endless_server(content_length: bool) -> tuple[asyncio.AbstractEventLoop, int, list[int]]:
    """A server whose reply does not end (200 MB in chunks of 64 KB, as long as they are
    read), announced with a 10 GB Content-Length or chunked. Returns its loop, port, and
    the bytes it managed to send."""
    import socket
    import threading

    sent = [0]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(next(
            (line.split(b":")[1] for line in head.split(b"\r\n")
             if line.lower().startswith(b"content-length")), b"0"))  # fmt: skip
        await reader.readexactly(length)
        framing = "Content-Length: 10000000000" if content_length else "Transfer-Encoding: chunked"
        writer.write(
            f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{framing}\r\n\r\n".encode()
        )
        chunk = b'{"choices": [{"message": {"content": "' + b"x" * 65_536
        try:
            while sent[0] < 200_000_000:
                data = chunk if content_length else b"%x\r\n%s\r\n" % (len(chunk), chunk)
                writer.write(data)
                await writer.drain()
                sent[0] += len(chunk)
                chunk = b"x" * 65_536
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    loop = asyncio.new_event_loop()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    loop.run_until_complete(asyncio.start_server(handle, "127.0.0.1", port))
    threading.Thread(target=loop.run_forever, daemon=True).start()
    return loop, port, sent


@pytest.mark.parametrize("content_length", [True, False], ids=["10GB-length", "chunked"])
def test_an_endless_reply_is_refused_at_the_bound_not_read_to_its_end(
    transport: str, content_length: bool
) -> None:
    loop, port, sent = _endless_server(content_length)
    config = LLMConfig(
        model="openai:m", base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-t-0123456789",
        timeout_s=60, max_retries=0, transport=transport,
    )  # fmt: skip
    start = time.perf_counter()
    with make_llm(config) as client, pytest.raises(LLMReplyTooLongError):
        client.complete([user("hi")], GenerationParams(max_tokens=16))
    assert time.perf_counter() - start < 10  # refused, not timed out
    assert sent[0] < 20_000_000  # read to the bound (and socket buffers), then dropped
    loop.call_soon_threadsafe(loop.stop)


def test_a_refused_reply_is_shown_with_its_reason_and_counted(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    from tests.support.cli import ragaudit

    llm_server.enqueue(Reply(content="word " * 600_000))
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "sk-t-0000000000"}
    result = ragaudit("doctor", "--example", "--llm", "openai:m", cwd=tmp_path, env=env)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "LLM check failed" in result.stderr and "refused, not cached" in result.stderr
    assert "1 oversized" in result.stdout  # the usage table
    usage = json.loads((tmp_path / "runs" / "default" / "usage.json").read_text())
    assert usage["steps"]["doctor"]["oversized"] == 1
    assert usage["steps"]["doctor"]["failures"] == 1


def test_the_prompt_tokens_a_server_took_from_its_cache_are_counted_per_step(
    transport: str, llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    body = {
        "choices": [{"message": {"role": "assistant", "content": "yes"}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 120,
            "completion_tokens": 1,
            "prompt_tokens_details": {"cached_tokens": 96},
        },
    }
    llm_server.enqueue(Reply(body=json.dumps(body)), Reply(content="no details"))
    with _client(transport, llm_server) as client:
        with client.meter.step("judge"):
            client.complete([user("first")])
            client.complete([user("second")])
        client.meter.write(tmp_path / "usage.json")
    step = json.loads((tmp_path / "usage.json").read_text())["steps"]["judge"]
    # The second reply says nothing of its cache: it adds its prompt tokens, none cached.
    assert (step["calls"], step["cached_prompt_tokens"]) == (2, 96)
    assert step["prompt_tokens"] == 120 + 1  # the scripted server counts prompt words
