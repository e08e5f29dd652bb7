"""Run every benchmark, print its figures and ratios, and exit non-zero if a target is missed.

Results are also written to benchmarks/results/<name>.json for docs/benchmarks.md. Names
given on the command line run only those: ``ragas`` (ragaudit and Ragas side by side, on
the embedded model, about 20 minutes) runs only when named (``make bench-ragas``).
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks import (  # noqa: E402
    bench_analysis,
    bench_documents,
    bench_from_db,
    bench_generate,
    bench_grid,
    bench_import,
    bench_labels,
    bench_llm_client,
    bench_model_limit,
    bench_ragas,
    bench_reference_free,
    bench_refresh,
    bench_systems,
    bench_wordings,
    bench_world,
)

BENCHMARKS = {
    "llm_client": bench_llm_client.run,
    "generate": bench_generate.run,
    "refresh": bench_refresh.run,
    "import": bench_import.run,
    "analysis": bench_analysis.run,
    "systems": bench_systems.run,
    "grid": bench_grid.run,
    "world": bench_world.run,
    "from_db": bench_from_db.run,
    "wordings": bench_wordings.run,
    "labels": bench_labels.run,
    "reference_free": bench_reference_free.run,
    # Document generation on the demo's reports, per accepted pair: about 5 minutes.
    "documents": bench_documents.run,
    # The embedded model's own limit, and each step's fraction of it given usage records
    # (RAGAUDIT_BENCH_USAGE=runs/demo/usage.json): about 7 minutes.
    "model-limit": bench_model_limit.run,
}
ON_REQUEST = {"ragas": bench_ragas.run}


def main() -> int:
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    missed = []
    known = {**BENCHMARKS, **ON_REQUEST}
    wanted = sys.argv[1:] or list(BENCHMARKS)
    unknown = [name for name in wanted if name not in known]
    if unknown:
        print(f"unknown benchmark {', '.join(unknown)}: use {', '.join(known)}")
        return 2
    for name in wanted:
        run = known[name]
        print(f"== {name}", flush=True)
        result = run()
        result["machine"] = f"{platform.machine()}, {platform.python_version()}"
        (out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
        for key, value in result.items():
            print(f"  {key:30} {value}")
        missed += [f"{name}.{k}" for k, v in result.items() if k.startswith("target_") and not v]
    if missed:
        print("targets missed: " + ", ".join(missed))
        return 1
    print("all targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
