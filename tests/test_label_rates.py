"""The labeller measured on SQuAD 2.0 (../shared/reference/squad2-subset): the embedded
model's recorded replies (tests/data/label_replies.json, written by
scripts/measure_labels.py --record) replayed through the code ``ragaudit label`` runs. It
pins the figures docs/labels.md states, and fails if a prompt, the reply check or the
agreement figures change what the labeller reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragaudit.analysis.agreement import label_figures
from ragaudit.llm.client import LLMClient
from tests.conftest import REPO
from tests.support.label_set import SAMPLES, label_squad, reply_kinds
from tests.support.replay_llm import ReplayBackend

RECORDED = REPO / "tests" / "data" / "label_replies.json"
SQUAD = REPO.parent / "shared" / "reference" / "squad2-subset"

# What docs/labels.md reports (three sampled runs of the embedded model).
QUESTIONS, IMPOSSIBLE = 706, 320
COMPOSITION_ANSWERABLE = {
    "fact_single": 0.242,
    "summary": 0.684,
    "reasoning": 0.066,
    "unanswerable": 0.009,
}
RECALL, FALSE_ALARMS = 0.017, 0.009
FLEISS = 0.29
FIRST_REPLIES = {"json": 804, "cut": 987, "bare": 7, "unusable": 320}
UNDECIDED = 131


@pytest.fixture(scope="module")
def squad() -> Path:
    """The SQuAD 2.0 subset (test data outside the project; absent in a user's clone)."""
    if not (SQUAD / "dev-v2.0-subset.json").is_file():
        pytest.skip(f"SQuAD reference subset not found at {SQUAD} (../shared is absent)")
    return SQUAD


def test_recorded_replies_give_the_documented_figures(squad: Path) -> None:
    replies = ReplayBackend.from_file(RECORDED)
    with LLMClient(replies) as llm:
        labelled = label_squad(squad, llm)
    assert replies.missing == 0
    figures = label_figures(labelled.pairs.pairs, labelled.records)
    assert figures.pairs == QUESTIONS and len(figures.raters) == SAMPLES
    assert figures.unanswerable_recall is not None and figures.unanswerable_false_alarms
    # Both shares are over the pairs with a consensus label.
    assert figures.unanswerable_recall.n <= IMPOSSIBLE
    assert figures.unanswerable_false_alarms.n <= QUESTIONS - IMPOSSIBLE
    # Each documented share lies within the replayed figure's 95% interval: the replay is
    # deterministic, so only a change in what the labeller does can move a figure out.
    composition = figures.composition_answerable or {}
    for label, documented in COMPOSITION_ANSWERABLE.items():
        share = composition[label]
        assert share.ci95[0] <= documented <= share.ci95[1], (label, share)
    for share, documented in (
        (figures.unanswerable_recall, RECALL),
        (figures.unanswerable_false_alarms, FALSE_ALARMS),
    ):
        assert share.ci95[0] <= documented <= share.ci95[1], share
    assert figures.fleiss is not None and figures.fleiss.ci95 is not None
    assert figures.fleiss.ci95[0] <= FLEISS <= figures.fleiss.ci95[1], figures.fleiss
    # The reply check: how the first replies were read, and how many pairs stayed
    # undecided after re-asking (each with its reason, never a guessed label).
    assert dict(reply_kinds(labelled, replies.replies)) == FIRST_REPLIES
    assert sum(figures.undecided.values()) == UNDECIDED
    undecided = [r for r in labelled.records if r.label is None]
    assert len(undecided) == UNDECIDED and all(r.reason for r in undecided)
