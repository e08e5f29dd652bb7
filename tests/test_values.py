"""One rule for what an id, a name or a text may be, whichever door it comes in by: the
ids and passages a system of any kind returns, and the rows given to ``ra.evaluate`` (a
list of dicts or a DataFrame). A value that breaks it is one line naming where it was,
never recorded as its ``str`` (the id 'None', the group 'nan') and never a
UnicodeEncodeError where the text next goes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

import ragaudit as ra
from ragaudit.records.values import document_id, missing, passage_text, row_name, unicode_text
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


# Every kind of value an answer may be, and the text it is recorded as (False: refused).
ANSWERS: list[tuple[Any, str | bool | None]] = [
    ("Paris.", "Paris."),
    (None, None),  # a retrieval-only system gives none
    (6, "6"),  # a figure the system computed
    (2.5, "2.5"),
    (True, False),
    (float("nan"), False),
    (["Paris"], False),
    ({"x": 1}, False),
    ((3.5, []), False),
]


@pytest.mark.parametrize(("value", "expected"), ANSWERS, ids=[repr(v) for v, _ in ANSWERS])
def test_an_answer_is_read_alike_from_every_shape_a_system_returns_and_by_evaluate(
    value: Any, expected: str | bool | None
) -> None:
    """ra.Answer, a dict and a tuple, and ra.evaluate's rows: one rule, never ``str``."""
    shapes = [ra.Answer(value), {"answer": value}, (value, [])]
    if expected is False:
        for shape in shapes:
            with pytest.raises(SystemFailure, match=r"^system fn returned the answer .* not an"):
                to_answer(shape, "system fn")
        if missing(value):  # a DataFrame's missing cell: a row without an answer
            assert ra.evaluate([{**ROW, "answer": value}]).responses[0].response is None
            return
        with pytest.raises(ra.UserError, match=r"^row 1: answer: .* is not an answer's text"):
            ra.evaluate([{**ROW, "answer": value}])
        return
    for shape in shapes:
        assert to_answer(shape, "system fn").response == expected
    assert ra.evaluate([{**ROW, "answer": value}]).responses[0].response == expected


def test_a_dict_without_an_answer_contexts_past_the_ids_and_absurd_usage_are_failures() -> None:
    """What a callable got wrong is that answer's error, never a silent null, a passage
    dropped unread, or a count of 1e30 tokens."""
    with pytest.raises(SystemFailure, match=r"without 'answer' .*'answr'"):
        to_answer({"answr": "Paris"}, "system fn")
    with pytest.raises(SystemFailure, match=r"2 contexts for 1 retrieved ids"):
        to_answer(ra.Answer("x", retrieved_ids=["d1"], contexts=["a", "b"]), "system fn")
    for bad in (1e30, -1, 2.5, "many", True):
        with pytest.raises(SystemFailure, match=r"usage.prompt_tokens .* a count of tokens"):
            to_answer({"answer": "x", "usage": {"prompt_tokens": bad}}, "system fn")
    ok = to_answer({"answer": "x", "usage": {"prompt_tokens": 12.0}}, "system fn")
    assert ok.usage.prompt_tokens == 12
    assert to_answer({"answer": None}, "system fn").response is None


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


# Every kind of value a row's name (group, system, variant, query id) may be, and the name
# it is recorded as: a string, "" for not given (the default applies), None for refused.
NAMES: list[tuple[Any, str | None]] = [
    ("g1", "g1"),
    (3, "3"),
    (0, "0"),  # a group may be named 0
    (np.int64(12), "12"),
    (None, ""),
    (float("nan"), ""),  # what df.to_dict("records") gives for an empty cell
    (np.float32("nan"), ""),
    (pd.NA, ""),
    ("  ", ""),
    (1.5, None),
    (1.0, None),  # an integer column with a missing cell: refused, with a hint
    (float("inf"), None),
    (True, None),
    (False, None),
    (["g"], None),
    ({"g": 1}, None),
]


@pytest.mark.parametrize(("value", "expected"), NAMES, ids=[repr(v) for v, _ in NAMES])
def test_a_name_is_a_string_an_integer_or_not_given_for_every_field_of_a_row(
    value: Any, expected: str | None
) -> None:
    other = {**ROW, "question": "Capital of Italy?", "answer": "Rome.", "reference": "Rome"}
    for field in ("group", "system", "variant", "query_id"):
        # Two rows with the value: for a query id, two systems' answers to one question.
        second = {**ROW, "system": "b"} if field == "query_id" else other
        rows = [{**ROW, field: value}, {**second, field: value}]
        if expected is None:
            with pytest.raises(ValueError, match=r"is not a name \(a non-empty string or"):
                row_name(value)
            with pytest.raises(ra.UserError, match=rf"^row 1: {field}: .* is not a name \("):
                ra.evaluate(rows)
            continue
        assert row_name(value) == (expected or None)
        result = ra.evaluate(rows)
        absent = ra.evaluate([{k: v for k, v in row.items() if k != field} for row in rows])
        if not expected:  # not given: as if the key were absent, the same figures
            assert result.to_pandas().equals(absent.to_pandas()), field
            assert result.summary == absent.summary
            continue
        column = {"group": "group_id"}.get(field, field)
        assert set(result.to_pandas()[column]) == {expected}, field


def test_an_empty_cell_reads_alike_from_a_dataframe_and_from_its_records() -> None:
    """``df.to_dict("records")`` keeps the NaN of each empty cell: the rows it gives are
    read as the DataFrame is (no group, no variant, no reference), not as groups named
    'nan' that join unrelated rows."""
    nan = float("nan")
    frame = pd.DataFrame(
        {
            "question": ["Capital of France?", "Capital of Italy?", "Capital of Spain?"],
            "answer": ["Paris.", "Lyon.", "Madrid."],
            "reference": ["Paris", "Rome", "Madrid"],
            "group": ["g1", nan, nan],
            "variant": [nan, "short", nan],
        }
    )
    by_frame = ra.evaluate(frame)
    by_records = ra.evaluate(frame.to_dict("records"))
    assert by_records.to_pandas().equals(by_frame.to_pandas())
    assert by_records.summary == by_frame.summary
    table = by_records.to_pandas()
    # Each row without a group is its own group (its query id), as without the column.
    assert table.group_id.tolist() == ["g1", *table.query_id.tolist()[1:]]
    assert table.variant.tolist() == ["logged", "short", "logged"]
    # Two unrelated rows, right and wrong, with no group: two groups of one, each robust
    # or not on its own; never one group of two, which made robustness 0.5.
    rows = [{**ROW, "group": nan}, {**ROW, "question": "Capital?", "answer": "Lyon.", "group": nan}]
    assert ra.evaluate(rows).summary == ra.evaluate([dict(r, group=None) for r in rows]).summary
    assert len(set(ra.evaluate(rows).to_pandas().group_id)) == 2


def test_a_missing_value_is_none_nan_na_or_nat_and_never_a_list_or_zero() -> None:
    for value in (None, float("nan"), np.float32("nan"), pd.NA, pd.NaT, np.datetime64("NaT")):
        assert missing(value), value
    for value in (0, 0.0, "", "nan", [], [float("nan")], np.array([np.nan]), False):
        assert not missing(value), value
