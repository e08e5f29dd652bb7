"""Repeats (issue 38, part 2): every query asked N times (``run --repeat N``), each asking
judged, and how stable each answer is. The acceptance test: a scripted system that answers
right with a known probability per query gives pass rates within their binomial intervals
and flags exactly the queries built to be flaky; the report tells the groups that fail in
some wordings from those that fail in some repeats; the gate pairs by group with the
repeats inside it."""

from __future__ import annotations

import asyncio
import json
import random
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

import ragaudit as ra
from ragaudit.analysis.gate import GateReport
from ragaudit.analysis.repeats import Attempt, clustered_mean, stability
from ragaudit.errors import UserError
from ragaudit.llm.backends.scripted import Scripted
from ragaudit.llm.client import LLMClient
from ragaudit.llm.types import GenerationParams, Messages, RawCompletion
from ragaudit.records.io import read_jsonl, write_jsonl_atomic
from ragaudit.records.models import (
    QueryRecord,
    Reference,
    RepeatJudgement,
    RepeatResponse,
    ResponseRecord,
)
from ragaudit.report.build import write_report
from ragaudit.rundir import RunDir
from ragaudit.systems.base import Hit
from ragaudit.systems.builtin import RAGSystem
from tests.support.cli import ragaudit

VARIANTS = ("short", "long")
REPEATS = 20


def _plan() -> dict[str, float]:
    """Query id -> the probability the scripted system answers it right: ten groups right
    every time, ten wrong every time, five whose short wording is right and long wording
    wrong every time (they fail in some wordings), and twelve flaky ones (right with
    probability 0.3, 0.5 or 0.7 in both wordings: they fail in some repeats)."""
    plan: dict[str, float] = {}
    for g in range(37):
        for variant in VARIANTS:
            if g < 10:
                p = 1.0
            elif g < 20:
                p = 0.0
            elif g < 25:
                p = 1.0 if variant == "short" else 0.0
            else:
                p = (0.3, 0.5, 0.7)[g % 3]
            plan[f"g{g}-{variant}"] = p
    return plan


PLAN = _plan()
FLAKY = {q for q, p in PLAN.items() if 0 < p < 1}


def _dataset(path: Path) -> list[QueryRecord]:
    queries = [
        QueryRecord(
            query_id=qid,
            group_id=qid.split("-")[0],
            variant=qid.split("-")[1],
            query=f"How many staff does office {qid.split('-')[0][1:]} have? ({qid})",
            reference=Reference.from_values([100 + int(qid.split("-")[0][1:])]),
        )
        for qid in PLAN
    ]
    write_jsonl_atomic(path, queries)
    return queries


def _scripted(queries: list[QueryRecord], *, salt: str = "", drop: float = 0.0):  # type: ignore[no-untyped-def]
    """A ra.system callable that answers each query right with its planned probability
    (less ``drop`` for the flaky ones), seeded by the query, the repeat and ``salt``: a
    repeat is a fresh draw, the same one on a rerun. It records every (question, repeat)
    it was asked."""
    by_text = {q.query: q for q in queries}
    asked: list[tuple[str, int]] = []
    lock = threading.Lock()

    def scripted(question: str, repeat: int) -> ra.Answer:
        q = by_text[question]
        with lock:
            asked.append((q.query_id, repeat))
        p = PLAN[q.query_id]
        if 0 < p < 1:
            p -= drop
        right = random.Random(f"{salt}:{q.query_id}:{repeat}").random() < p
        return ra.Answer(q.reference.display if right else "I don't know.")

    return scripted, asked


def _project(root: Path, run: str = "default") -> tuple[ra.Project, list[QueryRecord]]:
    queries = _dataset(root / "questions.jsonl")
    project = ra.Project(root=root, run=run, progress="none")
    project.use_dataset(root / "questions.jsonl")
    return project, queries


