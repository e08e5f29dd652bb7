"""The refresh of a large dataset (issue 38, part 1).

The 1,000,000-row database of ``bench_generate`` (SQLite, then DuckDB) and a run on it:
one template, one wording, so ``generate`` writes 1,000,000 grounded pairs. Then the data
changes (1% of the answers updated, 0.1% of the rows deleted, 1,000 rows inserted) and
``generate --refresh --new`` executes every group's SQL again and writes the dataset anew.

Baseline in the same run: ``generate`` of the same dataset (the step, through the same
run directory), timed in a fresh process as the refresh is, each with its peak memory.

Target: the refresh of the 1,000,000-pair dataset in under 2x the time of generating it
(the issue's acceptance), every class counted exactly as planted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_generate import ITEMS, build_duckdb, build_sqlite  # noqa: E402

UPDATED = ITEMS // 100  # item_id % 100 == 0: another colour
DELETED = ITEMS // 1000  # item_id % 1000 == 1
INSERTED = 1_000

SQL = "SELECT colour FROM item WHERE name = '[item.name]'"

STEP = """
import json, sys, time, resource
from pathlib import Path
sys.path.insert(0, {repo!r})
from ragaudit.config import load_config
from ragaudit.rundir import RunDir
config = load_config(Path({config!r}))
run = RunDir.from_config(config)
start = time.perf_counter()
if {refresh!r}:
    from ragaudit.steps.refresh import refresh_dataset
    report = refresh_dataset(config, run, new=True)
    classes = ("unchanged", "changed", "vanished", "new")
    out = {{k: getattr(report, k).model_dump() for k in classes}}
else:
    from ragaudit.steps.generate import generate_dataset
    stats = generate_dataset(config, run, config.generate)
    out = {{"pairs": stats.queries}}
out["seconds"] = time.perf_counter() - start
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def _step(config: Path, *, refresh: bool) -> dict[str, Any]:
    """``generate`` or ``generate --refresh --new`` in a fresh process (its own peak)."""
    code = STEP.format(repo=str(REPO), config=str(config), refresh=refresh)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _project(folder: Path, url: str) -> Path:
    """A ragaudit.yaml on ``url`` and a run with the one template and wording; its path."""
    from ragaudit.generate.sql.templates import SqlTemplate, save_templates
    from ragaudit.generate.text.templates import save_text_templates
    from ragaudit.rundir import RunDir

    config = folder / "ragaudit.yaml"
    config.write_text(
        f"run:\n  root: {folder / 'runs'}\n  name: bench\ndatabase:\n  url: {url}\n"
        "  timeout_s: 600\ngenerate:\n  unverified: true\n"
    )
    run = RunDir(folder / "runs" / "bench").create()
    save_templates(run.templates_sql, [SqlTemplate(id="colour-by-item-name", sql=SQL)])
    save_text_templates(
        run.templates_text, {"colour-by-item-name": {"short": ["Colour of item '[item.name]'?"]}}
    )
    return config


def _change(engine: str, path: Path) -> None:
    """Update 1% of the answers, delete 0.1% of the rows, insert 1,000."""
    statements = [
        "UPDATE item SET colour = 'grey' WHERE item_id % 100 = 0",
        "DELETE FROM item WHERE item_id % 1000 = 1",
    ]
    if engine == "sqlite":
        import sqlite3

        conn: Any = sqlite3.connect(path)
        statements.append(
            f"INSERT INTO item WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r "
            f"WHERE i < {INSERTED}) SELECT {ITEMS} + i, 'new-item-' || i, 'new-label-' || i, "
            "'red', 1 FROM r"
        )
    else:
        import duckdb

        conn = duckdb.connect(str(path))
        statements.append(
            f"INSERT INTO item SELECT {ITEMS} + i, 'new-item-' || i, 'new-label-' || i, 'red', 1 "
            f"FROM range(1, {INSERTED + 1}) t(i)"
        )
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


def run() -> dict[str, Any]:
    result: dict[str, Any] = {"items": ITEMS}
    ok = []
    with tempfile.TemporaryDirectory() as tmp:
        for engine, build, name in (
            ("sqlite", build_sqlite, "bench.sqlite"),
            ("duckdb", build_duckdb, "bench.duckdb"),
        ):
            folder = Path(tmp) / engine
            folder.mkdir()
            database = folder / name
            start = time.perf_counter()
            build(database)
            result[f"{engine}_build_s"] = round(time.perf_counter() - start, 1)
            config = _project(folder, f"{engine}:///{database}")
            generated = _step(config, refresh=False)
            _change(engine, database)
            refreshed = _step(config, refresh=True)
            ratio = refreshed["seconds"] / generated["seconds"]
            result[f"{engine}_generate_pairs"] = generated["pairs"]
            result[f"{engine}_generate_s"] = round(generated["seconds"], 1)
            result[f"{engine}_generate_peak_mb"] = round(generated["peak_mb"])
            result[f"{engine}_refresh_s"] = round(refreshed["seconds"], 1)
            result[f"{engine}_refresh_peak_mb"] = round(refreshed["peak_mb"])
            result[f"{engine}_refresh_over_generate"] = round(ratio, 2)
            for status in ("unchanged", "changed", "vanished", "new"):
                result[f"{engine}_{status}_groups"] = refreshed[status]["groups"]
            # Deleted rows that were also updated (item_id % 100 == 0 and % 1000 == 1
            # never meet): every class as planted.
            planted = (
                refreshed["changed"]["groups"] == UPDATED
                and refreshed["vanished"]["groups"] == DELETED
                and refreshed["new"]["groups"] == INSERTED
                and refreshed["unchanged"]["groups"] == ITEMS - UPDATED - DELETED
            )
            result[f"{engine}_counted_as_planted"] = planted
            ok += [planted, ratio < 2, generated["pairs"] >= 1_000_000]
    result["target_refresh_under_2x_generate"] = all(ok)
    return result


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
