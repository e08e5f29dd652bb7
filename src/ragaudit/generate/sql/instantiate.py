"""Set-based instantiation of SQL templates: one SELECT per template returns every
placeholder combination that has an answer, together with its answers.

The paper's loop (SELECT DISTINCT per placeholder, Cartesian product, one query per
combination) costs one round trip per combination. Here the database does the join and
the grouping in one statement:

* a placeholder compared with ``=`` to a column becomes that column, projected and
  ordered on (``WHERE Name = '[Client.Name]'`` -> ``SELECT Name, Industry ... ORDER BY 1``);
  when the column is not the placeholder's own, a semi-join keeps only values the
  placeholder's column holds;
* any other use of a placeholder (``LIKE``, ``>``, a function argument) cross-joins the
  ``SELECT DISTINCT`` of the placeholder's column and puts its value in place.

Rows arrive ordered by the placeholder values, so groups are formed while streaming.
NULL placeholder values are not bound: a question cannot name a missing value.
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import math
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify

from ragaudit.db.engine import Database
from ragaudit.db.placeholders import Placeholder
from ragaudit.db.schema import SchemaInfo
from ragaudit.errors import SQLValidationError
from ragaudit.generate.sql.templates import check_template
from ragaudit.records.models import Scalar


def to_scalar(value: Any) -> Scalar:
    """A database value as a JSON scalar: dates as ISO text, decimals as numbers."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    return str(value)


def _sort_key(value: Scalar) -> tuple[str, str]:
    return (type(value).__name__, str(value))


@dataclass(frozen=True)
class AnswerFact:
    """A stored fact a template's answer rests on: a column of one row, named by the
    row's key. A question for a row's key through a foreign key (the client *of* a
    project) asks for the referencing row's foreign-key column, which is what a document
    states."""

    table: str
    column: str


@dataclass(frozen=True)
class Plan:
    """How one template is instantiated: the set-based query and what its columns mean."""

    sql: str
    placeholders: tuple[Placeholder, ...]
    strategies: tuple[str, ...]  # per placeholder: "project" or "cross-join"
    count_sql: tuple[str, ...]  # per placeholder: COUNT(DISTINCT) of its column
    # The stored facts the answer rests on, from the asked row outward: each foreign key
    # followed from it (a path of two hops is stated by both rows' documents), then the
    # answer's own cell (left out where the answer is the last row's key, which the
    # foreign key that led to it states). ``keyed_sql`` is ``sql`` with the key of each
    # fact's row added after the answer. Empty for an answer that is no single cell (an
    # aggregate, an expression, a table without a one-column primary key).
    facts: tuple[AnswerFact, ...] = ()
    keyed_sql: str | None = None
    # True: the answer is computed (an aggregate, a comparison) from the cells of
    # :attr:`facts`, which are then those of every row it is computed over, each row of
    # ``keyed_sql`` one of them (its keys NULL where its aggregated cell is).
    computed: bool = False

    @property
    def fact(self) -> AnswerFact | None:
        """The fact the answer's own value is (the last of :attr:`facts`), or None."""
        return None if self.computed or not self.facts else self.facts[-1]


@dataclass(slots=True)
class Group:
    """One semantic group: an instantiated SQL query, its bindings and its answers."""

    bindings: dict[str, Scalar]
    answers: list[Scalar]
    # Per answer row, the keys of the rows of Plan.facts (one per fact), when asked for.
    keys: list[tuple[Scalar, ...]] | None = None

    @property
    def is_multi(self) -> bool:
        return len(self.answers) > 1


def _actual(schema: SchemaInfo, ph: Placeholder) -> tuple[str, str]:
    table = schema.table(ph.table)
    column = table.column(ph.column) if table else None
    if table is None or column is None:
        raise SQLValidationError(f"placeholder {ph.token} names an unknown column")
    return table.name, column.name


def _placeholder_of(literal: exp.Literal, by_key: dict[str, Placeholder]) -> Placeholder | None:
    if not literal.is_string:
        return None
    text = literal.this.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    table, _, column = text[1:-1].partition(".")
    return by_key.get(f"{table.strip()}.{column.strip()}".lower())


