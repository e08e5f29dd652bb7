"""Measure the wording verifier on the labelled wording set with the embedded model.

The labelled set (tests/support/wording_set.py) holds the GRAMMAR reference wordings of
Aurp and Spider (faithful) and systematic corruptions of them. This prints, per kind of
wording, how many the verifier accepted, and the two rates with Wilson intervals, as
docs/generate.md quotes them. ``--record`` also writes the model's replies (keyed by
request, without the prompts) for the test that pins the rates without the model.

    .venv/bin/python scripts/measure_verifier.py [--reading] \
        [--record tests/data/verifier_replies.json] [--cache llm.sqlite] \
        [--seed tests/data/verifier_replies.json]

``--seed`` puts recorded replies (the same model's, to the same requests) in the cache
first, so that only the requests they lack are asked of the model. Kinds added for issue
37 come in a ``dev`` and a ``held-out`` half; both are printed.
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

from tests.support.replay_llm import Recording, seed_cache  # noqa: E402
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
    parser.add_argument("--seed", type=Path, help="recorded replies to start the cache from")
    args = parser.parse_args()
    if not REFERENCE.is_dir():
        sys.exit(f"the GRAMMAR reference data is not at {REFERENCE}")
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or Path(tmp) / "llm.sqlite"
        if args.seed:
            seed_cache(cache, json.loads(args.seed.read_text(encoding="utf-8")))
        start = time.perf_counter()
        with make_llm(LLMConfig(model="local"), cache_path=cache) as base:
            llm = Recording.around(base)
            outcomes = evaluate(REFERENCE, llm, reading=args.reading)
            meter = llm.meter
        seconds = time.perf_counter() - start
        if args.record:
            replies = dict(sorted(llm.recorded(cache).items()))
            args.record.write_text(json.dumps(replies, indent=0) + "\n")
    kinds: Counter[tuple[str, str, str]] = Counter()
    accepted: Counter[tuple[str, str, str]] = Counter()
    for o in outcomes:
        key = (o.wording.kind, o.wording.split, o.wording.style)
        kinds[key] += 1
        accepted[key] += o.verified is True
    print(f"{'kind':<14}{'split':<9}{'style':<7}{'wordings':>9}{'accepted':>9}")
    for key, n in sorted(kinds.items()):
        kind, split, style = key
        print(f"{kind:<14}{split:<9}{style:<7}{n:>9}{accepted[key]:>9}")
    reasons = Counter((o.reason or "").split(":")[0] for o in outcomes if o.verified is False)
    print("rejections by check:", dict(reasons.most_common()))
    for split in ("all", "dev", "held-out"):
        part = [o for o in outcomes if split in ("all", o.wording.split)]
        r = rates(part)
        for name, k, n in (
            ("faithful accepted", r.faithful_accepted, r.faithful),
            ("corrupted rejected", r.corrupted_rejected, r.corrupted),
        ):
            low, high = wilson(k, n)
            print(f"{split}: {name}: {k}/{n} = {k / n:.1%} [{low:.1%}, {high:.1%}]")
    r = rates(outcomes)
    total = meter.total()
    print(
        f"no verdict: {r.undecided}; {seconds:.0f} s; {total.calls} LLM calls "
        f"({total.calls / len(outcomes):.2f} per wording)"
    )


if __name__ == "__main__":
    main()
