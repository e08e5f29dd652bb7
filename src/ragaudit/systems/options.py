"""The ``systems:`` entries of ragaudit.yaml: one options class per kind, told apart by
``kind`` (``builtin`` when it is left out). Each kind's options live in its own module."""

from __future__ import annotations

import functools
import itertools
import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Discriminator, Tag, ValidationError

from ragaudit.secrets import mask_url
from ragaudit.systems.adapters.function import CallableSystemConfig
from ragaudit.systems.adapters.http_endpoint import HTTPSystemConfig
from ragaudit.systems.adapters.langchain import LangChainSystemConfig
from ragaudit.systems.adapters.llamaindex import LlamaIndexSystemConfig
from ragaudit.systems.base import SystemOptions
from ragaudit.systems.builtin import BuiltinSystemConfig

KINDS: dict[str, type[SystemOptions]] = {
    "builtin": BuiltinSystemConfig,
    "http": HTTPSystemConfig,
    "callable": CallableSystemConfig,
    "langchain": LangChainSystemConfig,
    "llamaindex": LlamaIndexSystemConfig,
}


def _kind(value: Any) -> str:
    """The kind of a ``systems:`` entry, raw or validated; ``builtin`` when unsaid."""
    if isinstance(value, dict):
        return str(value.get("kind", "builtin"))
    return str(getattr(value, "kind", "builtin"))


def _grid_problem(grid: dict[Any, Any]) -> str | None:
    """What is wrong with a grid's shape (before any value is looked at), or None."""
    for key, values in grid.items():
        if key in ("name", "kind", "grid"):
            return f"grid: {key} cannot vary"
        if not isinstance(values, list) or not values:
            return f"grid: {key}: give a list of values"
    return None


def _grid_message(err: ValidationError, chosen: dict[str, Any]) -> str:
    """A combination's first validation error, naming the combination and the option."""
    first = err.errors()[0]
    where = ".".join(str(part) for part in first["loc"] if str(part) not in KINDS)
    message = "unknown key" if first["type"] == "extra_forbidden" else first["msg"]
    shown = ", ".join(f"{k}={v}" for k, v in chosen.items())
    return f"grid ({shown}): {where + ': ' if where else ''}{message}"


def _required_from_grid(data: Any) -> Any:
    """An entry whose grid varies a required option it does not write (an HTTP system's
    ``url``, an adapter's ``target``), with the grid's first value written in, so that the
    entry validates as its first system would; ``expand_grid`` then gives each system its
    own value. Every other entry is returned as is."""
    if not isinstance(data, dict) or not isinstance(data.get("grid"), dict):
        return data
    grid = data["grid"]
    problem = _grid_problem(grid)
    if problem:
        raise ValueError(problem)
    kind = KINDS.get(_kind(data))
    if kind is None:
        return data  # the discriminator names the kinds
    missing = {
        key: values[0]
        for key, values in grid.items()
        if key not in data and key in kind.model_fields and kind.model_fields[key].is_required()
    }
    if not missing:
        return data
    filled = {**data, **missing}
    try:
        kind.model_validate({**filled, "grid": None})
    except ValidationError as err:
        if any(str(e["loc"][0]) in missing for e in err.errors() if e["loc"]):
            raise ValueError(_grid_message(err, missing)) from None
    return filled


SystemConfig = Annotated[
    Annotated[BuiltinSystemConfig, Tag("builtin")]
    | Annotated[HTTPSystemConfig, Tag("http")]
    | Annotated[CallableSystemConfig, Tag("callable")]
    | Annotated[LangChainSystemConfig, Tag("langchain")]
    | Annotated[LlamaIndexSystemConfig, Tag("llamaindex")],
    Discriminator(
        _kind,
        custom_error_type="unknown_kind",
        custom_error_message="kind must be one of " + ", ".join(KINDS),
    ),
    BeforeValidator(_required_from_grid),
]
"""One system under test: a built-in RAG pipeline or an adapter to the user's own."""


