"""Answer relevancy's noncommittal flag, measured: the embedded model asked the flag
(``noncommittal_prompt``) for a set of answers labelled noncommittal or not, and the
confusion of its flags with the labels, as docs/reference-free.md states it.

The answers: 45 distinct GRAMMAR Spider-Closed and Aurp answers drawn at random (seeded)
and 20 Aurp answers, with a question each answered, and, with ``--run DIR``, the distinct
answers of a ragaudit run (the demo's short answers, say). The label is a refusal pattern
("I'm sorry", "I apologize", "couldn't find", "not provided", ...); the disagreements are
printed, to be read by hand.

    .venv/bin/python scripts/measure_noncommittal.py --run ragaudit-demo/runs/demo
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter
from pathlib import Path

from ragaudit.config import LLMConfig
from ragaudit.errors import LLMError
from ragaudit.judge.reference_free import Committal, noncommittal_prompt
from ragaudit.llm import make_llm

ROOT = Path(__file__).resolve().parents[1]
GRAMMAR = ROOT.parent / "shared" / "reference" / "grammar"
REFUSAL = re.compile(
    r"^(I'm sorry|I apologize|As an AI|Unfortunately)|I don't know|"
    r"not (provided|specified|mentioned|available)|no (specific )?(information|mention)|"
    r"cannot determine|couldn't find|does not exist",
    re.IGNORECASE,
)


def _rows(name: str) -> list[dict[str, object]]:
    text = (GRAMMAR / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def answers(run: Path | None) -> list[tuple[str, str]]:
    """(question, answer) pairs, each answer once."""
    rows = [
        r
        for name in (
            "spider_closed_short_unbalanced.jsonl",
            "spider_closed_long_unbalanced.jsonl",
            "aurp_short_unbalanced.jsonl",
        )
        for r in _rows(name)
    ]
    first: dict[str, str] = {}
    for r in rows:
        if str(r["response"]).strip():
            first.setdefault(str(r["response"]).strip(), str(r["query"]))
    drawn = list(first)
    random.seed(1)
    random.shuffle(drawn)
    pairs = [(first[a], a) for a in drawn[:45]]
    if run is not None:
        queries = {}
        for line in (run / "dataset.jsonl").read_text(encoding="utf-8").splitlines():
            q = json.loads(line)
            queries[q["query_id"]] = q["query"]
        seen: dict[str, str] = {}
        for path in sorted((run / "responses").glob("*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                r = json.loads(line)
                if r.get("response"):
                    seen.setdefault(r["response"], queries[r["query_id"]])
        pairs += [(q, a) for a, q in sorted(seen.items())]
    aurp = [r for r in _rows("aurp_long_unbalanced.jsonl") if str(r["response"]).strip()]
    random.Random(2).shuffle(aurp)
    pairs += [(str(r["query"]), str(r["response"]).strip()) for r in aurp[:20]]
    return pairs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, default=None, help="a run directory to add")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ragaudit-noncommittal.sqlite"))
    args = parser.parse_args()
    if not GRAMMAR.is_dir():
        print(f"GRAMMAR reference data not found at {GRAMMAR}")
        return 2
    pairs = answers(args.run)
    with make_llm(LLMConfig(model="local"), cache_path=args.cache) as llm:
        params = llm.default_params.model_copy(update={"temperature": 0.0, "max_tokens": 16})

        async def ask() -> list[bool | None]:
            flags: list[bool | None] = []
            for question, answer in pairs:
                try:
                    reply = await llm.acomplete_json(
                        noncommittal_prompt(question, answer), Committal, params
                    )
                    flags.append(reply.noncommittal)
                except LLMError:  # a reply that stayed malformed: undecided
                    flags.append(None)
            return flags

        flags = llm.run(ask())
    table = Counter((bool(REFUSAL.search(a)), f) for (_, a), f in zip(pairs, flags, strict=True))
    print(f"{len(pairs)} answers; (labelled noncommittal, flagged) -> count:")
    for key, count in sorted(table.items(), key=str):
        print(f"  {key}: {count}")
    for (_, answer), flag in zip(pairs, flags, strict=True):
        label = bool(REFUSAL.search(answer))
        if flag != label:
            print(f"  differs: labelled {label}, flagged {flag}: {answer[:100]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
