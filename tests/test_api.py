"""ragaudit from Python (``import ragaudit as ra``): the journey on the example database
with no LLM at all, one run folder used from both doors, ``ra.evaluate`` against
``analyze --neutral``, a scripted LLM, locks, async twins and calls from inside a running
event loop."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ragaudit as ra
from ragaudit.analysis.summary import Summary
from ragaudit.errors import UserError
from tests.support.cli import ragaudit


def _right_when_even(dataset: ra.Dataset):  # type: ignore[no-untyped-def]
    """A system built to answer right exactly the questions of even length (it knows the
    references) and to refuse the others."""
    truth = {q.query: q.reference.display for q in dataset}

    def mine(question: str) -> ra.Answer:
        if len(question) % 2 == 0:
            return ra.Answer(truth[question], retrieved_ids=["doc-1"])
        return ra.Answer("I don't know.", retrieved_ids=[])

    return mine


def _project(root: Path) -> ra.Project:
    return ra.Project.example(root=root, progress="none")


def test_the_journey_without_an_llm_gives_what_the_system_was_built_to_answer(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path)
    sql = project.templates_sql()
    assert sql.written and len(sql.templates) > 5
    text = project.templates_text(verify=False)
    assert all(c.proposed for c in text.counts.values())
    dataset = project.generate(unverified=True)
    frame = dataset.to_pandas()
    assert len(frame) == len(dataset) > 100
    assert list(frame.columns[:6]) == [
        "query_id", "group_id", "variant", "query", "reference", "source"
    ]  # fmt: skip
    stats = project.run([ra.system(_right_when_even(dataset), name="mine")])
    assert stats["mine"].asked == len(dataset) and stats["mine"].errors == 0
    report = project.judge(llm=None)
    assert set(report.systems["mine"].methods) <= {
        "match:exact",
        "match:contains",
        "match:refusal",
        "match:set",
    }
    answers = project.answers().to_pandas()
    assert len(answers) == len(dataset)
    built = answers["query"].map(lambda q: len(q) % 2 == 0)
    assert (answers["correct"] == built).all()  # to the query
    assert set(answers.loc[~built, "where"]) <= {"knowledge base", "retriever", "language model"}
    assert set(answers.loc[built, "where"]) == {"correct"}
    summary = project.analyze()
    assert isinstance(summary, Summary)
    figures = summary.to_pandas()
    columns = ["system", "variant", "metric", "value", "low", "high", "k", "n"]
    assert list(figures.columns) == columns
    accuracy = figures[(figures.metric == "accuracy")].set_index("variant")
    for variant, rows in answers.groupby("variant"):
        assert accuracy.loc[variant, "k"] == rows["correct"].sum()
        assert accuracy.loc[variant, "n"] == len(rows)
    # The command line's analyze on the same folder gives the same figures.
    (tmp_path / "ragaudit.yaml").write_text("database: {url: example}\n")
    result = ragaudit("analyze", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    written = Summary.model_validate_json((project.run_dir / "summary.json").read_text())
    assert written.systems == summary.systems
    assert written.comparisons == summary.comparisons
    assert project.report().exists()


CALLABLE = """
import json
from pathlib import Path

import functools

@functools.cache  # read once, whole, before any thread looks a question up
def truth():
    lines = Path("runs/default/dataset.jsonl").read_text().splitlines()
    rows = (json.loads(line) for line in lines)
    return {row["query"]: row["reference"]["display"] for row in rows}

def answer(question):
    return truth()[question] if len(question) % 2 == 0 else "I don't know."
"""

CONFIG = """\
database: {url: example}
systems:
  - {name: mine, kind: callable, target: "mysystem:answer"}
"""


def _records(path: Path) -> list[dict[str, object]]:
    """A record file's lines without their timing, in query order (answers come back in
    the order they finish)."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        row.pop("latency_s", None)
    return sorted(rows, key=lambda row: str(row["query_id"]))


