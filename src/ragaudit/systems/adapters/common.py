"""What every adapter shares: secrets from the environment, a function's return value read
as an answer, retrieved items, targets named ``module:attribute``, and the refusal of a
``k`` the system cannot take."""

from __future__ import annotations

import importlib
import inspect
import math
import os
import re
import sys
from typing import Any

from pydantic import Field, field_validator

from ragaudit.errors import ConfigError
from ragaudit.records.models import RetrievedItem, TokenUsage
from ragaudit.records.values import answer_text, document_id, passage_text
from ragaudit.secrets import register_secret
from ragaudit.systems.base import Answer, SystemAnswer, SystemFailure, SystemOptions

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class TargetOptions(SystemOptions):
    """A system found in the user's code: ``target`` names the object to import."""

    target: str = Field(description="module:attribute of the function or object.")

    @field_validator("target")
    @classmethod
    def _module_attribute(cls, value: str) -> str:
        module, _, attr = value.partition(":")
        if not module or not attr:
            raise ValueError(f"target {value!r}: expected 'module:attribute'")
        return value


class RetrieverTargetOptions(TargetOptions):
    """A LangChain or LlamaIndex object: its documents carry their ids in metadata."""

    id_field: str = Field("id", description="Metadata key of a retrieved document's id.")


def expand_env(value: str, where: str) -> str:
    """``${VAR}`` replaced by the environment variable; the result is treated as a secret
    (headers carry tokens), so it never shows in logs or records."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in os.environ:
            raise ConfigError(f"{where}: environment variable {name} is not set")
        register_secret(os.environ[name])
        return os.environ[name]

    return _ENV.sub(sub, value)


def _no_k(name: str, what: str) -> ConfigError:
    """The error for a ``k`` a system cannot be given: ignoring it would report a depth
    the system never used."""
    return ConfigError(
        f"system {name}: k is set, but {what}; remove k and set the depth in the system "
        "itself, or make it accept one"
    )


def _as_list(value: Any, source: str | None = None, field: str | None = None) -> list[Any]:
    """A list of what a system returned: None is none, a tuple is a list. Where the
    system names the field (``source`` and ``field`` given) one value alone is that
    answer's failure, as :class:`~ragaudit.systems.base.Answer` and ``ra.evaluate`` refuse
    it: ``"doc-3"`` is not read as the ids ``d``, ``o``, ... nor guessed to be one id.
    Without them (an adapter's own list, an HTTP reply's path that selects one value)
    one value is a list of one."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(value)
    if source is not None:
        raise SystemFailure(
            f"{source} returned {field} {value!r:.60}: expected a list (one id is [{value!r:.40}])"
        )
    return [value]


def _id(value: Any, source: str, field: str, i: int) -> str:
    """``value``, item ``i`` of what ``source`` returned as ``field``, as a document id
    (:func:`~ragaudit.records.values.document_id`); a bad one is that answer's failure, in
    one line naming the system, the item and the value."""
    try:
        return document_id(value)
    except ValueError as exc:
        raise SystemFailure(f"{source} returned {field}[{i}] {exc}") from None


def _text(value: Any, source: str, i: int) -> str | None:
    """Item ``i`` of the passages' texts ``source`` returned, by the one text rule
    (:func:`~ragaudit.records.values.passage_text`): a string, or None where the system
    gave none; another value is that answer's failure, in one line."""
    try:
        return passage_text(value)
    except ValueError as exc:
        raise SystemFailure(f"{source} returned contexts[{i}] {exc}") from None


def _answer(value: Any, source: str) -> str | None:
    """The answer's text ``source`` returned, by the one answer rule
    (:func:`~ragaudit.records.values.answer_text`); another value is that answer's
    failure, in one line."""
    try:
        return answer_text(value)
    except ValueError as exc:
        raise SystemFailure(f"{source} returned the answer {exc}") from None


# The most tokens one answer may report using: more is no count of a real call.
MAX_REPORTED_TOKENS = 10**9


def _tokens(usage: Any, name: str, source: str) -> int:
    """``usage[name]`` a system reported: a whole number from 0 to
    :data:`MAX_REPORTED_TOKENS`, 0 where it gave none; another value is that answer's
    failure."""
    value = usage.get(name, 0) if isinstance(usage, dict) else 0
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (isinstance(value, int) or (math.isfinite(value) and value.is_integer()))
        or not 0 <= value <= MAX_REPORTED_TOKENS
    ):
        raise SystemFailure(
            f"{source} returned usage.{name} {value!r:.60}: a count of tokens is a whole "
            f"number from 0 to {MAX_REPORTED_TOKENS:,}"
        )
    return int(value)


