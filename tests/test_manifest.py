"""The run manifest: every derived file knows what it was derived from, so that after a
rerun, a re-judge, an edit or another option no reader takes an older figure for a current
one. One test per derived kind (change an input; every reader recomputes it or refuses),
and the silent figures the fourth hostile pass found, each of which read an older file."""

from __future__ import annotations

import csv
import json
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

import ragaudit as ra
from ragaudit.analysis.summary import WeightScan
from ragaudit.errors import RunNotice, StaleInputError, UserError
from ragaudit.records.io import read_jsonl
from ragaudit.records.models import FreeScoreRecord, QueryRecord, ResponseRecord
from ragaudit.rundir import RunDir
from ragaudit.store.manifest import open_manifest
from ragaudit.store.records import read_fresh_scores
from tests.support.cli import ragaudit
from tests.support.example_runs import good, judged_example, truth

_truth = truth
_good = good


def _broken(question: str) -> str:
    return "I don't know."


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of the example with one system that answers everything right, judged and
    analyzed: copied by each test (a copy keeps every file current)."""
    return judged_example(tmp_path_factory.mktemp("judged"))


def _copy(judged: Path, tmp_path: Path) -> ra.Project:
    shutil.copytree(judged, tmp_path, dirs_exist_ok=True)
    return ra.Project.example(root=tmp_path, progress="none")


def _accuracy(summary: ra.Summary | dict, system: str = "rag", name: str = "accuracy") -> float:
    """A system's figure, the same in every variant (as every test here makes it)."""
    data = summary if isinstance(summary, dict) else summary.model_dump(mode="json")
    values = {v[name]["value"] for v in data["systems"][system]["variants"].values()}
    assert len(values) == 1, values
    return float(values.pop())


