"""The session of a command: one event loop for every client of every step, the cache file
each model writes, usage merged at the end of each step, and a close that leaves nothing
running (steps/session.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from ragaudit.config import Config
from ragaudit.llm import user
from ragaudit.rundir import RunDir
from ragaudit.steps.session import Session, SessionHooks
from tests.support.scripted_llm_server import ScriptedLLMServer


def _config(server: ScriptedLLMServer) -> Config:
    return Config.model_validate(
        {"llm": {"model": "openai:main", "base_url": server.base_url, "api_key": "sk-t-0000"}}
    )


def test_every_client_runs_on_the_sessions_loop_and_each_model_has_its_cache(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    llm_server.responder = lambda body: f"from {body['model']}"
    run = RunDir(tmp_path / "run").create()
    shown: list[str] = []
    hooks = SessionHooks(show_usage=lambda meter: shown.extend(meter.steps))
    with Session(_config(llm_server), run, hooks) as session:
        with session.clients("run", ["openai:main", "openai:other"]) as clients:
            loops = set()

            async def ask(model: str) -> str:
                loops.add(asyncio.get_running_loop())
                reply = await clients[model].acomplete([user("hi")])
                return reply.text

            async def both() -> list[str]:
                return list(await asyncio.gather(ask("openai:main"), ask("openai:other")))

            answers = session.run(both())
            # A client's own run() uses the same loop, not one of its own.
            assert clients["openai:main"].run(ask("openai:main")) == "from main"
        assert loops == {session.loop}
        assert answers == ["from main", "from other"]
        assert session.cache_path("openai:main") == run.llm_cache
        other = session.cache_path("openai:other")
        assert other != run.llm_cache and other.parent == run.llm_cache.parent
        assert run.llm_cache.exists() and other.exists()
    assert shown == ["run"]
    usage = json.loads(run.usage.read_text())["steps"]["run"]
    # The third ask repeats the first to the same model: answered from its cache.
    assert (usage["calls"], usage["cache_hits"]) == (2, 1)


def test_a_step_without_an_llm_gets_none_and_writes_no_cache(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run").create()
    with Session(Config(), run) as session, session.llm("judge", needed=False) as client:
        assert client is None
    assert not run.llm_cache.exists()


def test_closing_cancels_what_is_still_running_and_the_session_is_then_closed(
    tmp_path: Path,
) -> None:
    session = Session(Config(), RunDir(tmp_path / "run"))
    loop = session.loop
    task = loop.create_task(asyncio.sleep(3600))
    session.close()
    assert task.cancelled() and loop.is_closed()
    with pytest.raises(RuntimeError, match="closed"):
        session.run(asyncio.sleep(0))
