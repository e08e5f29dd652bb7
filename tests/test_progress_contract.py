"""Every step that reports progress takes one contract, ``progress: Progress`` (issue 36):
the tasks each step opens on it, named as the user saw them before, and the keyword
itself, pinned so that a new step does not bring back a callback shape of its own."""

from __future__ import annotations

import inspect
import io
from pathlib import Path

import ragaudit as ra
from ragaudit.progress import SILENT, LogProgress, Progress, Task, show_counts, with_prefix
from ragaudit.rundir import RunDir


class Recorder:
    """A display that writes down what the steps did to it."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, int | None]] = []
        self.closed = False

    def task(self, description: str, total: int | None = None) -> Task:
        events = self.events
        events.append((description, "task", total))

        class _Task:
            def start(self, total: int | None, done: int = 0) -> None:
                events.append((description, "start", total))

            def advance(self, n: int = 1) -> None:
                events.append((description, "advance", n))

        return _Task()

    def close(self) -> None:
        self.closed = True

    def advanced(self, description: str) -> int:
        """Units done on the tasks named ``description``."""
        return sum(n or 0 for d, kind, n in self.events if d == description and kind == "advance")


def test_every_step_that_reports_progress_takes_the_one_progress_keyword() -> None:
    from ragaudit.steps import (
        demo,
        documents,
        generate,
        judge,
        label,
        reference_free,
        run,
        scan,
        templates,
        world,
    )

    steps = [
        run.run_systems,
        judge.judge_run,
        reference_free.score_run,
        label.label_run,
        scan.scan_run,
        world.make_world,
        world.rewrite_world,
        templates.make_text_templates,
        templates.verify_text_templates,
        templates.verify_texts,
        generate.generate_dataset,
        documents.generate_from_documents,
        demo.demo_dataset,
        demo.run_demo,
    ]
    hooks = {"on_start", "on_done", "on_step", "on_template", "on_candidate"}
    for step in steps:
        parameters = inspect.signature(step).parameters
        progress = parameters["progress"]
        assert progress.kind is inspect.Parameter.KEYWORD_ONLY, step.__name__
        assert progress.annotation == "Progress" and progress.default is SILENT, step.__name__
        assert not hooks & set(parameters), f"{step.__name__}: {hooks & set(parameters)}"
        assert not [p for p in parameters if p.endswith("_hooks")], step.__name__


def test_a_prefix_names_the_tasks_of_a_display_shared_by_two_steps() -> None:
    shown = Recorder()
    judged: Progress = with_prefix(shown, "judge ")
    judged.task("mine", 3).advance(2)
    judged.close()  # the display is the caller's: it stays open
    assert shown.events == [("judge mine", "task", 3), ("judge mine", "advance", 2)]
    assert not shown.closed


def test_the_world_shows_each_part_as_a_task_done_when_the_next_begins(tmp_path: Path) -> None:
    from ragaudit.steps.world import make_world

    shown = Recorder()
    make_world(tmp_path / "w", size=20, progress=shown)
    parts = ["generating: company", "generating: database", "generating: documents"]
    assert [d for d, kind, _ in shown.events if kind == "task"] == parts
    assert all(shown.advanced(part) == 1 for part in parts)
    # A part is done before the next one opens.
    assert shown.events.index((parts[0], "advance", 1)) < shown.events.index((parts[1], "task", 1))


def test_wording_and_verifying_count_the_sql_templates(tmp_path: Path) -> None:
    from ragaudit.steps.templates import verify_text_templates

    shown = Recorder()
    project = ra.Project.example(root=tmp_path, progress=shown)
    templates = len(project.templates_sql().templates)
    project.templates_text(verify=False)
    assert ("wording", "task", templates) in shown.events
    assert shown.advanced("wording") == templates
    checked = Recorder()
    verify_text_templates(project.config, RunDir(project.run_dir), None, progress=checked)
    assert checked.events[0] == ("verifying", "task", templates)
    assert checked.advanced("verifying") == templates


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_log_gets_a_line_when_a_task_starts_every_tenth_every_30_s_and_when_done() -> None:
    """Issue 41 item 5: with stderr not a terminal there was nothing for 30 minutes."""
    out, clock = io.StringIO(), Clock()
    task = LogProgress(out, clock=clock).task("pairs accepted", 20)
    for _ in range(3):  # a tenth is 2
        clock.now += 5
        task.advance()
    show_counts(task, accepted=3, dropped=7)  # the count stands still ...
    clock.now += 31
    show_counts(task, accepted=3, dropped=8)  # ... and 30 s passed: a line anyway
    clock.now += 10
    task.advance(17)
    assert out.getvalue().splitlines() == [
        "pairs accepted: started, 20 to do",
        "pairs accepted: 2/20 (10%), 10s elapsed, ETA 1m30s",
        # The pace since the last line: 1 pair in 36 s.
        "pairs accepted: 3/20 (15%); accepted 3, dropped 8, 46s elapsed, ETA 10m12s",
        "pairs accepted: done, 20/20; accepted 3, dropped 8, in 56s",
    ]


def test_a_log_says_what_was_done_before_and_counts_the_pace_from_there() -> None:
    out, clock = io.StringIO(), Clock()
    task = LogProgress(out, every=5, clock=clock).task("judge rag")
    task.start(100, 90)
    clock.now += 50
    task.advance(5)
    assert out.getvalue().splitlines()[1:] == [
        "judge rag: 90/100 done before, going on",
        "judge rag: 95/100 (95%), 50s elapsed, ETA 50s",
    ]


def test_the_time_left_follows_the_pace_after_work_answered_from_a_cache() -> None:
    """Issue 41: after a rerun replayed its cached replies in an instant, the log said
    "ETA 0s" while the model still had every remaining pair to write. The time left is
    the pace since the last line; where no unit was done since then, none is promised."""
    out, clock = io.StringIO(), Clock()
    task = LogProgress(out, every=4, clock=clock).task("pairs accepted", 12)
    for _ in range(4):  # replayed from the cache
        clock.now += 0.01
        task.advance()
    clock.now += 40  # the model's pace: a pair in 40 s
    task.counts({"dropped": 1})  # 30 s passed, no pair since the last line
    clock.now += 40
    task.advance()
    lines = out.getvalue().splitlines()
    assert lines[1] == "pairs accepted: 4/12 (33%), 0s elapsed, ETA 0s"
    assert lines[2] == "pairs accepted: 4/12 (33%); dropped 1, 40s elapsed"
    # A pair in 40 s since the last line: 40 s a pair for the 7 left (from the start's
    # pace, 5 pairs in 80 s, it would promise 1m52s).
    assert lines[3] == "pairs accepted: 5/12 (42%); dropped 1, 1m20s elapsed, ETA 4m40s"


def test_tallies_go_only_to_displays_that_show_them() -> None:
    shown = Recorder()
    show_counts(shown.task("pairs accepted", 3), accepted=1)  # its tasks have no counts()
    assert shown.events == [("pairs accepted", "task", 3)]
