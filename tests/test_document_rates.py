"""Generation from documents measured where the truth is known, as docs/documents.md states
it: the embedded model's recorded replies (written by scripts/measure_documents.py
--record) replayed through the code ``ragaudit generate --documents`` runs, and the
deterministic support lookup on SQuAD's answers. They fail if a prompt, a check or a
figure changes what docs/documents.md reports."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from ragaudit.analysis.documents import (
    composition_distance,
    distance_difference,
    generation_figures,
)
from ragaudit.analysis.metrics import proportion
from ragaudit.documents.checks import answer_support
from ragaudit.documents.generator import Context
from ragaudit.llm.client import LLMClient
from ragaudit.world.build import build_world
from tests.conftest import REPO
from tests.support.document_set import (
    WORLD_SEED,
    WORLD_SIZE,
    balance_options,
    check_wordings,
    default_params,
    generate,
    grounded,
    label_answerable,
    observed,
    own_wording_cases,
    precision_options,
    read_all,
    reading_cases,
    relabel,
    squad_contexts,
    support_cases,
    wording_cases,
    world_contexts,
)
from tests.support.replay_llm import ReplayBackend

DATA = REPO / "tests" / "data"
# What docs/documents.md reports (the embedded model, recorded replies).
PRECISION = (30, 30)  # references stating the database's value, of the pairs counted
SKIPPED = {"asks for no fact of the map": 10}
# The unanswerable reading answered every question of both kinds: it never lets an
# answerable question pass as unanswerable, and finds an answer to SQuAD's unanswerable
# ones too (written to look answerable), so it rejects more than it must.
READING_PER_KIND = 20
READING_ANSWERED = {False: 20, True: 20}
READING_MALFORMED = 0
SQUAD = REPO.parent / "shared" / "reference" / "squad2-subset"
# Balance on SQuAD's 83 paragraphs, 32 pairs asked of each strategy: by the labeller (in
# steps, as the generator asks it) statements is no closer to uniform than simple;
# relabelled in default, not either. The 1.5B reader answered every one of statements'
# unanswerable near misses from some passage, so none was accepted, and the 83
# paragraphs ran out with 22 answerable pairs accepted.
BALANCE_SIZE = 32
COMPOSITION = {
    "statements": {"summary": 10, "fact_single": 10, "reasoning": 1},
    "simple": {"fact_single": 21, "summary": 10, "reasoning": 3, "unanswerable": 1},
}
# The same pairs relabelled in the labeller's default phrasing (None: undecided).
RELABELLED = {
    "statements": {"summary": 14, "fact_single": 5, "reasoning": 1, "unanswerable": 1},
    "simple": {"summary": 19, "fact_single": 12, "reasoning": 2, None: 2},
}
CANDIDATES = {
    "statements": (
        83,
        21,
        {
            "unanswerable check": 19,
            "reading": 26,
            "question": 6,
            "llm": 1,
            "label": 1,
            "support": 9,
        },
    ),
    "simple": (
        68,
        32,
        {"question": 14, "reading": 13, "label": 7, "near-duplicate": 1, "size": 1},
    ),
}
# The labeller's two phrasings, asked once each as the generator asks, on the subset's
# first 150 answerable questions (None: undecided). The paper's Llama-3-70B called about
# 94% of SQuAD's answerable questions fact_single.
PHRASING_SIZE = 150
PHRASINGS = {
    "default": {"summary": 94, "fact_single": 44, "reasoning": 7, None: 4, "unanswerable": 1},
    "steps": {"fact_single": 89, "summary": 51, "reasoning": 8, None: 2},
}
# The wording check on labelled wordings made from SQuAD's questions, 25 of each kind:
# how many it kept as asking the same thing. The reading alone kept 23, 0, 6 and 8; the
# checks before it (another kind of fact asked, a name or number left out) drop the
# wh-swaps and most unanswerable edits, and 4 of the people's paraphrases, which name
# their subject otherwise ("the first major bend in the Rhine" for "the bend ... in
# Basel").
WORDING_PER_KIND = 25
WORDING_KEPT = {"same-answer": 19, "other-question": 0, "unanswerable-edit": 2, "wh-swap": 0}


@pytest.fixture(scope="module")
def squad() -> Path:
    """The SQuAD 2.0 subset (test data outside the project; absent in a user's clone)."""
    if not (SQUAD / "dev-v2.0-subset.json").is_file():
        pytest.skip(f"SQuAD reference subset not found at {SQUAD} (../shared is absent)")
    return SQUAD


def test_the_support_lookup_on_squad_answers(squad: Path) -> None:
    """docs/documents.md: own answers 385 of 386 supported, none rejected; answers of
    another paragraph 288 of 358 rejected, 5 wrongly supported."""
    found = Counter(
        (case.good, answer_support(case.context, case.answer)[0]) for case in support_cases(squad)
    )
    assert found == {
        (True, "supported"): 385,
        (True, None): 1,
        (False, "unsupported"): 288,
        (False, None): 65,
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


def test_balance_of_both_strategies_on_squad_paragraphs(squad: Path) -> None:
    """docs/documents.md: what the labeller says ``statements`` (uniform mix) and
    ``simple`` write from SQuAD's paragraphs, each one's distance to uniform, and the
    difference, whose interval holds 0 with the embedded labeller in either phrasing."""
    contexts = squad_contexts(squad)
    replies = ReplayBackend.from_file(DATA / "document_balance_replies.json")
    labels: dict[str, list[str]] = {}
    every = []
    with LLMClient(replies, default_params=default_params()) as llm:
        for strategy in ("statements", "simple"):
            records = generate(llm, balance_options(strategy, BALANCE_SIZE), contexts, contexts)
            every += records
            labels[strategy] = observed(records)
            dropped = Counter(str(r.dropped).split(":")[0] for r in records if not r.accepted)
            accepted = sum(r.accepted for r in records)
            assert (len(records), accepted, dict(dropped)) == CANDIDATES[strategy]
            default = relabel(llm, records, contexts, "default")
            assert dict(Counter(default)) == RELABELLED[strategy]
            labels[f"{strategy} (default)"] = [x for x in default if x is not None]
    assert replies.missing == 0
    assert {k: dict(Counter(labels[k])) for k in COMPOSITION} == COMPOSITION
    statements = composition_distance(labels["statements"], seed=0)
    simple = composition_distance(labels["simple"], seed=0)
    assert (round(statements.value or 0, 2), round(simple.value or 0, 2)) == (0.45, 0.39)
    for a, b, expected in (
        ("statements", "simple", -0.067),
        ("statements (default)", "simple (default)", 0.023),
    ):
        difference = distance_difference(labels[a], labels[b], seed=0)
        assert difference is not None
        value, (low, high) = difference
        assert round(value, 3) == expected and low <= 0 <= high
    figures = generation_figures(every).strategies
    # The critiques passed every pair they rated (the 1.5B critic rates nearly all 5).
    for strategy in figures.values():
        for by_critique in strategy.critiques.values():
            assert {c.passed.value for c in by_critique.values()} == {1.0}
    # No unanswerable near miss was accepted, so none reached the critiques: the planner
    # shared the visits until the answerable quotas were full, then gave it the rest.
    assert "unanswerable" not in figures["statements"].critiques


def test_the_wording_check_on_labelled_squad_wordings(squad: Path) -> None:
    """docs/documents.md: people's paraphrases with the same answer are kept, wordings
    that ask something else (another question of the paragraph, SQuAD's unanswerable
    edits, a swapped question word) are mostly dropped."""
    cases = wording_cases(squad, WORDING_PER_KIND)
    replies = ReplayBackend.from_file(DATA / "document_wording_replies.json")
    with LLMClient(replies, default_params=default_params()) as llm:
        found = check_wordings(llm, cases, squad_contexts(squad))
    assert replies.missing == 0
    assert None not in found
    kept = Counter(c.kind for c, same in zip(cases, found, strict=True) if same)
    assert {kind: kept[kind] for kind in WORDING_KEPT} == WORDING_KEPT
    others = [same for c, same in zip(cases, found, strict=True) if not c.same]
    rejected = proportion(others.count(False), len(others))
    assert rejected.value is not None and rejected.value >= 0.95


def test_the_labellers_two_phrasings_on_squad_answerable_questions(squad: Path) -> None:
    """docs/documents.md: why the generator asks the labeller in steps. On the same
    answerable questions, default calls most of them summary; steps calls most of them
    fact_single, as a large model does."""
    replies = ReplayBackend.from_file(DATA / "document_phrasing_replies.json")
    found = {}
    with LLMClient(replies, default_params=default_params()) as llm:
        for phrasing in PHRASINGS:
            found[phrasing] = dict(Counter(label_answerable(llm, squad, PHRASING_SIZE, phrasing)))
    assert replies.missing == 0
    assert found == PHRASINGS
    assert found["steps"]["fact_single"] > 2 * found["default"]["fact_single"]


# The wording check on document pairs written for the project (tests/data/
# document_wording_set.json: 12 passages of a language reference, 36 paraphrases and 36
# drifts): the verdicts wanted per kind, by the check and by the reading alone. The
# reading's misses are those it reads as the question ("How many times is c evaluated in
# a < b < c?": once) or cannot read (a short query it answers "Yes").
OWN_WANTED = {
    "the check": {
        "paraphrase": 23,
        "short": 10,
        "other fact": 14,
        "operand or operator shifted": 6,
        "other ask": 8,
        "subject shifted": 3,
        "subject dropped": 2,
    },
    "the reading alone": {
        "paraphrase": 23,
        "short": 10,
        "other fact": 14,
        "operand or operator shifted": 5,
        "other ask": 7,
        "subject shifted": 2,
        "subject dropped": 2,
    },
}


def test_the_wording_check_on_document_pairs_written_for_the_project() -> None:
    """docs/documents.md: on document pairs with paraphrases and drifts written for the
    project, the check keeps 33 of 36 paraphrases and drops 33 of 36 drifts (0.92 each,
    the SQL half's verifier: 0.96 and 0.97); the reading alone dropped 30 drifts (28 before a
    reading cut at its token limit was read as far as it got)."""
    cases = own_wording_cases()
    contexts = [Context(f"own#{i}", f"own#{i}", c.context) for i, c in enumerate(cases)]
    replies = ReplayBackend.from_file(DATA / "document_wording_own_replies.json")
    wanted: dict[str, dict[str, int]] = {}
    rates: dict[str, tuple[int, int]] = {}
    with LLMClient(replies, default_params=default_params()) as llm:
        for name, drift in (("the check", True), ("the reading alone", False)):
            found = check_wordings(llm, cases, contexts, drift=drift)
            right = Counter(c.kind for c, f in zip(cases, found, strict=True) if f is c.same)
            wanted[name] = {kind: right[kind] for kind in OWN_WANTED[name]}
            kept = sum(1 for c, f in zip(cases, found, strict=True) if c.same and f)
            dropped = sum(1 for c, f in zip(cases, found, strict=True) if not c.same and f is False)
            rates[name] = (kept, dropped)
    assert replies.missing == 0
    assert wanted == OWN_WANTED
    assert rates == {"the check": (33, 33), "the reading alone": (33, 30)}
    for k in rates["the check"]:
        share = proportion(k, 36)
        assert share.value is not None and share.value >= 0.9


# simple's pairs on SQuAD's paragraphs (two a paragraph, one pass, 25 pairs asked), each
# judged by reading it against its paragraph (tests/data/document_simple_judged.json):
# supported and correct, or why not. Before issue 41, 21 of the 32 pairs simple accepted
# from the same paragraphs were (a reference whose words are all in the paragraph but
# says something else, "by Isembard"; a question that holds its answer).
SIMPLE_SIZE = 25
SIMPLE_CORRECT = (22, 25)
SIMPLE_BEFORE = (21, 32)
# What the new checks dropped, and how many of those were wrong.
SIMPLE_DROPPED_WRONG = {"reading": (7, 9), "question": (14, 15)}


def test_grounded_precision_of_simple_pairs_on_squad_paragraphs(squad: Path) -> None:
    """docs/documents.md: with the reading of its references and the circular-question
    check, at least 80% of the pairs simple accepts are supported and correct (22 of 25,
    from 21 of 32 before); what those checks dropped was mostly wrong."""
    contexts = squad_contexts(squad)
    replies = ReplayBackend.from_file(DATA / "document_simple_replies.json")
    with LLMClient(replies, default_params=default_params()) as llm:
        records = generate(llm, balance_options("simple", SIMPLE_SIZE), contexts, contexts)
    assert replies.missing == 0
    judged = json.loads((DATA / "document_simple_judged.json").read_text(encoding="utf-8"))
    accepted = [r for r in records if r.accepted]
    assert all(r.candidate_id in judged for r in accepted)  # every accepted pair was read
    correct = sum(judged[r.candidate_id]["correct"] for r in accepted)
    assert (correct, len(accepted)) == SIMPLE_CORRECT
    share = proportion(correct, len(accepted))
    assert share.value is not None and share.value >= 0.8
    for check, expected in SIMPLE_DROPPED_WRONG.items():
        dropped = [r for r in records if str(r.dropped).startswith(f"{check}:")]
        wrong = sum(not judged[r.candidate_id]["correct"] for r in dropped)
        assert (wrong, len(dropped)) == expected
    before = [v["correct"] for v in judged.values() if v["accepted_before_issue_41"]]
    assert (sum(before), len(before)) == SIMPLE_BEFORE