def parse_system(data: Any) -> SystemOptions:
    """One ``systems:`` entry validated as its kind's options (for building a system from
    Python, as ragaudit.yaml's loader does for the file)."""
    result: SystemOptions = _adapter().validate_python(data)
    return result


@functools.cache
def _adapter() -> Any:
    """The validator of one entry, built once (a grid of a thousand systems validates
    each of them)."""
    from pydantic import TypeAdapter

    return TypeAdapter(SystemConfig)


# How a varied option's value shows in an expanded system's name.
_NAME_PREFIX = {"k": "k", "text_weight": "w", "rerank_candidates": "rr", "timeout_s": "t"}
MAX_GRID_SYSTEMS = 1000


def _token(key: str, value: Any) -> str:
    # A name is written everywhere: a password or token in a URL stays out of it.
    text = mask_url(value) if isinstance(value, str) else str(value)
    shown = re.sub(r"[^A-Za-z0-9_.\-]+", "_", text).strip("_.") or "_"
    return f"{_NAME_PREFIX.get(key, '')}{shown}"


def _relevant(data: dict[str, Any]) -> dict[str, Any]:
    """A built-in entry without the options its other options make meaningless, so that a
    grid does not make two systems that differ only there: the text weight of a retriever
    that is not hybrid, the retriever and depth of the LLM-only generator."""
    if str(data.get("kind", "builtin")) != "builtin":
        return data
    out = dict(data)
    if out.get("generator") == "llm_only":
        for key in ("retriever", "k", "text_weight", "rerank_candidates"):
            out.pop(key, None)
    elif out.get("retriever", "bm25") != "hybrid":
        out.pop("text_weight", None)
    return out


def _check_values(data: dict[str, Any]) -> None:
    """Each value as written, also one the combination leaves out (the text weight of a
    BM25 retriever), is of its option's type and range; only the rules between options
    (the LLM-only generator retrieves nothing) are not asked of such a combination."""
    try:
        parse_system(data)
    except ValidationError as err:
        if any(e["type"] != "value_error" for e in err.errors()):
            raise


def expand_grid(entry: SystemOptions) -> list[SystemOptions]:
    """One ``systems:`` entry with a ``grid`` as the systems it stands for: one per
    combination of the grid's values, named ``<name>-<value>-<value>...`` in the grid's
    order (``k3``, ``w0.3``: a number says which option it is). Combinations that differ
    only in an option that does not apply (the text weight of a BM25 retriever) are one
    system. Each is validated as if written out, so a bad value is an error that names it."""
    grid = entry.grid
    if not grid:
        return [entry]
    problem = _grid_problem(grid)
    if problem:
        raise ValueError(problem)
    base = entry.model_dump(exclude_unset=True, exclude={"grid"})
    out: list[SystemOptions] = []
    seen: dict[str, dict[str, Any]] = {}
    for combination in itertools.product(*grid.values()):
        chosen = dict(zip(grid, combination, strict=True))
        written = {**base, **chosen}
        data = _relevant(written)
        tokens = [_token(key, data[key]) for key in grid if key in data]
        name = "-".join([entry.name, *tokens])
        try:
            if written != data:
                _check_values({**written, "name": name})
            if name in seen:
                if seen[name] != data:  # two values shown alike: the names would lie
                    raise ValueError(f"grid: two different combinations are both named {name}")
                continue
            seen[name] = data
            out.append(parse_system({**data, "name": name}))
        except ValidationError as err:
            raise ValueError(_grid_message(err, chosen)) from None
        if len(out) > MAX_GRID_SYSTEMS:
            raise ValueError(f"grid: more than {MAX_GRID_SYSTEMS} systems")
    return out


def expand_grids(entries: list[SystemOptions]) -> list[SystemOptions]:
    """Every entry with a grid replaced by the systems it stands for, in order."""
    return [system for entry in entries for system in expand_grid(entry)]
