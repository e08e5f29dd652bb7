"""The labelled wording set: text templates that ask exactly what their SQL template
answers (the GRAMMAR reference wordings of Aurp and Spider) and systematic corruptions of
them that ask something else, to measure the wording verifier on.

Built at test time from ``../shared/reference/grammar`` (never copied into the project):
the faithful wordings are the reference's own; the corrupted ones are made by the rules
below, in our own words, from the reference templates and the database schemas.

Corruptions, one kind per rule:

* ``other-column``: a faithful wording of another SQL template with the same placeholders
  (it asks for another column of the same row);
* ``wrong-entity``: a faithful wording whose entity word ("project") is replaced by another
  table's ("client"), so the value is said to name something it does not;
* ``reversed``: the placeholder's value is treated as the answer and the key is asked for
  ("Which project has '[Project.Name]' as its start date?");
* ``key``: a question about the key itself ("Which project is called '[Project.Name]'?");
* ``nonsense``: generic wordings that ask for nothing in particular.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragaudit.db.placeholders import find_placeholders
from ragaudit.generate.sql.templates import normalize_sql
from ragaudit.generate.text.verbalize import words


@dataclass(frozen=True)
class LabelledWording:
    """One wording of one SQL template, labelled faithful or not."""

    dataset: str  # aurp | spider
    sql: str
    text: str
    faithful: bool
    kind: str  # reference | other-column | wrong-entity | reversed | key | nonsense
    style: str  # short | long


# (reference folder of the templates, database file) per dataset
DATASETS = {
    "aurp": ("aurp", "aurp/aurp.sqlite"),
    "spider": ("spider_open", "spider_open/company_employee.sqlite"),
}

_ANSWER = re.compile(r"select\s+(?:\w+\.)?(\w+)\s+from", re.IGNORECASE)

_REVERSED_SHORT = "Which {entity} has '{ph}' as its {answer}?"
_REVERSED_LONG = (
    "I only remember that the {answer} on record is '{ph}', and I am trying to work out "
    "which {entity} it belongs to, so could you please look through what we hold and tell "
    "me the name of that {entity}?"
)
_KEY_SHORT = "Which {entity} is called '{ph}'?"
_KEY_LONG = (
    "Somebody mentioned '{ph}' in a meeting this morning and I was not sure what it is, so "
    "could you check our records and confirm for me what the name of this {entity} is and "
    "how it is spelled?"
)
_NONSENSE_SHORT = ["Where does the '{ph}' {entity} meet the criteria?", "Anything on '{ph}'?"]
_NONSENSE_LONG = [
    "I would like to hear more about '{ph}' because it came up in a conversation with a "
    "colleague yesterday, and I want to be sure that I am well prepared before the next "
    "meeting we have together.",
    "Could you please give me a general overview of everything that is relevant about "
    "'{ph}' in our records, since I am new to the team and still trying to understand how "
    "things fit together here?",
]


def _fill(pattern: str, sql: str) -> str:
    """A pattern filled for the template's placeholders (two are joined with 'and')."""
    phs = find_placeholders(sql)
    answer = words(_ANSWER.search(sql).group(1))  # type: ignore[union-attr]
    entity = " and ".join(words(p.table) for p in phs)
    ph = "' and '".join(p.token for p in phs)
    return pattern.format(entity=entity, ph=ph, answer=answer)


# How a table's rows are called in a wording, when it is not the table's own name.
_NOUNS = {"people": ("person", "people"), "company": ("company", "firm")}


def _wrong_entity(text: str, sql: str, tables: list[str]) -> str | None:
    """``text`` with the entity word of its first placeholder (outside the placeholder
    itself) replaced by another table's, or None when the wording has no entity word."""
    entity = words(find_placeholders(sql)[0].table)
    others = [words(t) for t in tables if words(t) != entity]
    nouns = _NOUNS.get(entity, (entity,))
    pattern = re.compile(
        rf"(?<![\[.])\b({'|'.join(map(re.escape, nouns))})\b(?![.\]])", re.IGNORECASE
    )
    if not others or not pattern.search(text):
        return None
    replacement = _NOUNS.get(others[0], (others[0],))[0]
    return pattern.sub(replacement, text, count=1)


