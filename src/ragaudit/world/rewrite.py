"""Free-prose rewriting of a world's project reports, and the reading-comprehension check
that the rewrite kept every fact (the paper's appendix G: a generated document, given as
the only context, must still answer the questions that encode the facts it was made from).

Pure: prompts, questions and answer parsing. Calling the LLM, judging the answers and
writing files happen in ``ragaudit.steps.world``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragaudit.llm.types import Messages, system, user
from ragaudit.world.profiles import words

# Facts the reading-comprehension check asks about: (table, column) -> question. The name
# of the project is the report's title, kept verbatim, so it is not asked.
QUESTIONS = {
    ("Project", "Location"): "Where is the project {key} located?",
    ("Project", "StartDate"): "On what date did the project {key} start?",
    ("Project", "EndDate"): "On what date is the project {key} due to end?",
    ("Project", "Client"): "Who is the client of the project {key}?",
    ("Project", "ProjectDirector"): "Who is the project director of {key}?",
    ("Project", "ProjectManager"): "Who is the project manager of {key}?",
    ("Client", "Industry"): "In which industry or sector does {key} work?",
}

_TITLE = re.compile(r"\A(?P<title>[^\n]+)\n\n(?P<body>.*)\Z", re.DOTALL)
_PREAMBLE = re.compile(
    r"\A\s*(?:sure[,!.]?\s*)?(?:here(?: is|'s) (?:the |a |my )?(?:rewritten|revised)[^:\n]*:)\s*",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Fact:
    """One fact a report states: the row it comes from, and how the report words it."""

    table: str
    row_key: str
    column: str
    stated: str
    asks: str | None = None  # the question, where the fact says it (a world from a database)

    @property
    def question(self) -> str | None:
        """The question that asks for this fact, or None when it is not checked."""
        if self.asks:
            return self.asks
        template = QUESTIONS.get((self.table, self.column))
        return template.format(key=self.row_key) if template else None

    def record(self) -> dict[str, str]:
        """The fact as document_facts.jsonl holds it."""
        out = {"table": self.table, "row_key": self.row_key, "column": self.column}
        out["stated"] = self.stated
        if self.asks:
            out["asks"] = self.asks
        return out

    @property
    def label(self) -> str:
        """``Project.StartDate of Valdoro``: what a failure report names."""
        return f"{self.table}.{self.column} of {self.row_key}"


def split_report(text: str) -> tuple[str, str]:
    """A report's title line and its body (the body alone is rewritten)."""
    found = _TITLE.match(text)
    return (found["title"], found["body"]) if found else ("", text)


def rewrite_prompt(
    body: str,
    lost: list[Fact] | None = None,
    problems: list[str] | None = None,
    kind: str = "project report",
) -> Messages:
    """Ask for ``body`` in free prose with every fact kept; ``lost`` names the facts an
    earlier rewrite dropped or changed, and ``problems`` what else was wrong with it, so
    the repair avoids both. ``kind``: what the document is ("profile" for a world from a
    database)."""
    ask = (
        f"Rewrite this {kind} as one paragraph of natural prose, in your own words "
        "and sentence order. Keep every fact: every name, place and date exactly as "
        "written. Add no other names, places, dates or numbers. Reply with the paragraph "
        f"only.\n\n{kind.split()[-1].capitalize()}: {body}"
    )
    if lost:
        missing = "; ".join(f"{words(f.column) if f.asks else f.column} {f.stated}" for f in lost)
        ask += (
            f"\n\nAn earlier rewrite lost or changed these facts: {missing}. "
            "State each of them exactly."
        )
    if problems:
        ask += f"\n\nAn earlier rewrite was rejected: {'; '.join(problems)}."
    return [system("You are a careful technical writer. You never invent facts."), user(ask)]


def clean_rewrite(reply: str) -> str:
    """The paragraph from a reply: no "Here is the rewritten report:" preamble, no quotes,
    one line."""
    text = _PREAMBLE.sub("", reply.strip())
    text = " ".join(text.split())
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


def comprehension_prompt(body: str, questions: list[str]) -> Messages:
    """Ask every question about ``body`` at once, to be answered from the text alone."""
    numbered = "\n".join(f"{i}. {q}" for i, q in enumerate(questions, start=1))
    return [
        system("You answer questions from a document only. You are brief."),
        user(
            f"Document: {body}\n\nAnswer each question from the document alone, with the "
            "words of the document; write unknown when the document does not say.\n"
            f"{numbered}\n\nReply with JSON only: "
            '{"answers": ["<answer to 1>", "<answer to 2>", ...]}'
        ),
    ]
