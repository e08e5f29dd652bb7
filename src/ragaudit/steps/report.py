"""The ``report`` step: report.html from a summary as current as the run's records (made
again first where an input changed since it was written), recorded in the run's manifest
with what it was made from, so that whoever passes the page on (``export mlflow``) makes
it again once those files change."""

from __future__ import annotations

from pathlib import Path

from ragaudit.report.build import write_report
from ragaudit.rundir import RunDir
from ragaudit.steps.analyze import current_summary
from ragaudit.store.manifest import notify, open_manifest


def report_run(run: RunDir, *, by: str = "report") -> Path:
    """Write report.html (after :func:`~ragaudit.steps.analyze.current_summary`, which
    analyzes again a stale summary) and record it; its path."""
    current_summary(run, by=by)
    manifest = open_manifest(run)
    inputs = manifest.input_digests("report")  # before they are read
    path = write_report(run)
    manifest.record("report", step=by, inputs=inputs)
    return path


def current_report(run: RunDir, *, by: str) -> Path:
    """The run's report.html, made again first (said once) where it is not the page of the
    files as they are now (``by``: the step that passes it on)."""
    manifest = open_manifest(run)
    state = manifest.check("report")
    manifest.save()
    if state.current:
        return run.report
    path = report_run(run, by=f"report (for {by})")
    notify(f"{run.report} was stale ({state.why}): made again")
    return path
