"""``ragaudit doctor``'s checks: the database answers read-only and its schema can be read,
and the LLM answers one question. Each check returns what it found or raises a
:class:`~ragaudit.errors.UserError` saying what failed; the command line prints both."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragaudit.config import Config
from ragaudit.llm.usage import UsageMeter

if TYPE_CHECKING:
    from ragaudit.db import SchemaInfo


@dataclass(frozen=True)
class DatabaseCheck:
    """The database as ragaudit sees it."""

    display_url: str
    dialect: str
    read_only_enforced: bool
    schema: SchemaInfo


@dataclass(frozen=True)
class LLMCheck:
    """One live round trip to the LLM (never answered from the cache)."""

    backend: str
    load_s: float | None
    question: str
    answer: str
    latency_s: float
    prompt_tokens: int
    completion_tokens: int


def check_database(config: Config) -> DatabaseCheck:
    """Connect to ``database.url``, confirm read-only access and introspect the tables."""
    from ragaudit.db import Database, introspect

    assert config.database.url, "the caller says when no database is configured"
    database = Database(config.database.url, timeout_s=config.database.timeout_s)
    try:
        database.check_connection()
        schema = introspect(database, tables=config.database.tables)
        return DatabaseCheck(
            database.display_url, database.dialect, database.read_only_enforced, schema
        )
    finally:
        database.dispose()


def check_llm(
    config: Config,
    prompt: str,
    meter: UsageMeter,
    assemble_model: Callable[[], None] | None = None,
    on_ready: Callable[[str, float | None], None] | None = None,
) -> LLMCheck:
    """Ask the configured model ``prompt`` once, timing the load and the answer;
    ``assemble_model`` prepares the embedded model first when it is the one used, and
    ``on_ready(backend, load_s)`` hears which backend answers before it is asked, so that
    a failure can be read against it."""
    from ragaudit.llm import make_llm, system, user

    if config.llm.backend == "local" and not config.llm.model_name and assemble_model:
        assemble_model()
    client = make_llm(config.llm, cache_path=None, meter=meter)
    load_s = None
    load = getattr(client.backend, "load", None)
    if load is not None:
        start = time.perf_counter()
        load()
        load_s = time.perf_counter() - start
    if on_ready is not None:
        on_ready(client.backend.describe(), load_s)
    with meter.step("doctor"), client:
        start = time.perf_counter()
        reply = client.complete(
            [system("You are a concise assistant. Answer in one sentence."), user(prompt)]
        )
        latency = time.perf_counter() - start
    return LLMCheck(
        backend=client.backend.describe(),
        load_s=load_s,
        question=prompt,
        answer=reply.text.strip(),
        latency_s=latency,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
    )
