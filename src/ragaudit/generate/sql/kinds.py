"""What kind of question a SQL template asks, read from its SQL, and the columns it reaches.

The kinds (docs/generate.md shows one template of each):

* ``lookup``: an attribute of the named row (``SELECT Industry FROM Client WHERE Name = ...``);
* ``path``: an attribute of a row reached along foreign keys, one to three hops (the
  artist of a track: track -> album -> artist);
* ``count``, ``sum``, ``average``, ``minimum``, ``maximum``: an aggregate over the rows
  that refer to the named row (the number of tracks of an album; the earliest invoice
  date of a customer);
* ``superlative``: the row among those referring to the named one with the most or the
  least of something (the longest track of an album);
* ``set``: every row referring to the named one, or those that pass a filter (the tracks
  of an album longer than five minutes): a set answer;
* ``yes_no``: whether the named row passes a comparison ("is it over ..."), answered
  ``yes`` or ``no``;
* ``date_range``: a count of the referring rows whose date falls in one year.

The enumerator writes each template's kind into ``templates/sql.yaml``; a template
without one (written by hand or by the LLM) gets the kind its SQL reads as
(:func:`ragaudit.generate.sql.asks.infer_kind`), so a user's file keeps working. This
module holds the names alone, so that the configuration can name kinds without loading
a SQL parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

Kind = Literal[
    "lookup",
    "path",
    "count",
    "sum",
    "average",
    "minimum",
    "maximum",
    "superlative",
    "set",
    "yes_no",
    "date_range",
]
KINDS: tuple[Kind, ...] = get_args(Kind)

# Templates of each kind kept per table by default (``templates.per_kind`` changes it):
# enough that every kind reaches every table it can, few enough that wording and
# verifying a schema of a dozen tables stays within minutes.
DEFAULT_PER_KIND: Mapping[Kind, int] = {
    "lookup": 6,
    "path": 4,
    "count": 2,
    "sum": 1,
    "average": 1,
    "minimum": 1,
    "maximum": 1,
    "superlative": 2,
    "set": 2,
    "yes_no": 1,
    "date_range": 1,
}
# A set answer of more rows than this is no question anyone asks in one go.
MAX_SET_SIZE = 10

__all__ = ["DEFAULT_PER_KIND", "KINDS", "MAX_SET_SIZE", "Kind"]