def test_one_run_folder_from_both_doors(tmp_path: Path) -> None:
    """The same journey from the command line and from Python gives identical files, and
    each door continues what the other started."""
    cli, py = tmp_path / "cli", tmp_path / "py"
    for folder in (cli, py):
        folder.mkdir()
        (folder / "ragaudit.yaml").write_text(CONFIG)
        (folder / "mysystem.py").write_text(textwrap.dedent(CALLABLE))
    for args in (
        ["templates", "sql"],
        ["templates", "text", "--no-verify"],
        ["generate", "--unverified"],
        ["run"],
        ["judge", "--no-llm"],
    ):
        result = ragaudit(*args, cwd=cli)
        assert result.returncode == 0, (args, result.stderr)
    # Python: generate, then the command line runs and judges, then Python analyzes.
    project = ra.Project(py / "ragaudit.yaml", root=py, progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    project.generate(unverified=True)
    for args in (["run"], ["judge", "--no-llm"]):
        result = ragaudit(*args, cwd=py)
        assert result.returncode == 0, (args, result.stderr)
    summary = project.analyze()
    a, b = cli / "runs" / "default", py / "runs" / "default"
    for name in ("templates/sql.yaml", "templates/text.yaml", "dataset.jsonl"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    for name in ("responses/mine.jsonl", "judgements/mine.jsonl"):
        assert _records(a / name) == _records(b / name), name
    result = ragaudit("analyze", cwd=cli)
    assert result.returncode == 0, result.stderr
    assert Summary.model_validate_json((a / "summary.json").read_text()).systems == summary.systems
    # Both doors record their steps in the same provenance.
    steps = [s["step"] for s in json.loads((b / "provenance.json").read_text())["steps"]]
    assert steps == ["templates sql", "templates text", "generate", "run", "judge", "analyze"]


def _logged_rows(n: int = 200) -> tuple[list[dict[str, object]], list[bool]]:
    """Logs of a system: every question asked in two wordings (a group), answered right
    or wrong in ways the matchers decide."""
    rows, truth = [], []
    for i in range(n):
        group, right = i // 2, (i * 7) % 5 != 0
        city = f"City{group}"
        rows.append(
            {
                "question": f"Where is office {group}? (wording {i % 2})",
                "answer": f"It is in {city}." if right else "I don't know.",
                "reference": city,
                "group": f"g{group}",
                "variant": f"w{i % 2}",
                "retrieved_ids": [f"d{group}"] if i % 3 else [],
                "gold_ids": [f"d{group}"],
            }
        )
        truth.append(right)
    return rows, truth


def test_evaluate_gives_the_verdicts_and_figures_of_analyze_neutral(tmp_path: Path) -> None:
    rows, truth = _logged_rows()
    result = ra.evaluate(rows, out=tmp_path / "eval")
    assert [j.correct for j in result.judgements] == truth
    frame = result.to_pandas()
    assert len(frame) == 200 and frame["correct"].tolist() == truth
    # The same rows, with the same verdicts, as a neutral file through the command line.
    neutral = tmp_path / "neutral.jsonl"
    lines = [
        {
            "query_id": q.query_id,
            "group_id": q.group_id,
            "variant": q.variant,
            "query": q.query,
            "reference": q.reference.display,
            "response": r.response,
            "retrieved_ids": r.retrieved_ids,
            "gold_ids": q.gold_ids,
            "gold_kind": "states",
            "correct": ok,
        }
        for q, r, ok in zip(result.queries, result.responses, truth, strict=True)
    ]
    neutral.write_text("".join(json.dumps(line) + "\n" for line in lines))
    cli = tmp_path / "cli"
    cli.mkdir()
    out = ragaudit("analyze", "--neutral", str(neutral), cwd=cli)
    assert out.returncode == 0, out.stderr
    written = Summary.model_validate_json((cli / "runs/default/summary.json").read_text())
    assert written.systems == result.summary.systems
    # A DataFrame works as well as dicts.
    import pandas as pd

    again = ra.evaluate(pd.DataFrame(rows))
    assert [j.correct for j in again.judgements] == truth


def test_evaluate_without_out_leaves_no_folder_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A notebook calls evaluate in a loop: each call's files are gone with it, the figures
    # stay; with ``out`` they are kept where asked.
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    rows = [{"question": "Capital of France?", "answer": "Paris.", "reference": "Paris"}]
    result = ra.evaluate(rows)
    assert result.summary is not None and result.accuracy == 1.0
    assert result.neutral is None
    assert list(scratch.iterdir()) == []
    kept = ra.evaluate(rows, out=tmp_path / "kept")
    assert kept.neutral == tmp_path / "kept" / "neutral.jsonl" and kept.neutral.is_file()


def test_evaluate_refuses_rows_it_cannot_judge() -> None:
    with pytest.raises(UserError, match="row 2: answer: missing"):
        ra.evaluate([{"question": "a?", "answer": "b", "reference": "b"}, {"question": "c?"}])
    with pytest.raises(UserError, match=r"row 2: no reference: .* need an LLM"):
        ra.evaluate([{"question": "a?", "answer": "b", "reference": "b"}, {"question": "c?",
                     "answer": "d"}])  # fmt: skip
    with pytest.raises(UserError, match="row 1: question"):
        ra.evaluate([{"question": "", "answer": "b", "reference": "b"}])


def test_a_scripted_llm_judges_and_its_broken_replies_are_refused() -> None:
    rows = [
        {"question": "Who leads the Oslo office?", "answer": "Kari does.", "reference": "K. Berg"},
        {"question": "Who leads the Rome office?", "answer": "Marco.", "reference": "M. Rossi"},
    ]
    verdicts = {"Oslo": '{"verdict": "Correct", "reason": "same person"}', "Rome": "not JSON"}

    def reply(messages):  # type: ignore[no-untyped-def]
        asked = messages[1]["content"]  # the question; a re-ask adds turns after it
        return next(v for k, v in verdicts.items() if k in asked)

    llm = ra.llm.Scripted(responder=reply)
    result = ra.evaluate(rows, llm=llm)
    oslo, rome = result.judgements
    assert (oslo.correct, oslo.method) == (True, "llm")
    assert rome.correct is None and rome.method == "judge-failed"  # re-asked, then refused
    assert len(llm.requests) > 2  # the malformed reply was asked again
    assert result.methods == {"llm": 1, "judge-failed": 1}


def test_the_command_line_cannot_use_a_scripted_llm(tmp_path: Path) -> None:
    (tmp_path / "ragaudit.yaml").write_text("llm: {model: 'scripted:mine'}\n")
    result = ragaudit("doctor", cwd=tmp_path)
    assert result.returncode != 0
    assert "scripted LLM lives in the Python process" in result.stderr + result.stdout
    assert "Traceback" not in result.stderr


def test_a_run_held_by_another_process_is_refused_with_one_line(tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.templates_sql()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from ragaudit.rundir import RunDir; "
            f"RunDir(Path({str(project.run_dir)!r})).lock('run'); print('held', flush=True); "
            "time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match="is in use by ragaudit run"):
            project.templates_text(verify=False)
    finally:
        holder.kill()
        holder.wait()
    # Released: the step goes through, and Python holds the run only while a step writes.
    project.templates_text(verify=False)
    result = ragaudit("templates", "check", "--example", cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_steps_work_inside_a_running_event_loop_and_have_async_twins(tmp_path: Path) -> None:
    project = _project(tmp_path)

    async def notebook_cell() -> tuple[int, int]:
        project.templates_sql()  # a plain call while a loop runs, as in Jupyter
        project.templates_text(verify=False)
        dataset = await project.agenerate(unverified=True)
        return len(dataset), len(project.dataset())

    made, read = asyncio.run(notebook_cell())
    assert made == read > 0


def test_progress_goes_through_one_protocol(tmp_path: Path) -> None:
    seen: dict[str, list[int]] = {}

    class Recorder:
        def task(self, description: str, total: int | None = None):  # type: ignore[no-untyped-def]
            counts = seen.setdefault(description, [])

            class Task:
                def start(self, total: int | None, done: int = 0) -> None:
                    counts.append(-1)

                def advance(self, n: int = 1) -> None:
                    counts.append(n)

            return Task()

        def close(self) -> None:
            seen.setdefault("closed", [])

    project = ra.Project.example(root=tmp_path, progress=Recorder())
    project.templates_sql()
    project.templates_text(verify=False)
    dataset = project.generate(unverified=True)
    project.run([ra.system(_right_when_even(dataset), name="mine")])
    templates = len(project.templates_sql().templates)
    assert sum(seen["generating"]) == templates
    assert sum(n for n in seen["mine"] if n > 0) == len(dataset)
    assert "closed" in seen


def test_the_public_names_are_what_all_says() -> None:
    for name in ra.__all__:
        assert getattr(ra, name) is not None
    with pytest.raises(AttributeError):
        _ = ra.NotAThing  # type: ignore[attr-defined]


# -- what a new notebook user ran into -----------------------------------------------------


def test_evaluate_reads_rows_as_a_user_writes_them() -> None:
    import pandas as pd

    frame = pd.DataFrame(
        {
            "question": ["a?", "b?", "c?", "d?"],
            "answer": ["x", "y", "x", "y"],
            "reference": ["x"] * 4,
            "group": [0, 0, 1, 1],
        }
    )
    result = ra.evaluate(frame)
    assert result.to_pandas()["group_id"].tolist() == ["0", "0", "1", "1"]  # 0 is a group
    dated = ra.evaluate(
        [{"question": "When?", "answer": "On 2024-03-01.", "reference": pd.Timestamp("2024-03-01")}]
    )
    assert dated.judgements[0].correct is True


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"question": "q?", "answers": "Paris", "reference": "Paris"}, "row 1: answer: missing"),
        ({"question": "q?", "answer": "x", "reference": "  "}, "row 1: reference: empty text"),
        (
            {"question": "q?", "answer": "x", "reference": "x", "retrieved_ids": "doc1"},
            "retrieved_ids: expected a list of strings",
        ),
        (
            {"question": "q?", "answer": "x", "reference": "x", "gold_ids": "doc1"},
            "gold_ids: expected a list of strings",
        ),
    ],
)
def test_evaluate_refuses_what_it_would_misread(row: dict[str, object], message: str) -> None:
    with pytest.raises(UserError, match=message):
        ra.evaluate([row])


