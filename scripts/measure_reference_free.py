"""GRAMMAR's Table 1 on the paper's own data: faithfulness, answer relevancy and context
precision computed with the embedded model for a seeded sample of the published Aurp and
Spider-Closed answers, and each metric's reliability against GPT-4's stored verdicts
(precision, recall, wrong answers let through, AUROC), printed as docs/reference-free.md
quotes it.

``--record FILE`` writes the model's replies (keyed by request) for
tests/test_reference_free_rates.py, which replays them; ``--out FILE`` the figures as JSON.
The LLM cache (``--cache``) keeps what was asked, so a killed measurement resumes.

    .venv/bin/python scripts/measure_reference_free.py --size 60 \\
        --record tests/data/reference_free_grammar_replies.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.grammar_free import DATASETS, grammar_sample  # noqa: E402
from tests.support.replay_llm import Recording  # noqa: E402

from ragaudit.analysis.reliability import reference_free_figures  # noqa: E402
from ragaudit.analysis.summary import ReferenceFreeFigures  # noqa: E402
from ragaudit.config import LLMConfig  # noqa: E402
from ragaudit.judge.options import DEFAULT_THRESHOLDS  # noqa: E402
from ragaudit.judge.reference_free import FreeScorer, score_items, steps_of  # noqa: E402
from ragaudit.llm import make_llm  # noqa: E402
from ragaudit.records.models import FreeMetric, FreeScoreRecord  # noqa: E402
from ragaudit.report.text import RELIABILITY_HEADERS, reliability_rows  # noqa: E402
from ragaudit.steps.reference_free import sentence_encoder  # noqa: E402

GRAMMAR = ROOT.parent / "shared" / "reference" / "grammar"
METRICS: list[FreeMetric] = ["faithfulness", "answer_relevancy", "context_precision"]


def table(figures: ReferenceFreeFigures, dataset: str) -> str:
    """The reliability table of one dataset, as markdown."""
    metrics = figures.by_system[dataset]
    head = "| " + " | ".join(RELIABILITY_HEADERS) + " |\n|---|" + "---:|" * 8 + "\n"
    return head + "".join("| " + " | ".join(r) + " |\n" for r in reliability_rows(metrics))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=60, help="answers sampled per dataset")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ragaudit-free-cache.sqlite"))
    parser.add_argument("--record", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if not GRAMMAR.is_dir():
        print(f"GRAMMAR reference data not found at {GRAMMAR}")
        return 2
    samples = [grammar_sample(GRAMMAR, d, args.size) for d in args.datasets]
    records: list[FreeScoreRecord] = []
    replies: dict[str, str] = {}
    start = time.perf_counter()
    with make_llm(LLMConfig(model="local"), cache_path=args.cache) as base:
        llm = Recording.around(base)
        scorer = FreeScorer(llm, embed=sentence_encoder())
        per = steps_of(METRICS)
        for sample in samples:
            done = [0]

            def step(n: int, done: list[int] = done, total: int = per * len(sample.items)) -> None:
                done[0] += n
                if done[0] // 20 > (done[0] - n) // 20:  # every 20 steps
                    print(
                        f"  {done[0]}/{total} steps, {time.perf_counter() - start:.0f} s",
                        flush=True,
                    )

            print(f"{sample.dataset}: {len(sample.items)} answers", flush=True)
            records += llm.run(score_items(scorer, sample.items, METRICS, on_step=step))
        calls = llm.meter.total().calls
        if args.record:
            replies = dict(sorted(llm.recorded(args.cache).items()))
    elapsed = time.perf_counter() - start
    examples = [ex for s in samples for ex in s.examples]
    figures = reference_free_figures(examples, records, DEFAULT_THRESHOLDS)
    assert figures is not None
    for sample in samples:
        print(
            f"\n## {sample.dataset}: {len(sample.items)} of its {sample.answers - sample.empty} "
            f"non-empty answers ({sample.empty} of {sample.answers} were empty, "
            f"{sample.empty_correct} of them judged correct)\n"
        )
        print(table(figures, sample.dataset))
        for m in figures.by_system[sample.dataset].values():
            print(f"- {m.sentence}")
            if m.undefined:
                print(f"  undefined: {m.undefined}")
    print(f"\nmodel requests answered: {calls}, {elapsed:.0f} s")
    print("calls per response:", {k: round(v, 2) for k, v in figures.calls_per_response.items()})
    if args.record:
        args.record.write_text(json.dumps(replies, indent=0, ensure_ascii=False) + "\n")
        print(f"recorded {len(replies)} replies in {args.record}")
    if args.out:
        args.out.write_text(figures.model_dump_json(indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
