"""``ragaudit export``: a run's results to MLflow, or as CSV / Parquet tables."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from ragaudit.cli.common import project_for
from ragaudit.cli.console import console
from ragaudit.cli.options import ConfigOption, TableFormat

export_app = typer.Typer(
    help="Send a run's results to an experiment tracker (MLflow), or write them as tables.",
    no_args_is_help=True,
)


@export_app.command("mlflow", short_help="Log the run to MLflow (updates an earlier export).")
def export_mlflow_cmd(
    config_path: ConfigOption = None,
    tracking_uri: Annotated[
        str | None,
        typer.Option(
            "--tracking-uri",
            help="Where MLflow keeps runs (sqlite:///mlflow.db, http://host:5000); default: "
            "MLFLOW_TRACKING_URI, else MLflow's own default.",
        ),
    ] = None,
    experiment: Annotated[
        str, typer.Option("--experiment", help="The MLflow experiment (made if missing).")
    ] = "ragaudit",
) -> None:
    """Log the run to MLflow: its configuration as parameters, every figure of summary.json
    with its 95% interval as metrics, and report.html, summary.json and the answer table as
    artifacts. Exporting the same run again updates its MLflow run. Needs the mlflow extra."""
    done = project_for(config_path).export_mlflow(tracking_uri=tracking_uri, experiment=experiment)
    verb = "updated" if done.updated else "made"
    console.print(
        f"MLflow run {done.run_id} {verb} in experiment '{done.experiment}' at "
        f"{done.tracking_uri}: {done.params} parameters, {done.metrics} metrics, artifacts "
        f"{', '.join(done.artifacts) or 'none'}",
        markup=False,
    )
    if done.undefined:
        console.print(
            f"not logged: {len(done.undefined)} undefined figures (an MLflow metric cannot be "
            f"null), e.g. {done.undefined[0]}",
            markup=False,
        )
    if done.superseded:
        console.print(
            f"a new MLflow run, since {done.why_new}: MLflow run {done.superseded} is tagged "
            "superseded by this one",
            markup=False,
        )


@export_app.command("tables", short_help="Write the results as CSV or Parquet tables.")
def export_tables_cmd(
    out: Annotated[Path, typer.Argument(help="Folder to write the tables into.")],
    config_path: ConfigOption = None,
    fmt: Annotated[
        TableFormat, typer.Option("--format", help="The tables' file format.")
    ] = TableFormat.parquet,
) -> None:
    """Write the run's figures, comparisons, retrieval ranking and answers as CSV or
    Parquet tables, for any other tool."""
    chosen: Literal["csv", "parquet"] = "csv" if fmt is TableFormat.csv else "parquet"
    written = project_for(config_path).export_tables(out, fmt=chosen)
    for path in written:
        console.print(f"wrote {path}", markup=False)
