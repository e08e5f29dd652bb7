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
from ragaudit.records.io import (
    RecordFileError,
    RepeatedKeyError,
    check_unicode_text,
    iter_jsonl_dicts,
    parse_json,
    read_utf8_text,
)
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
        text = read_utf8_text(path)
        data = parse_json(text, unique_keys=True)  # nested too deeply: a JSONDecodeError
        check_unicode_text(path, data, text)  # a lone "\\ud800" escape: where it is
    except RecordFileError as exc:  # no such file, not UTF-8, not Unicode: one line
        raise PairsError(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise PairsError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except RepeatedKeyError as exc:
        raise PairsError(f"{path}: {exc}") from None
    return data


def _shown(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if value is not None else "None"
    return text if len(text) <= 40 else text[:37] + "..."


def _text(value: object, where: str, name: str) -> str:
    """``value`` when it is a JSON string; a number or a list where text belongs is a sign
    of a broken file, refused rather than turned into the text of its repr."""
    if not isinstance(value, str):
        raise PairsError(f"{where}: {name}: expected text, not {_shown(value)}")
    return value


def _identifier(value: object, where: str, name: str) -> str:
    """An id: a string, or an integer (ids are often numbered)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _text(value, where, name)


def _flag(value: object, where: str, name: str) -> bool | None:
    """A yes/no field: JSON true or false, or the strings "true" and "false" read by their
    meaning (any case); null is "not given". Anything else is refused: ``bool("false")``
    is True, so guessing would flip the question."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise PairsError(f"{where}: {name}: expected true or false, not {_shown(value)}")


def _answer_text(value: object, where: str, name: str) -> str | None:
    """An answer's text; an empty or blank one is no answer (None), not a reference."""
    if value is None:
        return None
    return _text(value, where, name).strip() or None


def _one_text_per_id(
    contexts: dict[str, str], context_id: str, text: str, first: dict[str, str], where: str
) -> bool:
    """Claim ``context_id`` for ``text``: True when it is new or already names the same
    text (noting ``where`` it was first given), False when it names another text."""
    known = contexts.get(context_id)
    if known is None:
        contexts[context_id] = text
        first[context_id] = where
        return True
    return known == text


# Why the questions of an empty SQuAD context are skipped (a warning, with the count).
EMPTY_CONTEXT = "their context is empty"


def read_squad(path: Path) -> PairSet:
    """Pairs of a SQuAD (1.1 or 2.0) JSON file: one per question, its paragraph as the
    context (id ``<title>/<paragraph number>``; a later article with the same title and
    another text gets ``<title> (article N)/<paragraph number>``, so that no text is lost),
    the first answer with text as ``answer``, and ``is_impossible`` as ``impossible`` (SQuAD
    1.1 has none: every question is answerable). A paragraph whose context is empty gives
    no pairs: its questions are skipped and counted. Texts that are not strings, and flags
    that are not true or false, are errors that name the article, paragraph and question."""
    data = _load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise PairsError(f'{path}: not SQuAD JSON (expected {{"data": [articles]}})')
    pairs: list[LabelPair] = []
    contexts: dict[str, str] = {}
    first: dict[str, str] = {}
    skipped: dict[str, int] = {}
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
            qas = paragraph.get("qas") or []
            if not isinstance(qas, list):
                raise PairsError(f"{where}: qas: expected a list of questions")
            text = paragraph["context"]
            if not text.strip():  # nothing to answer from, retrieve or label against
                if qas:
                    skipped[EMPTY_CONTEXT] = skipped.get(EMPTY_CONTEXT, 0) + len(qas)
                continue
            context_id = f"{title}/{p:03d}"
            if not _one_text_per_id(contexts, context_id, text, first, where):
                # Another article of the same title: its own id, never the other's text.
                context_id = f"{title} (article {a})/{p:03d}"
                if not _one_text_per_id(contexts, context_id, text, first, where):
                    raise PairsError(
                        f"{where}: context id {context_id!r} names another text "
                        f"({first[context_id]}): rename one of the articles"
                    )
            for q, qa in enumerate(qas):
                at = f"{where}: question {q + 1}"
                pair = _squad_pair(qa, at, f"{context_id}/{q}", context_id)
                if pair.pair_id in seen:
                    raise PairsError(f"{where}: question id {pair.pair_id!r} appears twice")
                seen.add(pair.pair_id)
                pairs.append(pair)
    if not pairs:
        left = f" ({skipped[EMPTY_CONTEXT]} left out: {EMPTY_CONTEXT})" if skipped else ""
        raise PairsError(f"{path}: no questions{left}")
    return PairSet(pairs, contexts, skipped)


def _squad_pair(qa: object, where: str, default_id: str, context_id: str) -> LabelPair:
    """One SQuAD question as a pair (``where`` names it in errors)."""
    if not isinstance(qa, dict):
        raise PairsError(f"{where}: expected an object with a question")
    raw = qa.get("question")
    question = "" if raw is None else _text(raw, where, "question").strip()
    if not question:
        raise PairsError(f"{where}: no question text")
    pair_id = default_id if qa.get("id") in (None, "") else _identifier(qa["id"], where, "id")
    answers = qa.get("answers") or []
    if not isinstance(answers, list):
        raise PairsError(f"{where}: answers: expected a list of {{text}}")
    texts = []
    for n, answer in enumerate(answers, start=1):
        value = answer.get("text") if isinstance(answer, dict) else answer
        texts.append(_text(value, where, f"answer {n}").strip())
    impossible = _flag(qa.get("is_impossible"), where, "is_impossible")
    return LabelPair(
        pair_id=pair_id,
        gold_ids=[context_id],
        question=question,
        answer=next((t for t in texts if t), None),  # a blank answer is no answer
        impossible=bool(impossible),
        source="squad",
    )


def read_pairs_jsonl(path: Path) -> PairSet:
    """Pairs of a JSON Lines file: ``{"id", "context", "question"}`` with, optionally,
    ``"answer"``, ``"answerable"`` (false for a question the context does not answer; JSON
    true/false or the strings "true"/"false") and ``"context_id"``. Identical contexts
    share one context id; one ``context_id`` given two different texts is an error, as is
    text that is not a string. An empty answer is no answer. Every line must be whole:
    an input file is never read as torn."""
    pairs: list[LabelPair] = []
    contexts: dict[str, str] = {}
    first: dict[str, str] = {}
    seen: set[str] = set()
    for line, row in iter_jsonl_dicts(path, skip_torn_tail=False, unique_keys=True):
        where = f"{path}:{line}"
        pair_id, context, question = (
            "" if row.get(key) is None else read(row[key], where, key)
            for key, read in (("id", _identifier), ("context", _text), ("question", _text))
        )
        missing = [
            key
            for key, value in (("id", pair_id), ("context", context), ("question", question))
            if not value.strip()
        ]
        if missing:
            raise PairsError(f"{where}: missing {', '.join(missing)}")
        pair_id, question = pair_id.strip(), question.strip()
        if pair_id in seen:
            raise PairsError(f"{where}: id {pair_id!r} appears twice")
        seen.add(pair_id)
        given = row.get("context_id")
        context_id = (
            f"ctx-{stable_id(context, length=12)}"
            if given is None or given == ""
            else _identifier(given, where, "context_id")
        )
        if not _one_text_per_id(contexts, context_id, context, first, f"line {line}"):
            raise PairsError(
                f"{where}: context_id {context_id!r} is given another text at "
                f"{first[context_id]}: one context id, one text"
            )
        answerable = _flag(row.get("answerable"), where, "answerable")
        pairs.append(
            LabelPair(
                pair_id=pair_id,
                gold_ids=[context_id],
                question=question,
                answer=_answer_text(row.get("answer"), where, "answer"),
                impossible=None if answerable is None else not answerable,
                source="jsonl",
            )
        )
    if not pairs:
        raise PairsError(f"{path}: no pairs")
    return PairSet(pairs, contexts)


# File name endings read as JSON Lines; any other file is read as SQuAD JSON.
JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")


def read_input(path: Path) -> PairSet:
    """Pairs of ``path``: JSON Lines when it ends in ``.jsonl`` or ``.ndjson``, else SQuAD
    JSON."""
    if path.suffix.lower() in JSON_LINES_SUFFIXES:
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
