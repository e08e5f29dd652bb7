"""The embedded model's limit on this machine (issue 40 §1), and how close the LLM-bound
steps of a run get to it.

The model runs in-process through xllamacpp, as the local backend runs it (same file, same
threads, no warm-up at load), without ragaudit's client around it: what the steps could
get if nothing but the model took time. Measured, in one run:

- **Prompt processing**, tokens/s, at prompt lengths of the steps: the demo's steps send
  143 (judge), 230 (document generation), 295 (answering) and 390 (wording and
  verification) prompt tokens per call on average, so 150 and 400 bracket them; 1,000 and
  2,000 are a corpus with longer passages (several retrieved chunks, a long report) within
  the 4,096-token window. One token is generated (max_tokens=1), and a unique nonce opens
  the prompt so that neither the slot nor llama.cpp's prompt cache can reuse any of it.
- **Generation**, tokens/s, of one sequence writing a fixed number of tokens (ignore_eos)
  after a short prompt its slot already holds (decoding alone), and of 2 and 4 sequences
  decoded together: a server with that many slots (``n_parallel``; the context scaled so
  each slot keeps the 4,096-token window) and as many requests from Python threads at once.
  ``handle_chat_completions`` releases the GIL and queues a task for llama.cpp's own loop
  thread, which decodes the slots' tokens in one batch; the observed concurrency (sum of
  request times / span) shows whether the requests were in flight together.
- **Prefix reuse**: a 2,000-token shared prefix then a different short question: the first
  call, and the following ones (llama.cpp's ``cache_prompt``, on by default, keeps the
  slot's tokens), against the unique prompts of the same length measured for prompt processing.

Every figure is the median of ``reps`` repetitions; a repetition loads each server in
turn, so a slow spell of the machine hits every configuration alike. Ratios are to the
single-sequence baseline of the same run: generation of one sequence, or, for prefix
reuse, the unique prefixes.

Then, given usage records (``--usage runs/<run>/usage.json``, or RAGAUDIT_BENCH_USAGE in
``make bench``), each LLM-bound step's fraction of the limit: its ideal time (prompt
tokens at the measured prompt rate for its mean prompt length, plus completion tokens at
the one-sequence generation rate) over its wall time; and the same against the best
generation rate measured with several sequences. The prompt tokens a step found in
llama.cpp's prompt cache (usage.json's ``cached_prompt_tokens``) are not counted as
processed; a file written before that count was kept gives a bracket instead (see
``step_fractions``). Target (issue 40): every step >= 0.7, judged where the count is kept.

``python benchmarks/bench_model_limit.py [--quick] [--usage PATH ...]``; in ``make bench``
as ``model-limit``, alone on the machine: other work on the two cores stalls llama.cpp's
threads and every figure with them (``load_average_at_start`` is in the results).
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import platform
import random
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from ragaudit.errors import ModelAssetError  # noqa: E402
from ragaudit.llm.backends.local import LocalBackend  # noqa: E402
from ragaudit.llm.model_assets import ensure_embedded_model  # noqa: E402
from ragaudit.llm.usage import StepUsage, UsageFile  # noqa: E402

SLOT_CONTEXT = 4096  # the local backend's context size: every slot keeps this window
TARGET_FRACTION = 0.7
# The chat template and the user line add about this many tokens to the filler's words
# (one token each: measured 1.00 token per word for WORDS on the embedded model).
TEMPLATE_TOKENS = 26
GENERATION_PROMPT = "river city bridge market school water light house road table"
# fmt: off
WORDS = (
    "the", "report", "says", "that", "river", "city", "bridge", "market", "school", "water",
    "light", "house", "road", "table", "paper", "field", "garden", "family", "number", "system",
    "group", "company", "service", "question", "result", "month", "level", "office", "program",
    "problem", "power", "money", "story", "window", "course", "answer",
)
# fmt: on


@dataclass(frozen=True)
class Sizes:
    """How much each measurement does: FULL for ``make bench``, QUICK to prove the
    benchmark works in a minute or two."""

    reps: int
    lengths: tuple[int, ...]  # prompt tokens aimed at for prompt processing
    generated: int  # tokens each sequence writes
    parallel: tuple[int, ...]  # sequences decoded together; 1 is the baseline
    prefix: int  # tokens of the shared prefix: one of ``lengths`` (its unique baseline)
    followers: int  # calls after the first on one prefix


FULL = Sizes(
    reps=3,
    lengths=(150, 400, 1000, 2000),
    generated=128,
    parallel=(1, 2, 4),
    prefix=2000,
    followers=3,
)
QUICK = Sizes(reps=2, lengths=(150, 400), generated=16, parallel=(1, 2, 4), prefix=400, followers=2)


@dataclass(frozen=True)
class Call:
    """One chat completion: when it ran (perf_counter seconds) and what the server says it
    did: prompt tokens, tokens it found cached, generated tokens, and its own timings."""

    start: float
    end: float
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    prompt_ms: float
    predicted_ms: float

    @property
    def seconds(self) -> float:
        """Wall time of the call, as its caller sees it."""
        return self.end - self.start


@dataclass(frozen=True)
class Limit:
    """The rates a step is judged against: prompt tokens/s at measured prompt lengths
    (``(length, rate)`` pairs, by length) and generated tokens/s."""

    prompt: tuple[tuple[float, float], ...]
    generation: float

    def prompt_rate(self, length: float) -> float:
        """Prompt tokens/s for a prompt of ``length`` tokens. Between two measured lengths
        the time of a call is interpolated linearly (a fixed cost plus a cost per token fits
        prompt processing); outside them, the rate of the nearest measured length."""
        points = sorted(self.prompt)
        if length <= points[0][0]:
            return points[0][1]
        for (low, low_rate), (high, high_rate) in itertools.pairwise(points):
            if length <= high:
                share = (length - low) / (high - low)
                seconds = (1 - share) * low / low_rate + share * high / high_rate
                return length / seconds
        return points[-1][1]

    def ideal_seconds(self, calls: int, prompt_tokens: int, completion_tokens: int) -> float:
        """The time the model alone needs for ``calls`` calls reading ``prompt_tokens`` and
        writing ``completion_tokens`` in all, at this limit's rates (the prompt rate taken at
        the calls' mean prompt length)."""
        if calls <= 0:
            return 0.0
        mean_prompt = prompt_tokens / calls
        return prompt_tokens / self.prompt_rate(mean_prompt) + completion_tokens / self.generation


