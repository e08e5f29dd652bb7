"""Every word of a wording accounted for: what a reader that drops words lets through.

A small model reading a wording as SQL keeps the words it can map to a table or a column
and drops the rest. "Who was the previous project manager of 'X'?" reads as the project
manager of X, executes to the template's answers, and passes; so does "the start date
of the client 'X'" for a project named X, and "Whom does 'X' supervise?" for X's
supervisor. These checks read the wording's own words:

* **qualifiers** (no LLM): a word that shifts the time ("previous", "the one after 'X'"),
  asks for an extreme or a count the SQL does not compute ("the highest", "how many"), or
  adds a condition ("only if", "excluding", a year) changes what is asked, whatever SQL a
  reader writes for the rest;
* **reversed relation** (no LLM): the value does what the asked role does ("'X' supervises
  ...", "whom does 'X' supervise", "managed by 'X'") where the SQL asks who does it to X;
* **unaccounted names** (with the reading): a table or column of the schema that the
  wording names in its question, which the LLM's reading never uses ("client" in "the
  start date of the client 'X'", read as the project's start date).

Only the *question part* of a wording is read: its sentences that hold a placeholder or
name the asked column. A sentence of context ("I have a client call tomorrow.") asks
nothing. Pure: no database, no LLM.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from ragaudit.db.identity import is_id_like
from ragaudit.db.schema import SchemaInfo, TableInfo
from ragaudit.generate.sql.templates import TemplateShape
from ragaudit.generate.text.templates import TOKEN
from ragaudit.generate.text.verbalize import singular, words

# A placeholder (with the quotes around it) becomes this one word.
VALUE = "\x00v"

# Words that move the asked fact in time: a template reads today's row, never the one
# before or after it.
TIME_SHIFT = frozenset(
    {
        "previous",
        "previously",
        "prior",
        "preceding",
        "former",
        "formerly",
        "originally",
        "original",
        "initial",
        "initially",
        "subsequent",
        "subsequently",
        "succeeding",
        "successor",
        "successors",
        "predecessor",
        "predecessors",
        "upcoming",
        "future",
        "outgoing",
        "incoming",
        "ago",
        "anymore",
        "erstwhile",
        "onetime",
    }
)
TIME_PHRASES = (
    "used to",
    "no longer",
    "any more",
    "at the time",
    "back then",
    "in the past",
    "these days",
    "nowadays",
)
# Words that shift the time or pick one of several only when they qualify what is asked
# ("the next project", "the last manager", "the first one"), not "next week".
POSITIONAL = frozenset(
    {"next", "last", "first", "second", "third", "following", "new", "old", "later", "earlier"}
)
# Prepositions that, put before the value, ask about another row: "the project after 'X'".
RELATIVE = (
    "before",
    "after",
    "following",
    "preceding",
    "succeeding",
    "prior to",
    "ahead of",
    "since",
    "until",
    "till",
    "replacing",
    "replaced",
)
# Extremes and counts: a template that neither aggregates nor orders returns a row's own
# value, never the highest one or how many there are.
EXTREMES = frozenset(
    {
        "most",
        "least",
        "highest",
        "lowest",
        "largest",
        "smallest",
        "biggest",
        "greatest",
        "fewest",
        "maximum",
        "max",
        "minimum",
        "min",
        "average",
        "avg",
        "mean",
        "median",
        "total",
        "sum",
        "latest",
        "newest",
        "oldest",
        "earliest",
        "longest",
        "shortest",
        "top",
        "best",
        "worst",
        "count",
        "counts",
        "tally",
        "commonest",
        "typical",
        "typically",
        "usual",
        "usually",
    }
)
COUNTING = ("how many", "number of", "amount of")
# Conditions a template without such a filter cannot apply.
CONDITIONS = (
    "only if",
    "only when",
    "only for",
    "only in",
    "only counting",
    "only those",
    "but only",
    "except",
    "excluding",
    "exclude",
    "other than",
    "apart from",
    "aside from",
    "besides",
    "not counting",
    "leaving out",
    "leave out",
    "unless",
    "provided that",
    "as long as",
    "in case",
    "if it is",
    "if it was",
    "if they are",
    "if still",
    "if it still",
    "when it was",
    "while it was",
    "during",
    "as of",
)

_SENTENCE = re.compile(r"(?<=[.?!;])\s+")
_WORD = re.compile(r"\x00v|[A-Za-z]+(?:'[A-Za-z]+)?|\d+")
_AGENT = re.compile(r"^(\w{3,}?)(?:or|er)$")
_BE = frozenset({"is", "was", "are", "were", "be", "been", "being"})
_AUX = (
    frozenset(
        {"has", "have", "had", "will", "would", "does", "did", "do", "currently", "still", "also"}
    )
    | _BE
    | {"now", "already", "directly", "personally"}
)


def _tokens(text: str) -> list[str]:
    """The wording's words, lower-cased, each placeholder (and its quotes) as one word."""
    plain = re.sub(r"'?\s*" + TOKEN.pattern + r"\s*'?", f" {VALUE} ", text)
    return [w.lower() for w in _WORD.findall(plain)]


