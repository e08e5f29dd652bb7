"""LLM-client throughput: 2,000 calls at concurrency 32 against a server with 50 ms latency.

The scripted OpenAI-compatible server runs in its own process. Baselines measured in the
same run: the theoretical rate the latency allows (concurrency / latency = 640 calls/s)
and a bare aiohttp client (no cache, no accounting, no retries) on the same server, which
shows what this machine's loopback and event loop leave for any client. Then ragaudit's
client with each transport, and a fully cached rerun of the same 2,000 calls.

Targets (issue 2): the default transport reaches >= 90 % of 640 calls/s; the cached rerun
takes < 1 s and makes no HTTP request.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ragaudit import aio  # noqa: E402
from ragaudit.config import LLMConfig  # noqa: E402
from ragaudit.llm import make_llm, user  # noqa: E402

CALLS = 2000
CONCURRENCY = 32
LATENCY = 0.05


def start_server() -> tuple[subprocess.Popen[str], str]:
    """The scripted server in its own process, so it does not share our interpreter."""
    proc = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "tests" / "support" / "scripted_llm_server.py"),
            "--latency",
            str(LATENCY),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    port = int(proc.stdout.readline().split()[1])
    return proc, f"http://127.0.0.1:{port}/v1"


def server_requests(base_url: str) -> int:
    """How many chat requests the server has answered so far."""
    with urllib.request.urlopen(base_url.replace("/v1", "/stats")) as reply:
        return int(json.load(reply)["requests"])


async def raw_aiohttp(base_url: str) -> float:
    """Calls/s of a bare aiohttp client at the same concurrency: the floor under any client."""
    import aiohttp

    sem = asyncio.Semaphore(CONCURRENCY)
    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(i: int) -> None:
            async with sem:
                body = {"model": "m", "messages": [{"role": "user", "content": f"raw {i}"}]}
                async with session.post(f"{base_url}/chat/completions", json=body) as reply:
                    await reply.json()

        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(CALLS)))
        return CALLS / (time.perf_counter() - start)


def timed_run(config: LLMConfig, cache: Path, base_url: str, tag: str) -> dict[str, float]:
    """2,000 distinct calls through ragaudit's client; time, HTTP requests, cache hits."""
    prompts = [[user(f"{tag} question number {i}")] for i in range(CALLS)]
    client = make_llm(config, cache_path=cache)

    async def go() -> None:
        await asyncio.gather(*(client.acomplete(p) for p in prompts))
        await client.aclose()

    before = server_requests(base_url)
    start = time.perf_counter()
    aio.run(go())
    elapsed = time.perf_counter() - start
    usage = client.meter.total()
    client.close()
    assert usage.calls + usage.cache_hits == CALLS and usage.failures == 0
    return {
        "seconds": elapsed,
        "calls_per_s": CALLS / elapsed,
        "http_requests": server_requests(base_url) - before,
        "cache_hits": usage.cache_hits,
    }


def run() -> dict[str, Any]:
    proc, base_url = start_server()
    theoretical = CONCURRENCY / LATENCY
    result: dict[str, Any] = {
        "calls": CALLS,
        "concurrency": CONCURRENCY,
        "latency_s": LATENCY,
        "theoretical_calls_per_s": theoretical,
    }
    try:
        raw = aio.run(raw_aiohttp(base_url))
        result["raw_aiohttp_calls_per_s"] = round(raw, 1)
        with tempfile.TemporaryDirectory() as tmp:
            for transport in ("aiohttp", "openai-sdk"):
                config = LLMConfig(
                    model="openai:bench",
                    base_url=base_url,
                    api_key="sk-bench-000000000000",
                    max_concurrency=CONCURRENCY,
                    timeout_s=30,
                    transport=transport,
                )
                cache = Path(tmp) / f"{transport}.sqlite"
                cold = timed_run(config, cache, base_url, transport)
                warm = timed_run(config, cache, base_url, transport)
                prefix = transport.replace("-", "_")
                result[f"{prefix}_calls_per_s"] = round(cold["calls_per_s"], 1)
                result[f"{prefix}_ratio_to_theoretical"] = round(
                    cold["calls_per_s"] / theoretical, 3
                )
                result[f"{prefix}_ratio_to_raw_aiohttp"] = round(cold["calls_per_s"] / raw, 3)
                result[f"{prefix}_cold_http_requests"] = cold["http_requests"]
                result[f"{prefix}_cached_rerun_s"] = round(warm["seconds"], 3)
                result[f"{prefix}_cached_rerun_http_requests"] = warm["http_requests"]
    finally:
        proc.terminate()
        proc.wait(10)
    result["target_rate_met"] = result["aiohttp_calls_per_s"] >= 0.9 * theoretical
    result["target_cached_met"] = (
        result["aiohttp_cached_rerun_s"] < 1.0 and result["aiohttp_cached_rerun_http_requests"] == 0
    )
    return result


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
