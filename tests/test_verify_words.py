"""Issue 37 items 26 and 27: every word of a wording is accounted for, and a wording reads
as a person's question. A reader that drops words (the scripted server over real HTTP,
answering as a small text-to-SQL model does: it maps the words it knows to columns and
ignores the rest) must not let a qualifier, a reversed relation or another table's name
through; the example database is real."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from ragaudit.config import LLMConfig
from ragaudit.db import Database, introspect
from ragaudit.generate import SqlTemplate
from ragaudit.generate.sql.templates import check_template
from ragaudit.generate.text import coverage
from ragaudit.generate.text.naturalness import naturalness_problem
from ragaudit.generate.text.verifier import Verifier, reason_kind
from ragaudit.llm import make_llm
from tests.support.scripted_llm_server import ScriptedLLMServer

INDUSTRY = SqlTemplate(
    id="industry-by-client-name", sql="SELECT Industry FROM Client WHERE Name = '[Client.Name]'"
)
SUPERVISOR = SqlTemplate(
    id="supervisor-by-employee-name",
    sql="SELECT Supervisor FROM Employee WHERE Name = '[Employee.Name]'",
)
_DB = Database("example")
NAMES = [r[0] for r in _DB.execute("SELECT Name FROM Client UNION SELECT Name FROM Employee").rows]


def word_dropping_reader(body: dict[str, Any]) -> str:
    """Reads the columns it knows and drops every other word: 'industry' is the client's
    industry, 'supervis' the employee's supervisor, whatever else the question says. Told
    that it left a word out, it uses that table: the industry of the project's client."""
    messages = body["messages"]
    question = messages[1]["content"].rsplit("Question: ", 1)[-1].lower()
    name = next((n for n in NAMES if n.lower() in question), "Nobody")
    told = messages[-1]["content"] if len(messages) > 2 else ""
    if "'project'" in told:
        return (
            "SELECT c.Industry FROM Project p JOIN Client c ON p.ClientId = c.ClientId "
            f"WHERE p.Name = '{name}'"
        )
    if "supervis" in question:
        return f"SELECT Supervisor FROM Employee WHERE Name = '{name}'"
    return f"SELECT Industry FROM Client WHERE Name = '{name}'"


@pytest.fixture
def verifier(llm_server: ScriptedLLMServer):  # type: ignore[no-untyped-def]
    llm_server.responder = word_dropping_reader
    config = LLMConfig(model="openai:reader", base_url=llm_server.base_url, api_key="sk-t-0")
    db = Database("example")
    with make_llm(config) as llm:
        yield Verifier(llm, db, introspect(db))
    db.dispose()


def test_a_table_the_reading_drops_rejects_the_wording_without_another_call(
    llm_server: ScriptedLLMServer, verifier: Verifier
) -> None:
    """A reading that gives the template's answers but drops a table the wording names
    rejects the wording at once: asking the reader about the word (``word_asks``) changed
    no verdict of the labelled set and cost 30 calls (issue 40)."""
    faithful = "Industry of client '[Client.Name]'"
    wrong = "Industry of the project '[Client.Name]'"  # a client's name called a project's
    verdicts = verifier.run(verifier.averify(INDUSTRY, [faithful, wrong]))
    assert verdicts[faithful].verified
    rejected = verdicts[wrong]
    assert not rejected.verified
    assert rejected.reason is not None and rejected.reason.startswith("unaccounted: ")
    assert "'project'" in rejected.reason and reason_kind(rejected.reason) == "unaccounted"
    assert llm_server.request_count == 2  # one reading each
    assert not [m for m in llm_server.requests if "'project'" in m["messages"][-1]["content"]]


