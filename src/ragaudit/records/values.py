"""What a value that a system returns or a user's row gives may be, before it goes into a
record: one rule for document ids, one for passage texts, and one for text (no half
characters). The adapters of every kind of system and ``ra.evaluate`` apply them here,
so that a value is accepted or refused alike whichever door it came in by; each caller
only says, in its own words, where the value was (a system's answer, a row of logs).

The rules:

* a **document id** (a retrieved id, a gold id) is a string that is not blank, kept as it
  is, or an integer (not a bool), recorded as its decimal digits (``7`` is ``"7"``);
  nothing else is converted: None, a float (NaN among them), a bool, a list or a dict is
  refused;
* a **passage text** (a context) is a string, or None where the text is not known;
  anything else is refused, never recorded as its ``str``;
* **text** is Unicode text: a lone UTF-16 surrogate (half a character) cannot be written
  to any file, hash or database, so :func:`unicode_text` finds it and says how many.
"""

from __future__ import annotations

import numbers
import re
from typing import Any

ID_RULE = "an id is a non-empty string or an integer"


def _shown(value: Any) -> str:
    """``value`` as a message quotes it: its repr, cut short."""
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def document_id(value: Any) -> str:
    """``value`` as a document id, the one rule for every id a system returns or a row of
    logs gives (retrieved ids, gold ids): a string that is not blank, as it is, or an
    integer (not a bool), as its decimal digits, since ids in files are strings and a
    system may number its documents. Anything else (None, a float, a bool, a list, a
    dict) is a ValueError saying why: ``str(value)`` would record ``'None'`` or
    ``'[1, 2]'`` as an id that matches nothing, and every retrieval figure would quietly
    count it.

    >>> document_id("doc-1"), document_id(7)
    ('doc-1', '7')
    >>> document_id(None)
    Traceback (most recent call last):
    ...
    ValueError: None is not an id (an id is a non-empty string or an integer)
    """
    if isinstance(value, str):
        if value.strip():
            return value
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))  # numpy's integers too (a DataFrame's cells)
    raise ValueError(f"{_shown(value)} is not an id ({ID_RULE})")


def passage_text(value: Any) -> str | None:
    """``value`` as the text of a retrieved passage (a context): a string as it is, None
    where the text is not known (the passage still counts as retrieved). Anything else (a
    number, a dict of a JSON path that stops one level short, a list) is a ValueError
    rather than its ``str``, which would be judged as what the system read.

    >>> passage_text("Paris is the capital."), passage_text(None)
    ('Paris is the capital.', None)
    >>> passage_text({"text": "Paris"})
    Traceback (most recent call last):
    ...
    ValueError: {'text': 'Paris'} of type dict is not a passage's text (a string, or null)
    """
    if value is None or isinstance(value, str):
        return value
    raise ValueError(
        f"{_shown(value)} of type {type(value).__name__} is not a passage's text "
        "(a string, or null)"
    )


# A UTF-16 surrogate: in a Python string it is half of a character, which no UTF-8 file,
# hash, SQLite text or terminal can hold. JSON's "\ud83d" escape gives one (an emoji cut in
# two by a server that truncated its reply), and so can Python code.
_SURROGATE = re.compile("[\ud800-\udfff]")


def unicode_text(text: str) -> tuple[str, int]:
    """``text`` as Unicode text, and how many lone surrogates it held: a high and a low
    surrogate side by side are joined into the character they encode (the same text,
    written in UTF-16), and each one left alone is replaced by U+FFFD, the replacement
    character. Free for text without a surrogate (nearly all). A caller that takes text
    from a user refuses it when the count is not 0; one that records what a system said
    keeps the replaced text and says so.

    >>> unicode_text("ok")
    ('ok', 0)
    >>> text, lone = unicode_text("smile \\ud83d\\ude00, cut \\ud83d")
    >>> print(ascii(text), lone)
    'smile \\U0001f600, cut \\ufffd' 1
    """
    if not _SURROGATE.search(text):
        return text, 0
    fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return fixed, fixed.count("\ufffd") - text.count("\ufffd")
