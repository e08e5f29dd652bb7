"""``ragaudit report``: report.html from what the earlier steps wrote."""

from __future__ import annotations

from ragaudit.cli.common import project_for
from ragaudit.cli.console import console
from ragaudit.cli.options import (
    ConfigOption,
)


def report_cmd(config_path: ConfigOption = None) -> None:
    """Write report.html: verdicts, metrics, charts, dataset, usage and drill-down, in one
    self-contained file (run ragaudit analyze first)."""
    path = project_for(config_path).report()
    console.print(f"wrote {path}", markup=False)
