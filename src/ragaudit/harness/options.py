"""The ``harness`` section of ragaudit.yaml: how ``ragaudit run`` asks the systems."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from ragaudit.options import MAX_CONCURRENCY, MAX_TIMEOUT_S, StrictOptions


class HarnessConfig(StrictOptions):
    """How ``ragaudit run`` asks the systems (the ``harness`` section)."""

    concurrency: int = Field(
        8,
        ge=1,
        le=MAX_CONCURRENCY,
        description="Queries in flight per system (an adapter's sync function runs in this "
        "many threads).",
    )
    store_texts: bool = Field(
        False,
        description="Keep the retrieved passages' texts in responses/*.jsonl (ids and "
        "scores are always kept); the report then shows them.",
    )
    timeout_s: float = Field(
        120.0, gt=0, le=MAX_TIMEOUT_S, description="Per-query timeout of a system."
    )
    index_dir: Path | None = Field(
        None, description="Where retrieval indexes persist (default: <run>/cache/index)."
    )
