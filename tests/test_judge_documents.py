"""The judge on document answers (issue 41): free-text references, responses right in
other words or wrong, labelled by a reader (tests/data/document_judge_set.json), judged
by the cascade ``ragaudit judge`` runs with the embedded model's recorded replies
(scripts/measure_judge.py --record). It fails if a prompt, the parser or a matcher
changes what docs/analyze.md states of the judge on document answers."""

from __future__ import annotations

from ragaudit.analysis.metrics import proportion
from ragaudit.llm.client import LLMClient
from tests.conftest import REPO
from tests.support.document_set import default_params
from tests.support.judge_set import Confusion, confusion, items, judge_all
from tests.support.replay_llm import ReplayBackend

REPLIES = REPO / "tests" / "data" / "document_judge_replies.json"
# What docs/analyze.md states (filled from scripts/measure_judge.py).
EXPECTED = Confusion(tp=13, fp=0, fn=9, tn=22, failed=0)


def test_the_set_is_half_right_half_wrong_answers() -> None:
    labelled = items()
    assert len(labelled) == 44
    assert sum(i.correct for i in labelled) == 22
    # Every question twice, answered right once and wrong once: the judge cannot pass a
    # set by the question alone.
    questions = {i.question for i in labelled}
    assert len(questions) == 22
    assert all({i.correct for i in labelled if i.question == q} == {True, False} for q in questions)


def test_the_judge_on_document_answers() -> None:
    labelled = items()
    replies = ReplayBackend.from_file(REPLIES)
    with LLMClient(replies, default_params=default_params()) as llm:
        judged = judge_all(llm, labelled)
    assert replies.missing == 0
    found = confusion(labelled, judged)
    assert found == EXPECTED
    # Matchers decide the answers that hold the reference word for word; the LLM judge
    # the rest, which is most of free-text answers.
    assert sum(j.method == "llm" for j in judged) >= 30
    precision = proportion(found.tp, found.tp + found.fp)
    recall = proportion(found.tp, found.tp + found.fn)
    assert precision.value is not None and recall.value is not None
