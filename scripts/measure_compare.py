"""Measure what docs/compare.md quotes.

* ``squad``: on the SQuAD 2.0 subset's 83 paragraphs, do SQuAD's human questions and
  ragaudit's document-generated ones rank a grid of retrieval configurations alike on
  Recall@5? The human questions come in with ``ragaudit generate --import``; the generated
  ones are the pairs both strategies (statements, simple) wrote from the same paragraphs
  for docs/documents.md, answered again from their recorded replies
  (tests/data/document_balance_replies.json), so no model runs. Then ``ragaudit run`` and
  ``ragaudit compare``, as a user would type them.
* ``gate``: the regression gate's false-alarm rate and power by simulation, over the
  designs docs/compare.md lists (wordings per group, how far the candidate's verdicts
  follow the baseline's).

    .venv/bin/python scripts/measure_compare.py squad --out /tmp/compare-squad
    .venv/bin/python scripts/measure_compare.py gate --pairs 2000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.document_set import (  # noqa: E402
    balance_options,
    default_params,
    squad_contexts,
)
from tests.support.replay_llm import ReplayBackend  # noqa: E402

from ragaudit.documents.generator import DocumentGenerator, queries_of  # noqa: E402
from ragaudit.llm.client import LLMClient  # noqa: E402
from ragaudit.records.io import write_jsonl_atomic  # noqa: E402
from ragaudit.records.models import CandidateRecord, QueryRecord  # noqa: E402
from ragaudit.steps.documents import corpus_search, question_embedder  # noqa: E402

SQUAD = ROOT.parent / "shared" / "reference" / "squad2-subset"
SQUAD_FILE = SQUAD / "dev-v2.0-subset.json"
REPLIES = ROOT / "tests" / "data" / "document_balance_replies.json"
BALANCE_SIZE = 32  # what docs/documents.md asked of each strategy

SQUAD_CONFIG = """\
# The SQuAD 2.0 subset's paragraphs as the corpus (written by generate --import), and a
# grid of retrieval-only configurations: no LLM.
run: {name: squad}
corpus: {path: runs/squad/imported/contexts.jsonl}
systems:
  - name: ret
    generator: none
    grid:
      retriever: [keyword, bm25, dense, hybrid]
      text_weight: [0.3, 0.5, 0.7]
      k: [1, 3, 5]
"""


def ragaudit(*args: str, cwd: Path) -> str:
    """Run the ragaudit command as a user would, echoing it; stop on failure."""
    print(f"$ ragaudit {' '.join(args)}", flush=True)
    done = subprocess.run(
        [sys.executable, "-m", "ragaudit", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "160", "NO_COLOR": "1"},
    )
    if done.returncode != 0:
        sys.exit(f"ragaudit {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def generated_squad_questions() -> list[CandidateRecord]:
    """The pairs both strategies wrote from the subset's paragraphs, replayed."""
    contexts = squad_contexts(SQUAD)
    replies = ReplayBackend.from_file(REPLIES)
    found: list[CandidateRecord] = []
    with LLMClient(replies, default_params=default_params()) as llm:
        for strategy in ("statements", "simple"):
            generator = DocumentGenerator(
                llm,
                balance_options(strategy, BALANCE_SIZE),
                contexts,
                embedder=question_embedder(),
                styles={},
                search=corpus_search(contexts),
            )
            found += asyncio.run(generator.generate())
    if replies.missing:
        sys.exit(f"{replies.missing} requests were not recorded: re-record {REPLIES}")
    return [r for r in found if r.accepted]


def _squad_id(context: str) -> str:
    """``Normans#3`` (the measurement's context ids) as generate --import names the
    paragraph: ``Normans/003``."""
    title, _, index = context.rpartition("#")
    return f"{title}/{int(index):03d}"


