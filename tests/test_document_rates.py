"""Generation from documents measured where the truth is known, as docs/documents.md states
it: the embedded model's recorded replies (written by scripts/measure_documents.py
--record) replayed through the code ``ragaudit generate --documents`` runs, and the
deterministic support lookup on SQuAD's answers. They fail if a prompt, a check or a
figure changes what docs/documents.md reports."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from ragaudit.analysis.metrics import proportion
from ragaudit.documents.checks import answer_support
from ragaudit.llm.client import LLMClient
from ragaudit.world.build import build_world
from tests.conftest import REPO
from tests.support.document_set import (
    WORLD_SEED,
    WORLD_SIZE,
    default_params,
    generate,
    grounded,
    precision_options,
    read_all,
    reading_cases,
    squad_contexts,
    support_cases,
    world_contexts,
)
from tests.support.replay_llm import ReplayBackend

DATA = REPO / "tests" / "data"
# What docs/documents.md reports (the embedded model, recorded replies).
PRECISION = (30, 32)  # references stating the database's value, of the pairs counted
SKIPPED = {"asks for no fact of the map": 8}
# The unanswerable reading answered every question of both kinds: it never lets an
# answerable question pass as unanswerable, and finds an answer to SQuAD's unanswerable
# ones too (written to look answerable), so it rejects more than it must.
READING_PER_KIND = 20
READING_ANSWERED = {False: 20, True: 20}
READING_MALFORMED = 0
SQUAD = REPO.parent / "shared" / "reference" / "squad2-subset"


@pytest.fixture(scope="module")
def squad() -> Path:
    """The SQuAD 2.0 subset (test data outside the project; absent in a user's clone)."""
    if not (SQUAD / "dev-v2.0-subset.json").is_file():
        pytest.skip(f"SQuAD reference subset not found at {SQUAD} (../shared is absent)")
    return SQUAD


def test_the_support_lookup_on_squad_answers(squad: Path) -> None:
    """docs/documents.md: own answers 385 of 386 supported, none rejected; answers of
    another paragraph 285 of 358 rejected, 5 wrongly supported."""
    found = Counter(
        (case.good, answer_support(case.context, case.answer)[0]) for case in support_cases(squad)
    )
    assert found == {
        (True, "supported"): 385,
        (True, None): 1,
        (False, "unsupported"): 285,
        (False, None): 68,
        (False, "supported"): 5,
    }


def test_grounded_precision_of_fact_single_pairs_on_a_generated_company(
    tmp_path: Path,
) -> None:
    """The embedded model's fact_single pairs from a generated company's reports: every
    one whose question asks for a fact of the report's map has the database's value as
    its reference, at least 90% of the time (docs/documents.md states the figure)."""
    world = tmp_path / "world"
    build_world(world, size=WORLD_SIZE, seed=WORLD_SEED, force=True)
    contexts = world_contexts(world)
    replies = ReplayBackend.from_file(DATA / "document_precision_replies.json")
    with LLMClient(replies, default_params=default_params()) as llm:
        records = generate(llm, precision_options(), contexts, contexts)
    assert replies.missing == 0
    checked, skipped = grounded(world, records)
    correct = sum(c.correct for c in checked)
    assert (correct, len(checked)) == PRECISION
    assert {why: len(q) for why, q in skipped.items()} == SKIPPED
    share = proportion(correct, len(checked))
    assert share.value is not None and share.value >= 0.9


def test_the_unanswerable_reading_on_squad_questions(squad: Path) -> None:
    """The reading that must find no answer to a question meant to be unanswerable, on
    SQuAD's unanswerable and answerable questions (docs/documents.md)."""
    contexts = squad_contexts(squad)
    cases = reading_cases(squad, READING_PER_KIND)
    replies = ReplayBackend.from_file(DATA / "document_reading_replies.json")
    with LLMClient(replies, default_params=default_params()) as llm:
        found = read_all(llm, cases, contexts)
    assert replies.missing == 0
    answered = {
        kind: sum(1 for c, f in zip(cases, found, strict=True) if c.answerable == kind and f)
        for kind in (False, True)
    }
    assert answered == READING_ANSWERED
    assert found.count(None) == READING_MALFORMED
