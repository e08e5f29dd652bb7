"""Templates written by an LLM: the replies come from a scripted OpenAI-compatible server
over real HTTP (never a mock of the generator), and every reply is checked."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragaudit.config import LLMConfig
from ragaudit.db import Database, introspect
from ragaudit.generate import SqlTemplate
from ragaudit.generate.sql.llm import llm_sql_templates, recover_sql
from ragaudit.generate.text.llm import STYLE_INSTRUCTIONS, llm_text_templates
from ragaudit.llm import make_llm
from tests.support.cli import ragaudit
from tests.support.scripted_llm_server import Reply, ScriptedLLMServer

CLIENT_REPLY = """Here are some templates for the Client table:

```sql
SELECT Industry FROM Client WHERE Name = '[Client.Name]';
SELECT City
FROM Client
WHERE Name = '[Client.Name]';
DELETE FROM Client WHERE Name = '[Client.Name]';
SELECT Industry FROM Client WHERE Name = '[Client.Name]'; DROP TABLE Client;
SELECT Colour FROM Client WHERE Name = '[Client.Name]';
SELECT * FROM Client WHERE Name = '[Client.Name]';
SELECT ClientId FROM Client WHERE Name = '[Client.Nickname]';
SELECT Name FROM Client WHERE Name = '[Client.Name]';
SELECT c.Industry FROM Client AS c WHERE c.Name = '[Client.Name]';
```
These should cover the main attributes."""


def _client_responder(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    if "Table Client" in prompt and "Table Project" not in prompt:
        return CLIENT_REPLY
    return "NONE"  # nothing acceptable for the other targets, as the prompt asks


def _llm(server: ScriptedLLMServer, tmp_path: Path | None = None):  # type: ignore[no-untyped-def]
    config = LLMConfig(model="openai:scripted", base_url=server.base_url, api_key="sk-t-0000000000")
    return make_llm(config, cache_path=tmp_path / "llm.sqlite" if tmp_path else None)


def test_sql_from_the_llm_is_validated_and_rejects_are_explained(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.responder = _client_responder
    db = Database("example")
    schema = introspect(db)
    with _llm(llm_server) as llm:
        result = llm.run(llm_sql_templates(llm, db, schema, ["tables", "foreign_keys"]))
    kept = {t.sql for t in result.templates}
    assert kept == {
        "SELECT Industry FROM Client WHERE Name = '[Client.Name]'",
        "SELECT City FROM Client WHERE Name = '[Client.Name]'",
    }
    assert {t.origin for t in result.templates} == {"llm"}
    reasons = {sql: why for sql, why in result.rejected}
    assert "not DELETE" in reasons["DELETE FROM Client WHERE Name = '[Client.Name]'"]
    assert "exactly one statement" in next(w for s, w in reasons.items() if "DROP" in s)
    assert (
        "unknown column 'colour'"
        in reasons["SELECT Colour FROM Client WHERE Name = '[Client.Name]'"]
    )
    assert "SELECT * is not allowed" in reasons["SELECT * FROM Client WHERE Name = '[Client.Name]'"]
    assert (
        "unknown column" in reasons["SELECT ClientId FROM Client WHERE Name = '[Client.Nickname]'"]
    )
    assert "give the answer away" in reasons["SELECT Name FROM Client WHERE Name = '[Client.Name]'"]
    assert (
        "asks the same as"
        in reasons["SELECT c.Industry FROM Client AS c WHERE c.Name = '[Client.Name]'"]
    )
    # Every target was asked: 4 tables and 3 foreign keys of the example database
    # (Employee->Department, Project->Client, Project->Employee).
    prompts = [r["messages"][-1]["content"] for r in llm_server.requests]
    assert len(prompts) == 4 + 3
    assert sum("Join condition: Project.ClientId = Client.ClientId" in p for p in prompts) == 1
    assert all("'[Table.Column]'" in p and "never use '*'" in p for p in prompts)


def test_prose_around_sql_is_recovered() -> None:
    assert recover_sql(
        "Sure!\n1. SELECT a FROM t WHERE b = '[t.b]'\n2) select c\n"
        "   from t where b = '[t.b]'\nThat is all."
    ) == ["SELECT a FROM t WHERE b = '[t.b]'", "select c from t where b = '[t.b]'"]


TEMPLATE = SqlTemplate(
    id="industry-by-client-name", sql="SELECT Industry FROM Client WHERE Name = '[Client.Name]'"
)
NAME = "Brackenwater Utilities"
SUFFIXES = (" today", " at present", "")
LONG_LINE = (
    "Could you tell me, since I am preparing a detailed overview of all of our clients and "
    "their markets for the board, which industry the client named '{}' works in{}?"
)


def _text_responder() -> Callable[[dict[str, Any]], str]:
    """A model that rewords the example: first badly, then well once told what was wrong.
    Its long requests differ from one ask to the next (the first one is far too short)."""
    long_asks = itertools.count()

    def reply(body: dict[str, Any]) -> str:
        messages = body["messages"]
        first_ask = len(messages) == 2
        content = messages[1]["content"]
        name = content.split("Question: ", 1)[1].split("'")[1] if "'" in content else NAME
        if "at least 30 words" in content:  # the long style: one per ask
            k = next(long_asks)
            if k == 0:
                return f"Which industry is {name} in?"  # far too short for long
            return f"Sure! Here it is:\n{LONG_LINE.format(name, SUFFIXES[k % 3])}"
        if first_ask:
            return (
                f"1. Industry of {name}\n2. Industry of Acme Corp\n"
                f"3. Sector of '{name}'\n4. industry of {name.lower()}"
            )
        return f"- '{name}' industry\n- Line of business of {name}\n- Industry of {name}!"

    return reply


async def _reject_sector(template: SqlTemplate, _style: str, texts: list[str]) -> dict:
    """A verifier that rejects the wordings about a 'sector' (as if read as another column)."""
    from ragaudit.generate.text.templates import Verdict

    return {
        t: Verdict(False, "back-mapping: reads as another column")
        if "Sector" in t
        else Verdict(True)
        for t in texts
    }


def _word(server: ScriptedLLMServer, styles: dict[str, Any], n: int, **options: Any) -> Any:
    """``n`` wordings per style of TEMPLATE (the industry of a client) from the scripted
    model behind ``server``; ``options`` go to llm_text_templates as they are."""
    options.setdefault("meaning", "the industry of the client whose name is '[Client.Name]'")
    with _llm(server) as llm:
        return llm.run(
            llm_text_templates(llm, TEMPLATE, styles, n, bindings={"Client.Name": NAME}, **options)
        )


def test_rewordings_become_templates_and_every_rejection_is_told(
    llm_server: ScriptedLLMServer,
) -> None:
    from ragaudit.generate.text.llm import StyleRequest

    llm_server.responder = _text_responder()
    styles = {
        "short": StyleRequest("few words", f"Industry of '{NAME}'"),
        "long": StyleRequest("at least 30 words", f"What is the industry of '{NAME}'?"),
    }
    result = _word(llm_server, styles, 3, verify=_reject_sector)
    assert result.texts["short"] == [
        "Industry of [Client.Name]",
        "'[Client.Name]' industry",
        "Line of business of [Client.Name]",
    ]
    assert len(result.texts["long"]) == 3
    assert all("[Client.Name]" in t and len(t.split()) >= 30 for t in result.texts["long"])
    reasons = {(style, text): why for style, text, why in result.rejected}
    assert reasons[("short", "Industry of Acme Corp")] == f"'{NAME}' is missing"
    assert reasons[("short", "industry of [Client.Name]")] == "near-duplicate"
    assert reasons[("long", "Which industry is [Client.Name] in?")] == (
        "length: 5 words; the long style needs at least 30"
    )
    sector = result.verdicts[("short", "Sector of '[Client.Name]'")]
    assert not sector.verified and "another column" in (sector.reason or "")
    # The re-asks carried every kind of rejection back, in words the model can act on.
    reasks = [r["messages"][-1]["content"] for r in llm_server.requests if len(r["messages"]) == 4]
    assert any(f"'{NAME}' is missing" in text for text in reasks)
    assert any("reads as another column" in text for text in reasks)
    assert any("too short by 25 words" in text for text in reasks)
    # The model was given the example with real values, never placeholder tokens.
    firsts = [r["messages"][1]["content"] for r in llm_server.requests if len(r["messages"]) == 2]
    assert all(NAME in text and "[Client.Name]" not in text for text in firsts)


def _word_long_by_copying(server: ScriptedLLMServer, sources: list[str], verify: Any = None) -> Any:
    """Two long wordings of TEMPLATE from ``sources`` (the verbalizer's sentences), by a
    model that rewrites by copying the question it is given."""
    from ragaudit.generate.text.llm import StyleRequest

    server.responder = lambda body: (
        body["messages"][1]["content"].split("Question: ", 1)[1].split("\n")[0]
    )
    return _word(
        server,
        {"long": StyleRequest(STYLE_INSTRUCTIONS["long"], "(unused)", sources)},
        2,
        verify=verify,
    )


def test_each_long_wording_starts_afresh_from_another_sentence(
    llm_server: ScriptedLLMServer,
) -> None:
    """Asked for "another version" of one sentence, a small model repeats itself; each long
    wording is asked in a conversation of its own, from the next verbalizer sentence."""

    sources = [
        "For the board I need the industry of the client '[Client.Name]'; which one is it, "
        "as our records have it, please, for my overview of every market that we serve today?",
        "A colleague asked me which industry the client '[Client.Name]' is in, and I could "
        "not remember it, so please look it up in our records and tell me what it is.",
    ]

    result = _word_long_by_copying(llm_server, sources)
    assert result.texts["long"] == sources
    assert result.calls == 2 and not result.fallbacks
    # Two conversations of one ask each, the second from the second sentence.
    assert [len(r["messages"]) for r in llm_server.requests] == [2, 2]
    assert NAME in llm_server.requests[1]["messages"][1]["content"]


def test_a_long_wording_the_verifier_rejects_is_followed_by_another_sentence(
    llm_server: ScriptedLLMServer,
) -> None:
    """Told why its copy was rejected, a small model copies it again; the next ask starts
    from the next sentence instead."""
    from ragaudit.generate.text.templates import Verdict

    sources = [
        f"Number {i}: I am preparing a detailed overview of all of our clients and their "
        "markets for the board, so please tell me which industry the client named "
        "'[Client.Name]' works in, as our records have it."
        for i in range(3)
    ]

    async def first_is_wrong(template: SqlTemplate, _style: str, texts: list[str]) -> dict:
        return {t: Verdict(not t.startswith("Number 0"), "back-mapping: no") for t in texts}

    result = _word_long_by_copying(llm_server, sources, first_is_wrong)
    assert result.texts["long"] == sources[1:]
    assert [len(r["messages"]) for r in llm_server.requests] == [2, 2, 2]
    assert not result.verdicts[("long", sources[0])].verified


def test_once_every_sentence_was_asked_a_fresh_ask_samples(
    llm_server: ScriptedLLMServer,
) -> None:
    """Without sentences of its own to start from, a second long wording asked afresh at
    temperature 0 would be the first one again."""
    from ragaudit.generate.text.llm import StyleRequest

    def model(body: dict[str, Any]) -> str:
        mood = "sampled" if body.get("temperature", 0) > 0 else "greedy"
        return LONG_LINE.format(NAME, f" ({mood})")

    llm_server.responder = model
    result = _word(
        llm_server, {"long": StyleRequest(STYLE_INSTRUCTIONS["long"], f"Industry of '{NAME}'")}, 2
    )
    assert [t.rsplit("(", 1)[1] for t in result.texts["long"]] == ["greedy)?", "sampled)?"]
    assert result.calls == 2


def test_a_sentence_of_context_states_no_fact_and_asks_nothing() -> None:
    from ragaudit.generate.text.llm import context_problem

    question = "What year did Brad Lohaus start working for Eastern Star Bank?"
    assert context_problem("For my report to the board, I need this year.", question) is None
    assert context_problem("We meet the client on Monday and need it.", question) is None
    # A claim about the subject, which the question would carry, true or not.
    assert "not about the asker" in (
        context_problem("Brad Lohaus joined Eastern Star Bank long ago.", question) or ""
    )
    # A number the question does not have: the likeliest made-up answer.
    assert "(2015)" in (context_problem("I heard he started in 2015.", question) or "")
    assert context_problem("Why do I need it?", question) == "it asks something"


def test_an_unfit_sentence_of_context_is_not_put_before_the_question(
    llm_server: ScriptedLLMServer,
) -> None:
    from ragaudit.generate.text.llm import StyleRequest

    def model(body: dict[str, Any]) -> str:
        if body["messages"][0]["content"].startswith("You write one sentence of context"):
            return f"{NAME} works in the water industry, as everyone knows."  # a claim
        return f"Could you tell me which industry the client '{NAME}' works in?"

    llm_server.responder = model
    result = _word(
        llm_server, {"long": StyleRequest(STYLE_INSTRUCTIONS["long"], "(unused)")}, 1, attempts=1
    )
    assert result.texts["long"] == []
    reasons = [why for style, _text, why in result.rejected]
    assert "context: it is not about the asker (no I, my, we, our)" in reasons
    assert any(why.endswith("the long style needs at least 30") for why in reasons)


def test_a_line_the_free_checks_reject_gets_no_sentence_of_context(
    llm_server: ScriptedLLMServer,
) -> None:
    """A line too short for the long style gets a sentence of context before it (a call)
    only when the checks that need no call pass it: a broken possessive is rejected
    whatever comes before it, so that sentence is not paid for."""
    from ragaudit.generate.text.llm import StyleRequest
    from ragaudit.generate.text.naturalness import naturalness_problem

    asked_context: list[dict[str, Any]] = []

    def model(body: dict[str, Any]) -> str:
        if body["messages"][0]["content"].startswith("You write one sentence of context"):
            asked_context.append(body)
            return "For my report to the board, I need this."
        return (
            f"For the quarterly review, could you tell me what '{NAME}''s industry is, "
            "as far as you know?"
        )

    llm_server.responder = model
    request = {"long": StyleRequest(STYLE_INSTRUCTIONS["long"], "(unused)")}
    _word(llm_server, request, 1, attempts=1)
    assert len(asked_context) == 1  # without the free checks first: paid for
    asked_context.clear()
    result = _word(llm_server, request, 1, attempts=1, precheck=naturalness_problem)
    assert asked_context == [] and result.calls == 1
    assert result.texts["long"] == []
    assert [why for _style, _text, why in result.rejected] == [
        "unnatural: broken possessive (\"'[Client.Name]''s\"; write [Client.Name]'s, or 'of')"
    ]


def test_the_verbalizer_fills_in_what_the_model_cannot_word(llm_server: ScriptedLLMServer) -> None:
    from ragaudit.generate.text.llm import StyleRequest

    llm_server.responder = lambda body: "Tell me something."  # never names the client
    fallback = ["Industry of client '[Client.Name]'", "Get industry of '[Client.Name]'"]
    result = _word(
        llm_server,
        {"short": StyleRequest("few words", f"Industry of '{NAME}'", fallback)},
        2,
        meaning="the industry of '[Client.Name]'",
        attempts=2,
    )
    assert result.texts["short"] == fallback
    assert (
        result.fallbacks["short"]
        == "2 of 2 worded by the verbalizer: the LLM gave 0 usable in 2 asks"
    )
    assert result.calls == 2


def _reader(body: dict[str, Any]) -> str:
    """The back-mapping side of a model: the SQL a question reads as (industry or city)."""
    question = body["messages"][-1]["content"].rsplit("Question: ", 1)[1]
    name = next((n for n in _CLIENTS if n.lower() in question.lower()), "Nobody")
    column = "City" if "city" in question.lower() or "where" in question.lower() else "Industry"
    return f"SELECT {column} FROM Client WHERE Name = '{name}'"


_CLIENTS = ("Quillfeather Rail", "Brackenwater Utilities", "Vantorre Housing Trust")


def test_cli_with_the_llm_generators_and_a_free_rerun(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    words = _text_responder()

    def responder(body: dict[str, Any]) -> str:
        content = body["messages"][1]["content"]
        if content.startswith("Style:"):
            return words(body)
        if "Write one SQL SELECT query" in content:
            return _reader(body)
        return _client_responder(body)

    llm_server.responder = responder
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "sk-t-0000000000"}
    args = ["--example", "--generator", "llm", "--llm", "openai:scripted"]
    sql = ragaudit("templates", "sql", *args, cwd=tmp_path, env=env)
    assert sql.returncode == 0, sql.stderr
    sql_requests = llm_server.request_count
    assert "rejected: DELETE FROM Client" in sql.stderr
    assert "LLM usage" in sql.stdout
    text = ragaudit("templates", "text", *args, cwd=tmp_path, env=env)
    assert text.returncode == 0, text.stderr
    assert "per verified wording" in text.stdout
    assert ragaudit("generate", "--example", cwd=tmp_path).returncode == 0
    requests = llm_server.request_count
    again = ragaudit("templates", "sql", *args, "--overwrite", cwd=tmp_path, env=env)
    assert again.returncode == 0
    assert llm_server.request_count == requests  # answered from the run's cache
    usage = json.loads((tmp_path / "runs/default/usage.json").read_text())["steps"]["templates"]
    assert usage["calls"] == 0 and usage["cache_hits"] == sql_requests


def test_user_defined_style_without_instruction_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "ragaudit.yaml").write_text(
        "templates:\n  styles: [short, polite]\n  text_generator: llm\n"
    )
    assert ragaudit("templates", "sql", "--example", cwd=tmp_path).returncode == 0
    result = ragaudit(
        "templates",
        "text",
        "--example",
        "--llm",
        "openai:m",
        cwd=tmp_path,
        env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
    )
    assert result.returncode == 2
    assert "style 'polite' needs an instruction in templates.style_instructions.polite" in (
        result.stderr
    )


@pytest.mark.parametrize("style", ["short", "long"])
def test_built_in_styles_have_instructions(style: str) -> None:
    from ragaudit.generate.text.llm import STYLE_INSTRUCTIONS

    assert STYLE_INSTRUCTIONS[style]


def test_one_template_the_llm_fails_on_is_worded_by_the_verbalizer_and_nothing_usable_fails(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """The LLM failing (500s) on one template's wording costs that template its LLM
    wordings, not the step; and a step that ends with no usable wording exits non-zero."""

    def responder(body: dict[str, Any]) -> str | Reply:
        content = body["messages"][1]["content"]
        if "Write one SQL SELECT query" in content:
            return _reader(body)
        if "industry" in content.lower():
            return Reply(status=500)
        names = re.findall(r"'([^']+)'", content)
        return "\n".join(f"Tell me the city of '{names[0]}' please {i}" for i in range(3))

    llm_server.responder = responder
    (tmp_path / "ragaudit.yaml").write_text("llm:\n  max_retries: 0\n")
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "sk-t-0000000000"}
    assert ragaudit("templates", "sql", "--example", cwd=tmp_path, env=env).returncode == 0
    args = ["--example", "--generator", "llm", "--llm", "openai:x"]
    text = ragaudit("templates", "text", *args, cwd=tmp_path, env=env)
    assert "Traceback" not in text.stderr
    notes = [line for line in text.stderr.splitlines() if "the LLM failed" in line]
    assert notes and all("industry" in line for line in notes)
    assert "note (industry-by-client-name, short): worded by the verbalizer" in text.stderr
    # The reader answers only city and industry questions, so most wordings are rejected;
    # here some city wordings pass, so the step succeeds.
    assert text.returncode == 0, text.stderr

    (tmp_path / "ragaudit.yaml").write_text("llm:\n  max_retries: 0\n  cache: false\n")
    llm_server.responder = lambda body: (
        "SELECT 1"
        if "Write one SQL SELECT query" in body["messages"][1]["content"]
        else "Tell me something"
    )
    nothing = ragaudit("templates", "text", *args, "--overwrite", cwd=tmp_path, env=env)
    assert nothing.returncode == 2
    last = nothing.stderr.strip().splitlines()[-1]
    assert last.startswith("error: no usable wording:") and "none verified" in last
