"""``ragaudit export``: a run's results in a real local MLflow tracking store (SQLite,
read back with MLflow's own client) and as CSV / Parquet tables."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import ragaudit as ra
from ragaudit.config import Config
from tests.support.cli import ragaudit

SECRET = "sk-test-0123456789abcdefghijklmnop"


def _analyzed(root: Path) -> ra.Project:
    """The example database's journey with no LLM, analyzed and reported; its
    configuration names an API key, which must never reach MLflow."""
    config = Config()
    config.llm.model = "openai:gpt-4o-mini"
    config.llm.api_key = SECRET
    project = ra.Project(config, root=root, db="example", progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    dataset = project.generate(unverified=True)
    truth = {q.query: q.reference.display for q in dataset}
    project.run([ra.system(lambda q: truth[q] if len(q) % 3 else "I don't know.", name="rag")])
    project.judge(llm=None)
    project.analyze()
    project.report()
    return project


def test_a_run_in_mlflow_is_what_its_summary_says_and_a_second_export_updates_it(
    tmp_path: Path,
) -> None:
    pytest.importorskip("mlflow", reason="the export to MLflow needs ragaudit[mlflow]")
    from mlflow.tracking import MlflowClient

    project = _analyzed(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = project.export_mlflow(tracking_uri=uri, experiment="rag-evals")
    assert not first.updated and first.superseded is None
    client = MlflowClient(tracking_uri=uri)
    logged = client.get_run(first.run_id).data
    summary = project.analyze()
    for row in summary.rows():
        name = f"{row['system']}/{row['variant']}/{row['metric']}"
        if row["value"] is None:
            assert name not in logged.metrics and name in first.undefined
            continue
        assert logged.metrics[name] == pytest.approx(row["value"])
        assert logged.metrics[f"{name}_low"] == pytest.approx(row["low"])
        assert logged.metrics[f"{name}_high"] == pytest.approx(row["high"])
    assert logged.params["run.name"] == "default" and logged.params["llm.model"].startswith(
        "openai:"
    )
    assert all(SECRET not in value for value in logged.params.values())
    assert SECRET.encode() not in (tmp_path / "mlflow.db").read_bytes()
    names = {f.path for f in client.list_artifacts(first.run_id)}
    assert names == {"report.html", "summary.json", "answers.parquet"}
    table = Path(client.download_artifacts(first.run_id, "answers.parquet", str(tmp_path)))
    assert len(pd.read_parquet(table)) == len(project.answers().to_pandas())
    # Again, from the command line in the project's folder: the same MLflow run, updated.
    (tmp_path / "ragaudit.yaml").write_text("database: {url: example}\n")
    cli = ragaudit(
        "export", "mlflow", "--tracking-uri", uri, "--experiment", "rag-evals", cwd=tmp_path
    )
    assert cli.returncode == 0, cli.stderr
    assert f"MLflow run {first.run_id} updated" in " ".join(cli.stdout.split())
    experiment = client.get_experiment_by_name("rag-evals")
    assert experiment is not None
    assert len(client.search_runs([experiment.experiment_id])) == 1
    # Analyzed again under another configuration: a new MLflow run; the old one says so.
    other = ra.Project(project.config.model_copy(deep=True), progress="none")
    other.config.generate.seed = 7
    other.analyze()
    second = other.export_mlflow(tracking_uri=uri, experiment="rag-evals")
    assert second.run_id != first.run_id and second.superseded == first.run_id
    assert client.get_run(first.run_id).data.tags["ragaudit.superseded_by"] == second.run_id
    assert client.get_run(second.run_id).data.params["generate.seed"] == "7"


def test_tables_for_any_other_tool(tmp_path: Path) -> None:
    project = _analyzed(tmp_path / "p")
    parquet = project.export_tables(tmp_path / "out", fmt="parquet")
    assert [p.name for p in parquet] == [
        "figures.parquet", "comparisons.parquet", "ranking.parquet", "stability.parquet",
        "answers.parquet",
    ]  # fmt: skip
    summary = project.analyze()
    figures = pd.read_parquet(tmp_path / "out" / "figures.parquet")
    pd.testing.assert_frame_equal(figures, summary.to_pandas(), check_dtype=False)
    csv = project.export_tables(tmp_path / "csv", fmt="csv")
    answers = pd.read_csv(tmp_path / "csv" / "answers.csv")
    assert len(csv) == 5 and len(answers) == len(project.answers().to_pandas())
    # List columns are JSON text a spreadsheet shows and any tool reads back.
    ids = answers["retrieved_ids"].dropna().map(json.loads)
    assert ids.map(lambda v: isinstance(v, list)).all()
    comparisons = pd.read_csv(tmp_path / "csv" / "comparisons.csv")
    assert list(comparisons["verdict"]) == [c.verdict for c in summary.comparisons]
    with pytest.raises(ra.UserError, match="inside the run folder"):
        project.export_tables(project.run_dir / "tables")
    with pytest.raises(ra.UserError, match="use csv or parquet"):
        project.export_tables(tmp_path / "x", fmt="xlsx")  # type: ignore[arg-type]
    bad = ragaudit("export", "tables", str(tmp_path / "y"), "--format", "xlsx", cwd=tmp_path)
    assert bad.returncode == 2 and "'xlsx' is not one of 'csv', 'parquet'" in bad.stderr


def test_a_tracking_uri_that_cannot_be_reached_is_named_without_its_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An MLflow server that refuses the connection: one line naming the URI with its
    password and token masked (MLflow's own message quotes the URI, and is masked too),
    through the CLI as through Python."""
    pytest.importorskip("mlflow", reason="the export to MLflow needs ragaudit[mlflow]")
    import socket

    project = _analyzed(tmp_path)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    uri = f"http://bob:pw-TrackSecret42@127.0.0.1:{port}/?token=tq-Secret77"
    env = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"}  # the leak is tested, not the waits
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    with pytest.raises(ra.UserError) as caught:
        project.export_mlflow(tracking_uri=uri, experiment="e")
    message = str(caught.value)
    assert message.startswith(f"MLflow (http://bob:***@127.0.0.1:{port}/?token=***)")
    assert "TrackSecret42" not in message and "Secret77" not in message
    result = ragaudit("export", "mlflow", "--tracking-uri", uri, cwd=tmp_path, env=env)
    assert result.returncode != 0
    assert "TrackSecret42" not in result.stderr + result.stdout
    assert "Secret77" not in result.stderr + result.stdout
    assert "Traceback" not in result.stderr and "***" in result.stderr
