"""A plausible scripted model for the reference-free metrics' prompts: it replies to each
kind of prompt (claims, verification, questions, noncommittal, usefulness, same answer,
an answer drawn again) with what a careful reader would, by word overlap. It is the fake
*around* the scorer: the scorer's parsing, arithmetic, undefined scores and resume are
under test."""

from __future__ import annotations

import json
import re
from typing import Any

_WORD = re.compile(r"[a-z0-9]+")
_STOP = {"the", "a", "an", "is", "of", "in", "was", "it", "to", "and", "by", "its", "on"}


def content_words(text: str) -> set[str]:
    """Lower-case words of ``text`` that carry content."""
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _after(prompt: str, marker: str, until: str | None = None) -> str:
    tail = prompt.split(marker, 1)[1]
    return tail.split(until, 1)[0] if until and until in tail else tail


def free_reply(body: dict[str, Any]) -> str:
    """The reply to one chat request of the reference-free scorer (or of a built-in
    system's answer prompt, drawn again for self-consistency)."""
    instructions = str(body["messages"][0]["content"])
    prompt = str(body["messages"][1]["content"])  # the first ask, also when re-asked
    if instructions.startswith("You split an answer"):
        answer = _after(prompt, "Answer: ").strip()
        if "don't know" in answer.lower():
            return json.dumps({"claims": []})
        claims = [c.strip() + "." for c in answer.rstrip(".").split(". ") if c.strip()]
        return json.dumps({"claims": claims})
    if instructions.startswith("You check claims"):
        passages = content_words(_after(prompt, "Passages:", "Claims:"))
        claims = [
            line.split(". ", 1)[1]
            for line in _after(prompt, "Claims:\n").splitlines()
            if ". " in line
        ]
        verdicts = ["yes" if content_words(c) <= passages else "no" for c in claims]
        return json.dumps({"verdicts": verdicts})
    if instructions.startswith("You are given an answer"):
        answer = _after(prompt, "Answer: ").strip()
        n = int(instructions.split("Write ", 1)[1].split(" ", 1)[0])
        questions = [f"What is {answer.rstrip('.')}?" for _ in range(n)]
        return json.dumps({"questions": questions})
    if instructions.startswith("You read a question and an answer"):
        answer = _after(prompt, "Answer: ").strip()
        return json.dumps({"noncommittal": "don't know" in answer.lower()})
    if instructions.startswith("You judge whether a passage"):
        passage = content_words(_after(prompt, "Passage:", "Question:"))
        answer = content_words(_after(prompt, "Answer: "))
        return json.dumps({"useful": bool(passage & answer)})
    if instructions.startswith("You compare two answers"):
        first = content_words(_after(prompt, "Answer A: ", "\n"))
        second = content_words(_after(prompt, "Answer B: "))
        return json.dumps({"same": bool(first) and first == second})
    # A built-in system's answer prompt, drawn again at temperature 1.0: its passage's
    # first sentence, as the system answered the first time.
    context = _after(prompt, "Context:\n", "\n\nQuestion:") if "Context:" in prompt else ""
    first = context.split("\n", 1)[-1].split(". ")[0].strip()
    return (first + ".") if first else "I don't know."
