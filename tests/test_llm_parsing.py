"""Recovering JSON and line lists from what models write."""

from __future__ import annotations

import pytest

from ragaudit.llm.parsing import extract_json, fenced_blocks, parse_lines


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
