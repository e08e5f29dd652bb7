"""Question-answer pairs written from a context: the prompts and the readers of their
replies (pure; :mod:`ragaudit.documents.generator` calls the LLM and applies the checks).

Two strategies:

* ``simple``: one ask per context for N factoid question-answer pairs (the single-prompt
  recipe of LlamaIndex and the Hugging Face cookbook; "Know Your RAG" found 95% of what it
  writes to be ``fact_single``).
* ``statements``: "Know Your RAG"'s inverted pipeline. The context's theme and its factual
  statements come first; summary statements (merged facts) and conclusions (what follows
  from the facts without being said) are asked for only when a requested label needs them;
  then one question is written that a chosen statement answers, so the answer is the
  statement, taken from the context, and not something the model made up afterwards. A
  requested ``unanswerable`` question is on the context's theme but not answered by it.

Every reply is read strictly: what cannot be read raises ``ValueError`` with a message the
client sends back when it re-asks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from ragaudit.documents.checks import content_words
from ragaudit.llm.parsing import extract_json, parse_lines
from ragaudit.llm.types import Messages, assistant, system, user
from ragaudit.records.models import QuestionLabel

Strategy = Literal["simple", "statements"]
STRATEGIES: tuple[Strategy, ...] = ("simple", "statements")

# Which statements a requested label's question is written from.
StatementKind = Literal["fact", "summary", "conclusion"]
STATEMENT_KIND: dict[QuestionLabel, StatementKind | None] = {
    "fact_single": "fact",
    "summary": "summary",
    "reasoning": "conclusion",
    "unanswerable": None,
}

# Words that give a question away as written from a text it cannot stand without.
_CONTEXT_WORDS = re.compile(
    r"\b(?:(?:the|this|that|given|above|following|provided)\s+"
    r"(?:passage|context|text|paragraph|document|statement|excerpt|article)s?|"
    r"according to (?:the|this)\b)",
    re.IGNORECASE,
)
_THEME = re.compile(r"^\s*(?:[*#>\-]\s*)*\**theme\**\s*[:\-]\s*(.+)$", re.IGNORECASE)
_QUOTES = "\"'`“”‘’«»"
_MAX_STATEMENT_WORDS = 80

# What a re-ask tells the model to reply with, beside each prompt: the same instruction as
# the prompt's, in other words (tests/test_prompts_read_back.py feeds a reply that follows
# each to its reader).
SIMPLE_REPLY = '{"pairs": [{"question": "...", "answer": "..."}]}'
FACTS_REPLY = "a first line 'Theme: <theme>', then one statement per line starting with '> '"
STATEMENTS_REPLY = "three statements, one per line, each starting with '> '"
QUESTION_REPLY = "one question ending with '?'"
WORDING_REPLY = "the reworded question only"


# -- the simple strategy -------------------------------------------------------------------


def simple_prompt(context: str, n: int) -> Messages:
    """Ask for ``n`` factoid question-answer pairs on ``context``, as JSON. The fixed
    instructions come first and the context last, so a local model's prompt cache reads
    the instructions once."""
    many = "one question" if n == 1 else f"{n} different questions"
    shape = '{"pairs": [{"question": "...", "answer": "..."}]}'
    return [
        system(
            "You write test questions for a search engine. Each question asks for one "
            "specific, concise fact that the given context states, in the words a user would "
            "type into a search box; it must make sense without the context, so it never "
            'says "the passage", "the context" or "the text". Each answer is that fact, as '
            f"the context states it. Reply with JSON only: {shape}"
        ),
        user(f"Write {many} with their answers.\n\nContext:\n{context.strip()}"),
    ]


class QAPair(BaseModel):
    """A question and its answer, as a model wrote them."""

    question: str = Field(min_length=1)
    answer: str = Field(min_length=1)

    @field_validator("question", "answer", mode="before")
    @classmethod
    def _text(cls, value: object) -> object:
        # A number as the answer is an answer; strip what a model wraps text in.
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        return " ".join(value.split()).strip(_QUOTES) if isinstance(value, str) else value


def parse_simple_reply(reply: str, n: int) -> list[QAPair]:
    """The pairs of a ``simple`` reply: ``{"pairs": [...]}``, a bare list of pairs, or one
    pair. Raises ``ValueError`` when there is none, so it is re-asked; pairs past ``n``
    are dropped."""
    value = extract_json(reply)
    if isinstance(value, dict) and "pairs" in value:
        value = value["pairs"]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list) or not value:
        raise ValueError('expected {"pairs": [{"question": ..., "answer": ...}]}')
    pairs = []
    for i, item in enumerate(value, start=1):
        try:
            pairs.append(QAPair.model_validate(item))
        except ValidationError:
            raise ValueError(f"pair {i} needs a question and an answer, both text") from None
    return pairs[:n]


# -- the statements strategy ---------------------------------------------------------------


@dataclass(frozen=True)
class Facts:
    """A context's theme and its factual statements."""

    theme: str
    facts: tuple[str, ...]


