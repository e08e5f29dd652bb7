"""Wording verification: does a text template ask exactly what its SQL template answers?

A reference answer is only as true as the question that asks for it. These are the checks,
cheapest first; :mod:`ragaudit.generate.text.verifier` runs them with the LLM.

* **Deterministic** (no LLM): the wording carries exactly the template's placeholders; no
  value of the answer column is written in it (the question would hold its own answer);
  two wordings of different SQL templates must not read the same (after filling, one text
  would have two references).
* **Back-mapping** (the LLM writes SQL): the wording, filled with a real example, is
  translated into SQL over the schema by the LLM (text-to-SQL suits a small coder model far
  better than choosing a column by letter: measured in docs/generate.md). The example's
  values in that SQL become placeholders again, and the result is *executed*: over a sample
  of the template's groups, the LLM's reading must return the template's answers. A
  wording that reads as another column, another entity, the reverse relation or the key
  itself returns other answers, or none.
* **Reading comprehension**: a few facts about the example's row and its related rows (e.g.
  the project's location next to its client's location), and the LLM answers the filled
  wording from them alone; the answer must be the SQL's reference.

Two more kinds of check live in modules of their own: :mod:`.naturalness` (the wording
reads as a person's question) and :mod:`.coverage` (qualifiers, reversed relations, and
every table and column the question names accounted for by the back-mapped reading).

Everything here is pure or reads the database; prompts are built here and sent elsewhere.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from ragaudit.db.engine import Database
from ragaudit.db.identity import is_id_like
from ragaudit.db.placeholders import Placeholder
from ragaudit.db.schema import SchemaInfo, TableInfo
from ragaudit.errors import UserError
from ragaudit.generate.sql.instantiate import Group, iter_groups, plan, to_scalar
from ragaudit.generate.sql.templates import SqlTemplate, TemplateShape, check_template
from ragaudit.generate.text.templates import TOKEN, fill, near_duplicate_key
from ragaudit.llm.types import Messages, system, user
from ragaudit.records.models import Scalar

# How many of a template's groups the LLM's reading is compared on, and the share that
# must agree (every one: a reading that differs anywhere asks something else).
SAMPLE_GROUPS = 50
MIN_AGREEMENT = 1.0
# A wording whose reading fails on the first example is read again with a second one: a
# small model sometimes takes a project's name for a client's because of how the name
# sounds ("Advanced Health Research Facility"), not because of the wording.
EXAMPLES = 2
# Schemas up to this many columns are shown whole (one prompt prefix for every wording, so
# the model's prompt cache reads it once); larger ones are cut to the template's tables and
# their neighbours by foreign key.
MAX_PROMPT_COLUMNS = 80


# -- deterministic ------------------------------------------------------------------------


def skeleton(text: str) -> str:
    """A wording with every placeholder replaced by one slot, normalized: two wordings of
    different templates with the same skeleton read the same once filled with the same
    values."""
    return near_duplicate_key(TOKEN.sub("\x00", text.replace("'", " ")).replace("\x00", " _ "))


def _candidate_phrases(text: str, longest: int = 6) -> set[str]:
    """Every run of up to ``longest`` words of the wording outside its placeholders,
    lower-cased: the strings an answer value could be written as."""
    plain = TOKEN.sub(" | ", text)
    out: set[str] = set()
    for chunk in re.split(r"[|,;:?!()\"\n]+|(?<!\w)'|'(?!\w)|\.(?!\w)", plain):
        tokens = chunk.split()
        for i in range(len(tokens)):
            for j in range(i + 1, min(len(tokens), i + longest) + 1):
                phrase = " ".join(tokens[i:j]).strip(".'").lower()
                if len(phrase) >= 3 and any(ch.isalnum() for ch in phrase):
                    out.add(phrase)
    return out


def answer_in_wording(
    db: Database, shape: TemplateShape, text: str, *, limit: int = 500
) -> str | None:
    """A value of the answer column written in the wording (it would give the answer
    away, or ask a yes/no question instead), or None. Only plain-column answers of text
    type are looked up, with one query for all the wording's phrases."""
    if shape.answer_table is None or shape.answer_column is None:
        return None
    phrases = sorted(_candidate_phrases(text))[:limit]
    if not phrases:
        return None
    q = db.engine.dialect.identifier_preparer.quote
    column, table = q(shape.answer_column), q(shape.answer_table)
    names = ", ".join(f":p{i}" for i in range(len(phrases)))
    sql = (
        f"SELECT {column} FROM {table} WHERE LOWER(CAST({column} AS VARCHAR(4000))) "
        f"IN ({names}) LIMIT 1"
    )
    import sqlalchemy as sa

    rows = db.execute(sa.text(sql), {f"p{i}": p for i, p in enumerate(phrases)}).rows
    return str(rows[0][0]) if rows else None


