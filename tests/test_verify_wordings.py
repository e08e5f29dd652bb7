"""Wording verification: a wording is kept only when the LLM's reading of it, executed on
the database, gives the SQL template's answers. The LLM is played by the scripted server
over real HTTP (a model that reads a question as SQL); the checks, the database and the
files are real."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragaudit.config import LLMConfig
from ragaudit.db import Database, introspect
from ragaudit.generate import SqlTemplate
from ragaudit.generate.sql.instantiate import Group
from ragaudit.generate.text import verify as checks
from ragaudit.generate.text.templates import load_text_templates
from ragaudit.generate.text.verifier import Verifier
from ragaudit.llm import make_llm
from tests.support.cli import ragaudit
from tests.support.scripted_llm_server import Reply, ScriptedLLMServer

INDUSTRY = SqlTemplate(
    id="industry-by-client-name", sql="SELECT Industry FROM Client WHERE Name = '[Client.Name]'"
)
CITY = SqlTemplate(
    id="city-by-client-name", sql="SELECT City FROM Client WHERE Name = '[Client.Name]'"
)
CLIENTS = tuple(r[0] for r in Database("example").execute("SELECT Name FROM Client").rows)


def reader(body: dict[str, Any]) -> str | Reply:
    """A text-to-SQL model: 'industry'/'sector' -> Industry, 'city'/'where' -> City, 'name'
    -> the key itself; a question about something else gets SQL over a column that does
    not exist; 'boom' makes the server fail."""
    question = body["messages"][1]["content"].rsplit("Question: ", 1)[-1].lower()
    if "boom" in question:
        return Reply(status=400)  # a failed call (not a wrong key, which stops the step)
    name = next((n for n in CLIENTS if n.lower() in question), "Nobody")
    if "industry" in question or "sector" in question:
        column = "Industry"
    elif "city" in question or "where" in question:
        column = "City"
    elif "called" in question:
        column = "Name"
    else:
        column = "Mood"
    return f"```sql\nSELECT {column} FROM Client WHERE Name = '{name}';\n```"


@pytest.fixture
def verifier(llm_server: ScriptedLLMServer):  # type: ignore[no-untyped-def]
    llm_server.responder = reader
    config = LLMConfig(model="openai:reader", base_url=llm_server.base_url, api_key="sk-t-0")
    db = Database("example")
    with make_llm(config) as llm:
        yield Verifier(llm, db, introspect(db))
    db.dispose()


def test_a_wording_read_as_its_own_column_is_verified(verifier: Verifier) -> None:
    verdicts = verifier.run(
        verifier.averify(
            INDUSTRY,
            [
                "Industry of '[Client.Name]'",
                "Which sector is '[Client.Name]' in?",
                "Where is '[Client.Name]'?",  # read as the city: another column
                "Which client is called '[Client.Name]'?",  # the key itself
                "Mood of '[Client.Name]'",  # SQL over a column that does not exist
            ],
        )
    )
    assert verdicts["Industry of '[Client.Name]'"].verified
    assert verdicts["Which sector is '[Client.Name]' in?"].verified
    city = verdicts["Where is '[Client.Name]'?"]
    assert not city.verified
    groups = verifier.sample(INDUSTRY).answers
    assert city.reason == (
        "back-mapping: the question reads as SELECT City FROM Client WHERE Name = "
        f"'[Client.Name]', which gives the template's answer for 0 of {len(groups)} groups"
    )
    key = verdicts["Which client is called '[Client.Name]'?"]
    assert not key.verified and "give the answer away" in (key.reason or "")
    mood = verdicts["Mood of '[Client.Name]'"]
    assert not mood.verified and "unknown column 'mood'" in (mood.reason or "")
    # The verdict is tied to the SQL and the text it judged.
    assert verdicts["Industry of '[Client.Name]'"].holds(
        INDUSTRY.sql, "Industry of '[Client.Name]'"
    )
    assert not verdicts["Industry of '[Client.Name]'"].holds(
        CITY.sql, "Industry of '[Client.Name]'"
    )


def test_a_reading_that_is_not_valid_sql_is_asked_again_with_the_error(
    llm_server: ScriptedLLMServer, verifier: Verifier
) -> None:
    def first_wrong(body: dict[str, Any]) -> str | Reply:
        if len(body["messages"]) == 2:  # a typo in the column, as small models make
            return str(reader(body)).replace("Industry", "Industri")
        assert "unknown column 'industri'" in body["messages"][-1]["content"]
        return reader(body)

    llm_server.responder = first_wrong
    verdicts = verifier.run(verifier.averify(INDUSTRY, ["Industry of '[Client.Name]'"]))
    assert verdicts["Industry of '[Client.Name]'"].verified
    assert verifier.calls == 2


def test_the_cheap_checks_come_first_and_cost_no_call(
    llm_server: ScriptedLLMServer, verifier: Verifier
) -> None:
    verdicts = verifier.run(
        verifier.averify(
            INDUSTRY,
            [
                "Is '[Client.Name]' in Transport?",  # an answer value: a yes/no question
                "Industry of '[Client.City]'",  # another placeholder
                # asks the reader for a reason: a reader still maps it to the industry
                "I need the industry of '[Client.Name]' for my report. Why do you need it?",
            ],
        )
    )
    why = verdicts["I need the industry of '[Client.Name]' for my report. Why do you need it?"]
    assert why.reason == "asks why: a reason is not a value any SQL returns"
    leak = verdicts["Is '[Client.Name]' in Transport?"]
    assert leak.reason == (
        "answer in the wording: it names 'Transport', a value of the answer column"
    )
    assert verdicts["Industry of '[Client.City]'"].reason == (
        "placeholders: missing Client.Name; unknown Client.City"
    )
    assert llm_server.request_count == 0


def test_a_failed_call_leaves_that_wording_unverified_and_the_others_judged(
    verifier: Verifier,
) -> None:
    verdicts = verifier.run(
        verifier.averify(
            INDUSTRY, ["Industry of '[Client.Name]' boom", "Industry of '[Client.Name]'"]
        )
    )
    assert set(verdicts) == {"Industry of '[Client.Name]'"}
    assert [(tid, text) for tid, text, _ in verifier.failures] == [
        (INDUSTRY.id, "Industry of '[Client.Name]' boom")
    ]


def test_wordings_of_two_templates_that_read_the_same_conflict() -> None:
    found = checks.conflicts(
        [
            ("location", "Location of '[Project.Name]'"),
            ("client-location", "location of [Client.Name]?"),
            ("client-location", "Client location of '[Client.Name]'"),
        ]
    )
    assert found == {
        ("location", "Location of '[Project.Name]'"): "client-location",
        ("client-location", "location of [Client.Name]?"): "location",
    }


def test_a_value_searched_with_like_counts_as_named() -> None:
    db = Database("example")
    schema = introspect(db)
    group = Group(bindings={"Client.Name": "Quillfeather Rail"}, answers=["Transport"])
    placeholders = tuple(INDUSTRY.placeholder_list)
    restored = checks.parametrize(
        "SELECT Industry FROM Client WHERE Name LIKE '%Quillfeather Rail%'",
        group,
        placeholders,
        "sqlite",
    )
    assert restored == "SELECT Industry FROM Client WHERE Name = '[Client.Name]'"
    with pytest.raises(checks.ReadingError, match="does not look up 'Quillfeather Rail'"):
        checks.parametrize("SELECT Industry FROM Client", group, placeholders, "sqlite")
    # A value copied from the schema's examples instead of the question's stands for the
    # placeholder when it is the one string compared with the placeholder's column ...
    copied = checks.parametrize(
        "SELECT Industry FROM Client WHERE Name = 'Zeller Mining'", group, placeholders, "sqlite"
    )
    assert copied == "SELECT Industry FROM Client WHERE Name = '[Client.Name]'"
    # ... and not when it is compared with another column.
    with pytest.raises(checks.ReadingError, match="does not look up"):
        checks.parametrize(
            "SELECT Industry FROM Client WHERE City = 'Zeller Mining'",
            group,
            placeholders,
            "sqlite",
        )
    # A name quoted unescaped by the reader is a reading that is not SQL, with its reason.
    with pytest.raises(checks.ReadingError, match="not valid SQL"):
        checks.parametrize(
            "SELECT Industry FROM Client WHERE Name = 'O'Brien'", group, placeholders, "sqlite"
        )
    # A column put on the wrong alias by a small model is moved to the table that has it.
    repaired = checks.repair_aliases(
        "SELECT T2.Industry FROM Client AS T1 JOIN Project AS T2 ON T1.ClientId = T2.ClientId",
        schema,
        "sqlite",
    )
    assert repaired.startswith("SELECT T1.Industry FROM Client AS T1")


def test_a_verdict_of_older_checks_is_judged_again_and_one_by_hand_stays() -> None:
    from ragaudit.generate.sql.templates import normalize_sql
    from ragaudit.generate.text.templates import CHECKS_VERSION, Verdict, fingerprint
    from ragaudit.records.models import stable_id

    text = "Industry of '[Client.Name]'"
    older = stable_id(normalize_sql(INDUSTRY.sql), text, str(CHECKS_VERSION - 1), length=10)
    assert not Verdict(True, None, older).holds(INDUSTRY.sql, text)
    assert Verdict(True, None, fingerprint(INDUSTRY.sql, text)).holds(INDUSTRY.sql, text)
    assert Verdict(True).holds(INDUSTRY.sql, text)  # written by hand: the user's word


def test_a_question_is_asking_why_only_when_its_question_does() -> None:
    assert checks.asks_why("For a report. Why do you need the city of '[Client.Name]'?")
    assert checks.asks_why("How come '[Client.Name]' is in that city")
    assert checks.asks_why("For the report, why is '[Client.Name]' in that city?")
    assert checks.asks_why("Could you tell me why '[Client.Name]' moved?")
    assert checks.asks_why("Please tell me why it matters and the city of '[Client.Name]'.")
    # A sentence that is not the question may say why.
    assert not checks.asks_why("Which city is '[Client.Name]' in? I wonder why I forgot.")
    assert not checks.asks_why("I need it for a report on why we moved. Which city is X in?")


def test_a_join_nothing_uses_is_dropped_and_every_other_kept() -> None:
    schema = introspect(Database("example"))

    def drop(sql: str) -> str:
        return checks.drop_unused_joins(sql, schema, "sqlite")

    # Joined along the foreign key and used nowhere else: it only filters rows.
    assert (
        drop(
            "SELECT T1.Industry FROM Client AS T1 JOIN Project AS T2 ON T1.ClientId = T2.ClientId "
            "WHERE T1.Name = 'X'"
        )
        == "SELECT T1.Industry FROM Client AS T1 WHERE T1.Name = 'X'"
    )
    # The FROM table can be the unused one: the table joined to it takes its place.
    assert (
        drop(
            "SELECT T2.Industry FROM Project AS T1 JOIN Client AS T2 ON T1.ClientId = T2.ClientId "
            "WHERE T2.Name = 'X'"
        )
        == "SELECT T2.Industry FROM Client AS T2 WHERE T2.Name = 'X'"
    )
    # A chain of unused tables goes table by table.
    assert (
        drop(
            "SELECT T1.Industry FROM Client AS T1 JOIN Project AS T2 ON T1.ClientId = T2.ClientId "
            "JOIN Employee AS T3 ON T2.ManagerId = T3.EmployeeId WHERE T1.Name = 'X'"
        )
        == "SELECT T1.Industry FROM Client AS T1 WHERE T1.Name = 'X'"
    )
    kept = [
        # the joined table is compared: the question is about a project
        "SELECT T1.Industry FROM Client AS T1 JOIN Project AS T2 ON T1.ClientId = T2.ClientId "
        "WHERE T2.Name = 'X'",
        # the joined table is selected
        "SELECT T2.City FROM Client AS T1 JOIN Project AS T2 ON T1.ClientId = T2.ClientId "
        "WHERE T1.Name = 'X'",
        # not the schema's link: names compared is an attempt at saying something
        "SELECT T1.Industry FROM Client AS T1 JOIN Project AS T2 ON T1.Name = T2.Name "
        "WHERE T1.Name = 'X'",
        # a column no table has
        "SELECT T1.Industry FROM Client AS T1 JOIN Project AS T2 ON T1.ClientId = T2.Nothing "
        "WHERE T1.Name = 'X'",
        # the answer counts rows: the join is what is counted
        "SELECT COUNT(*) FROM Client AS T1 JOIN Project AS T2 ON T1.ClientId = T2.ClientId "
        "WHERE T1.Name = 'X'",
        "SELECT T1.Industry FROM Client AS T1 JOIN Project AS T2 ON T1.ClientId = T2.ClientId "
        "WHERE T1.City = 'X' GROUP BY T1.Industry HAVING COUNT(*) > 1",
        "SELECT T1.Industry FROM Client AS T1 JOIN Project AS T2 ON T1.ClientId = T2.ClientId "
        "WHERE T1.Name = 'X' LIMIT 1",
        # an outer join, and a table joined to itself
        "SELECT T2.Industry FROM Project AS T1 LEFT JOIN Client AS T2 ON T1.ClientId = "
        "T2.ClientId WHERE T2.Name = 'X'",
        "SELECT T1.Name FROM Employee AS T1 JOIN Employee AS T2 ON T1.Supervisor = T2.Name "
        "WHERE T1.Name = 'X'",
    ]
    for sql in kept:
        assert drop(sql) == sql


def test_a_filter_copied_from_the_schemas_examples_is_dropped() -> None:
    db = Database("example")
    schema = introspect(db)
    shown = checks.column_examples(db, [t for t in schema.tables if t.name == "Client"])
    city = shown["Client.City"][0]
    placeholders = tuple(INDUSTRY.placeholder_list)

    def drop(sql: str, question: str) -> str:
        values = [v for vs in shown.values() for v in vs]
        return checks.drop_copied_examples(sql, question, values, placeholders, "sqlite")

    copied = f"SELECT Industry FROM Client WHERE Name = 'X' AND City = '{city}'"
    assert drop(copied, "Which industry is X in?") == (
        "SELECT Industry FROM Client WHERE Name = 'X'"
    )
    # Asked for in the question, it is what the question says: kept.
    assert drop(copied, f"Which industry is X, of {city}, in?") == copied
    # A value the schema does not show is the model's own reading: kept.
    other = "SELECT Industry FROM Client WHERE Name = 'X' AND City = 'Atlantis'"
    assert drop(other, "Which industry is X in?") == other
    # Several copied filters go together, whatever their order.
    both = (
        f"SELECT Industry FROM Client WHERE City = '{city}' AND Name = 'X' AND Industry = 'Water'"
    )
    assert drop(both, "Which industry is X in?") == "SELECT Industry FROM Client WHERE Name = 'X'"
    # A word of the question that shares a stem with the value: it may be what it says.
    water = "SELECT Industry FROM Client WHERE Name = 'X' AND Industry = 'Water'"
    assert drop(water, "Which industry is X, our waterworks client, in?") == water
    # Only the terms of an AND chain under WHERE: under OR or NOT, a filter is part of
    # what the query asks.
    either = f"SELECT Industry FROM Client WHERE Name = 'X' OR (City = '{city}' AND Name = 'Y')"
    assert drop(either, "Which industry is X in?") == either
    # A value compared with the placeholder's column stands for the question's value
    # (parametrize decides): kept here.
    name = shown["Client.Name"][0]
    stand_in = f"SELECT Industry FROM Client WHERE Name = '{name}' AND Industry <> ''"
    assert drop(stand_in, "Which industry is X in?") == stand_in


def test_the_models_slips_do_not_reject_a_faithful_wording(
    llm_server: ScriptedLLMServer, verifier: Verifier
) -> None:
    """A reading that joins a table it never uses (which drops every employee who manages
    no project) and filters on a value copied from the schema's comments still asks the
    template's question."""
    title = SqlTemplate(
        id="title-by-employee-name",
        sql="SELECT JobTitle FROM Employee WHERE Name = '[Employee.Name]'",
    )
    employee = [t for t in verifier.schema.tables if t.name == "Employee"]
    department = checks.column_examples(verifier.db, employee)["Employee.Department"][0]
    names = [r[0] for r in verifier.db.execute("SELECT Name FROM Employee").rows]

    def sloppy(body: dict[str, Any]) -> str | Reply:
        question = body["messages"][1]["content"].rsplit("Question: ", 1)[-1]
        name = next(n for n in names if n in question)
        return (
            "SELECT T1.JobTitle FROM Employee AS T1 JOIN Project AS T2 ON T1.EmployeeId = "
            f"T2.ManagerId WHERE T1.Name = '{name}' AND T1.Department = '{department}'"
        )

    llm_server.responder = sloppy
    text = "Job title of '[Employee.Name]'"
    verdict = verifier.run(verifier.averify(title, [text]))[text]
    assert verdict.verified, verdict.reason