def squad(args: argparse.Namespace) -> None:
    """Human vs generated questions on the same paragraphs, retrieval ranked on Recall@5."""
    if not SQUAD_FILE.exists():
        sys.exit(f"the SQuAD reference subset is not at {SQUAD}")
    out: Path = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / "ragaudit.yaml").write_text(SQUAD_CONFIG)
    print(ragaudit("generate", "--import", str(SQUAD_FILE), cwd=out))
    accepted = generated_squad_questions()
    queries: list[QueryRecord] = []
    for record in accepted:
        mapped = record.model_copy(update={"gold_ids": [_squad_id(g) for g in record.gold_ids]})
        queries += queries_of(mapped, [])
    dataset = out / "runs" / "squad" / "dataset.jsonl"
    imported = [QueryRecord.model_validate_json(line) for line in dataset.read_text().splitlines()]
    write_jsonl_atomic(dataset, [*imported, *queries])
    answerable = sum(bool(q.gold_ids) for q in queries)
    print(
        f"generated: {len(accepted)} accepted pairs ({answerable} with a gold paragraph), "
        f"{len(queries)} queries; human: {len(imported)} questions, "
        f"{sum(bool(q.gold_ids) for q in imported)} answerable"
    )
    start = time.perf_counter()
    print(ragaudit("run", cwd=out)[-2000:])
    print(f"run: {time.perf_counter() - start:.1f} s for the grid")
    for k in (5, 1):
        print(
            ragaudit("compare", "--metric", f"recall@{k}", "--reference", "imported", cwd=out)[
                -6000:
            ]
        )
    print((out / "runs" / "squad" / "compare.md").read_text())


def gate(args: argparse.Namespace) -> None:
    """False-alarm rate and power of the gate over several designs."""
    import numpy as np

    from ragaudit.analysis.gate import gate_check
    from ragaudit.analysis.significance import PairedCounts

    groups = 100

    def pair(
        rng: np.random.Generator, drop: float, wordings: int, follow: float, groups: int = groups
    ) -> PairedCounts:
        p = rng.uniform(0.2, 0.9, size=groups)
        base = rng.random((groups, wordings)) < p[:, None]
        fresh = rng.random((groups, wordings)) < p[:, None]
        cand = np.where(rng.random((groups, wordings)) < follow, base, fresh)
        if drop:
            cand &= ~(rng.random((groups, wordings)) < drop / cand.mean())
        n = np.full(groups, wordings)
        return PairedCounts([str(i) for i in range(groups)], base.sum(1), n, cand.sum(1), n)

    print("| wordings per group | candidate follows baseline | margin | false alarms | "
          "caught: 10-point drop |")  # fmt: skip
    print("|---|---|---|---|---|")
    for wordings in (4, 2, 1):
        for follow in (0.0, 0.8):
            rates = []
            for drop in (0.0, 0.10):
                rng = np.random.default_rng(2026)
                hits = sum(
                    gate_check("s", "accuracy", pair(rng, drop, wordings, follow), seed=i).status
                    == "regression"
                    for i in range(args.pairs)
                )
                rates.append(hits / args.pairs)
            print(
                f"| {wordings} | {follow:.0%} | 0 | {rates[0]:.3f} | {rates[1]:.3f} |", flush=True
            )
    # The detectable drop each check states: how often a candidate that loses exactly it is
    # caught (the gate claims 80%).
    from ragaudit.analysis.gate import detectable_drop

    print("\n| groups | wordings | follows baseline | stated detectable drop | caught at it |")
    print("|---|---|---|---|---|")
    for size, wordings, follow in (
        (100, 4, 0.0), (100, 2, 0.0), (100, 1, 0.0), (100, 4, 0.8), (20, 4, 0.0), (11, 4, 0.0)
    ):  # fmt: skip
        rng = np.random.default_rng(1)
        stated = float(
            np.median(
                [detectable_drop(pair(rng, 0.0, wordings, follow, size), 0.05) for _ in range(50)]
            )
        )
        n = max(100, args.pairs // 3)
        hits = sum(
            gate_check("s", "accuracy", pair(rng, stated, wordings, follow, size), seed=i).status
            == "regression"
            for i in range(n)
        )
        print(f"| {size} | {wordings} | {follow:.0%} | {stated:.3f} | {hits / n:.2f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("squad", help="human vs generated questions on SQuAD's paragraphs")
    one.add_argument("--out", type=Path, default=Path("/tmp/ragaudit-compare-squad"))
    two = sub.add_parser("gate", help="the gate's false-alarm rate and power, simulated")
    two.add_argument("--pairs", type=int, default=1000)
    args = parser.parse_args()
    {"squad": squad, "gate": gate}[args.what](args)


if __name__ == "__main__":
    main()