def test_a_nan_reference_is_no_reference_at_both_doors_and_infinity_is_refused() -> None:
    """A NaN is a missing value, in a dict row as in a DataFrame's cell: a row whose
    reference is NaN has none (it is scored reference-free, which needs an LLM), never
    judged ``unmatched`` against the number NaN and counted wrong."""
    import pandas as pd

    rows = [
        {"question": "a?", "answer": "x", "reference": "x"},
        {"question": "b?", "answer": "y", "reference": float("nan")},
    ]
    for given in (rows, pd.DataFrame(rows)):
        with pytest.raises(UserError, match=r"^row 2: no reference: .* need an LLM"):
            ra.evaluate(given)
    # With an LLM, the row is scored as a row without a reference, and is not judged.
    llm = ra.llm.Scripted(responder=lambda messages: '{"statements": []}')
    for given in (rows, pd.DataFrame(rows)):
        result = ra.evaluate(given, llm=llm, metrics=["faithfulness"])
        assert result.judgements[1] is None and result.methods == {"match:exact": 1}
        assert pd.isna(result.to_pandas().reference[1])
    for bad, shown in ((float("inf"), "inf"), (-float("inf"), "-inf"), ([1, float("nan")], "nan")):
        with pytest.raises(UserError) as info:
            ra.evaluate([{"question": "a?", "answer": "x", "reference": bad}])
        assert str(info.value).startswith(f"row 1: reference: {shown} is not a finite number")
        assert "\n" not in str(info.value)


