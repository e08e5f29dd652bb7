"""Every prompt the project sends, and every re-ask instruction, against its own reader
(issue 41 item 7: a drop reason read "expected a first line 'Theme - <theme>'" while the
prompt asked for "Theme: "). For each, a reply written by hand that follows the prompt's
instructions to the letter goes to the code that reads it, and must be accepted: a prompt
and its reader cannot drift apart unnoticed. Each case first checks that the prompt still
gives the instruction the reply follows, so that a reworded prompt sends its case to be
rewritten with it.

The prompts: documents/ (simple, facts, summary and conclusion statements, question,
unanswerable question, wording, critiques, reading, both labeller phrasings), judge/ (the
judge with and without reasons, the five reference-free prompts), generate/sql/ (SQL
templates), generate/text/ (rewordings one and several at a time, a sentence of context,
the back-mapping and the reading of the verifier), world/ (the rewrite and its reading
check), and the built-in systems' re-ranker. (A built-in system's answer prompt has no
reader: its reply is the answer under test.)
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from ragaudit.db import Database, introspect
from ragaudit.documents import checks
from ragaudit.documents import generation as gen
from ragaudit.documents.generator import Context, DocumentGenerator, Embedder
from ragaudit.documents.labels import LABEL_REPLY, PHRASINGS, label_prompt, parse_label_reply
from ragaudit.documents.options import DocumentOptions
from ragaudit.errors import StructuredOutputError
from ragaudit.generate.sql import llm as sql_llm
from ragaudit.generate.text import llm as text_llm
from ragaudit.generate.text import verify
from ragaudit.judge import reference_free as free
from ragaudit.judge.llm_judge import Verdict, judge_prompt, parse_verdict
from ragaudit.judge.matchers import gives_answer
from ragaudit.llm.backends.scripted import Scripted
from ragaudit.llm.client import LLMClient, schema_request
from ragaudit.llm.parsing import parse_lines
from ragaudit.llm.types import Messages
from ragaudit.records.models import Reference
from ragaudit.steps.world import _Answers
from ragaudit.systems.answer_prompts import is_yes, rerank_messages
from ragaudit.world import rewrite

CONTEXT = (
    "Alder Bridge is being built in Norhaven. Work began on 3 May 2021. Completion is "
    "planned for 9 June 2023. Mira Tessel manages the project."
)
QUESTION = "When did work on Alder Bridge begin?"
ANSWER = "Work on Alder Bridge began on 3 May 2021."
FACTS = gen.Facts(
    "the Alder Bridge project",
    ("Alder Bridge is being built in Norhaven.", "Work on Alder Bridge began on 3 May 2021."),
)


def _text(messages: Messages) -> str:
    return "\n".join(m["content"] for m in messages)


def _json_reply(messages: Messages, schema: Any, reply: str) -> Any:
    """``reply`` read as the client reads a structured reply to ``messages``: accepted at
    the first ask, never re-asked."""
    backend = Scripted([reply])
    with LLMClient(backend) as llm:
        value = llm.complete_json(messages, schema)
    assert len(backend.requests) == 1
    return value


# -- documents/ ----------------------------------------------------------------------------


def test_simple_pairs_as_the_prompt_shows_them() -> None:
    prompt = _text(gen.simple_prompt(CONTEXT, 2))
    assert 'Reply with JSON only: {"pairs": [{"question": "...", "answer": "..."}]}' in prompt
    reply = json.dumps(
        {
            "pairs": [
                {"question": "Where is Alder Bridge being built?", "answer": "Norhaven"},
                {"question": QUESTION, "answer": "3 May 2021"},
            ]
        }
    )
    pairs = gen.parse_simple_reply(reply, 2)
    assert [(p.question, p.answer) for p in pairs] == [
        ("Where is Alder Bridge being built?", "Norhaven"),
        (QUESTION, "3 May 2021"),
    ]


def test_facts_with_the_theme_line_the_prompt_asks_for() -> None:
    prompt = _text(gen.facts_prompt(CONTEXT))
    assert "First write one line 'Theme: ' followed by the passage's main theme" in prompt
    assert "one per line, each starting with '> '" in prompt
    reply = (
        "Theme: the Alder Bridge project\n"
        "> Alder Bridge is being built in Norhaven.\n"
        "> Work on Alder Bridge began on 3 May 2021.\n"
        "> Mira Tessel manages the Alder Bridge project."
    )
    facts = gen.parse_facts_reply(reply)
    assert facts.theme == "the Alder Bridge project"
    assert facts.facts[1] == "Work on Alder Bridge began on 3 May 2021."
    assert len(facts.facts) == 3


@pytest.mark.parametrize("kind", ["summary", "conclusion"])
def test_summaries_and_conclusions_one_per_line(kind: str) -> None:
    prompt = _text(gen.combined_prompt(kind, FACTS))  # type: ignore[arg-type]
    assert "Write each result on its own line, starting with '> ', and nothing else." in prompt
    reply = (
        "> Alder Bridge is being built in Norhaven, where work began on 3 May 2021.\n"
        "> Work on Alder Bridge in Norhaven has gone on since May 2021.\n"
        "> The Alder Bridge project in Norhaven started in the spring of 2021."
    )
    assert len(gen.parse_statements(reply)) == 3


def test_a_question_and_an_unanswerable_question_as_asked() -> None:
    assert "Reply with the question only." in _text(gen.question_prompt(FACTS.theme, ANSWER))
    assert gen.parse_question(QUESTION) == QUESTION
    for kind in gen.UNANSWERABLE_KINDS:  # every near miss asks for the same reply
        assert "Reply with the question only." in _text(gen.unanswerable_prompt(FACTS, kind))
    assert gen.parse_question("How much did Alder Bridge cost?") == (
        "How much did Alder Bridge cost?"
    )


def test_a_rewording_as_asked() -> None:
    prompt = _text(gen.wording_prompt(QUESTION, "Short, like a search box query."))
    assert "Reply with the reworded question only." in prompt
    assert gen.parse_wording("Alder Bridge work start date?") == "Alder Bridge work start date?"


@pytest.mark.parametrize("answer", [ANSWER, None])
def test_critiques_in_the_shape_the_prompt_shows(answer: str | None) -> None:
    prompt = _text(checks.critique_prompt(CONTEXT, QUESTION, answer))
    shape = (
        '{"stand_alone": <1-5>, "specificity": <1-5>, "question_grounding": <1-5>, '
        '"answer_grounding": <1-5>, "why": "<for a rating below 4: why, in a few words; '
        'else empty>"}'
    )
    assert shape in prompt
    reply = (
        '{"stand_alone": 5, "specificity": 3, "question_grounding": 5, '
        '"answer_grounding": 5, "why": "many projects start in 2021"}'
    )
    got = checks.parse_critiques(reply)
    assert [got[name].rating for name in checks.CRITIQUES] == [5, 3, 5, 5]
    assert got["specificity"].reason == "many projects start in 2021"
    assert got["stand_alone"].reason == ""  # no reason is asked for a high rating


@pytest.mark.parametrize(
    ("reply", "answer", "passage"),
    [
        ('{"answer": "3 May 2021", "passage": 1}', "3 May 2021", 1),
        ('{"answer": "unknown", "passage": null}', None, None),
    ],
)
def test_a_reading_in_the_shape_the_prompt_shows(
    reply: str, answer: str | None, passage: int | None
) -> None:
    prompt = _text(checks.reading_prompt([CONTEXT], QUESTION))
    assert '{"answer": "<the answer, or unknown>", "passage": <number, or null>}' in prompt
    assert checks.parse_reading(reply) == checks.ReadingReply(answer=answer, passage=passage)


@pytest.mark.parametrize("phrasing", PHRASINGS)
def test_a_label_in_the_shape_every_phrasing_shows(phrasing: str) -> None:
    prompt = _text(label_prompt(CONTEXT, QUESTION, phrasing))
    assert '{"label": "fact_single" or "summary" or "reasoning" or "unanswerable"' in prompt
    reply = '{"label": "fact_single", "reason": "the context states one date"}'
    got = parse_label_reply(reply)
    assert (got.label, got.reason) == ("fact_single", "the context states one date")


# -- judge/ --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reasons", "reply", "correct"),
    [
        (True, '{"verdict": "Correct", "reason": "the same date"}', True),
        (False, '{"verdict": "Incorrect"}', False),
    ],
)
def test_a_verdict_in_the_shape_the_judge_prompt_shows(
    reasons: bool, reply: str, correct: bool
) -> None:
    prompt = _text(judge_prompt(QUESTION, "3 May 2021", "May 2021", reasons=reasons))
    shown = '{"verdict": "Correct" or "Incorrect"' + (', "reason": ' if reasons else "}")
    assert shown in prompt
    assert (parse_verdict(reply).verdict == "Correct") is correct


def test_the_reference_free_prompts_as_they_ask() -> None:
    claims = free.claims_prompt(QUESTION, ANSWER)
    assert 'Reply with JSON only: {"claims": ["<claim>", ...]}' in _text(claims)
    got = _json_reply(claims, free.Claims, '{"claims": ["Work on Alder Bridge began in 2021."]}')
    assert got.claims == ["Work on Alder Bridge began in 2021."]

    verifying = free.verify_prompt([CONTEXT], ["Alder Bridge is in Norhaven.", "It is red."])
    assert '{"verdicts": ["yes" or "no", ...]}' in _text(verifying)
    assert free.parse_verdicts(2)('{"verdicts": ["yes", "no"]}') == [True, False]

    relevancy = free.relevancy_prompt("3 May 2021", 2)
    assert '{"questions": ["<question>", ...]}' in _text(relevancy)
    reply = '{"questions": ["When did work on Alder Bridge begin?", "When did it start?"]}'
    assert len(_json_reply(relevancy, free.RelevancyReply, reply).questions) == 2

    for messages, schema, reply in [
        (free.noncommittal_prompt(QUESTION, "3 May 2021"), free.Committal,
         '{"noncommittal": false}'),
        (free.usefulness_prompt(CONTEXT, QUESTION, "3 May 2021"), free.Useful,
         '{"useful": true}'),
        (free.same_prompt(QUESTION, "3 May 2021", "May 3, 2021"), free.Same, '{"same": true}'),
    ]:  # fmt: skip
        field = next(iter(json.loads(reply)))
        assert f'{{"{field}": true or false}}' in _text(messages)
        assert getattr(_json_reply(messages, schema, reply), field) is json.loads(reply)[field]


# -- generate/ -------------------------------------------------------------------------------


def test_sql_templates_one_per_line_or_none() -> None:
    db = Database("example")
    schema = introspect(db)
    target = sql_llm.Target(("Client",), "tables")
    table = next(t for t in schema.tables if t.name == "Client")
    prompt = _text(sql_llm.sql_prompt(target, sql_llm.describe_table(table, {}), []))
    assert "Reply with one SQL template per line and nothing else." in prompt
    assert "written '[Table.Column]' with the quotes" in prompt
    reply = (
        "SELECT Industry FROM Client WHERE Name = '[Client.Name]'\n"
        "SELECT City FROM Client WHERE Name = '[Client.Name]'"
    )
    backend = Scripted(default=sql_llm.NO_TEMPLATE)
    backend.responder = lambda messages: (
        reply
        if "Client (" in _text(messages) and ("Project" not in _text(messages))
        else sql_llm.NO_TEMPLATE
    )
    with LLMClient(backend) as llm:
        result = llm.run(sql_llm.llm_sql_templates(llm, db, schema, ["tables"]))
    assert sorted(t.sql for t in result.templates) == sorted(reply.splitlines())
    assert result.rejected == []  # the NONE replies of the other tables included
    db.dispose()


def test_rewordings_one_or_several_at_a_time_and_a_sentence_of_context() -> None:
    bindings = {"Client.Name": "Quillfeather Rail"}
    one = _text(
        text_llm.rewrite_prompt(
            "Which industry is 'Quillfeather Rail' in?", "the industry of a client",
            "Short.", 1, ["Quillfeather Rail"],
        )
    )  # fmt: skip
    assert "Reply with the rewritten question only." in one
    (line,) = text_llm._one_question("Industry of 'Quillfeather Rail'?", ["Quillfeather Rail"])
    assert text_llm.to_template(line, bindings) == "Industry of '[Client.Name]'?"
    several = _text(
        text_llm.rewrite_prompt(
            "Which industry is 'Quillfeather Rail' in?", "the industry of a client",
            "Long.", 2, ["Quillfeather Rail"],
        )
    )  # fmt: skip
    assert "Reply with one question per line and nothing else." in several
    lines = parse_lines(
        "In which industry does 'Quillfeather Rail' do its business?\n"
        "What line of business is 'Quillfeather Rail' in, as a client of ours?"
    )
    assert [text_llm.to_template(x, bindings).count("[Client.Name]") for x in lines] == [1, 1]
    context = _text(text_llm.context_prompt("Industry of 'Quillfeather Rail'?", 12))
    assert "in the first person" in context and "Reply with the sentence only." in context
    sentence = "I need this for the client report I am writing for tomorrow's meeting."
    assert text_llm.context_problem(sentence, "Industry of 'Quillfeather Rail'?") is None


def test_the_verifiers_back_mapping_and_reading_as_asked() -> None:
    backmap = _text(verify.backmap_prompt("CREATE TABLE Client (Name TEXT, Industry TEXT);", "?"))
    assert "Write one SQL SELECT query" in backmap and "Reply with the SQL only." in backmap
    sql = "SELECT Industry FROM Client WHERE Name = 'Quillfeather Rail'"
    assert verify.recover_reading(sql) == sql
    reading = _text(verify.reading_prompt(["Client 'Quillfeather Rail': Industry Transport."], "?"))
    assert "with the value only; write unknown if they do not say." in reading
    assert gives_answer(Reference.from_values(["Transport"]), "Transport")


# -- world/ and systems/ ------------------------------------------------------------------


def test_a_world_rewrite_and_its_reading_check_as_asked() -> None:
    body = "Alder Bridge is in Norhaven. Work began on 3 May 2021."
    assert "Reply with the paragraph only." in _text(rewrite.rewrite_prompt(body))
    paragraph = "In Norhaven, work on Alder Bridge began on 3 May 2021."
    assert rewrite.clean_rewrite(paragraph) == paragraph
    reading = rewrite.comprehension_prompt(body, ["Where is it?", "When did it start?"])
    assert '{"answers": ["<answer to 1>", "<answer to 2>", ...]}' in _text(reading)
    got = _json_reply(reading, _Answers, '{"answers": ["Norhaven", "3 May 2021"]}')
    assert got.answers == ["Norhaven", "3 May 2021"]


def test_the_re_rankers_one_word() -> None:
    assert "Reply with one word: yes or no." in _text(rerank_messages(QUESTION, CONTEXT))
    assert is_yes("yes") and not is_yes("no")


# -- the re-asks ---------------------------------------------------------------------------

# What each re-ask tells the model to reply with, a reply that does exactly that, and the
# reader of that reply.
REASKS = [
    (gen.SIMPLE_REPLY, '{"pairs": [{"question": "' + QUESTION + '", "answer": "3 May 2021"}]}',
     lambda r: gen.parse_simple_reply(r, 1)),
    (gen.FACTS_REPLY, "Theme: the Alder Bridge project\n> " + ANSWER, gen.parse_facts_reply),
    (gen.STATEMENTS_REPLY, "> " + ANSWER + "\n> Alder Bridge is in Norhaven.\n> Mira Tessel "
     "manages the Alder Bridge project.", gen.parse_statements),
    (gen.QUESTION_REPLY, QUESTION, gen.parse_question),
    (gen.WORDING_REPLY, "Alder Bridge start date?", gen.parse_wording),
    (checks.CRITIQUE_REPLY, '{"stand_alone": 5, "specificity": 4, "question_grounding": 5, '
     '"answer_grounding": 5}', checks.parse_critiques),
    (checks.READING_REPLY, '{"answer": "3 May 2021", "passage": 1}', checks.parse_reading),
    (LABEL_REPLY, '{"label": "summary", "reason": "several facts"}', parse_label_reply),
    (free.verdicts_reply(2), '{"verdicts": ["yes", "no"]}', free.parse_verdicts(2)),
    (schema_request(Verdict), '{"verdict": "Correct", "reason": "same"}', parse_verdict),
]  # fmt: skip


@pytest.mark.parametrize(("what", "reply", "read"), REASKS)
def test_a_reply_that_does_what_a_re_ask_says_is_read(what: str, reply: str, read: Any) -> None:
    read(reply)  # raises ValueError if refused


def test_the_facts_re_ask_and_its_drop_reason_ask_for_the_prompts_theme_line() -> None:
    """The facts prompt says "Theme: "; its re-ask said 'Theme - <theme>', and so did the
    reason a candidate was dropped for (issue 41 item 7)."""
    assert "'Theme: <theme>'" in gen.FACTS_REPLY
    backend = Scripted(default="> Alder Bridge is being built in Norhaven.")  # no theme line
    options = DocumentOptions(size=1, mix={"fact_single": 1.0}, rounds=1, check_label=False)
    with LLMClient(backend) as llm:
        generator = DocumentGenerator(
            llm, options, [Context("a#0", "a", CONTEXT)], embedder=Embedder(), styles={}
        )
        (record,) = asyncio.run(generator.generate())
    assert record.dropped is not None
    assert "(expected a first line 'Theme: <theme>', then one statement" in record.dropped
    assert "Theme -" not in record.dropped
    asked_again = backend.requests[1][-1]["content"]
    assert "Reply again with only a first line 'Theme: <theme>'" in asked_again
    with (
        LLMClient(Scripted(default="no")) as llm,
        pytest.raises(StructuredOutputError, match=r"\(expected JSON\)"),  # a schema's name
    ):
        llm.complete_json([{"role": "user", "content": "?"}], Verdict)
