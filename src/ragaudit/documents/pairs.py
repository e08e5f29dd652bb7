"""(context, question) pairs to label, from the sets users have: SQuAD-format JSON, plain
JSON Lines ``{id, context, question[, answer]}``, or a run's own dataset (the context being
the documents its gold ids name).

Each reader returns the pairs and their contexts by id; a pair names its context through
``gold_ids``, so that the same pairs serve the labeller and retrieval per label.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ragaudit.errors import UserError
from ragaudit.records.io import iter_jsonl_dicts
from ragaudit.records.models import LabelPair, QueryRecord, stable_id


class PairsError(UserError):
    """A set of pairs cannot be read."""


@dataclass
class PairSet:
    """Pairs to label and the texts of their contexts (by context id), with what could not
    be turned into a pair and why (reason -> count)."""

    pairs: list[LabelPair]
    contexts: dict[str, str]
    skipped: dict[str, int] = field(default_factory=dict)

    def context_of(self, pair: LabelPair) -> str:
        """The text a labeller reads for ``pair``: its documents, in gold-id order."""
        return "\n\n".join(self.contexts[i] for i in pair.gold_ids)


def _load_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PairsError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise PairsError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise PairsError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None


def read_squad(path: Path) -> PairSet:
    """Pairs of a SQuAD (1.1 or 2.0) JSON file: one per question, its paragraph as the
    context (id ``<title>/<paragraph number>``), the first answer as ``answer``, and
    ``is_impossible`` as ``impossible`` (SQuAD 1.1 has none: every question is answerable)."""
    data = _load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise PairsError(f'{path}: not SQuAD JSON (expected {{"data": [articles]}})')
    pairs: list[LabelPair] = []
    contexts: dict[str, str] = {}
    seen: set[str] = set()
    for a, article in enumerate(data["data"], start=1):
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            raise PairsError(f"{path}: article {a}: no paragraphs list")
        title = str(article.get("title") or f"article{a}")
        for p, paragraph in enumerate(paragraphs):
            where = f"{path}: article {a} ({title}), paragraph {p + 1}"
            if not isinstance(paragraph, dict) or not isinstance(paragraph.get("context"), str):
                raise PairsError(f"{where}: no context text")
            context_id = f"{title}/{p:03d}"
            contexts[context_id] = paragraph["context"]
            for q, qa in enumerate(paragraph.get("qas") or []):
                if not isinstance(qa, dict) or not str(qa.get("question") or "").strip():
                    raise PairsError(f"{where}: question {q + 1}: no question text")
                pair_id = str(qa.get("id") or f"{context_id}/{q}")
                if pair_id in seen:
                    raise PairsError(f"{where}: question id {pair_id!r} appears twice")
                seen.add(pair_id)
                answers = qa.get("answers") or []
                answer = (
                    answers[0].get("text") if answers and isinstance(answers[0], dict) else None
                )
                impossible = qa.get("is_impossible")
                pairs.append(
                    LabelPair(
                        pair_id=pair_id,
                        gold_ids=[context_id],
                        question=qa["question"].strip(),
                        answer=answer,
                        impossible=bool(impossible) if impossible is not None else False,
                        source="squad",
                    )
                )
    if not pairs:
        raise PairsError(f"{path}: no questions")
    return PairSet(pairs, contexts)


def read_pairs_jsonl(path: Path) -> PairSet:
    """Pairs of a JSON Lines file: ``{"id", "context", "question"}`` with, optionally,
    ``"answer"`` and ``"answerable"`` (false for a question the context does not answer).
    Identical contexts share one context id."""
    pairs: list[LabelPair] = []
    contexts: dict[str, str] = {}
    seen: set[str] = set()
    for line, row in iter_jsonl_dicts(path):
        missing = [k for k in ("id", "context", "question") if not str(row.get(k) or "").strip()]
        if missing:
            raise PairsError(f"{path}:{line}: missing {', '.join(missing)}")
        pair_id = str(row["id"])
        if pair_id in seen:
            raise PairsError(f"{path}:{line}: id {pair_id!r} appears twice")
        seen.add(pair_id)
        context = str(row["context"])
        context_id = str(row.get("context_id") or f"ctx-{stable_id(context, length=12)}")
        contexts[context_id] = context
        answerable = row.get("answerable")
        pairs.append(
            LabelPair(
                pair_id=pair_id,
                gold_ids=[context_id],
                question=str(row["question"]).strip(),
                answer=None if row.get("answer") is None else str(row["answer"]),
                impossible=None if answerable is None else not bool(answerable),
                source="jsonl",
            )
        )
    if not pairs:
        raise PairsError(f"{path}: no pairs")
    return PairSet(pairs, contexts)


def read_input(path: Path) -> PairSet:
    """Pairs of ``path``: JSON Lines when it ends in ``.jsonl``, else SQuAD JSON."""
    if path.suffix.lower() == ".jsonl":
        return read_pairs_jsonl(path)
    return read_squad(path)


def pairs_from_dataset(queries: Iterable[QueryRecord], documents: dict[str, str]) -> PairSet:
    """One pair per query of a run's dataset, its context being the documents its gold ids
    name. A query without gold ids (unknown, or none holding the answer) has no context to
    label against and one whose gold ids are not in the corpus cannot be read: both are
    skipped and counted."""
    pairs: list[LabelPair] = []
    contexts: dict[str, str] = {}
    skipped: dict[str, int] = {}
    for q in queries:
        if not q.gold_ids:
            reason = "no gold ids" if q.gold_ids is None else "no document holds the answer"
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        absent = [i for i in q.gold_ids if i not in documents]
        if absent:
            skipped["gold ids not in the corpus"] = skipped.get("gold ids not in the corpus", 0) + 1
            continue
        for i in q.gold_ids:
            contexts[i] = documents[i]
        pairs.append(
            LabelPair(
                pair_id=q.query_id,
                gold_ids=list(q.gold_ids),
                question=q.query,
                answer=q.reference.display,
                source="dataset",
            )
        )
    return PairSet(pairs, contexts, skipped)
