"""Project reports: the document corpus of a generated world, with a map of every fact each
report states (the gold ids of the questions about it, and what the factuality test checks).

Each report is a few sentences about one project. Its phrasing is drawn from several
wordings per fact and several date formats, so that no two reports read alike. Some facts
are left out at random (a report may not say when its project ends), and some never
appear in any document at all, so the knowledge base has real gaps:

* a client's location and an employee's department and supervisor are never stated;
* a client's industry is stated in some reports only.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from dataclasses import dataclass

from ragaudit.dates import MONTHS, ordinal
from ragaudit.world.company import Company

NEVER_STATED = {
    "Client": ("Location",),
    "Employee": ("JobTitle", "Department", "Supervisor"),
    "Department": ("Head",),
}


def format_date(iso: str, style: int) -> str:
    """One of four ways to write a date (the matchers and the judge must cope with all)."""
    d = dt.date.fromisoformat(iso)
    month = MONTHS[d.month - 1]
    return (
        f"{month} {d.day}, {d.year}",
        f"{d.day} {month} {d.year}",
        iso,
        f"the {ordinal(d.day)} of {month}, {d.year}",
    )[style % 4]


_LOCATION = (
    "{name} is being built in {value}.",
    "The site of {name} lies in {value}.",
    "Work on {name} takes place in {value}.",
)
_START = (
    "Construction started on {value}.",
    "The project began on {value}.",
    "Work got under way on {value}.",
)
_END = (
    "Completion is planned for {value}.",
    "The works are due to finish on {value}.",
    "Handover is scheduled for {value}.",
)
_CLIENT = (
    "The client is {value}.",
    "It is delivered for {value}.",
    "{value} commissioned the work.",
)
_INDUSTRY = (
    "{client} works in the {value} sector.",
    "The business of {client} is {value}.",
)
_DIRECTOR = (
    "{value} directs the project.",
    "The project director is {value}.",
    "Overall responsibility rests with project director {value}.",
)
_MANAGER = (
    "Day-to-day delivery is led by project manager {value}.",
    "{value} manages the project.",
    "The project manager is {value}.",
)
_FILLER = (
    "The team reports steady progress against the plan.",
    "Community consultation closed with broad support.",
    "Recycled steel makes up a large share of the structure.",
    "A weekly site meeting keeps suppliers and designers aligned.",
    "Energy use on site is tracked against the sustainability targets.",
    "Early surveys found no obstacles to the planned foundations.",
)


@dataclass(frozen=True)
class Report:
    """One generated document and the facts it states, by table, row and column."""

    doc_id: str
    text: str
    facts: list[dict[str, str]]  # {"table", "row_key", "column", "stated"}


def project_reports(company: Company, seed: int = 0) -> Iterator[Report]:
    """One report per project, streamed (a million-row world has 400,000 of them)."""
    rng = random.Random(f"reports:{seed}")
    industry = {name: ind for name, ind, _ in company.client}
    for name, location, start, end, client, director, manager in company.project:
        facts: list[dict[str, str]] = []
        sentences: list[str] = []

        def say(
            templates: tuple[str, ...],
            fact: tuple[str, str, str, str],
            sentences: list[str] = sentences,
            facts: list[dict[str, str]] = facts,
            **words: str,
        ) -> None:
            table, key, column, shown = fact
            sentences.append(rng.choice(templates).format(value=shown, **words))
            facts.append({"table": table, "row_key": key, "column": column, "stated": shown})

        style = rng.randrange(4)
        # Each fact is stated with its own probability; the project's name always is.
        if rng.random() < 0.85:
            say(_LOCATION, ("Project", name, "Location", location), name=name)
        if rng.random() < 0.9:
            say(_START, ("Project", name, "StartDate", format_date(start, style)))
        if end is not None and rng.random() < 0.7:
            say(_END, ("Project", name, "EndDate", format_date(end, style)))
        if rng.random() < 0.9:
            say(_CLIENT, ("Project", name, "Client", client))
            if rng.random() < 0.4:
                say(_INDUSTRY, ("Client", client, "Industry", industry[client]), client=client)
        if rng.random() < 0.85:
            say(_DIRECTOR, ("Project", name, "ProjectDirector", director))
        if rng.random() < 0.85:
            say(_MANAGER, ("Project", name, "ProjectManager", manager))
        sentences.insert(rng.randrange(len(sentences) + 1), rng.choice(_FILLER))
        text = f"{name}: project report\n\n" + " ".join(sentences)
        facts.insert(0, {"table": "Project", "row_key": name, "column": "Name", "stated": name})
        yield Report(doc_id=name, text=text, facts=facts)
