"""Label the SQuAD 2.0 subset with the embedded model in three sampled runs and print what
docs/labels.md quotes: the composition of the answerable questions, the unanswerable recall
and false alarms against ``is_impossible``, Fleiss' kappa, and how the reply check read the
model's first replies. ``--record`` also writes the model's replies (keyed by request,
without the prompts) for tests/test_label_rates.py, which pins these figures without the
model. ``--cache`` reads the replies stored in an LLM cache instead of running the model,
e.g. the cache ``ragaudit label --samples 3`` filled.

    .venv/bin/python scripts/measure_labels.py [--cache runs/squad/cache/llm.sqlite] \
        [--record tests/data/label_replies.json]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.label_set import label_squad, reply_kinds  # noqa: E402
from tests.support.replay_llm import Recording, ReplayBackend  # noqa: E402

from ragaudit.analysis.agreement import label_figures  # noqa: E402
from ragaudit.analysis.summary import Proportion  # noqa: E402
from ragaudit.config import LLMConfig  # noqa: E402
from ragaudit.llm import make_llm  # noqa: E402
from ragaudit.llm.cache import cache_key, request_payload  # noqa: E402
from ragaudit.llm.client import Backend, LLMClient  # noqa: E402
from ragaudit.llm.types import GenerationParams, Messages, RawCompletion  # noqa: E402

SQUAD = ROOT.parent / "shared" / "reference" / "squad2-subset"


class StoredReplies(ReplayBackend):
    """Recorded replies, and the model's for a request that was not recorded (noted)."""

    def __init__(self, replies: dict[str, str], model: Backend) -> None:
        super().__init__(replies)
        self.model = model.model
        self.backend = model
        self.asked = 0

    async def acomplete(self, messages: Messages, params: GenerationParams) -> RawCompletion:
        """The stored reply, else the model's (kept for the recording)."""
        key = cache_key(request_payload(self.kind, self.model, messages, params))
        if key not in self.replies:
            self.asked += 1
            self.replies[key] = (await self.backend.acomplete(messages, params)).text
        return await super().acomplete(messages, params)


def _share(p: Proportion) -> str:
    if p.value is None:
        return f"undefined ({p.reason})"
    return f"{p.k}/{p.n} = {p.value:.1%} [{p.ci95[0]:.1%}, {p.ci95[1]:.1%}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", type=Path, help="write the replies to this JSON file")
    parser.add_argument(
        "--cache", type=Path, help="read the replies stored in this LLM cache (no model runs)"
    )
    args = parser.parse_args()
    if not SQUAD.is_dir():
        sys.exit(f"the SQuAD reference subset is not at {SQUAD}")
    start = time.perf_counter()
    if args.cache:
        # The stored replies, answered again as they are (a cached client would ask the
        # model afresh for a stored reply that cannot be used); the model answers only
        # what was never stored.
        rows = sqlite3.connect(args.cache).execute("SELECT key, text FROM llm_cache")
        with make_llm(LLMConfig(model="local")) as model:
            stored = StoredReplies(dict(rows.fetchall()), model.backend)
            with LLMClient(stored) as base:
                llm = Recording.around(base)
                labelled = label_squad(SQUAD, llm)
        replies = {k: stored.replies[k] for k in sorted(llm.keys)}
        calls = stored.asked
    else:
        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp) / "llm.sqlite"
            with make_llm(LLMConfig(model="local"), cache_path=cache) as base:
                llm = Recording.around(base)
                labelled = label_squad(SQUAD, llm)
                calls = llm.meter.total().calls
            replies = dict(sorted(llm.recorded(cache).items()))
    seconds = time.perf_counter() - start
    asked = len(labelled.first_keys)
    kinds = reply_kinds(labelled, replies)
    if args.record:
        args.record.write_text(json.dumps(replies, indent=0) + "\n")
    figures = label_figures(labelled.pairs.pairs, labelled.records)
    print(f"pairs: {figures.pairs}; raters: {', '.join(figures.raters)}")
    print(f"consensus: {figures.labelled}; no majority: {figures.no_majority}")
    print("composition of the answerable questions:")
    for label, share in (figures.composition_answerable or {}).items():
        print(f"  {label:<13}{_share(share)}")
    if figures.unanswerable_recall and figures.unanswerable_false_alarms:
        print(f"unanswerable recall: {_share(figures.unanswerable_recall)}")
        print(f"unanswerable false alarms: {_share(figures.unanswerable_false_alarms)}")
    if figures.fleiss is not None:
        k = figures.fleiss
        print(f"Fleiss' kappa: {k} over {k.n} pairs")
    for r in figures.per_rater:
        print(f"  {r.rater}: kappa {r.kappa} vs the others' majority ({r.discarded} dropped)")
    print(f"first replies ({asked}): " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    print(f"undecided: {figures.undecided}")
    print(f"{seconds:.0f} s; {calls} calls to the model (stored replies not counted)")


if __name__ == "__main__":
    main()
