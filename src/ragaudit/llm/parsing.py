"""Recovering structure from what a model wrote: JSON wrapped in prose or markdown fences,
and lists written one item per line with bullets or numbers.

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
