"""Analysis at scale (issues 4 and 40): judged records -> every metric and the paired
tests, timed, with the peak memory of the process that did it.

The records are synthetic (2 variants x 5 queries per group, 10 answers per group): the
same records as neutral JSONL and as a Parquet answer table (answers.parquet's schema).
The measured work is the whole ``ragaudit analyze`` step: the metrics per variant,
Acc_retrieval_db across variants, the group-paired bootstrap and permutation tests, the
ranking metrics, and writing summary.json, summary.md and the per-group drill-down.

- 1,000,000 records in memory (the neutral file read into records), the path of a small
  run; baseline in the same run: reading and JSON-parsing the file and nothing else.
- 1,000,000 records in SQL (DuckDB over the Parquet table, ``engine="sql"``), and a check
  that its figures (every system figure, comparison and ranking metric) are those of the
  in-memory path.
- 10,000,000 records in SQL; baseline in the same run: DuckDB reading every column the
  analysis reads (one aggregate over them), so the ratio shows what the analysis adds.

Targets: 1M under 30 s (in memory, and in SQL); 10M under 120 s and 4 GB peak.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

RECORDS = 1_000_000
LARGE = int(os.environ.get("RAGAUDIT_BENCH_ANALYSIS_LARGE", 10_000_000))  # 0: skip
PER = 5  # queries per group and variant
CHUNK_GROUPS = 100_000  # records written 1,000,000 at a time
COMPARED = ("systems", "comparisons", "retrieval_ranking", "judge_failed")

# The peak resident memory of the measured process alone: VmHWM, its own since exec. (Its
# ru_maxrss starts at the benchmark's own size at the fork, which the records written by
# this process would make the figure of every measurement.)
PEAK = """
def peak_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
"""

ANALYZE = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
{peak}
from ragaudit.steps.analyze import run_analysis
from ragaudit.rundir import RunDir
start = time.perf_counter()
data = Path({data!r})
if data.suffix == ".parquet":
    result = run_analysis(RunDir(Path({out!r})), table=data, engine="sql")
else:
    result = run_analysis(RunDir(Path({out!r})), neutral=[data], system="bench", engine="memory")
seconds = time.perf_counter() - start
peak = peak_mb()
print(json.dumps({{"seconds": seconds, "peak_mb": peak,
                   "n": sum(m.n_queries for m in result.summaries["bench"].variants.values())}}))
"""

# What the run manifest costs a reader: the digests of the analysis's inputs (the neutral
# file of 1M records among them), hashed once (cold), then known by their stamps (warm:
# what every later check of the summary pays).
MANIFEST = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
from ragaudit.rundir import RunDir
from ragaudit.store.manifest import hash_file, open_manifest
data = Path({data!r})
start = time.perf_counter()
hash_file(data)
cold = time.perf_counter() - start
manifest = open_manifest(RunDir(Path({out!r})))
start = time.perf_counter()
state = manifest.check("summary")
warm = time.perf_counter() - start
print(json.dumps({{"cold": cold, "warm": warm, "current": state.current,
                   "mb": data.stat().st_size / 1e6}}))
"""

READ_ONLY = """
import json, sys, time
start = time.perf_counter()
n = 0
with open({data!r}) as f:
    for line in f:
        json.loads(line)
        n += 1