def _judged_correct(path: Path) -> tuple[int, int]:
    """(correct, judged) counted from a judgements file's raw lines."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sum(1 for j in lines if j["correct"] is True), len(lines)


def _notices(record: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, RunNotice)]


def _rerun_broken(project: ra.Project) -> None:
    project.run([ra.system(_broken, name="rag")], rerun=True)
    project.judge(llm=None)


# -- the manifest itself -------------------------------------------------------------------


def test_a_copied_run_is_current_and_a_hand_edit_of_a_derived_file_is_seen(
    judged: Path, tmp_path: Path
) -> None:
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        state = open_manifest(run).check("summary")
    assert state.current, state.why  # new inodes and times, the same bytes
    assert not _notices(seen)
    assert state.options is not None and state.options["seed"] == 0

    run.summary.write_text(run.summary.read_text().replace('"accuracy"', '"accuracy" '))
    state = open_manifest(run).check("summary")
    assert not state.current
    assert "summary.json is not the file analyze wrote" in (state.why or "")


def test_an_input_added_removed_or_changed_makes_the_summary_stale(
    judged: Path, tmp_path: Path
) -> None:
    run = RunDir(_copy(judged, tmp_path).run_dir)
    usage = run.usage
    assert open_manifest(run).check("summary").current
    # usage.json is read for the cost section: writing it moves the summary.
    existed = usage.exists()
    original = usage.read_bytes() if existed else None
    usage.write_text(json.dumps({"requests": 1}))
    why = open_manifest(run).check("summary").why or ""
    assert "usage.json" in why and ("changed" in why or "was written" in why)
    if original is None:
        usage.unlink()
    else:
        usage.write_bytes(original)
    assert open_manifest(run).check("summary").current  # the same bytes again
    judgements = run.judgements("rag")
    saved = judgements.read_bytes()
    judgements.unlink()
    assert "was removed" in (open_manifest(run).check("summary").why or "")
    judgements.write_bytes(saved)
    (run.judgements_dir / "other.jsonl").write_text("")
    assert "other.jsonl was written" in (open_manifest(run).check("summary").why or "")


def test_a_run_from_before_the_manifest_is_fingerprinted_once_and_said(
    judged: Path, tmp_path: Path
) -> None:
    """Without a manifest nothing but modification times could say what a derived file
    was made from, and times lie: an older judgements file put back with ``cp -p`` is
    no newer than the summary. Every derived file is stale, made again when read from the
    files as they are, with the options of the last analyze in provenance.json."""
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    project.analyze(seed=5)
    saved = tmp_path / "saved.jsonl"
    shutil.copy2(run.judgements("rag"), saved)  # right answers' verdicts, times kept
    _rerun_broken(project)
    project.analyze(seed=5)
    assert _accuracy(json.loads(run.summary.read_text())) == 0.0
    # The older verdicts back, times and all, and the manifest gone.
    shutil.copy2(saved, run.judgements("rag"))
    run.manifest.unlink()
    with pytest.warns(RunNotice, match="stale, made again when read: summary.json"):
        manifest = open_manifest(run)
    assert not manifest.check("summary").current
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        open_manifest(run)
    assert not _notices(seen)  # said once: the manifest is written now
    with pytest.raises(StaleInputError):  # the verdicts are of answers since replaced
        project.export_tables(tmp_path / "t", fmt="csv")
    project.judge(llm=None)
    with pytest.warns(RunNotice, match="options of the last analyze in provenance.json"):
        project.export_tables(tmp_path / "t", fmt="csv")
    assert _accuracy(json.loads(run.summary.read_text())) == 0.0
    recorded = open_manifest(run).check("summary").options
    assert recorded is not None and recorded["seed"] == 5


def test_an_unreadable_manifest_is_read_as_none_never_misread(judged: Path, tmp_path: Path) -> None:
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    run.manifest.write_text("{not json")
    with pytest.warns(RunNotice, match="fingerprinted"):
        manifest = open_manifest(run)
    assert not manifest.check("summary").current  # made again when read, never trusted
    assert json.loads(run.manifest.read_text())["format"] == 1


# -- summary: recomputed by every reader, with the options recorded for it -----------------


def test_tables_and_report_never_pass_on_a_summary_older_than_the_judgements(
    judged: Path, tmp_path: Path
) -> None:
    """The system is run again to answer everything wrongly and judged, with no analyze:
    export tables and report recompute the summary (said once) instead of reading 1.0."""
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    project.analyze(seed=7)  # an option the recomputation must keep
    _rerun_broken(project)
    correct, total = _judged_correct(run.judgements("rag"))
    assert correct == 0 and total > 0
    assert _accuracy(json.loads(run.summary.read_text())) == 1.0  # the old file, stale

    with pytest.warns(RunNotice, match=r"summary.json was stale .*analyzed again with the"):
        files = project.export_tables(tmp_path / "tables", fmt="csv")
    figures = next(f for f in files if f.name == "figures.csv")
    rows = list(csv.DictReader(figures.open()))
    accuracy = [r for r in rows if r["system"] == "rag" and r["metric"] == "accuracy"]
    assert accuracy and all(float(r["value"]) == 0.0 for r in accuracy)
    answers = next(f for f in files if f.name == "answers.csv")
    assert not any(r["correct"] == "True" for r in csv.DictReader(answers.open()))
    summary = json.loads(run.summary.read_text())
    assert _accuracy(summary) == 0.0
    recorded = open_manifest(run).check("summary").options
    assert recorded is not None and recorded["seed"] == 7

    # Right again, judged, then the report alone: the page is of the new judgements.
    project.run([ra.system(_good(_truth(project)), name="rag")], rerun=True)
    project.judge(llm=None)
    with pytest.warns(RunNotice, match="summary.json was stale"):
        project.report()
    assert _accuracy(json.loads(run.summary.read_text())) == 1.0
    manifest = open_manifest(run)
    assert manifest.check("report").current
    assert manifest.entry(run.report).inputs["summary.json"] == manifest.digest(run.summary)


def test_the_command_line_says_the_summary_was_analyzed_again(judged: Path, tmp_path: Path) -> None:
    project = _copy(judged, tmp_path)
    _rerun_broken(project)
    result = ragaudit("export", "tables", str(tmp_path / "t"), "--format", "csv", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "note: " in result.stderr and "summary.json was stale" in result.stderr
    assert "Traceback" not in result.stderr


# -- answers.parquet: rebuilt ------------------------------------------------------------


def test_the_answer_table_is_rebuilt_from_the_records_it_no_longer_matches(
    judged: Path, tmp_path: Path
) -> None:
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    assert project.answers().to_pandas()["correct"].all()
    assert open_manifest(run).check("answers").current
    _rerun_broken(project)
    assert not project.answers().to_pandas()["correct"].any()
    # A verdict changed by hand: the table no longer matches its records.
    path = run.judgements("rag")
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first["correct"] = True
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    state = open_manifest(run).check("answers")
    assert not state.current and "judgements/rag.jsonl changed" in (state.why or "")
    assert int(project.answers().to_pandas()["correct"].sum()) == 1
    assert open_manifest(run).check("answers").current


# -- judgements and scores: refused until judged again -------------------------------------


def test_verdicts_of_replaced_answers_are_refused_with_the_step_each_door_names(
    judged: Path, tmp_path: Path
) -> None:
    project = _copy(judged, tmp_path)
    project.run([ra.system(_broken, name="rag")], rerun=True)  # not judged
    with pytest.raises(StaleInputError) as raised:
        project.analyze()
    assert raised.value.step == "judge"
    assert "call project.judge(systems=['rag'])" in str(raised.value)
    result = ragaudit("analyze", cwd=tmp_path)
    assert result.returncode == 2
    assert "run ragaudit judge --system rag" in result.stderr
    assert "project.judge" not in result.stderr and "Traceback" not in result.stderr


def test_scores_of_a_replaced_answer_are_refused(judged: Path, tmp_path: Path) -> None:
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    response = next(iter(read_jsonl(run.responses("rag"), ResponseRecord)))
    score = FreeScoreRecord(
        query_id=response.query_id, system="rag", metrics={}, response_digest=response.digest
    )
    run.scores_dir.mkdir(parents=True, exist_ok=True)
    run.scores("rag").write_text(score.model_dump_json() + "\n")
    assert [len(s) for _, s in read_fresh_scores(run)] == [1]
    project.run([ra.system(_broken, name="rag")], rerun=True)
    with pytest.raises(StaleInputError, match="scored another response") as raised:
        list(read_fresh_scores(run))
    assert "ragaudit judge --reference-free --system rag" in str(raised.value)


# -- item by item ----------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["corrupt line", "judged twice", "another reference"])
def test_analyze_refuses_record_errors_beside_a_scan_and_keeps_the_summary(
    judged: Path, tmp_path: Path, damage: str
) -> None:
    """With a scan in the run, a damaged judgements file was read as "no system was run
    yet", exit 0, and summary.json rewritten with no systems."""
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    scan = WeightScan(k=5, weights=[0.0, 1.0], documents=3, queries=0, rows=[])
    run.scan.write_text(scan.model_dump_json())
    project.analyze()
    before = run.summary.read_bytes()
    path = run.judgements("rag")
    lines = path.read_text().splitlines()
    if damage == "corrupt line":
        lines.append('{"query_id": ')
    elif damage == "judged twice":
        lines.append(lines[0])
    else:
        first = json.loads(lines[0])
        first["reference_digest"] = "sha256:" + "0" * 64
        lines[0] = json.dumps(first)
    path.write_text("\n".join(lines) + "\n")
    result = ragaudit("analyze", cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert "no system was run yet" not in result.stdout + result.stderr
    with pytest.raises(ra.UserError):
        project.analyze()
    assert run.summary.read_bytes() == before


def test_a_rerun_without_repeats_drops_the_old_repeats_verdicts(
    judged: Path, tmp_path: Path
) -> None:
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    good = ra.system(_good(_truth(project)), name="rag")
    project.run([good], rerun=True, repeat=5)
    project.judge(llm=None)
    stability = project.analyze().stability.get("rag")
    assert stability is not None and stability.repeats == 5
    baseline = tmp_path / "baseline"
    shutil.copytree(run.root, baseline)

    _rerun_broken(project)
    assert not run.repeat_judgements("rag").exists()
    summary = project.analyze()
    assert "rag" not in summary.stability
    assert _accuracy(summary) == 0.0
    result = ragaudit("gate", str(baseline), str(run.root), cwd=tmp_path)
    assert result.returncode == 1
    assert "-1.000" in result.stdout, result.stdout

    project.run([good], rerun=True, repeat=5)
    project.judge(llm=None)
    project.run([ra.system(_broken, name="rag")], rerun=True, repeat=2)
    project.judge(llm=None)
    stability = project.analyze().stability.get("rag")
    assert stability is not None and stability.repeats == 2
    repeats = [json.loads(x) for x in run.repeat_judgements("rag").read_text().splitlines()]
    assert {r["repeat"] for r in repeats} == {1}  # the first asking is the response
    assert not any(r["correct"] for r in repeats)


def test_stability_is_exported_to_tables(judged: Path, tmp_path: Path) -> None:
    project = _copy(judged, tmp_path)
    project.run([ra.system(_good(_truth(project)), name="rag")], rerun=True, repeat=2)
    project.judge(llm=None)
    project.analyze()
    files = project.export_tables(tmp_path / "tables", fmt="csv")
    stability = next(f for f in files if f.name == "stability.csv")
    rows = list(csv.DictReader(stability.open()))
    assert rows and {r["system"] for r in rows} == {"rag"}
    mean = [r for r in rows if r["variant"] == "all"]
    assert mean and float(mean[0]["mean_pass_rate"]) == 1.0
    assert float(mean[0]["flaky"]) == 0.0 and int(mean[0]["flaky_n"]) == int(mean[0]["queries"])


@pytest.fixture(scope="module")
def world_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated company whose questions have gold documents (the example's have none)."""
    root = tmp_path_factory.mktemp("world")
    world = ra.make_world(root / "w", size=60, seed=0, progress="none")
    project = world.project(progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    project.generate(unverified=True)
    return root / "w"


def _world_with_several_gold(
    world_project: Path, tmp_path: Path
) -> tuple[ra.Project, RunDir, dict[str, QueryRecord], list[QueryRecord], int]:
    """A copy of the world's project, its questions, those with gold documents and how many
    of those have several (which a system retrieving the first one alone tells apart)."""
    shutil.copytree(world_project, tmp_path, dirs_exist_ok=True)
    project = ra.Project(tmp_path / "ragaudit.yaml", root=tmp_path, progress="none")
    truth = _truth(project)
    with_gold = [q for q in truth.values() if q.gold_ids]
    several = sum(1 for q in with_gold if len(q.gold_ids or []) > 1)
    assert with_gold and several > 0, "the world needs questions with several gold documents"
    return project, RunDir(project.run_dir), truth, with_gold, several


def test_another_retrieval_rule_is_applied_by_analyze_not_ignored(
    world_project: Path, tmp_path: Path
) -> None:
    """Judged under all_gold, a system that retrieves only the first gold document of each
    question; analyze --retrieval-rule any_hit gives every retrieval verdict again."""
    project, run, truth, with_gold, several = _world_with_several_gold(world_project, tmp_path)
    project.run([ra.system(_good(truth, first_gold_only=True), name="rag")])
    project.judge(llm=None)

    def retrieval(summary: ra.Summary) -> float:
        data = summary.model_dump(mode="json")["systems"]["rag"]["variants"]
        k = sum(v["accuracy_retrieval"]["k"] for v in data.values())
        n = sum(v["accuracy_retrieval"]["n"] for v in data.values())
        return k / n

    strict = project.analyze()
    assert strict.retrieval_rule == "all_gold"
    assert retrieval(strict) == pytest.approx((len(with_gold) - several) / len(with_gold))
    loose = project.analyze(retrieval_rule="any_hit")
    assert loose.retrieval_rule == "any_hit"
    assert retrieval(loose) == 1.0
    assert not any("any_hit" in w for w in loose.warnings)
    result = ragaudit("analyze", "--retrieval-rule", "any_hit", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(run.summary.read_text())["retrieval_rule"] == "any_hit"
    # The recorded option is kept when a reader analyzes again.
    run.usage.write_text("{}")
    with pytest.warns(RunNotice, match="summary.json was stale"):
        project.export_tables(tmp_path / "t", fmt="csv")
    assert json.loads(run.summary.read_text())["retrieval_rule"] == "any_hit"
    # The exported answers count retrieval as the figures beside them do, and say by which
    # rule (they held the judge's all_gold verdicts: `several` of them false).
    exported = pd.read_csv(tmp_path / "t" / "answers.csv")
    graded = exported[exported["retrieval_correct"].notna()]
    assert len(graded) >= len(with_gold) and graded["retrieval_correct"].astype(bool).all()
    assert set(exported["retrieval_rule"]) == {"any_hit"}
    assert project.analyze().retrieval_rule == "all_gold"  # no rule: the judge's
    project.export_tables(tmp_path / "t2", fmt="csv")
    exported = pd.read_csv(tmp_path / "t2" / "answers.csv")
    assert set(exported["retrieval_rule"]) == {"all_gold"}
    misses = exported[
        exported["retrieval_correct"].notna() & ~exported["retrieval_correct"].astype(bool)
    ]
    assert len(misses) == several

    # Under the closed-domain rule the verdicts rest on the judge's rule: refused.
    project.judge(llm=None, closed_domain=True)
    with pytest.raises(StaleInputError) as raised:
        project.analyze(retrieval_rule="any_hit")
    assert raised.value.step == "judge"
    result = ragaudit("analyze", "--retrieval-rule", "any_hit", cwd=tmp_path)
    assert result.returncode == 2
    assert "ragaudit judge --retrieval-rule any_hit --closed-domain" in result.stderr
    # Every reader that takes a rule: compare and gate, at both doors (they ranked and
    # gated on the all_gold verdicts, labelled any_hit).
    with pytest.raises(StaleInputError):
        project.compare(by="variant", retrieval_rule="any_hit")
    candidate = tmp_path / "candidate"
    shutil.copytree(run.root, candidate)
    with pytest.raises(StaleInputError, match=r"call project\.judge\(retrieval_rule='any_hit'"):
        ra.gate(run.root, candidate, retrieval_rule="any_hit")  # worded for Python
    for command in (
        ("compare", "--by", "variant", "--retrieval-rule", "any_hit"),
        ("gate", str(run.root), str(candidate), "--retrieval-rule", "any_hit"),
    ):
        result = ragaudit(*command, cwd=tmp_path)
        assert result.returncode == 2, command
        assert "ragaudit judge --retrieval-rule any_hit --closed-domain" in result.stderr
    assert project.compare(by="variant").sets  # the judge's own rule: compared


@pytest.mark.parametrize("engine", ["memory", "sql"])
def test_retrieval_verdicts_are_labelled_by_the_rule_each_judgement_records(
    world_project: Path, tmp_path: Path, engine: str
) -> None:
    """Judged under any_hit, with judge.stats.json still saying all_gold (a judge killed
    before it wrote its stats, or an older stats file put back with cp -p): the summary
    says any_hit, and analyze --retrieval-rule all_gold gives every verdict again by it,
    in either engine, as a count by hand from the gold ids and the retrieved ids says."""
    project, run, truth, with_gold, several = _world_with_several_gold(world_project, tmp_path)
    project.run([ra.system(_good(truth, first_gold_only=True), name="rag")])
    project.judge(llm=None)
    stale_stats = run.judge_stats.read_bytes()
    project.judge(llm=None, retrieval_rule="any_hit")
    run.judge_stats.write_bytes(stale_stats)  # what a kill before the stats leaves

    def retrieval(summary: ra.Summary) -> float:
        data = summary.model_dump(mode="json")["systems"]["rag"]["variants"]
        k = sum(v["accuracy_retrieval"]["k"] for v in data.values())
        n = sum(v["accuracy_retrieval"]["n"] for v in data.values())
        return k / n

    loose = project.analyze(engine=engine)  # type: ignore[arg-type]  # a str of the two engines
    assert loose.retrieval_rule == "any_hit"
    assert retrieval(loose) == 1.0  # the first gold document is always retrieved
    strict = project.analyze(retrieval_rule="all_gold", engine="auto")
    assert strict.retrieval_rule == "all_gold"
    assert retrieval(strict) == pytest.approx((len(with_gold) - several) / len(with_gold))


def _retrieval_share(summary: ra.Summary, system: str) -> float:
    """The retrieval verdicts right over those given, over every wording of ``system``."""
    data = summary.model_dump(mode="json")["systems"][system]["variants"]
    k = sum(v["accuracy_retrieval"]["k"] for v in data.values())
    n = sum(v["accuracy_retrieval"]["n"] for v in data.values())
    return k / n


@pytest.mark.parametrize("footer", ["version 7", "rules stripped"])
def test_an_answer_table_whose_footer_does_not_record_the_rules_is_built_again(
    world_project: Path, tmp_path: Path, footer: str
) -> None:
    """An answers.parquet whose footer lacks the judgements' retrieval rules (one written
    by a build that did not record them, or stripped by hand) with an older
    judge.stats.json put back: analyze --engine sql must build the table again and say
    the judgements' own rule, never the stats' over verdicts of another rule."""
    import pyarrow.parquet as pq

    from ragaudit.store.answers import FINGERPRINT_KEY, RULES_KEY

    project, run, truth, _, _ = _world_with_several_gold(world_project, tmp_path)
    project.run([ra.system(_good(truth, first_gold_only=True), name="rag")])
    project.judge(llm=None)
    stale_stats = run.judge_stats.read_bytes()
    project.judge(llm=None, retrieval_rule="any_hit")
    run.judge_stats.write_bytes(stale_stats)
    table = pq.read_table(run.answers_table)
    metadata = dict(table.schema.metadata)
    assert RULES_KEY in metadata and FINGERPRINT_KEY in metadata
    del metadata[RULES_KEY]
    if footer == "version 7":
        mark = json.loads(metadata[FINGERPRINT_KEY]) | {"table": 7}
        metadata[FINGERPRINT_KEY] = json.dumps(mark, separators=(",", ":")).encode()
    pq.write_table(table.replace_schema_metadata(metadata), run.answers_table)

    summary = project.analyze(engine="sql")
    assert summary.retrieval_rule == "any_hit"
    assert _retrieval_share(summary, "rag") == 1.0  # any_hit: the first gold is retrieved
    assert not any("any_hit" in w for w in summary.warnings)  # all_gold's advice, not shown
    assert RULES_KEY in (pq.read_schema(run.answers_table).metadata or {})


def test_judgements_under_several_rules_are_said_in_either_engine(
    world_project: Path, tmp_path: Path
) -> None:
    """One system judged again under any_hit, the other left under all_gold: both engines
    label the verdicts with both rules and warn of it, each system's figure by its own
    rule."""
    project, _, truth, with_gold, several = _world_with_several_gold(world_project, tmp_path)
    good = _good(truth, first_gold_only=True)
    project.run([ra.system(good, name="a"), ra.system(good, name="b")])
    project.judge(llm=None)
    project.judge(llm=None, systems=["a"], retrieval_rule="any_hit")
    for engine in ("memory", "sql"):
        summary = project.analyze(engine=engine)  # type: ignore[arg-type]  # the two engines
        assert summary.retrieval_rule == "all_gold and any_hit", engine
        assert any("several retrieval rules" in w for w in summary.warnings), engine
        assert _retrieval_share(summary, "a") == 1.0
        assert _retrieval_share(summary, "b") == pytest.approx(
            (len(with_gold) - several) / len(with_gold)
        )


@pytest.mark.parametrize("engine", ["memory", "sql"])
def test_where_the_rule_does_not_fit_is_counted_over_the_answers_as_they_are_now(
    world_project: Path, tmp_path: Path, engine: str
) -> None:
    """Judged, then cut to every third response and judgement: the warning that
    all_gold cannot be met (one document retrieved, two gold) counts the answers left,
    as a count by hand over the JSON Lines says, not those the judge saw."""
    project, run, truth, _, _ = _world_with_several_gold(world_project, tmp_path)
    project.run([ra.system(_good(truth, first_gold_only=True), name="rag")])
    project.judge(llm=None)
    for path in (run.responses("rag"), run.judgements("rag")):
        path.write_text("\n".join(path.read_text().splitlines()[::3]) + "\n")
    gold = {q.query_id: q.gold_ids for q in truth.values()}
    kept = [json.loads(line) for line in run.responses("rag").read_text().splitlines()]
    judged = [r for r in kept if gold.get(r["query_id"])]
    short = [r for r in judged if len(set(gold[r["query_id"]])) > len(r["retrieved"])]
    assert short, "the cut must keep a question with several gold documents"
    summary = project.analyze(engine=engine)  # type: ignore[arg-type]  # the two engines
    fit = [w for w in summary.warnings if w.startswith("retrieval rule all_gold")]
    assert fit == [
        f"retrieval rule all_gold: rag: in {len(short)} of {len(judged)} queries fewer "
        "documents retrieved than the gold ids name, so retrieval could never be correct; "
        "use any_hit, or ask the system for more documents"
    ]


def test_a_judge_stopped_half_way_leaves_stats_true_of_the_systems_it_finished(
    world_project: Path, tmp_path: Path
) -> None:
    """judge.stats.json is written as each system is done: a judge that stops at the
    second system (here on a response to a question the dataset does not hold) has
    recorded the first one's new rule, not the old one."""
    shutil.copytree(world_project, tmp_path, dirs_exist_ok=True)
    project = ra.Project(tmp_path / "ragaudit.yaml", root=tmp_path, progress="none")
    run = RunDir(project.run_dir)
    truth = _truth(project)
    project.run([ra.system(_good(truth), name="a"), ra.system(_good(truth), name="b")])
    project.judge(llm=None)
    path = run.responses("b")
    lines = path.read_text().splitlines()
    stray = json.loads(lines[0]) | {"query_id": "q-not-in-the-dataset"}
    path.write_text("\n".join([*lines, json.dumps(stray)]) + "\n")
    with pytest.raises(UserError, match="no longer holds"):
        project.judge(llm=None, retrieval_rule="any_hit")
    stats = json.loads(run.judge_stats.read_text())
    rules = {name: entry["retrieval_rule"] for name, entry in stats.items()}
    assert rules["a"] == "any_hit"
    assert rules.get("b") in (None, "all_gold")  # b's verdicts are still all_gold's


def test_a_figure_become_undefined_never_stands_at_its_old_value_in_mlflow(
    judged: Path, tmp_path: Path
) -> None:
    """Exported, then answered wrongly everywhere (every group a gap: R undefined) and
    exported again: the undefined R must not stay at 1.0 in MLflow; stability figures of
    repeats are logged too."""
    pytest.importorskip("mlflow", reason="the export to MLflow needs ragaudit[mlflow]")
    from mlflow.tracking import MlflowClient

    project = _copy(judged, tmp_path)
    project.run([ra.system(_good(_truth(project)), name="rag")], rerun=True, repeat=2)
    project.judge(llm=None)
    project.analyze()
    project.report()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = project.export_mlflow(tracking_uri=uri, experiment="e")
    client = MlflowClient(tracking_uri=uri)
    logged = client.get_run(first.run_id).data.metrics
    r = [k for k in logged if k.startswith("rag/") and k.endswith("/robustness")]
    assert r and all(logged[k] == 1.0 for k in r)
    assert logged["rag/all/stability/mean_pass_rate"] == 1.0
    assert logged["rag/all/stability/flaky"] == 0.0

    project.run([ra.system(_broken, name="rag")], rerun=True, repeat=2)
    project.judge(llm=None)  # no analyze: the export recomputes the summary
    with pytest.warns(RunNotice, match="summary.json was stale"):
        second = project.export_mlflow(tracking_uri=uri, experiment="e")
    assert second.run_id != first.run_id and not second.updated
    assert second.superseded == first.run_id and "robustness" in (second.why_new or "")
    assert second.why_new in client.get_run(second.run_id).data.tags["ragaudit.supersedes"]
    data = client.get_run(second.run_id).data
    assert not any(k in data.metrics for k in r)
    reasons = {k: v for k, v in data.tags.items() if k.startswith("ragaudit.undefined.")}
    assert reasons and all(f"ragaudit.undefined.{k}" in reasons for k in r)
    assert all("gap" in reasons[f"ragaudit.undefined.{k}"] for k in r)
    assert data.metrics["rag/all/stability/mean_pass_rate"] == 0.0
    assert client.get_run(first.run_id).data.tags["ragaudit.superseded_by"] == second.run_id
    # The report passed on is of the new figures.
    assert open_manifest(RunDir(project.run_dir)).check("report").current


def test_a_dataset_generated_anew_retires_the_records_of_questions_it_no_longer_asks(
    judged: Path, tmp_path: Path
) -> None:
    """Found by the chaos test: generate with another seed kept the answers to questions no
    longer asked, and every reader then refused the run ("judgement for unknown query")."""
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    before = {r.query_id for r in read_jsonl(run.responses("rag"), ResponseRecord)}
    dataset = project.generate(unverified=True, max_groups_per_template=3, seed=1)
    asked = {q.query_id for q in dataset}
    gone = before - asked
    assert gone and before & asked
    kept = {r.query_id for r in read_jsonl(run.responses("rag"), ResponseRecord)}
    assert kept == before & asked
    retired = run.retired_dir / "responses" / "rag.jsonl"
    assert {r.query_id for r in read_jsonl(retired, ResponseRecord)} == gone
    assert any("not asked any more" in w for w in dataset.stats.warnings)
    summary = project.analyze()  # the run reads again
    right, total = _judged_correct(run.judgements("rag"))
    assert right == total == len(kept) and _accuracy(summary) == 1.0


# -- what the fifth hostile pass found in the manifest's first version -------------------------


def test_verdicts_given_against_other_gold_ids_are_refused_and_judged_again(
    world_project: Path, tmp_path: Path
) -> None:
    """The dataset generated again with other gold documents kept the same questions and
    answers: the retrieval verdicts, given against the old gold ids, were read as current."""
    shutil.copytree(world_project, tmp_path, dirs_exist_ok=True)
    project = ra.Project(tmp_path / "ragaudit.yaml", root=tmp_path, progress="none")
    run = RunDir(project.run_dir)
    project.run([ra.system(_good(_truth(project)), name="rag")])
    project.judge(llm=None)
    assert project.analyze().systems  # every retrieval right
    lines = [json.loads(x) for x in run.dataset.read_text().splitlines()]
    moved = next(q for q in lines if q.get("gold_ids"))
    moved["gold_ids"] = ["no-such-document"]
    run.dataset.write_text("".join(json.dumps(q) + "\n" for q in lines))
    with pytest.raises(StaleInputError, match="other gold ids") as raised:
        project.analyze()
    assert raised.value.step == "judge"
    result = ragaudit("export", "tables", str(tmp_path / "t"), cwd=tmp_path)
    assert result.returncode == 2 and "run ragaudit judge --system rag" in result.stderr
    assert project.judge(llm=None).systems["rag"].judged_now == 1
    judged = {
        j["query_id"]: j
        for j in map(json.loads, run.judgements("rag").read_text().split("\n")[:-1])
    }
    assert judged[moved["query_id"]]["retrieval_correct"] is False
    project.analyze()


def test_a_compare_study_of_changed_records_is_left_out_of_the_report(
    judged: Path, tmp_path: Path
) -> None:
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    truth = _truth(project)
    half = {
        q: (r.reference.display if i % 2 else "No idea.") for i, (q, r) in enumerate(truth.items())
    }
    project.run([ra.system(lambda question: half[question], name="other")])
    project.judge(llm=None)
    project.compare(by="variant")
    project.report()
    assert "Do the test sets rank the systems alike?" in run.report.read_text()
    _rerun_broken(project)  # rag is now the worse system: the study is of older verdicts
    with pytest.warns(RunNotice, match="compare.json is stale") as said:
        project.report()
    assert "Do the test sets rank the systems alike?" not in run.report.read_text()
    # It names the compare that made the study, with its options, at each door (a plain
    # compare splits by source, which this run cannot).
    (note,) = [str(w.message) for w in said if "compare.json is stale" in str(w.message)]
    assert "run ragaudit compare --by variant" in note
    assert "project.compare(by='variant'" in note
    project.compare(by="variant")
    project.report()
    assert "Do the test sets rank the systems alike?" in run.report.read_text()


def test_a_summary_of_neutral_files_is_never_fingerprinted_as_current(
    judged: Path, tmp_path: Path
) -> None:
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    rows = _neutral_rows(project, correct=True)
    neutral = tmp_path / "neutral.jsonl"
    neutral.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = ragaudit("analyze", "--neutral", "neutral.jsonl", "--system", "neu", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    run.manifest.unlink()
    neutral.write_text(neutral.read_text().replace('"correct": true', '"correct": false'))
    result = ragaudit("export", "tables", str(tmp_path / "t"), "--format", "csv", cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert "ragaudit analyze --neutral neutral.jsonl --system neu" in result.stderr
    assert not (tmp_path / "t" / "figures.csv").exists()


def test_a_neutral_folder_emptied_is_refused_never_replaced_by_the_runs_own_systems(
    judged: Path, tmp_path: Path
) -> None:
    """A summary of a folder of neutral files whose file is gone: a reader refuses to make
    it again (it made a summary of the run's own systems instead), and so does analyze
    given the empty folder; the summary of the folder's systems stays as it was."""
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    folder = tmp_path / "results"
    folder.mkdir()
    file = folder / "neu.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in _neutral_rows(project, correct=True)))
    assert list(project.analyze(neutral=[folder], system="neu").systems) == ["neu"]
    before = run.summary.read_bytes()
    file.unlink()
    result = ragaudit("export", "tables", str(tmp_path / "t"), "--format", "csv", cwd=tmp_path)
    assert result.returncode == 2 and "a folder that holds no file now" in result.stderr
    assert f"run ragaudit analyze --neutral {folder} --system neu" in result.stderr
    assert not (tmp_path / "t" / "figures.csv").exists()
    with pytest.raises(StaleInputError, match=r"call project\.analyze\(neutral="):
        project.report()
    with pytest.raises(UserError, match=r"no \*\.jsonl file"):
        project.analyze(neutral=[folder], system="neu")
    assert run.summary.read_bytes() == before


def test_a_failed_analyze_lends_no_options_to_the_summary_made_again(
    judged: Path, tmp_path: Path
) -> None:
    """analyze --retrieval-rule any_hit fails on a broken dataset line; the line is put
    right, the manifest is gone: the summary made again uses the options of the last
    analyze that was done (all_gold), never those of the one that failed, and
    provenance.json says how each ended."""
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    project.analyze()
    good = run.dataset.read_text()
    run.dataset.write_text(good.replace("\n", "\n{broken\n", 1))
    result = ragaudit("analyze", "--retrieval-rule", "any_hit", cwd=tmp_path)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    run.dataset.write_text(good)
    run.manifest.unlink()
    with pytest.warns(RunNotice):
        project.report()
    assert json.loads(run.summary.read_text())["retrieval_rule"] == "all_gold"
    steps = json.loads(run.provenance.read_text())["steps"]
    analyzes = [s for s in steps if s["step"] == "analyze"]
    assert [s["status"] for s in analyzes[-2:]] == ["done", "failed"]


def test_analyze_system_without_neutral_files_is_refused_not_ignored(
    judged: Path, tmp_path: Path
) -> None:
    """--system names the system of --neutral files: alone it would analyze every system
    while the user asked for one, so it is a one-line error and the summary stays."""
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    before = run.summary.read_bytes()
    result = ragaudit("analyze", "--system", "rag", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "--neutral" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    with pytest.raises(UserError, match="--neutral"):
        project.analyze(system="rag")
    assert run.summary.read_bytes() == before


def test_an_edit_of_any_file_of_the_summary_is_seen(judged: Path, tmp_path: Path) -> None:
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    run.drilldown.write_text(run.drilldown.read_text().replace("Industry", "HACKED", 1))
    state = open_manifest(run).check("summary")
    assert not state.current and "drilldown.jsonl is not the file" in (state.why or "")
    with pytest.warns(RunNotice, match="summary.json was stale"):
        project.report()
    assert "HACKED" not in run.report.read_text()
    run.drilldown.unlink()
    assert not open_manifest(run).check("summary").current


def test_figures_of_a_partly_judged_or_partly_asked_system_say_so(
    judged: Path, tmp_path: Path
) -> None:
    project = _copy(judged, tmp_path)
    truth = _truth(project)
    total = len(truth)
    third = ra.system(_good(truth), name="third")
    project.run([third], limit=20)
    project.judge(llm=None)
    warnings_ = project.analyze().warnings
    assert any(f"third answered 20 of the dataset's {total} questions" in w for w in warnings_)
    project.run([third])
    warnings_ = project.analyze().warnings
    assert any(
        f"third: {total - 20} of its {total} answers have no judgement" in w for w in warnings_
    )
    project.judge(llm=None)
    assert not any("third" in w for w in project.analyze().warnings)


def test_llm_only_must_name_a_system_of_the_answers(judged: Path, tmp_path: Path) -> None:
    project = _copy(judged, tmp_path)
    before = RunDir(project.run_dir).summary.read_bytes()
    with pytest.raises(ra.UserError, match="--llm-only nosuch: no system of that name"):
        project.analyze(llm_only="nosuch")
    assert RunDir(project.run_dir).summary.read_bytes() == before


def test_a_summary_that_cannot_be_read_is_analyzed_again_by_a_reader(
    judged: Path, tmp_path: Path
) -> None:
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    run.manifest.write_text("[]")
    run.summary.write_text("{}")
    with pytest.warns(RunNotice, match="could not be read as a manifest"):
        open_manifest(run)
    with pytest.warns(RunNotice, match="summary.json was stale"):
        project.export_tables(tmp_path / "t", fmt="csv")
    assert _accuracy(json.loads(run.summary.read_text())) == 1.0


# -- the third hostile pass ----------------------------------------------------------------


def test_every_file_the_summary_reads_is_its_input(judged: Path, tmp_path: Path) -> None:
    """The label figures read the pairs beside the labels, the cost section the run's and
    the wordings' counts: each written, the summary is stale."""
    run = RunDir(_copy(judged, tmp_path).run_dir)
    for path in (run.label_pairs, run.run_stats, run.templates_text):
        assert open_manifest(run).check("summary").current
        saved = path.read_bytes() if path.exists() else None
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text((path.read_text() if saved is not None else "") + "\n# edited\n")
        why = open_manifest(run).check("summary").why or ""
        assert path.name in why, why
        if saved is None:
            path.unlink()
        else:
            path.write_bytes(saved)


def _neutral_rows(project: ra.Project, correct: bool) -> list[dict[str, object]]:
    return [
        {
            "query_id": q.query_id,
            "group_id": q.group_id,
            "template_id": q.template_id,
            "variant": q.variant,
            "query": q.query,
            "reference": q.reference.display,
            "response": q.reference.display,
            "retrieved_ids": [],
            "gold_ids": [],
            "correct": correct,
        }
        for q in project.dataset()
    ]


def test_a_file_added_to_a_neutral_folder_is_an_input_added(judged: Path, tmp_path: Path) -> None:
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    rows = _neutral_rows(project, correct=True)
    half = len(rows) // 2
    folder = tmp_path / "neu"
    folder.mkdir()
    (folder / "part1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:half]))
    project.analyze(neutral=[folder], system="ext")
    first = json.loads(run.summary.read_text())["systems"]["ext"]["variants"]
    assert sum(v["n_queries"] for v in first.values()) == half
    wrong = [dict(r, correct=False) for r in rows[half:]]
    (folder / "part2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in wrong))
    state = open_manifest(run).check("summary")
    assert not state.current and "part2.jsonl was written" in (state.why or "")
    with pytest.warns(RunNotice, match="summary.json was stale"):
        project.export_tables(tmp_path / "t", fmt="csv")
    again = json.loads(run.summary.read_text())["systems"]["ext"]["variants"]
    assert sum(v["n_queries"] for v in again.values()) == len(rows)
    assert all(v["accuracy"]["value"] < 1.0 for v in again.values())


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"seed": "x"}, "seed"),
        ({"seed": 1.5e300}, "seed"),
        ({"outcome": "bogus"}, "outcome"),
        ({"retrieval_rule": "bogus"}, "retrieval rule 'bogus'"),
        ({"reference_free": {"thresholds": {"faithfulness": "x"}}}, "reference_free"),
        ({"lambda_targets": [2.0]}, "--lambda-target"),
    ],
)
def test_options_edited_in_the_manifest_are_checked_before_they_are_used(
    judged: Path, tmp_path: Path, options: dict[str, object], field: str
) -> None:
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    project.analyze(seed=3)  # provenance's last analyze: what is used instead
    data = json.loads(run.manifest.read_text())
    entry = data["files"]["summary.json"]
    entry["options"].update(options)
    entry["inputs"]["dataset.jsonl"] = "sha256:0"  # stale: it will be made again
    run.manifest.write_text(json.dumps(data))
    with pytest.warns(RunNotice, match=rf"could not be read: {field}") as seen:
        project.report()
    assert any("options of the last analyze in provenance.json" in m for m in _notices(seen))
    recorded = open_manifest(run).check("summary").options
    assert recorded is not None and recorded["seed"] == 3
    assert json.loads(run.summary.read_text())["retrieval_rule"] in {"all_gold", "any_hit"}
    result = ragaudit("report", cwd=tmp_path)
    assert result.returncode == 0 and "Traceback" not in result.stderr


def test_a_run_without_its_manifest_is_analyzed_again_with_provenances_options(
    judged: Path, tmp_path: Path
) -> None:
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    project.analyze(seed=7, retrieval_rule="any_hit")
    run.manifest.unlink()
    _rerun_broken(project)
    with pytest.warns(RunNotice, match="options of the last analyze in provenance.json"):
        project.export_tables(tmp_path / "t", fmt="csv")
    recorded = open_manifest(run).check("summary").options
    assert recorded is not None
    assert (recorded["seed"], recorded["retrieval_rule"]) == (7, "any_hit")
    assert json.loads(run.summary.read_text())["retrieval_rule"] == "any_hit"


def test_a_summary_made_again_without_its_manifest_keeps_its_reference_free_thresholds(
    judged: Path, tmp_path: Path
) -> None:
    """The thresholds come from the config, not from analyze's arguments: provenance
    records them, so that deleting the manifest (the documented remedy) never reads the
    scores again at the defaults."""
    project = _copy(judged, tmp_path)
    project.config.reference_free.thresholds["faithfulness"] = 0.7
    project.config.reference_free.target_precision = 0.8
    run = RunDir(project.run_dir)
    project.analyze(seed=5)
    run.manifest.unlink()
    _rerun_broken(project)
    with pytest.warns(RunNotice, match="options of the last analyze in provenance.json"):
        project.report()
    recorded = open_manifest(run).check("summary").options
    assert recorded is not None and recorded["seed"] == 5
    assert recorded["reference_free"]["thresholds"]["faithfulness"] == 0.7
    assert recorded["reference_free"]["target_precision"] == 0.8


def test_a_recorded_llm_only_system_that_is_gone_names_analyze_in_each_door(
    judged: Path, tmp_path: Path
) -> None:
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    project.run([ra.system(_broken, name="closed")])
    project.judge(llm=None)
    project.analyze(llm_only="closed")
    run.responses("closed").unlink()
    run.judgements("closed").unlink()
    with pytest.raises(StaleInputError) as raised:
        project.report()
    message = str(raised.value)
    assert "closed as the system that answers without retrieval" in message
    assert message.endswith("call project.analyze()") and "--llm-only" not in message
    result = ragaudit("report", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().endswith("run ragaudit analyze")


def test_judging_some_systems_keeps_the_others_retrieval_rule(judged: Path, tmp_path: Path) -> None:
    """judge.stats.json holds the rule each system's verdicts were given by: judging one
    system again under another rule keeps the others' entries, so that analyze says both
    rules and gives every verdict again under the rule it is asked for."""
    from ragaudit.steps.judge import read_judge_stats

    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    truth = _truth(project)
    project.run([ra.system(_good(truth, first_gold_only=True), name="first")])
    project.judge(llm=None)
    project.judge(llm=None, systems=["rag"], retrieval_rule="any_hit")
    rules = {n: e.retrieval_rule for n, e in read_judge_stats(run.judge_stats).items()}
    assert rules == {"rag": "any_hit", "first": "all_gold"}
    assert project.analyze().retrieval_rule == "all_gold and any_hit"


def test_the_report_is_stale_when_the_world_it_shows_changed(tmp_path: Path) -> None:
    world = tmp_path / "w"
    ra.make_world(world, size=20, seed=0, progress="none")
    project = ra.Project(world / "ragaudit.yaml", root=world, progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    project.generate(unverified=True)
    truth = _truth(project)
    project.run([ra.system(_good(truth), name="rag")])
    project.judge(llm=None)
    project.analyze()
    project.report()
    run = RunDir(project.run_dir)
    assert open_manifest(run).check("report").current
    facts = json.loads((world / "world.json").read_text())
    facts["documents"] = facts["documents"] + 5
    (world / "world.json").write_text(json.dumps(facts))
    why = open_manifest(run).check("report").why or ""
    assert "world.json changed" in why


def test_a_record_error_met_while_analyzing_again_says_what_to_fix(
    judged: Path, tmp_path: Path
) -> None:
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    path = run.judgements("rag")
    path.write_text(path.read_text() + path.read_text().splitlines()[0] + "\n")
    result = ragaudit("export", "tables", str(tmp_path / "t"), "--format", "csv", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "duplicate" in result.stderr and "run ragaudit analyze" not in result.stderr


def test_a_seed_edited_to_true_in_the_manifest_is_not_taken_for_1(
    judged: Path, tmp_path: Path
) -> None:
    project = _copy(judged, tmp_path)
    run = RunDir(project.run_dir)
    data = json.loads(run.manifest.read_text())
    entry = data["files"]["summary.json"]
    entry["options"]["seed"] = True
    entry["inputs"]["dataset.jsonl"] = "sha256:0"
    run.manifest.write_text(json.dumps(data))
    with pytest.warns(RunNotice, match="could not be read: seed"):
        project.report()
