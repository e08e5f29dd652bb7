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
* ``nonsense``: generic wordings that ask for nothing in particular;
* ``time-shift``: a wording that asks about another time or another row ("the previous
  start date of", "the project after '[Project.Name]'"), which no plain lookup answers;
* ``condition``: a condition the SQL does not apply ("in 2019", "only if it is still
  active");
* ``extreme``: an extreme or a count the SQL does not compute ("the highest", "how many");
* ``reversed-role``: the value plays the asked role ("Whom does '[Employee.Name]'
  supervise?" for the supervisor of that employee).

Faithful wordings beyond the reference's own (``paraphrase``): natural questions written
for this set, per answer column and generic, in short and long style.

Every kind added for issue 37 comes in two halves written at the same time: ``dev``
(the patterns the word lists of :mod:`ragaudit.generate.text.coverage` were checked
against) and ``held-out`` (never used to change a list); the measurement reports both.
The older kinds are all ``dev``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragaudit.db.placeholders import find_placeholders
from ragaudit.generate.sql.templates import normalize_sql
from ragaudit.generate.text.verbalize import plural, singular, words


@dataclass(frozen=True)
class LabelledWording:
    """One wording of one SQL template, labelled faithful or not."""

    dataset: str  # aurp | spider
    sql: str
    text: str
    faithful: bool
    kind: str  # reference | paraphrase | other-column | wrong-entity | reversed | key | ...
    style: str  # short | long
    split: str = "dev"  # dev | held-out (see the module's docstring)


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


# How a person names what a template asks for, per answer column (lower case).
_ASKED = {
    "startdate": "start date",
    "enddate": "end date",
    "client": "client",
    "projectdirector": "project director",
    "projectmanager": "project manager",
    "location": "location",
    "industry": "industry",
    "jobtitle": "job title",
    "department": "department",
    "supervisorormanager": "supervisor",
    "headquarters": "headquarters",
    "nationality": "nationality",
    "graduation_college": "graduation college",
    "year_working": "years of service",
}

# Faithful questions per answer column, written for this set: (short, long), the first of
# each pair dev, the second held-out. {ph} is the quoted placeholder; {p} and {c} the
# person's and the company's for the two-placeholder employment template.
_PARAPHRASES: dict[str, tuple[list[str], list[str]]] = {
    "startdate": (
        ["When did project {ph} start?", "Kickoff date of {ph}"],
        [
            "I am putting together a timeline for the portfolio review and still need one "
            "date: on which day did the project {ph} get under way, according to our records?",
            "Our finance team wants to know from when the project {ph} has been running; "
            "could you tell me the date on which work on it began?",
        ],
    ),
    "enddate": (
        ["When does {ph} finish?", "Completion date, project {ph}"],
        [
            "I need to plan the handover of our staff, so please tell me the date on which "
            "the project {ph} is due to be finished according to the schedule we hold.",
            "Could you check our files and let me know when work on the project {ph} is "
            "planned to wrap up? I want to block the right week in my calendar.",
        ],
    ),
    "client": (
        ["Who is {ph} built for?", "Which client commissioned {ph}?"],
        [
            "For the invoice I am preparing I need the customer behind the project {ph}: "
            "which client is the work being done for?",
            "Could you tell me which of our clients ordered the project {ph}? I would like "
            "to send them an update on the progress.",
        ],
    ),
    "projectdirector": (
        ["Who directs {ph}?", "Director of project {ph}"],
        [
            "I have a question about the leadership of one engagement: who holds the role "
            "of project director on {ph}, according to our staffing records?",
            "Please tell me the name of the person who serves as the director of the "
            "project {ph}, since I need to ask that person for a signature.",
        ],
    ),
    "projectmanager": (
        ["Who manages project {ph}?", "{ph} project manager?"],
        [
            "I need to talk to whoever is managing the project {ph} day to day, so could "
            "you tell me who its project manager is in our records?",
            "Please find out who runs the project {ph} as its manager, because I want to "
            "invite that person to the review on Friday.",
        ],
    ),
    "location": (
        ["Where is client {ph} based?", "Where is {ph} located?"],
        [
            "Before I book travel for the visit, could you tell me in which city and "
            "country the client {ph} is located according to our records?",
            "I am sorting our accounts by region and I am missing one entry: where is the "
            "client called {ph} based?",
        ],
    ),
    "industry": (
        ["What line of business is {ph} in?", "Sector of {ph}"],
        [
            "I am grouping our accounts by market for a presentation and I need to know "
            "which industry the organisation {ph} works in; could you look it up?",
            "Could you tell me what kind of business {ph} does, that is, the industry it "
            "belongs to, as our records list it?",
        ],
    ),
    "jobtitle": (
        ["What does {ph} do here?", "Position held by {ph}"],
        [
            "I am updating the team page of our intranet and I need the official job "
            "title of our colleague {ph}; could you tell me what it is?",
            "A visitor asked me what role {ph} has in our organisation, and I would like "
            "to answer with the exact title on record, so please find it for me.",
        ],
    ),
    "department": (
        ["Which department does {ph} work in?", "{ph} belongs to which department?"],
        [
            "I need to route a request to the right team: in which department does our "
            "colleague {ph} work, according to our staff records?",
            "Could you check which part of the organisation {ph} belongs to, meaning the "
            "department listed for that person, so I can add them to the right mailing list?",
        ],
    ),
    "supervisorormanager": (
        ["Who supervises {ph}?", "Who does {ph} report to?"],
        [
            "I need to send an approval request on behalf of {ph}, so could you tell me "
            "who that person's supervisor or manager is in our records?",
            "Please find out who {ph} reports to, that is, the manager responsible for "
            "that employee, because I need their sign-off on a form.",
        ],
    ),
    "headquarters": (
        ["Where is {ph} headquartered?", "Head office of {ph}"],
        [
            "I am preparing a visit to one of our partners and need to know the city "
            "where the company {ph} has its headquarters; could you look it up?",
            "Could you tell me where the main office of the firm {ph} is, meaning its "
            "headquarters as our data records it?",
        ],
    ),
    "nationality": (
        ["What nationality is {ph}?", "Which country is {ph} a citizen of?"],
        [
            "For the visa paperwork I am filling in I need the nationality of the person "
            "{ph}; could you tell me what our records say about it?",
            "Could you check which country {ph} is a national of? I have to fill in the "
            "form for the conference before the deadline.",
        ],
    ),
    "graduation_college": (
        ["Which college did {ph} graduate from?", "Alma mater of {ph}"],
        [
            "I am writing a short biography for the annual report and I need to know the "
            "college that {ph} graduated from; could you find it?",
            "Could you tell me where {ph} earned their degree, meaning the college they "
            "graduated from, as listed in our data?",
        ],
    ),
    "year_working": (
        ["How many years has {p} worked at {c}?", "{p} tenure at {c}, in years"],
        [
            "For the long-service awards I need to know how many years {p} has been "
            "working for {c}; could you look that up in our employment data?",
            "Could you tell me how long, in years, {p} has been employed by the company "
            "{c}? I am preparing a speech for the anniversary.",
        ],
    ),
}

# Faithful questions for any one-placeholder template: (short, long), dev then held-out.
_GENERIC = (
    ["What is the {answer} of {ph}?", "Tell me the {answer} of {entity} {ph}"],
    [
        "I am updating a summary for my team and one detail is missing: what is the "
        "{answer} of the {entity} {ph}? Please check our records.",
        "Could you look up the {entity} {ph} for me and tell me its {answer}? I want to "
        "make sure that my notes are correct before I send them on.",
    ],
)

# Corruptions that add what the SQL cannot express: kind -> (short, long), each list dev
# then held-out (two of each).
_ADDED: dict[str, tuple[list[str], list[str]]] = {
    "time-shift": (
        [
            "Previous {answer} of {ph}",
            "{answer} of the {entity} after {ph}",
            "{answer} of {ph} two years ago",
            "{answer} of whichever {entity} came right before {ph}",
        ],
        [
            "For the history section of my report I need to know what the {answer} of the "
            "{entity} {ph} was before the latest update of our records; could you find the "
            "earlier value?",
            "Could you look at the {entity} that comes right after {ph} in our list and "
            "tell me its {answer}? I want to compare the two of them.",
            "A colleague says the {answer} of the {entity} {ph} changed at some point; "
            "please tell me which {answer} it had originally, when it first appeared in "
            "our records.",
            "Please tell me what will be the next {answer} of the {entity} {ph} once the "
            "current arrangement comes to an end.",
        ],
    ),
    "condition": (
        [
            "{answer} of {ph} in 2019",
            "{answer} of {ph}, only if it is still active",
            "{answer} of {ph} for the Berlin office",
            "{answer} of {ph} excluding archived entries",
        ],
        [
            "I need the {answer} of the {entity} {ph}, but only counting records entered "
            "after the merger, so please leave out anything older than that.",
            "For the audit I need the {answer} of the {entity} {ph} provided that it has "
            "been confirmed by the legal team; otherwise tell me there is none.",
            "Please give me the {answer} of the {entity} {ph} as it was recorded on the "
            "first of March, because my audit covers that date and nothing later.",
            "Could you tell me the {answer} of the {entity} {ph}, considering only what "
            "was approved by the board and ignoring any draft entries?",
        ],
    ),
    "extreme": (
        [
            "Highest {answer} among {entities} like {ph}",
            "Number of {entities} sharing the {answer} of {ph}",
            "Most common {answer} for {ph}",
            "Average {answer} of {ph}",
        ],
        [
            "Across everything we hold, which is the most frequent {answer} for {a_entity} "
            "such as {ph}? I am trying to spot the typical case.",
            "Could you compare the {entity} {ph} with the others and tell me how many of "
            "them have the same {answer} as it does?",
            "I would like to know the {answer} that occurs least often among {entities} "
            "similar to {ph}, for a note on unusual cases.",
            "Please look at all the entries for {ph} and tell me the largest {answer} "
            "that appears among them.",
        ],
    ),
}
# Where the value plays the asked role, for templates asking who supervises someone.
_REVERSED_ROLE = {
    "supervisorormanager": (
        ["Whom does {ph} supervise?", "Staff managed by {ph}", "Who reports to {ph}?"],
        [
            "I am mapping our reporting lines and need to know which employees {ph} is "
            "currently supervising; could you list the people under them?",
            "Could you tell me which members of staff have {ph} as their supervisor or "
            "manager? I need to inform the whole team.",
        ],
        # the first short and the first long are dev, the rest held-out
    )
}


def _article(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def _added(sql: str) -> dict[str, str]:
    """The words a pattern of this module is filled with, for ``sql``."""
    phs = find_placeholders(sql)
    column = _ANSWER.search(sql).group(1)  # type: ignore[union-attr]
    answer = _ASKED.get(column.lower(), words(column))
    nouns = [singular(words(p.table).split()[-1]) for p in phs]
    entity = " and ".join(nouns)
    return {
        "answer": answer,
        "entity": entity,
        "entities": " and ".join(plural(n) for n in nouns),
        "a_entity": _article(entity),
        "ph": " and ".join(f"'{p.token}'" for p in phs),
        "p": next((f"'{p.token}'" for p in phs if p.table == "people"), ""),
        "c": next((f"'{p.token}'" for p in phs if p.table == "company"), ""),
        "column": column.lower(),
    }


def _capital(text: str) -> str:
    return text[0].upper() + text[1:] if text[:1].isalpha() else text


def _new_kinds(sql: str) -> list[tuple[str, bool, str, str, str]]:
    """The wordings added for issue 37 for one template: (text, faithful, kind, style,
    split)."""
    values = _added(sql)
    column, two = values["column"], len(find_placeholders(sql)) > 1
    out: list[tuple[str, bool, str, str, str]] = []

    def add(patterns: list[str], faithful: bool, kind: str, style: str, dev: int) -> None:
        for i, pattern in enumerate(patterns):
            split = "dev" if i < dev else "held-out"
            out.append((_capital(pattern.format(**values)), faithful, kind, style, split))

    shorts, longs = _PARAPHRASES.get(column, ([], []))
    add(shorts, True, "paraphrase", "short", 1)
    add(longs, True, "paraphrase", "long", 1)
    if not two:
        add(_GENERIC[0], True, "paraphrase", "short", 1)
        add(_GENERIC[1], True, "paraphrase", "long", 1)
    for kind, (short, long) in _ADDED.items():
        add(short, False, kind, "short", 2)
        add(long, False, kind, "long", 2)
    if column in _REVERSED_ROLE:
        short, long = _REVERSED_ROLE[column]
        add(short, False, "reversed-role", "short", 1)
        add(long, False, "reversed-role", "long", 1)
    return out


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
            for text, faithful, kind, style, split in _new_kinds(sql):
                out.append(LabelledWording(dataset, sql, text, faithful, kind, style, split))
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
    from ragaudit.generate.text.verifier import Verifier
    from ragaudit.judge.matchers import gives_answer

    wordings = build(reference) if wordings is None else wordings
    out: list[Outcome] = []
    for dataset in DATASETS:
        db = Database(f"sqlite:///{database(reference, dataset)}")
        verifier = Verifier(llm, db, introspect(db), reading=gives_answer if reading else None)
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