def test_evaluate_refuses_rows_that_are_not_dicts() -> None:
    with pytest.raises(UserError, match=r"^evaluate: rows: one dict is one row: give a list"):
        ra.evaluate({"question": "a?", "answer": "x", "reference": "x"})
    with pytest.raises(UserError, match=r"^row 2: expected a dict of fields .*, not str"):
        ra.evaluate([{"question": "a?", "answer": "x", "reference": "x"}, "b?"])
    with pytest.raises(UserError, match=r"^evaluate: system=5: expected a non-empty string"):
        ra.evaluate([{"question": "a?", "answer": "x", "reference": "x"}], system=5)  # type: ignore[arg-type]  # a wrong type on purpose


def _two_systems() -> list[dict[str, object]]:
    """The same four questions answered by two systems: ``a`` right every time, ``b``
    wrong every time; a query id per question, shared by the two."""
    rows: list[dict[str, object]] = []
    for i in range(4):
        for system, answer in (("a", "Paris"), ("b", "Lyon")):
            rows.append(
                {
                    "query_id": f"x{i}",
                    "group": f"g{i % 2}",
                    "question": f"Capital, take {i}?",
                    "answer": answer,
                    "reference": "Paris",
                    "system": system,
                    "retrieved_ids": ["d1"],
                    "gold_ids": ["d1"],
                }
            )
    return rows