def test_a_scripted_system_gives_binomial_pass_rates_and_flags_exactly_its_flaky_queries(
    tmp_path: Path,
) -> None:
    project, queries = _project(tmp_path)
    fn, asked = _scripted(queries)
    stats = project.run([ra.system(fn, name="scripted")], repeat=REPEATS)["scripted"]
    assert stats.repeats == REPEATS and stats.asked == REPEATS * len(queries)
    # Every query asked once per repeat, each told which repeat it is.
    assert sorted(asked) == sorted((q, r) for q in PLAN for r in range(REPEATS))
    run = RunDir(project.run_dir)
    assert len(list(read_jsonl(run.responses("scripted"), ResponseRecord))) == len(queries)
    again = list(read_jsonl(run.repeat_responses("scripted"), RepeatResponse))
    assert sorted({r.repeat for r in again}) == list(range(1, REPEATS))
    assert len(again) == (REPEATS - 1) * len(queries)

    judged = project.judge(llm=None).systems["scripted"]
    assert judged.repeats is not None and judged.repeats.judged_now == len(again)
    # Two distinct answers per query at most: almost every repeat takes a verdict given.
    assert judged.repeats.reused >= len(again) - len(queries)
    summary = project.analyze()
    figures = summary.stability["scripted"]
    assert (figures.repeats, figures.min_repeats, figures.queries) == (REPEATS, REPEATS, 74)
    assert figures.answers == REPEATS * len(queries)

    rates = project.answers().to_pandas().groupby("query_id")["correct"].agg(["sum", "count"])
    assert (rates["count"] == REPEATS).all()
    for qid, p in PLAN.items():
        low, high = binom.interval(0.999, REPEATS, p)
        assert low <= rates.loc[qid, "sum"] <= high, (qid, p, rates.loc[qid, "sum"])
    # Flagged: exactly the queries built to be flaky, and none of the others.
    flagged = {qid for qid, row in rates.iterrows() if 0 < row["sum"] < REPEATS}
    assert flagged == FLAKY
    assert (figures.flaky.k, figures.flaky.n) == (len(FLAKY), len(PLAN))
    listed = figures.flaky_queries
    assert len(listed) == 20 and {q.query_id for q in listed} <= FLAKY
    assert all(q.flaky and q.passes == rates.loc[q.query_id, "sum"] for q in listed)
    # The nearest half first.
    assert [abs(q.pass_rate - 0.5) for q in listed] == sorted(
        abs(q.pass_rate - 0.5) for q in listed
    )
    # The mean pass rate's interval holds the planned mean.
    mean = figures.mean_pass_rate
    assert mean.ci95[0] <= float(np.mean(list(PLAN.values()))) <= mean.ci95[1]
    assert mean.value == pytest.approx(rates["sum"].sum() / (REPEATS * len(PLAN)))
    # The groups: wordings apart from repeats.
    assert figures.groups == {
        "always right": 10,
        "always wrong": 10,
        "fails in some wordings": 5,
        "fails in some repeats": 12,
    }
    assert figures.variants["short"].groups["fails in some wordings"] == 0  # one wording each
    assert (figures.always_right, figures.always_wrong) == (25, 25)
    # The figures of the first asking are those of a run without repeats.
    first = project.answers().to_pandas().query("repeat == 0")
    for variant, rows in first.groupby("variant"):
        assert summary.systems["scripted"].variants[variant].accuracy.k == rows["correct"].sum()
        assert summary.systems["scripted"].variants[variant].n_queries == len(rows)
    frame = summary.stability_to_pandas()
    assert list(frame["variant"]) == ["all", "long", "short"]
    assert frame.iloc[0]["flaky_k"] == len(FLAKY)


def test_the_report_and_summary_tell_wordings_from_repeats(tmp_path: Path) -> None:
    project, queries = _project(tmp_path)
    fn, _ = _scripted(queries)
    project.run([ra.system(fn, name="scripted")], repeat=4)
    project.judge(llm=None)
    project.analyze()
    run = RunDir(project.run_dir)
    markdown = run.summary_md.read_text()
    assert "How stable the answers are" in markdown
    assert "| scripted | all | 4 | 74 |" in markdown
    assert "fails in some wordings | fails in some repeats |" in markdown
    assert "| scripted | all | 37 | 10 | 10 | 5 | " in markdown
    html = write_report(run).read_text()
    assert 'id="stability"' in html and "fails in some repeats" in html
    # A flaky query by its text.
    flaky = json.loads(run.summary.read_text())["stability"]["scripted"]["flaky_queries"][0]
    assert next(q.query for q in queries if q.query_id == flaky["query_id"]) in html