_QUESTION = re.compile(r"[^.?!]*\?")


def asks_why(text: str) -> bool:
    """The wording's question asks why (``... Why do you need the sales of X?``, ``Could
    you tell me why X moved?``), as its sentences that end with a question mark (else its
    last sentence) say: it asks
    for a reason, which no column holds, whatever SQL a reader maps its nouns to. A small
    model told to say why it needs the information writes such questions; back-mapping
    reads them as the column they name."""
    plain = TOKEN.sub("X", text)
    asked = _QUESTION.findall(plain) or [re.split(r"(?<=[.!])\s+", plain.strip())[-1]]
    return any(re.search(r"\b(why|how come)\b", q, re.IGNORECASE) for q in asked)


def conflicts(wordings: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Wordings of different templates that read the same: ``{(template id, text): the
    other template's id}`` for every wording of such a pair (both are ambiguous)."""
    by_skeleton: dict[str, list[tuple[str, str]]] = {}
    for tid, text in wordings:
        by_skeleton.setdefault(skeleton(text), []).append((tid, text))
    out: dict[tuple[str, str], str] = {}
    for members in by_skeleton.values():
        ids = {tid for tid, _ in members}
        if len(ids) < 2:
            continue
        for tid, text in members:
            out[(tid, text)] = sorted(ids - {tid})[0]
    return out


# -- the example each check asks about ----------------------------------------------------


@dataclass
class TemplateSample:
    """What a template answers on a sample of its groups, and the group the LLM is asked
    about (the first whose answer differs from the other facts shown about its row)."""

    template: SqlTemplate
    shape: TemplateShape
    groups: list[Group]
    examples: list[Group]  # the groups to ask about, best first

    @property
    def example(self) -> Group:
        """The group the LLM is asked about first (and the generator rewords)."""
        return self.examples[0]

    @property
    def answers(self) -> dict[tuple[Scalar, ...], frozenset[str]]:
        """Bindings (in placeholder order) -> the set of answers, normalized."""
        keys = [p.key for p in self.shape.placeholders]
        return {tuple(g.bindings[k] for k in keys): _answer_set(g.answers) for g in self.groups}


def _answer_set(values: Iterable[Any]) -> frozenset[str]:
    """Answers compared as text: 3, 3.0 and '3' are the same answer."""
    out = set()
    for value in values:
        scalar = to_scalar(value)
        if isinstance(scalar, float) and scalar.is_integer():
            scalar = int(scalar)
        out.add("" if scalar is None else str(scalar).strip().casefold())
    return frozenset(out)


def sample_template(
    db: Database,
    schema: SchemaInfo,
    template: SqlTemplate,
    *,
    size: int = SAMPLE_GROUPS,
    avoid: frozenset[str] = frozenset(),
) -> TemplateSample:
    """The template's first ``size`` single-answer groups with a non-NULL answer (any
    group of a template of the ``set`` kind, whose answers are sets); the example is one
    whose values are not in ``avoid`` (the values a prompt shows anyway). Raises
    :class:`UserError` when it has none (it cannot be asked about)."""
    dialect = db.sqlglot_dialect
    sets = template.kind == "set"
    shape = check_template(template.sql, schema, dialect=dialect)
    groups = list(
        itertools.islice(
            (
                g
                for g in iter_groups(db, plan(template.sql, schema, dialect=dialect))
                if (len(g.answers) == 1 or sets)
                and g.answers
                and all(a is not None for a in g.answers)
            ),
            size,
        )
    )
    if not groups:
        what = "non-NULL answers" if sets else "a single, non-NULL answer"
        raise UserError(f"{template.id}: no group with {what} to ask about")
    return TemplateSample(template, shape, groups, _examples(groups, avoid))


def _examples(groups: list[Group], avoid: frozenset[str], k: int = EXAMPLES) -> list[Group]:
    """Up to ``k`` groups to ask about, best first: values not in ``avoid``, then values
    without a quote (a small model writes ``'O'Brien'`` unescaped, which is no SQL), then
    the answer least often another group's (a distinctive answer makes a wrong reading
    visible), then order. Each has other values and another answer than those before it,
    so that a second reading is asked about a really different case."""
    counts: dict[str, int] = {}
    for g in groups:
        key = str(g.answers[0]).casefold()
        counts[key] = counts.get(key, 0) + 1

    def rank(g: Group) -> tuple[bool, bool, int]:
        shown = any(str(v)[:40] in avoid for v in g.bindings.values())
        quoted = any("'" in str(v) for v in g.bindings.values())
        return (shown, quoted, counts[str(g.answers[0]).casefold()])

    chosen: list[Group] = []
    for g in sorted(groups, key=rank):  # sorted() is stable: order breaks the ties
        values = {str(v).casefold() for v in g.bindings.values()}
        if all(
            not values & {str(v).casefold() for v in c.bindings.values()}
            and str(g.answers[0]).casefold() != str(c.answers[0]).casefold()
            for c in chosen
        ):
            chosen.append(g)
        if len(chosen) == k:
            break
    return chosen


def filled(text: str, group: Group) -> str:
    """The wording filled with the example's values."""
    return fill(text, group.bindings)


# -- back-mapping: the wording read back as SQL -------------------------------------------


def _neighbourhood(schema: SchemaInfo, tables: Iterable[str]) -> list[TableInfo]:
    """The given tables and every table one foreign key away, in schema order."""
    wanted = {t.lower() for t in tables}
    for t in schema.tables:
        refs = {fk.ref_table.lower() for fk in t.foreign_keys}
        if t.name.lower() in wanted:
            wanted |= refs
        elif refs & wanted:
            wanted.add(t.name.lower())
    return [t for t in schema.tables if t.name.lower() in wanted]


def schema_prompt_tables(schema: SchemaInfo, tables: Iterable[str]) -> list[TableInfo]:
    """The tables a back-mapping prompt shows: all when the schema is small (so every
    wording shares one prompt prefix), else the template's neighbourhood."""
    if sum(len(t.columns) for t in schema.tables if t.row_count) <= MAX_PROMPT_COLUMNS:
        return [t for t in schema.tables if t.row_count]
    return _neighbourhood(schema, tables)


def column_examples(db: Database, tables: list[TableInfo], k: int = 2) -> dict[str, list[str]]:
    """A few values of every text column (``Table.Column`` -> values), taken from the end
    of its sorted values, so that they are rarely a template's example."""
    q = db.engine.dialect.identifier_preparer.quote
    out: dict[str, list[str]] = {}
    for t in tables:
        for c in t.columns:
            if not c.is_text:
                continue
            rows = db.execute(
                f"SELECT DISTINCT {q(c.name)} FROM {q(t.name)} WHERE {q(c.name)} IS NOT NULL "
                f"ORDER BY {q(c.name)} DESC",
                max_rows=k,
            ).rows
            out[f"{t.name}.{c.name}"] = [str(r[0])[:40] for r in rows]
    return out


def ddl(tables: list[TableInfo], examples: dict[str, list[str]] | None = None) -> str:
    """``CREATE TABLE`` statements, one line per table, with keys, references and a few
    example values per text column: the form text-to-SQL models read best. The examples
    tell the model what each column's values look like (a project's name from a client's),
    without naming the value a question is about."""
    examples = examples or {}
    lines = []
    for t in tables:
        refs = {c: fk for fk in t.foreign_keys for c in fk.columns}
        cols = []
        for c in t.columns:
            spec = f"{c.name} {c.type or 'TEXT'}"
            if c.name in t.primary_key and len(t.primary_key) == 1:
                spec += " PRIMARY KEY"
            fk = refs.get(c.name)
            if fk is not None and len(fk.columns) == 1:
                spec += f" REFERENCES {fk.ref_table}({fk.ref_columns[0]})"
            shown = examples.get(f"{t.name}.{c.name}")
            if shown:
                spec += " /* e.g. " + ", ".join(repr(v) for v in shown) + " */"
            cols.append(spec)
        if len(t.primary_key) > 1:
            cols.append(f"PRIMARY KEY ({', '.join(t.primary_key)})")
        lines.append(f"CREATE TABLE {t.name} ({', '.join(cols)});")
    return "\n".join(lines)


def backmap_prompt(schema_ddl: str, question: str) -> Messages:
    """Ask for the SQL that answers ``question``. The schema comes first and the question
    last, so every wording asked about one schema shares the prompt's prefix. Nothing says
    which column holds the question's values: a wording that names the wrong entity must
    be read as naming it."""
    return [
        system("You translate questions into SQL queries."),
        user(
            f"{schema_ddl}\n\nWrite one SQL SELECT query over these tables that answers the "
            "question. Reply with the SQL only.\n"
            f"Question: {question}"
        ),
    ]


class ReadingError(ValueError):
    """The LLM's SQL cannot be compared with the template (with the reason)."""


def _literal_text(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Literal):
        return str(node.this)
    return None


def repair_aliases(sql: str, schema: SchemaInfo, dialect: str) -> str:
    """The SQL with each column qualified by the wrong table alias (``T2.Year_working``
    where T2 has no such column) moved to the one table of the query that has it, when
    no other table of the schema has it: a slip of small text-to-SQL models that changes
    nothing of what the query means. Anything else is left as it is."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return sql
    aliases: dict[str, TableInfo] = {}
    spelled: dict[str, str] = {}  # as the query writes each alias
    for table in tree.find_all(exp.Table):
        info = schema.table(table.name)
        if info is not None:
            aliases[table.alias_or_name.lower()] = info
            spelled[table.alias_or_name.lower()] = table.alias_or_name
    changed = False
    for column in tree.find_all(exp.Column):
        qualifier = column.table.lower()
        owner = aliases.get(qualifier)
        if not qualifier or owner is None or owner.column(column.name) is not None:
            continue
        holders = {a for a, info in aliases.items() if info.column(column.name) is not None}
        # Only when no table outside the query has the column either: ``T1.Name`` for a
        # person's name, with the person's table never joined, is not the other joined
        # table's Name; left as it is, it is an unknown column, and the model is asked again.
        queried = {info.name.lower() for info in aliases.values()}
        elsewhere = any(
            t.name.lower() not in queried and t.column(column.name) is not None
            for t in schema.tables
        )
        if len(holders) == 1 and not elsewhere:
            column.set("table", exp.to_identifier(spelled[holders.pop()]))
            changed = True
    return tree.sql(dialect=dialect) if changed else sql


def _sources(select: exp.Select) -> list[exp.Table] | None:
    """The tables a plain ``SELECT ... FROM a JOIN b ON ...`` reads, FROM first; None when
    it reads anything else (a subquery, a table function)."""
    source = select.args.get("from_") or select.args.get("from")
    nodes = [source.this if source else None] + [j.this for j in select.args.get("joins") or []]
    tables = [t for t in nodes if isinstance(t, exp.Table)]
    return tables if len(tables) == len(nodes) else None


def _foreign_key_join(
    on: exp.Expression, tables: list[exp.Table], infos: list[TableInfo | None]
) -> bool:
    """The condition equates a declared foreign key with the key it references (ANDed for
    a composite key), every column qualified: a join that follows the schema's own link
    between two tables and does nothing else. Any other condition (names compared, a
    column no table has) is the model's attempt at saying something, not a habit."""
    parts = list(on.flatten()) if isinstance(on, exp.And) else [on]
    by_alias = {t.alias_or_name.lower(): info for t, info in zip(tables, infos, strict=True)}
    pairs: set[tuple[str, str, str, str]] = set()
    for part in parts:
        if not isinstance(part, exp.EQ):
            return False
        sides = []
        for side in (part.this, part.expression):
            if not isinstance(side, exp.Column) or not side.table:
                return False
            info = by_alias.get(side.table.lower())
            if info is None or info.column(side.name) is None:
                return False
            sides.append((info.name.lower(), side.name.lower()))
        (t1, c1), (t2, c2) = sides
        pairs |= {(t1, c1, t2, c2), (t2, c2, t1, c1)}
    for info in infos:
        if info is None:
            continue
        for fk in info.foreign_keys:
            wanted = {
                (info.name.lower(), a.lower(), fk.ref_table.lower(), b.lower())
                for a, b in zip(fk.columns, fk.ref_columns, strict=True)
            }
            if wanted and wanted <= pairs and len(wanted) * 2 == len(pairs):
                return True
    return False


def _owners(column: exp.Column, aliases: list[str], infos: list[TableInfo | None]) -> set[int]:
    """The sources (by position) a column of the query can belong to."""
    if column.table:
        return {i for i, a in enumerate(aliases) if a == column.table.lower()}
    return {i for i, info in enumerate(infos) if info and info.column(column.name)}


def _counts_rows(select: exp.Select) -> bool:
    """The query's answer depends on how many rows there are, not only on which values:
    an aggregate, a window, grouping, DISTINCT, ORDER BY or LIMIT."""
    return (
        select.find(exp.AggFunc) is not None
        or select.find(exp.Window) is not None
        or any(select.args.get(k) for k in ("group", "having", "distinct", "order", "limit"))
    )


def drop_unused_joins(sql: str, schema: SchemaInfo, dialect: str) -> str:
    """The SQL without the tables it joins and never uses: a table named only in the one
    join condition that links it to another table, neither selected nor compared. In
    ``SELECT people.Nationality FROM employment JOIN people ON <the key> WHERE people.Name
    = 'X'``, employment is dropped: small text-to-SQL models add such a join out of habit,
    and the reading would then miss every group that employment has no row for. Answers
    are compared as sets of values, so the join only removed rows without a partner and
    repeated others; that is why a query whose answer counts rows (an aggregate, grouping,
    DISTINCT, ORDER BY, LIMIT) is left as it is, as is one with an outer or cross join, a
    table joined to itself, or any join that anything else uses or whose condition is not
    a declared foreign key."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return sql
    if not isinstance(tree, exp.Select) or not tree.args.get("joins") or _counts_rows(tree):
        return sql
    if any(
        j.args.get("side") or j.args.get("kind") not in (None, "INNER") for j in tree.args["joins"]
    ):
        return sql
    changed = False
    while tree.args.get("joins"):
        tables = _sources(tree)
        if tables is None:
            break
        joins = list(tree.args["joins"])
        aliases = [t.alias_or_name.lower() for t in tables]
        infos = [schema.table(t.name) for t in tables]
        names = [t.name.lower() for t in tables]
        if len(set(names)) != len(names) or any(i is None for i in infos):
            break  # a table joined to itself, or one the schema does not have
        ons = [j.args.get("on") for j in joins]
        if any(on is None or j.args.get("using") for on, j in zip(ons, joins, strict=True)):
            break

        # Where each source is used: in which join conditions, and anywhere else.
        in_on: dict[int, set[int]] = {i: set() for i in range(len(tables))}
        elsewhere: set[int] = set()
        on_nodes = {id(on) for on in ons}
        for column in tree.find_all(exp.Column):
            node, on_index = column.parent, None
            while node is not None and node is not tree:
                if id(node) in on_nodes:
                    on_index = next(k for k, on in enumerate(ons) if on is node)
                    break
                node = node.parent
            for i in _owners(column, aliases, infos):
                if on_index is None:
                    elsewhere.add(i)
                else:
                    in_on[i].add(on_index)
        drop = None
        for i in range(len(tables)):
            if i in elsewhere or len(in_on[i]) != 1:
                continue
            k = next(iter(in_on[i]))
            # The one condition is the join of this table (or, for the FROM table, of the
            # table joined to it), and it links the two tables and nothing more.
            linked = set().union(*(_owners(c, aliases, infos) for c in ons[k].find_all(exp.Column)))
            own = linked == {0, k + 1} if i == 0 else (k == i - 1 and len(linked) == 2)
            if own and i in linked and _foreign_key_join(ons[k], tables, infos):
                drop = (i, k)
                break
        if drop is None:
            break
        i, k = drop
        if i == 0:  # the FROM table: the table joined to it takes its place
            source = tree.args.get("from_") or tree.args.get("from")
            if source is None:  # _sources found a FROM table, so there is a FROM
                raise AssertionError("a SELECT with joins but no FROM")
            source.set("this", joins[k].this.copy())
        joins[k].pop()
        changed = True
    return tree.sql(dialect=dialect) if changed else sql


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    """The terms of an AND chain (through parentheses)."""
    if node is None:
        return []
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def _filters(select: exp.Select) -> list[tuple[exp.Where, list[exp.Expression]]]:
    """The WHERE clauses a filter can be dropped from, with their AND terms: the query's
    own, and that of a subquery compared with a column in one of its terms (``...
    AND T1.People_ID = (SELECT People_ID FROM people WHERE ...)``)."""
    where = select.args.get("where")
    if not isinstance(where, exp.Where):
        return []
    terms = _conjuncts(where.this)
    out = [(where, terms)]
    for term in terms:
        if not isinstance(term, exp.EQ | exp.In):
            continue
        operands = [term.this, term.expression, term.args.get("query")]
        for sub in operands:
            if isinstance(sub, exp.Subquery) and isinstance(sub.this, exp.Select):
                out += _filters(sub.this)
    return out


def _named(value: str, question: str) -> bool:
    """The question names the value, or a word that shares a stem with one of its words
    ('structural' for 'Structures'): then a filter on it may be what the question says."""
    if value in question:
        return True
    asked = {w[:5] for w in re.findall(r"\w{5,}", question)}
    return any(w[:5] in asked for w in re.findall(r"\w{5,}", value))


def drop_copied_examples(
    sql: str,
    question: str,
    shown: Iterable[str],
    placeholders: tuple[Placeholder, ...],
    dialect: str,
) -> str:
    """The SQL without the filters that compare a column with one of the schema's example
    values (``shown``, the values the prompt's comments give) that the question never
    mentions: ``... AND Nationality = 'United States'`` read into a question about one
    person's employment year. Nothing in the question asks for such a filter; the model
    copied it from the prompt, as it copies a comment's value for the question's own
    (which :func:`parametrize` handles). Only ``column = 'value'`` terms of a WHERE's AND
    chain are dropped (the query's, or a subquery's compared under it); a term on a
    placeholder's column, or on a value the question names or shares a word stem with,
    is kept."""
    examples = {v.strip().casefold() for v in shown if v.strip()}
    asked = question.casefold()
    keyed = {p.column.casefold() for p in placeholders}
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return sql
    if not isinstance(tree, exp.Select):
        return sql
    changed = False
    for where, terms in _filters(tree):
        kept = []
        for term in terms:
            if isinstance(term, exp.EQ):
                column, literal = term.this, term.expression
                if isinstance(column, exp.Literal):
                    column, literal = literal, column
                if (
                    isinstance(column, exp.Column)
                    and isinstance(literal, exp.Literal)
                    and literal.is_string
                    and str(literal.this).strip().casefold() in examples
                    and not _named(str(literal.this).strip().casefold(), asked)
                    and column.name.casefold() not in keyed
                ):
                    continue
            kept.append(term)
        if kept and len(kept) < len(terms):
            where.set("this", exp.and_(*(t.copy() for t in kept)))
            changed = True
    return tree.sql(dialect=dialect) if changed else sql


def parametrize(sql: str, group: Group, placeholders: tuple[Placeholder, ...], dialect: str) -> str:
    """The LLM's SQL with the example's values turned back into the template's
    placeholders, so it can be instantiated on every group. A value compared with
    ``LIKE '%value%'`` counts as compared with ``=``. Raises :class:`ReadingError` when a
    value is not in the SQL (the wording was not read as naming it)."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError as exc:
        raise ReadingError(f"not valid SQL: {str(exc).splitlines()[0][:80]}") from None
    by_value = {str(group.bindings[p.key]).strip().casefold(): p for p in placeholders}
    used: set[str] = set()
    for literal in list(tree.find_all(exp.Literal)):
        text = _literal_text(literal)
        if text is None:
            continue
        ph = by_value.get(text.strip().casefold())
        parent = literal.parent
        if ph is None and isinstance(parent, exp.Like | exp.ILike):
            ph = by_value.get(text.strip("%").strip().casefold())
            if ph is not None:
                column = parent.this
                parent.replace(exp.EQ(this=column.copy(), expression=exp.Literal.string(ph.token)))
                used.add(ph.key)
                continue
        if ph is not None:
            literal.replace(exp.Literal.string(ph.token))
            used.add(ph.key)
    for ph in [p for p in placeholders if p.key not in used]:
        # A small model sometimes copies an example value of the schema's comments instead
        # of the question's: the one other string compared with the placeholder's column
        # stands for it. What is judged is what the SQL asks, not how well it copies.
        stand_ins = [
            literal
            for literal in tree.find_all(exp.Literal)
            if literal.is_string
            and not literal.this.startswith("[")
            and isinstance(literal.parent, exp.EQ)
            and isinstance(column := literal.parent.this, exp.Column)
            and column.name.casefold() == ph.column.casefold()
        ]
        if len(stand_ins) == 1:
            stand_ins[0].replace(exp.Literal.string(ph.token))
            used.add(ph.key)
    missing = [p for p in placeholders if p.key not in used]
    if missing:
        value = group.bindings[missing[0].key]
        raise ReadingError(f"the SQL does not look up {value!r}")
    return tree.sql(dialect=dialect)


@dataclass(frozen=True)
class Reading:
    """How the LLM read a wording: its SQL, and how often its answers were the template's.
    ``answered`` counts the sampled groups the reading returns anything for, and
    ``same_answer`` says whether it selects the template's answer column: a reading that
    asks for the right column and finds nothing anywhere looked the value up in the wrong
    place (:meth:`ragaudit.generate.text.verifier.Verifier.backmap` asks it again). ``computed`` is
    the reading's answer expression when it computes one (``COUNT(Year_working)``) where
    the template selects a stored column."""

    sql: str
    agree: int
    compared: int
    answered: int = 0
    same_answer: bool = False
    computed: str | None = None

    @property
    def agreement(self) -> float:
        """Share of the sampled groups on which the reading gives the template's answer."""
        return self.agree / self.compared if self.compared else 0.0


def compare_reading(
    db: Database, schema: SchemaInfo, sample: TemplateSample, reading_sql: str
) -> Reading:
    """Execute the LLM's reading (placeholders restored) on the sampled groups and count
    those with the template's answers. Raises :class:`ReadingError` when the reading is
    not a valid template (e.g. it returns the key itself: the question asks for the key)."""
    dialect = db.sqlglot_dialect
    try:
        shape = check_template(reading_sql, schema, dialect=dialect)
        reading_plan = plan(reading_sql, schema, dialect=dialect)
    except UserError as exc:
        raise ReadingError(str(exc)) from None
    keys = [p.key for p in sample.shape.placeholders]
    if sorted(p.key.lower() for p in shape.placeholders) != sorted(k.lower() for k in keys):
        raise ReadingError("the SQL names other values than the question")
    expected = sample.answers
    wanted = set(expected)
    got: dict[tuple[Scalar, ...], frozenset[str]] = {}
    by_lower = {p.key.lower(): p.key for p in shape.placeholders}
    try:
        for group in iter_groups(db, reading_plan):
            bindings = {by_lower[k.lower()]: v for k, v in group.bindings.items()}
            combo = tuple(bindings[k] for k in keys)
            if combo in wanted:
                got[combo] = _answer_set(group.answers)
    except UserError as exc:
        raise ReadingError(f"the SQL does not run: {exc}") from None
    agree = sum(1 for combo, answers in expected.items() if got.get(combo) == answers)
    same = (
        shape.answer_column is not None
        and sample.shape.answer_column is not None
        and shape.answer_column.lower() == sample.shape.answer_column.lower()
        and (shape.answer_table or "").lower() == (sample.shape.answer_table or "").lower()
    )
    computed = (
        shape.answer
        if shape.answer_column is None and sample.shape.answer_column is not None
        else None
    )
    return Reading(reading_sql, agree, len(expected), len(got), same, computed)


def looked_up_where_absent(
    db: Database, schema: SchemaInfo, sql: str, token: str, value: Scalar
) -> str | None:
    """``Table.Column`` when the reading compares a placeholder (``token``) with a column
    that holds no such value (``... WHERE Client = '[Project.Name]'`` for a project's
    name), else None: a fact from the database that the reading looked the value up in
    the wrong place, which a model can act on."""
    dialect = db.sqlglot_dialect
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return None
    aliases: dict[str, TableInfo] = {}
    for table in tree.find_all(exp.Table):
        info = schema.table(table.name)
        if info is not None:
            aliases[table.alias_or_name.lower()] = info
    for literal in tree.find_all(exp.Literal):
        parent = literal.parent
        if not (literal.is_string and literal.this == token and isinstance(parent, exp.EQ)):
            continue
        column = parent.this if parent.expression is literal else parent.expression
        if not isinstance(column, exp.Column):
            continue
        owners = (
            [aliases[column.table.lower()]]
            if column.table.lower() in aliases
            else [t for t in aliases.values() if t.column(column.name) is not None]
        )
        found = owners[0].column(column.name) if len(owners) == 1 else None
        if found is None:
            continue
        q = db.engine.dialect.identifier_preparer.quote
        import sqlalchemy as sa

        rows = db.execute(
            sa.text(f"SELECT 1 FROM {q(owners[0].name)} WHERE {q(found.name)} = :v"),
            {"v": value},
            max_rows=1,
        ).rows
        if not rows:
            return f"{owners[0].name}.{found.name}"
    return None


def recover_reading(reply: str) -> str:
    """The one SQL statement of a back-mapping reply (prose and fences removed)."""
    from ragaudit.generate.sql.llm import recover_sql

    statements = recover_sql(reply)
    if not statements:
        raise ReadingError("the reply holds no SQL")
    return statements[0]


# -- reading comprehension: the wording answered from facts -------------------------------


def _rows(db: Database, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    import sqlalchemy as sa

    result = db.execute(sa.text(sql), params, max_rows=5)
    return [dict(zip(result.columns, row, strict=True)) for row in result.rows]


def facts(db: Database, schema: SchemaInfo, sample: TemplateSample) -> list[str]:
    """Facts about the example's row in every table the template reads, and about the rows
    one foreign key away: ``Project 'Praesni Laboratory': Location Perth.`` The answer is
    among them, next to the values a wrong reading would give."""
    from ragaudit.generate.text.verbalize import words

    q = db.engine.dialect.identifier_preparer.quote
    ex = sample.example
    out: list[str] = []
    seen: set[tuple[str, tuple[Any, ...]]] = set()
    # Rows named by the example's values, table by table.
    queue: list[tuple[TableInfo, str, Any]] = []
    for ph in sample.shape.placeholders:
        table = schema.table(ph.table)
        column_info = table.column(ph.column) if table else None
        if table is not None and column_info is not None:
            queue.append((table, column_info.name, ex.bindings[ph.key]))
    hops = 0
    while queue and hops < 8:
        table, column, value = queue.pop(0)
        hops += 1
        rows = _rows(db, f"SELECT * FROM {q(table.name)} WHERE {q(column)} = :v", {"v": value})
        for row in rows:
            ident = (table.name, tuple(row.values()))
            if ident in seen:
                continue
            seen.add(ident)
            name_col = _name_column(table)
            name = row.get(name_col) if name_col else None
            parts = [
                f"{words(c)}: {v}"
                for c, v in row.items()
                if v is not None and c != name_col and not _is_identifier(table, c)
            ]
            label = f"{words(table.name)} '{name}'" if name is not None else words(table.name)
            out.append(f"{label}: {'; '.join(parts)}.")
            for fk in table.foreign_keys:
                ref = schema.table(fk.ref_table)
                if ref is not None and len(fk.columns) == 1 and row.get(fk.columns[0]) is not None:
                    queue.append((ref, fk.ref_columns[0], row[fk.columns[0]]))
    return out


def _name_column(table: TableInfo) -> str | None:
    for c in table.columns:
        if c.is_text and re.search(r"name|title", c.name, re.IGNORECASE):
            return c.name
    return None


def _is_identifier(table: TableInfo, column: str) -> bool:
    info = table.column(column)
    return info is not None and is_id_like(info, table)


def reading_prompt(fact_lines: list[str], question: str) -> Messages:
    """Ask the question of the facts alone; facts first so that wordings asked about the
    same example share the prompt's prefix."""
    listed = "\n".join(f"- {line}" for line in fact_lines)
    return [
        system("You answer questions from the given facts only. You are brief."),
        user(
            f"Facts:\n{listed}\n\nAnswer the question from these facts with the value only; "
            "write unknown if they do not say.\n"
            f"Question: {question}"
        ),
    ]