def facts_prompt(context: str) -> Messages:
    """Ask for the context's theme and its factual statements, one per line: a list is
    what a small model writes most reliably, and the theme line comes first."""
    return [
        system(
            "You extract facts from a passage. First write one line 'Theme: ' followed by "
            "the passage's main theme in a few words. Then list the factual statements the "
            "passage makes, one per line, each starting with '> '. Each statement is one "
            "complete sentence that makes sense on its own (name the subject, never 'it' or "
            "'the passage'), holds only what the passage says, and does not repeat another."
        ),
        user(f"Passage:\n{context.strip()}"),
    ]


def _statement(line: str) -> str:
    text = line.lstrip("> ").strip().strip(_QUOTES).strip()
    return " ".join(text.split())


# A line that begins as code does ("return f(x)", "def main():", "$ pip install", ">>> x").
_CODE_START = re.compile(
    r"(?:return|def|class|import|from|raise|assert|yield|lambda)\s|@\w|\$\s|>>>|#!"
)
# A word of prose: letters, perhaps hyphenated or with an apostrophe, perhaps followed by
# punctuation; "update_wrapper(new_func," and "x=1" are not.
_PROSE_WORD = re.compile(r"[(\"'`]?[A-Za-z]+(?:[-'][A-Za-z]+)*[)\"'`]?[.,;:!?]?")


def looks_like_code(text: str) -> bool:
    """Whether a statement is a line of code rather than a sentence: it begins as code
    does, or fewer than half its tokens are words of prose. A documentation page's facts
    list can copy a line of its example ("return update_wrapper(new_func, f)"); a question
    written from it asks what the line does, and the line does not say."""
    tokens = text.split()
    if not tokens or _CODE_START.match(text):
        return True
    prose = sum(1 for t in tokens if _PROSE_WORD.fullmatch(t))
    return prose * 2 < len(tokens)


def parse_facts_reply(reply: str) -> Facts:
    """The theme and statements of a :func:`facts_prompt` reply. Raises ``ValueError``
    when the theme line or every statement is missing, so it is re-asked."""
    theme = ""
    facts: list[str] = []
    for line in parse_lines(reply):
        found = _THEME.match(line)
        if found and not theme:
            theme = found.group(1).strip().strip(_QUOTES).strip()
            continue
        text = _statement(line)
        words = len(text.split())
        fits = 3 <= words <= _MAX_STATEMENT_WORDS and not text.endswith(":")
        if fits and not looks_like_code(text):  # a copied line of code is no fact
            facts.append(text)
    if not theme:
        raise ValueError("the first line must be 'Theme: <the main theme>'")
    if not facts:
        raise ValueError("no factual statement: list them one per line, each starting with '> '")
    return Facts(theme, tuple(dict.fromkeys(facts)))


def _facts_block(facts: Facts) -> str:
    return "\n".join(f"> {f}" for f in facts.facts)


