"""What the seventh hostile pass on the store found: records a step leaves behind or loses
(an empty judgements file, verdicts dropped by a judge that then refused), records of
questions the dataset no longer holds, and secrets or options a reader passed on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import ragaudit as ra
from ragaudit.errors import RunNotice, StaleInputError
from ragaudit.rundir import RunDir
from tests.support.cli import ragaudit
from tests.support.example_runs import good, judged_example, truth


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return judged_example(tmp_path_factory.mktemp("judged"))


def _copy(judged: Path, tmp_path: Path) -> ra.Project:
    shutil.copytree(judged, tmp_path, dirs_exist_ok=True)
    return ra.Project.example(root=tmp_path, progress="none")


def _two_systems(project: ra.Project) -> RunDir:
    project.run([ra.system(good(truth(project)), name="b")])
    project.judge(llm=None)
    return RunDir(project.run_dir)


def test_a_system_whose_judgements_file_is_empty_is_said_to_be_left_out(
    judged: Path, tmp_path: Path
) -> None:
    """A judge killed before its first verdict leaves an empty file: the system is left
    out of the figures, and said to be, as it is when the file is missing."""
    project = _copy(judged, tmp_path)
    run = _two_systems(project)
    run.judgements("b").write_text("")
    summary = project.analyze()
    assert list(summary.systems) == ["rag"]
    assert any("b answered" in w and "no judgements" in w for w in summary.warnings)
    done = ragaudit("analyze", cwd=tmp_path)
    assert done.returncode == 0 and "b answered (b.jsonl) but has no judgements" in done.stderr


def test_a_judge_that_meets_a_question_the_dataset_no_longer_holds_keeps_every_verdict(
    judged: Path, tmp_path: Path
) -> None:
    """A question removed from the dataset by hand: judge refuses before it drops any
    verdict (here those of another rule, to be given again), naming the step each door
    calls; analyze refuses the same way. Nothing was lost, so the step it names mends it."""
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    before = run.judgements("rag").read_bytes()
    lines = run.dataset.read_text().splitlines()
    gone = json.loads(lines[0])["query_id"]
    run.dataset.write_text("\n".join(lines[1:]) + "\n")
    with pytest.raises(StaleInputError) as refused:
        project.judge(llm=None, retrieval_rule="any_hit")
    assert gone in str(refused.value) and refused.value.step == "run"
    assert "project.run(systems=['rag'], rerun=True)" in refused.value.for_python()
    assert run.judgements("rag").read_bytes() == before  # every verdict kept
    cli = ragaudit("judge", "--no-llm", cwd=tmp_path)
    assert cli.returncode == 2 and "run ragaudit run --system rag --rerun" in cli.stderr
    assert run.judgements("rag").read_bytes() == before
    analyzed = ragaudit("analyze", cwd=tmp_path)
    assert analyzed.returncode == 2 and "no longer holds" in analyzed.stderr
    assert "run ragaudit run --system rag --rerun" in analyzed.stderr
    # The step it names mends it: asked again, judged again, analyzed.
    project.run([ra.system(good(truth(project)), name="rag")], rerun=True)
    project.judge(llm=None)
    assert project.analyze().systems["rag"].variants


def _counted(run: RunDir) -> tuple[int, dict[str, int]]:
    """Groups and questions per style, counted by hand from dataset.jsonl's lines."""
    rows = [json.loads(line) for line in run.dataset.read_text().splitlines()]
    styles: dict[str, int] = {}
    for row in rows:
        styles[row["variant"]] = styles.get(row["variant"], 0) + 1
    return len({row["group_id"] for row in rows}), styles


