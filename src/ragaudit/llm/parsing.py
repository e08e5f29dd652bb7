"""Recovering structure from what a model wrote: JSON wrapped in prose or markdown fences,
JSON cut short at the token limit, and lists written one item per line with bullets or
numbers.

Pure functions; a failure raises ``ValueError`` with a message fit to send back to the
model when re-asking.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[A-Za-z0-9_+\-]*[ \t]*\n?(.*?)```", re.DOTALL)
_BULLET = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)]|\(\d{1,3}\))\s+")


def fenced_blocks(text: str) -> list[str]:
    """The contents of every markdown code fence in ``text``, in order."""
    return [block.strip() for block in _FENCE.findall(text)]


def extract_json(text: str) -> Any:
    """Parse the JSON value in a reply: the whole reply, a fenced block, or the first
    balanced ``{...}`` / ``[...]`` span in the prose. JSON nested deeper than the parser
    follows (some thousand ``[``) is a ``ValueError`` like any reply without JSON."""
    candidates = [text.strip(), *fenced_blocks(text)]
    too_deep = ValueError("the reply's JSON is nested too deeply to read")
    for candidate in candidates:
        if not candidate:
            continue
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            pass
        except RecursionError:
            raise too_deep from None
    decoder = json.JSONDecoder()
    for start, char in enumerate(text):
        if char in "[{":
            try:
                value, _ = decoder.raw_decode(text[start:])
                return value
            except json.JSONDecodeError:
                continue
            except RecursionError:  # a start inside it is nearly as deep: refused at once
                raise too_deep from None
    snippet = " ".join(text.split())[:80]
    raise ValueError(f"the reply contains no valid JSON (it begins: {snippet!r})")


# What ends a string that a reply was cut inside: the text kept as far as it got, and that
# it was cut.
CUT = "…(cut)"


def marked_cut(text: str) -> str:
    """``text`` read from a reply that was cut, ending in :data:`CUT` (once): what a
    reader keeps of a cut reply says that it was cut."""
    return text if text.endswith(CUT) else text + CUT


def read_cut_object(text: str) -> dict[str, Any] | None:
    """The JSON object a reply began but never closed, as far as it got: a reply cut at the
    token limit (``{"verdict": "Incorrect", "reason": "the response na``). Members complete
    before the cut are kept; a string value the cut fell inside is kept as written so far,
    ending in :data:`CUT`; a member whose value had not begun is left out. An object that
    goes wrong after complete members (a reason with quotes left unescaped:
    ``"reason": "it says "yes""}``) is read the same way, from the members before the
    fault. None when the reply holds no such object (no ``{``, or every object it opens is
    a whole, valid one). The one reader of cut replies, so that every parser that accepts
    them (the judge's verdict, a critique, a label) reads them alike.

    >>> read_cut_object('{"verdict": "Incorrect", "reason": "the response na')
    {'verdict': 'Incorrect', 'reason': 'the response na…(cut)'}
    >>> read_cut_object('```json\\n{"label": "summary", "rea')
    {'label': 'summary'}
    >>> read_cut_object('{"a": 1}') is None
    True
    """
    start = text.find("{")
    while start >= 0:
        found, closed_at = _cut_object_from(text, start)
        if closed_at is None:
            return found
        start = text.find("{", closed_at)  # that object closed: prose, or another reply
    return None


def _cut_object_from(text: str, start: int) -> tuple[dict[str, Any] | None, int | None]:
    """Read the object opened at ``start``: ``(value, None)`` when the text ends inside it
    or it goes wrong after complete members (value None when nothing of it can be read),
    ``(None, end)`` when it is a complete object, closing at ``end``."""
    closers: list[str] = []
    in_string = escaped = False
    # Where a value ended (a string, a number's comma, a nested close): the text up to
    # there, closed by the brackets then open, is JSON when that value was a member's.
    ends: list[tuple[int, str]] = []
    for i in range(start, len(text)):
        char = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                ends.append((i + 1, "".join(reversed(closers))))
            continue
        if char == '"':
            in_string = True
        elif char in "{[":
            closers.append("}" if char == "{" else "]")
        elif char in "}]":
            if closers and closers[-1] == char and len(closers) > 1:
                closers.pop()
                ends.append((i + 1, "".join(reversed(closers))))
                continue
            try:  # the object closes here (or a bracket does not match)
                json.loads(text[start : i + 1])
            except (json.JSONDecodeError, RecursionError):
                # Malformed after complete members (a reason with quotes left unescaped):
                # what came before the fault is read, as from a cut.
                found = _first_json(text, start, ends)
                return (found, None) if found is not None else (None, i + 1)
            return None, i + 1  # a whole object: not a cut one
        elif char == ",":
            ends.append((i, "".join(reversed(closers))))
    body = text[start:].rstrip()
    tail = "".join(reversed(closers))
    if in_string:
        whole = (body[:-1] if escaped else body) + CUT + '"' + tail
    else:
        whole = body.rstrip(",: \t\n") + tail
    return _first_json(text, start, ends, whole), None


def _first_json(
    text: str, start: int, ends: list[tuple[int, str]], whole: str | None = None
) -> dict[str, Any] | None:
    """The first of ``whole`` (the reply as it was cut, closed) and the text up to each
    value end, latest first, that is a JSON object: what the reply completed. A few ends
    only: what ends before them was a complete member already tried."""
    tried = [whole] if whole is not None else []
    for candidate in [*tried, *(text[start:end] + closing for end, closing in ends[::-1][:4])]:
        try:
            value = json.loads(candidate)
        except (json.JSONDecodeError, RecursionError):
            continue
        return value if isinstance(value, dict) else None
    return None


def parse_lines(text: str) -> list[str]:
    """Items of a list written one per line: fences, bullets, numbering and blanks removed."""
    blocks = fenced_blocks(text)
    body = "\n".join(blocks) if blocks else text
    items = []
    for raw in body.splitlines():
        line = _BULLET.sub("", raw).strip()
        if line:
            items.append(line)
    return items