def test_one_accuracy_over_rows_of_several_systems_is_refused_and_each_has_its_own() -> None:
    """Pooled, a system right every time and one wrong every time made 0.5, said of
    neither: the figure is refused, naming the systems and where each one's is."""
    result = ra.evaluate(_two_systems())
    with pytest.raises(
        UserError,
        match=r"^evaluate: the rows hold 2 systems \(a, b\): .*result\.systems\['a'\]\.accuracy",
    ):
        _ = result.accuracy
    assert list(result.systems) == ["a", "b"] and len(result.systems) == 2
    a, b = result.systems["a"], result.systems["b"]
    assert (a.accuracy, b.accuracy) == (1.0, 0.0)
    assert [r.system for r in a.responses] == ["a"] * 4 and len(b.queries) == 4
    assert (a.methods, b.methods) == ({"match:exact": 4}, {"unmatched": 4})
    # Each one's figures, computed from its rows alone, are the pooled run's for it.
    assert a.summary is not None and list(a.summary.systems) == ["a"]
    assert b.summary is not None and b.summary.systems["b"] == result.summary.systems["b"]
    assert result.to_pandas()["system"].tolist() == ["a", "b"] * 4
    with pytest.raises(KeyError, match="the rows hold the systems a, b"):
        result.systems["c"]
    # One system's rows alone: its accuracy, and the system of rows that name none.
    alone = ra.evaluate([r for r in _two_systems() if r["system"] == "a"])
    assert alone.accuracy == 1.0 and alone.systems["a"] is alone
    unnamed = ra.evaluate([{**r, "system": None} for r in _two_systems()[:1]], system="mine")
    assert list(unnamed.systems) == ["mine"] and unnamed.accuracy == 1.0


def test_a_query_id_is_one_question_whichever_system_answered_it() -> None:
    rows = _two_systems()
    with pytest.raises(UserError, match=r"^row 2: query_id 'x0' is given to another question"):
        ra.evaluate([rows[0], {**rows[1], "question": "Another?"}])
    with pytest.raises(UserError, match=r"^row 3: query_id 'x0' appears twice for system 'a'"):
        ra.evaluate([rows[0], rows[1], rows[0]])


def test_systems_of_your_own_are_checked_when_made() -> None:
    with pytest.raises(TypeError, match="a single id is"):
        ra.Answer("x", retrieved_ids="clients.md")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="a lambda has none"):
        ra.system(lambda q: q)
    with pytest.raises(UserError, match="is not callable"):
        ra.system("my_rag")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="responses file's name"):
        ra.system(lambda q: q, name="my/rag")


def test_run_and_judge_name_what_is_missing_and_an_llm_judges_what_matchers_left(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path)
    project.templates_sql()
    project.templates_text(verify=False)
    dataset = project.generate(unverified=True)
    with pytest.raises(UserError, match=r"no system named 'nosuch' \(ragaudit.yaml declares none"):
        project.run(["nosuch"])
    truth = {q.query: q.reference.display for q in dataset}

    def hedging(question: str) -> str:  # the matchers cannot decide "maybe X"s
        return f"maybe {truth[question][::-1]}" if len(question) % 3 == 0 else truth[question]

    stats = project.run([hedging])  # a plain function is a system too
    assert stats["hedging"].asked == len(dataset)
    with pytest.raises(UserError, match="no responses of system 'nosuch'"):
        project.judge(llm=None, systems=["nosuch"])
    first = project.judge(llm=None).systems["hedging"]
    unmatched = first.methods.get("unmatched", 0)
    assert unmatched > 0
    llm = ra.llm.Scripted(default='{"verdict": "Incorrect", "reason": "not the answer"}')
    second = project.judge(llm=llm).systems["hedging"]
    assert second.judged_now == unmatched and second.methods == {"llm": unmatched}
    assert len(llm.requests) == unmatched


