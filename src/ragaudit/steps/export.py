"""``ragaudit export``: a run's results where the user's other tools read them. To MLflow
(the run's configuration as parameters, the summary's figures as metrics with their
interval bounds, report.html, summary.json and the answer table as artifacts), or as plain
CSV or Parquet tables for anything else.

A run is exported from what earlier steps wrote (summary.json from ``analyze``, the answer
table from the JSON Lines); nothing is computed again. A second export of the same run to
the same MLflow experiment updates its MLflow run instead of making another, as long as the
run's configuration is the same (MLflow never changes a logged parameter): a run analyzed
again with another configuration gets a new MLflow run, and the old one is tagged as
superseded by it."""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from ragaudit.errors import UserError
from ragaudit.rundir import RunDir

if TYPE_CHECKING:
    from ragaudit.analysis.summary import Summary

# The tag that names the run directory an MLflow run was exported from.
RUN_TAG = "ragaudit.run_dir"
SUPERSEDED_TAG = "ragaudit.superseded_by"
# MLflow's rule for metric and parameter names (letters, digits, _ - . space / :).
_NAME_UNSAFE = re.compile(r"[^\w\-. /:]")
_PARAM_MAX = 6000  # MLflow's limit on a parameter's value

TableFormat = Literal["csv", "parquet"]


@dataclass
class MlflowExport:
    """What an export to MLflow did: the MLflow run (``run_id``; ``updated``: an earlier
    export's run was updated rather than a new one made), what was logged, and the figures
    left out because they are undefined (an MLflow metric cannot be null)."""

    tracking_uri: str
    experiment: str
    run_id: str
    updated: bool
    params: int
    metrics: int
    artifacts: list[str]
    undefined: list[str] = field(default_factory=list)
    superseded: str | None = None  # the earlier MLflow run of another configuration


def _summary(run: RunDir) -> Summary:
    from ragaudit.report.summary_file import read_summary

    if not run.summary.is_file():
        raise UserError(f"no summary at {run.summary}: run ragaudit analyze first")
    return read_summary(run.summary)


def _name(text: str) -> str:
    """``text`` as an MLflow metric or parameter name (``recall@5`` -> ``recall_5``)."""
    return _NAME_UNSAFE.sub("_", text)


def _params(run: RunDir) -> dict[str, str]:
    """The run's configuration (the resolved ragaudit.yaml the last step wrote, secrets
    already masked) flattened to dotted names; lists and long values as JSON text."""
    if not run.config.is_file():
        return {}
    data = yaml.safe_load(run.config.read_text(encoding="utf-8")) or {}
    out: dict[str, str] = {}

    def walk(value: Any, prefix: str) -> None:
        if isinstance(value, dict) and value:
            for key, item in value.items():
                walk(item, f"{prefix}.{key}" if prefix else str(key))
            return
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        out[_name(prefix)] = text[:_PARAM_MAX]

    walk(data, "")
    return out


def figure_rows(summary: Summary) -> list[tuple[str, float | None, float | None, float | None]]:
    """Every figure of the summary as (name, value, low, high): ``system/variant/metric``
    for the proportions, ``system/variant/retrieval/<metric>`` for the ranking metrics."""
    rows: list[tuple[str, float | None, float | None, float | None]] = []
    for row in summary.rows():
        name = f"{row['system']}/{row['variant']}/{row['metric']}"
        rows.append((name, row["value"], row["low"], row["high"]))
    for system, ranking in summary.retrieval_ranking.items():
        for variant, metrics in ranking.variants.items():
            for metric, mean in metrics.items():
                name = f"{system}/{variant}/retrieval/{metric}"
                rows.append((name, mean.value, mean.ci95[0], mean.ci95[1]))
    return rows