def test_repeats_not_yet_judged_are_named_in_a_warning(tmp_path: Path) -> None:
    project, queries = _project(tmp_path)
    fn, _ = _scripted(queries)
    system = ra.system(fn, name="scripted")
    project.run([system], repeat=2)
    project.judge(llm=None)
    project.run([system], repeat=3)  # the third asking of every query, not judged yet
    summary = project.analyze()
    assert summary.stability["scripted"].repeats == 2
    assert (
        f"scripted: {len(queries)} of its {2 * len(queries)} repeats have no judgement, so its "
        "stability figures leave them out: run ragaudit judge --system scripted"
    ) in summary.warnings


def test_a_run_without_repeats_writes_and_shows_none(tmp_path: Path) -> None:
    project, queries = _project(tmp_path)
    fn, asked = _scripted(queries)
    project.run([ra.system(fn, name="scripted")])
    assert {r for _, r in asked} == {0}
    run = RunDir(project.run_dir)
    assert not run.repeats_dir.exists()
    report = project.judge(llm=None)
    assert report.systems["scripted"].repeats is None
    assert "repeats" not in json.loads(run.judge_stats.read_text())["scripted"]
    summary = project.analyze()
    assert summary.stability == {} and "How stable" not in run.summary_md.read_text()
    assert set(project.answers().to_pandas()["repeat"]) == {0}


def test_repeats_resume_and_a_rerun_starts_them_over(tmp_path: Path) -> None:
    project, queries = _project(tmp_path)
    fn, asked = _scripted(queries)
    system = ra.system(fn, name="scripted")
    project.run([system], repeat=3)
    project.judge(llm=None)
    asked.clear()
    more = project.run([system], repeat=5)["scripted"]
    # Only the repeats 3 and 4 are asked: the others are on file.
    assert sorted(asked) == sorted((q, r) for q in PLAN for r in (3, 4))
    assert more.asked == 2 * len(queries) and more.already_done == 3 * len(queries)
    judged = project.judge(llm=None).systems["scripted"].repeats
    # Only the answers a query had not given in its first three askings are judged.
    run = RunDir(project.run_dir)
    firsts = read_jsonl(run.responses("scripted"), ResponseRecord)
    repeats = read_jsonl(run.repeat_responses("scripted"), RepeatResponse)
    answers = [(r.query_id, 0, r.response) for r in firsts]
    answers += [(r.query_id, r.repeat, r.response) for r in repeats]
    before = {(q, a) for q, r, a in answers if r < 3}
    new = {(q, a) for q, r, a in answers if r >= 3} - before
    assert judged is not None and judged.judged_now == 2 * len(queries)
    assert judged.judged_now - judged.reused == len(new) > 0
    verdicts = list(read_jsonl(run.repeat_judgements("scripted"), RepeatJudgement))
    assert sorted((j.query_id, j.repeat) for j in verdicts) == sorted(
        (q, r) for q in PLAN for r in range(1, 5)
    )
    assert project.analyze().stability["scripted"].repeats == 5
    asked.clear()
    project.run([system], repeat=2, rerun=True)
    assert sorted(asked) == sorted((q, r) for q in PLAN for r in (0, 1))
    assert {r.repeat for r in read_jsonl(run.repeat_responses("scripted"), RepeatResponse)} == {1}


def test_a_repeat_answered_anew_is_not_scored_by_its_old_verdict(tmp_path: Path) -> None:
    project, queries = _project(tmp_path)
    fn, _ = _scripted(queries)
    project.run([ra.system(fn, name="scripted")], repeat=3)
    project.judge(llm=None)
    run = RunDir(project.run_dir)
    path = run.repeat_responses("scripted")
    repeats = list(read_jsonl(path, RepeatResponse))
    changed = repeats[5].model_copy(update={"response": "something else entirely"})
    write_jsonl_atomic(path, [*repeats[:5], changed, *repeats[6:]])
    which = rf"query {changed.query_id}, repeat {changed.repeat} first"
    with pytest.raises(UserError, match=r"repeats/judgements/scripted.jsonl: 1 judgement\(s\) .*"
                       + which):  # fmt: skip
        project.analyze()
    with pytest.raises(UserError, match=which):
        project.answers()
    again = project.judge(llm=None).systems["scripted"].repeats
    assert again is not None and (again.judged_now, again.reused) == (1, 0)
    assert project.analyze().stability["scripted"].repeats == 3


