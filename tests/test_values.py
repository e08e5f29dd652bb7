"""One rule for what an id or a text may be, whichever door it comes in by: the ids and
passages a system of any kind returns, and the rows given to ``ra.evaluate``. A value
that breaks it is one line naming where it was, never recorded as its ``str`` (the id
'None') and never a UnicodeEncodeError where the text next goes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ragaudit as ra
from ragaudit.records.values import document_id, passage_text, unicode_text
from ragaudit.systems.adapters import to_answer
from ragaudit.systems.base import SystemFailure

ROW = {"question": "Capital of France?", "answer": "Paris.", "reference": "Paris"}

# Every kind of value a list of ids may hold, and the id it is recorded as (None: refused).
IDS: list[tuple[Any, str | None]] = [
    ("doc-1", "doc-1"),
    (7, "7"),
    (np.int64(12), "12"),  # a DataFrame's integer cell
    (0, "0"),
    (None, None),
    (float("nan"), None),  # a DataFrame's missing cell
    (1.0, None),
    (True, None),
    ("", None),
    ("  ", None),
    (["d1", "d2"], None),
    ({"id": "d1"}, None),
]


@pytest.mark.parametrize(("value", "expected"), IDS, ids=[repr(v) for v, _ in IDS])
def test_an_id_is_accepted_or_refused_alike_by_a_system_and_by_evaluate(
    value: Any, expected: str | None
) -> None:
    if expected is None:
        with pytest.raises(ValueError, match=r"is not an id \(an id is a non-empty string or"):
            document_id(value)
        with pytest.raises(
            SystemFailure, match=r"^system fn returned retrieved_ids\[1\] .* not an"
        ):
            to_answer({"answer": "x", "retrieved_ids": ["d0", value]}, "system fn")
        for field in ("retrieved_ids", "gold_ids"):
            with pytest.raises(ra.UserError, match=rf"^row 1: {field}\[1\]: .* is not an id"):
                ra.evaluate([{**ROW, field: ["d0", value]}])
        return
    assert document_id(value) == expected
    answer = to_answer({"answer": "x", "retrieved_ids": ["d0", value]}, "system fn")
    assert answer.retrieved[1].id == expected
    result = ra.evaluate([{**ROW, "retrieved_ids": ["d0", value], "gold_ids": [value]}])
    assert result.responses[0].retrieved_ids == ["d0", expected]
    assert result.queries[0].gold_ids == [expected]


def test_a_passage_text_is_a_string_or_not_known_at_every_door() -> None:
    assert passage_text("Paris.") == "Paris." and passage_text(None) is None
    # A context without its text: the passage was retrieved, its text is not known.
    answer = to_answer({"answer": "x", "retrieved_ids": ["d1"], "contexts": [None]}, "system s")
    assert answer.retrieved[0].text is None
    result = ra.evaluate([{**ROW, "retrieved_ids": ["d1"], "contexts": [None]}])
    assert result.responses[0].retrieved[0].text is None  # not the text 'None'
    for bad in (3, {"text": "Paris"}, ["Paris"]):
        with pytest.raises(SystemFailure, match=r"^system s returned contexts\[0\] .* not a pass"):
            to_answer({"answer": "x", "retrieved_ids": ["d1"], "contexts": [bad]}, "system s")
        with pytest.raises(ra.UserError, match=r"^row 1: contexts\[0\]: .* not a passage's text"):
            ra.evaluate([{**ROW, "contexts": [bad]}])


def test_half_a_character_is_found_and_a_whole_one_written_in_two_halves_is_joined() -> None:
    assert unicode_text("plain") == ("plain", 0)
    assert unicode_text("cut \ud83d") == ("cut \ufffd", 1)
    assert unicode_text("\udc00 and \ud800") == ("\ufffd and \ufffd", 2)
    assert unicode_text("smile \ud83d\ude00") == ("smile \U0001f600", 0)
    assert unicode_text("already \ufffd") == ("already \ufffd", 0)  # not counted: none cut


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({**ROW, "question": "Capital of France? \ud800"}, "question"),
        ({**ROW, "answer": "Paris \ud83d"}, "answer"),
        ({**ROW, "reference": "Paris \udfff"}, "reference"),
        ({**ROW, "reference": ["Paris", "Lyon \ud800"]}, "reference"),
        ({**ROW, "contexts": ["ok", "Paris is \ud800"]}, r"contexts\[1\]"),
        ({**ROW, "retrieved_ids": ["d\ud800"]}, r"retrieved_ids\[0\]"),
        ({**ROW, "error": "timeout \ud800"}, "error"),
    ],
)
def test_a_lone_surrogate_in_any_text_of_a_row_is_one_line_naming_the_field(
    row: dict[str, Any], field: str
) -> None:
    rows = [dict(ROW, question="Another?"), row]
    with pytest.raises(ra.UserError, match=rf"^row 2: {field}: not valid Unicode text \(a lone"):
        ra.evaluate(rows)


def test_an_emoji_written_as_its_two_halves_is_one_character_of_the_row() -> None:
    result = ra.evaluate([{**ROW, "answer": "Paris \ud83d\ude00", "contexts": ["\ud83d\ude00"]}])
    assert result.responses[0].response == "Paris \U0001f600"
    assert result.responses[0].retrieved[0].text == "\U0001f600"
    assert result.judgements[0] is not None and result.judgements[0].correct is True