def test_with_word_asks_the_reader_is_asked_and_its_reading_must_still_agree(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.responder = word_dropping_reader
    config = LLMConfig(model="openai:reader", base_url=llm_server.base_url, api_key="sk-t-0")
    db = Database("example")
    wrong = "Industry of the project '[Client.Name]'"
    with make_llm(config) as llm:
        verifier = Verifier(llm, db, introspect(db), word_asks=1)
        rejected = verifier.run(verifier.averify(INDUSTRY, [wrong]))[wrong]
    db.dispose()
    assert rejected.reason is not None and rejected.reason.startswith("unaccounted: asked about")
    # The reader was asked about the word it dropped (one more call), not only judged.
    asked = [m for m in llm_server.requests if "'project'" in m["messages"][-1]["content"]]
    assert len(asked) == 1


def test_qualifiers_and_reversed_relations_are_rejected_before_any_call(
    llm_server: ScriptedLLMServer, verifier: Verifier
) -> None:
    shifted = {
        "Previous industry of '[Client.Name]'": "'previous' shifts the time",
        "Industry of the client after '[Client.Name]'": "'after' the value",
        "Highest industry among clients like '[Client.Name]'": "'highest'",
        "Number of clients sharing the industry of '[Client.Name]'": "'number of'",
        "Industry of '[Client.Name]' in 2019": "'2019' adds a condition",
        "Industry of '[Client.Name]', only if it is still active": "'only if'",
    }
    verdicts = verifier.run(verifier.averify(INDUSTRY, list(shifted)))
    for text, said in shifted.items():
        reason = verdicts[text].reason or ""
        assert reason.startswith("qualifier: ") and said in reason, (text, reason)
    reversed_ = ["Whom does '[Employee.Name]' supervise?", "Staff supervised by '[Employee.Name]'"]
    verdicts = verifier.run(verifier.averify(SUPERVISOR, reversed_))
    for text in reversed_:
        assert (verdicts[text].reason or "").startswith("reversed relation: "), text
    assert llm_server.request_count == 0


def test_what_the_sql_asks_is_kept_in_any_word_order(verifier: Verifier) -> None:
    faithful = [
        (
            SUPERVISOR,
            [
                "Who supervises '[Employee.Name]'?",
                "Who is '[Employee.Name]' supervised by?",
                "'[Employee.Name]' is supervised by whom?",
            ],
        ),
        (
            INDUSTRY,
            [
                # Context says 'project' and 'next': it asks nothing.
                "I have a project meeting next week. What is the industry of '[Client.Name]'?",
                "Before my call, could you tell me the industry of client '[Client.Name]'?",
            ],
        ),
    ]
    for template, texts in faithful:
        verdicts = verifier.run(verifier.averify(template, texts))
        assert all(verdicts[t].verified for t in texts), verdicts


def test_a_value_looked_up_where_the_database_has_none_is_asked_again(
    llm_server: ScriptedLLMServer, verifier: Verifier
) -> None:
    """A small model took a project's name for a client's by its sound ("Blue Lagoon Luxury
    Resort": WHERE Client = ...). Told that no such value is there, it looks again; a
    reading that finds the value where it is and filters its row away is not asked again
    (that is what the wording said: a condition)."""

    def misplaced(body: dict[str, Any]) -> str:
        messages = body["messages"]
        question = messages[1]["content"].rsplit("Question: ", 1)[-1].lower()
        name = next((n for n in NAMES if n.lower() in question), "Nobody")
        if "nowhere" in question:  # a condition the SQL has no filter for
            return f"SELECT Industry FROM Client WHERE Name = '{name}' AND City = 'Nowhere'"
        if len(messages) == 2:
            return f"SELECT Industry FROM Client WHERE City = '{name}'"
        assert f"no Client.City is '{name}', it is a Client.Name" in messages[-1]["content"]
        return f"SELECT Industry FROM Client WHERE Name = '{name}'"

    llm_server.responder = misplaced
    looked = "Industry of '[Client.Name]'"
    verdicts = verifier.run(verifier.averify(INDUSTRY, [looked], examples=1))
    assert verdicts[looked].verified and verifier.calls == 2
    filtered = "Industry of '[Client.Name]' for its office in Nowhere"
    verdicts = verifier.run(verifier.averify(INDUSTRY, [filtered], examples=1))
    assert not verdicts[filtered].verified and verifier.calls == 3


def test_a_reading_that_computes_what_the_question_does_not_ask_is_asked_again(
    llm_server: ScriptedLLMServer, verifier: Verifier
) -> None:
    """ "The number of years X has worked at Y" asks for a stored number of years; a small
    model reads COUNT(...) into it. The wording has passed the qualifier check (it asks
    for no count, total or extreme), so the reader is told it computed something and
    reads again."""

    def counting(body: dict[str, Any]) -> str:
        messages = body["messages"]
        question = messages[1]["content"].rsplit("Question: ", 1)[-1].lower()
        name = next((n for n in NAMES if n.lower() in question), "Nobody")
        if len(messages) == 2:
            return f"SELECT COUNT(Industry) FROM Client WHERE Name = '{name}'"
        assert "computes COUNT(Industry)" in messages[-1]["content"]
        return f"SELECT Industry FROM Client WHERE Name = '{name}'"

    llm_server.responder = counting
    text = "The industry '[Client.Name]' is in"
    verdicts = verifier.run(verifier.averify(INDUSTRY, [text], examples=1))
    assert verdicts[text].verified and verifier.calls == 2


def test_a_join_that_does_nothing_accounts_for_no_word() -> None:
    schema = introspect(_DB)
    used = coverage.used_names(
        "SELECT c.Industry FROM Client c JOIN Project p ON p.ClientId = c.ClientId "
        "WHERE c.Name = 'X'",
        schema,
        "sqlite",
    )
    assert "project" not in used and {"client", "client.industry"} <= used
    # A foreign key used names the table it references: the project's manager is an
    # employee.
    used = coverage.used_names("SELECT ManagerId FROM Project WHERE Name = 'X'", schema, "sqlite")
    assert "employee" in used
    shape = check_template(INDUSTRY.sql, schema)
    said = coverage.unaccounted(
        "Industry of the project '[Client.Name]'",
        shape,
        schema,
        "SELECT Industry FROM Client WHERE Name = '[Client.Name]'",
        "sqlite",
    )
    assert said == ["project"]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (
            "Industry of '[company.Name]' in billion of dollars. Certainly! Could you please "
            "say more?",
            "assistant chatter",
        ),
        ("Sure, here is the rewritten question: Industry of '[company.Name]'", "chatter"),
        ("Industry of '[company.Name]'? I hope this helps!", "chatter"),
        ("What is [people.Name]' age?", "broken possessive"),
        ("Age of '[people.Name]'s mother", "broken possessive"),
        (
            "I keep records about every people in our organisation: age of '[people.Name]'?",
            "'every people'",
        ),
        ("Find the people whose name is '[people.Name]' and give the age", "'the people whose'"),
        ("Age of people '[people.Name]'", "'people'"),
    ],
)
def test_an_unnatural_wording_says_why(text: str, found: str) -> None:
    reason = naturalness_problem(text, ["people", "company", "employment"])
    assert reason is not None and reason.startswith("unnatural: ") and found in reason, reason


