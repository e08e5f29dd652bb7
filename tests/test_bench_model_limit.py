"""The model-limit benchmark's arithmetic: the prompt rate between measured lengths and the
fraction of the limit a step reaches (issue 40). No model is loaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmarks.bench_model_limit import Limit, read_steps, step_fractions, uncounted_steps

from ragaudit.llm.usage import StepUsage

# 100 tokens in 1 s, 1,000 tokens in 4 s; 20 generated tokens/s.
LIMIT = Limit(prompt=((1000, 250.0), (100, 100.0)), generation=20.0)


def test_prompt_rate_interpolates_the_call_time_between_measured_lengths() -> None:
    # Halfway: 2.5 s for 550 tokens, not the mean of the two rates (175).
    assert LIMIT.prompt_rate(550) == pytest.approx(220.0)
    assert LIMIT.prompt_rate(100) == pytest.approx(100.0)
    assert LIMIT.prompt_rate(1000) == pytest.approx(250.0)


def test_prompt_rate_outside_the_measured_lengths_is_the_nearest_one() -> None:
    assert LIMIT.prompt_rate(40) == pytest.approx(100.0)
    assert LIMIT.prompt_rate(2000) == pytest.approx(250.0)


def test_ideal_time_takes_the_prompt_rate_at_the_mean_prompt_length() -> None:
    # 4 calls of 550 prompt tokens (2.5 s each) and 40 completion tokens in all (2 s).
    assert LIMIT.ideal_seconds(4, 2200, 40) == pytest.approx(12.0)
    assert LIMIT.ideal_seconds(0, 0, 0) == 0.0


def _judge() -> StepUsage:
    return StepUsage(
        calls=4, prompt_tokens=2200, completion_tokens=40, wall_seconds=24.0, llm_seconds=16.0
    )


def test_step_fraction_is_ideal_over_wall_and_skips_steps_without_calls() -> None:
    steps = {"judge": _judge(), "cached": StepUsage(calls=0, cache_hits=9, wall_seconds=0.5)}
    best = Limit(prompt=LIMIT.prompt, generation=40.0)
    rows = step_fractions(steps, LIMIT, best, uncounted={"judge"})
    assert list(rows) == ["judge"]
    judge = rows["judge"]
    assert judge["ideal_s"] == 12.0
    assert judge["fraction_of_limit"] == 0.5
    assert judge["fraction_in_calls"] == 0.75
    assert judge["fraction_of_best"] == pytest.approx(11.0 / 24.0, abs=1e-3)
    assert judge["prompt_tokens_per_call"] == 550
    # Cached prompt tokens unknown: the bracket's lower end counts the writing only (2 s).
    assert judge["cached_prompt_tokens"] is None
    assert judge["fraction_generation_only"] == pytest.approx(2 / 24, abs=1e-3)


def test_cached_prompt_tokens_when_recorded_are_not_processed() -> None:
    judge = _judge()
    judge.cached_prompt_tokens = 1800
    row = step_fractions({"judge": judge}, LIMIT)["judge"]
    # 400 tokens processed, 100 per call (1 s each), and 40 written (2 s).
    assert row["ideal_s"] == 6.0
    assert row["fraction_of_limit"] == 0.25
    assert "fraction_generation_only" not in row


def _usage(folder: Path, calls: int) -> Path:
    folder.mkdir(parents=True)
    path = folder / "usage.json"
    path.write_text(json.dumps({"steps": {"judge": {"calls": calls}}}))
    return path


def test_read_steps_names_each_step_by_its_run(tmp_path: Path) -> None:
    steps = read_steps([_usage(tmp_path / "demo", 3)])
    assert list(steps) == ["demo/judge"]
    assert steps["demo/judge"].calls == 3
    with pytest.raises(FileNotFoundError):
        read_steps([tmp_path / "missing.json"])


def test_steps_whose_file_does_not_count_cached_tokens_are_told_apart(tmp_path: Path) -> None:
    old = _usage(tmp_path / "old", 3)
    new = tmp_path / "new" / "usage.json"
    new.parent.mkdir()
    step = {"calls": 2, "prompt_tokens": 200, "cached_prompt_tokens": 150}
    new.write_text(json.dumps({"steps": {"judge": step}}))
    assert uncounted_steps([old, new]) == {"old/judge"}
    steps = read_steps([old, new])
    assert steps["new/judge"].cached_prompt_tokens == 150
    assert steps["old/judge"].cached_prompt_tokens == 0


def test_read_steps_keeps_apart_runs_of_the_same_name(tmp_path: Path) -> None:
    a = _usage(tmp_path / "a" / "runs" / "demo", 1)
    b = _usage(tmp_path / "b" / "runs" / "demo", 2)
    steps = read_steps([a, b])
    assert {name: usage.calls for name, usage in steps.items()} == {
        "a/runs/demo/judge": 1,
        "b/runs/demo/judge": 2,
    }