def _stem(word: str) -> str:
    """A word reduced for matching a schema name: singular, possessive dropped."""
    word = word.lower().removesuffix("'s")
    return singular(word)


@dataclass(frozen=True)
class Names:
    """The schema's nouns: each table's and column's words (``project manager``), as the
    wordings write them (singular, lower case), with what they name."""

    phrases: dict[tuple[str, ...], frozenset[str]]  # words -> the "table" / "table.column" named

    @property
    def tables(self) -> set[str]:
        """The words of the tables' names (singular)."""
        return {
            w
            for phrase, named in self.phrases.items()
            for w in phrase
            if any("." not in n for n in named)
        }

    @classmethod
    def of(cls, schema: SchemaInfo) -> Names:
        """The names of every table and every column but the identifiers."""
        phrases: dict[tuple[str, ...], set[str]] = {}
        for table in schema.tables:
            key = tuple(_stem(w) for w in words(table.name).split())
            phrases.setdefault(key, set()).add(table.name.lower())
            for column in table.columns:
                if _identifier(table, column.name):
                    continue
                ckey = tuple(_stem(w) for w in words(column.name).split())
                phrases.setdefault(ckey, set()).add(f"{table.name}.{column.name}".lower())
        return cls({k: frozenset(v) for k, v in phrases.items() if k})

    def found(self, tokens: list[str]) -> list[tuple[int, int, tuple[str, ...]]]:
        """The schema names in ``tokens``, longest first where two overlap: (start, end,
        phrase)."""
        stems = [_stem(t) for t in tokens]
        out: list[tuple[int, int, tuple[str, ...]]] = []
        taken: set[int] = set()
        for phrase in sorted(self.phrases, key=len, reverse=True):
            n = len(phrase)
            for i in range(len(stems) - n + 1):
                span = range(i, i + n)
                if tuple(stems[i : i + n]) == phrase and not taken & set(span):
                    out.append((i, i + n, phrase))
                    taken |= set(span)
        return sorted(out)


def _identifier(table: TableInfo, column: str) -> bool:
    info = table.column(column)
    return info is not None and is_id_like(info, table)


def asked_words(shape: TemplateShape) -> set[str]:
    """The stems of what the template asks for: its answer column's words (and those of
    the answer expression when it is not a plain column)."""
    source = shape.answer_column or re.sub(r"[^A-Za-z_]+", " ", shape.answer)
    return {_stem(w) for w in words(source).split() if len(w) > 2}


def question_part(text: str, shape: TemplateShape) -> list[list[str]]:
    """The sentences of the wording that ask (as word lists): those that hold a
    placeholder or name the asked column. The others are context."""
    asked = asked_words(shape)
    out = []
    for sentence in _SENTENCE.split(text.strip()):
        tokens = _tokens(sentence)
        if VALUE in tokens or any(_stem(t) in asked for t in tokens):
            out.append(tokens)
    return out


def _phrase_at(tokens: list[str], i: int, phrases: Iterable[str]) -> str | None:
    for phrase in phrases:
        parts = phrase.split()
        if tokens[i : i + len(parts)] == parts:
            return phrase
    return None


