"""The ``generate.documents`` section of ragaudit.yaml: how test sets are written from the
corpus (strategy, size, label mix, the checks' thresholds)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from ragaudit.documents.checks import CRITIQUES
from ragaudit.documents.generation import Strategy
from ragaudit.options import MAX_SEED, StrictOptions
from ragaudit.records.models import LABELS, QuestionLabel


def mix_problem(weights: Mapping[str, float] | Mapping[QuestionLabel, float]) -> str | None:
    """Why label weights cannot be a mix, or None. Each weight must be a finite number
    >= 0 and their total finite and > 0: the shares are weight / total, which an infinite or
    NaN weight (or total) turns into NaN, an error far from the mistake.

    >>> print(mix_problem({"fact_single": 1.0, "summary": float("inf")}))
    summary: the weight must be a finite number >= 0 (not inf)
    """
    for label, weight in weights.items():
        if not math.isfinite(weight) or weight < 0:
            return f"{label}: the weight must be a finite number >= 0 (not {weight:g})"
    total = sum(weights.values())  # inf when finite weights overflow it
    if not math.isfinite(total) or total <= 0:
        return "the weights must be >= 0, one of them > 0, and their total finite"
    return None


# The default mix: answerable questions only, half of them single facts. A user of Ragas or
# DeepEval expects answerable questions unless asking for others; this is Ragas's default
# query distribution (single-hop specific 0.5, multi-hop abstract 0.25, multi-hop
# specific 0.25) in the paper's labels, and keeps fact_single, what users ask most, the
# largest share. docs/documents.md says why.
DEFAULT_MIX: dict[QuestionLabel, float] = {"fact_single": 2.0, "summary": 1.0, "reasoning": 1.0}
# ``mix: uniform`` (``--mix uniform``): the four labels alike, unanswerable included.
UNIFORM = "uniform"
UNIFORM_MIX: dict[QuestionLabel, float] = dict.fromkeys(LABELS, 1.0)


def _default_thresholds() -> dict[str, int]:
    return dict.fromkeys(CRITIQUES, 3)


# A label's weight in a mix: a finite number from 0 to a million (the shares are the
# weights over their total, so no mix needs more, and four of them cannot overflow it).
MAX_WEIGHT = 1_000_000
Weight = Annotated[float, Field(ge=0, le=MAX_WEIGHT)]
# A critique's lowest accepted rating, on the critic's scale of 1 to 5.
Rating = Annotated[int, Field(ge=1, le=5)]


class DocumentOptions(StrictOptions):
    """How question-answer pairs are generated from the corpus (``generate.documents``)."""

    strategy: Strategy = Field(
        "statements",
        description="statements: theme, statements, then a question per statement (a label "
        "mix is honoured); simple: one ask per context for factoid pairs (the baseline).",
    )
    size: int = Field(20, ge=1, le=100_000, description="Accepted pairs wanted.")
    mix: dict[QuestionLabel, Weight] | None = Field(
        None,
        description="Requested share of each label (statements), e.g. {fact_single: 1, "
        "summary: 1}, normalized, or 'uniform' (the four labels alike, unanswerable "
        "included); default: answerable only, fact_single 2, summary 1, reasoning 1.",
    )
    per_context: int = Field(
        1, ge=1, le=10, description="Pairs asked per context and round (simple)."
    )
    rounds: int = Field(
        2,
        ge=1,
        le=10,
        description="Passes over the contexts while fewer than size pairs are accepted.",
    )
    thresholds: dict[str, Rating] = Field(
        default_factory=_default_thresholds,
        description="Lowest accepted rating (1-5) of each critique: stand_alone, "
        "specificity, question_grounding, answer_grounding.",
    )
    check_label: bool = Field(
        True,
        description="Ask the labeller for each pair's label; drop an answerable request it "
        "calls unanswerable.",
    )
    label_phrasing: Literal["default", "steps"] = Field(
        "steps",
        description="How the labeller is asked (docs/labels.md): steps, a decision list, "
        "labels the pairs simple writes and SQuAD's answerable questions more like a large "
        "model does than default (docs/documents.md).",
    )
    corpus_check: int = Field(
        2,
        ge=0,
        le=10,
        description="Corpus passages (BM25's top ranks) read with the context to check that "
        "an unanswerable question is answered by none of them.",
    )
    near_duplicate: float = Field(
        0.9,
        gt=0,
        le=1,
        description="Cosine similarity (dense embeddings) at which a question is a near "
        "duplicate of one accepted before.",
    )
    styles: list[str] | None = Field(
        None,
        description="Wording styles each accepted question is also asked in (default: "
        "templates.styles); [] for the generated question only.",
    )
    max_contexts: int | None = Field(
        None, ge=1, le=10_000_000, description="Use at most this many contexts."
    )
    seed: int = Field(0, ge=0, le=MAX_SEED)

    @field_validator("thresholds")
    @classmethod
    def _known_critiques(cls, value: dict[str, int]) -> dict[str, int]:
        for name in value:  # each rating is 1 to 5 by its type (Rating)
            if name not in CRITIQUES:
                raise ValueError(f"unknown critique {name!r}: use {', '.join(CRITIQUES)}")
        return _default_thresholds() | value

    @field_validator("mix", mode="before")
    @classmethod
    def _named_mix(cls, value: object) -> object:
        # 'uniform' names the four labels alike; any other text is left to be refused.
        if isinstance(value, str) and value.strip().lower() == UNIFORM:
            return dict(UNIFORM_MIX)
        return value

    @field_validator("mix")
    @classmethod
    def _weights(
        cls, value: dict[QuestionLabel, float] | None
    ) -> dict[QuestionLabel, float] | None:
        problem = None if value is None else mix_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _mix_needs_statements(self) -> DocumentOptions:
        if self.mix is not None and self.strategy == "simple":
            raise ValueError("a label mix needs strategy: statements (simple asks for facts)")
        return self

    def shares(self) -> dict[QuestionLabel, float]:
        """The requested share of each label, summing to 1 (statements only): the mix
        given, else :data:`DEFAULT_MIX` (answerable questions only)."""
        weights = self.mix or DEFAULT_MIX
        total = sum(weights.values())
        return {label: weights.get(label, 0.0) / total for label in LABELS if weights.get(label)}


__all__ = ["DEFAULT_MIX", "UNIFORM", "UNIFORM_MIX", "DocumentOptions", "mix_problem"]