def test_identical_answers_are_judged_once(tmp_path: Path) -> None:
    """The LLM judge is asked once per distinct answer of a query, whatever the repeats."""
    project, queries = _project(tmp_path)
    truth = {q.query: q.reference.display for q in queries}

    def hedging(question: str, repeat: int) -> str:  # no matcher decides these: the LLM does
        hedge = "maybe" if repeat % 2 == 0 else "perhaps"
        return f"{hedge} {int(truth[question]) + 1000}"

    project.run([ra.system(hedging, name="hedging")], repeat=6)
    llm = Scripted(default='{"verdict": "Correct", "reason": "it says the value"}')
    report = project.judge(llm=llm).systems["hedging"]
    # Two wordings of the answer per query: the first asking's, then one more.
    assert len(llm.requests) == 2 * len(queries)
    assert report.repeats is not None
    assert report.repeats.judged_now == 5 * len(queries)
    assert report.repeats.reused == 4 * len(queries)
    assert report.repeats.methods == {"llm": 5 * len(queries)}
    summary = project.analyze()
    assert summary.stability["hedging"].flaky.k == 0


class _Recording(Scripted):
    """The scripted LLM, recording the sampling parameters of every request."""

    def __init__(self) -> None:
        super().__init__(default="Paris")
        self.params: list[GenerationParams] = []

    async def acomplete(self, messages: Messages, params: GenerationParams) -> RawCompletion:
        self.params.append(params)
        return await super().acomplete(messages, params)


class _One:
    name = "one"

    def retrieve(self, query: str, k: int = 1) -> list[Hit]:
        return [Hit("d1", 1.0, "Paris is the capital.")]


def test_a_built_in_system_seeds_each_repeat_and_keeps_the_first_asking_as_it_was() -> None:
    asyncio.run(_seeded())


async def _seeded() -> None:
    backend = _Recording()
    llm = LLMClient(backend, default_params=GenerationParams(temperature=0.7, seed=5))
    system = RAGSystem("rag", retriever=_One(), k=1, generator="concise", llm=llm)
    query = QueryRecord(
        query_id="q1", group_id="g1", variant="short", query="Capital?",
        reference=Reference.from_values(["Paris"]),
    )  # fmt: skip
    plain = await system.answer(query)
    for repeat in range(3):
        await system.answer(query, repeat=repeat)
    await system.aclose()
    seeds = [(p.seed, p.sample_index, p.temperature) for p in backend.params]
    assert seeds == [(5, 0, 0.7), (5, 0, 0.7), (6, 1, 0.7), (7, 2, 0.7)]
    assert plain.response == "Paris"