def combined_prompt(kind: Literal["summary", "conclusion"], facts: Facts) -> Messages:
    """Ask for three summary statements (each merging several facts) or three conclusions
    (each following from the facts without being one of them), one per line."""
    if kind == "summary":
        task = (
            "Merge the statements below into three summary statements. Each summary "
            "statement combines the information of two or more statements into one complete "
            "sentence, does not overlap the other summaries, and makes sense on its own."
        )
    else:
        task = (
            "Draw three conclusions from the statements below. A conclusion is something "
            "that follows from two or more of the statements taken together but that none of "
            "them says. Each is one complete sentence, different from the others, and makes "
            "sense on its own."
        )
    return [
        system(
            "You work with statements taken from a passage. Write each result on its own "
            "line, starting with '> ', and nothing else."
        ),
        user(f"{task}\n\nTheme: {facts.theme}\nStatements:\n{_facts_block(facts)}"),
    ]


def parse_statements(reply: str) -> list[str]:
    """The statements of a :func:`combined_prompt` reply (complete sentences of 4 to 80
    words). Raises ``ValueError`` when there is none."""
    out = []
    for line in parse_lines(reply):
        text = _statement(line)
        fits = 4 <= len(text.split()) <= _MAX_STATEMENT_WORDS and not text.endswith((":", "?"))
        if fits and not looks_like_code(text):
            out.append(text)
    if not out:
        raise ValueError("no statement: write each as a complete sentence on its own line")
    return list(dict.fromkeys(out))


def question_prompt(theme: str, statement: str) -> Messages:
    """Ask for one question that ``statement`` answers, using the theme so that the
    question names its subject rather than being generic."""
    return [
        system(
            "You write one question for a search engine. The question must be answered "
            "completely by the given statement and by nothing less. Name the subject with "
            "the words of the theme and the statement so the question makes sense on its "
            "own; never mention a passage, context, text or statement. Do not put the answer "
            "in the question. Reply with the question only."
        ),
        user(f"Theme: {theme}\nStatement: {statement}"),
    ]


# The kinds of near miss an unanswerable question is written as, each the instruction the
# model is given: what a user of the corpus might plausibly ask about a subject it covers
# and not find. One template made every such question alike ("What is the cost of ...?",
# twice from one document, issue 41); each candidate draws a kind its context has not had.
UNANSWERABLE_KINDS: dict[str, str] = {
    "amount": "asks how many or how much of something about the subject (a count, an "
    "amount, a size or a duration) that no statement gives",
    "time": "asks when something about the subject happened, began or will happen, where "
    "no statement gives that date or time",
    "person": "asks who made, led, owns or decided something about the subject, where no "
    "statement names that person or group",
    "cause": "asks why something the statements mention happened or is so, where no "
    "statement gives the reason",
    "neighbour": "asks for the kind of detail one statement gives, but about another, "
    "related subject that the statements do not cover (another member of the same group, "
    "place or period)",
    "outcome": "asks what followed from, or became of, something the statements mention, "
    "where no statement says",
}


def unanswerable_prompt(facts: Facts, kind: str) -> Messages:
    """Ask for a question on the context's theme that none of its statements answers, as
    a near miss of ``kind`` (a key of :data:`UNANSWERABLE_KINDS`): what a user of this
    corpus might plausibly ask and not find."""
    return [
        system(
            "You write one question for a search engine that the given statements cannot "
            "answer. It is a near miss: it names the same subject as the theme, so that "
            "someone would expect these statements to answer it, but it asks for a detail "
            "that none of them gives, as the task says. Never mention a passage, context or "
            "statement. Reply with the question only."
        ),
        user(
            f"Task: write a question that {UNANSWERABLE_KINDS[kind]}.\n\n"
            f"Theme: {facts.theme}\nStatements:\n{_facts_block(facts)}"
        ),
    ]


def _clean(line: str, prefix: str) -> str:
    """A line of a reply without its '> ' marker, a ``prefix:`` label and quotes."""
    line = re.sub(rf"^(?:{prefix})\s*[:.\-]\s*", "", line.lstrip("> ").strip(), flags=re.I)
    return line.strip().strip(_QUOTES).strip()


