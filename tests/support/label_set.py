"""The SQuAD 2.0 subset labelled by the embedded model in three sampled runs, as
docs/labels.md reports it: the labelling itself (the code ``ragaudit label`` runs), and how
each first reply fared in the reply check.

Shared by scripts/measure_labels.py (which runs the model and records its replies) and
tests/test_label_rates.py (which replays them), so that both measure the same thing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ragaudit.documents.labels import (
    LABELS,
    Rater,
    label_pairs,
    label_prompt,
    parse_label_reply,
    raters_for,
)
from ragaudit.documents.pairs import PairSet, read_input
from ragaudit.llm.cache import cache_key, request_payload
from ragaudit.llm.client import LLMClient
from ragaudit.llm.parsing import extract_json, read_cut_object
from ragaudit.records.models import LabelRecord

SQUAD_FILE = "dev-v2.0-subset.json"
SAMPLES = 3


@dataclass
class Labelled:
    """The pairs, every rater's labels, and the cache key of each first request."""

    pairs: PairSet
    raters: list[Rater]
    records: list[LabelRecord]
    first_keys: dict[tuple[str, str], str]  # (pair id, rater name) -> key of the first ask


def label_squad(squad_dir: Path, llm: LLMClient, samples: int = SAMPLES) -> Labelled:
    """Label every pair of the subset with ``samples`` sampled runs of ``llm``'s model
    (named ``local`` as ``ragaudit label`` names the embedded model)."""
    pairs = read_input(squad_dir / SQUAD_FILE)
    raters = raters_for(["local"], ["default"], samples)
    contexts = {p.pair_id: pairs.context_of(p) for p in pairs.pairs}
    records = llm.run(label_pairs({"local": llm}, raters, pairs.pairs, contexts))
    first_keys = {}
    for rater in raters:
        params = rater.params(llm.default_params)
        for pair in pairs.pairs:
            messages = label_prompt(contexts[pair.pair_id], pair.question, rater.phrasing)
            payload = request_payload(llm.backend.kind, llm.backend.model, messages, params)
            first_keys[pair.pair_id, rater.name] = cache_key(payload)
    return Labelled(pairs, raters, records, first_keys)


def reply_kind(reply: str) -> str:
    """How the reply check read a first reply: ``json`` (as asked), ``cut`` (JSON cut at
    the token limit after a complete label), ``bare`` (the label alone), or ``unusable``
    (re-asked)."""
    try:
        parse_label_reply(reply)
    except ValueError:
        return "unusable"
    try:
        extract_json(reply)
    except ValueError:
        return "cut" if read_cut_object(reply) is not None else "bare"
    return "json"


def reply_kinds(labelled: Labelled, replies: dict[str, str]) -> Counter[str]:
    """How many first replies were of each kind (``replies``: cache key -> reply)."""
    return Counter(reply_kind(replies[key]) for key in labelled.first_keys.values())


__all__ = ["LABELS", "Labelled", "label_squad", "reply_kind", "reply_kinds"]
