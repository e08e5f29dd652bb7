"""A small JSON path: enough to point at the answer and the retrieved ids in an HTTP
system's reply. ``answer``, ``data.answer``, ``choices[0].message.content``,
``sources[*].id`` (every element), with an optional leading ``$.``."""

from __future__ import annotations

import re
from typing import Any

_STEP = re.compile(r"([^.\[\]]+)|\[(\d+|\*)\]")


class JSONPathError(ValueError):
    """The path does not lead anywhere in the reply."""


def parse_path(path: str) -> list[str | int | None]:
    """The steps of ``path``: keys, indices, and None for ``[*]``; a syntax error raises."""
    text = path[2:] if path.startswith("$.") else path.lstrip("$")
    steps: list[str | int | None] = []
    pos = 0
    while pos < len(text):
        if text[pos] == ".":
            pos += 1
            continue
        m = _STEP.match(text, pos)
        if m is None:
            raise JSONPathError(f"JSON path {path!r}: cannot read it at {text[pos:]!r}")
        key, index = m.groups()
        steps.append(key if key is not None else (None if index == "*" else int(index)))
        pos = m.end()
    if not steps:
        raise JSONPathError(f"JSON path {path!r} is empty")
    return steps


def extract(data: Any, path: str) -> Any:
    """The value at ``path`` in ``data``; a ``[*]`` step makes the result a list."""
    values, many = _walk([data], parse_path(path), path)
    return values if many else values[0]


def _walk(values: list[Any], steps: list[str | int | None], path: str) -> tuple[list[Any], bool]:
    many = False
    for step in steps:
        nxt: list[Any] = []
        for value in values:
            if step is None:
                if not isinstance(value, list):
                    raise JSONPathError(f"JSON path {path!r}: [*] on a {type(value).__name__}")
                nxt.extend(value)
                many = True
            elif isinstance(step, int):
                if not isinstance(value, list) or step >= len(value):
                    raise JSONPathError(f"JSON path {path!r}: no element [{step}]")
                nxt.append(value[step])
            else:
                if not isinstance(value, dict) or step not in value:
                    raise JSONPathError(f"JSON path {path!r}: no key {step!r}")
                nxt.append(value[step])
        values = nxt
    return values, many
