"""LLM-client throughput: 2,000 calls at concurrency 32 against a server with 50 ms latency.

The scripted OpenAI-compatible server runs in its own process. Baselines measured in the
same run: the theoretical rate the latency allows (concurrency / latency = 640 calls/s)
and a bare aiohttp client (no cache, no accounting, no retries) on the same server, which
shows what this machine's loopback and event loop leave for any client. Then ragaudit's
client with each transport, and a fully cached rerun of the same 2,000 calls.

Each figure is the median of ``TRIALS`` trials of 2,000 calls (every trial is reported);
the machine's noise is a few per cent from one trial to the next.

Targets (issue 2): the default transport reaches >= 90 % of 640 calls/s; the cached rerun
takes < 1 s and makes no HTTP request.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
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
from ragaudit.llm import make_llm, user  # noqa: E402
from ragaudit.llm.options import LLMConfig  # noqa: E402

CALLS = 2000
CONCURRENCY = 32
LATENCY = 0.05
TRIALS = 3


def start_server(reply: str | None = None) -> tuple[subprocess.Popen[str], str]:
    """The scripted server in its own process, so it does not share our interpreter;
    ``reply`` is what it answers to every request (default: an echo of the prompt)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "tests" / "support" / "scripted_llm_server.py"),
            "--latency",
            str(LATENCY),
            *(["--reply", reply] if reply is not None else []),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    port = int(proc.stdout.readline().split()[1])
    pin_cores(proc.pid)
    return proc, f"http://127.0.0.1:{port}/v1"


def pin_cores(server_pid: int) -> None:
    """Server on the last core, this process (the client) on the others: the two do not
    migrate onto one core and disturb each other's timing (a no-op on one core)."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(cores) < 2:
        return
    os.sched_setaffinity(server_pid, {cores[-1]})
    os.sched_setaffinity(0, set(cores[:-1]))


def server_stats(base_url: str) -> dict[str, Any]:
    """The server's counters: requests answered, most in flight, mean time a reply is held."""
    with urllib.request.urlopen(base_url.replace("/v1", "/stats")) as reply:
        return dict(json.load(reply))


def server_requests(base_url: str) -> int:
    """How many chat requests the server has answered so far."""
    return int(server_stats(base_url)["requests"])


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


def run(trials: int = TRIALS) -> dict[str, Any]:
    # pin_cores narrows this process to one core; the benchmarks after this one (and their
    # child processes, which inherit it) must get every core back.
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    proc, base_url = start_server()
    theoretical = CONCURRENCY / LATENCY
    result: dict[str, Any] = {
        "calls": CALLS,
        "concurrency": CONCURRENCY,
        "latency_s": LATENCY,
        "trials": trials,
        "theoretical_calls_per_s": theoretical,
    }
    rates: dict[str, list[float]] = {"raw_aiohttp": [], "aiohttp": [], "openai_sdk": []}
    cached: dict[str, list[float]] = {"aiohttp": [], "openai_sdk": []}
    cached_requests = 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            # Trials interleave the baseline and both transports, so that a slow spell of
            # the machine hits them alike.
            for trial in range(trials):
                rates["raw_aiohttp"].append(aio.run(raw_aiohttp(base_url)))
                for transport in ("aiohttp", "openai-sdk"):
                    config = LLMConfig(
                        model="openai:bench",
                        base_url=base_url,
                        api_key="sk-bench-000000000000",
                        max_concurrency=CONCURRENCY,
                        timeout_s=30,
                        transport=transport,
                    )
                    name = transport.replace("-", "_")
                    cache = Path(tmp) / f"{name}-{trial}.sqlite"
                    cold = timed_run(config, cache, base_url, f"{name}{trial}")
                    warm = timed_run(config, cache, base_url, f"{name}{trial}")
                    assert cold["http_requests"] == CALLS
                    rates[name].append(cold["calls_per_s"])
                    cached[name].append(warm["seconds"])
                    cached_requests += int(warm["http_requests"])
        result["server_mean_hold_ms"] = round(server_stats(base_url)["mean_hold_ms"], 2)
    finally:
        proc.terminate()
        proc.wait(10)
        if cores:
            os.sched_setaffinity(0, cores)
    raw = statistics.median(rates["raw_aiohttp"])
    for name, values in rates.items():
        median = statistics.median(values)
        result[f"{name}_calls_per_s"] = round(median, 1)
        result[f"{name}_trials"] = [round(v, 1) for v in values]
        result[f"{name}_ratio_to_theoretical"] = round(median / theoretical, 3)
        if name != "raw_aiohttp":
            result[f"{name}_ratio_to_raw_aiohttp"] = round(median / raw, 3)
    for name, values in cached.items():
        result[f"{name}_cached_rerun_s_max"] = round(max(values), 3)
    result["cached_rerun_http_requests"] = cached_requests
    result["target_rate_met"] = result["aiohttp_calls_per_s"] >= 0.9 * theoretical
    result["target_cached_met"] = (
        result["aiohttp_cached_rerun_s_max"] < 1.0 and cached_requests == 0
    )
    return result


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