def _in_top_and_chain(node: exp.Expression, where: exp.Expression | None) -> bool:
    """True if ``node`` is one of the conditions ANDed together at the top of WHERE."""
    current = node
    while current is not None and current is not where:
        parent = current.parent
        if not isinstance(parent, exp.And | exp.Paren | exp.Where):
            return False
        current = parent
    return current is where


def _answer_facts(
    tree: exp.Select, aliases: dict[str, str], schema: SchemaInfo
) -> list[tuple[AnswerFact, exp.Column]]:
    """The facts the answer rests on and, for each, the column that names its row (see
    :attr:`Plan.facts`), from the qualified template: the answer's cell, then, walking
    the equality joins back from its row, each foreign key that links one row of the path
    to the next (the referencing row's column, whichever side of the join it is on),
    ordered from the asked row outward. A join that is no foreign key, or a row without a
    one-column primary key, ends the walk. Empty when the answer is not one cell of a
    keyed row."""
    answer = tree.expressions[0].unalias()
    if not isinstance(answer, exp.Column) or answer.find(exp.AggFunc) is not None:
        return []
    return _walk(tree, aliases, schema, answer)


def _computed_facts(
    tree: exp.Select, aliases: dict[str, str], schema: SchemaInfo
) -> list[tuple[AnswerFact, exp.Column]]:
    """For an answer computed from the cells of one row per result row (an aggregate over
    the rows referring to the asked one, a comparison of one of its cells), the facts it
    is computed from, as :func:`_answer_facts` gives them for one cell: the walk from the
    computed-over row back to the asked row, then each other cell of that row the answer
    or a filter reads (the date a count in one year compares). Empty for an answer that
    reads no column, or the columns of several rows (``a.x - b.y``), or a ``COUNT(*)``."""
    answer = tree.expressions[0].unalias()
    columns = list(answer.find_all(exp.Column))
    if not columns or answer.find(exp.Star, exp.Window) is not None:
        return []
    if len({c.table.lower() for c in columns}) != 1:
        return []
    first = columns[0]
    walked = _walk(tree, aliases, schema, first)
    if not walked:
        return []
    table = schema.table(aliases.get(first.table.lower(), ""))
    assert table is not None  # the walk found it keyed
    key = exp.column(table.primary_key[0], table=first.table, quoted=True)
    # Cells of the same row the filters compare with a value (not the joins' keys).
    filtered = [
        c
        for node in tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ, exp.NEQ, exp.Like)
        if not (isinstance(node.left, exp.Column) and isinstance(node.right, exp.Column))
        for c in node.find_all(exp.Column)
        if c.table.lower() == first.table.lower() and c.find_ancestor(exp.Select) is tree
    ]
    out = list(walked)
    for column in [*columns[1:], *filtered]:
        info = table.column(column.name)
        fact = AnswerFact(table.name, info.name) if info is not None else None
        if fact is not None and fact not in {f for f, _ in out}:
            out.append((fact, key))
    return out


