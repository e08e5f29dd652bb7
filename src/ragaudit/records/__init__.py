"""The data model every step exchanges, and its file IO (JSON Lines, Parquet)."""

from ragaudit.records.io import (
    JsonlAppender,
    atomic_write_json,
    atomic_write_text,
    export_parquet,
    read_jsonl,
    write_jsonl_atomic,
)
from ragaudit.records.models import (
    SCHEMA_VERSION,
    Judgement,
    QueryRecord,
    Reference,
    ResponseRecord,
    RetrievedItem,
    TokenUsage,
    stable_id,
)

__all__ = [
    "SCHEMA_VERSION",
    "JsonlAppender",
    "Judgement",
    "QueryRecord",
    "Reference",
    "ResponseRecord",
    "RetrievedItem",
    "TokenUsage",
    "atomic_write_json",
    "atomic_write_text",
    "export_parquet",
    "read_jsonl",
    "stable_id",
    "write_jsonl_atomic",
]
