"""``ragaudit doctor``'s checks: the database answers read-only and its schema can be read,
the corpus can be read and its chunks fit the model, and the LLM answers one question.
Each check returns what it found or raises a :class:`~ragaudit.errors.UserError` saying
what failed; :func:`run_doctor` runs them all and keeps what each found or why it failed,
for ``ra.Project.doctor`` and the command line."""

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


@dataclass(frozen=True)
class LongChunk:
    """A chunk estimated longer than the model's context."""

    id: str  # "<document id>#<chunk index>", as generate --documents names its contexts
    tokens: int  # estimated (ragaudit.llm.tokens.estimate_tokens: errs high)


@dataclass(frozen=True)
class CrowdedPrompt:
    """A built-in system whose ``k`` retrieved chunks can hold more tokens than the model's
    context: the ``k`` longest chunks of the corpus, together."""

    system: str
    k: int
    tokens: int


# What becomes of a chunk longer than the context, said where doctor flags one: the model
# refuses the call (llama.cpp and servers alike: "exceeds the available context size").
TOO_LONG_OUTCOME = (
    "the model cannot read them: generate --documents drops a question written from one "
    "(an LLM error, counted with its reason in candidates.jsonl), and a built-in system "
    "that retrieves one records an error for that answer. Chunk smaller (corpus.chunking: "
    "paragraph, or window with chunk_size) or raise llm.context_size if the model allows."
)


@dataclass(frozen=True)
class CorpusCheck:
    """The corpus as the built-in systems and ``generate --documents`` read it: documents,
    chunks by the configured chunking, and which chunks cannot fit the model's context
    (``llm.context_size``, compared with an upper estimate of each chunk's tokens)."""

    path: str
    documents: int
    chunks: int
    chunking: str  # "document", "paragraph", or "window of N words, M shared"
    short_chunks: int  # too few words to write a question from (generate --documents skips)
    min_words: int  # what "too few" is
    context_size: int
    longest_tokens: int  # the longest chunk's estimated tokens
    too_long: tuple[LongChunk, ...]  # longest first
    crowded: tuple[CrowdedPrompt, ...]

    @property
    def too_long_outcome(self) -> str | None:
        """What becomes of the chunks too long for the context, or None when there is none."""
        return TOO_LONG_OUTCOME if self.too_long else None


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
    corpus: CorpusCheck | None = None
    corpus_error: str | None = None
    llm: LLMCheck | None = None
    llm_error: str | None = None
    llm_backend: str | None = None  # which backend answered, or was to (kept on failure)
    llm_load_s: float | None = None
    usage: UsageMeter | None = None

    @property
    def ok(self) -> bool:
        """True when every check that was asked passed."""
        return not self.failures

    @property
    def failures(self) -> list[str]:
        """The one-line reason of each failed check."""
        found = (self.database_error, self.corpus_error, self.llm_error)
        return [e for e in found if e is not None]


def run_doctor(
    config: Config,
    *,
    prompt: str = DEFAULT_PROMPT,
    use_llm: bool = True,
    assemble_model: Callable[[], None] | None = None,
    backend: Backend | None = None,
) -> DoctorReport:
    """Check the database and the corpus (each when configured) and, with ``use_llm``,
    ask the LLM ``prompt`` once. A failed check does not stop the others: each failure is
    kept as its one-line reason, so that one run of doctor says everything that is wrong.
    ``backend``: a backend object of the caller's (a :class:`ragaudit.llm.Scripted`)
    instead of the configured model."""
    report = DoctorReport(config=config.masked_dict())
    if config.database.url:
        try:
            report.database = check_database(config)
        except UserError as exc:
            report.database_error = redact(str(exc))
    if config.corpus.path is not None:
        try:
            report.corpus = check_corpus(config)
        except UserError as exc:
            report.corpus_error = redact(str(exc))
    if use_llm:
        meter = UsageMeter(config.llm.prices)
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


def check_corpus(config: Config) -> CorpusCheck:
    """Read ``corpus.path`` and chunk it as the built-in systems and ``generate
    --documents`` do; count documents and chunks, and estimate each chunk's tokens against
    ``llm.context_size``, and each built-in system's ``k`` longest chunks together. The
    estimate errs high (:func:`ragaudit.llm.tokens.estimate_tokens`), so a flagged chunk
    may still fit, while one not flagged is within the context by any count measured
    (a prompt holds instructions and a reply too)."""
    from ragaudit.llm.tokens import estimate_tokens
    from ragaudit.steps.documents import MIN_CONTEXT_WORDS
    from ragaudit.systems.builtin import BuiltinSystemConfig
    from ragaudit.systems.corpus import chunk, load_corpus

    corpus = config.corpus
    assert corpus.path is not None, "the caller says when no corpus is configured"
    documents = load_corpus(corpus.path)
    chunks = chunk(documents, corpus.chunking, size=corpus.chunk_size, overlap=corpus.chunk_overlap)
    sizes = sorted(
        ((estimate_tokens(c.text), f"{c.doc_id}#{c.index}") for c in chunks),
        key=lambda pair: -pair[0],
    )
    window = corpus.chunking == "window"
    context = config.llm.context_size
    crowded = []
    for system in config.systems:
        if isinstance(system, BuiltinSystemConfig) and system.retriever != "none":
            if system.generator == "none":
                continue  # retrieval only: no model reads the passages
            total = sum(tokens for tokens, _ in sizes[: system.depth])
            if total > context:
                crowded.append(CrowdedPrompt(system.name, system.depth, total))
    return CorpusCheck(
        path=str(corpus.path),
        documents=len(documents),
        chunks=len(chunks),
        chunking=(
            f"window of {corpus.chunk_size} words, {corpus.chunk_overlap} shared"
            if window
            else corpus.chunking
        ),
        short_chunks=sum(1 for c in chunks if len(c.text.split()) < MIN_CONTEXT_WORDS),
        min_words=MIN_CONTEXT_WORDS,
        context_size=context,
        longest_tokens=sizes[0][0] if sizes else 0,
        too_long=tuple(LongChunk(cid, tokens) for tokens, cid in sizes if tokens > context),
        crowded=tuple(crowded),
    )


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
