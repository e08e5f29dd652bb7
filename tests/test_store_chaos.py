"""Chaos over the store: random sequences of the user's steps (generate, run, rerun,
repeat, judge, re-judge, analyze, export, report) on one small run, in process. After each
step the figures a user can read are checked against an independent count over the raw
JSON Lines (never against the analysis code): a summary the manifest calls current says
what the records say, a reader either gives the records' figures or refuses in one line,
and a failed step leaves summary.json as it was.

A few dozen seeded sequences run in ``make test`` (about a minute on two cores); set
RAGAUDIT_CHAOS=300 (and ``-m slow``) for a few hundred."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import random
import shutil
import warnings
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

import ragaudit as ra
from ragaudit.errors import RunNotice, UserError
from ragaudit.records.io import read_jsonl
from ragaudit.records.models import QueryRecord, ResponseRecord
from ragaudit.rundir import RunDir
from ragaudit.store.manifest import open_manifest

SYSTEMS = ("a", "b")
BEHAVIOURS = ("good", "broken", "half")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example's templates and a small dataset (3 groups a template), copied by each
    sequence."""
    root = tmp_path_factory.mktemp("chaos-base")
    project = ra.Project.example(root=root, progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    project.generate(unverified=True, max_groups_per_template=3)
    return root


def _answerer(behaviour: str, truth: dict[str, str], repeat_flips: bool) -> Callable[..., str]:
    def answer(question: str, repeat: int = 0) -> str:
        right = truth.get(question, "no idea")
        if behaviour == "good":
            return right
        if behaviour == "broken":
            return "I don't know."
        digest = int(hashlib.sha256(question.encode()).hexdigest(), 16)
        if repeat_flips:
            digest += repeat
        return right if digest % 2 == 0 else "I don't know."

    return answer


# -- the independent count -----------------------------------------------------------------


def _lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Truth:
    """What the raw JSON Lines say: per system and variant, right answers of those judged;
    per system, the mean pass rate over repeats; and whether any verdict is stale (it
    judged another answer or reference than the run holds now)."""

    def __init__(self, run: RunDir) -> None:
        queries = {q["query_id"]: q for q in _lines(run.dataset)}
        references = {q.query_id: q.reference.digest for q in read_jsonl(run.dataset, QueryRecord)}
        self.stale: list[str] = []
        self.accuracy: dict[str, dict[str, float]] = {}
        self.pass_rate: dict[str, float] = {}
        self.counts: dict[str, tuple[int, int]] = {}
        for path in sorted(run.responses_dir.glob("*.jsonl")):
            system = path.stem
            responses = {r.query_id: r.digest for r in read_jsonl(path, ResponseRecord)}
            judged = _lines(run.judgements(system))
            for j in judged:
                if (
                    j.get("response_digest")
                    and responses.get(j["query_id"]) != j["response_digest"]
                ):
                    self.stale.append(f"{system}: {j['query_id']} judged another answer")
                if (
                    j.get("reference_digest")
                    and j["query_id"] in references
                    and references[j["query_id"]] != j["reference_digest"]
                ):
                    self.stale.append(f"{system}: {j['query_id']} another reference")
            counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            first: dict[str, bool] = {}
            for j in judged:
                if j["query_id"] not in queries or j["correct"] is None:
                    continue
                variant = queries[j["query_id"]]["variant"]
                counts[variant][0] += bool(j["correct"])
                counts[variant][1] += 1
                first[j["query_id"]] = bool(j["correct"])
            if counts:
                self.accuracy[system] = {v: k / n for v, (k, n) in counts.items()}
                self.counts[system] = (
                    sum(k for k, _ in counts.values()),
                    sum(n for _, n in counts.values()),
                )
            repeats = _lines(run.repeat_judgements(system))
            asked = {
                (r["query_id"], r["repeat"]): r["digest"]
                for r in (
                    {"digest": x.digest, "query_id": x.query_id, "repeat": x.repeat}
                    for x in _repeat_responses(run, system)
                )
            }
            for r in repeats:
                if (
                    r.get("response_digest")
                    and asked.get((r["query_id"], r["repeat"])) != r["response_digest"]
                ):
                    self.stale.append(f"{system}: repeat {r['repeat']} of {r['query_id']}")
            if repeats and first:
                rates: dict[str, list[bool]] = {q: [c] for q, c in first.items()}
                for r in repeats:
                    if r["query_id"] in rates and r["correct"] is not None:
                        rates[r["query_id"]].append(bool(r["correct"]))
                values = [sum(v) / len(v) for v in rates.values()]
                self.pass_rate[system] = sum(values) / len(values)


def _repeat_responses(run: RunDir, system: str) -> list:
    from ragaudit.records.models import RepeatResponse

    path = run.repeat_responses(system)
    return list(read_jsonl(path, RepeatResponse)) if path.exists() else []


def _summary_says(data: dict) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    accuracy = {
        system: {
            variant: figures["accuracy"]["value"]
            for variant, figures in systems["variants"].items()
            if figures["accuracy"]["n"]
        }
        for system, systems in data["systems"].items()
    }
    stability = {
        system: figures["mean_pass_rate"]["value"]
        for system, figures in (data.get("stability") or {}).items()
    }
    return accuracy, stability


def _agrees(data: dict, truth: Truth, where: str) -> None:
    accuracy, stability = _summary_says(data)
    expected = {s: v for s, v in truth.accuracy.items()}
    assert accuracy.keys() == expected.keys(), f"{where}: systems {accuracy} vs {expected}"
    for system, variants in expected.items():
        for variant, value in variants.items():
            got = accuracy[system].get(variant)
            assert got == pytest.approx(value), f"{where}: {system}/{variant} {got} vs {value}"
    for system, value in truth.pass_rate.items():
        got = stability.get(system)
        assert got == pytest.approx(value), f"{where}: {system} pass rate {got} vs {value}"
    assert set(stability) <= set(truth.pass_rate), f"{where}: stability of {set(stability)}"


# -- one sequence ------------------------------------------------------------------------------


def _sequence(base: Path, folder: Path, seed: int, steps: int = 9) -> list[str]:
    rng = random.Random(seed)
    shutil.copytree(base, folder)
    project = ra.Project.example(root=folder, progress="none")
    run = RunDir(project.run_dir)
    done: list[str] = []
    closed = False

    def truth_now() -> dict[str, str]:
        return {q.query: q.reference.display for q in read_jsonl(run.dataset, QueryRecord)}

    # Every sequence starts from an analyzed run, so that its steps change one.
    start = ["run", "judge", "analyze"]
    for i in range(steps + len(start)):
        step = (
            start[i]
            if i < len(start)
            else rng.choices(
                ["run", "judge", "analyze", "export", "report", "generate"],
                weights=[5, 4, 3, 2, 2, 1],
            )[0]
        )
        summary_before = run.summary.read_bytes() if run.summary.exists() else None
        truth = Truth(run)
        label = step
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RunNotice)
                if step == "run":
                    system = rng.choice(SYSTEMS)
                    behaviour = rng.choice(BEHAVIOURS)
                    rerun = rng.random() < 0.5
                    repeat = rng.choice([None, None, 2, 3])
                    label = f"run {system} {behaviour} rerun={rerun} repeat={repeat}"
                    fn = _answerer(behaviour, truth_now(), repeat_flips=rng.random() < 0.5)
                    project.run([ra.system(fn, name=system)], rerun=rerun, repeat=repeat)
                elif step == "judge":
                    if rng.random() < 0.25:
                        closed = not closed
                    only = rng.choice([None, None, [rng.choice(SYSTEMS)]])
                    label = f"judge systems={only} closed_domain={closed}"
                    project.judge(llm=None, systems=only, closed_domain=closed)
                elif step == "analyze":
                    project.analyze()
                elif step == "export":
                    out = folder / f"export-{len(done)}"
                    project.export_tables(out, fmt="csv")
                elif step == "report":
                    project.report()
                else:
                    seed_now = rng.choice([0, 1])
                    label = f"generate seed={seed_now}"
                    project.generate(unverified=True, max_groups_per_template=3, seed=seed_now)
        except UserError as exc:
            done.append(f"{label} -> refused: {exc}")
            if step in ("analyze", "export", "report"):
                # Refused only where the records cannot be read as current, or (export,
                # report) where no analysis was ever asked for.
                never = summary_before is None and step != "analyze"
                assert truth.stale or never or not any(run.judgements_dir.glob("*.jsonl")), (
                    f"{done}: refused though no verdict is stale"
                )
            now = run.summary.read_bytes() if run.summary.exists() else None
            assert now == summary_before, f"{done}: a failed step rewrote summary.json"
            continue
        done.append(label)
        truth = Truth(run)
        if step in ("analyze", "export", "report"):
            assert not truth.stale, f"{done}: a reader gave figures of stale verdicts"
            _agrees(json.loads(run.summary.read_text()), truth, f"{done}")
        if step == "export":
            _exported_agree(folder / f"export-{len(done) - 1}", truth, done)
        if run.summary.exists() and open_manifest(run).check("summary").current:
            assert not truth.stale, f"{done}: a current summary over stale verdicts"
            _agrees(json.loads(run.summary.read_text()), truth, f"{done} (current summary)")
    return done


