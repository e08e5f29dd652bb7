"""The world's factuality check measured on documents with planted wrong facts (issue 39,
item 1): the reading-comprehension check that ``ragaudit world --llm`` runs on every
rewrite, run on the template documents as they are (each should pass: a fact reported
lost is a false alarm) and with one fact per document changed to another row's value of
the same column (the check should report that fact lost: a catch).

Two worlds: the profiles of Spider's ``company_employee`` with fictitious names
(``world --from-db --rename``, every fact stated) and the demo's generated company (its
project reports). Shared by scripts/measure_world_check.py, which runs the embedded model
and records its replies, and tests/test_world_check.py, which replays them.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from ragaudit.llm.client import LLMClient
from ragaudit.steps.world import _check, checked_values
from ragaudit.world.build import build_world
from ragaudit.world.from_db import build_world_from_db
from ragaudit.world.rewrite import Fact, split_report

SPIDER = "spider_open/company_employee.sqlite"


@dataclass(frozen=True)
class Case:
    """One document, as written and with one fact planted wrong."""

    world: str
    doc_id: str
    body: str
    planted_body: str
    planted: str  # the label of the fact changed
    wrong: str  # what it was changed to
    facts: tuple[Fact, ...]


@dataclass(frozen=True)
class Outcome:
    """What the check said of a case's two documents."""

    case: Case
    true_lost: tuple[str, ...]  # facts the check said the true document lost (false alarms)
    planted_lost: tuple[str, ...]
    true_problems: tuple[str, ...]
    planted_problems: tuple[str, ...]

    @property
    def caught(self) -> bool:
        """The planted fact was reported lost."""
        return self.case.planted in self.planted_lost

    @property
    def passed(self) -> bool:
        """The true document passed the check."""
        return not self.true_lost and not self.true_problems


def worlds(reference: Path, folder: Path) -> dict[str, Path]:
    """The two worlds, written into ``folder``: Spider's profiles, renamed, without
    holes; and the demo's company (size 60, seed 0)."""
    spider = folder / "spider"
    build_world_from_db(
        spider, f"sqlite:///{reference / SPIDER}", rename=True, holes=0.0, seed=0, force=True
    )
    demo = folder / "demo"
    build_world(demo, size=60, seed=0, force=True)
    return {"spider": spider, "demo": demo}


def cases(name: str, world: Path, seed: int = 0) -> tuple[list[Case], dict]:
    """Every document of ``world`` with a checked fact, and one of its checked facts
    planted wrong: its text replaced by another document's value of the same column
    (seeded). Returns the cases and the world's truth."""
    rng = random.Random(f"world-check:{name}:{seed}")
    texts = {}
    for line in (world / "documents.jsonl").read_text().splitlines():
        d = json.loads(line)
        texts[d["id"]] = d["text"]
    facts: dict[str, list[Fact]] = {}
    for line in (world / "document_facts.jsonl").read_text().splitlines():
        d = json.loads(line)
        facts[d["id"]] = [Fact(**f) for f in d["facts"]]
    values: dict[str, set[str]] = {}
    for fs in facts.values():
        for f in fs:
            if f.question:
                values.setdefault(f.column, set()).add(f.stated)
    out = []
    for doc_id, text in texts.items():
        _title, body = split_report(text)
        asked = [f for f in facts.get(doc_id, []) if f.question and body.count(f.stated) == 1]
        # A fact whose column has another value to swap in, written once in the body.
        asked = [f for f in asked if values[f.column] - {f.stated}]
        if not asked:
            continue
        fact = rng.choice(asked)
        wrong = rng.choice(sorted(values[fact.column] - {fact.stated}))
        out.append(
            Case(
                name,
                doc_id,
                body,
                body.replace(fact.stated, wrong),
                fact.label,
                wrong,
                tuple(facts[doc_id]),
            )
        )
    meta = json.loads((world / "world.json").read_text())
    return out, checked_values(world, meta, facts)


def check_all(llm: LLMClient, found: list[Case], truth: dict) -> list[Outcome]:
    """The check on each case's true and planted document, one after the other."""

    async def run() -> list[Outcome]:
        outcomes = []
        for case in found:
            true = await _check(llm, case.body, case.body, list(case.facts), truth)
            planted = await _check(llm, case.body, case.planted_body, list(case.facts), truth)
            outcomes.append(
                Outcome(
                    case,
                    tuple(f.label for f in true.lost),
                    tuple(f.label for f in planted.lost),
                    tuple(true.problems),
                    tuple(planted.problems),
                )
            )
        return outcomes

    return llm.run(run())
