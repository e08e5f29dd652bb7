"""GRAMMAR placeholders: ``'[Table.Column]'`` in a SQL template stands for a value of that
column. Values are bound as parameters, never pasted into the SQL, so names with quotes,
unicode, NULL and numbers stored as text are all safe and exact.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from ragaudit.errors import PlaceholderError

# '[Table.Column]' with optional surrounding quotes; names may contain spaces but not [].'
PLACEHOLDER = re.compile(r"""'\[\s*([^\[\]'.]+?)\s*\.\s*([^\[\]'.]+?)\s*\]'""")
_LITERAL = re.compile(r"^\[\s*([^\[\]'.]+?)\s*\.\s*([^\[\]'.]+?)\s*\]$")
_SENTINEL = "__ragaudit_param_{}__"


@dataclass(frozen=True)
class Placeholder:
    """One ``'[Table.Column]'`` placeholder."""

    table: str
    column: str

    @property
    def token(self) -> str:
        """How it is written in a template: ``[Table.Column]``."""
        return f"[{self.table}.{self.column}]"

    @property
    def key(self) -> str:
        """``Table.Column``: the key of its value in a bindings mapping."""
        return f"{self.table}.{self.column}"


def find_placeholders(sql: str) -> list[Placeholder]:
    """The distinct placeholders of a template, in order of first appearance."""
    seen: list[Placeholder] = []
    for table, column in PLACEHOLDER.findall(sql):
        ph = Placeholder(table, column)
        if ph not in seen:
            seen.append(ph)
    return seen


def bind_template(
    sql: str, values: Mapping[str, Any], *, dialect: str
) -> tuple[sa.TextClause, dict[str, Any]]:
    """Turn a template and placeholder values (keyed ``Table.Column``) into a statement with
    bound parameters for ``dialect`` (a sqlglot dialect name).

    A NULL value turns ``col = '[T.C]'`` into ``col IS NULL`` (and ``<>`` into ``IS NOT
    NULL``), since ``= NULL`` never matches.
    """
    placeholders = find_placeholders(sql)
    wanted = {ph.key for ph in placeholders}
    given = set(values)
    if wanted != given:
        missing = sorted(wanted - given)
        extra = sorted(given - wanted)
        parts = []
        if missing:
            parts.append(f"no value for {', '.join(missing)}")
        if extra:
            parts.append(f"values for unknown placeholders {', '.join(extra)}")
        raise PlaceholderError("; ".join(parts))
    if not placeholders:
        return sa.text(sql.replace(":", r"\:")), {}
    names = {ph.key: f"rgp{i}" for i, ph in enumerate(placeholders)}
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError as exc:
        raise PlaceholderError(f"template is not valid SQL: {str(exc).splitlines()[0]}") from None
    params: dict[str, Any] = {}
    for literal in list(tree.find_all(exp.Literal)):
        if not literal.is_string:
            continue
        match = _LITERAL.match(literal.this)
        if not match:
            continue
        key = f"{match.group(1)}.{match.group(2)}"
        name = names[key]
        value = values[key]
        parent = literal.parent
        if value is None and isinstance(parent, exp.EQ | exp.NEQ):
            other = parent.left if parent.right is literal else parent.right
            test = exp.Is(this=other.copy(), expression=exp.Null())
            parent.replace(test if isinstance(parent, exp.EQ) else exp.Not(this=test))
            continue
        literal.replace(exp.column(_SENTINEL.format(name)))
        params[name] = value
    text = tree.sql(dialect=dialect).replace(":", r"\:")
    for name in params:
        text = text.replace(_SENTINEL.format(name), f":{name}")
    return sa.text(text), params