def _score(value: Any, source: str, i: int) -> float | None:
    """Item ``i`` of the scores ``source`` returned: a number (or its text), or None."""
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise SystemFailure(
            f"{source} returned scores[{i}] {value!r:.60}: a score is a number"
        ) from None


def _items(
    ids: Any, texts: Any = None, scores: Any = None, *, source: str, strict: bool = True
) -> list[RetrievedItem]:
    """The retrieved items of ``source``'s answer (``system <name>``): its ids (each by
    the one id rule), with their texts and scores where given. ``strict``: a lone value
    where a list is due is the answer's failure (what a Python system returns); an HTTP
    reply's path that selects one value gives one item."""
    if strict:
        id_list = _as_list(ids, source, "retrieved_ids")
        text_list = _as_list(texts, source, "contexts")
        score_list = _as_list(scores, source, "scores")
    else:
        id_list, text_list, score_list = _as_list(ids), _as_list(texts), _as_list(scores)
    if id_list and len(text_list) > len(id_list):
        raise SystemFailure(
            f"{source} returned {len(text_list)} contexts for {len(id_list)} retrieved ids: "
            "give one context per id (or none), so that no passage is dropped unread"
        )
    if not id_list and text_list:
        # Contexts without ids: number them so that they still show in the report.
        id_list = [f"context-{i}" for i in range(1, len(text_list) + 1)]
    out = []
    for i, doc_id in enumerate(id_list):
        out.append(
            RetrievedItem(
                id=_id(doc_id, source, "retrieved_ids", i),
                text=_text(text_list[i], source, i) if i < len(text_list) else None,
                score=_score(score_list[i], source, i) if i < len(score_list) else None,
            )
        )
    return out


def to_answer(value: Any, source: str) -> SystemAnswer:
    """A callable's return value as an answer: a string; an :class:`Answer`; a dict with
    ``answer`` (or ``response``) and optionally ``retrieved_ids``, ``contexts``, ``scores``,
    ``usage``; or a tuple ``(answer, ids[, contexts])``."""
    if isinstance(value, SystemAnswer):
        return value
    if isinstance(value, Answer):
        return SystemAnswer(
            response=_answer(value.text, source),
            retrieved=_items(value.retrieved_ids, value.contexts, source=source),
        )
    if value is None or isinstance(value, str):
        return SystemAnswer(response=value)
    if isinstance(value, tuple) and 1 <= len(value) <= 3:
        answer, ids, texts = [*value, None, None][:3]
        return SystemAnswer(
            response=_answer(answer, source), retrieved=_items(ids, texts, source=source)
        )
    if isinstance(value, dict):
        if "answer" not in value and "response" not in value:
            keys = ", ".join(map(repr, list(value)[:5])) or "none"
            raise SystemFailure(
                f"{source} returned a dict without 'answer' (or 'response'); its keys: {keys}"
            )
        answer = value["answer"] if "answer" in value else value["response"]
        usage = value.get("usage") or {}
        return SystemAnswer(
            response=_answer(answer, source),
            retrieved=_items(
                value.get("retrieved_ids", value.get("ids")),
                value.get("contexts"),
                value.get("scores"),
                source=source,
            ),
            usage=TokenUsage(
                prompt_tokens=_tokens(usage, "prompt_tokens", source),
                completion_tokens=_tokens(usage, "completion_tokens", source),
            ),
        )
    raise SystemFailure(
        f"{source} returned {type(value).__name__}: expected a string, ra.Answer(text, "
        "retrieved_ids=[...]), a dict with 'answer', or (answer, ids[, contexts])"
    )


def load_target(target: str, where: str) -> Any:
    """The object ``module:attribute`` names (the current directory is importable, as for
    uvicorn's app strings); a one-line error when it cannot be found."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"{where}: target {target!r} must be 'module:attribute'")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{where}: cannot import {module_name}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{where}: {module_name} has no attribute {attr}")
        obj = getattr(obj, part)
    return obj


def _built(obj: Any) -> Any:
    """A factory function is called (without arguments) to build the object."""
    if inspect.isfunction(obj):
        return obj()
    return obj


def _first_id(*candidates: Any) -> Any:
    """The first of a document's possible ids that is given (not None, not ""): its
    metadata's id field, then the framework's own id. ``0`` is an id, not a missing one."""
    return next(
        (c for c in candidates if c is not None and not (isinstance(c, str) and not c)), None
    )


def _doc_item(doc_id: Any, text: Any, score: Any, source: str, i: int) -> RetrievedItem:
    """Document ``i`` that a LangChain or LlamaIndex system (``source``) retrieved, its id
    by the one id rule."""
    return RetrievedItem(
        id=_id(doc_id, source, "retrieved_ids", i),
        text=_text(text, source, i),
        score=_score(score, source, i),
    )
