"""The deterministic matchers on hand-written answers that hedge between the reference and
another value or deny it (tests/data/matcher_hedges.json): such an answer is never decided
Correct, the LLM judge is told why it was left to it, and plain right answers (with extra
detail, a reference that holds "not", a NULL or a set answer) are still decided."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ragaudit.judge.llm_judge import judge_prompt
from ragaudit.judge.matchers import DENIES, NAMES_ANOTHER, Decision, is_refusal, match
from ragaudit.records.models import Reference

ROOT = Path(__file__).resolve().parents[1]
CASES: list[dict[str, Any]] = json.loads(
    (ROOT / "tests" / "data" / "matcher_hedges.json").read_text(encoding="utf-8")
)["cases"]
HEDGES = [c for c in CASES if c["kind"] in ("hedge", "denial")]


def _decide(case: dict[str, Any]) -> Decision:
    return match(Reference.from_values(case["values"]), case["response"], question=case["question"])


def _verdict(decision: Decision) -> str:
    if not decision.decided:
        return "undecided"
    return "correct" if decision.correct else "incorrect"


def _id(case: dict[str, Any]) -> str:
    return f"{case['type']}-{case['kind']}: {case['response'][:60]}"


def rates() -> dict[str, int]:
    """What the docs report of this set: how many hedges and denials are declined (not
    decided Correct), and how many right answers are still decided Correct."""
    verdicts = [(c["kind"], _verdict(_decide(c))) for c in CASES]
    return {
        "hedges": sum(k in ("hedge", "denial") for k, _ in verdicts),
        "hedges_declined": sum(k in ("hedge", "denial") and v != "correct" for k, v in verdicts),
        "right": sum(k == "right" for k, _ in verdicts),
        "right_correct": sum(k == "right" and v == "correct" for k, v in verdicts),
    }


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_each_case_is_decided_as_labelled(case: dict[str, Any]) -> None:
    decision = _decide(case)
    assert _verdict(decision) == case["expected"], (case["note"], decision)


@pytest.mark.parametrize("case", HEDGES, ids=_id)
def test_a_hedge_or_a_denial_is_never_decided_correct(case: dict[str, Any]) -> None:
    decision = _decide(case)
    assert not (decision.decided and decision.correct), (case["note"], decision)


@pytest.mark.parametrize(
    "case",
    [
        c
        for c in HEDGES
        if c["expected"] == "undecided"
        and c["values"] not in ([], [None])
        and not is_refusal(c["response"])
    ],
    ids=_id,
)
def test_the_judge_is_told_why_the_matchers_declined(case: dict[str, Any]) -> None:
    """A hedge is declined as naming another value, a denial as denying the reference, and
    the judge's prompt says so; an answer they decide, or one with neither, says nothing."""
    why = _decide(case).why
    assert why == (NAMES_ANOTHER if case["kind"] == "hedge" else DENIES), case["note"]
    reference = Reference.from_values(case["values"]).display
    told = judge_prompt(case["question"], reference, case["response"], note=why)[-1]["content"]
    assert f"Note: the response {why}" in told


def test_a_plain_prompt_is_unchanged_without_a_note() -> None:
    """Responses the matchers did not decline keep their prompt, and so their cached reply."""
    plain = judge_prompt("Q?", "Finance", "Operations.")
    assert judge_prompt("Q?", "Finance", "Operations.", note=None) == plain
    assert "Note:" not in plain[-1]["content"]
    assert _decide(next(c for c in CASES if c["response"] == "Operations.")).why is None


def test_the_set_covers_every_value_type_and_rule() -> None:
    """Hedges and denials of every value type, and right answers by every rule that decides
    Correct (so the set measures false declines as well as false accepts)."""
    types = {"text", "number", "money", "percent", "date", "boolean", "set"}
    for kind in ("hedge", "denial"):
        assert types <= {c["type"] for c in HEDGES if c["kind"] == kind}, kind
    rules = Counter(_decide(c).rule for c in CASES if c["kind"] == "right")
    assert {"exact", "contains", "number", "date", "set", "not-recorded", "refusal"} <= set(rules)
    assert len(CASES) >= 80


def test_the_documented_rates_are_this_sets() -> None:
    """docs/analyze.md reports the rates this set measures (`python
    tests/test_matcher_hedges.py` prints them)."""
    r = rates()
    doc = re.sub(r"\s+", " ", (ROOT / "docs" / "analyze.md").read_text(encoding="utf-8"))
    assert f"{r['hedges_declined']} of the {r['hedges']} hedges and denials" in doc
    assert f"{r['right_correct']} of the {r['right']} right answers" in doc
    assert f"{len(CASES)} labelled answers" in doc


if __name__ == "__main__":
    print(json.dumps({"cases": len(CASES), **rates()}))
