"""Options several commands share, and the fixed choices as enums (typer checks them and
lists them in ``--help``; no command checks a choice by hand)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ragaudit.config import DEFAULT_CONFIG_NAME
from ragaudit.judge.retrieval import RULE_HELP


class SqlGenerator(StrEnum):
    """Who writes the SQL templates."""

    enumerator = "enumerator"
    llm = "llm"


class TextGenerator(StrEnum):
    """Who words the SQL templates."""

    verbalizer = "verbalizer"
    llm = "llm"


class TableFormat(StrEnum):
    """The file format of ``export tables``."""

    csv = "csv"
    parquet = "parquet"


class Engine(StrEnum):
    """The database a world is written to."""

    sqlite = "sqlite"
    duckdb = "duckdb"


class OnFailure(StrEnum):
    """What becomes of a world report whose rewrite fails its check twice."""

    template = "template"
    drop = "drop"


class Phrasing(StrEnum):
    """How the labeller's prompt is worded (ragaudit.documents.labels.PHRASINGS)."""

    default = "default"
    steps = "steps"


class FreeMetricChoice(StrEnum):
    """A reference-free metric (ragaudit.records.models.FREE_METRICS)."""

    faithfulness = "faithfulness"
    answer_relevancy = "answer_relevancy"
    context_precision = "context_precision"
    self_consistency = "self_consistency"


class Outcome(StrEnum):
    """What ``analyze`` counts as the outcome of a query."""

    answer = "answer"
    retrieval = "retrieval"


class AnalysisEngine(StrEnum):
    """Which path ``analyze`` aggregates the answers by: the same figures either way."""

    auto = "auto"
    memory = "memory"
    sql = "sql"


class SetSplit(StrEnum):
    """What tells a run's test sets apart (``ragaudit compare``)."""

    source = "source"
    variant = "variant"
    label = "label"


ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help=f"Configuration file (default: ./{DEFAULT_CONFIG_NAME} if it exists).",
    ),
]
ExampleOption = Annotated[
    bool, typer.Option("--example", help="Use the example database bundled with ragaudit.")
]
DbOption = Annotated[str | None, typer.Option("--db", help="Database URL (overrides the config).")]
LLMOption = Annotated[
    str | None,
    typer.Option("--llm", help="LLM: local, local:/path.gguf or openai:<model> (overrides)."),
]
NoVerifyOption = Annotated[
    bool,
    typer.Option("--no-verify", help="Run only the checks that need no LLM (no verdicts)."),
]
SystemsOption = Annotated[
    list[str] | None, typer.Option("--system", help="Only this system (repeatable).")
]
RetrievalRuleOption = Annotated[str, typer.Option("--retrieval-rule", help=f"{RULE_HELP}.")]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed of the resamples.")]
RetryFailedOption = Annotated[
    bool,
    typer.Option(
        "--retry-failed",
        help="Ask the LLM again for the replies it gave that could not be used (a rerun "
        "otherwise replays them from the cache and asks nothing).",
    ),
]
DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Ask nothing and write nothing: print the LLM requests, tokens and cost it "
        "would spend (llm.prices), those the cache holds counted apart.",
    ),
]
