"""Run directories with judged answers, written directly, for tests of what reads them
(the gate, compare): each system's verdicts per group (rows) and wording (columns)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ragaudit.records.io import write_jsonl_atomic
from ragaudit.records.models import Judgement, QueryRecord, Reference, ResponseRecord


def judged_run(
    root: Path,
    verdicts: dict[str, np.ndarray],
    *,
    question: str = "question {g} {w}",
    answer: str = "{g}",
    groups: list[int] | None = None,
) -> Path:
    """A run directory whose systems answered groups x wordings with these verdicts
    (``verdicts[system][row, wording]``); ``groups`` names the rows' group numbers (default
    0, 1, ...), so that a run can hold some of another's groups. ``question`` and
    ``answer`` are the query text and the reference (formatted with the group and the
    wording), so that two runs can ask other questions under the same ids."""
    shape = next(iter(verdicts.values())).shape
    numbers = groups if groups is not None else list(range(shape[0]))
    queries = []
    for g in numbers:
        for w in range(shape[1]):
            queries.append(
                QueryRecord(
                    query_id=f"q{g}-{w}",
                    group_id=f"g{g}",
                    variant=f"v{w}",
                    query=question.format(g=g, w=w),
                    reference=Reference.from_values([answer.format(g=g, w=w)]),
                )
            )
    write_jsonl_atomic(root / "dataset.jsonl", queries)
    for system, correct in verdicts.items():
        responses, judgements = [], []
        for row, g in enumerate(numbers):
            for w in range(shape[1]):
                qid, ok = f"q{g}-{w}", bool(correct[row, w])
                responses.append(
                    ResponseRecord(query_id=qid, system=system, response="yes" if ok else "no")
                )
                judgements.append(
                    Judgement(query_id=qid, system=system, correct=ok, method="match")
                )
        write_jsonl_atomic(root / "responses" / f"{system}.jsonl", responses)
        write_jsonl_atomic(root / "judgements" / f"{system}.jsonl", judgements)
    return root


def verdicts(seed: int, accuracy: float, groups: int = 100, wordings: int = 4) -> np.ndarray:
    """Verdicts of a system of about this accuracy over groups of varied difficulty."""
    rng = np.random.default_rng(seed)
    p = np.clip(rng.uniform(0.2, 0.9, size=groups) + accuracy - 0.55, 0, 1)
    out: np.ndarray = rng.random((groups, wordings)) < p[:, None]
    return out
