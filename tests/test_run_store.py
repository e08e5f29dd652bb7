"""The run store (issue 36): one typed reader per run file, the dataset read once while a
step holds it, and the joined answer table kept as answers.parquet beside the JSON Lines,
which stay the source of truth (a stale, missing or unreadable table is rebuilt, never
trusted)."""

from __future__ import annotations

import gc
import json
import os
import weakref
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ragaudit as ra
from ragaudit.api.tables import ANSWER_COLUMNS, Answers, read_answers
from ragaudit.errors import UserError
from ragaudit.frames import frame as build_frame
from ragaudit.records.io import RecordFileError, read_jsonl, write_jsonl_atomic
from ragaudit.records.models import (
    FreeScoreRecord,
    Judgement,
    MetricScore,
    QueryRecord,
    Reference,
    ResponseRecord,
)
from ragaudit.rundir import RunDir
from ragaudit.steps.analyze import run_analysis
from ragaudit.store.answers import (
    FINGERPRINT_KEY,
    fingerprint,
    read_answer_table,
    refresh_answer_table,
)
from ragaudit.store.files import read_documents_thresholds, read_drilldown, read_usage
from ragaudit.store.records import read_dataset
from tests.support.judged_runs import judged_run, verdicts

# -- typed reads -----------------------------------------------------------------------


def _query(n: int) -> QueryRecord:
    return QueryRecord(
        query_id=f"q{n}",
        group_id=f"g{n // 2}",
        variant="short",
        query=f"question {n}",
        reference=Reference.from_values([str(n)]),
    )


def _lines(path: Path, *lines: str) -> Path:
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_a_typed_read_keeps_every_message_and_skip_of_the_line_reader(tmp_path: Path) -> None:
    good = _query(1).model_dump_json()
    path = tmp_path / "dataset.jsonl"

    def error(*lines: str) -> str:
        with pytest.raises(RecordFileError) as caught:
            list(read_jsonl(_lines(path, *lines), QueryRecord))
        return str(caught.value)

    # A torn last line of an appended file is skipped; a byte order mark and escapes read.
    escaped = json.dumps(_query(2).model_dump(mode="json") | {"query": "caf\u00e9 ?"})
    read = list(
        read_jsonl(
            _lines(path, "\ufeff" + good + "\n", "\n", escaped + "\n", good[:20]), QueryRecord
        )
    )
    assert [q.query_id for q in read] == ["q1", "q2"] and read[1].query == "caf\u00e9 ?"
    assert error(good + "\n", "{not json}\n", good + "\n") == (
        f"{path}:2: not valid JSON: Expecting property name enclosed in double quotes"
    )
    extra = json.dumps(_query(3).model_dump(mode="json") | {"bogus": 1})
    assert error(good + "\n", extra + "\n") == f"{path}:2: bogus: unknown field"
    assert error('{"query_id": "q1"}\n') == f"{path}:1: group_id: Field required"
    assert error("[1, 2]\n") == f"{path}:1: expected a JSON object per line"
    lone = good.replace('"question 1"', '"\\ud800"')
    assert "not valid Unicode text" in error(lone + "\n") and f"{path}:1: query:" in error(
        lone + "\n"
    )


def test_the_dataset_is_read_once_while_a_step_holds_it_and_again_when_it_changes(
    tmp_path: Path,
) -> None:
    run = RunDir(tmp_path)
    write_jsonl_atomic(run.dataset, [_query(n) for n in range(4)])
    first = read_dataset(run)
    assert read_dataset(run) is first  # the same records for every reader of the step
    assert first.by_id is first.by_id and first.by_id["q2"].query == "question 2"
    with run.dataset.open("a", encoding="utf-8") as handle:  # appended: read again
        handle.write(_query(4).model_dump_json() + "\n")
    appended = read_dataset(run)
    assert appended is not first and len(appended) == 5 and "q4" in appended.by_id
    write_jsonl_atomic(run.dataset, list(appended))  # rewritten whole, same bytes: a new file
    assert read_dataset(run) is not appended
    # Nothing keeps a dataset once its readers let it go.
    held = weakref.ref(read_dataset(run))
    del first, appended
    gc.collect()
    assert held() is None


# -- the answer table --------------------------------------------------------------------


def _run(tmp_path: Path) -> RunDir:
    """A judged run of two systems, with reference-free scores for one (some undefined)."""
    root = judged_run(tmp_path / "run", {"rag": verdicts(1, 0.7, 10), "bm25": verdicts(2, 0.5, 10)})
    run = RunDir(root)
    write_jsonl_atomic(
        run.scores("rag"),
        [
            FreeScoreRecord(
                query_id=f"q{g}-{w}",
                system="rag",
                metrics={
                    "faithfulness": MetricScore(score=0.25 * w)
                    if w
                    else MetricScore(undefined="no claims")
                },
            )
            for g in range(10)
            for w in range(4)
        ],
    )
    broken = [
        ResponseRecord(query_id=f"q{g}-0", system="broken", error="timeout") for g in range(3)
    ]
    write_jsonl_atomic(run.responses("broken"), broken)
    write_jsonl_atomic(
        run.judgements("broken"),
        [
            Judgement(query_id=r.query_id, system="broken", correct=False, method="error")
            for r in broken
        ],
    )
    return run


