"""``ragaudit world`` at scale (issue 6): a 1,000,000-row company with its 400,000 project
reports, in a fresh process, timed, with its peak memory.

Baseline in the same run: the IO floor. The same number of rows per table, with the same
shapes but fixed values, written to SQLite the same way (one executemany per table), and
the same number of documents of the same length written as JSON Lines. The ratio shows
what generating names, dates, the supervision tree and varied report wording adds.

Target: under 2 minutes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SIZE = 1_000_000

WORLD = """
import json, resource, sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
from ragaudit.world.build import build_world
start = time.perf_counter()
s = build_world(Path({out!r}), size={size}, seed=0, engine={engine!r})
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, "rows": sum(s.rows.values()), "documents": s.documents,
                   "facts": s.facts,
                   "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""

FLOOR = """
import json, sqlite3, sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
from ragaudit.world.company import SCHEMA
out = Path({out!r}); out.mkdir()
counts = {counts!r}
start = time.perf_counter()
conn = sqlite3.connect(out / "floor.sqlite")
conn.execute("PRAGMA journal_mode=OFF"); conn.execute("PRAGMA synchronous=OFF")
for table, n in counts.items():
    cols = SCHEMA[table]
    conn.execute(f'CREATE TABLE "{{table}}" ({{", ".join(cols)}})')
    rows = ((f"{{table}} row {{i}}",) + ("value",) * (len(cols) - 1) for i in range(n))
    conn.executemany(f'INSERT INTO "{{table}}" VALUES ({{", ".join("?" * len(cols))}})', rows)
conn.commit(); conn.close()
text = {text!r}
with open(out / "documents.jsonl", "w") as f:
    for i in range(counts["Project"]):
        f.write(json.dumps({{"id": f"doc {{i}}", "text": text}}) + "\\n")
print(json.dumps({{"seconds": time.perf_counter() - start}}))
"""


def _run(code: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run() -> dict[str, Any]:
    result: dict[str, Any] = {"size": SIZE}
    with tempfile.TemporaryDirectory() as tmp:
        for engine in ("sqlite", "duckdb"):
            out = str(Path(tmp) / engine)
            world = _run(WORLD.format(repo=str(REPO), out=out, size=SIZE, engine=engine))
            result[f"{engine}_seconds"] = round(world["seconds"], 1)
            result[f"{engine}_peak_mb"] = round(world["peak_mb"])
            result["rows"] = world["rows"]
            result["documents"] = world["documents"]
            result["facts_stated"] = world["facts"]
        docs = Path(tmp) / "sqlite" / "documents.jsonl"
        with docs.open() as handle:
            sample = json.loads(handle.readline())["text"]
        counts = {"Department": 8, "Employee": 349_998, "Client": 249_998, "Project": 399_996}
        floor = _run(
            FLOOR.format(repo=str(REPO), out=str(Path(tmp) / "floor"), counts=counts, text=sample)
        )
    result["baseline_io_floor_s"] = round(floor["seconds"], 1)
    result["sqlite_ratio_to_floor"] = round(result["sqlite_seconds"] / floor["seconds"], 1)
    result["target_met"] = (
        result["rows"] >= SIZE - 10
        and result["sqlite_seconds"] < 120
        and result["duckdb_seconds"] < 120
    )
    return result


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
