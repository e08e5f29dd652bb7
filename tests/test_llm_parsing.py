"""Recovering JSON and line lists from what models write."""

from __future__ import annotations

import pytest

from ragaudit.llm.parsing import CUT, extract_json, fenced_blocks, parse_lines, read_cut_object


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ('{"a": 1}', {"a": 1}),
        ('Here you go:\n```json\n{"a": [1, 2]}\n```\nAnything else?', {"a": [1, 2]}),
        ('The answer is {"ok": true} as requested.', {"ok": True}),
        ('```\n["x", "y"]\n```', ["x", "y"]),
        ('Note {not json} then {"b": 2}', {"b": 2}),
    ],
)
def test_json_is_recovered_from_prose_and_fences(reply: str, value: object) -> None:
    assert extract_json(reply) == value


def test_no_json_is_a_value_error_quoting_the_reply() -> None:
    with pytest.raises(ValueError, match=r"no valid JSON .*'I cannot"):
        extract_json("I cannot help with that.")


def test_lines_lose_bullets_numbers_and_blanks() -> None:
    reply = "```\n1. first\n2) second\n\n- third\n* fourth\n(5) fifth\n```"
    assert parse_lines(reply) == ["first", "second", "third", "fourth", "fifth"]


def test_fenced_blocks_in_order() -> None:
    assert fenced_blocks("```sql\nSELECT 1\n```\ntext\n```\nSELECT 2\n```") == [
        "SELECT 1",
        "SELECT 2",
    ]


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        (
            '{"verdict": "Incorrect", "reason": "it na',
            {"verdict": "Incorrect", "reason": "it na" + CUT},
        ),
        ('{"verdict": "Incorrect", ', {"verdict": "Incorrect"}),
        ('{"verdict": "Incorrect", "reason":', {"verdict": "Incorrect"}),
        ('{"verdict": "Incorrect", "rea', {"verdict": "Incorrect"}),
        ('Sure:\n```json\n{"a": [5, "x"], "b": [4, "y', {"a": [5, "x"], "b": [4, "y" + CUT]}),
        ('{"a": [5, ', {"a": [5]}),
        ('{"a": {"b": 1}, "c": [1, {"d": "e"}, ', {"a": {"b": 1}, "c": [1, {"d": "e"}]}),
        ('{"a": "ends in an escape \\', {"a": "ends in an escape " + CUT}),
        ('Note {not json} then {"b": 2, "c": "th', {"b": 2, "c": "th" + CUT}),
    ],
)
def test_a_reply_cut_at_the_token_limit_keeps_what_it_completed(reply: str, value: object) -> None:
    """Issue 41 item 4: the one reader of cut replies (the judge, the critiques and the
    labeller read theirs with it)."""
    assert read_cut_object(reply) == value


@pytest.mark.parametrize(
    "reply", ['{"a": 1}', "no JSON at all", '{"a": tr', '{"a": 1}} and more', "[1, 2"]
)
def test_a_reply_that_was_not_cut_inside_an_object_is_not_read_as_cut(reply: str) -> None:
    assert read_cut_object(reply) is None