def test_where_and_the_summary_blame_agree_and_no_retrieval_means_no_retrieval_figures(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path)
    project.templates_sql()
    project.templates_text(verify=False)
    dataset = project.generate(unverified=True)
    truth = {q.query: q.reference.display for q in dataset}

    def some(question: str) -> ra.Answer:  # retrieves only for short questions
        right = len(question) % 2 == 0
        ids = ["doc-a"] if len(question) < 40 else []
        return ra.Answer(truth[question] if right else "I don't know.", retrieved_ids=ids)

    def plain(question: str) -> str:  # retrieves nothing at all
        return truth[question] if len(question) % 2 == 0 else "I don't know."

    def flaky(question: str) -> str:  # fails on a third of the questions
        if len(question) % 3 == 0:
            raise TimeoutError("the backend timed out")
        return truth[question]

    project.run([ra.system(some, name="some"), ra.system(plain, name="plain"), ra.system(flaky)])
    project.judge(llm=None)
    summary = project.analyze()
    answers = project.answers().to_pandas()
    # A failed call is a system error, not the knowledge base's (D11 of a notebook user).
    failed = answers[answers.system == "flaky"]
    crashed = failed["query"].map(lambda q: len(q) % 3 == 0)
    assert crashed.any() and set(failed.loc[crashed, "where"]) == {"system error"}
    assert set(failed.loc[~crashed, "where"]) == {"correct"}
    for name, figures in summary.systems.items():
        for variant, v in figures.variants.items():
            assert v.blame is not None
            rows = answers[(answers.system == name) & (answers.variant == variant)]
            counted = rows["where"].value_counts().to_dict()
            assert {k: n for k, n in v.blame.counts.items() if n} == counted, (name, variant)
    assert all(v.accuracy_retrieval is None for v in summary.systems["plain"].variants.values())
    # An undefined figure is missing (<NA>), never NaN: "plain" has no retrieval figures,
    # and its gap variant's robustness may be undefined.
    values = summary.to_pandas()["value"].tolist()
    assert not any(isinstance(v, float) and v != v for v in values)


def test_two_steps_of_one_process_cannot_write_one_run_at_once(tmp_path: Path) -> None:
    import threading

    from ragaudit.rundir import RunDir

    project = _project(tmp_path)
    project.templates_sql()
    held, release = threading.Event(), threading.Event()

    def other_step() -> None:
        with RunDir(project.run_dir).holding("judge"):
            held.set()
            release.wait(30)

    thread = threading.Thread(target=other_step)
    thread.start()
    try:
        assert held.wait(30)
        with pytest.raises(UserError, match="in use by ragaudit judge in this process"):
            project.templates_text(verify=False)
    finally:
        release.set()
        thread.join()
    project.templates_text(verify=False)  # free again


def test_importing_any_api_module_leaves_the_public_names_alone() -> None:
    """A module named as the function it defines (api/evaluate.py) replaced ra.evaluate by
    the module once imported: "'module' object is not callable"."""
    import importlib
    import pkgutil
    import types

    import ragaudit.api

    for module in pkgutil.iter_modules(ragaudit.api.__path__):
        importlib.import_module(f"ragaudit.api.{module.name}")
    for name in ra.__all__:
        assert name == "llm" or not isinstance(getattr(ra, name), types.ModuleType), name
    for name in ragaudit.api.__all__:
        assert not isinstance(getattr(ragaudit.api, name), types.ModuleType), name


# -- what the second notebook user ran into ------------------------------------------------


def test_evaluate_works_inside_a_running_event_loop_and_has_an_async_twin() -> None:
    rows = [{"question": "Capital of France?", "answer": "Lyon.", "reference": "Paris"}]
    verdict = '{"verdict": "Incorrect", "reason": "another city"}'

    async def notebook_cell() -> tuple[bool | None, bool | None]:
        plain = ra.evaluate(rows, llm=ra.llm.Scripted(default=verdict))  # a loop is running
        twin = await ra.aevaluate(rows, llm=ra.llm.Scripted(default=verdict))
        return plain.judgements[0].correct, twin.judgements[0].correct

    assert asyncio.run(notebook_cell()) == (False, False)