def _walk(
    tree: exp.Select, aliases: dict[str, str], schema: SchemaInfo, answer: exp.Column
) -> list[tuple[AnswerFact, exp.Column]]:
    """:func:`_answer_facts` of one cell, ``answer``, of the qualified ``tree``."""

    def keyed(alias: str, column: str) -> tuple[AnswerFact, exp.Column] | None:
        table = schema.table(aliases.get(alias.lower(), ""))
        if table is None or len(table.primary_key) != 1:
            return None
        info = table.column(column)
        if info is None:
            return None
        fact = AnswerFact(table.name, info.name)
        return fact, exp.column(table.primary_key[0], table=alias, quoted=True)

    def references(alias: str, column: str, other: str) -> bool:
        """Whether ``alias.column`` is a one-column foreign key to ``other``'s table."""
        table = schema.table(aliases.get(alias.lower(), ""))
        target = aliases.get(other.lower(), "")
        return table is not None and any(
            len(fk.columns) == 1
            and fk.columns[0].lower() == column.lower()
            and fk.ref_table.lower() == target
            for fk in table.foreign_keys
        )

    found = keyed(answer.table, answer.name)
    if found is None:
        return []
    own_key = found[1].name.lower() == answer.name.lower()
    chain: list[tuple[AnswerFact, exp.Column]] = [] if own_key else [found]
    joins = [
        (eq.left, eq.right)
        for eq in tree.find_all(exp.EQ)
        if isinstance(eq.left, exp.Column) and isinstance(eq.right, exp.Column)
    ]
    here, seen = answer.table.lower(), {answer.table.lower()}
    while True:
        step = None
        for left, right in joins:
            for mine, other in ((left, right), (right, left)):
                there = other.table.lower()
                if mine.table.lower() != here or there in seen:
                    continue
                if references(other.table, other.name, mine.table):
                    hop = keyed(other.table, other.name)  # the next row points here
                elif references(mine.table, mine.name, other.table):
                    hop = keyed(mine.table, mine.name)  # this row points at the next
                else:
                    continue
                if hop is not None:
                    step = (hop, there)
                    break
            if step is not None:
                break
        if step is None:
            break
        if step[0][0] not in {f for f, _ in chain}:  # a count of the foreign key itself
            chain.append(step[0])
        here = step[1]
        seen.add(here)
    if not chain:
        return [found]  # a key reached by no foreign key: the key's own cell
    return chain[::-1]


def plan(template_sql: str, schema: SchemaInfo, *, dialect: str) -> Plan:
    """Build the set-based query for one template (validated first)."""
    shape = check_template(template_sql, schema, dialect=dialect)
    tree = sqlglot.parse_one(template_sql, read=dialect)
    if any(
        isinstance(node, exp.Literal)
        and node.find_ancestor(exp.CTE) is not None
        and node.is_string
        and node.this.startswith("[")
        for node in tree.find_all(exp.Literal)
    ):
        raise SQLValidationError("placeholders inside WITH are not supported")
    tree = qualify(
        tree,
        schema=schema.for_sqlglot(dialect),
        dialect=dialect,
        validate_qualify_columns=True,
        quote_identifiers=True,
    )
    assert isinstance(tree, exp.Select)
    aliases = {t.alias_or_name.lower(): t.name.lower() for t in tree.find_all(exp.Table)}
    by_key = {ph.key.lower(): ph for ph in shape.placeholders}
    index = {ph: i for i, ph in enumerate(shape.placeholders)}
    answer_facts = _answer_facts(tree, aliases, schema)
    projections: dict[int, exp.Expression] = {}
    strategies: dict[int, str] = {}
    for literal in list(tree.find_all(exp.Literal)):
        ph = _placeholder_of(literal, by_key)
        if ph is None:
            continue
        i = index[ph]
        table, column = _actual(schema, ph)
        parent = literal.parent
        other = None
        if isinstance(parent, exp.EQ):
            other = parent.left if parent.right is literal else parent.right
        if (
            isinstance(parent, exp.EQ)  # implied by other being set; narrows parent for mypy
            and isinstance(other, exp.Column)
            and i not in projections
            and _in_top_and_chain(parent, tree.args.get("where"))
        ):
            # Projection: the column itself carries every value; no combination loop.
            projections[i] = other.copy()
            strategies[i] = "project"
            parent.replace(exp.true())
            same = (
                aliases.get(other.table.lower()) == table.lower()
                and other.name.lower() == column.lower()
            )
            tree = tree.where(
                exp.Not(this=exp.Is(this=other.copy(), expression=exp.Null())), copy=False
            )
            if not same:
                domain = exp.select(exp.column(column, quoted=True)).from_(
                    exp.to_table(exp.to_identifier(table, quoted=True).sql(dialect=dialect))
                )
                tree = tree.where(
                    exp.In(this=other.copy(), query=exp.Subquery(this=domain)), copy=False
                )
            continue
        # Any other use: cross join the distinct values of the placeholder's column.
        alias = f"__d{i}"
        if i not in projections:
            values = (
                exp.select(exp.alias_(exp.column(column, quoted=True), "v"))
                .distinct()
                .from_(exp.to_table(exp.to_identifier(table, quoted=True).sql(dialect=dialect)))
                .where(
                    exp.Not(
                        this=exp.Is(this=exp.column(column, quoted=True), expression=exp.Null())
                    )
                )
            )
            tree = tree.join(
                exp.alias_(exp.Subquery(this=values), alias), join_type="CROSS", copy=False
            )
            projections[i] = exp.column("v", table=alias)
            strategies[i] = "cross-join"
        literal.replace(projections[i].copy())
    answer = tree.expressions[0].unalias()
    has_aggregate = answer.find(exp.AggFunc) is not None
    computed_facts = (
        _computed_facts(tree, aliases, schema)
        if not answer_facts and not tree.args.get("group") and not tree.args.get("having")
        else []
    )
    k = len(shape.placeholders)
    tree.set(
        "expressions",
        [exp.alias_(projections[i], f"__p{i}") for i in range(k)]
        + [exp.alias_(answer, "__answer")],
    )
    tree.set("order", None)
    ungrouped = tree.copy()
    if has_aggregate:
        keys = [projections[i].copy() for i in range(k)]
        tree = tree.group_by(*keys, copy=False)
    else:
        tree.set("distinct", exp.Distinct())
    order = [exp.Literal.number(i + 1) for i in range(k)]
    tree = tree.order_by(*order, copy=False)
    keyed_sql = None
    facts: tuple[AnswerFact, ...] = ()
    if answer_facts and not has_aggregate:
        keyed = tree.copy()
        keyed.set(
            "expressions",
            [
                *keyed.expressions,
                *(exp.alias_(key, f"__key{i}") for i, (_, key) in enumerate(answer_facts)),
            ],
        )
        keyed_sql = keyed.sql(dialect=dialect)
        facts = tuple(fact for fact, _ in answer_facts)
    elif computed_facts:
        keyed_sql = _computed_sql(tree, ungrouped, computed_facts, k, dialect)
        facts = tuple(fact for fact, _ in computed_facts)
    counts = []
    for ph in shape.placeholders:
        table, column = _actual(schema, ph)
        q_table = exp.to_identifier(table, quoted=True).sql(dialect=dialect)
        q_column = exp.to_identifier(column, quoted=True).sql(dialect=dialect)
        counts.append(f"SELECT COUNT(DISTINCT {q_column}) FROM {q_table}")
    return Plan(
        sql=tree.sql(dialect=dialect),
        placeholders=shape.placeholders,
        strategies=tuple(strategies[i] for i in range(k)),
        count_sql=tuple(counts),
        facts=facts,
        keyed_sql=keyed_sql,
        computed=bool(computed_facts),
    )