print(json.dumps({{"seconds": time.perf_counter() - start, "n": n}}))
"""


SCAN = """
import json, sys, time
import duckdb
{peak}
start = time.perf_counter()
duckdb.sql(\"\"\"SELECT count(DISTINCT group_id), count(DISTINCT query_id), sum(len(system)),
    sum(len(variant)), count_if(correct), count_if(retrieval_correct), count(method),
    sum(len(retrieved_ids)), sum(len(gold_ids)), sum(len(query)), sum(len(reference))
    FROM read_parquet({data!r})\"\"\").fetchall()
print(json.dumps({{"seconds": time.perf_counter() - start,
                   "peak_mb": peak_mb()}}))
"""


def _chunk(first: int, groups: int, rng: np.random.Generator) -> dict[str, Any]:
    """The records of groups ``first`` .. ``first + groups - 1``: per group a difficulty;
    per variant (``long`` a little harder) and query, the verdict, and the retrieved id
    (the gold document when right, and 30% of the time when wrong)."""
    g = np.repeat(np.arange(first, first + groups), 2 * PER)
    variant = np.tile(np.repeat([0, 1], PER), groups)
    i = np.tile(np.arange(PER), 2 * groups)
    difficulty = np.repeat(rng.random(groups), 2 * PER)
    correct = rng.random(g.size) > difficulty + 0.1 * variant
    found = correct | (rng.random(g.size) < 0.3)
    return {"g": g, "variant": variant, "i": i, "correct": correct, "found": found}


def write_records(jsonl: Path | None, parquet: Path, records: int, seed: int = 7) -> None:
    """The records as neutral JSONL (when ``jsonl`` is given) and as a Parquet answer
    table, the same records in both, written a million at a time."""
    from ragaudit.store.answers import _schema

    rng = np.random.default_rng(seed)
    groups = records // (2 * PER)
    names = np.array(["short", "long"])
    text = jsonl.open("w") if jsonl is not None else None
    with pq.ParquetWriter(parquet, _schema()) as writer:
        for first in range(0, groups, CHUNK_GROUPS):
            c = _chunk(first, min(CHUNK_GROUPS, groups - first), rng)
            gs, vs, ins = c["g"].tolist(), names[c["variant"]].tolist(), c["i"].tolist()
            oks, founds = c["correct"].tolist(), c["found"].tolist()
            query_id = [f"q{g}-{v}-{i}" for g, v, i in zip(gs, vs, ins, strict=True)]
            gold = [[f"d{g}"] for g in gs]
            retrieved = [[f"d{g}"] if f else [f"d{g + 1}"] for g, f in zip(gs, founds, strict=True)]
            n = len(gs)
            columns = {
                "system": ["bench"] * n,
                "query_id": query_id,
                "repeat": [0] * n,
                "query": [f"question {g} {i}" for g, i in zip(gs, ins, strict=True)],
                "variant": vs,
                "group_id": [f"g{g}" for g in gs],
                "source": ["sql"] * n,
                "label": [None] * n,
                "reference": ["answer"] * n,
                "answer": ["answer" if ok else "no" for ok in oks],
                "error": [None] * n,
                "correct": oks,
                "method": ["match"] * n,
                "retrieval_correct": founds,
                "retrieved_ids": retrieved,
                "gold_ids": gold,
                "gold_kind": [None] * n,
                "answerable": [True] * n,
                "where": [None] * n,
                "rationale": [None] * n,
                "scores": [[] for _ in range(n)],
            }
            writer.write_table(pa.Table.from_pydict(columns, schema=_schema()))
            if text is not None:
                for k in range(n):
                    text.write(
                        json.dumps(
                            {
                                "query_id": query_id[k],
                                "group_id": columns["group_id"][k],
                                "template_id": "t",
                                "variant": vs[k],
                                "query": columns["query"][k],
                                "reference": "answer",
                                "response": columns["answer"][k],
                                "retrieved_ids": retrieved[k],
                                "gold_ids": gold[k],
                                "correct": oks[k],
                            }
                        )
                        + "\n"
                    )
    if text is not None:
        text.close()


def _figures(out: Path) -> dict[str, Any]:
    """What the two paths must agree on, from summary.json."""
    summary = json.loads((out / "summary.json").read_text())
    return {key: summary[key] for key in COMPARED}


def _run(code: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data, table = root / "judged.jsonl", root / "answers-1m.parquet"
        write_records(data, table, RECORDS)
        baseline = _run(READ_ONLY.format(data=str(data)))
        memory = _run(
            ANALYZE.format(repo=str(REPO), out=str(root / "memory"), data=str(data), peak=PEAK)
        )
        sql = _run(
            ANALYZE.format(repo=str(REPO), out=str(root / "sql"), data=str(table), peak=PEAK)
        )
        same = _figures(root / "memory") == _figures(root / "sql")
        manifest = _run(MANIFEST.format(repo=str(REPO), out=str(root / "memory"), data=str(data)))
        out: dict[str, Any] = {
            "records": memory["n"],
            "groups": RECORDS // (2 * PER),
            "analyze_s": round(memory["seconds"], 1),
            "analyze_peak_mb": round(memory["peak_mb"]),
            "baseline_read_parse_s": round(baseline["seconds"], 1),
            "ratio_to_read_parse": round(memory["seconds"] / baseline["seconds"], 1),
            "sql_1m_s": round(sql["seconds"], 1),
            "sql_1m_peak_mb": round(sql["peak_mb"]),
            "sql_to_memory_1m": round(sql["seconds"] / memory["seconds"], 2),
            "sql_same_figures_1m": same,
            "manifest_input_mb": round(manifest["mb"]),
            "manifest_hash_cold_s": round(manifest["cold"], 2),
            "manifest_check_warm_s": round(manifest["warm"], 3),
            "manifest_cold_share_of_analyze": round(manifest["cold"] / memory["seconds"], 3),
            "manifest_summary_current": manifest["current"],
            "target_met": memory["n"] == RECORDS
            and manifest["current"]
            and memory["seconds"] < 30
            and memory["peak_mb"] < 2048,
            "target_sql_1m": same and sql["n"] == RECORDS and sql["seconds"] < 30,
        }
        data.unlink()
        for path in (root / "memory", root / "sql", table):
            subprocess.run(["rm", "-rf", str(path)], check=True)
        if LARGE:
            large = root / "answers-10m.parquet"
            write_records(None, large, LARGE)
            scan = _run(SCAN.format(data=str(large), peak=PEAK))
            big = _run(
                ANALYZE.format(repo=str(REPO), out=str(root / "large"), data=str(large), peak=PEAK)
            )
            out |= {
                "sql_large_records": big["n"],
                "sql_large_s": round(big["seconds"], 1),
                "sql_large_peak_mb": round(big["peak_mb"]),
                "baseline_scan_large_s": round(scan["seconds"], 1),
                "baseline_scan_large_peak_mb": round(scan["peak_mb"]),
                "sql_large_ratio_to_scan": round(big["seconds"] / scan["seconds"], 1),
                "target_sql_large": big["n"] == LARGE
                and big["seconds"] < 120
                and big["peak_mb"] < 4096,
            }
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
