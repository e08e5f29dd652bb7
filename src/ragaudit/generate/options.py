"""The ``templates`` and ``generate`` sections of ragaudit.yaml: how templates are made,
and how they become a dataset (sampling, balance, gold ids)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from ragaudit.documents.options import DocumentOptions
from ragaudit.generate.sql.kinds import KINDS, Kind
from ragaudit.options import MAX_SEED, StrictOptions

_Target = Literal["tables", "foreign_keys", "associations"]
# Templates per table and kind: a sample, never more than anyone words.
MAX_PER_KIND = 1000
_PerKind = Annotated[int, Field(ge=1, le=MAX_PER_KIND)]


def _all_targets() -> list[_Target]:
    return ["tables", "foreign_keys", "associations"]


class TemplatesConfig(StrictOptions):
    """How templates are made (the ``templates`` section)."""

    sql_generator: Literal["enumerator", "llm"] = Field(
        "enumerator", description="SQL templates from the schema enumerator (offline) or the LLM."
    )
    text_generator: Literal["verbalizer", "llm"] = Field(
        "verbalizer", description="Text templates from the built-in verbalizer or the LLM."
    )
    targets: list[_Target] = Field(
        default_factory=_all_targets,
        min_length=1,
        description="What the LLM writes templates for: single tables, pairs joined by a "
        "foreign key, tables linked through an association table.",
    )
    criteria: list[str] = Field(
        default_factory=list, description="Extra criteria for the LLM's SQL templates."
    )
    per_kind: dict[Kind, _PerKind] = Field(
        default_factory=dict,
        description="SQL templates the enumerator keeps per table and kind (1 to 1000): a "
        "number per kind (the others keep their default), one number for every kind, or "
        "'all' (1000 each); by default lookup 6, path 4, count 2, superlative 2, set 2, the "
        "other kinds 1.",
    )

    @field_validator("per_kind", mode="before")
    @classmethod
    def _one_for_every_kind(cls, value: object) -> object:
        if value == "all":
            return dict.fromkeys(KINDS, MAX_PER_KIND)
        if isinstance(value, int) and not isinstance(value, bool):
            return dict.fromkeys(KINDS, value)
        if value is None or isinstance(value, bool | str | list):
            raise ValueError(
                f"{value!r}: give a number for every kind, 'all', or a number per kind "
                "(lookup: 6, count: 2, ...)"
            )
        if isinstance(value, dict):
            for kind, n in value.items():
                if isinstance(n, bool):  # YAML's yes/no, never a count of templates
                    raise ValueError(f"{kind}: {n!r} is no number of templates (1 to 1000)")
        return value

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
    seed: int = Field(0, ge=0, le=MAX_SEED)


class GoldRule(StrictOptions):
    """Which documents hold the answer: those keyed by a placeholder's value, or by another
    column of the row the placeholder names (``id_column``), formatted by ``format``."""

    placeholder: str = Field(pattern=r"^[^.\s]+\.[^.\s]+$", description="Table.Column")
    id_column: str | None = None
    format: str = "{value}"


class GenerateOptions(StrictOptions):
    """How templates become a dataset (the ``generate`` section of ragaudit.yaml)."""

    allow_multi: bool = Field(False, description="Keep groups with several answers as sets.")
    include_unanswerable: bool = Field(False, description="Emit combinations without answer.")
    include_null: bool = Field(
        False,
        description="Keep groups whose answer is NULL (the row exists, the value is not "
        "recorded); then 'no value is recorded' is the correct answer.",
    )
    max_groups_per_template: int | None = Field(None, ge=1, le=1_000_000)
    balanced: bool = Field(False, description="Same number of queries per group in every style.")
    unverified: bool = Field(
        False,
        description="Also ask wordings that were never verified (rejected ones never are).",
    )
    seed: int = Field(0, ge=0, le=MAX_SEED)
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

    documents: DocumentOptions = Field(
        default_factory=DocumentOptions,
        description="Test sets written from the corpus (ragaudit generate --documents).",
    )

    @model_validator(mode="after")
    def _one_source_of_facts(self) -> GenerateOptions:
        if self.gold_facts is not None and self.gold_rows is not None:
            raise ValueError("set gold_facts or gold_rows, not both")
        return self