def _computed_sql(
    grouped: exp.Select,
    ungrouped: exp.Select,
    facts: list[tuple[AnswerFact, exp.Column]],
    k: int,
    dialect: str,
) -> str:
    """The keyed query of a computed answer: the template's own groups (``grouped``, so
    that each answer is exactly the one :attr:`Plan.sql` gives) joined on the
    placeholders' values to a row per row the answer is computed over (``ungrouped``),
    with the keys of its facts, NULL where the cell computed from is NULL (a row the
    aggregate skips, which no document needs to state)."""
    rows = ungrouped.copy()
    # The column the facts were walked from (:func:`_computed_facts` takes the first).
    first = next(rows.expressions[k].unalias().find_all(exp.Column)).copy()
    keys = [
        exp.Case(
            ifs=[exp.If(this=exp.Is(this=first.copy(), expression=exp.Null()), true=exp.Null())],
            default=key.copy(),
        )
        for _, key in facts
    ]
    rows.set(
        "expressions",
        [*rows.expressions[:k], *(exp.alias_(key, f"__key{i}") for i, key in enumerate(keys))],
    )
    rows.set("distinct", None)
    groups = grouped.copy()
    groups.set("order", None)
    on = [
        exp.EQ(
            this=exp.column(f"__p{i}", table="__g"), expression=exp.column(f"__p{i}", table="__r")
        )
        for i in range(k)
    ]
    keyed = (
        exp.select(
            *(exp.column(f"__p{i}", table="__g") for i in range(k)),
            exp.column("__answer", table="__g"),
            *(exp.column(f"__key{i}", table="__r") for i in range(len(facts))),
        )
        .from_(exp.alias_(exp.Subquery(this=groups), "__g"))
        .join(
            exp.alias_(exp.Subquery(this=rows), "__r"),
            on=exp.and_(*on) if on else None,
            join_type="INNER" if on else "CROSS",
        )
        .order_by(*[exp.Literal.number(i + 1) for i in range(k)])
    )
    return keyed.sql(dialect=dialect)