def test_the_command_line_asks_repeats_from_the_option_or_the_system(tmp_path: Path) -> None:
    _dataset(tmp_path / "questions.jsonl")
    (tmp_path / "mine.py").write_text(
        textwrap.dedent(
            """\
            def answer(question, repeat):
                return "I don't know." if repeat % 2 else "no idea"
            """
        )
    )
    (tmp_path / "ragaudit.yaml").write_text(
        "systems:\n"
        "  - {name: twice, kind: callable, target: 'mine:answer', repeat: 2}\n"
        "  - {name: once, kind: callable, target: 'mine:answer'}\n"
    )
    project = ra.Project(tmp_path / "ragaudit.yaml", root=tmp_path, progress="none")
    project.use_dataset(tmp_path / "questions.jsonl")
    result = ragaudit("run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    run = RunDir(project.run_dir)
    assert run.repeat_responses("twice").exists() and not run.repeat_responses("once").exists()
    result = ragaudit("run", "--repeat", "3", "--system", "once", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "repeats" in result.stdout and " 3 " in result.stdout
    repeats = {r.repeat for r in read_jsonl(run.repeat_responses("once"), RepeatResponse)}
    assert repeats == {1, 2}
    stats = json.loads(run.run_stats.read_text())
    assert stats["once"]["repeats"] == 3
    judged = ragaudit("judge", "--no-llm", cwd=tmp_path)
    assert judged.returncode == 0, judged.stderr
    # Two distinct answers per query: the repeats take the verdicts of the first askings.
    n = len(PLAN)
    assert f"  repeats: judged {2 * n} now ({2 * n - n} took the verdict of" in judged.stdout
    result = ragaudit("analyze", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "How stable the answers are" in result.stdout
    judged = list(read_jsonl(run.repeat_judgements("once"), RepeatJudgement))
    assert len(judged) == 2 * len(PLAN) and all(j.correct is False for j in judged)
    result = ragaudit("run", "--repeat", "0", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_two_records_of_one_repeat_are_refused_with_one_line(tmp_path: Path) -> None:
    project, queries = _project(tmp_path)
    fn, _ = _scripted(queries)
    project.run([ra.system(fn, name="scripted")], repeat=2)
    run = RunDir(project.run_dir)
    path = run.repeat_responses("scripted")
    path.write_text(path.read_text() + path.read_text().splitlines()[0] + "\n")
    with pytest.raises(UserError, match=r"two responses of query \S+ \(repeat 1\) by scripted"):
        project.judge(llm=None)
    with pytest.raises(ValueError, match="repeat"):
        RepeatResponse(query_id="q", system="s", repeat=0)


def test_the_mean_pass_rate_interval_holds_the_true_mean_as_often_as_it_says() -> None:
    """Calibration: over many simulated runs of a system on questions drawn from one
    population (groups of two wordings that share a pass probability, drawn from a known
    mix), the 95% interval of the mean pass rate covers the population's mean about 95%
    of the time: the wordings of a group are not counted as independent evidence."""
    rng = np.random.default_rng(0)
    mix = [0.0, 0.2, 0.5, 0.9, 1.0]
    covered = 0
    trials = 400
    for _ in range(trials):
        probabilities = rng.choice(mix, size=40)
        attempts = [
            Attempt("rag", f"q{g}-{w}", f"g{g}", "short", r, bool(rng.random() < p))
            for g, p in enumerate(probabilities)
            for w in range(2)
            for r in range(5)
        ]
        low, high = stability(attempts)["rag"].mean_pass_rate.ci95
        covered += low <= float(np.mean(mix)) <= high
    assert 0.91 <= covered / trials <= 0.98


def test_an_interval_over_groups_is_wider_than_one_over_queries_that_share_their_fact() -> None:
    groups = {f"g{i}": [1.0, 1.0, 1.0] if i % 2 else [0.0, 0.0, 0.0] for i in range(20)}
    clustered = clustered_mean(groups)
    values = [v for members in groups.values() for v in members]
    flat = clustered_mean({f"q{i}": [v] for i, v in enumerate(values)})
    assert clustered.value == flat.value == 0.5
    width = clustered.ci95[1] - clustered.ci95[0]
    assert width > 1.5 * (flat.ci95[1] - flat.ci95[0])


def _gate(tmp_path: Path, *, drop: float, repeat: int) -> GateReport:
    base, queries = _project(tmp_path, run="base")
    fn, _ = _scripted(queries, salt="base")
    base.run([ra.system(fn, name="scripted")], repeat=repeat)
    base.judge(llm=None)
    cand = ra.Project(root=tmp_path, run=f"cand-{drop}-{repeat}", progress="none")
    cand.use_dataset(base)
    worse, _ = _scripted(queries, salt=f"cand-{repeat}", drop=drop)
    cand.run([ra.system(worse, name="scripted")], repeat=repeat)
    cand.judge(llm=None)
    return ra.gate(base, cand)


def test_the_gate_pairs_groups_with_their_repeats_so_a_flaky_system_needs_a_real_drop(
    tmp_path: Path,
) -> None:
    same = _gate(tmp_path, drop=0.0, repeat=REPEATS)
    assert same.verdict == "PASS"
    (check,) = same.checks
    assert (check.n_groups, check.n_queries) == (37, 74)
    assert any("up to 20 on the baseline, 20 on the candidate" in note for note in same.notes)
    # The flaky queries right 0.25 less often: a real drop, found through the repeats.
    worse = _gate(tmp_path, drop=0.25, repeat=REPEATS)
    assert worse.verdict == "FAIL", worse.checks[0].sentence()
    assert worse.checks[0].difference == pytest.approx(-0.25 * 24 / 74, abs=0.03)
    # Asked once, the same drop is lost in the flakiness.
    once = _gate(tmp_path / "once", drop=0.25, repeat=1)
    assert once.verdict == "PASS" and not any("repeat" in note for note in once.notes)
