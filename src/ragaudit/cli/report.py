"""``ragaudit report``: report.html from what the earlier steps wrote."""

from __future__ import annotations

from ragaudit.cli.common import resolve_config
from ragaudit.cli.console import console
from ragaudit.cli.options import (
    ConfigOption,
)
from ragaudit.rundir import RunDir


def report_cmd(config_path: ConfigOption = None) -> None:
    """Write report.html: verdicts, metrics, charts, dataset, usage and drill-down, in one
    self-contained file (run ragaudit analyze first)."""
    from ragaudit.report.build import write_report

    config = resolve_config(config_path)
    run = RunDir.from_config(config)
    run.lock("report")
    path = write_report(run)  # from what the earlier steps recorded, ragaudit.yaml included
    run.record_step(config, "report")
    console.print(f"wrote {path}", markup=False)
