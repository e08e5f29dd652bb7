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
    LABELS,
    SCHEMA_VERSION,
    Judgement,
    LabelPair,
    LabelRecord,
    QueryRecord,
    QuestionLabel,
    Reference,
    ResponseRecord,
    RetrievedItem,
    TokenUsage,
    stable_id,
)

__all__ = [
    "LABELS",
    "SCHEMA_VERSION",
    "JsonlAppender",
    "Judgement",
    "LabelPair",
    "LabelRecord",
    "QueryRecord",
    "QuestionLabel",
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
