"""The built-in verbalizer: text templates without an LLM, so the whole path works offline.

Wordings come from table and column names (``SupervisorOrManager`` -> "supervisor or
manager", ``graduation_college`` -> "graduation college") put into a phrase bank per style,
chosen with a seed. ``short`` wordings are fragments of a few words, without articles or
conjunctions; ``long`` ones are complete sentences of at least 30 words with context, as in
the paper's Table 6.
"""

from __future__ import annotations

import random
import re

from ragaudit.db.identity import naming_rank
from ragaudit.db.schema import SchemaInfo
from ragaudit.errors import UserError
from ragaudit.generate.sql.asks import Asks, asks
from ragaudit.generate.sql.templates import SqlTemplate, TemplateShape, check_template

BUILT_IN_STYLES = ("short", "long")

# A value is never followed by a noun ("'[people.Name]' age" reads as a possessive that
# fits only names ending in s); an entity is its table's name in the singular ("person"
# for ``people``), since a wording names one row.
_SHORT_ONE = [
    "{answer} of {entity} '{k}'",
    "{entity} '{k}': {answer}",
    "{answer} for '{k}'",
    "Get {answer} of '{k}'",
    "'{k}': {answer}?",
    "Find {answer} of {entity} '{k}'",
    "Look up {answer}, {entity} '{k}'",
]
_SHORT_TWO = [
    "{answer} for {entity} '{k}', {entity2} '{k2}'",
    "{entity} '{k}', {entity2} '{k2}': {answer}",
    "Get {answer} of '{k}' at '{k2}'",
    "{answer}, '{k}' with '{k2}'",
    "Find {answer}: {entity} '{k}', {entity2} '{k2}'",
]
_LONG_ONE = [
    "I am going through the records that we keep about every {entity} in our organisation, "
    "and I would like to know the {answer} that is recorded for the {entity} whose {key} is "
    "'{k}'. Could you please tell me what it is?",
    "For a report that I am preparing about our {entity} records, I need one specific detail: "
    "please look up the {entity} identified by the {key} '{k}' and tell me which {answer} is "
    "listed for it.",
    "Could you help me with a question about a single {entity}? In the information that we "
    "hold, the {entity} with the {key} '{k}' has {a_answer} on record, and I would like you to "
    "tell me exactly what that {answer} is.",
    "A colleague asked me about the {entity} known by the {key} '{k}', and neither of us could "
    "remember its {answer}, so I am hoping that you can find the {answer} of this particular "
    "{entity} in the available documents.",
    "While checking the details of one {entity} in our files, namely the one whose {key} is "
    "'{k}', I realised that I do not know its {answer}; please find that {answer} and give it "
    "to me as precisely as you can.",
]
_LONG_TWO = [
    "I am going through our records and I would like to know the {answer} that is recorded "
    "for the {entity} whose {key} is '{k}' together with the {entity2} whose {key2} is "
    "'{k2}'. Could you please tell me what it is?",
    "For a report that I am preparing, I need one specific detail about how two records "
    "relate: the {entity} '{k}' and the {entity2} '{k2}'. Please look them up and tell me the "
    "{answer} that is listed for this pair.",
    "Could you help me with a question that involves both the {entity} with the {key} '{k}' "
    "and the {entity2} with the {key2} '{k2}'? I would like to know exactly which {answer} our "
    "information records for the two of them.",
    "A colleague asked me about the connection between the {entity} '{k}' and the {entity2} "
    "'{k2}', and we could not remember the {answer}, so I am hoping that you can find that "
    "{answer} in the available documents for us.",
]


# What is computed over several rows (a count, a total, the set of them): no "a {answer}"
# nor "which {answer} is listed", which read as one value of the row.
_LONG_MANY = [
    "I am going through the records that we keep about every {entity} in our organisation, "
    "and I would like to know the {answer} for the {entity} whose {key} is '{k}'. Could you "
    "please tell me what the records say?",
    "For a report that I am preparing about our {entity} records, I need one specific detail: "
    "please look up the {entity} identified by the {key} '{k}' and tell me the {answer} for "
    "it.",
    "A colleague asked me about the {entity} known by the {key} '{k}', and neither of us could "
    "say what the {answer} for it is, so I am hoping that you can work it out from the "
    "available documents.",
    "While checking the details of one {entity} in our files, namely the one whose {key} is "
    "'{k}', I realised that I do not know the {answer} for it; please find out and tell me as "
    "precisely as you can.",
]
# Whether the named row passes a comparison: its own phrase banks, since the answer is
# yes or no, not a value of the row.
_SHORT_YES_NO = [
    "Is {measure} of {entity} '{k}' over {threshold}?",
    "{entity} '{k}': {measure} above {threshold}?",
    "Does '{k}' have {measure} over {threshold}?",
    "{measure} of '{k}' over {threshold}?",
    "Is {entity} '{k}' over {threshold} in {measure}?",
]
_LONG_YES_NO = [
    "I am going through the records that we keep about every {entity} in our organisation, "
    "and I would like to know whether the {measure} recorded for the {entity} whose {key} is "
    "'{k}' is over {threshold}. Could you please tell me yes or no?",
    "For a report that I am preparing about our {entity} records, I need to check one thing: "
    "please look up the {entity} identified by the {key} '{k}' and tell me whether its "
    "{measure} is above {threshold} or not.",
    "A colleague asked me about the {entity} known by the {key} '{k}', and neither of us could "
    "remember whether its {measure} is over {threshold}, so I am hoping that you can check "
    "this in the available documents.",
]