def test_a_system_changed_under_its_name_is_asked_again_only_when_told(tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.templates_sql()
    project.templates_text(verify=False)
    dataset = project.generate(unverified=True)
    project.run([ra.system(lambda q: "I don't know.", name="rag")])
    project.judge(llm=None)
    assert not project.answers().to_pandas()["correct"].any()
    fixed = ra.system(_right_when_even(dataset), name="rag")
    kept = project.run([fixed])["rag"]
    assert kept.asked == 0 and kept.already_done == len(dataset)
    assert any("nothing was asked" in w and "rerun=True" in w for w in kept.warnings)
    again = project.run([fixed], rerun=True)["rag"]
    assert again.asked == len(dataset) and again.errors == 0 and not again.warnings
    project.judge(llm=None)  # the old verdicts are stale: the new answers are judged
    answers = project.answers().to_pandas()
    assert (answers["correct"] == answers["query"].map(lambda q: len(q) % 2 == 0)).all()


def test_the_gold_files_of_a_configuration_are_read_from_the_project_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "shop"
    root.mkdir()
    monkeypatch.chdir(tmp_path)  # not the project's folder
    for name in ("gold_rows", "gold_facts"):
        (root / "ragaudit.yaml").write_text(f"generate:\n  {name}: gold.jsonl\n")
        config = ra.Project(root=root, progress="none").config
        assert getattr(config.generate, name) == root / "gold.jsonl"


def test_answers_while_another_process_writes_the_run_say_so_and_store_nothing(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path)
    project.templates_sql()
    project.templates_text(verify=False)
    project.generate(unverified=True)
    project.run([ra.system(lambda q: "I don't know.", name="rag")])
    table = project.run_dir / "answers.parquet"
    table.unlink()
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from pathlib import Path
            from ragaudit.rundir import RunDir
            RunDir(Path({str(project.run_dir)!r})).lock("run")
            print("held", flush=True)
            sys.stdin.read()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.warns(UserWarning, match=r"being written by ragaudit run \(pid \d+\)"):
            frame = project.answers().to_pandas()
        assert len(frame) > 0 and not table.exists()
    finally:
        holder.communicate("")
    project.answers()  # the writer is gone: the table is stored again
    assert table.exists()


def test_a_candidate_run_asks_the_baselines_questions_and_the_gate_tells_them_apart(
    tmp_path: Path,
) -> None:
    baseline = _project(tmp_path)
    baseline.templates_sql()
    baseline.templates_text(verify=False)
    dataset = baseline.generate(unverified=True)
    good = ra.system(_right_when_even(dataset), name="rag")
    baseline.run([good])
    baseline.judge(llm=None)
    equal = ra.Project.example(root=tmp_path, run="equal", progress="none")
    assert len(equal.use_dataset(baseline)) == len(dataset)
    assert (equal.run_dir / "dataset.jsonl").read_bytes() == (
        baseline.run_dir / "dataset.jsonl"
    ).read_bytes()
    equal.run([good])
    equal.judge(llm=None)
    assert ra.gate(baseline, equal).verdict == "PASS"
    broken = ra.Project.example(root=tmp_path, run="broken", progress="none")
    broken.use_dataset(baseline.run_dir / "dataset.jsonl")
    broken.run([ra.system(lambda q: "I don't know.", name="rag")])
    broken.judge(llm=None)
    assert ra.gate(baseline, broken).verdict == "FAIL"
    with pytest.raises(AssertionError, match="FAIL"):
        ra.assert_no_regression(baseline, broken)
    # Its answers were to these questions: another dataset under them is refused.
    other = tmp_path / "other.jsonl"
    other.write_text((baseline.run_dir / "dataset.jsonl").read_text().split("\n", 1)[0] + "\n")
    with pytest.raises(ra.UserError, match="already has responses"):
        broken.use_dataset(other)
    with pytest.raises(ra.UserError, match="no such dataset file"):
        broken.use_dataset(tmp_path / "nowhere")


def test_evaluate_scores_rows_without_a_reference_with_the_reference_free_metrics() -> None:
    from tests.support.free_responder import free_reply

    paris = "Paris is the capital of France. It has two million inhabitants."
    lyon = "Lyon is a city on the Rhone."
    question = "What is the capital of France?"
    rows = [
        {"question": question, "answer": "Paris.", "reference": "Paris"},
        {"question": question, "answer": "Paris is the capital of France.",
         "contexts": [paris, lyon]},
        {"question": question, "answer": "Paris is the capital. Lyon has ten million people.",
         "contexts": [paris]},
        {"question": question, "answer": "Paris is the capital of France."},  # no contexts
    ]  # fmt: skip
    llm = ra.llm.Scripted(responder=lambda messages: free_reply({"messages": messages}))
    result = ra.evaluate(rows, llm=llm)
    assert result.judgements[0] is not None and result.judgements[0].correct is True
    assert result.judgements[1:] == [None, None, None]
    assert result.scores[0] is None and result.accuracy == 1.0
    assert result.summary is not None  # over the judged row
    frame = result.to_pandas()
    assert list(frame.columns[-3:]) == ["faithfulness", "answer_relevancy", "context_precision"]
    assert frame["faithfulness"].tolist()[1:3] == [1.0, 0.5]
    assert frame["context_precision"][1] == 1.0  # Paris (useful) ranked before Lyon
    unknown = result.scores[3]
    assert unknown is not None and unknown.metrics["faithfulness"].score is None
    assert "passage" in (unknown.metrics["faithfulness"].undefined or "")
    assert frame["faithfulness"].isna()[[0, 3]].all()  # missing, not NaN: nullable floats
    assert str(frame["faithfulness"].dtype) == "Float64"
    # Without an LLM nothing can score them: one line naming the first such row.
    with pytest.raises(ra.UserError, match=r"^row 2: no reference: .*need an LLM"):
        ra.evaluate(rows)
    with pytest.raises(ra.UserError, match="unknown reference-free metric 'fluency'"):
        ra.evaluate(rows, llm=llm, metrics=["fluency"])  # type: ignore[list-item]
    # Asked for by name, every row is scored, the judged one too.
    both = ra.evaluate(rows[:2], llm=llm, metrics=["faithfulness"])
    assert both.metrics == ("faithfulness",) and all(s is not None for s in both.scores)


def test_an_error_that_advises_a_command_names_the_python_call_too(tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.templates_sql()
    project.templates_text(verify=False)
    project.generate(unverified=True)
    with pytest.raises(ra.UserError) as caught:
        project.analyze()
    message = str(caught.value)
    # The command line's message, word for word, then what a Python caller does.
    assert message.startswith("nothing to analyze: no judgements in ")
    assert "run ragaudit judge" in message and message.endswith("(from Python: project.judge())")
    (tmp_path / "ragaudit.yaml").write_text("database: {url: example}\n")
    done = ragaudit("analyze", cwd=tmp_path)
    assert done.returncode != 0 and "from Python" not in done.stderr
    plain = message.split(" (from Python:")[0].replace(f"{tmp_path}/", "")
    assert " ".join(done.stderr.split()) == f"error: {plain}"


def test_init_from_python_writes_the_command_lines_file_and_keeps_an_existing_one(
    tmp_path: Path,
) -> None:
    """``ra.init`` is ``ragaudit init``: the same file, byte for byte; an existing file is
    refused from either door (Python's message names its keyword) and left as it was."""
    written = ra.init(tmp_path / "ragaudit.yaml")
    assert written == tmp_path / "ragaudit.yaml"
    assert ragaudit("init", "cli.yaml", cwd=tmp_path).returncode == 0
    assert written.read_bytes() == (tmp_path / "cli.yaml").read_bytes()
    assert ra.Project(written, root=tmp_path).config.database.url == "example"
    written.write_text("# mine\n")
    with pytest.raises(ra.UserError, match=r"already exists \(use force=True to overwrite it\)$"):
        ra.init(written)
    again = ragaudit("init", cwd=tmp_path)
    assert again.returncode == 2 and "use --force" in again.stderr
    assert written.read_text() == "# mine\n"
    ra.init(written, documents=True, force=True)
    assert ra.Project(written, root=tmp_path).config.database.url is None
    with pytest.raises(ra.UserError, match="is a folder"):
        ra.init(tmp_path, force=True)
