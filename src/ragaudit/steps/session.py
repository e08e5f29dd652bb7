"""The LLM side of one command over one run: its configuration, the metered and cached
clients of each step, the one event loop every step's async work runs on, and the rule
that says which cache file a model's calls go to.

Every step that asks an LLM, or runs async work, does so through the session it is given;
no step picks an event loop or builds a client itself. The command line makes one session
per command and says, through :class:`SessionHooks`, what the user sees of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from ragaudit import aio
from ragaudit.config import Config
from ragaudit.errors import UserError
from ragaudit.llm.usage import UsageMeter
from ragaudit.rundir import RunDir
from ragaudit.yamlfile import validation_message

if TYPE_CHECKING:
    from ragaudit.llm.client import Backend, LLMClient

T = TypeVar("T")


def _assemble_quietly() -> None:
    from ragaudit.llm.model_assets import ensure_embedded_model

    ensure_embedded_model()


@dataclass
class SessionHooks:
    """What the user sees of a session: the embedded model being assembled (the first time
    only), and each step's LLM usage when the step ends."""

    assemble_model: Callable[[], None] = _assemble_quietly
    show_usage: Callable[[UsageMeter], None] = lambda _meter: None


def cache_path_of(config: Config, run: RunDir, model: str) -> Path:
    """Where ``model``'s calls are cached: the run's main model in cache/llm.sqlite, any
    other in a file of its own, so that two models never answer from each other's."""
    if model == config.llm.model:
        return run.llm_cache
    from ragaudit.records.models import stable_id

    return run.llm_cache.with_name(f"llm-{stable_id(model, length=10)}.sqlite")


class Session:
    """One command's LLM work over ``run``. Use it as a context manager: leaving it closes
    the event loop. ``retry_failed``: its clients ask again the replies stored unusable
    (malformed, cut inside what was asked) instead of replaying them from the cache."""

    def __init__(
        self,
        config: Config,
        run: RunDir,
        hooks: SessionHooks | None = None,
        backends: dict[str, Backend] | None = None,
        *,
        retry_failed: bool = False,
    ) -> None:
        self.config = config
        self.run_dir = run
        self.hooks = hooks or SessionHooks()
        # Backends the caller made (a ra.llm.Scripted), by the model name that means them.
        self.backends = dict(backends or {})
        # --retry-failed: replies stored unusable are asked again, not replayed.
        self.retry_failed = retry_failed
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The session's event loop (uvloop's where installed), made on first use."""
        if self._closed:
            raise RuntimeError("this session is closed: make a new one")
        if self._loop is None:
            self._loop = aio.new_event_loop()
        return self._loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` to completion on the session's loop, from synchronous code."""
        try:
            loop = self.loop
        except RuntimeError:
            coro.close()  # never started: no "was never awaited" warning on top
            raise
        task = loop.create_task(coro)
        interrupted = False

        def on_sigint(signum: int, frame: object) -> None:
            # Ctrl-C cancels the step's task, which unwinds through every ``finally`` (a
            # harness keeps what it finished), as asyncio.run does: a KeyboardInterrupt
            # raised in whichever callback runs left tasks pending, and their tracebacks
            # printed at exit. A second Ctrl-C stops at once.
            nonlocal interrupted
            if interrupted:
                raise KeyboardInterrupt
            interrupted = True
            task.cancel()
            loop.call_soon_threadsafe(lambda: None)

        ours = (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        )
        previous = signal.signal(signal.SIGINT, on_sigint) if ours else None
        try:
            result = loop.run_until_complete(task)
        except asyncio.CancelledError:
            if interrupted:
                raise KeyboardInterrupt from None
            raise
        finally:
            if ours:
                signal.signal(signal.SIGINT, previous)
        if interrupted:  # a step that ended despite the cancel was still interrupted
            raise KeyboardInterrupt
        return result

    def cache_path(self, model: str) -> Path:
        """Where ``model``'s calls are cached (:func:`cache_path_of`)."""
        return cache_path_of(self.config, self.run_dir, model)

    @contextlib.contextmanager
    def clients(self, step: str, models: list[str]) -> Iterator[dict[str, LLMClient]]:
        """Cached clients for one step, one per model named (the ``llm`` section's settings,
        the model swapped), all on the session's loop. Their usage is shown and merged into
        usage.json when the step ends, even when it fails."""
        if not models:
            yield {}
            return
        from ragaudit.llm import make_llm

        meter = UsageMeter(self.config.llm.prices)
        made: dict[str, LLMClient] = {}
        try:
            for model in dict.fromkeys(models):
                settings = self.config.llm.model_copy(update={"model": model})
                try:
                    settings = type(settings).model_validate(settings.model_dump())  # checks it
                except ValidationError as exc:
                    # A model named on the command line (--llm): one line, as in the file.
                    raise UserError(validation_message(exc, "--llm", None, ("llm",))) from None
                if settings.backend == "local" and not settings.model_name:
                    self.hooks.assemble_model()
                made[model] = make_llm(
                    settings,
                    cache_path=self.cache_path(model),
                    meter=meter,
                    loop=self.loop,
                    backend=self.backends.get(model),
                    retry_failed=self.retry_failed,
                )
            with meter.step(step):
                yield made
        finally:
            for client in made.values():
                client.close()
            self.hooks.show_usage(meter)
            meter.write(self.run_dir.usage)

    @contextlib.contextmanager
    def llm(self, step: str, needed: bool = True) -> Iterator[LLMClient | None]:
        """The run's main client for one step, or None when the step needs no LLM."""
        model = self.config.llm.model
        with self.clients(step, [model] if needed else []) as made:
            yield made.get(model)

    def close(self) -> None:
        """Close the event loop, as :func:`asyncio.run` does: what is still running on it
        (after Ctrl-C, say) is cancelled and awaited first, so that it ends quietly instead
        of with 'Task was destroyed but it is pending'."""
        self._closed = True
        loop, self._loop = self._loop, None
        if loop is None or loop.is_closed():
            return
        try:
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
