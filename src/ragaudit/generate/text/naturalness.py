"""Whether a wording reads as a person's question: checked before it is verified.

A wording can ask exactly what its SQL answers and still be no question a user would
type: a model's chatter left in it ("... in billion of dollars. Certainly! Could you
please ..."), a possessive that fits only names ending in s ("[people.Name]' age"), a
plural table name used as the noun of one row ("every people", "the people whose name
is"). Each is found by its form, with no LLM; the verifier rejects such a wording with the
reason, counted like its other rejections.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ragaudit.generate.text.templates import TOKEN
from ragaudit.generate.text.verbalize import singular, words

# What a chat assistant says around an answer, never what a user asks: an interjection
# opening a sentence, the announcement of a rewrite, offers and apologies, a label.
_ASSISTANT = [
    re.compile(
        r"(?:^|[.?!]\s+)(certainly|sure|of course|absolutely|okay|alright|no problem|"
        r"great question|good question|happy to help|glad to help)\s*[!,.:]",
        re.IGNORECASE,
    ),
    re.compile(
        r"\bhere(?:'s| is| are)\b[^.?!]{0,40}\b(questions?|versions?|rewrites?|rewording|"
        r"rephrasing|requests?|query|queries)\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(rewritten|reworded|rephrased|paraphrased|revised)\s+(question|version|request|query)\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(i hope (?:this|that) helps|hope (?:this|that) helps|let me know if|feel free to|"
        r"as an ai|as a language model|i'm sorry|i am sorry|i apologi[sz]e|i cannot help|"
        r"i can't help|i'd be happy to|i would be happy to|is there anything else)\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(provide|give|share)\s+(?:me\s+|us\s+)?(more|additional|further)\s+"
        r"(details|context|information)\b(?![^.?!]*\[)",
        re.IGNORECASE,
    ),
    re.compile(r"(?:^|\n)\s*(question|answer|rewritten|reworded|output|note)\s*:", re.IGNORECASE),
]

# A sentence without a placeholder is chatter when it speaks of the rewrite itself (a
# question never mentions its own wording), when it is a short exclamation, when it
# hands something over ("here you go"), or when it is a remark in parentheses.
_ABOUT_THE_REWRITE = re.compile(
    r"\b(versions?|rewrite|rewrites|rewritten|rewording|reworded|rephrased?|rephrasing|"
    r"paraphrased?|wording|as written|requested style|this style)\b",
    re.IGNORECASE,
)
_HANDING_OVER = re.compile(
    r"\b(here you go|here it is|there you go|you're welcome|you are welcome|"
    r"hope (?:this|that|it) (?:helps|works)|works for you)\b",
    re.IGNORECASE,
)
_SENTENCES = re.compile(r"[^.?!:]+[.?!:]*")


def _chatter_sentence(text: str) -> str | None:
    """The first sentence (outside any placeholder) that is chatter by its form."""
    for found in _SENTENCES.finditer(text):
        sentence = found.group(0).strip()
        if not sentence or TOKEN.search(sentence):
            continue
        plain = sentence.strip("()").strip()
        if (
            _ABOUT_THE_REWRITE.search(plain)
            or _HANDING_OVER.search(plain)
            or (sentence.endswith("!") and len(plain.split()) <= 4)
            or (sentence.startswith("(") and sentence.rstrip(".").endswith(")"))
        ):
            return sentence
    return None


# A placeholder not opened by a quote and followed by an apostrophe alone ("[X]' age"),
# or one in quotes with a possessive on the closing quote ("'[X]'s age", "'[X]''s age").
_TOKEN = TOKEN.pattern
_POSSESSIVE = [
    re.compile(r"(?<!')" + _TOKEN + r"'(?!s\b)(?=[ \t]*[A-Za-z])"),
    re.compile(r"'" + _TOKEN + r"'{1,2}s\b"),
]

# Determiners of one thing, and the phrases that name one row by its key.
_ONE = r"(?:a|an|one|every|each|single|another|this)"
_NAMING = r"(?:whose|with the|named|called|known|identified|titled|labell?ed)"


def _plural_nouns(tables: Iterable[str]) -> dict[str, str]:
    """Each table name that is a plural noun (its last word), with its singular:
    ``{"people": "person", "employees": "employee"}``."""
    out: dict[str, str] = {}
    for table in tables:
        parts = words(table).split()
        if parts and singular(parts[-1]) != parts[-1]:
            out[parts[-1]] = singular(parts[-1])
    return out


def naturalness_problem(text: str, tables: Iterable[str] = ()) -> str | None:
    """Why the wording is not a natural question, or None: assistant chatter, a broken
    possessive, or a plural table name (of ``tables``) used as the noun of one row.

    >>> naturalness_problem("Industry of '[company.Name]'. Certainly! Could you please say?")
    "unnatural: assistant chatter ('Certainly!')"
    >>> naturalness_problem("Every people named '[people.Name]'", ["people"])
    "unnatural: 'Every people' uses the table name as the noun of one row (write 'person')"
    >>> naturalness_problem("Nationality of '[people.Name]'", ["people"]) is None
    True
    """
    for pattern in _ASSISTANT:
        found = pattern.search(text)
        if found:
            said = found.group(0).strip(" .?\n")
            return f"unnatural: assistant chatter ({said!r})"
    sentence = _chatter_sentence(text)
    if sentence:
        return f"unnatural: assistant chatter ({sentence!r})"
    for pattern in _POSSESSIVE:
        found = pattern.search(text)
        if found:
            return (
                f"unnatural: broken possessive ({found.group(0)!r}; write "
                f"[{found.group(1)}.{found.group(2)}]'s, or 'of')"
            )
    for plural, one in _plural_nouns(tables).items():
        noun = re.escape(plural)
        for form in (
            rf"\b{_ONE}\s+(?:'{noun}'|{noun})\b",
            rf"\bthe\s+{noun}\s+{_NAMING}\b",
            rf"\b{noun}\s+'?\[",
        ):
            found = re.search(form, text, re.IGNORECASE)
            if found:
                said = found.group(0).rstrip(" ['")
                return (
                    f"unnatural: {said!r} uses the table name as the "
                    f"noun of one row (write {one!r})"
                )
    return None
