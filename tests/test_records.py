"""Records and their files: streaming JSONL, atomic whole-file writes, durable appends
that survive a torn last line, and Parquet export."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragaudit.records import (
    JsonlAppender,
    Judgement,
    QueryRecord,
    Reference,
    ResponseRecord,
    RetrievedItem,
    TokenUsage,
    atomic_write_text,
    export_parquet,
    read_jsonl,
    stable_id,
    write_jsonl_atomic,
)
from ragaudit.records.io import RecordFileError


def _query(i: int, values: list | None = None) -> QueryRecord:
    values = values if values is not None else [f"answer {i}"]
    return QueryRecord(
        query_id=stable_id("g", i),
        group_id=f"g{i // 3}",
        template_id="t1",
        text_template_id=f"t1-short-{i % 3}",
        variant="short" if i % 2 else "long",
        query=f"question {i}?",
        reference=Reference.from_values(values),
        bindings={"Client.Name": f"Client {i}"},
        gold_ids=[f"doc{i}"],
    )


def test_stable_id_is_deterministic_and_sensitive_to_every_part() -> None:
    assert stable_id("a", 1) == stable_id("a", 1)
    assert stable_id("a", 1) != stable_id("a", 2) != stable_id("b", 1)
    assert len(stable_id("x")) == 16


def test_reference_kinds() -> None:
    assert Reference.from_values(["a", "b"]).is_set
    assert Reference.from_values([None]).is_null
    assert Reference.from_values([None]).display == "(no value is recorded)"
    assert Reference.from_values([3, "x"]).display == "3; x"
    assert Reference.from_values([]).display == "(no answer)"


def test_jsonl_round_trip_of_all_three_records(tmp_path: Path) -> None:
    queries = [_query(i) for i in range(5)] + [_query(9, [1, 2.5, None, True])]
    response = ResponseRecord(
        query_id="q",
        system="bm25",
        response="Paris",
        retrieved=[RetrievedItem(id="d1", score=0.5, text='Zoë "Z" Ng')],
        latency_s=0.2,
        usage=TokenUsage(prompt_tokens=10, completion_tokens=2),
    )
    judgement = Judgement(query_id="q", system="bm25", correct=True, method="match")
    write_jsonl_atomic(tmp_path / "q.jsonl", queries)
    write_jsonl_atomic(tmp_path / "r.jsonl", [response])
    write_jsonl_atomic(tmp_path / "j.jsonl", [judgement])
    assert list(read_jsonl(tmp_path / "q.jsonl", QueryRecord)) == queries
    assert list(read_jsonl(tmp_path / "r.jsonl", ResponseRecord)) == [response]
    assert list(read_jsonl(tmp_path / "j.jsonl", Judgement)) == [judgement]
    first = json.loads((tmp_path / "q.jsonl").read_text().splitlines()[0])
    assert first["schema_version"] == 1


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.text(max_size=30),
    st.floats(allow_nan=False, allow_infinity=False),
)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(scalars, max_size=4), query=st.text(min_size=1, max_size=40))
def test_any_typed_reference_survives_a_round_trip(tmp_path_factory, values, query) -> None:
    path = tmp_path_factory.mktemp("rt") / "q.jsonl"
    record = QueryRecord(
        query_id="q",
        group_id="g",
        variant="short",
        query=query,
        reference=Reference.from_values(values),
        bindings={"T.c": values[0] if values else None},
    )
    write_jsonl_atomic(path, [record])
    [back] = read_jsonl(path, QueryRecord)
    assert back == record
    assert [type(v) for v in back.reference.values] == [type(v) for v in values]


def test_bad_lines_are_reported_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = _query(1).model_dump_json()
    path.write_text(f"{good}\n{{not json}}\n{good}\n")
    with pytest.raises(RecordFileError, match=r"bad.jsonl:2: not valid JSON"):
        list(read_jsonl(path, QueryRecord))
    path.write_text(f"{good}\n" + json.dumps({**json.loads(good), "colour": 1}) + "\n")
    with pytest.raises(RecordFileError, match=r"bad.jsonl:2: colour: unknown field"):
        list(read_jsonl(path, QueryRecord))


def test_newer_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.jsonl"
    path.write_text(json.dumps({**json.loads(_query(1).model_dump_json()), "schema_version": 99}))
    with pytest.raises(RecordFileError, match="upgrade ragaudit"):
        list(read_jsonl(path, QueryRecord))


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path: Path) -> None:
    path = tmp_path / "dataset.jsonl"
    write_jsonl_atomic(path, [_query(1)])
    before = path.read_bytes()

    def broken():
        yield _query(2)
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_jsonl_atomic(path, broken())
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["dataset.jsonl"]  # no temp file left


def test_appender_cuts_a_torn_last_line_and_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "responses.jsonl"
    with JsonlAppender(path) as out:
        out.append(_query(1))
        out.append(_query(2))
    # A kill in the middle of a write leaves half a line without its newline.
    with path.open("a") as handle:
        handle.write(_query(3).model_dump_json()[:25])
    assert [r.query for r in read_jsonl(path, QueryRecord)] == ["question 1?", "question 2?"]
    with JsonlAppender(path) as out:
        out.append(_query(4))
    assert [r.query for r in read_jsonl(path, QueryRecord)] == [
        "question 1?",
        "question 2?",
        "question 4?",
    ]


def test_a_torn_line_in_the_middle_is_still_an_error(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1\n{"b": 2}\n')
    with pytest.raises(RecordFileError, match=":1: not valid JSON"):
        list(read_jsonl(path, QueryRecord))


def test_parquet_export_keeps_every_row_and_nested_fields(tmp_path: Path) -> None:
    queries = [_query(i) for i in range(4)] + [_query(7, [1, "mixed", None])]
    assert export_parquet(queries, tmp_path / "dataset.parquet") == 5
    table = pq.read_table(tmp_path / "dataset.parquet")
    assert table.num_rows == 5
    assert table.column("query").to_pylist() == [q.query for q in queries]
    assert table.column("gold_ids").to_pylist()[0] == ["doc0"]
    reference = json.loads(table.column("reference").to_pylist()[4])
    assert reference["values"] == [1, "mixed", None]


def test_atomic_write_text_creates_parents(tmp_path: Path) -> None:
    atomic_write_text(tmp_path / "a" / "b" / "c.txt", "hi")
    assert (tmp_path / "a" / "b" / "c.txt").read_text() == "hi"
