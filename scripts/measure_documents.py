"""Measure document generation with the embedded model and print what docs/documents.md
quotes:

* ``precision``: on a generated company of 40 reports, the accepted fact_single pairs
  whose question asks for a fact of the report's fact map, and the share whose reference
  states the database's value (Wilson interval);
* ``reading``: the check that an unanswerable question is answered by no passage, on
  SQuAD's unanswerable and answerable questions (``--size`` of each);
* ``balance``: on the SQuAD 2.0 subset's 83 paragraphs, the labeller's composition of
  what ``statements`` (uniform mix) and ``simple`` write, each one's total variation
  distance to uniform with a bootstrap interval, and the critiques' pass rates;
* ``phrasing``: the labeller asked in its two phrasings, as the generator asks it, on the
  subset's first ``--size`` answerable questions;
* ``wording``: the check that a generated wording asks what its question asks, on
  labelled wordings made from SQuAD's own questions (``--size`` of each kind).

``--record FILE`` writes the model's replies (keyed by request) for
tests/test_document_rates.py, which replays them. The LLM cache (``--cache``) keeps what
was asked, so a killed measurement resumes; ``--seed FILE`` puts recorded replies in it
first, so that only what they lack is asked of the model.

    .venv/bin/python scripts/measure_documents.py precision \
        --record tests/data/document_precision_replies.json
    .venv/bin/python scripts/measure_documents.py balance --size 32 \
        --record tests/data/document_balance_replies.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.document_set import (  # noqa: E402
    WORLD_SEED,
    WORLD_SIZE,
    balance_options,
    check_wordings,
    generate,
    grounded,
    label_answerable,
    observed,
    own_wording_cases,
    precision_options,
    read_all,
    reading_cases,
    relabel,
    squad_contexts,
    wording_cases,
    world_contexts,
)
from tests.support.replay_llm import Recording, seed_cache  # noqa: E402

from ragaudit.analysis.metrics import proportion  # noqa: E402
from ragaudit.config import LLMConfig  # noqa: E402
from ragaudit.documents.generator import Context  # noqa: E402
from ragaudit.llm import make_llm  # noqa: E402
from ragaudit.records.models import CandidateRecord  # noqa: E402
from ragaudit.world.build import build_world  # noqa: E402

SQUAD = ROOT.parent / "shared" / "reference" / "squad2-subset"
# Each accepted (and reading-dropped) simple pair, judged by reading it against its
# paragraph: {candidate id: {"correct": bool, "question", "answer", "why"}}.
JUDGED = ROOT / "tests" / "data" / "document_simple_judged.json"


# The model's threads (None: one per core); one thread each runs two measurements side by
# side on two busy cores without their thread pools spinning against each other.
THREADS: list[int | None] = [None]


def _run(cache: Path, job: object) -> tuple[list[CandidateRecord], dict[str, str], int]:
    """Candidates from ``job(llm)``, the replies it used, and the calls the model answered."""
    with make_llm(LLMConfig(model="local", threads=THREADS[0]), cache_path=cache) as base:
        llm = Recording.around(base)
        records = job(llm)  # type: ignore[operator]
        total = llm.meter.total()
        calls = total.calls
    return records, dict(sorted(llm.recorded(cache).items())), calls


def precision(args: argparse.Namespace) -> dict[str, str]:
    """Grounded precision of fact_single pairs on a generated company."""
    world = Path(tempfile.mkdtemp(prefix="ragaudit-world-"))
    build_world(world, size=WORLD_SIZE, seed=WORLD_SEED, force=True)
    contexts = world_contexts(world)
    options = precision_options(args.size or 40)
    records, replies, calls = _run(
        args.cache, lambda llm: generate(llm, options, contexts, contexts)
    )
    checked, skipped = grounded(world, records)
    k = sum(c.correct for c in checked)
    share = proportion(k, len(checked))
    accepted = sum(r.accepted for r in records)
    print(f"contexts: {len(contexts)}; candidates: {len(records)}; accepted: {accepted}")
    for why, questions in skipped.items():
        print(f"not counted, {why}: {len(questions)}")
        for q in questions:
            print(f"  {q}")
    print(f"grounded precision: {k}/{len(checked)} = {share}")
    for c in checked:
        mark = "ok " if c.correct else "BAD"
        print(f"  {mark} [{c.column}={c.value}] {c.question} -> {c.reference}")
    print(f"model calls: {calls}")
    return replies


def grounded_simple(args: argparse.Namespace) -> dict[str, str]:
    """Grounded precision of ``simple`` on SQuAD's paragraphs: the pairs the balance run
    accepts (two a paragraph, one pass), each judged by reading it against its paragraph
    (``JUDGED``: supported and correct, or why not), and what the reading of the
    reference dropped."""
    if not SQUAD.is_dir():
        sys.exit(f"the SQuAD reference subset is not at {SQUAD}")
    contexts = squad_contexts(SQUAD)
    options = balance_options("simple", args.size or 32)
    records, replies, calls = _run(
        args.cache, lambda llm: generate(llm, options, contexts, contexts)
    )
    judged = json.loads(JUDGED.read_text(encoding="utf-8")) if JUDGED.is_file() else {}
    text = {c.id: c.text for c in contexts}
    accepted = [r for r in records if r.accepted]
    read_out = [r for r in records if str(r.dropped).startswith("reading:")]
    print(f"candidates: {len(records)}; accepted: {len(accepted)}; model calls: {calls}")
    dropped = Counter(str(r.dropped).split(":")[0] for r in records if not r.accepted)
    print(f"dropped: {dict(dropped)}")
    for title, group in (("accepted", accepted), ("dropped by the reading", read_out)):
        right = [judged[r.candidate_id]["correct"] for r in group if r.candidate_id in judged]
        share = proportion(sum(right), len(right))
        print(f"{title}: {len(group)}; judged {len(right)}; correct {share}")
        for r in group:
            verdict = judged.get(r.candidate_id, {}).get("correct")
            mark = {True: "ok ", False: "BAD", None: "?  "}[verdict]
            print(f"  {mark} {r.candidate_id} [{r.context_id}] {r.question} -> {r.answer}")
            if args.verbose:
                print(f"      {r.dropped or r.support}\n      {text[r.context_id]}")
    return replies


def balance(args: argparse.Namespace) -> dict[str, str]:
    """Label composition and critique pass rates of both strategies on SQuAD."""
    from ragaudit.analysis.documents import (
        composition_distance,
        distance_difference,
        generation_figures,
    )

    if not SQUAD.is_dir():
        sys.exit(f"the SQuAD reference subset is not at {SQUAD}")
    contexts = squad_contexts(SQUAD)
    size = args.size or 24
    replies: dict[str, str] = {}
    every: list[CandidateRecord] = []
    composition: dict[str, list[str]] = {}
    for strategy in ("statements", "simple"):
        options = balance_options(strategy, size)
        again: list[str | None] = []

        def job(
            llm: object, o: object = options, again: list[str | None] = again
        ) -> list[CandidateRecord]:
            found = generate(llm, o, contexts, contexts)  # type: ignore[arg-type]
            again.extend(relabel(llm, found, contexts, "default"))  # type: ignore[arg-type]
            return found

        records, got, calls = _run(args.cache, job)
        replies |= got
        every += records
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            (args.keep / f"{strategy}.jsonl").write_text(
                "".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8"
            )
        labels = observed(records)
        distance = composition_distance(labels, seed=0)
        print(
            f"{strategy}: {len(records)} candidates, {sum(r.accepted for r in records)} "
            f"accepted, {len(labels)} labelled; model calls {calls}"
        )
        print(f"  composition: {dict(Counter(labels).most_common())}")
        print(f"  distance to uniform: {distance}")
        composition[strategy] = labels
        other = [label for label in again if label is not None]
        composition[f"{strategy} (default)"] = other
        print(f"  relabelled in the default phrasing: {dict(Counter(other).most_common())}")
        print(f"  distance to uniform: {composition_distance(other, seed=0)}")
    difference = distance_difference(composition["statements"], composition["simple"], seed=0)
    print(f"statements closer to uniform than simple by: {difference}")
    difference = distance_difference(
        composition["statements (default)"], composition["simple (default)"], seed=0
    )
    print(f"the same, relabelled in the default phrasing: {difference}")
    figures = generation_figures(every)
    print(json.dumps(figures.model_dump(mode="json"), indent=1))
    return replies


def reading(args: argparse.Namespace) -> dict[str, str]:
    """The unanswerable reading on SQuAD's unanswerable and answerable questions."""
    if not SQUAD.is_dir():
        sys.exit(f"the SQuAD reference subset is not at {SQUAD}")
    contexts = squad_contexts(SQUAD)
    cases = reading_cases(SQUAD, args.size or 40)
    found: list[bool | None] = []

    def job(llm: object) -> list[CandidateRecord]:
        found.extend(read_all(llm, cases, contexts))  # type: ignore[arg-type]
        return []

    _, replies, calls = _run(args.cache, job)
    for answerable in (False, True):
        got = [f for c, f in zip(cases, found, strict=True) if c.answerable == answerable]
        answered = sum(1 for f in got if f)
        failed = sum(1 for f in got if f is None)
        kind = "answerable" if answerable else "unanswerable (is_impossible)"
        print(
            f"{kind}: {len(got)} questions; answered by a passage {proportion(answered, len(got))}"
            f" ({answered}); malformed {failed}"
        )
    print(f"model calls: {calls}")
    return replies


