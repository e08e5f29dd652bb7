"""The import of a question set of one's own (``generate --import``), and its re-import
after answers exist: what the fingerprints of every record cost there.

A JSON Lines set of 200,000 questions over 20,000 contexts is imported into a new run.
Then a system's 200,000 responses and their judgements are written (each judgement with
the digests of the response and the reference it judged), 1% of the questions are edited,
and the set is imported again: the edited questions get new ids, and their responses and
judgements leave the run (``remove_records``).

Baselines in the same run: reading and parsing the same file with ``json.loads`` (reported
as a ratio), and the first import. Target: the re-import, which reads the run's records
and rewrites the files that held the edited questions' records, within 3x the first
import, with exactly the edited questions' records removed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# The same read-and-parse baseline as the analysis benchmark's.
from benchmarks.bench_analysis import READ_ONLY  # noqa: E402

QUESTIONS = 200_000
PER_CONTEXT = 10
EDITED_EVERY = 100  # 1% of the questions edited before the re-import

IMPORT = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
from ragaudit.config import load_config
from ragaudit.rundir import RunDir
from ragaudit.steps.imports import import_questions
config = load_config(Path({config!r}))
run = RunDir.from_config(config)
start = time.perf_counter()
stats = import_questions(config, run, Path({data!r}))
print(json.dumps({{"seconds": time.perf_counter() - start, "removed": stats.records_removed}}))
"""

RECORDS = """
import json, sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from ragaudit.config import load_config
from ragaudit.records.io import read_jsonl, write_jsonl_atomic
from ragaudit.records.models import Judgement, QueryRecord, ResponseRecord
from ragaudit.rundir import RunDir
config = load_config(Path({config!r}))
run = RunDir.from_config(config)
queries = list(read_jsonl(run.dataset, QueryRecord))
responses = [ResponseRecord(query_id=q.query_id, system="rag", response=q.reference.display)
             for q in queries]
run.responses_dir.mkdir(parents=True, exist_ok=True)
run.judgements_dir.mkdir(parents=True, exist_ok=True)
write_jsonl_atomic(run.responses("rag"), responses)
write_jsonl_atomic(run.judgements("rag"), (
    Judgement(query_id=q.query_id, system="rag", correct=True, method="match:exact",
              response_digest=r.digest, reference_digest=q.reference.digest)
    for q, r in zip(queries, responses)))
print(json.dumps({{"n": len(queries)}}))
"""


def write_set(path: Path, edited: bool = False) -> None:
    """The question set: every context stated once per question of it (the JSONL form)."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(QUESTIONS):
            c = i // PER_CONTEXT
            answer = f"value {i}"
            if edited and i % EDITED_EVERY == 0:
                answer = f"value {i} (edited)"
            row = {
                "id": f"q{i}",
                "context": f"Context {c}: " + " ".join(f"fact {c}-{k}" for k in range(40)),
                "question": f"What is the value of item {i}?",
                "answer": answer,
            }
            out.write(json.dumps(row) + "\n")


def _run(code: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1])
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data, edited = root / "set.jsonl", root / "set-edited.jsonl"
        write_set(data)
        write_set(edited, edited=True)
        config = root / "ragaudit.yaml"
        config.write_text(f"database: {{url: example}}\nrun: {{root: {root / 'runs'}}}\n")
        baseline = _run(READ_ONLY.format(data=str(data)))
        first = _run(IMPORT.format(repo=str(REPO), config=str(config), data=str(data)))
        _run(RECORDS.format(repo=str(REPO), config=str(config)))
        again = _run(IMPORT.format(repo=str(REPO), config=str(config), data=str(edited)))
        expected_removed = 2 * QUESTIONS // EDITED_EVERY  # a response and a judgement each
        return {
            "questions": QUESTIONS,
            "baseline_read_parse_s": round(baseline["seconds"], 2),
            "import_s": round(first["seconds"], 1),
            "import_to_read_parse": round(first["seconds"] / baseline["seconds"], 1),
            "reimport_s": round(again["seconds"], 1),
            "reimport_records_removed": again["removed"],
            "reimport_to_import": round(again["seconds"] / first["seconds"], 2),
            "target_met": again["seconds"] < 3 * first["seconds"]
            and again["removed"] == expected_removed,
        }


if __name__ == "__main__":
    for key, value in run().items():
        print(f"{key:30} {value}")
