"""Analysis at scale (issue 4): 1,000,000 judged records -> every metric and the paired
tests, timed, with the peak memory of the process that did it.

The records are synthetic neutral JSONL (2 variants x 100,000 groups... see GROUPS) written
to a file first; the measured work is the whole ``ragaudit analyze`` step: reading the
file, building the examples, the metrics per variant, Acc_retrieval_db across variants,
the group-paired bootstrap and permutation tests, and writing summary.json, summary.md
and the per-group drill-down. Baseline in the same run: reading and JSON-parsing the
same file and nothing else, so the ratio shows what the analysis itself adds.

Target: under 30 s and 2 GB.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RECORDS = 1_000_000
GROUPS = 100_000  # 5 queries per group and variant, 2 variants

ANALYZE = """
import json, sys, time, resource
from pathlib import Path
sys.path.insert(0, {repo!r})
from ragaudit.steps.analyze import run_analysis
from ragaudit.rundir import RunDir
start = time.perf_counter()
result = run_analysis(RunDir(Path({out!r})), neutral=[Path({data!r})], system="bench")
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"seconds": seconds, "peak_mb": peak,
                   "n": sum(m.n_queries for m in result.summaries["bench"].variants.values())}}))
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


def write_records(path: Path) -> None:
    rng = random.Random(7)
    per = RECORDS // (GROUPS * 2)
    with path.open("w") as f:
        for g in range(GROUPS):
            difficulty = rng.random()
            for variant, shift in (("short", 0.0), ("long", 0.1)):
                for i in range(per):
                    correct = rng.random() > difficulty + shift
                    gold = [f"d{g}"]
                    retrieved = gold if (correct or rng.random() < 0.3) else [f"d{g + 1}"]
                    f.write(
                        json.dumps(
                            {
                                "query_id": f"q{g}-{variant}-{i}",
                                "group_id": f"g{g}",
                                "template_id": "t",
                                "variant": variant,
                                "query": f"question {g} {i}",
                                "reference": "answer",
                                "response": "answer" if correct else "no",
                                "retrieved_ids": retrieved,
                                "gold_ids": gold,
                                "correct": correct,
                            }
                        )
                        + "\n"
                    )


def _run(code: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "judged.jsonl"
        write_records(data)
        baseline = _run(READ_ONLY.format(data=str(data)))
        result = _run(ANALYZE.format(repo=str(REPO), out=str(Path(tmp) / "run"), data=str(data)))
    return {
        "records": result["n"],
        "groups": GROUPS,
        "analyze_s": round(result["seconds"], 1),
        "analyze_peak_mb": round(result["peak_mb"]),
        "baseline_read_parse_s": round(baseline["seconds"], 1),
        "ratio_to_read_parse": round(result["seconds"] / baseline["seconds"], 1),
        "target_met": result["n"] == RECORDS
        and result["seconds"] < 30
        and result["peak_mb"] < 2048,
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