def _print_both_rates(
    cases: Sequence[Any], found: Sequence[bool | None], kept: str, dropped: str
) -> None:
    """The wording check's two rates: good wordings (``same``) kept, bad ones dropped
    (an undecided verdict counts as neither)."""
    same = [f for c, f in zip(cases, found, strict=True) if c.same]
    other = [f for c, f in zip(cases, found, strict=True) if not c.same]
    print(f"{kept}: {proportion(sum(1 for f in same if f), len(same))}")
    print(f"{dropped}: {proportion(sum(1 for f in other if f is False), len(other))}")


def wording(args: argparse.Namespace) -> dict[str, str]:
    """The wording check on SQuAD questions: people's paraphrases (same) and three kinds
    of wording that ask something else."""
    if not SQUAD.is_dir():
        sys.exit(f"the SQuAD reference subset is not at {SQUAD}")
    cases = wording_cases(SQUAD, args.size or 25)
    found: list[bool | None] = []

    def job(llm: object) -> list[CandidateRecord]:
        found.extend(check_wordings(llm, cases, squad_contexts(SQUAD)))  # type: ignore[arg-type]
        return []

    _, replies, calls = _run(args.cache, job)
    for kind in dict.fromkeys(c.kind for c in cases):
        got = [f for c, f in zip(cases, found, strict=True) if c.kind == kind]
        kept = sum(1 for f in got if f)
        print(
            f"{kind}: {len(got)} wordings; kept as the same {proportion(kept, len(got))} "
            f"({kept}); malformed {sum(1 for f in got if f is None)}"
        )
        for c, f in zip(cases, found, strict=True):
            if c.kind == kind and f != c.same:
                print(f"  wrong: {c.question!r} -> {c.wording!r}")
    _print_both_rates(cases, found, "same kept", "others rejected")
    print(f"model calls: {calls}")
    return replies


