"""``ragaudit doctor``'s checks: the database answers read-only and its schema can be read,
and the LLM answers one question. Each check returns what it found or raises a
:class:`~ragaudit.errors.UserError` saying what failed; :func:`run_doctor` runs both and
keeps what each found or why it failed, for ``ra.Project.doctor`` and the command line."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ragaudit.config import Config
from ragaudit.errors import UserError
from ragaudit.llm.usage import UsageMeter
from ragaudit.secrets import redact

if TYPE_CHECKING:
    from ragaudit.db import SchemaInfo
    from ragaudit.llm.client import Backend


@dataclass(frozen=True)
class DatabaseCheck:
    """The database as ragaudit sees it."""

    display_url: str
    dialect: str
    read_only_enforced: bool
    schema: SchemaInfo = field(repr=False)


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


DEFAULT_PROMPT = (
    "In one short sentence: why test a RAG system with questions whose answers are known?"
)


@dataclass
class DoctorReport:
    """What ``doctor`` found: the configuration it ran with (secrets masked), and per
    check what it found or why it failed (both None: not asked: no database configured,
    or the LLM skipped). ``ok`` is false when a check that was asked failed."""

    config: dict[str, object] = field(repr=False)
    database: DatabaseCheck | None = None
    database_error: str | None = None
    llm: LLMCheck | None = None
    llm_error: str | None = None
    llm_backend: str | None = None  # which backend answered, or was to (kept on failure)
    llm_load_s: float | None = None
    usage: UsageMeter | None = None

    @property
    def ok(self) -> bool:
        """True when every check that was asked passed."""
        return self.database_error is None and self.llm_error is None

    @property
    def failures(self) -> list[str]:
        """The one-line reason of each failed check."""
        return [e for e in (self.database_error, self.llm_error) if e is not None]


def run_doctor(
    config: Config,
    *,
    prompt: str = DEFAULT_PROMPT,
    use_llm: bool = True,
    assemble_model: Callable[[], None] | None = None,
    backend: Backend | None = None,
) -> DoctorReport:
    """Check the database (when one is configured) and, with ``use_llm``, ask the LLM
    ``prompt`` once. A failed check does not stop the other: each failure is kept as its
    one-line reason, so that one run of doctor says everything that is wrong. ``backend``:
    a backend object of the caller's (a :class:`ragaudit.llm.Scripted`) instead of the
    configured model."""
    report = DoctorReport(config=config.masked_dict())
    if config.database.url:
        try:
            report.database = check_database(config)
        except UserError as exc:
            report.database_error = redact(str(exc))
    if use_llm:
        meter = UsageMeter()
        report.usage = meter

        def ready(backend: str, load_s: float | None) -> None:
            report.llm_backend, report.llm_load_s = backend, load_s

        try:
            report.llm = check_llm(
                config, prompt, meter, assemble_model, on_ready=ready, backend=backend
            )
        except UserError as exc:
            report.llm_error = redact(str(exc))
    return report


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
    backend: Backend | None = None,
) -> LLMCheck:
    """Ask the configured model ``prompt`` once, timing the load and the answer;
    ``assemble_model`` prepares the embedded model first when it is the one used, and
    ``on_ready(backend, load_s)`` hears which backend answers before it is asked, so that
    a failure can be read against it."""
    from ragaudit.llm import make_llm, system, user

    local = backend is None and config.llm.backend == "local"
    if local and not config.llm.model_name and assemble_model:
        assemble_model()
    client = make_llm(config.llm, cache_path=None, meter=meter, backend=backend)
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
