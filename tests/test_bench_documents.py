"""The document-generation benchmark's tally of requests by kind (issue 40): every prompt
the generator and its labeller send is named by what it asks, re-asks included, so the
benchmark shows which call a change saved. No model is loaded."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from benchmarks.bench_documents import kind_of, requests_by_kind

from ragaudit.documents import checks
from ragaudit.documents import generation as gen
from ragaudit.documents.labels import PHRASINGS, label_prompt
from ragaudit.llm.cache import LLMCache
from ragaudit.llm.types import Messages, user

CONTEXT = "Alder Bridge: project report\n\nWork on Alder Bridge began on 3 May 2021."
FACTS = gen.Facts(theme="Alder Bridge", facts=("Work on Alder Bridge began on 3 May 2021.",))
QUESTION = "When did work on Alder Bridge begin?"

PROMPTS: list[tuple[Messages, str]] = [
    (gen.facts_prompt(CONTEXT), "statements"),
    (gen.combined_prompt("summary", FACTS), "combined statements"),
    (gen.question_prompt(FACTS.theme, FACTS.facts[0]), "question"),
    (gen.unanswerable_prompt(FACTS, next(iter(gen.UNANSWERABLE_KINDS))), "unanswerable question"),
    (gen.simple_prompt(CONTEXT, 2), "simple pairs"),
    (checks.reading_prompt([CONTEXT], QUESTION), "reading"),
    (checks.critique_prompt(CONTEXT, QUESTION, "3 May 2021"), "critiques"),
    (gen.wording_prompt(QUESTION, "Make it short."), "wording"),
    *[(label_prompt(CONTEXT, QUESTION, phrasing), "label") for phrasing in PHRASINGS],
]


@pytest.mark.parametrize(("messages", "kind"), PROMPTS)
def test_every_prompt_of_the_generator_is_named_by_what_it_asks(
    messages: Messages, kind: str
) -> None:
    assert kind_of({"messages": messages}) == kind
    re_ask = [*messages, {"role": "assistant", "content": "?"}, user("That reply could not")]
    assert kind_of({"messages": re_ask}) == kind


def test_a_prompt_of_no_known_kind_is_named_by_its_first_words() -> None:
    judge = {"messages": [{"role": "system", "content": "You judge an answer against ..."}]}
    assert kind_of(judge) == "other: You judge an answer"


def test_requests_by_kind_adds_up_a_cache_of_real_rows(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    LLMCache(path).close()  # the cache's own table
    rows = [
        (PROMPTS[0][0], 300, 90),
        (PROMPTS[2][0], 120, 20),
        ([*PROMPTS[0][0][:1], user("Passage:\nanother report")], 200, 60),
    ]
    with sqlite3.connect(path) as conn:
        for i, (messages, prompt, completion) in enumerate(rows):
            conn.execute(
                "INSERT INTO llm_cache (key, backend, model, request, text, prompt_tokens, "
                "completion_tokens) VALUES (?, 'local', 'm', ?, '', ?, ?)",
                (str(i), json.dumps({"messages": messages}), prompt, completion),
            )
    assert requests_by_kind(path) == {
        "statements": {"requests": 2, "prompt_tokens": 500, "completion_tokens": 150},
        "question": {"requests": 1, "prompt_tokens": 120, "completion_tokens": 20},
    }