def wording_own(args: argparse.Namespace) -> dict[str, str]:
    """The wording check on document pairs written for the project: paraphrases (kept)
    and drifts (dropped), per kind, with both rates (Wilson intervals), as the check is
    and by the reading alone (without the drift checks before it)."""
    cases = own_wording_cases()
    contexts = [Context(f"own#{i}", f"own#{i}", c.context) for i, c in enumerate(cases)]
    verdicts: dict[str, list[bool | None]] = {}

    def job(llm: object) -> list[CandidateRecord]:
        for name, drift in (("the reading alone", False), ("the check", True)):
            verdicts[name] = check_wordings(llm, cases, contexts, drift=drift)  # type: ignore[arg-type]
        return []

    _, replies, calls = _run(args.cache, job)
    for name, found in verdicts.items():
        print(f"-- {name}")
        for kind in dict.fromkeys(c.kind for c in cases):
            got = [(c, f) for c, f in zip(cases, found, strict=True) if c.kind == kind]
            right = sum(1 for c, f in got if f is c.same)
            print(f"{kind}: {len(got)} wordings; verdict wanted {right}")
            for c, f in got:
                if f is not c.same:
                    print(f"  wrong ({f}): {c.question!r} -> {c.wording!r}")
        _print_both_rates(cases, found, "paraphrases kept", "drifts dropped")
    print(f"model calls: {calls}")
    return replies


def phrasing(args: argparse.Namespace) -> dict[str, str]:
    """Both phrasings of the labeller on the same answerable SQuAD questions."""
    if not SQUAD.is_dir():
        sys.exit(f"the SQuAD reference subset is not at {SQUAD}")
    n = args.size or 150
    found: dict[str, list[str | None]] = {}

    def job(llm: object) -> list[CandidateRecord]:
        for name in ("default", "steps"):
            found[name] = label_answerable(llm, SQUAD, n, name)  # type: ignore[arg-type]
        return []

    _, replies, calls = _run(args.cache, job)
    for name, labels in found.items():
        shares = {k: f"{v} ({proportion(v, n)})" for k, v in Counter(labels).most_common()}
        print(f"{name}: {shares}")
    paired = Counter(zip(found["default"], found["steps"], strict=True))
    print(f"paired (default, steps): {dict(paired)}")
    print(f"model calls: {calls}")
    return replies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "what",
        choices=(
            "precision",
            "balance",
            "grounded-simple",
            "reading",
            "wording",
            "wording-own",
            "phrasing",
        ),
    )
    parser.add_argument("--size", type=int, help="accepted pairs wanted (per strategy)")
    parser.add_argument("--record", type=Path, help="write the replies to this JSON file")
    parser.add_argument("--keep", type=Path, help="write each strategy's candidates here")
    parser.add_argument("--threads", type=int, help="the model's threads (default: all cores)")
    parser.add_argument("--verbose", action="store_true", help="print each pair's context")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "ragaudit-measure-documents.sqlite",
        help="the LLM cache (kept: a rerun asks only what is missing)",
    )
    parser.add_argument(
        "--seed",
        type=Path,
        action="append",
        default=[],
        help="recorded replies to start the cache from (only what they lack is asked)",
    )
    args = parser.parse_args()
    THREADS[0] = args.threads
    for recorded in args.seed:
        seed_cache(args.cache, json.loads(recorded.read_text(encoding="utf-8")))
    start = time.perf_counter()
    replies = {
        "precision": precision,
        "balance": balance,
        "grounded-simple": grounded_simple,
        "reading": reading,
        "wording": wording,
        "wording-own": wording_own,
        "phrasing": phrasing,
    }[args.what](args)
    if args.record:
        args.record.write_text(json.dumps(replies, indent=0) + "\n")
        print(f"recorded {len(replies)} replies in {args.record}")
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
