"""Templates written by an LLM: the replies come from a scripted OpenAI-compatible server
over real HTTP (never a mock of the generator), and every reply is checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragaudit.config import LLMConfig
from ragaudit.db import Database, introspect
from ragaudit.generate import SqlTemplate
from ragaudit.generate.llm_templates import llm_sql_templates, llm_text_templates, recover_sql
from ragaudit.llm import make_llm
from tests.support.cli import ragaudit
from tests.support.scripted_llm_server import ScriptedLLMServer

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
    return ""  # nothing acceptable for the other targets


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


def _text_responder(body: dict[str, Any]) -> str:
    messages = body["messages"]
    first_ask = len(messages) == 2
    if "30 words" in messages[1]["content"]:  # the long style
        if first_ask:
            return "Which industry is '[Client.Name]' in?"  # far too short for long
        long = (
            "Could you tell me, since I am preparing a detailed overview of all of our "
            "clients and their markets for the board, which industry the client named "
            "'[Client.Name]' works in{}?"
        )
        return "\n".join(long.format(s) for s in (" today", " at present", ""))
    if first_ask:
        return (
            "1. Industry of '[Client.Name]'\n2. Industry of Acme Corp\n"
            "3. '[Client.Name]' industry in '[Client.City]'\n4. industry of '[client.name]'"
        )
    return "- Sector of '[Client.Name]'\n- '[Client.Name]' industry\n- Industry of '[Client.Name]'!"


def test_text_templates_need_exactly_the_placeholders(llm_server: ScriptedLLMServer) -> None:
    llm_server.responder = _text_responder
    styles = {"short": "few words", "long": "at least 30 words"}  # the built-in style names
    with _llm(llm_server) as llm:
        result = llm.run(llm_text_templates(llm, TEMPLATE, styles, n=3))
    assert result.texts["short"] == [
        "Industry of '[Client.Name]'",
        "Sector of '[Client.Name]'",
        "'[Client.Name]' industry",
    ]
    assert len(result.texts["long"]) == 3
    reasons = {(style, text): why for style, text, why in result.rejected}
    assert reasons[("short", "Industry of Acme Corp")] == "missing placeholder Client.Name"
    assert reasons[("short", "'[Client.Name]' industry in '[Client.City]'")] == (
        "unknown placeholder Client.City"
    )
    assert "missing" in reasons[("short", "industry of '[client.name]'")]
    assert reasons[("short", "Industry of '[Client.Name]'!")] == "near-duplicate"
    assert reasons[("long", "Which industry is '[Client.Name]' in?")] == (
        "5 words; the long style needs at least 30"
    )
    assert all(len(text.split()) >= 30 for text in result.texts["long"])
    # The second ask carried the rejections back to the model. Both styles are asked at
    # once, so the short style's re-ask is not always the first one the server saw.
    reasks = [r["messages"][-1]["content"] for r in llm_server.requests if len(r["messages"]) == 4]
    assert any("missing placeholder Client.Name" in text for text in reasks)


def test_cli_with_the_llm_generators_and_a_free_rerun(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    def responder(body: dict[str, Any]) -> str:
        content = body["messages"][1]["content"]
        if content.startswith("SQL query:"):
            return _text_responder(body)
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
    from ragaudit.generate.llm_templates import STYLE_INSTRUCTIONS

    assert STYLE_INSTRUCTIONS[style]
