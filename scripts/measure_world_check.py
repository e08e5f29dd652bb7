"""The world's factuality check measured with the embedded model on documents with
planted wrong facts (tests/support/world_check.py): per world, how many true documents
pass (the rest are false alarms) and how many planted wrong facts it catches, as
docs/world.md states them.

``--record FILE`` writes the model's replies (keyed by request) for
tests/test_world_check.py, which replays them; ``--cache`` keeps what was asked, so a
killed measurement resumes, and ``--seed FILE`` puts recorded replies in it first.

    .venv/bin/python scripts/measure_world_check.py --record tests/data/world_check_replies.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.replay_llm import Recording, seed_cache  # noqa: E402
from tests.support.world_check import cases, check_all, worlds  # noqa: E402

from ragaudit.analysis.metrics import proportion  # noqa: E402
from ragaudit.config import LLMConfig  # noqa: E402
from ragaudit.llm import make_llm  # noqa: E402

REFERENCE = ROOT.parent / "shared" / "reference" / "grammar"


def main() -> int:
    """Check every case of both worlds; print the rates and each miss; record the replies."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", type=Path, help="write the replies used to this file")
    parser.add_argument("--cache", type=Path, help="the LLM cache (default: a new one)")
    parser.add_argument("--seed", type=Path, help="recorded replies to put in the cache first")
    args = parser.parse_args()
    if not REFERENCE.is_dir():
        sys.exit(f"the GRAMMAR reference data is not at {REFERENCE}")
    folder = Path(tempfile.mkdtemp(prefix="ragaudit-world-check-"))
    cache = args.cache or folder / "llm.sqlite"
    if args.seed:
        seed_cache(cache, json.loads(args.seed.read_text(encoding="utf-8")))
    with make_llm(LLMConfig(model="local"), cache_path=cache) as base:
        llm = Recording.around(base)
        for name, world in worlds(REFERENCE, folder).items():
            found, truth = cases(name, world)
            outcomes = check_all(llm, found, truth)
            passed = sum(o.passed for o in outcomes)
            caught = sum(o.caught for o in outcomes)
            print(f"{name}: {len(outcomes)} documents")
            print("  true documents passing:", proportion(passed, len(outcomes)))
            print("  planted wrong facts caught:", proportion(caught, len(outcomes)))
            for o in outcomes:
                if not o.passed:
                    print(f"  false alarm {o.case.doc_id}: {o.true_lost} {o.true_problems}")
                if not o.caught:
                    print(f"  missed {o.case.doc_id}: {o.case.planted} -> {o.case.wrong!r}")
        print("model calls:", llm.meter.total().calls)
    if args.record:
        replies = dict(sorted(llm.recorded(cache).items()))
        args.record.write_text(json.dumps(replies, indent=1) + "\n", encoding="utf-8")
        print(f"recorded {len(replies)} replies in {args.record}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
