"""A labelled set for the naturalness check (issue 37 item 27): wordings a person would
type, and wordings with a model's chatter, a broken possessive or a plural table name used
for one row, to measure :func:`ragaudit.generate.text.naturalness.naturalness_problem` on.

Good: the faithful wordings of the labelled wording set (the GRAMMAR reference's and the
paraphrases written for it) and every wording the built-in verbalizer gives for the
reference's SQL templates. Bad: made by the rules below, in our own words, from the
reference wordings and templates. Each bad kind has a ``dev`` half (the patterns the
check was written against) and a ``held-out`` half. The held-out chatter was seen: the
check caught 10 of its 30 at first, and was then given rules by form (a sentence about
the rewrite, a short exclamation, a hand-over, a remark in parentheses), so a ``fresh``
half was written after that change and measured once, with natural ``user-words`` around
questions ("Quick question: ...", "... Thanks!") that the new rules must let through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ragaudit.db import Database, introspect
from ragaudit.db.placeholders import find_placeholders
from ragaudit.generate.sql.templates import SqlTemplate
from ragaudit.generate.text.naturalness import naturalness_problem
from ragaudit.generate.text.verbalize import article, verbalize, words
from tests.support.wording_set import build, database


@dataclass(frozen=True)
class Labelled:
    """One wording, natural or not, with the tables of its database."""

    text: str
    natural: bool
    kind: str  # reference | paraphrase | verbalizer | user-words | chatter | possessive | ...
    split: str  # dev | held-out | fresh
    tables: tuple[str, ...]


# (prefix, suffix) of a model's chatter around a question: dev first, then held-out.
_CHATTER_DEV = [
    ("Certainly! ", ""),
    ("", " I hope this helps!"),
    ("Sure, here is the rewritten question: ", ""),
    ("", " Let me know if you need anything else."),
    ("", " Certainly! Could you please provide more details?"),
]
_CHATTER_HELD_OUT = [
    ("Absolutely, happy to assist! ", ""),
    ("Great, here you go: ", ""),
    ("", " This version keeps every name exactly as written."),
    ("", " Hope that works for you."),
    ("Of course. ", ""),
    ("", " (Rewritten in the requested style.)"),
]
# Written after the check was changed on seeing the first held-out half's misses, and
# measured once: chatter, and a user's own words around a question (natural).
_CHATTER_FRESH = [
    ("Alright, let me rephrase that for you: ", ""),
    ("", " Feel free to adjust it as needed."),
    ("Here's how a user might ask it: ", ""),
    ("", " Is there anything else you would like me to change?"),
    ("No worries! ", ""),
    ("", " Note that the quoted names were left unchanged."),
]
_USER_FRESH = [
    ("Quick question: ", ""),
    ("", " Thanks!"),
    ("Hi team, ", ""),
    ("", " Thanks in advance."),
    ("Urgent: ", ""),
    ("", " (for the quarterly report)"),
]
_POSSESSIVE_DEV = ["What is {k}' {answer}?", "'{k}'s {answer}"]
_POSSESSIVE_HELD_OUT = ["Tell me {k}' {answer} please", "I need '{k}''s {answer} for my notes"]
_COUNT_DEV = [
    "I am going through the records that we keep about every {table} in our organisation, "
    "and I would like to know the {answer} of the {table} whose name is '{k}'.",
    "{answer} of {table} '{k}'",
]
_COUNT_HELD_OUT = [
    "Could you help me with a question about a single {table}? The {table} with the name "
    "'{k}' has {a_answer} on record.",
    "Tell me the {answer} of one {table}, namely '{k}'.",
]
_ANSWER = re.compile(r"select\s+(?:\w+\.)?(\w+)\s+from", re.IGNORECASE)


def build_naturalness(reference: Path) -> list[Labelled]:
    """The labelled naturalness set of Aurp and Spider."""
    out: list[Labelled] = []
    wordings = build(reference)
    tables_of: dict[str, tuple[str, ...]] = {}
    for dataset in ("aurp", "spider"):
        db = Database(f"sqlite:///{database(reference, dataset)}")
        schema = introspect(db)
        tables = tuple(t.name for t in schema.tables)
        tables_of[dataset] = tables
        sqls = list(dict.fromkeys(w.sql for w in wordings if w.dataset == dataset))
        plural = [t for t in tables if words(t).split()[-1] == "people"]
        for i, sql in enumerate(sqls):
            template = SqlTemplate(id=f"{dataset}-{i}", sql=sql)
            for style in ("short", "long"):
                for text in verbalize(template, schema, style, 10, seed=0):
                    out.append(Labelled(text, True, "verbalizer", "dev", tables))
            phs = find_placeholders(sql)
            answer = words(_ANSWER.search(sql).group(1))  # type: ignore[union-attr]
            values = {
                "k": phs[0].token,
                "answer": answer,
                "a_answer": f"{article(answer)} {answer}",
            }
            if len(phs) == 1:
                for split, patterns in (
                    ("dev", _POSSESSIVE_DEV),
                    ("held-out", _POSSESSIVE_HELD_OUT),
                ):
                    for pattern in patterns:
                        out.append(
                            Labelled(pattern.format(**values), False, "possessive", split, tables)
                        )
                if phs[0].table in plural:
                    values["table"] = phs[0].table
                    for split, patterns in (("dev", _COUNT_DEV), ("held-out", _COUNT_HELD_OUT)):
                        for pattern in patterns:
                            text = pattern.format(**values)
                            out.append(
                                Labelled(
                                    text[0].upper() + text[1:], False, "count-noun", split, tables
                                )
                            )
            firsts = [
                next(
                    w.text
                    for w in wordings
                    if w.sql == sql and w.kind == "reference" and w.style == style
                )
                for style in ("short", "long")
            ]
            for j, base in enumerate(firsts):
                n = 2 * i + j
                for split, variants in (
                    ("dev", _CHATTER_DEV),
                    ("held-out", _CHATTER_HELD_OUT),
                    ("fresh", _CHATTER_FRESH),
                ):
                    prefix, suffix = variants[n % len(variants)]
                    out.append(Labelled(prefix + base + suffix, False, "chatter", split, tables))
                prefix, suffix = _USER_FRESH[n % len(_USER_FRESH)]
                out.append(Labelled(prefix + base + suffix, True, "user-words", "fresh", tables))
        db.dispose()
    for w in wordings:
        if w.faithful:
            out.append(Labelled(w.text, True, w.kind, w.split, tables_of[w.dataset]))
    return out


def naturalness_outcomes(reference: Path) -> list[tuple[Labelled, str | None]]:
    """Each labelled wording with the check's problem (None: natural)."""
    return [(w, naturalness_problem(w.text, w.tables)) for w in build_naturalness(reference)]
