"""GRAMMAR's published RAG answers as items for the reference-free metrics: the paper's
Aurp and Spider-Closed responses (keyword retrieval, top-1 document, GPT-3.5), the document
each retrieved, and GPT-4's stored verdict as the grounded one. Shared by
scripts/measure_reference_free.py, which scores a sample with the embedded model, and
tests/test_reference_free_rates.py, which replays its replies."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from ragaudit.analysis.metrics import Example
from ragaudit.judge.reference_free import FreeItem

DATASETS = {
    "aurp": "aurp/documents.json",
    "spider_closed": "spider_closed/company_documents.json",
}
VARIANTS = ("short", "long")
SEED = 18
WRONG_SHARE = 10  # at least one answer in this many of a sample is a wrong one


@dataclass(frozen=True)
class GrammarSample:
    """The sampled answers of one dataset as items, every answer of it as a judged example,
    and how many of its answers were empty (GRAMMAR's "no answer was generated")."""

    dataset: str
    items: list[FreeItem]
    examples: list[Example]
    answers: int
    empty: int
    empty_correct: int


def grammar_sample(root: Path, dataset: str, size: int, seed: int = SEED) -> GrammarSample:
    """``size`` answers drawn at random (seeded) from the non-empty answers of both
    wording styles of ``dataset`` (the unbalanced files, as generated), at least a tenth
    of them wrong where the dataset has that many."""
    documents: dict[str, str] = json.loads((root / DATASETS[dataset]).read_text(encoding="utf-8"))
    rows = []
    for variant in VARIANTS:
        path = root / f"{dataset}_{variant}_unbalanced.jsonl"
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    empty = [r for r in rows if not r["response"].strip()]
    answered = [r for r in rows if r["response"].strip()]
    rng = random.Random(f"{seed}:{dataset}")
    chosen = rng.sample(answered, min(size, len(answered)))
    # Reliability is about the wrong answers: where a uniform sample would hold too few
    # to say anything (Aurp's non-empty answers are 96% right), wrong ones not drawn
    # replace right ones drawn, up to a tenth of the sample. Spider-Closed's is unchanged.
    wrong = [r for r in chosen if not r["correct"]]
    floor = len(chosen) // WRONG_SHARE
    if len(wrong) < floor:
        spare = [r for r in answered if not r["correct"] and r not in chosen]
        extra = rng.sample(spare, min(floor - len(wrong), len(spare)))
        right = [r for r in chosen if r["correct"]]
        dropped = {id(r) for r in rng.sample(right, len(extra))}
        chosen = [r for r in chosen if id(r) not in dropped] + extra
    chosen.sort(key=lambda r: r["query_id"])
    items = [
        FreeItem(
            query_id=r["query_id"],
            system=dataset,
            question=r["query"],
            answer=r["response"],
            contexts=tuple(documents[i] for i in r["retrieved_ids"]),
        )
        for r in chosen
    ]
    # Every answer, so that a group's tag (gap, non-robust, robust) is the one all its
    # answers give it, as the paper's analysis tags it.
    examples = [
        Example(
            query_id=r["query_id"],
            group_id=r["group_id"],
            variant=r["variant"],
            correct=bool(r["correct"]),
            system=dataset,
        )
        for r in rows
    ]
    return GrammarSample(
        dataset=dataset,
        items=items,
        examples=examples,
        answers=len(rows),
        empty=len(empty),
        empty_correct=sum(bool(r["correct"]) for r in empty),
    )
