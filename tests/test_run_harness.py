"""The run harness: every query once per system, bounded concurrency, per-query timeouts,
errors recorded without stopping the run, and resumption after a kill at any moment."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ragaudit import aio
from ragaudit.harness.ask import run_system
from ragaudit.records.io import read_jsonl
from ragaudit.records.models import Judgement, QueryRecord, ResponseRecord
from ragaudit.systems.adapters import CallableSystem
from tests.support.cli import ragaudit
from tests.support.datasets import queries, write_dataset
from tests.support.rag_server import RAGServer
from tests.support.scripted_llm_server import ScriptedLLMServer


class CountingSystem:
    """An async system that counts calls and concurrent calls; fails or stalls on demand."""

    def __init__(self, delay: float = 0.01) -> None:
        self.name = "counting"
        self.delay = delay
        self.calls: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def answer(self, query: QueryRecord):  # type: ignore[no-untyped-def]
        from ragaudit.systems.base import SystemAnswer

        self.calls.append(query.query_id)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if "stall" in query.query:
                await asyncio.sleep(60)
            await asyncio.sleep(self.delay)
            if "explode" in query.query:
                raise RuntimeError("the retriever is down\nsecond line")
            return SystemAnswer(response=f"re: {query.query}")
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        pass


def _records(path: Path) -> list[ResponseRecord]:
    return list(read_jsonl(path, ResponseRecord))


def test_concurrency_is_bounded_and_reached(tmp_path: Path) -> None:
    system = CountingSystem(delay=0.02)
    qs = queries([f"question {i}" for i in range(100)])
    stats = aio.run(run_system(system, qs, tmp_path / "r.jsonl", concurrency=7))
    assert system.max_in_flight == 7
    assert stats.asked == 100 and stats.errors == 0
    assert sorted(r.query_id for r in _records(tmp_path / "r.jsonl")) == [q.query_id for q in qs]


def test_errors_and_timeouts_are_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    system = CountingSystem()
    qs = queries(["fine one", "explode now", "stall forever", "fine two"])
    start = time.perf_counter()
    stats = aio.run(run_system(system, qs, tmp_path / "r.jsonl", concurrency=2, timeout_s=0.5))
    assert time.perf_counter() - start < 5
    by_id = {r.query_id: r for r in _records(tmp_path / "r.jsonl")}
    assert by_id["q0000"].response == "re: fine one" and by_id["q0000"].error is None
    assert by_id["q0001"].error == "RuntimeError: the retriever is down second line"
    assert by_id["q0001"].response is None
    assert by_id["q0002"].error == "timed out after 0.5 s"
    assert by_id["q0003"].response == "re: fine two"
    assert stats.errors == 2
    assert all(r.latency_s is not None for r in by_id.values())


def test_a_rerun_asks_only_what_is_missing_and_retry_errors_replaces_failures(
    tmp_path: Path,
) -> None:
    out = tmp_path / "r.jsonl"
    qs = queries(["a", "explode", "c"])
    aio.run(run_system(CountingSystem(), qs[:2], out))
    second = CountingSystem()
    stats = aio.run(run_system(second, qs, out))
    assert second.calls == ["q0002"] and stats.already_done == 2
    third = CountingSystem()
    aio.run(run_system(third, qs, out, retry_errors=True))
    assert third.calls == ["q0001"]  # asked again, and still one record per query
    records = _records(out)
    assert sorted(r.query_id for r in records) == ["q0000", "q0001", "q0002"]


def test_a_torn_last_line_is_cut_and_its_query_asked_again(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    qs = queries(["a", "b", "c"])
    aio.run(run_system(CountingSystem(), qs[:2], out))
    with out.open("a") as handle:
        handle.write('{"schema_version": 1, "query_id": "q0002", "sys')  # killed mid-write
    again = CountingSystem()
    aio.run(run_system(again, qs, out))
    assert again.calls == ["q0002"]
    assert [r.query_id for r in _records(out)] == ["q0000", "q0001", "q0002"]


def test_sync_callables_run_in_threads_up_to_the_concurrency(tmp_path: Path) -> None:
    import threading

    lock = threading.Lock()
    state = {"now": 0, "max": 0}

    def rag(query: str) -> dict[str, object]:
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.03)
        with lock:
            state["now"] -= 1
        return {"answer": query.upper(), "retrieved_ids": ["d1", "d2"], "contexts": ["x", "y"]}

    system = CallableSystem("fn", rag, threads=6)
    aio.run(
        run_system(
            system,
            queries([f"q {i}" for i in range(30)]),
            tmp_path / "r.jsonl",
            concurrency=6,
            store_texts=True,
        )
    )
    aio.run(system.aclose())
    assert state["max"] == 6
    first = next(r for r in _records(tmp_path / "r.jsonl") if r.query_id == "q0000")
    assert first.response == "Q 0" and first.retrieved_ids == ["d1", "d2"]
    assert first.retrieved[1].text == "y"


SLOW_RAG = """
import time