def qualifier_problem(text: str, shape: TemplateShape, schema: SchemaInfo, sql: str) -> str | None:
    """Why the wording asks for more or other than a plain lookup can answer: a time
    shift, an extreme or a count the SQL does not compute, or a condition it does not
    apply (with the words), or None. Read in the question part only."""
    names = Names.of(schema)
    aggregates = _aggregates(sql)
    asked = asked_words(shape)
    for tokens in question_part(text, shape):
        found = names.found(tokens)
        nouns = {i for start, end, _ in found for i in range(start, end)}
        # A word of a schema name of several words names a column or a table, not a
        # shift or an extreme: "last name", "first name", "total amount", "old price".
        named = {i for start, end, _ in found if end - start > 1 for i in range(start, end)}
        for i, word in enumerate(tokens):
            if i in named:
                continue
            if word in TIME_SHIFT:
                return f"qualifier: '{word}' shifts the time, which the SQL does not"
            phrase = _phrase_at(tokens, i, TIME_PHRASES)
            if phrase:
                return f"qualifier: '{phrase}' shifts the time, which the SQL does not"
            if word in POSITIONAL and _qualifies(tokens, i, nouns):
                return f"qualifier: '{word} {tokens[i + 1]}' picks another row than the SQL's"
            phrase = _phrase_at(tokens, i, RELATIVE)
            if phrase:
                after = i + len(phrase.split())
                rest = [t for t in tokens[after : after + 3] if t not in {"the", "that", "of"}]
                if rest and (rest[0] == VALUE or (len(rest) > 1 and rest[1] == VALUE)):
                    return f"qualifier: '{phrase}' the value asks about another row"
            if not aggregates:
                if word in EXTREMES:
                    return (
                        f"qualifier: '{word}' asks for an extreme or a count the SQL does "
                        "not compute"
                    )
                phrase = _phrase_at(tokens, i, COUNTING)
                if phrase:
                    # "the number of years" for a column of years is the value itself;
                    # "the number of projects" counts rows.
                    counted = tokens[i + len(phrase.split()) : i + len(phrase.split()) + 3]
                    if not any(_stem(t) in asked - names.tables for t in counted):
                        return f"qualifier: '{phrase}' asks for a count the SQL does not compute"
            phrase = _phrase_at(tokens, i, CONDITIONS)
            if phrase:
                return f"qualifier: '{phrase}' adds a condition the SQL does not apply"
            if word.isdigit() and word not in _numbers(sql):
                return f"qualifier: '{word}' adds a condition the SQL does not apply"
    return None


def _qualifies(tokens: list[str], i: int, nouns: set[int]) -> bool:
    """The word at ``i`` qualifies a schema noun or 'one' (at most one word between)."""
    for j in (i + 1, i + 2):
        if j < len(tokens) and (j in nouns or tokens[j] in {"one", "ones"}):
            return True
        if j < len(tokens) and tokens[j] in {VALUE}:
            return False
    return False


def _aggregates(sql: str) -> bool:
    """The template computes an aggregate or orders its rows (an extreme or a count may
    be what it asks)."""
    try:
        tree = sqlglot.parse_one(sql.replace("'[", "'").replace("]'", "'"))
    except SqlglotError:
        return True
    return (
        tree.find(exp.AggFunc) is not None
        or tree.find(exp.Order) is not None
        or tree.find(exp.Group) is not None
    )


def _numbers(sql: str) -> set[str]:
    return set(re.findall(r"\d+", TOKEN.sub(" ", sql)))


def agent_verbs(shape: TemplateShape, schema: SchemaInfo, sql: str) -> dict[str, str]:
    """The verbs of the roles the template asks for: an asked column, or a column the
    SQL joins through, named by an agent noun (``SupervisorOrManager`` -> supervise and
    manage; ``ProjectDirector`` -> direct), as ``{stem: noun}``."""
    columns = {shape.answer_column} if shape.answer_column else set()
    try:
        tree = sqlglot.parse_one(sql.replace("'[", "'").replace("]'", "'"))
        for join in tree.find_all(exp.Join):
            on = join.args.get("on")
            if on is not None:
                columns |= {c.name for c in on.find_all(exp.Column)}
    except SqlglotError:
        pass
    placeholder_columns = {p.column.lower() for p in shape.placeholders}
    out: dict[str, str] = {}
    for column in columns:
        if column is None or column.lower() in placeholder_columns:
            continue
        for word in words(column).split():
            found = _AGENT.match(word)
            if found and word not in {"number", "order", "other", "member", "customer", "year"}:
                out[found.group(1)] = word
    return out


