"""The ``reference_free`` section of ``ragaudit.yaml``: which reference-free metrics
``ragaudit judge --reference-free`` computes, and the thresholds at which ``analyze``
reads each as a verdict ("calls the answer correct") to measure it against the grounded
one."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from ragaudit.options import StrictOptions
from ragaudit.records.models import FREE_METRICS, FreeMetric

# A metric at or above its threshold calls an answer correct. Faithfulness: at least half
# the claims supported; self-consistency: every sample agrees (GRAMMAR's rule).
DEFAULT_THRESHOLDS: dict[FreeMetric, float] = {
    "faithfulness": 0.5,
    "answer_relevancy": 0.7,
    "context_precision": 0.5,
    "self_consistency": 1.0,
}


# A threshold is a score: every reference-free metric lies between -1 and 1.
Threshold = Annotated[float, Field(ge=-1, le=1)]


class ReferenceFreeOptions(StrictOptions):
    """Reference-free metrics and how their reliability is read."""

    metrics: list[FreeMetric] = Field(
        default_factory=lambda: list(FREE_METRICS),
        description="Metrics that judge --reference-free computes.",
    )
    thresholds: dict[FreeMetric, Threshold] = Field(
        default_factory=lambda: dict(DEFAULT_THRESHOLDS),
        description="Per metric, the score at or above which it calls an answer correct.",
    )
    consistency_samples: int = Field(
        4, ge=1, le=20, description="Self-consistency: answers sampled at temperature 1.0."
    )
    relevancy_questions: int = Field(
        3, ge=1, le=10, description="Answer relevancy: questions written for each answer."
    )
    target_precision: float = Field(
        0.9,
        gt=0,
        le=1,
        description="analyze reports the threshold each metric needs to reach this precision.",
    )

    @field_validator("metrics")
    @classmethod
    def _distinct(cls, value: list[FreeMetric]) -> list[FreeMetric]:
        return list(dict.fromkeys(value))

    @field_validator("thresholds")
    @classmethod
    def _complete(cls, value: dict[FreeMetric, float]) -> dict[FreeMetric, float]:
        # Each threshold is -1 to 1 by its type (Threshold); a metric left out keeps its own.
        return {**DEFAULT_THRESHOLDS, **value}

    def threshold(self, metric: FreeMetric) -> float:
        """The threshold of ``metric``."""
        return self.thresholds.get(metric, DEFAULT_THRESHOLDS[metric])
