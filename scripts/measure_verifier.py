"""Measure the wording verifier on the labelled wording set with the embedded model.

The labelled set (tests/support/wording_set.py) holds the GRAMMAR reference wordings of
Aurp and Spider (faithful) and systematic corruptions of them. This prints, per kind of
wording, how many the verifier accepted, and the two rates with Wilson intervals, as
docs/generate.md quotes them. ``--record`` also writes the model's replies (keyed by
request, without the prompts) for the test that pins the rates without the model.

    .venv/bin/python scripts/measure_verifier.py [--reading] \
        [--record tests/data/verifier_replies.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.replay_llm import Recording  # noqa: E402
from tests.support.wording_set import evaluate, rates  # noqa: E402

from ragaudit.analysis.metrics import wilson  # noqa: E402
from ragaudit.config import LLMConfig  # noqa: E402
from ragaudit.llm import make_llm  # noqa: E402

REFERENCE = ROOT.parent / "shared" / "reference" / "grammar"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reading", action="store_true", help="add the reading check")
    parser.add_argument("--record", type=Path, help="write the replies to this JSON file")
    parser.add_argument("--cache", type=Path, help="keep the LLM cache in this file")
    args = parser.parse_args()
    if not REFERENCE.is_dir():
        sys.exit(f"the GRAMMAR reference data is not at {REFERENCE}")
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or Path(tmp) / "llm.sqlite"
        start = time.perf_counter()
        with make_llm(LLMConfig(model="local"), cache_path=cache) as base:
            llm = Recording.around(base)
            outcomes = evaluate(REFERENCE, llm, reading=args.reading)
            meter = llm.meter
        seconds = time.perf_counter() - start
        if args.record:
            replies = dict(sorted(llm.recorded(cache).items()))
            args.record.write_text(json.dumps(replies, indent=0) + "\n")
    kinds: Counter[tuple[str, str]] = Counter()
    accepted: Counter[tuple[str, str]] = Counter()
    for o in outcomes:
        kinds[o.wording.kind, o.wording.style] += 1
        accepted[o.wording.kind, o.wording.style] += o.verified is True
    print(f"{'kind':<14}{'style':<7}{'wordings':>9}{'accepted':>9}")
    for (kind, style), n in sorted(kinds.items()):
        print(f"{kind:<14}{style:<7}{n:>9}{accepted[kind, style]:>9}")
    r = rates(outcomes)
    for name, k, n in (
        ("faithful accepted", r.faithful_accepted, r.faithful),
        ("corrupted rejected", r.corrupted_rejected, r.corrupted),
    ):
        low, high = wilson(k, n)
        print(f"{name}: {k}/{n} = {k / n:.1%} [{low:.1%}, {high:.1%}]")
    total = meter.total()
    print(
        f"no verdict: {r.undecided}; {seconds:.0f} s; {total.calls} LLM calls "
        f"({total.calls / len(outcomes):.2f} per wording)"
    )


if __name__ == "__main__":
    main()