def _one_dict_per_row(answers: Answers) -> pd.DataFrame:
    """The frame as one dict per answer gives it (how to_pandas built it before the
    table was kept as Parquet), through the one builder of every frame: the dtypes to
    keep."""
    metrics = sorted({m for r in answers.rows for m in r.scores})
    rows = []
    for r in answers.rows:
        row = asdict(r)
        scores = row.pop("scores")
        rows.append(row | {m: scores.get(m) for m in metrics})
    return build_frame(rows, ANSWER_COLUMNS + metrics)


def _expected(run: RunDir) -> pd.DataFrame:
    """What the answer table should say, from the JSON Lines themselves."""
    rows = []
    for system in ("bm25", "broken", "rag"):
        judged = {j.query_id: j for j in read_jsonl(run.judgements(system), Judgement)}
        scored = (
            {s.query_id: s for s in read_jsonl(run.scores(system), FreeScoreRecord)}
            if run.scores(system).exists()
            else {}
        )
        for r in read_jsonl(run.responses(system), ResponseRecord):
            s = scored.get(r.query_id)
            rows.append(
                {
                    "system": system,
                    "query_id": r.query_id,
                    "answer": r.response,
                    "correct": judged[r.query_id].correct,
                    "faithfulness": s.metrics["faithfulness"].score if s else None,
                }
            )
    return build_frame(rows)