def _verb_form(word: str, stems: dict[str, str]) -> tuple[str, str] | None:
    """(the stem, the form's ending) when ``word`` is a form of one of the verbs."""
    for stem in stems:
        found = re.fullmatch(re.escape(stem) + r"(e|es|ed|ing|s|)", word)
        if found:
            return stem, found.group(1)
    return None


def reversed_problem(text: str, shape: TemplateShape, schema: SchemaInfo, sql: str) -> str | None:
    """Why the wording reverses the asked relation, or None: the template asks who holds
    a role for the value ("the supervisor of 'X'"), and the wording has the value play
    the role: its subject ("'X' supervises", "whom does 'X' supervise") or its agent
    ("supervised by 'X'"). A passive with the value as subject ("'X' is supervised by")
    asks what the template asks."""
    stems = agent_verbs(shape, schema, sql)
    if not stems:
        return None
    for tokens in question_part(text, shape):
        for i, word in enumerate(tokens):
            if word != VALUE:
                continue
            # "do/does/did 'X' supervise"
            nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
            form = _verb_form(nxt, stems)
            if i > 0 and tokens[i - 1] in {"do", "does", "did"} and form:
                return _reversed(form, stems)
            # "'X' supervises", "'X' has managed", "'X' is directing" (not "'X' is managed by")
            # A participle after a form of "be" ("is 'X' supervised", "'X' was managed"),
            # or followed by "by", is passive: the value undergoes the role.
            j, be = i + 1, i > 0 and tokens[i - 1] in _BE
            while j < len(tokens) and tokens[j] in _AUX:
                be = be or tokens[j] in _BE
                j += 1
            form = _verb_form(tokens[j], stems) if j < len(tokens) else None
            by = j + 1 < len(tokens) and tokens[j + 1] == "by"
            if form and not (form[1] == "ed" and (be or by)):
                return _reversed(form, stems)
            # "supervised by 'X'"
            if i >= 2 and tokens[i - 1] == "by":
                form = _verb_form(tokens[i - 2], stems)
                if form and form[1] == "ed":
                    return _reversed(form, stems)
    return None


def _reversed(form: tuple[str, str], stems: dict[str, str]) -> str:
    noun = stems[form[0]]
    return (
        f"reversed relation: the value does what the {noun} does, where the SQL asks for "
        f"the value's {noun}"
    )


def used_names(sql: str, schema: SchemaInfo, dialect: str) -> set[str]:
    """What a reading uses (``table`` and ``table.column``, lower case): every column it
    selects or compares outside a join's condition, its table, and the table a foreign
    key of it references. A table only joined, never used, is not counted: a join that
    does nothing says nothing about the words it was written for."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return set()
    aliases: dict[str, TableInfo] = {}
    for table in tree.find_all(exp.Table):
        info = schema.table(table.name)
        if info is not None:
            aliases[table.alias_or_name.lower()] = info
            aliases.setdefault(info.name.lower(), info)
    in_joins = {id(c) for j in tree.find_all(exp.Join) for c in j.find_all(exp.Column)}
    out: set[str] = set()
    for column in tree.find_all(exp.Column):
        if id(column) in in_joins:
            continue
        if column.table:
            owners = [aliases[column.table.lower()]] if column.table.lower() in aliases else []
        else:
            owners = [t for t in aliases.values() if t.column(column.name) is not None]
        for owner in owners:
            found = owner.column(column.name)
            if found is None:
                continue
            out |= {owner.name.lower(), f"{owner.name}.{found.name}".lower()}
            for fk in owner.foreign_keys:
                if len(fk.columns) == 1 and fk.columns[0].lower() == found.name.lower():
                    out.add(fk.ref_table.lower())
                    out |= {f"{fk.ref_table}.{c}".lower() for c in fk.ref_columns}
    return out


def unaccounted(
    text: str, shape: TemplateShape, schema: SchemaInfo, reading_sql: str, dialect: str
) -> list[str]:
    """The schema names the wording's question part says that its reading does not use
    (``["client"]`` for "the start date of the client 'X'" read as ``SELECT StartDate
    FROM Project WHERE Name = 'X'``), in order, each once."""
    names = Names.of(schema)
    used = used_names(reading_sql, schema, dialect)
    out: list[str] = []
    for tokens in question_part(text, shape):
        for start, end, phrase in names.found(tokens):
            if names.phrases[phrase] & used:
                continue
            said = " ".join(tokens[start:end])
            if said not in out:
                out.append(said)
    return out