@pytest.mark.parametrize(
    "text",
    [
        "Get the nationality of the person named '[people.Name]'.",
        "From the 'people' data set, I need to know the nationality of the individual whose "
        "name is recorded as '[people.Name]'. Can you retrieve this information?",
        "What is [people.Name]'s age?",
        "Get '[Project.Name]' start date",
        "Could you please tell me the industry of '[company.Name]'?",
        "'[people.Name]' serving years at '[company.Name]'",
    ],
)
def test_a_natural_wording_passes(text: str) -> None:
    assert naturalness_problem(text, ["people", "company", "employment"]) is None


def test_an_unnatural_wording_is_rejected_before_any_call(
    llm_server: ScriptedLLMServer, verifier: Verifier
) -> None:
    chatter = "Industry of '[Client.Name]'. Certainly! Could you please provide more details?"
    verdicts = verifier.run(verifier.averify(INDUSTRY, [chatter]))
    reason = verdicts[chatter].reason or ""
    assert reason.startswith("unnatural: assistant chatter") and reason_kind(reason) == "unnatural"
    assert llm_server.request_count == 0
    assert re.search(r"Certainly", reason)


# What the naturalness check decides on its labelled set (docs/generate.md): per kind and
# half, (wordings, judged natural).
NATURALNESS = {
    ("reference", "dev", True): (160, 160),
    ("paraphrase", "dev", True): (58, 58),
    ("paraphrase", "held-out", True): (58, 58),
    ("verbalizer", "dev", True): (177, 177),
    ("user-words", "fresh", True): (30, 20),
    ("chatter", "dev", False): (30, 0),
    ("chatter", "held-out", False): (30, 0),
    ("chatter", "fresh", False): (30, 9),
    ("possessive", "dev", False): (28, 0),
    ("possessive", "held-out", False): (28, 0),
    ("count-noun", "dev", False): (4, 0),
    ("count-noun", "held-out", False): (4, 0),
}


def test_the_naturalness_check_on_its_labelled_set(grammar_reference: Path) -> None:
    from tests.support.naturalness_set import naturalness_outcomes

    found: dict[tuple[str, str, bool], list[int]] = {}
    for wording, problem in naturalness_outcomes(grammar_reference):
        counts = found.setdefault((wording.kind, wording.split, wording.natural), [0, 0])
        counts[0] += 1
        counts[1] += problem is None
    assert {k: tuple(v) for k, v in found.items()} == NATURALNESS


def test_a_reading_is_read_again_with_another_example_only_where_it_found_no_answer(
    llm_server: ScriptedLLMServer, verifier: Verifier
) -> None:
    """Issue 40: a wording is read with the next example only when its reading ran and
    gave the template's answer for no group (a small model may hang on how one name
    sounds); a reading that stays wrong SQL after its repair is not read again."""
    seen: list[str] = []

    def first_name_misread(body: dict[str, Any]) -> str:
        question = body["messages"][1]["content"].rsplit("Question: ", 1)[-1]
        name = next((n for n in NAMES if n.lower() in question.lower()), "Nobody")
        if "broken" in question:
            return "SELECT Industri FROM Client WHERE Name = 'x'"  # never valid
        if name not in seen:
            seen.append(name)
        if seen.index(name) == 0:  # the first example's name read as a city's
            return f"SELECT City FROM Client WHERE Name = '{name}'"
        return f"SELECT Industry FROM Client WHERE Name = '{name}'"

    llm_server.responder = first_name_misread
    text = "Industry of client '[Client.Name]'"
    verdicts = verifier.run(verifier.averify(INDUSTRY, [text]))
    assert verdicts[text].verified, verdicts[text]
    assert llm_server.request_count == 2  # the first example, then the second

    broken = "Industry of the broken client '[Client.Name]'"
    before = llm_server.request_count
    verdicts = verifier.run(verifier.averify(INDUSTRY, [broken]))
    assert not verdicts[broken].verified
    assert "unknown column" in (verdicts[broken].reason or "")
    assert llm_server.request_count - before == 2  # the reading and its one repair
