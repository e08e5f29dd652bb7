"""The judge measured on document answers: the embedded model judges the labelled set of
tests/data/document_judge_set.json (free-text references, responses right in other words
or wrong) through the cascade ``ragaudit judge`` runs, and the verdicts are counted
against the labels: the precision and recall of Correct that docs/analyze.md states.

``--record FILE`` writes the model's replies (keyed by request) for
tests/test_judge_documents.py, which replays them; ``--cache`` keeps what was asked, so a
killed measurement resumes, and ``--seed FILE`` puts recorded replies in it first.

    .venv/bin/python scripts/measure_judge.py --record tests/data/document_judge_replies.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.judge_set import confusion, items, judge_all  # noqa: E402
from tests.support.replay_llm import Recording, seed_cache  # noqa: E402

from ragaudit.analysis.metrics import proportion  # noqa: E402
from ragaudit.config import LLMConfig  # noqa: E402
from ragaudit.llm import make_llm  # noqa: E402


def main() -> int:
    """Judge the set, print the confusion and each disagreement; record the replies."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", type=Path, help="write the replies used to this file")
    parser.add_argument("--cache", type=Path, help="the LLM cache (default: a new one)")
    parser.add_argument("--seed", type=Path, help="recorded replies to put in the cache first")
    args = parser.parse_args()
    cache = args.cache or Path(tempfile.mkdtemp(prefix="ragaudit-judge-")) / "llm.sqlite"
    if args.seed:
        seed_cache(cache, json.loads(args.seed.read_text(encoding="utf-8")))
    labelled = items()
    with make_llm(LLMConfig(model="local"), cache_path=cache) as base:
        llm = Recording.around(base)
        judged = judge_all(llm, labelled)
        calls = llm.meter.total().calls
    found = confusion(labelled, judged)
    for item, j in zip(labelled, judged, strict=True):
        if j.correct is not item.correct:
            print(f"[{j.method}] label {item.correct}, judged {j.correct}: {item.question}")
            print(f"    reference: {item.reference}\n    response:  {item.response}")
            print(f"    reason:    {j.rationale}")
    said_correct = found.tp + found.fp
    right = found.tp + found.fn
    methods: dict[str, int] = {}
    for j in judged:
        methods[j.method] = methods.get(j.method, 0) + 1
    print(json.dumps({"model_calls": calls, "methods": methods, **vars(found)}, indent=1))
    if said_correct:
        print("precision of Correct:", proportion(found.tp, said_correct))
    if right:
        print("recall of Correct:", proportion(found.tp, right))
    if args.record:
        replies = dict(sorted(llm.recorded(cache).items()))
        args.record.write_text(json.dumps(replies, indent=1) + "\n", encoding="utf-8")
        print(f"recorded {len(replies)} replies in {args.record}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
