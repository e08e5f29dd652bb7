"""GRAMMAR's Table 4 on the paper's Spider-Open data (issue 39, item 2): the open-domain
filter flags the groups an LLM-only system answers from memory, and Acc_retrieval_db of
the paper's RAG answers falls once they are left out.

The LLM-only answers are the embedded model's, run and judged by ragaudit
(``scripts/measure_open_domain.py --record``); the test recomputes the figures
docs/analyze.md states from them and the paper's published answers, so it fails if the
analysis changes what it flags or counts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ragaudit.analysis import analyze
from ragaudit.analysis.metrics import Example, group_tags, open_domain_groups
from ragaudit.steps.inputs import read_neutral
from tests.conftest import REPO

RECORDED = REPO / "tests" / "data" / "open_domain_llm_only.json"


def _examples(reference: Path) -> list[Example]:
    """The paper's RAG answers (keyword top-1 and GPT-3.5, judged by GPT-4) and the
    embedded model's LLM-only answers, judged by ragaudit, to the same queries."""
    recorded: dict[str, list[object]] = json.loads(RECORDED.read_text(encoding="utf-8"))
    examples: list[Example] = []
    for variant in ("short", "long"):
        path = reference / f"spider_open_{variant}_unbalanced.jsonl"
        paper = list(read_neutral(path, system="paper", rule="same_set"))
        examples += paper
        examples += [
            Example(
                e.query_id, e.group_id, e.variant, bool(recorded[e.query_id][0]), system="llm-only"
            )
            for e in paper
        ]
    return examples


def test_the_open_domain_filter_on_the_papers_spider_open_answers(
    grammar_reference: Path,
) -> None:
    """docs/analyze.md: the embedded model, asked without retrieval, answers every wording
    of 5 of the 57 groups right (the industries of BP, Chevron, Royal Dutch Shell and
    Volkswagen, Volkswagen's headquarters); the paper's RAG system answered all 5, so
    leaving them out takes its Acc_retrieval_db from 44 of 57 to 39 of 52."""
    if not RECORDED.exists():
        pytest.fail(f"{RECORDED} is missing: scripts/measure_open_domain.py --record writes it")
    examples = _examples(grammar_reference)
    assert sum(e.system == "llm-only" for e in examples) == 833
    before = analyze([e for e in examples if e.system == "paper"]).systems["paper"]
    after = analyze(examples, llm_only="llm-only").systems["paper"]
    assert (before.acc_retrieval_db.k, before.acc_retrieval_db.n) == (44, 57)
    # The figure without the filter does not depend on the LLM-only system.
    assert (after.acc_retrieval_db.k, after.acc_retrieval_db.n) == (44, 57)
    closed = after.acc_retrieval_db_closed_domain
    assert closed is not None and (closed.k, closed.n) == (39, 52)
    assert after.open_domain_groups == 5
    flagged = open_domain_groups(examples, "llm-only")
    assert {
        re.sub(r"^SELECT (\w+) FROM company WHERE Name = '(.*)';$", r"\1 \2", g) for g in flagged
    } == {
        "Headquarters Volkswagen Group",
        *(
            f"Industry {name}"
            for name in (
                "BP",
                "Chevron",
                "Royal Dutch Shell",
                "Volkswagen Group",
            )
        ),
    }
    # Every flagged group was one the RAG system answered: the filter can only lower the
    # share here, as the paper's Table 4 says it does.
    assert flagged.isdisjoint(
        g for g, tags in _tags(examples, "paper").items() if all(t == "gap" for t in tags)
    )


def _tags(examples: list[Example], system: str) -> dict[str, list[str]]:
    """Each group's tag in every variant, for one system."""
    out: dict[str, list[str]] = {}
    for variant in ("short", "long"):
        mine = [e for e in examples if e.system == system and e.variant == variant]
        for group, tag in group_tags(mine).items():
            out.setdefault(group, []).append(tag)
    return out