def step_fractions(
    steps: Mapping[str, StepUsage],
    limit: Limit,
    best: Limit | None = None,
    uncounted: Collection[str] = (),
) -> dict[str, dict[str, Any]]:
    """For each step that made real model calls: its calls, tokens in and out, wall time,
    ideal time at ``limit`` and the fraction of the limit it reaches (ideal / wall; 1.0
    would be the model busy all the time at its measured rates). ``fraction_in_calls``
    divides by the time spent inside the calls instead, which separates the cost around the
    calls from the cost inside them. With ``best`` (several sequences decoded together), the
    fraction of that limit too. Steps the cache answered entirely are left out: no model
    time to judge.

    A step's prompt tokens include those llama.cpp found in its prompt cache (the shared
    instructions of consecutive calls), which cost almost nothing; usage.json counts them
    (``cached_prompt_tokens``) and only the others are processed. For the steps in
    ``uncounted`` (files written before the count was kept) the fraction is bracketed:
    ``fraction_of_limit`` takes every prompt token as processed (an upper bound; above 1
    says the step reuses cached prefixes) and ``fraction_generation_only`` takes none (a
    lower bound)."""
    out: dict[str, dict[str, Any]] = {}
    for name, usage in steps.items():
        if usage.calls <= 0 or usage.wall_seconds <= 0:
            continue
        cached = None if name in uncounted else usage.cached_prompt_tokens
        processed = usage.prompt_tokens - (cached or 0)
        ideal = limit.ideal_seconds(usage.calls, processed, usage.completion_tokens)
        row: dict[str, Any] = {
            "calls": usage.calls,
            "cache_hits": usage.cache_hits,
            "prompt_tokens": usage.prompt_tokens,
            "cached_prompt_tokens": cached,
            "completion_tokens": usage.completion_tokens,
            "prompt_tokens_per_call": round(usage.prompt_tokens / usage.calls),
            "completion_tokens_per_call": round(usage.completion_tokens / usage.calls, 1),
            "wall_s": round(usage.wall_seconds, 1),
            "ideal_s": round(ideal, 1),
            "fraction_of_limit": round(ideal / usage.wall_seconds, 3),
            "fraction_in_calls": (
                round(ideal / usage.llm_seconds, 3) if usage.llm_seconds > 0 else None
            ),
        }
        if cached is None:
            writing = usage.completion_tokens / limit.generation
            row["fraction_generation_only"] = round(writing / usage.wall_seconds, 3)
        if best is not None:
            best_ideal = best.ideal_seconds(usage.calls, processed, usage.completion_tokens)
            row["fraction_of_best"] = round(best_ideal / usage.wall_seconds, 3)
        out[name] = row
    return out