def _exported_agree(out: Path, truth: Truth, done: list[str]) -> None:
    rows = list(csv.DictReader((out / "figures.csv").open()))
    got = {
        (r["system"], r["variant"]): float(r["value"])
        for r in rows
        if r["metric"] == "accuracy" and r["value"] != "" and int(r["n"])
    }
    expected = {(s, v): x for s, vs in truth.accuracy.items() for v, x in vs.items()}
    assert got == pytest.approx(expected), f"{done}: figures.csv"
    # The answer table exported beside them holds the same verdicts.
    answers = list(csv.DictReader((out / "answers.csv").open()))
    for system, (right, judged) in truth.counts.items():
        mine = [
            r
            for r in answers
            if r["system"] == system
            and r["correct"] in ("True", "False")
            and r.get("repeat") in (None, "", "0")  # the first asking: its judgements file
        ]
        assert (sum(r["correct"] == "True" for r in mine), len(mine)) == (right, judged), (
            f"{done}: answers.csv of {system}"
        )


CHAOS = int(os.environ.get("RAGAUDIT_CHAOS", "0") or 0)


@pytest.mark.parametrize("seed", range(24))
def test_random_sequences_of_steps_never_show_an_older_figure(
    base: Path, tmp_path: Path, seed: int
) -> None:
    _sequence(base, tmp_path / "run", seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1000, 1000 + CHAOS))
def test_many_more_sequences(base: Path, tmp_path: Path, seed: int) -> None:
    """RAGAUDIT_CHAOS=300 pytest -m slow tests/test_store_chaos.py: 300 more sequences of
    12 steps (none without the variable)."""
    _sequence(base, tmp_path / "run", seed, steps=12)