def count_combinations(db: Database, plan_: Plan) -> int:
    """The size of the Cartesian product of the placeholders' distinct non-NULL values."""
    total = 1
    for sql in plan_.count_sql:
        total *= int(db.execute(sql).rows[0][0])
    return total


_PLAIN = frozenset({str, int, type(None)})


def _scalar(value: Any) -> Scalar:
    # The common types pass straight through: this runs once per row at scale.
    return value if type(value) in _PLAIN else to_scalar(value)


def _group(
    keys: list[str],
    combo: Any,
    answers: list[Any],
    single: bool,
    rows: list[tuple[Any, ...]] | None = None,
) -> Group:
    if single:
        bindings = {keys[0]: _scalar(combo)}
    else:
        bindings = {key: _scalar(v) for key, v in zip(keys, combo, strict=True)}
    values = [_scalar(a) for a in answers]
    if len(values) > 1:
        values = sorted(set(values), key=_sort_key)
    named = None if rows is None else [tuple(_scalar(k) for k in r) for r in rows]
    return Group(bindings=bindings, answers=values, keys=named)


def iter_groups(
    db: Database, plan_: Plan, *, batch_size: int = 10_000, keyed: bool = False
) -> Iterator[Group]:
    """Every combination that has an answer, with its distinct answers (sorted), streamed;
    with ``keyed`` (and a plan whose answer is a fact), the answer rows' keys too.

    Rows arrive ordered by the placeholder columns, so a group ends where the key changes.
    """
    k = len(plan_.placeholders)
    keys = [ph.key for ph in plan_.placeholders]
    single = k == 1
    with_key = keyed and plan_.keyed_sql is not None
    width = len(plan_.facts)
    current: Any = None
    answers: list[Any] = []
    rows: list[tuple[Any, ...]] | None = None
    sql = plan_.keyed_sql if with_key and plan_.keyed_sql else plan_.sql
    for row in db.stream(sql, batch_size=batch_size):
        combo = row[0] if single else row[:k]
        answer = row[k]
        if answers and combo == current:
            if answer not in answers:
                answers.append(answer)
            if rows is not None and (named := tuple(row[k + 1 : k + 1 + width])) not in rows:
                rows.append(named)
            continue
        if answers:
            yield _group(keys, current, answers, single, rows)
        current, answers = combo, [answer]
        rows = [tuple(row[k + 1 : k + 1 + width])] if with_key else None
    if answers:
        yield _group(keys, current, answers, single, rows)


def placeholder_domains(db: Database, plan_: Plan) -> list[list[Scalar]]:
    """Per placeholder, the distinct non-NULL values of its column, as bindings hold them:
    what a question of the template can name. One statement per placeholder."""
    domains = []
    for sql in plan_.count_sql:
        distinct = sql.replace("SELECT COUNT(DISTINCT ", "SELECT DISTINCT ", 1).replace(
            ") FROM ", " FROM ", 1
        )
        domains.append([to_scalar(r[0]) for r in db.stream(distinct) if r[0] is not None])
    return domains


def iter_unanswered(
    db: Database, plan_: Plan, answered: set[tuple[Scalar, ...]]
) -> Iterator[dict[str, Scalar]]:
    """Bindings of the combinations without an answer (Cartesian product minus answered)."""
    domains = placeholder_domains(db, plan_)
    keys = [ph.key for ph in plan_.placeholders]
    for combo in itertools.product(*(sorted(d, key=_sort_key) for d in domains)):
        if combo not in answered:
            yield dict(zip(keys, combo, strict=True))
