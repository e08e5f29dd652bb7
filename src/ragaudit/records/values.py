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
* a **name** of a row (its group, system, variant or query id) follows the id rule, and
  may also be not given: None, a NaN (what pandas writes for a missing cell, and what
  ``df.to_dict("records")`` hands on), pandas' ``NA`` or ``NaT`` and blank text are
  :func:`missing`, and the caller's default applies, as if the key were absent; any other
  float (``1.5``, ``1.0``), a bool, a list or a dict is refused, never recorded as its
  ``str`` (``'nan'`` would join every row without a group into one);
* a **passage text** (a context) is a string, or None where the text is not known;
  anything else is refused, never recorded as its ``str``;
* **text** is Unicode text: a lone UTF-16 surrogate (half a character) cannot be written
  to any file, hash or database, so :func:`unicode_text` finds it and says how many.
"""

from __future__ import annotations

import math
import numbers
import re
import sys
from typing import Any

ID_RULE = "an id is a non-empty string or an integer"
NAME_RULE = "a non-empty string or an integer; None or NaN for none"


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


def missing(value: Any) -> bool:
    """Whether ``value`` is a value not given: None, or what pandas and NumPy write for a
    missing cell (a NaN of any float type, pandas' ``NA``, ``NaT``). A row read from a
    DataFrame holds these where a dict written by hand would leave the key out, so both
    are read alike. A list or any other sized value is never missing (``[]`` is a value).

    >>> missing(None), missing(float("nan")), missing(0), missing(""), missing([])
    (True, True, False, False, False)
    """
    if value is None:
        return True
    pandas = sys.modules.get("pandas")  # only a pandas object can be its NA
    if pandas is not None and value is getattr(pandas, "NA", None):
        return True
    if isinstance(value, str | bytes) or hasattr(value, "__len__"):
        return False
    try:
        return bool(value != value)  # NaN and NaT alone are unequal to themselves
    except (TypeError, ValueError):
        return False


def row_name(value: Any) -> str | None:
    """``value`` as a name a row gives (its group, system, variant or query id): None
    when not given (:func:`missing`, or blank text), so that the caller's default applies
    as it does to a row without the key; otherwise a string as it is, or an integer (not
    a bool) as its decimal digits, as the id rule reads ids. Any other value is a
    ValueError: a float (``1.0`` too: a column of integers with a missing cell is read by
    pandas as floats), a bool, a list, a dict, whose ``str`` would be a name no other row
    meant.

    >>> row_name("g1"), row_name(3), row_name(float("nan")), row_name("  ")
    ('g1', '3', None, None)
    >>> row_name(1.5)
    Traceback (most recent call last):
    ...
    ValueError: 1.5 is not a name (a non-empty string or an integer; None or NaN for none)
    """
    if missing(value) or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return document_id(value)
    except ValueError:
        pass
    hint = ""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        # What an integer column becomes in pandas once one of its cells is missing.
        hint = f"; a column of integers with a missing cell is read as floats: give {int(value)}"
    raise ValueError(f"{_shown(value)} is not a name ({NAME_RULE}{hint})")


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


def answer_text(value: Any) -> str | None:
    """``value`` as the text of a system's answer: a string as it is, None where the
    system gave none (a retrieval-only system), an integer or a finite float (a figure a
    system computed: ``6``, ``2.5``) as its digits. Anything else (a bool, a list, a
    dict of a JSON path that stops one level short, a tuple, NaN) is a ValueError rather
    than its ``str``, which would be judged as what the system said.

    >>> answer_text("Paris"), answer_text(None), answer_text(6), answer_text(2.5)
    ('Paris', None, '6', '2.5')
    >>> answer_text({"x": 1})
    Traceback (most recent call last):
    ...
    ValueError: {'x': 1} of type dict is not an answer's text (a string, a number, or null)
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    raise ValueError(
        f"{_shown(value)} of type {type(value).__name__} is not an answer's text "
        "(a string, a number, or null)"
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
