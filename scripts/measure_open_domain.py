"""GRAMMAR's Table 4 on the paper's own Spider-Open data: Acc_retrieval_db of the paper's
RAG answers (keyword matching, top-1 page, GPT-3.5, judged by GPT-4) before and after the
open-domain filter, with the embedded model as the LLM-only system that finds the groups
a model answers from memory (issue 39, item 2).

The paper's answers come from ``../shared/reference/grammar/spider_open_{short,long}_
unbalanced.jsonl``. The LLM-only system is run and judged by ragaudit itself, as a user
would (``ragaudit run``, ``ragaudit judge``, in a run folder whose dataset is the paper's
queries), and ``ragaudit analyze --neutral ... --llm-only llm-only`` gives the figures.

    .venv/bin/python scripts/measure_open_domain.py --out /tmp/spider-open \
        [--record tests/data/open_domain_llm_only.json]

``--record`` writes what the LLM-only system answered and whether the judge found it right,
per query id (no query text: the queries are the reference data's), for the test that
recomputes the figures without the model (tests/test_open_domain_reference.py). The run
folder keeps the LLM cache: a second run asks nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT.parent / "shared" / "reference" / "grammar"
RUN = "spider-open"
LLM_ONLY = "llm-only"
PAPER_SYSTEM = "paper-keyword-top1"
CONFIG = f"""\
schema_version: 1
run:
  name: {RUN}
  root: runs
llm:
  model: local
systems:
  - name: {LLM_ONLY}
    generator: llm_only
"""


def _paper_files(reference: Path) -> list[Path]:
    return [reference / f"spider_open_{v}_unbalanced.jsonl" for v in ("short", "long")]


def _write_dataset(reference: Path, run_dir: Path) -> int:
    """The paper's queries as ragaudit's dataset (same query and group ids, no gold ids: the
    LLM-only system retrieves nothing)."""
    from ragaudit.records.io import write_jsonl_atomic
    from ragaudit.records.models import QueryRecord, Reference

    records = []
    for path in _paper_files(reference):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            records.append(
                QueryRecord(
                    query_id=row["query_id"],
                    group_id=row["group_id"],
                    template_id=row["template_id"],
                    variant=row["variant"],
                    query=row["query"],
                    reference=Reference.from_values([row["reference"]]),
                )
            )
    run_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl_atomic(run_dir / "dataset.jsonl", records)
    return len(records)


def _ragaudit(*args: str, cwd: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "ragaudit", *args], cwd=cwd)
    if done.returncode:
        raise SystemExit(f"ragaudit {' '.join(args)} failed (exit {done.returncode})")


def _llm_only_rows(reference: Path, run_dir: Path) -> list[dict[str, object]]:
    """The LLM-only system's judged answers as neutral rows (the paper's fields)."""
    responses = {
        r["query_id"]: r
        for r in map(json.loads, (run_dir / "responses" / f"{LLM_ONLY}.jsonl").open())
    }
    judged = {
        j["query_id"]: j
        for j in map(json.loads, (run_dir / "judgements" / f"{LLM_ONLY}.jsonl").open())
    }
    rows = []
    for path in _paper_files(reference):
        for line in path.read_text(encoding="utf-8").splitlines():
            paper = json.loads(line)
            qid = paper["query_id"]
            rows.append(
                {
                    "system": LLM_ONLY,
                    "query_id": qid,
                    "group_id": paper["group_id"],
                    "template_id": paper["template_id"],
                    "variant": paper["variant"],
                    "response": responses[qid]["response"],
                    "retrieved_ids": [],
                    "gold_ids": None,
                    "correct": bool(judged[qid]["correct"]),
                }
            )
    return rows


def figures(summary: dict[str, object]) -> dict[str, object]:
    """What Table 4 compares, from ``summary.json``."""
    systems = summary["systems"]
    assert isinstance(systems, dict)
    paper = systems[PAPER_SYSTEM]
    llm_only = systems[LLM_ONLY]
    return {
        "acc_retrieval_db": paper["acc_retrieval_db"],
        "acc_retrieval_db_closed_domain": paper["acc_retrieval_db_closed_domain"],
        "open_domain_groups": paper["open_domain_groups"],
        "llm_only_accuracy": {v: m["accuracy"] for v, m in llm_only["variants"].items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the run folder to use")
    parser.add_argument("--reference", type=Path, default=REFERENCE)
    parser.add_argument("--record", type=Path, help="write the LLM-only answers here")
    args = parser.parse_args()
    folder: Path = args.out
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ragaudit.yaml").write_text(CONFIG, encoding="utf-8")
    run_dir = folder / "runs" / RUN
    print(f"{_write_dataset(args.reference, run_dir)} queries", file=sys.stderr)
    _ragaudit("run", cwd=folder)
    _ragaudit("judge", cwd=folder)
    rows = _llm_only_rows(args.reference, run_dir)
    neutral = folder / "llm_only.jsonl"
    neutral.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    paper = [a for p in _paper_files(args.reference) for a in ("--neutral", str(p))]
    _ragaudit(
        "analyze",
        *paper,
        "--neutral",
        str(neutral),
        "--system",
        PAPER_SYSTEM,
        "--llm-only",
        LLM_ONLY,
        "--retrieval-rule",
        "same_set",
        cwd=folder,
    )
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    print(json.dumps(figures(summary), indent=2))
    if args.record:
        recorded = {r["query_id"]: [r["correct"], r["response"]] for r in rows}
        args.record.write_text(json.dumps(recorded, indent=0) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
