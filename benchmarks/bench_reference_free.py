"""Issue 18: scoring 2,000 responses with the four reference-free metrics through
``ragaudit judge --reference-free``'s step, against the scripted server (50 ms a reply, 32
calls at once, one reply valid for every prompt).

Baseline, in the same run: the latency bound, the time the HTTP requests the scoring made
need at that latency and concurrency (requests x 0.05 s / 32). The scoring's LLM time is
its wall time less the sentence encoder's (answer relevancy embeds every text in one batch,
CPU work that no server latency bounds; timed by a wrapper around the real encoder and
reported on its own). Then the same command again: it finds every score in
scores/<system>.jsonl and asks nothing; and once more with the scores removed, when every
call comes from the LLM cache.

Targets: the LLM time reaches >= 90% of the latency bound; the cached rerun takes < 2 s.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_llm_client import (  # noqa: E402
    CONCURRENCY,
    LATENCY,
    server_requests,
    start_server,
)
from ragaudit.config import parse_config  # noqa: E402
from ragaudit.records.io import write_jsonl_atomic  # noqa: E402
from ragaudit.records.models import (  # noqa: E402
    QueryRecord,
    Reference,
    ResponseRecord,
    RetrievedItem,
)
from ragaudit.rundir import RunDir  # noqa: E402
from ragaudit.steps import reference_free  # noqa: E402
from ragaudit.steps.session import Session  # noqa: E402

RESPONSES = 2000
ORIGINAL_ENCODER = reference_free.sentence_encoder
TRIALS = 3
# One reply every prompt of the scorer accepts (its readers ignore the other keys).
REPLY = json.dumps(
    {
        "claims": ["The plant opened in 1998."],
        "verdicts": ["yes"],
        "questions": ["When did the plant open?"],
        "noncommittal": False,
        "useful": True,
        "same": True,
    }
)


def _config(base_url: str, root: Path) -> str:
    return f"""
run: {{root: {root}, name: bench}}
llm:
  model: openai:bench
  base_url: {base_url}
  api_key: sk-bench-000000000000
  max_concurrency: {CONCURRENCY}
  timeout_s: 30
systems:
  - name: rag
    retriever: keyword
    generator: concise
"""


def _run_dir(root: Path) -> RunDir:
    run = RunDir(root / "bench").create()
    write_jsonl_atomic(
        run.dataset,
        [
            QueryRecord(
                query_id=f"q{i}",
                group_id=f"g{i // 2}",
                variant="short" if i % 2 else "long",
                query=f"When did plant number {i} open?",
                reference=Reference.from_values([1998]),
            )
            for i in range(RESPONSES)
        ],
    )
    write_jsonl_atomic(
        run.responses("rag"),
        [
            ResponseRecord(
                query_id=f"q{i}",
                system="rag",
                response=f"Plant {i} opened in 1998.",
                retrieved=[RetrievedItem(id=f"d{i % 40}", text=f"Report {i % 40}: 1998.")],
            )
            for i in range(RESPONSES)
        ],
    )
    return run


class TimedEncoder:
    """The real sentence encoder, with the seconds it spent (the wrapper only times it)."""

    def __init__(self) -> None:
        encode = ORIGINAL_ENCODER()
        assert encode is not None, "the benchmark needs the dense extra"
        self._encode = encode
        self.seconds = 0.0
        self.texts = 0

    def __call__(self, texts: list[str]) -> list[list[float]]:
        start = time.perf_counter()
        out = self._encode(texts)
        self.seconds += time.perf_counter() - start
        self.texts += len(texts)
        return out


def _score(config_text: str, run: RunDir, encoder: TimedEncoder) -> dict[str, Any]:
    config = parse_config(config_text)
    original = reference_free.sentence_encoder
    reference_free.sentence_encoder = lambda: encoder
    try:
        with Session(config, run) as session:
            start = time.perf_counter()
            entries = reference_free.score_run(session)
            seconds = time.perf_counter() - start
    finally:
        reference_free.sentence_encoder = original
    entry = entries["rag"]
    return {
        "seconds": seconds,
        "scored_now": entry.scored_now,
        "calls": dict(entry.calls),
        "undefined": {m: dict(c) for m, c in entry.undefined.items()},
    }


def run(trials: int = TRIALS) -> dict[str, Any]:
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    proc, base_url = start_server(REPLY)
    result: dict[str, Any] = {
        "responses": RESPONSES,
        "concurrency": CONCURRENCY,
        "latency_s": LATENCY,
        "trials": trials,
    }
    ratios: list[float] = []
    totals: list[float] = []
    cached: list[float] = []
    from_cache: list[float] = []
    try:
        # Load the encoder once, outside the timings (as a long-lived process has it).
        TimedEncoder()(["warm up"])
        for trial in range(trials):
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp)
                run_dir = _run_dir(root)
                config_text = _config(base_url, root)
                encoder = TimedEncoder()
                before = server_requests(base_url)
                cold = _score(config_text, run_dir, encoder)
                requests = server_requests(base_url) - before
                assert cold["scored_now"] == RESPONSES and not cold["undefined"], cold
                bound = requests * LATENCY / CONCURRENCY
                llm_seconds = cold["seconds"] - encoder.seconds
                ratios.append(bound / llm_seconds)
                totals.append(cold["seconds"])
                again = _score(config_text, run_dir, TimedEncoder())
                assert again["scored_now"] == 0
                cached.append(again["seconds"])
                shutil.rmtree(run_dir.scores_dir)
                before = server_requests(base_url)
                rerun = _score(config_text, run_dir, TimedEncoder())
                assert server_requests(base_url) == before, "the rerun reached the server"
                from_cache.append(rerun["seconds"])
                if trial == 0:
                    result["http_requests"] = requests
                    result["calls_per_response"] = {
                        m: round(n / RESPONSES, 2) for m, n in cold["calls"].items()
                    }
                    result["latency_bound_s"] = round(bound, 2)
                    result["encoder_texts"] = encoder.texts
                    result["encoder_s"] = round(encoder.seconds, 2)
    finally:
        proc.terminate()
        proc.wait(10)
        if cores:
            os.sched_setaffinity(0, cores)
    result["scoring_s_trials"] = [round(t, 2) for t in totals]
    result["llm_ratio_to_latency_bound_trials"] = [round(r, 3) for r in ratios]
    result["llm_ratio_to_latency_bound"] = round(statistics.median(ratios), 3)
    result["cached_rerun_s_max"] = round(max(cached), 3)
    result["llm_cache_rerun_s_max"] = round(max(from_cache), 2)
    result["target_rate_met"] = result["llm_ratio_to_latency_bound"] >= 0.9
    result["target_cached_met"] = result["cached_rerun_s_max"] < 2.0
    return result


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