def export_mlflow(
    run: RunDir, *, tracking_uri: str | None = None, experiment: str = "ragaudit"
) -> MlflowExport:
    """Log the run to MLflow (``tracking_uri``: MLflow's own default when None, i.e.
    ``MLFLOW_TRACKING_URI``): parameters, metrics with ``_low``/``_high`` bounds,
    report.html, summary.json and answers.parquet; an earlier export of the same run with
    the same configuration is updated."""
    try:
        from mlflow.entities import Metric, Param, RunTag
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise UserError(
            "export to MLflow needs the mlflow extra: pip install 'ragaudit[mlflow]'"
        ) from None
    import time

    summary = _summary(run)
    params = _params(run)
    key = str(run.root.resolve())
    try:
        client = MlflowClient(tracking_uri=tracking_uri)
        found = client.get_experiment_by_name(experiment)
        experiment_id = found.experiment_id if found else client.create_experiment(experiment)
        earlier = client.search_runs(
            [experiment_id],
            filter_string=f"tags.`{RUN_TAG}` = '{key}'",
            order_by=["attributes.start_time DESC"],
        )
        current = [r for r in earlier if SUPERSEDED_TAG not in r.data.tags]
        reuse = current[0] if current and current[0].data.params == params else None
        superseded = None
        if reuse is not None:
            run_id = reuse.info.run_id
            client.update_run(run_id, status="RUNNING")
        else:
            made = client.create_run(experiment_id, run_name=run.root.name, tags={RUN_TAG: key})
            run_id = made.info.run_id
            if current:
                superseded = current[0].info.run_id
                client.set_tag(superseded, SUPERSEDED_TAG, run_id)
        now = int(time.time() * 1000)
        metrics: list[Metric] = []
        undefined: list[str] = []
        for name, value, low, high in figure_rows(summary):
            if value is None:
                undefined.append(name)  # never NaN: an undefined figure is not logged
                continue
            for suffix, number in (("", value), ("_low", low), ("_high", high)):
                if number is not None:
                    metrics.append(Metric(_name(name + suffix), float(number), now, 0))
        # MLflow takes at most 1000 metrics and 100 parameters per batch.
        if reuse is None:
            items = [Param(k, v) for k, v in params.items()]
            for start in range(0, len(items), 100):
                client.log_batch(run_id, params=items[start : start + 100])
        for start in range(0, len(metrics), 1000):
            client.log_batch(run_id, metrics=metrics[start : start + 1000])
        client.log_batch(run_id, tags=[RunTag("ragaudit.undefined_figures", str(len(undefined)))])
        artifacts = _log_artifacts(client, run_id, run)
        client.set_terminated(run_id)
    except MlflowException as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        where = tracking_uri or "its default tracking URI"
        raise UserError(f"MLflow ({where}): {first}") from None
    return MlflowExport(
        tracking_uri=str(client.tracking_uri),
        experiment=experiment,
        run_id=run_id,
        updated=reuse is not None,
        params=len(params),
        metrics=len(metrics),
        artifacts=artifacts,
        undefined=undefined,
        superseded=superseded,
    )


def _log_artifacts(client: Any, run_id: str, run: RunDir) -> list[str]:
    """report.html and summary.json as they are, and the answer table as Parquet (built
    from the JSON Lines where answers.parquet is stale)."""
    from ragaudit.records.io import write_parquet_atomic
    from ragaudit.store.answers import read_answer_table

    logged: list[str] = []
    for path in (run.report, run.summary):
        if path.is_file():
            client.log_artifact(run_id, str(path))
            logged.append(path.name)
    if run.dataset.is_file():
        with tempfile.TemporaryDirectory(prefix="ragaudit-export-") as folder:
            table = Path(folder) / "answers.parquet"
            write_parquet_atomic(table, read_answer_table(run, write=False))
            client.log_artifact(run_id, str(table))
            logged.append(table.name)
    return logged


def export_tables(run: RunDir, out: Path, fmt: TableFormat = "parquet") -> list[Path]:
    """Write the run's results as plain tables into ``out`` (``csv`` or ``parquet``):
    ``figures`` (one row per system x variant x metric, with its interval and n),
    ``comparisons`` (which system or wording is worse, by how much), ``ranking`` (the
    retrieval metrics) and ``answers`` (one row per answer: the answer table); returns the
    files written, each replaced atomically. List columns (retrieved ids, scores) are JSON
    text in CSV. Undefined figures are empty cells (CSV) or nulls (Parquet), never NaN."""
    import pandas as pd

    from ragaudit.records.io import atomic_write_text, write_parquet_atomic
    from ragaudit.store.answers import read_answer_table

    if fmt not in ("csv", "parquet"):
        raise UserError(f"export: format {fmt!r}: use csv or parquet")
    if out.exists() and not out.is_dir():
        raise UserError(f"export: {out} is a file, not a folder")
    if out.resolve() == run.root.resolve() or run.root.resolve() in out.resolve().parents:
        raise UserError(f"export: {out} is inside the run folder: give a folder outside it")
    summary = _summary(run)
    frames: dict[str, pd.DataFrame] = {
        "figures": summary.to_pandas(),
        "comparisons": summary.comparisons_to_pandas(),
        "ranking": summary.ranking_to_pandas(),
    }
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    answers = read_answer_table(run, write=False) if run.dataset.is_file() else None
    for name, frame in frames.items():
        path = out / f"{name}.{fmt}"
        if fmt == "csv":
            atomic_write_text(path, frame.to_csv(index=False))
        else:
            import pyarrow as pa

            write_parquet_atomic(path, pa.Table.from_pandas(frame, preserve_index=False))
        written.append(path)
    if answers is not None:
        path = out / f"answers.{fmt}"
        if fmt == "parquet":
            write_parquet_atomic(path, answers)
        else:
            frame = answers.to_pandas()
            for column in frame.columns:
                if frame[column].map(lambda v: isinstance(v, list | tuple | dict)).any():
                    frame[column] = frame[column].map(
                        lambda v: None if v is None else json.dumps(_plain(v), default=str)
                    )
            atomic_write_text(path, frame.to_csv(index=False))
        written.append(path)
    return written


def _plain(value: Any) -> Any:
    """Arrow's list and struct values (numpy arrays, tuples) as plain lists and dicts."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