def answer(query):
    time.sleep(DELAY)
    return {"answer": "ok " + query, "retrieved_ids": ["doc-" + query.split()[-1]]}
"""


def _slow_project(tmp_path: Path, n: int, delay: float = 0.01) -> Path:
    """A project of ``n`` questions and one slow callable system (``delay`` seconds an
    answer, four at a time): its responses file."""
    (tmp_path / "slow_rag.py").write_text(SLOW_RAG.replace("DELAY", repr(delay)))
    write_dataset(
        tmp_path / "runs" / "default" / "dataset.jsonl",
        queries([f"question {i}" for i in range(n)]),
    )
    (tmp_path / "ragaudit.yaml").write_text(
        "systems:\n  - {name: slow, kind: callable, target: 'slow_rag:answer'}\n"
        "harness: {concurrency: 4}\n"
    )
    return tmp_path / "runs" / "default" / "responses" / "slow.jsonl"


def _line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_killed_with_sigkill_and_restarted_ends_with_one_record_per_query(
    tmp_path: Path,
) -> None:
    n = 600
    out = _slow_project(tmp_path, n)
    env = {**os.environ, "NO_COLOR": "1"}
    kills = 0
    for threshold in (60, 250, 420):
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragaudit", "run"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while _line_count(out) < threshold and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(30)
    assert kills == 3, "the run finished before it could be killed: make it slower"
    assert _line_count(out) < n
    done = ragaudit("run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ids = [json.loads(line)["query_id"] for line in out.read_text().splitlines()]
    assert len(ids) == n and len(set(ids)) == n  # none duplicated, none lost
    summary = json.loads((tmp_path / "runs" / "default" / "run.stats.json").read_text())
    assert summary["slow"]["already_done"] + summary["slow"]["asked"] == n
    assert summary["slow"]["asked"] > 0


def _sigint_as_on_a_terminal() -> None:
    """In the child, before ``exec``: SIGINT delivered and handled as in a terminal's
    foreground process. A child inherits an ignored SIGINT (a suite started with `&`) and
    a blocked one (the signal mask of the test worker's thread); either way the clean-clone
    suite saw the run ignore the interrupt and finish with exit 0."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_ctrl_c_stops_a_run_says_how_to_go_on_and_the_same_command_finishes(
    tmp_path: Path,
) -> None:
    """Ctrl-C (SIGINT) ends a run within seconds with exit status 130 and one line saying
    that what was finished is kept, no traceback; the same command then asks only the
    rest. Before, Typer exited 130 without a word. The run takes 7.5 s, so that on a busy
    machine the interrupt lands while it asks."""
    n = 600
    out = _slow_project(tmp_path, n, delay=0.05)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragaudit", "run"],
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_sigint_as_on_a_terminal,
    )
    deadline = time.monotonic() + 60
    while _line_count(out) < 60 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    stopped = time.monotonic()
    _, stderr = proc.communicate(timeout=30)
    assert time.monotonic() - stopped < 10
    assert proc.returncode == 130
    assert "interrupted: what was finished is kept; run the same command again" in stderr
    assert "Traceback" not in stderr
    kept = _line_count(out)
    assert 0 < kept < n
    done = ragaudit("run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ids = [json.loads(line)["query_id"] for line in out.read_text().splitlines()]
    assert len(ids) == n and len(set(ids)) == n
    summary = json.loads((tmp_path / "runs" / "default" / "run.stats.json").read_text())
    assert summary["slow"]["already_done"] == kept  # nothing finished is asked again


# -- an answer holding half a character ------------------------------------------------------

# A callable that answers the first question with half an emoji (a lone surrogate).
HALF_EMOJI_RAG = """
def answer(query):
    if "first" in query:
        return {"answer": "answer 0 \\ud83d", "retrieved_ids": ["d1"]}
    return {"answer": "answer " + query.split()[-1], "retrieved_ids": ["d1"]}
"""


def _half_emoji_reply(body: dict[str, Any]) -> str:
    """The LLM's reply to a built-in system: the first question's cut in an emoji."""
    asked = str(body["messages"][-1]["content"])
    if "first" in asked:
        return "answer 0 \ud83d"
    number = re.search(r"question (\d)", asked)
    return f"answer {number.group(1) if number else '?'}"


@pytest.mark.parametrize("source", ["builtin", "http", "callable"])
def test_an_answer_cut_inside_a_character_is_kept_with_the_replacement_and_a_note(
    tmp_path: Path, source: str
) -> None:
    """An LLM reply, an HTTP system's JSON or a Python function can give half a character
    (the JSON escape ``\\ud83d`` of an emoji cut in two): once, ``ragaudit run`` failed on
    writing the batch and kept none of it, and every rerun failed the same way. The run
    now ends, every answer of the batch is kept, the cut one with U+FFFD in place of the
    half, the run's warnings (and run.stats.json) name it, and judge reads the answers."""
    texts = ["first halfemoji question 0", "second question 1", "third question 2"]
    write_dataset(tmp_path / "runs" / "default" / "dataset.jsonl", queries(texts))
    env: dict[str, str] = {}
    with contextlib.ExitStack() as stack:
        if source == "builtin":
            llm = stack.enter_context(ScriptedLLMServer())
            # The server writes the reply with json.dumps: the half emoji goes out as the
            # escape "\ud83d", as a server that cut its reply sends it.
            llm.responder = _half_emoji_reply
            env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-t-0000000000"}
            (tmp_path / "docs.json").write_text(json.dumps({"d1": "A passage."}))
            system = "llm: {model: 'openai:scripted'}\ncorpus: {path: docs.json}\n"
            system += "systems:\n  - {name: sys, generator: llm_only}\n"
            cut = "answer 0 \ufffd"
        elif source == "http":
            server = stack.enter_context(RAGServer())
            system = (
                "systems:\n  - name: sys\n    kind: http\n"
                f"    url: {server.url}\n    request: {{question: '{{query}}'}}\n"
                "    answer_path: data.answer\n    ids_path: 'sources[*].id'\n"
            )
            cut = "cut \ufffd"
        else:
            (tmp_path / "half_rag.py").write_text(HALF_EMOJI_RAG)
            system = "systems:\n  - {name: sys, kind: callable, target: 'half_rag:answer'}\n"
            cut = "answer 0 \ufffd"
        (tmp_path / "ragaudit.yaml").write_text(system)
        result = ragaudit("run", cwd=tmp_path, env=env)
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        root = tmp_path / "runs" / "default"
        records = {r.query_id: r for r in _records(root / "responses" / "sys.jsonl")}
        assert sorted(records) == ["q0000", "q0001", "q0002"]  # the whole batch is kept
        assert records["q0000"].response == cut and records["q0000"].error is None
        assert all(records[q].response and records[q].error is None for q in ("q0001", "q0002"))
        assert "\ufffd" not in (records["q0001"].response or "")
        assert "U+FFFD" in (records["q0000"].note or "")  # said in the record
        assert records["q0001"].note is None
        warning = "sys: 1 answer held text that is not Unicode"
        assert warning in " ".join(result.stderr.split())
        stats = json.loads((root / "run.stats.json").read_text())
        assert [w for w in stats["sys"]["warnings"] if w.startswith(warning)]
        assert "U+FFFD" in stats["sys"]["warnings"][0] and "q0000" in stats["sys"]["warnings"][0]
        again = ragaudit("run", cwd=tmp_path, env=env)  # nothing is left to ask
        assert again.returncode == 0, again.stderr
        judged = ragaudit("judge", "--no-llm", cwd=tmp_path, env=env)
        assert judged.returncode == 0, judged.stderr
    verdicts = {j.query_id: j for j in read_jsonl(root / "judgements" / "sys.jsonl", Judgement)}
    assert sorted(verdicts) == ["q0000", "q0001", "q0002"]
    # Judged as it reads: "answer 0 <U+FFFD>" still gives the reference "answer 0".
    assert verdicts["q0000"].correct is (source != "http")


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_system_that_calls_sys_exit_fails_that_answer_and_the_run_goes_on(
    tmp_path: Path, kind: str
) -> None:
    """sys.exit() in a system's code (a script turned into a function) is that answer's
    error: the run records it and asks the other questions, never exits with its code."""

    def sync(question: str) -> str:
        if "quit" in question:
            sys.exit(3)
        return f"re: {question}"

    async def asynchronous(question: str) -> str:
        return sync(question)

    system = CallableSystem("exits", sync if kind == "sync" else asynchronous, threads=2)
    qs = queries(["fine one", "quit now", "fine two"])
    stats = aio.run(run_system(system, qs, tmp_path / "r.jsonl", concurrency=2))
    by_id = {r.query_id: r for r in _records(tmp_path / "r.jsonl")}
    assert by_id["q0001"].error is not None and "sys.exit(3)" in by_id["q0001"].error
    assert by_id["q0000"].response == "re: fine one" and by_id["q0002"].response == "re: fine two"
    assert stats.asked == 3 and stats.errors == 1