def test_a_join_that_changes_a_count_is_not_undone(
    llm_server: ScriptedLLMServer, verifier: Verifier
) -> None:
    """Counting projects managed in a department is not counting its employees: the join
    the reading makes is what it counts, so it stays and the wording is rejected."""
    count = SqlTemplate(
        id="count-by-department",
        sql="SELECT COUNT(*) FROM Employee WHERE Department = '[Employee.Department]'",
    )
    departments = [r[0] for r in verifier.db.execute("SELECT Name FROM Department").rows]

    def projects(body: dict[str, Any]) -> str | Reply:
        question = body["messages"][-1]["content"].rsplit("Question: ", 1)[-1]
        name = next(d for d in departments if d in question)
        return (
            "SELECT COUNT(*) FROM Employee AS e JOIN Project AS p ON p.ManagerId = "
            f"e.EmployeeId WHERE e.Department = '{name}'"
        )

    llm_server.responder = projects
    text = "How many projects are managed by people in '[Employee.Department]'?"
    verdict = verifier.run(verifier.averify(count, [text]))[text]
    assert not verdict.verified and "back-mapping" in (verdict.reason or "")


# -- the files: verdicts next to the wordings, kept while they hold ---------------------


def _env(server: ScriptedLLMServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-t-0000000000"}


def _write_sql(tmp_path: Path, *templates: SqlTemplate) -> None:
    folder = tmp_path / "runs/default/templates"
    folder.mkdir(parents=True, exist_ok=True)
    body = {"schema_version": 1, "templates": [{"id": t.id, "sql": t.sql} for t in templates]}
    (folder / "sql.yaml").write_text(yaml.safe_dump(body, sort_keys=False))


def _items(tmp_path: Path) -> dict[str, Any]:
    data = yaml.safe_load((tmp_path / "runs/default/templates/text.yaml").read_text())
    return data["templates"]


def test_verdicts_live_next_to_the_wordings_and_hold_until_an_edit(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    llm_server.responder = reader
    _write_sql(tmp_path, INDUSTRY)
    path = tmp_path / "runs/default/templates/text.yaml"
    path.write_text(
        "templates:\n  industry-by-client-name:\n    short:\n"
        "    - Industry of '[Client.Name]'\n    - Where is '[Client.Name]'?\n"
    )
    args = ["--example", "--llm", "openai:reader"]
    first = ragaudit("templates", "verify", *args, cwd=tmp_path, env=_env(llm_server))
    assert first.returncode == 0, first.stderr
    short = _items(tmp_path)["industry-by-client-name"]["short"]
    assert short[0]["verified"] is True and short[0]["checked"]
    assert short[1]["rejected"].startswith("back-mapping: the question reads as SELECT City")
    assert re.search(r"short\s+│?\s*2\s+│?\s*1\s+│?\s*1", first.stdout), first.stdout
    asked = llm_server.request_count
    # Nothing changed: nothing is asked again.
    assert (
        ragaudit("templates", "verify", *args, cwd=tmp_path, env=_env(llm_server)).returncode == 0
    )
    assert llm_server.request_count == asked
    # The user overrules the rejection and edits the first wording: only the edit is judged.
    text = path.read_text()
    text = text.replace("Industry of '[Client.Name]'", "Sector of '[Client.Name]'")
    text = re.sub(r"rejected: .*", "verified: true", text)
    path.write_text(text)
    again = ragaudit("templates", "verify", *args, cwd=tmp_path, env=_env(llm_server))
    assert again.returncode == 0, again.stderr
    assert llm_server.request_count == asked + 1
    loaded = load_text_templates(path)
    assert all(v.verified for v in loaded.verdicts.values())
    # --recheck judges them all again, the overruled one included.
    ragaudit("templates", "verify", *args, "--recheck", cwd=tmp_path, env=_env(llm_server))
    assert (
        not load_text_templates(path)
        .verdicts[("industry-by-client-name", "short", "Where is '[Client.Name]'?")]
        .verified
    )


def test_text_words_only_what_is_missing_and_keeps_edits(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    llm_server.responder = reader
    _write_sql(tmp_path, INDUSTRY)
    args = ["--example", "--llm", "openai:reader"]
    made = ragaudit("templates", "text", *args, cwd=tmp_path, env=_env(llm_server))
    assert made.returncode == 0, made.stderr
    path = tmp_path / "runs/default/templates/text.yaml"
    data = yaml.safe_load(path.read_text())
    data["templates"]["industry-by-client-name"]["short"][0] = "My own: industry of '[Client.Name]'"
    path.write_text(yaml.safe_dump(data))
    # A SQL template added by hand after templates text ran.
    _write_sql(tmp_path, INDUSTRY, CITY)
    again = ragaudit("templates", "text", *args, cwd=tmp_path, env=_env(llm_server))
    assert again.returncode == 0, again.stderr
    items = _items(tmp_path)
    assert set(items) == {"industry-by-client-name", "city-by-client-name"}
    kept = [
        i["text"] if isinstance(i, dict) else i for i in items["industry-by-client-name"]["short"]
    ]
    assert kept[0] == "My own: industry of '[Client.Name]'"  # the edit survived, verified
    assert all(
        isinstance(i, dict) and "verified" in i
        for styles in items.values()
        for wordings in styles.values()
        for i in wordings
    )
    assert "2 (template, style) pairs worded now" in again.stdout


def test_generate_asks_only_verified_wordings_and_says_what_it_left_out(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    llm_server.responder = reader
    _write_sql(tmp_path, INDUSTRY)
    path = tmp_path / "runs/default/templates/text.yaml"
    path.write_text(
        "templates:\n  industry-by-client-name:\n    short:\n"
        "    - Industry of '[Client.Name]'\n    - Where is '[Client.Name]'?\n"
        "    long:\n    - Could you tell me which industry '[Client.Name]' works in?\n"
    )
    args = ["--example", "--llm", "openai:reader"]
    assert (
        ragaudit("templates", "verify", *args, cwd=tmp_path, env=_env(llm_server)).returncode == 0
    )
    # A wording added by hand afterwards is not verified yet.
    text = path.read_text() + "    - Industry, '[Client.Name]'\n"
    path.write_text(text)
    generated = ragaudit("generate", "--example", cwd=tmp_path)
    assert generated.returncode == 0, generated.stderr
    queries = [
        json.loads(x) for x in (tmp_path / "runs/default/dataset.jsonl").read_text().splitlines()
    ]
    assert {q["variant"] for q in queries} == {"short", "long"}
    assert not any("Where is" in q["query"] or "Industry, " in q["query"] for q in queries)
    assert "wordings left out (short): 1 rejected (back-mapping)" in generated.stderr
    assert "wordings left out (long): 1 not verified" in generated.stderr
    everything = ragaudit("generate", "--example", "--unverified", cwd=tmp_path)
    assert everything.returncode == 0
    queries = [
        json.loads(x) for x in (tmp_path / "runs/default/dataset.jsonl").read_text().splitlines()
    ]
    assert any("Industry, " in q["query"] for q in queries)  # never verified: now asked
    assert not any("Where is" in q["query"] for q in queries)  # rejected: never


def test_one_text_never_has_two_references(make_db, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # A project and a client share a name; both templates are worded alike, on purpose.
    url = make_db(
        [
            "CREATE TABLE client (name TEXT, city TEXT)",
            "CREATE TABLE project (name TEXT, city TEXT)",
        ],
        {
            "client": [("Orrin Works", "Eastmere"), ("Tally Co", "Norbury")],
            "project": [("Orrin Works", "Kellingford"), ("Weir Rebuild", "Eastmere")],
        },
    )
    (tmp_path / "ragaudit.yaml").write_text(f"database:\n  url: {url}\n")
    _write_sql(
        tmp_path,
        SqlTemplate(id="client-city", sql="SELECT city FROM client WHERE name = '[client.name]'"),
        SqlTemplate(
            id="project-city", sql="SELECT city FROM project WHERE name = '[project.name]'"
        ),
    )
    (tmp_path / "runs/default/templates/text.yaml").write_text(
        "templates:\n"
        "  client-city:\n    short: [\"City of '[client.name]'\"]\n"
        '  project-city:\n    short: ["city of [project.name]"]\n'
    )
    result = ragaudit("generate", "--unverified", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    queries = [
        json.loads(x) for x in (tmp_path / "runs/default/dataset.jsonl").read_text().splitlines()
    ]
    seen: dict[str, list] = {}
    for q in queries:
        key = " ".join(re.sub(r"[^\w]+", " ", q["query"].lower()).split())
        assert seen.setdefault(key, q["reference"]["values"]) == q["reference"]["values"]
    assert sorted(q["bindings"].popitem()[1] for q in queries) == ["Tally Co", "Weir Rebuild"]
    stats = json.loads((tmp_path / "runs/default/dataset.stats.json").read_text())
    assert stats["overview"]["conflicting_groups"] == 2
    assert "groups dropped: a question reads as another's" in result.stdout
    # The dropped groups leave every count of groups, the gold ids' among them.
    groups = {q["group_id"] for q in queries}
    assert stats["overview"]["semantic_groups"] == len(groups) == 2
    assert sum(stats["overview"]["gold_groups"].values()) == len(groups)


def test_the_example_asked_about_avoids_names_with_a_quote(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "people.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE Person (Name TEXT, City TEXT)")
        rows = [("Conall O'Brien", "Cork"), ("Aoife D'Arcy", "Galway"), ("Mary Byrne", "Sligo")]
        con.executemany("INSERT INTO Person VALUES (?, ?)", rows)
    db = Database(f"sqlite:///{path}")
    template = SqlTemplate(
        id="city-by-person-name", sql="SELECT City FROM Person WHERE Name = '[Person.Name]'"
    )
    sample = checks.sample_template(db, introspect(db), template)
    # A small model writes 'Conall O'Brien' unescaped in its SQL: such a name is asked
    # about only after the others.
    assert sample.example.bindings == {"Person.Name": "Mary Byrne"}
    assert len(sample.groups) == 3