def words(identifier: str) -> str:
    """``SupervisorOrManager`` / ``graduation_college`` / ``HTTPCode`` -> lower-case words."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", identifier)
    return " ".join(spaced.replace("_", " ").replace("-", " ").lower().split())


# Plurals that no suffix rule undoes.
_IRREGULAR = {
    "people": "person",
    "persons": "person",
    "men": "man",
    "women": "woman",
    "children": "child",
    "staff": "staff",
    "data": "data",
    "media": "media",
    "series": "series",
    "species": "species",
}


def singular(word: str) -> str:
    """The singular of an English noun, by rule (``companies`` -> company, ``people`` ->
    person, ``status`` and ``address`` unchanged): a table is named for its rows, a
    wording names one row.

    >>> [singular(w) for w in ("people", "companies", "employees", "branches", "status")]
    ['person', 'company', 'employee', 'branch', 'status']
    """
    w = word.lower()
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if w.endswith(("sses", "xes", "ches", "shes", "zzes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is", "ics", "ws")):
        return w[:-1]
    return w


def plural(noun: str) -> str:
    """The plural of a singular English noun, by rule (``company`` -> companies,
    ``person`` -> people, ``branch`` -> branches).

    >>> [plural(w) for w in ("company", "person", "branch", "employee", "day")]
    ['companies', 'people', 'branches', 'employees', 'days']
    """
    w = noun.lower()
    for many, one in _IRREGULAR.items():
        if one == w and many != "persons":
            return many
    if len(w) > 2 and w.endswith("y") and w[-2] not in "aeiou":
        return w[:-1] + "ies"
    if w.endswith(("s", "x", "ch", "sh", "z")):
        return w + "es"
    return w + "s"


def article(noun: str) -> str:
    """``a`` or ``an`` before ``noun``, by its first letter (and the few words whose
    first sound says otherwise): "an age", "a university", "an hour"."""
    w = noun.lower()
    vowel = w[:1] in set("aeiou") and not w.startswith(("uni", "use", "usu", "one", "eu"))
    return "an" if vowel or w.startswith(("hour", "honest", "honor", "honour")) else "a"


def entity(table: str) -> str:
    """How a wording names one row of ``table``: its words, the last in the singular
    (``people`` -> person, ``order_items`` -> order item)."""
    parts = words(table).split()
    return " ".join([*parts[:-1], singular(parts[-1])]) if parts else table


def _plural_of(noun: str) -> str:
    parts = noun.split()
    return " ".join([*parts[:-1], plural(parts[-1])]) if parts else noun


def _asked(shape_answer: str, a: Asks, named: bool) -> str:
    """The words for what a template of each kind asks: "number of projects", "total
    budget of projects", "project with the highest budget", "projects with budget over
    3000"."""
    rows = entity(a.rows) if a.rows else "row"
    many = _plural_of(rows)
    measure = words(a.measure) if a.measure else ""
    if a.kind == "count":
        return f"number of {many}"
    if a.kind == "date_range":
        return f"number of {many} with {measure} in {a.year}"
    if a.kind == "sum":
        return f"total {measure} of {many}"
    if a.kind == "average":
        return f"average {measure} of {many}"
    if a.kind in ("minimum", "maximum"):
        low, high = ("earliest", "latest") if a.measure_is_date else ("lowest", "highest")
        return f"{low if a.kind == 'minimum' else high} {measure} among {many}"
    if a.kind == "superlative":
        if a.by_count:
            return f"{rows} with the most {_plural_of(entity(a.by_count))}"
        low, high = ("earliest", "latest") if a.measure_is_date else ("lowest", "highest")
        return f"{rows} with the {high if a.most else low} {measure}"
    if a.kind == "set" and named:
        return f"{many} with {measure} over {a.threshold}" if a.threshold else many
    return shape_answer