def test_a_missing_table_is_built_from_the_json_lines_and_written(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert not run.answers_table.exists()
    frame = read_answers(run).to_pandas()
    pd.testing.assert_frame_equal(frame[list(_expected(run).columns)], _expected(run))
    assert run.answers_table.is_file()
    stored = pq.read_schema(run.answers_table).metadata[FINGERPRINT_KEY].decode()
    assert stored == fingerprint(run)
    modules = {"correct", "knowledge base", "retriever", "language model", "system error"}
    assert set(frame["where"]) <= modules
    # A failed call is the system's error in the blame, not a module's (main's blame source).
    failed = frame["error"].notna() & frame["where"].notna()
    assert failed.any() and (frame.loc[failed, "where"] == "system error").all()
    assert (frame.loc[frame["correct"], "where"] == "correct").all()


def test_a_fresh_table_is_read_from_its_file_and_gives_the_same_frame(tmp_path: Path) -> None:
    run = _run(tmp_path)
    built = read_answers(run)
    # The same frame from the file as from the build, down to the dtypes and the lists.
    again = read_answers(run)
    pd.testing.assert_frame_equal(again.to_pandas(), built.to_pandas())
    pd.testing.assert_frame_equal(again.to_pandas(), _one_dict_per_row(again))
    assert again.rows == built.rows
    failed = [r for r in again.rows if r.system == "broken"]
    assert failed and all(r.answer is None and r.error == "timeout" for r in failed)
    scores = {(r.system, r.query_id): r.scores for r in again.rows}
    assert scores["rag", "q0-0"] == {"faithfulness": None}  # undefined, not absent
    assert scores["rag", "q0-1"] == {"faithfulness": 0.25} and scores["bm25", "q0-1"] == {}
    # Read, not rebuilt: a table whose fingerprint matches is what the reader gets.
    table = pq.read_table(run.answers_table)
    answers = table.column("answer").to_pylist()
    answers[0] = "from the file"
    edited = table.set_column(table.schema.get_field_index("answer"), "answer", pa.array(answers))
    pq.write_table(edited.replace_schema_metadata(table.schema.metadata), run.answers_table)
    assert read_answers(run).rows[0].answer == "from the file"


def test_a_table_older_than_a_hand_edit_of_a_judgements_line_is_rebuilt(tmp_path: Path) -> None:
    run = _run(tmp_path)
    before = read_answers(run).to_pandas()
    path = run.judgements("rag")
    lines = path.read_text().splitlines(keepends=True)
    first = json.loads(lines[0])
    first["correct"] = not first["correct"]
    lines[0] = json.dumps(first) + "\n"
    path.write_text("".join(lines))
    after = read_answers(run).to_pandas()
    row = (after["system"] == "rag") & (after["query_id"] == first["query_id"])
    assert after.loc[row, "correct"].item() is first["correct"]
    assert (after["correct"] != before["correct"]).sum() == 1
    pd.testing.assert_frame_equal(after[list(_expected(run).columns)], _expected(run))
    stored = pq.read_schema(run.answers_table).metadata[FINGERPRINT_KEY].decode()
    assert stored == fingerprint(run)  # written again, for the files as they are now


def test_an_edit_that_keeps_the_size_is_seen_by_its_time(tmp_path: Path) -> None:
    run = _run(tmp_path)
    read_answers(run)
    path = run.responses("bm25")
    text = path.read_text()
    assert '"response":"yes"' in text
    with path.open("r+", encoding="utf-8") as handle:  # in place: same inode, same size
        handle.write(text.replace('"response":"yes"', '"response":"YES"', 1))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a later edit's time
    assert "YES" in read_answers(run).to_pandas()["answer"].tolist()


def test_added_removed_and_broken_files_make_the_table_stale(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert read_answers(run).to_pandas()["faithfulness"].notna().sum() == 30
    run.scores("rag").unlink()  # a source removed
    assert "faithfulness" not in read_answers(run).to_pandas().columns
    write_jsonl_atomic(  # a system added
        run.responses("new"), [ResponseRecord(query_id="q0-0", system="new", response="0")]
    )
    assert "new" in set(read_answers(run).to_pandas()["system"])
    run.answers_table.write_bytes(b"PAR1 not a table")  # unreadable: built again
    assert len(read_answers(run)) == 84
    assert pq.read_table(run.answers_table).num_rows == 84


def test_a_step_that_cannot_join_the_files_removes_the_table(tmp_path: Path) -> None:
    run = _run(tmp_path)
    refresh_answer_table(run)
    assert run.answers_table.is_file()
    copy = run.judgements_dir / "rag-old.jsonl"
    copy.write_bytes(run.judgements("rag").read_bytes())
    refresh_answer_table(run)  # the step's own work stands; the table is gone
    assert not run.answers_table.exists()
    with pytest.raises(UserError, match="two judgements of query q0-0 by rag") as caught:
        read_answer_table(run)
    assert "\n" not in str(caught.value) and str(copy) in str(caught.value)


def test_run_and_judge_write_the_table_they_changed(tmp_path: Path) -> None:
    project = ra.Project.example(root=tmp_path, progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    dataset = project.generate(unverified=True)
    truth = {q.query: q.reference.display for q in dataset}
    run = RunDir(project.run_dir)

    def half(question: str) -> str:
        return truth[question] if len(question) % 2 else "I don't know."

    project.run([ra.system(half, name="half")], limit=30)
    table = pq.read_table(run.answers_table)
    assert table.num_rows == 30 and table.column("correct").null_count == 30
    assert table.schema.metadata[FINGERPRINT_KEY].decode() == fingerprint(run)
    project.judge(llm=None)
    table = pq.read_table(run.answers_table)
    assert table.schema.metadata[FINGERPRINT_KEY].decode() == fingerprint(run)
    judged = {j.query_id: j.correct for j in read_jsonl(run.judgements("half"), Judgement)}
    assert (
        dict(
            zip(
                table.column("query_id").to_pylist(),
                table.column("correct").to_pylist(),
                strict=True,
            )
        )
        == judged
    )
    assert set(judged.values()) == {True, False}


# -- the other files ---------------------------------------------------------------------


def test_drilldown_lines_are_read_as_rows_and_a_bad_one_is_named(tmp_path: Path) -> None:
    run = RunDir(judged_run(tmp_path / "run", {"rag": verdicts(3, 0.6, 20)}))
    run_analysis(run)
    rows = list(read_drilldown(run))
    assert len(rows) == 80 and {r["system"] for r in rows} == {"rag"}
    assert all(r["query"] == f"question {r['group_id'][1:]} {r['variant'][1:]}" for r in rows)
    wanted = frozenset({"gap"})
    assert [r for r in rows if r["tag"] == "gap"] == list(read_drilldown(run, tags=wanted))
    lines = run.drilldown.read_text().splitlines()
    lines[5] = json.dumps(json.loads(lines[5]) | {"correct": "maybe"})
    run.drilldown.write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordFileError, match=rf"^{run.drilldown}:6: correct: "):
        list(read_drilldown(run))


def test_usage_and_documents_stats_are_read_typed(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    assert read_usage(run) is None
    run.usage.write_text('{"steps": {"judge": {"calls": "many"}}}')
    with pytest.raises(RecordFileError, match=r"usage.json: steps.judge.calls: "):
        read_usage(run)
    run.usage.write_text("{")
    with pytest.raises(RecordFileError, match=r"usage.json:1: not valid JSON"):
        read_usage(run)
    assert read_documents_thresholds(run) == {}
    run.documents_stats.write_text(json.dumps({"options": {"thresholds": {"clarity": "4"}}}))
    assert read_documents_thresholds(run) == {"clarity": 4}
    run.documents_stats.write_text('{"options": []}')  # not what it should be: the defaults
    assert read_documents_thresholds(run) == {}


def test_a_run_without_responses_has_an_empty_table_and_no_dataset_is_an_error(
    tmp_path: Path,
) -> None:
    run = RunDir(tmp_path)
    with pytest.raises(UserError, match=r"no dataset at .*: generate one first"):
        read_answers(run)
    write_jsonl_atomic(run.dataset, [_query(n) for n in range(3)])
    frame = read_answers(run).to_pandas()
    assert frame.empty and list(frame.columns) == ANSWER_COLUMNS
    assert pq.read_table(run.answers_table).num_rows == 0