def read_steps(paths: Sequence[Path]) -> dict[str, StepUsage]:
    """The steps of each usage.json, named ``<run folder>/<step>`` (``demo/templates``);
    where two files' run folders share a name, by as many of their parent folders as tell
    them apart (``a/runs/demo/judge``, ``b/runs/demo/judge``)."""
    return {name: usage for name, (usage, _) in _read_steps(paths).items()}


def uncounted_steps(paths: Sequence[Path]) -> set[str]:
    """The steps of :func:`read_steps` whose file does not count their cached prompt
    tokens (written before usage.json kept ``cached_prompt_tokens``)."""
    return {name for name, (_, counted) in _read_steps(paths).items() if not counted}


def _read_steps(paths: Sequence[Path]) -> dict[str, tuple[StepUsage, bool]]:
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"no usage file at {path}")
    folders = [path.resolve().parent.parts for path in paths]
    depth = 1
    while len({folder[-depth:] for folder in folders}) < len(set(folders)):
        depth += 1
    steps: dict[str, tuple[StepUsage, bool]] = {}
    for path, folder in zip(paths, folders, strict=True):
        raw = json.loads(path.read_text(encoding="utf-8")).get("steps") or {}
        for name, usage in UsageFile.read(path).steps.items():
            counted = "cached_prompt_tokens" in (raw.get(name) or {})
            steps["/".join((*folder[-depth:], name))] = (usage, counted)
    return steps


# --- the measurements --------------------------------------------------------------------


def _load(n_parallel: int) -> Any:
    """A server as the local backend loads it (same model, threads and settings), with
    ``n_parallel`` slots of SLOT_CONTEXT tokens each."""
    import xllamacpp

    backend = LocalBackend(context_size=SLOT_CONTEXT)
    params = xllamacpp.CommonParams()
    params.model.path = str(ensure_embedded_model())
    params.n_ctx = SLOT_CONTEXT * n_parallel  # split evenly between the slots
    params.n_parallel = n_parallel
    params.cpuparams.n_threads = backend.threads
    params.cpuparams_batch.n_threads = backend.threads
    params.warmup = False
    params.verbosity = -1
    return xllamacpp.Server(params)


def _filler(words: int, rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(max(words, 0)))


