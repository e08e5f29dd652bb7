"""The world's factuality check on documents with planted wrong facts (issue 39, item 1):
the reading-comprehension check of ``ragaudit world --llm``, replayed with the embedded
model's recorded replies (scripts/measure_world_check.py --record) on Spider's renamed
profiles and on the demo's company. It fails if a prompt, the parser, a matcher or the
planting changes what docs/world.md states of the check."""

from __future__ import annotations

from pathlib import Path

from ragaudit.llm.client import LLMClient
from tests.conftest import REPO
from tests.support.document_set import default_params
from tests.support.replay_llm import ReplayBackend
from tests.support.world_check import cases, check_all, worlds

REPLIES = REPO / "tests" / "data" / "world_check_replies.json"
# What docs/world.md states (from scripts/measure_world_check.py): per world, the
# documents, the true ones that pass, and the planted wrong facts caught.
EXPECTED = {"spider": (26, 26, 26), "demo": (20, 20, 20)}


def test_the_check_catches_planted_wrong_facts(grammar_reference: Path, tmp_path: Path) -> None:
    replies = ReplayBackend.from_file(REPLIES)
    found = {}
    with LLMClient(replies, default_params=default_params()) as llm:
        for name, world in worlds(grammar_reference, tmp_path).items():
            planted, truth = cases(name, world)
            # Every case changes one checked fact: its value, written once, is gone.
            for case in planted:
                assert case.planted_body != case.body and case.wrong in case.planted_body
            outcomes = check_all(llm, planted, truth)
            found[name] = (
                len(outcomes),
                sum(o.passed for o in outcomes),
                sum(o.caught for o in outcomes),
            )
    assert replies.missing == 0
    assert found == EXPECTED
