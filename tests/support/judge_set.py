"""The judge measured on document answers (free text, not SQL values): a labelled set of
questions, free-text references and responses (tests/data/document_judge_set.json), each
judged by the cascade ``ragaudit judge`` runs (the matchers, then the LLM judge with its
reasons). scripts/measure_judge.py runs it with the embedded model and records the
replies; tests/test_judge_documents.py replays them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ragaudit.aio import gather_all
from ragaudit.judge.cascade import judge_one
from ragaudit.llm.client import LLMClient
from ragaudit.records.models import Judgement, QueryRecord, Reference, ResponseRecord

SET = Path(__file__).resolve().parents[1] / "data" / "document_judge_set.json"


@dataclass(frozen=True)
class Item:
    """One labelled answer: ``correct`` is what a reader of the reference says."""

    question: str
    reference: str
    response: str
    correct: bool
    what: str


def items(path: Path = SET) -> list[Item]:
    """The labelled set, in its file's order."""
    return [Item(**row) for row in json.loads(path.read_text(encoding="utf-8"))["items"]]


def judge_all(llm: LLMClient, labelled: list[Item]) -> list[Judgement]:
    """Each item judged as ``ragaudit judge`` judges an answer of a document pair (its
    reference the free-text answer, reasons asked), in the items' order."""

    async def one(i: int, item: Item) -> Judgement:
        query = QueryRecord(
            query_id=f"j{i}",
            group_id=f"j{i}",
            variant="generated",
            query=item.question,
            reference=Reference.from_values([item.reference]),
            source="document",
        )
        response = ResponseRecord(query_id=f"j{i}", system="rag", response=item.response)
        return await judge_one(query, response, llm)

    async def every() -> list[Judgement]:
        return list(await gather_all(*(one(i, item) for i, item in enumerate(labelled))))

    return llm.run(every())


@dataclass(frozen=True)
class Confusion:
    """The judge's verdicts against the labels: Correct said of right answers (tp) and of
    wrong ones (fp), Incorrect said of right ones (fn) and of wrong ones (tn), and the
    answers it failed on (judge-failed)."""

    tp: int
    fp: int
    fn: int
    tn: int
    failed: int


def confusion(labelled: list[Item], judged: list[Judgement]) -> Confusion:
    """Count the verdicts against the labels."""
    pairs = list(zip(labelled, judged, strict=True))
    return Confusion(
        tp=sum(1 for i, j in pairs if i.correct and j.correct is True),
        fp=sum(1 for i, j in pairs if not i.correct and j.correct is True),
        fn=sum(1 for i, j in pairs if i.correct and j.correct is False),
        tn=sum(1 for i, j in pairs if not i.correct and j.correct is False),
        failed=sum(1 for _, j in pairs if j.correct is None),
    )