def _messages(system: str, question: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


def _unique(tokens: int, rng: random.Random) -> str:
    """About ``tokens`` prompt tokens in all once templated, opened by a nonce so that no
    cache holds any prefix of it."""
    return f"{uuid.uuid4().hex[:8]} {_filler(tokens - TEMPLATE_TOKENS, rng)}"


def _call(server: Any, messages: list[dict[str, str]], max_tokens: int, **extra: Any) -> Call:
    """One timed completion; raises when the server answers with an error."""
    start = time.perf_counter()
    reply = server.handle_chat_completions(
        {"messages": messages, "max_tokens": max_tokens, "temperature": 0, "seed": 0, **extra}
    )
    end = time.perf_counter()
    if not isinstance(reply, dict) or "error" in reply or not reply.get("choices"):
        raise RuntimeError(f"the model failed: {str(reply)[:300]}")
    usage, timings = reply.get("usage") or {}, reply.get("timings") or {}
    return Call(
        start=start,
        end=end,
        prompt_tokens=int(usage.get("prompt_tokens", 0)),
        cached_tokens=int(timings.get("cache_n", 0)),
        completion_tokens=int(usage.get("completion_tokens", 0)),
        prompt_ms=float(timings.get("prompt_ms", 0.0)),
        predicted_ms=float(timings.get("predicted_ms", 0.0)),
    )


def _together(server: Any, n: int, generated: int) -> list[Call]:
    """``n`` requests from ``n`` threads released at once, each writing exactly
    ``generated`` tokens (ignore_eos). The prompt is short and always the same: after the
    warm-up every slot holds it in its cache, so the time is the decoding's alone (the
    generation rate of the limit; the prompt's is measured apart)."""
    barrier = threading.Barrier(n)
    calls: list[Call | None] = [None] * n
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            barrier.wait()
            messages = _messages(GENERATION_PROMPT, "Write a long story with these words.")
            calls[i] = _call(server, messages, generated, ignore_eos=True)
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    done = [c for c in calls if c is not None]
    short = [c.completion_tokens for c in done if c.completion_tokens != generated]
    if short:  # ignore_eos not honoured: the rate would be of fewer tokens than counted
        raise RuntimeError(f"asked for {generated} tokens, got {short}")
    return done


def _prompt_processing(server: Any, lengths: Sequence[int], rng: random.Random) -> dict[int, Call]:
    """One call per length: a unique prompt, one token generated."""
    out = {}
    for length in lengths:
        call = _call(server, _messages(_unique(length, rng), "Reply with one word."), 1)
        if call.cached_tokens > 8:  # only the template's opening tokens may be shared
            raise RuntimeError(f"a unique prompt found {call.cached_tokens} tokens cached")
        out[length] = call
    return out


def _prefix_reuse(server: Any, sizes: Sizes, rng: random.Random) -> dict[str, list[Call]]:
    """The same prefix (new to the cache) followed by different questions: the first
    call, then the followers; one token generated."""
    shared = _unique(sizes.prefix, rng)
    question = "Question {}: which word of the text above comes first?"
    first = _call(server, _messages(shared, question.format(0)), 1)
    followers = [
        _call(server, _messages(shared, question.format(i)), 1)
        for i in range(1, sizes.followers + 1)
    ]
    return {"first": [first], "followers": followers}


def _log(message: str) -> None:
    """Progress on stderr: a full run takes minutes, and a slow spell should show where."""
    print(f"  [model-limit {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _repetition(sizes: Sizes, rng: random.Random, label: str) -> dict[str, Any]:
    """Each configuration once, one loaded server at a time (an idle server's threads slow
    the busy one)."""
    out: dict[str, Any] = {"together": {}}
    for n in sizes.parallel:
        server = _load(n)
        try:
            _together(server, n, 8)  # warm-up: the first decode after a load is slow
            calls = out["together"][n] = _together(server, n, sizes.generated)
            span = max(c.end for c in calls) - min(c.start for c in calls)
            rate = sum(c.completion_tokens for c in calls) / span
            _log(f"{label} {n} sequence(s) together: {rate:.2f} tokens/s")
            if n == 1:
                out["prompt"] = _prompt_processing(server, sizes.lengths, rng)
                rates = ", ".join(
                    f"{c.prompt_tokens} tokens {c.prompt_tokens / c.seconds:.1f}/s"
                    for c in out["prompt"].values()
                )
                _log(f"{label} prompt processing: {rates}")
                out["prefix"] = _prefix_reuse(server, sizes, rng)
                seconds = ", ".join(
                    f"{c.seconds:.2f} s" for k in ("first", "followers") for c in out["prefix"][k]
                )
                _log(f"{label} shared prefix, first then following calls: {seconds}")
        finally:
            del server  # frees the model and its threads before the next load
    return out


def _median(values: Iterable[float], digits: int = 1) -> float:
    return round(statistics.median(values), digits)


def _summarize(reps: list[dict[str, Any]], sizes: Sizes) -> tuple[dict[str, Any], Limit, Limit]:
    """The figures of the repetitions (medians, ratios, trials) and the two limits: one
    sequence, and the best number of sequences decoded together."""
    out: dict[str, Any] = {}
    generation: dict[int, float] = {}
    for n in sizes.parallel:
        rates, per_sequence, in_flight = [], [], []
        for rep in reps:
            calls = rep["together"][n]
            span = max(c.end for c in calls) - min(c.start for c in calls)
            rates.append(sum(c.completion_tokens for c in calls) / span)
            per_sequence.append(statistics.mean(c.completion_tokens / c.seconds for c in calls))
            in_flight.append(sum(c.seconds for c in calls) / span)
        generation[n] = statistics.median(rates)
        out[f"generate_{n}_tokens_per_s"] = _median(rates, 2)
        out[f"generate_{n}_trials"] = [round(r, 2) for r in rates]
        if n > 1:
            out[f"generate_{n}_per_sequence_tokens_per_s"] = _median(per_sequence, 2)
            out[f"generate_{n}_requests_in_flight"] = _median(in_flight, 2)
    base = generation[1]
    for n in sizes.parallel:
        if n > 1:
            out[f"generate_{n}_ratio_to_1"] = round(generation[n] / base, 3)
    # Prompt tokens the generation calls evaluated (the cache held the rest): near 1.
    out["generate_prompt_tokens_evaluated"] = _median(
        c.prompt_tokens - c.cached_tokens
        for rep in reps
        for cs in rep["together"].values()
        for c in cs
    )
    out["generate_1_server_tokens_per_s"] = _median(
        c.completion_tokens / (c.predicted_ms / 1000)
        for rep in reps
        for c in rep["together"][1]
        if c.predicted_ms
    )

    points = []
    for length in sizes.lengths:
        calls = [rep["prompt"][length] for rep in reps]
        tokens = statistics.median(c.prompt_tokens for c in calls)
        rates = [c.prompt_tokens / c.seconds for c in calls]
        rate = statistics.median(rates)
        points.append((tokens, rate))
        out[f"prompt_{length}_tokens"] = round(tokens)
        out[f"prompt_{length}_tokens_per_s"] = round(rate, 1)
        out[f"prompt_{length}_trials"] = [round(r, 1) for r in rates]
        out[f"prompt_{length}_server_tokens_per_s"] = _median(
            (c.prompt_tokens - c.cached_tokens) / (c.prompt_ms / 1000) for c in calls
        )
        # What a prompt token costs against a generated one.
        out[f"prompt_{length}_ratio_to_generate_1"] = round(rate / base, 1)

    first = [c for rep in reps for c in rep["prefix"]["first"]]
    followers = [c for rep in reps for c in rep["prefix"]["followers"]]
    unique = [rep["prompt"][sizes.prefix] for rep in reps]  # same length, nothing cached
    out["prefix_tokens"] = round(statistics.median(c.prompt_tokens for c in first))
    out["prefix_first_call_s"] = _median((c.seconds for c in first), 3)
    out["prefix_following_call_s"] = _median((c.seconds for c in followers), 3)
    out["prefix_unique_call_s"] = _median((c.seconds for c in unique), 3)
    out["prefix_following_cached_tokens"] = round(
        statistics.median(c.cached_tokens for c in followers)
    )
    out["prefix_unique_cached_tokens"] = round(statistics.median(c.cached_tokens for c in unique))
    out["prefix_following_ratio_to_unique"] = round(
        out["prefix_following_call_s"] / out["prefix_unique_call_s"], 3
    )
    out["prefix_reuse_speedup"] = round(
        out["prefix_unique_call_s"] / out["prefix_following_call_s"], 1
    )

    single = Limit(prompt=tuple(points), generation=base)
    best = Limit(prompt=tuple(points), generation=max(generation.values()))
    return out, single, best


def _usage_from_env() -> list[Path]:
    value = os.environ.get("RAGAUDIT_BENCH_USAGE", "")
    return [Path(p) for p in value.split(os.pathsep) if p]


def run(quick: bool = False, usage: Sequence[Path] | None = None) -> dict[str, Any]:
    """Measure the embedded model's limit (``quick``: smaller and fewer, to check the
    benchmark works) and, given usage.json files (default: RAGAUDIT_BENCH_USAGE, paths
    separated by ``os.pathsep``), each LLM-bound step's fraction of it."""
    if importlib.util.find_spec("xllamacpp") is None:
        return {"skipped": "the embedded model is not installed (ragaudit[local])"}
    try:
        ensure_embedded_model()
    except ModelAssetError as exc:
        return {"skipped": f"the embedded model is not available: {exc}"}
    usage_paths = list(usage) if usage is not None else _usage_from_env()
    steps = read_steps(usage_paths)  # before the long measurement: fail early on a bad path
    sizes = QUICK if quick else FULL
    # The baselines: one sequence, and the unique prompts of the prefix's length.
    assert 1 in sizes.parallel and sizes.prefix in sizes.lengths
    rng = random.Random(0)
    out: dict[str, Any] = {
        "quick": quick,
        "threads": LocalBackend().threads,
        "slot_context": SLOT_CONTEXT,
        "reps": sizes.reps,
        "generated_tokens": sizes.generated,
        # Other work on the machine distorts every figure: see it in the results.
        "load_average_at_start": round(os.getloadavg()[0], 2),
    }
    start = time.perf_counter()
    reps = [_repetition(sizes, rng, f"rep {i + 1}/{sizes.reps}") for i in range(sizes.reps)]
    out["measure_s"] = round(time.perf_counter() - start, 1)
    figures, single, best = _summarize(reps, sizes)
    out |= figures
    if steps:
        out["usage_files"] = [str(p) for p in usage_paths]
        rows = out["steps"] = step_fractions(steps, single, best, uncounted_steps(usage_paths))
        # Judged only where the cached prompt tokens are known: otherwise the fraction is
        # a bracket (see step_fractions), too wide to pass or miss a target.
        if rows and all(row["cached_prompt_tokens"] is not None for row in rows.values()):
            out["target_steps_at_0_7_of_limit"] = all(
                row["fraction_of_limit"] >= TARGET_FRACTION for row in rows.values()
            )
    return out


def main() -> int:
    """``python benchmarks/bench_model_limit.py [--quick] [--usage PATH ...]``: the figures
    as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer, smaller measurements")
    parser.add_argument(
        "--usage", nargs="+", type=Path, help="usage.json of runs whose steps to judge"
    )
    args = parser.parse_args()
    result = run(quick=args.quick, usage=args.usage)
    result["machine"] = f"{platform.machine()}, {platform.python_version()}"
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