def parse_question(reply: str) -> str:
    """The question of a reply: its one line that ends with '?' (bullets, quotes and a
    "Question:" prefix removed). Raises ``ValueError`` when there is no such line, or
    several."""
    lines = [_clean(line, r"question|q") for line in parse_lines(reply)]
    asked = [line for line in lines if line.endswith("?")]
    if not asked:
        raise ValueError("no question: reply with one question ending with '?'")
    if len(set(asked)) > 1:
        raise ValueError("several questions: reply with exactly one")
    return " ".join(asked[0].split())


def question_problem(question: str) -> str | None:
    """Why a generated question cannot be used whatever its context, or None: it leans on
    the text it was written from ("according to the passage"), or is too short or too long
    to be a search query."""
    found = _CONTEXT_WORDS.search(question)
    if found:
        return f"it needs its context to be understood ({found.group(0)!r})"
    words = len(question.split())
    if words < 3:
        return f"{words} words: too short to ask anything specific"
    if words > 60:
        return f"{words} words: longer than a search query"
    return None


def wording_prompt(question: str, instruction: str) -> Messages:
    """Ask for ``question`` reworded in a style (its ``instruction``), asking for exactly
    the same thing. The style comes first, so the questions of one style share a cached
    prefix."""
    return [
        system(
            "You reword questions. The reworded question must ask for exactly the same "
            "information as the original, keep every name, number and date exactly as "
            "written, and never answer it. Reply with the reworded question only."
        ),
        user(f"Style: {instruction}\n\nQuestion: {question}"),
    ]


def wording_again(question: str, instruction: str, wording: str, problem: str) -> Messages:
    """Ask once more for a wording that did not fit its style's length (``problem``:
    "14 words; the short style allows at most 12"), in the same conversation: a small
    model asked for a short question often writes 13 or 14 words, and says it in 12 when
    told so."""
    return [
        *wording_prompt(question, instruction),
        assistant(wording),
        user(
            f"That wording has {problem}. Write it again within that length, asking for "
            "exactly the same information. Reply with the reworded question only."
        ),
    ]


def parse_wording(reply: str) -> str:
    """The reworded question of a :func:`wording_prompt` reply: the whole reply on one
    line, unless the model wrapped it ("Here is the question:"), then its longest line.
    Raises ``ValueError`` when the reply is empty."""
    lines = [_clean(line, r"reworded question|question") for line in parse_lines(reply)]
    lines = [line for line in lines if line and not line.endswith(":")]
    if not lines:
        raise ValueError("no question: reply with the reworded question only")
    asked = [line for line in lines if line.endswith("?")]
    return " ".join(max(asked or lines, key=len).split())


def answer_leak(question: str, wording: str, answer: str | None) -> str | None:
    """Why ``wording`` gives away the answer that ``question`` asks for, or None: it holds a
    number or a name (a capitalized word) of the answer that the question does not. A
    rewording that knows the answer tends to say it."""
    if not answer:
        return None
    names = {w.casefold() for w in re.findall(r"(?<!^)(?<![.!?]\s)\b[A-Z][\w'-]+", answer)}
    telling = {w for w in content_words(answer) if w[0].isdigit() or w in names}
    given = (telling & set(content_words(wording))) - set(content_words(question))
    if given:
        return f"it gives away the answer ({sorted(given)[0]!r})"
    return None


__all__ = [
    "FACTS_REPLY",
    "QUESTION_REPLY",
    "SIMPLE_REPLY",
    "STATEMENTS_REPLY",
    "STATEMENT_KIND",
    "STRATEGIES",
    "UNANSWERABLE_KINDS",
    "WORDING_REPLY",
    "Facts",
    "QAPair",
    "StatementKind",
    "Strategy",
    "answer_leak",
    "combined_prompt",
    "facts_prompt",
    "parse_facts_reply",
    "parse_question",
    "parse_simple_reply",
    "parse_statements",
    "parse_wording",
    "question_problem",
    "question_prompt",
    "simple_prompt",
    "unanswerable_prompt",
    "wording_prompt",
]
