"""Small datasets of QueryRecords for tests of the systems and the harness."""

from __future__ import annotations

from pathlib import Path

from ragaudit.records.io import write_jsonl_atomic
from ragaudit.records.models import QueryRecord, Reference


def queries(
    texts: list[str], *, variant: str = "short", gold: list[str] | None = None
) -> list[QueryRecord]:
    """One query per text, each its own group; ``gold`` ids for all when given."""
    return [
        QueryRecord(
            query_id=f"q{i:04d}",
            group_id=f"g{i:04d}",
            variant=variant,
            query=text,
            reference=Reference.from_values([f"answer {i}"]),
            gold_ids=gold,
        )
        for i, text in enumerate(texts)
    ]


def write_dataset(path: Path, records: list[QueryRecord]) -> Path:
    """Write ``records`` as a run's dataset.jsonl."""
    write_jsonl_atomic(path, records)
    return path