def test_the_datasets_counts_describe_the_dataset_it_holds_now(
    judged: Path, tmp_path: Path
) -> None:
    """A run that takes another's questions (use_dataset), or whose dataset is edited by
    hand: dataset.stats.json, Project.dataset() and the report count the dataset as it is,
    never the one generate wrote before (they said 27 groups of a dataset of 77)."""
    shutil.copytree(judged, tmp_path, dirs_exist_ok=True)
    source = ra.Project.example(root=tmp_path, progress="none")
    candidate = ra.Project.example(root=tmp_path, run="candidate", progress="none")
    candidate.templates_sql()
    candidate.templates_text(verify=False)
    candidate.generate(unverified=True, max_groups_per_template=1)
    run = RunDir(candidate.run_dir)
    with pytest.warns(RunNotice, match="recounted"):
        candidate.use_dataset(source)
    groups, styles = _counted(run)
    overview = json.loads(run.dataset_stats.read_text())["overview"]
    assert (overview["semantic_groups"], overview["text_queries"]) == (groups, styles)
    per_table = candidate.dataset().tables.to_pandas()
    assert 0 < per_table["semantic_groups"].max() <= groups
    # A hand edit: one group's questions removed.
    lines = run.dataset.read_text().splitlines()
    first = json.loads(lines[0])["group_id"]
    run.dataset.write_text(
        "\n".join(line for line in lines if json.loads(line)["group_id"] != first) + "\n"
    )
    candidate.run([ra.system(good(truth(candidate)), name="rag")])
    candidate.judge(llm=None)
    candidate.analyze()
    page = Path(candidate.report()).read_text()
    groups_now, _ = _counted(run)
    assert groups_now == groups - 1
    overview = json.loads(run.dataset_stats.read_text())["overview"]
    assert overview["semantic_groups"] == groups_now
    assert f">{groups_now}<" in page.replace(" ", "")


def test_templates_text_follows_the_configurations_verify_at_both_doors(tmp_path: Path) -> None:
    """templates.verify: false in ragaudit.yaml: neither door asks the LLM (the Python
    door verified anyway, against a model the configuration never meant to ask)."""
    database = Path(ra.__file__).parent / "data" / "example.sqlite"
    (tmp_path / "ragaudit.yaml").write_text(
        f"database: {{url: 'sqlite:///{database}'}}\n"
        "llm: {model: 'openai:m', base_url: 'http://127.0.0.1:9/v1', api_key: k, "
        "max_retries: 0}\n"
        "templates: {verify: false}\n"
    )
    project = ra.Project(tmp_path / "ragaudit.yaml", root=tmp_path, progress="none")
    project.templates_sql()
    made = project.templates_text()
    assert made.counts and all(c.verified == 0 for c in made.counts.values())
    asked = project.usage.total() if project.usage is not None else None
    assert asked is None or asked.calls + asked.failures == 0  # the model was not asked
    cli = ragaudit("templates", "text", "--overwrite", cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr


def test_a_deleted_summary_is_made_again_with_the_options_it_was_made_with(
    judged: Path, tmp_path: Path
) -> None:
    """summary.json deleted after analyze recorded it: a reader makes it again with its
    recorded seed and lambda study, as it does a stale one (it refused, and the remedy it
    named, a plain analyze, would have dropped both)."""
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    project.analyze(seed=11, lambda_targets=[0.3])
    made = json.loads(run.summary.read_text())
    run.summary.unlink()
    with pytest.warns(RunNotice, match="there is no summary.json"):
        project.export_tables(tmp_path / "t", fmt="csv")
    again = json.loads(run.summary.read_text())
    assert again["lambda_study"] is not None and again["lambda_study"] == made["lambda_study"]
    assert again["systems"] == made["systems"]
    never = ra.Project.example(root=tmp_path / "fresh", progress="none")
    with pytest.raises(ra.UserError, match="no summary"):
        never.export_tables(tmp_path / "t2", fmt="csv")


def test_the_hint_to_ask_the_rest_serves_a_system_of_python_too(
    judged: Path, tmp_path: Path
) -> None:
    """A Python system asked part of the dataset: the warning says how to ask it the rest
    at both doors (it named only ragaudit run --system, which fails for a system the
    configuration does not hold)."""
    project = _copy(judged, tmp_path)
    project.run([ra.system(lambda q: "I don't know.", name="mine")], limit=5)
    project.judge(llm=None, systems=["mine"])
    (said,) = [w for w in project.analyze().warnings if w.startswith("mine answered 5 of")]
    assert "ragaudit run --system mine" in said and "project.run(" in said