def _phrases(template: SqlTemplate, schema: SchemaInfo) -> dict[str, str]:
    """The words a wording is made of: what is asked (per kind: :func:`_asked`), and each
    placeholder's entity, key and token (``entity2``, ``key2``, ``k2`` for a second
    placeholder). A person named by first and last name is one placeholder of two tokens,
    written "'[Employee.FirstName] [Employee.LastName]'"."""
    shape = check_template(template.sql, schema)
    placeholders = list(shape.placeholders)
    composite = len({p.table.lower() for p in placeholders}) == 1 and len(placeholders) == 2
    if len(placeholders) > 2:
        raise UserError(f"{template.id}: the verbalizer words templates of 1 or 2 placeholders")
    a = asks(template.sql, schema, dialect=_dialect(schema), declared=template.kind)
    if shape.answer_column is None:
        answer = "count" if "count" in shape.answer.lower() else words(shape.answer)
    else:
        answer = words(shape.answer_column)
        placeholder_tables = {p.table.lower() for p in placeholders}
        if shape.answer_table and shape.answer_table.lower() not in placeholder_tables:
            # A lookup across tables: say whose attribute it is ("client industry"),
            # unless its name already does ("order date" of orders, not "order order date").
            owner = entity(shape.answer_table)
            if not (answer == owner or answer.startswith(f"{owner} ")):
                answer = f"{owner} {answer}"
    # A set of rows by their names ("projects"), not of another attribute of theirs.
    named = shape.answer_column is None or _names_its_row(schema, shape)
    if a.kind in ("lookup", "path") and shape.answer_column is None and a.rows:
        answer = f"{entity(a.rows)} name"  # a person's "first last"
    answer = _asked(answer, a, named)
    first = placeholders[0]
    values = {
        "answer": answer,
        "a_answer": f"{article(answer)} {answer}",
        "entity": entity(first.table),
        "key": words(first.column),
        "k": f"[{first.table}.{first.column}]",
        "measure": words(a.measure) if a.measure else answer,
        "threshold": a.threshold or "",
    }
    if composite:
        second = placeholders[1]
        values["key"] = "name"
        values["k"] = f"[{first.table}.{first.column}] [{second.table}.{second.column}]"
    elif len(placeholders) == 2:
        second = placeholders[1]
        values |= {
            "entity2": entity(second.table),
            "key2": words(second.column),
            "k2": f"[{second.table}.{second.column}]",
        }
    values["kind"] = a.kind
    return values


def _names_its_row(schema: SchemaInfo, shape: TemplateShape) -> bool:
    table = schema.table(shape.answer_table or "")
    column = table.column(shape.answer_column or "") if table else None
    return table is not None and column is not None and naming_rank(column, table) is not None


def _dialect(schema: SchemaInfo) -> str:
    return {"postgresql": "postgres"}.get(schema.dialect, schema.dialect)


def describe(template: SqlTemplate, schema: SchemaInfo) -> str:
    """What the template asks, in words: ``the client industry of the project whose name
    is '[Project.Name]'`` (told to the LLM that rewords it, so it keeps the meaning)."""
    v = _phrases(template, schema)
    if v["kind"] == "yes_no":
        return (
            f"whether the {v['measure']} of the {v['entity']} whose {v['key']} is "
            f"'{v['k']}' is over {v['threshold']} (answered yes or no)"
        )
    text = f"the {v['answer']} of the {v['entity']} whose {v['key']} is '{v['k']}'"
    if "k2" in v:
        text += f", for the {v['entity2']} whose {v['key2']} is '{v['k2']}'"
    return text


def verbalize(
    template: SqlTemplate, schema: SchemaInfo, style: str, n: int = 3, seed: int = 0
) -> list[str]:
    """``n`` distinct wordings of ``template`` in a built-in style, chosen with ``seed``."""
    if style not in BUILT_IN_STYLES:
        raise UserError(
            f"style '{style}' has no built-in wording: the verbalizer knows "
            f"{', '.join(BUILT_IN_STYLES)}; use the LLM generator for other styles"
        )
    values = _phrases(template, schema)
    if values["kind"] == "yes_no" and values["threshold"]:
        bank = _SHORT_YES_NO if style == "short" else _LONG_YES_NO
    elif "k2" in values:
        bank = _SHORT_TWO if style == "short" else _LONG_TWO
    elif style == "long" and values["kind"] not in ("lookup", "path"):
        bank = _LONG_MANY
    else:
        bank = _SHORT_ONE if style == "short" else _LONG_ONE
    rng = random.Random(f"{seed}:{template.id}:{style}")
    chosen = rng.sample(bank, min(n, len(bank)))
    out = []
    for pattern in chosen:
        text = pattern.format(**values)
        out.append(text[0].upper() + text[1:] if text[0].isalpha() else text)
    return out