def build(reference: Path) -> list[LabelledWording]:
    """Every faithful reference wording of Aurp and Spider, and the corruptions."""
    out: list[LabelledWording] = []
    for dataset, (folder, _db) in DATASETS.items():
        sqls = [
            normalize_sql(s)
            for group in json.loads(
                (reference / folder / "sql_templates.json").read_text()
            ).values()
            for s in group
        ]
        texts: dict[str, dict[str, list[str]]] = {}
        for style in ("short", "long"):
            data = json.loads((reference / folder / f"text_templates_{style}.json").read_text())
            for sql, wordings in data.items():
                texts.setdefault(normalize_sql(sql), {})[style] = [w.strip() for w in wordings]
        tables = sorted({p.table for s in sqls for p in find_placeholders(s)})
        for sql in sqls:
            keys = {p.key for p in find_placeholders(sql)}

            def add(
                text: str, faithful: bool, kind: str, style: str, sql: str = sql, ds: str = dataset
            ) -> None:
                out.append(LabelledWording(ds, sql, text, faithful, kind, style))

            for style in ("short", "long"):
                for text in texts[sql][style]:
                    add(text, True, "reference", style)
            siblings = [
                s for s in sqls if s != sql and {p.key for p in find_placeholders(s)} == keys
            ]
            for other in siblings[:2]:
                for style in ("short", "long"):
                    add(texts[other][style][0], False, "other-column", style)
            for style in ("short", "long"):
                swapped = [
                    w
                    for w in (_wrong_entity(t, sql, tables) for t in texts[sql][style])
                    if w is not None
                ]
                if swapped:
                    add(swapped[0], False, "wrong-entity", style)
            add(_fill(_REVERSED_SHORT, sql), False, "reversed", "short")
            add(_fill(_REVERSED_LONG, sql), False, "reversed", "long")
            add(_fill(_KEY_SHORT, sql), False, "key", "short")
            add(_fill(_KEY_LONG, sql), False, "key", "long")
            for pattern in _NONSENSE_SHORT:
                add(_fill(pattern, sql), False, "nonsense", "short")
            for pattern in _NONSENSE_LONG:
                add(_fill(pattern, sql), False, "nonsense", "long")
    return out


def database(reference: Path, dataset: str) -> Path:
    """The SQLite file a dataset's templates run on."""
    return reference / DATASETS[dataset][1]


@dataclass(frozen=True)
class Outcome:
    """The verifier's verdict on one labelled wording."""

    wording: LabelledWording
    verified: bool | None  # None: no verdict (an LLM call failed)
    reason: str | None


def evaluate(
    reference: Path,
    llm: Any,
    *,
    reading: bool = False,
    wordings: list[LabelledWording] | None = None,
) -> list[Outcome]:
    """Run the wording verifier (with ``llm``) on the labelled set, template by template,
    on each dataset's own SQLite database."""
    from ragaudit.db import Database, introspect
    from ragaudit.generate.sql.templates import SqlTemplate
    from ragaudit.steps.verify import Verifier

    wordings = build(reference) if wordings is None else wordings
    out: list[Outcome] = []
    for dataset in DATASETS:
        db = Database(f"sqlite:///{database(reference, dataset)}")
        verifier = Verifier(llm, db, introspect(db), reading=reading)
        mine = [w for w in wordings if w.dataset == dataset]
        by_sql: dict[str, list[LabelledWording]] = {}
        for w in mine:
            by_sql.setdefault(w.sql, []).append(w)
        for i, (sql, group) in enumerate(by_sql.items()):
            template = SqlTemplate(id=f"{dataset}-{i}", sql=sql)
            texts = list(dict.fromkeys(w.text for w in group))
            verdicts = verifier.run(verifier.averify(template, texts))
            for w in group:
                verdict = verdicts.get(w.text)
                out.append(
                    Outcome(
                        w,
                        None if verdict is None else verdict.verified,
                        None if verdict is None else verdict.reason,
                    )
                )
        db.dispose()
    return out


@dataclass(frozen=True)
class Rates:
    """Faithful wordings accepted and corrupted ones rejected, with their counts."""

    faithful_accepted: int
    faithful: int
    corrupted_rejected: int
    corrupted: int
    undecided: int

    @property
    def acceptance(self) -> float:
        """Share of faithful wordings verified."""
        return self.faithful_accepted / self.faithful

    @property
    def rejection(self) -> float:
        """Share of corrupted wordings rejected."""
        return self.corrupted_rejected / self.corrupted


def rates(outcomes: list[Outcome]) -> Rates:
    """The two rates that matter; a wording without verdict counts against the verifier
    (a faithful one not accepted, a corrupted one not rejected)."""
    faithful = [o for o in outcomes if o.wording.faithful]
    corrupted = [o for o in outcomes if not o.wording.faithful]
    return Rates(
        sum(o.verified is True for o in faithful),
        len(faithful),
        sum(o.verified is False for o in corrupted),
        len(corrupted),
        sum(o.verified is None for o in outcomes),
    )
