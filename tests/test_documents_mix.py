"""What ``generate --documents`` asks for when the user names nothing, and how it writes
what it is asked for (issue 41, items 8 and 9): the default mix is answerable questions
only, with the uniform mix one option away; unanswerable questions are near misses of
several kinds, never one template, and one context is not asked the same kind twice; a
``simple`` reference is read back from its context, so one whose words are all there but
which says something else is dropped with its reason."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter

from ragaudit.cli.generate import parse_mix
from ragaudit.documents import checks
from ragaudit.documents.generation import UNANSWERABLE_KINDS
from ragaudit.documents.generator import Context, DocumentGenerator, Embedder, quotas
from ragaudit.documents.options import DocumentOptions
from ragaudit.llm.backends.scripted import Scripted
from ragaudit.llm.client import LLMClient
from ragaudit.llm.types import Messages
from ragaudit.records.models import CandidateRecord

PLACES = ["Norhaven", "Eastmoor", "Southfield", "Westerby", "Kellmouth", "Ashgrove"]
CONTEXTS = [
    Context(
        f"Bridge {i}#0",
        f"Bridge {i}",
        f"Bridge {i} is being built in {place}. Work began on {i + 1} May 2021. "
        f"Completion is planned for 9 June 2023. The client is the {place} council.",
    )
    for i, place in enumerate(PLACES)
]
FIVES = json.dumps({name: [5, "fine"] for name in checks.CRITIQUES})


def _facts(user: str) -> str:
    name = re.search(r"Bridge \d+", user)
    sentences = [s.strip() + "." for s in user.split("Passage:\n", 1)[1].split(".") if s.strip()]
    return f"Theme: the {name.group(0) if name else 'bridge'} project\n" + "\n".join(
        f"> {s}" for s in sentences
    )


def _responder(messages: Messages) -> str:
    system, user = messages[0]["content"], messages[-1]["content"]
    if "You extract facts" in system:
        return _facts(user)
    if "cannot answer" in system:  # a question on the theme, worded by what the ask says
        theme = user.split("Theme: ", 1)[1].splitlines()[0]
        task = next((line for line in user.splitlines() if line.startswith("Task:")), "any")
        return f"What does nobody record about {theme} ({len(task)} {task.split()[-1]})?"
    if "You review test questions" in system:
        return FIVES
    if "numbered passages" in system:
        question = user.rsplit("Question: ", 1)[1]
        if question.startswith("When did work"):
            found = re.search(r"Work began on ([^.]+)\.", user)
            return json.dumps({"answer": found.group(1) if found else "unknown", "passage": 1})
        if question.startswith("Where is"):
            found = re.search(r"being built in (\w+)", user)
            return json.dumps({"answer": found.group(1) if found else "unknown", "passage": 1})
        return '{"answer": "unknown", "passage": null}'
    if "You write test questions" in system:  # simple: one right pair and one wrong
        name = re.search(r"Bridge \d+", user)
        assert name is not None
        return json.dumps(
            {
                "pairs": [
                    # Every word of this answer is in the context, which says otherwise.
                    {
                        "question": f"When did work on {name.group(0)} begin?",
                        "answer": "9 June 2023",
                    },
                    {"question": f"Where is {name.group(0)} being built?", "answer": PLACES[0]},
                ]
            }
        )
    raise AssertionError(f"unexpected ask: {system[:60]}")


def _generate(
    options: DocumentOptions, contexts: list[Context]
) -> tuple[list[CandidateRecord], list[Messages]]:
    backend = Scripted(responder=_responder)
    with LLMClient(backend) as llm:
        generator = DocumentGenerator(
            llm, options, contexts, embedder=Embedder(method="words"), styles={}
        )
        records = asyncio.run(generator.generate())
    return records, backend.requests


def test_the_default_mix_is_answerable_questions_only_and_uniform_is_one_option_away() -> None:
    shares = DocumentOptions().shares()
    assert shares == {"fact_single": 0.5, "summary": 0.25, "reasoning": 0.25}
    assert quotas(shares, 20) == {"fact_single": 10, "summary": 5, "reasoning": 5}
    uniform = dict.fromkeys(("fact_single", "summary", "reasoning", "unanswerable"), 0.25)
    # ragaudit.yaml's `mix: uniform`, Project.generate_documents(mix="uniform") and
    # --mix uniform name the same mix.
    assert DocumentOptions.model_validate({"mix": "uniform"}).shares() == uniform
    assert DocumentOptions.model_validate({"mix": parse_mix(" Uniform ")}).shares() == uniform


def test_unanswerable_questions_are_near_misses_of_several_kinds() -> None:
    options = DocumentOptions(
        mix={"unanswerable": 1}, size=12, rounds=2, check_label=False, corpus_check=0
    )
    records, requests = _generate(options, CONTEXTS)
    asks = [r for r in requests if "cannot answer" in r[0]["content"]]
    assert len(asks) == 12  # each context, in each of the two rounds
    # What an ask tells the model to write, its context's theme and statements aside.
    told = [
        "\n".join(
            line
            for m in ask
            for line in m["content"].splitlines()
            if not line.startswith(("Theme:", "Statements:", "> "))
        )
        for ask in asks
    ]
    assert len(set(told)) >= 4  # one template made every question alike
    by_context: dict[str, list[str]] = {}
    for ask, what in zip(asks, told, strict=True):
        theme = ask[-1]["content"].split("Theme: ", 1)[1].splitlines()[0]
        by_context.setdefault(theme, []).append(what)
    assert len(by_context) == len(CONTEXTS)
    for theme, whats in by_context.items():  # a context's second round: another kind
        assert len(whats) == 2 and whats[0] != whats[1], theme
    accepted = [r for r in records if r.accepted]
    assert len(accepted) == 12
    kinds = {str(r.support).rsplit("a near miss: ", 1)[1].rstrip(")") for r in accepted}
    assert kinds <= set(UNANSWERABLE_KINDS) and len(kinds) >= 4


def test_a_simple_reference_that_its_context_contradicts_is_dropped_by_the_reading() -> None:
    context = CONTEXTS[0]
    wrong = "9 June 2023"
    # Looking the answer's words up cannot tell: they are all in the context.
    assert checks.answer_support(context.text, wrong)[0] == "supported"
    options = DocumentOptions(strategy="simple", size=2, per_context=2, rounds=1, check_label=False)
    records, requests = _generate(options, [context])
    by_question = {r.question: r for r in records}
    dropped = by_question["When did work on Bridge 0 begin?"]
    assert not dropped.accepted
    assert dropped.dropped == (
        "reading: the context gives '1 May 2021', the reference says '9 June 2023'"
    )
    kept = by_question["Where is Bridge 0 being built?"]
    assert kept.accepted and "reading: the context gives it ('Norhaven')" in str(kept.support)
    readings = [r for r in requests if "numbered passages" in r[0]["content"]]
    assert len(readings) == 2  # one reading per pair


def _statements_responder(messages: Messages) -> str:
    """A model whose answerable pairs all pass and whose unanswerable questions are all
    answered by their own context: the label that can never fill its quota."""
    system, user = messages[0]["content"], messages[-1]["content"]
    if "You extract facts" in system:
        return _facts(user)
    if "You work with statements" in system:  # summaries and conclusions: two facts joined
        facts = [line[2:].rstrip(".") for line in user.splitlines() if line.startswith("> ")]
        return "\n".join(f"> {facts[i]} and {facts[i + 1].lower()}." for i in range(3))
    if "cannot answer" in system:
        theme = user.split("Theme: ", 1)[1].splitlines()[0]
        return f"How long is {theme}?"
    if "You write one question" in system:  # naming its subject, as the prompt asks
        theme = user.split("Theme: ", 1)[1].splitlines()[0]
        statement = user.split("Statement: ", 1)[1].strip().rstrip(".")
        return f"Is it recorded of {theme} that {statement.lower()}?"
    if "numbered passages" in system:
        question = user.rsplit("Question: ", 1)[1]
        if question.startswith("Is it recorded of "):  # a reference read back, confirmed
            said = question.split(" that ", 1)[1]
            return json.dumps({"answer": f"Yes, {said.rstrip('?')}", "passage": 1})
        # The unanswerable check: the context answers it.
        return '{"answer": "about 300 metres", "passage": 1}'
    if "You review test questions" in system:
        return FIVES
    raise AssertionError(f"unexpected ask: {system[:60]}")


def test_a_label_that_never_passes_takes_its_share_of_the_contexts_not_all_of_them() -> None:
    """With the uniform mix and unanswerable questions that their own context always
    answers, the answerable labels still fill their quotas: the requests follow the mix.
    Asking "the label furthest below its quota" gave the unanswerable label every context
    once the others had one pair each (issue 41: 79 of 83 asks on SQuAD, 3 pairs)."""
    contexts = [
        Context(
            f"Bridge {i}#0",
            f"Bridge {i}",
            f"Bridge {i} is being built in {place}. Work began on {i + 1} May 2021. "
            f"Completion is planned for 9 June 2023. The client is the {place} council.",
        )
        for i, place in enumerate(PLACES * 2)
    ]
    options = DocumentOptions.model_validate(
        {"mix": "uniform", "size": 8, "rounds": 1, "check_label": False, "corpus_check": 0}
    )
    backend = Scripted(responder=_statements_responder, max_concurrency=1)
    with LLMClient(backend) as llm:
        generator = DocumentGenerator(
            llm, options, contexts, embedder=Embedder(method="words"), styles={}
        )
        records = asyncio.run(generator.generate())
    asked = Counter(r.requested_label for r in records)
    accepted = Counter(r.requested_label for r in records if r.accepted)
    assert accepted == {"fact_single": 2, "summary": 2, "reasoning": 2}, (asked, accepted)
    assert all(
        str(r.dropped).startswith("unanswerable check")
        for r in records
        if r.requested_label == "unanswerable"
    )
    # Its share of the asks while the others filled, then the contexts left over.
    assert asked["unanswerable"] <= len(contexts) - 6
