"""examples/quickstart.ipynb, the journey in a notebook, executed as a user would run it
(a real Jupyter kernel), with the scripted LLM; its DataFrames and chart come out."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.conftest import IN_CI, REPO

NOTEBOOK = REPO / "examples" / "quickstart.ipynb"


@pytest.mark.timeout(600)
def test_the_quickstart_notebook_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not all(importlib.util.find_spec(m) for m in ("nbclient", "nbformat", "ipykernel")):
        if IN_CI:
            pytest.fail("CI must run the notebook: install ragaudit[dev]")
        pytest.skip("nbclient, nbformat and ipykernel are not installed (ragaudit[dev])")
    import nbclient
    import nbformat

    monkeypatch.setenv("RAGAUDIT_NOTEBOOK_LLM", "scripted")
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend shows it
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "\n".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", "")) for o in outputs
    )
    assert "SQL templates;" in text and "questions" in text
    assert "accuracy" in text and "robustness" in text  # the summary's DataFrame
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the chart
    run = tmp_path / "quickstart" / "runs" / "default"
    assert (run / "summary.json").exists() and (run / "report.html").exists()
