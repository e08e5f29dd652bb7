"""From templates to the grounded dataset: every semantic group (an instantiated SQL
query with its executed answer) asked in every wording of every style.

Streaming end to end: groups arrive from the database one by one and records go straight
to the JSONL writer, so memory stays flat whatever the number of queries (sampling keeps
at most ``max_groups_per_template`` groups per template).
"""

from __future__ import annotations

import collections
import itertools
import random
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ragaudit.db.engine import Database
from ragaudit.db.schema import SchemaInfo
from ragaudit.errors import ConfigError, UserError, looked_in
from ragaudit.generate.options import GenerateOptions, GoldRule
from ragaudit.generate.sql.instantiate import (
    AnswerFact,
    Group,
    Plan,
    count_combinations,
    iter_groups,
    iter_unanswered,
)
from ragaudit.generate.sql.instantiate import plan as plan_template
from ragaudit.generate.sql.kinds import MAX_SET_SIZE
from ragaudit.generate.sql.templates import (
    SqlTemplate,
    TemplateFileError,
    check_template,
    normalize_sql,
)
from ragaudit.generate.text.templates import (
    TextTemplates,
    fill,
    near_duplicate_key,
    placeholder_problem,
)
from ragaudit.records.io import RecordFileError, iter_jsonl_dicts
from ragaudit.records.models import GoldKind, QueryRecord, Reference, Scalar, stable_id

if TYPE_CHECKING:
    from ragaudit.generate.text.verifier import StyleCounts


@dataclass
class TemplateStats:
    """What one template yielded: the counts of the paper's Table 2, and what was dropped."""

    template_id: str
    combinations: int = 0
    groups: int = 0
    multi_answer_groups: int = 0
    null_answer_groups: int = 0
    kept_groups: int = 0
    unanswerable: int = 0
    queries: dict[str, int] = field(default_factory=dict)
    text_templates: dict[str, int] = field(default_factory=dict)
    skipped: str | None = None
    # Kept groups by what their gold ids say: "states" (documents that state the answer),
    # "computed" (documents that state what a computed answer is computed from), "holes"
    # (no document states it: gold ids []), "entity" (a gold-id rule), "unknown".
    gold: dict[str, int] = field(default_factory=dict)
    # The tables the template reads, and the columns its questions ask or name
    # ("Table.Column": the answer's column, the placeholders'), as the schema spells them:
    # what the per-table view (TableStats) counts.
    tables: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)


@dataclass
class DatasetStats:
    """Totals over all templates, the groups dropped because one of their questions reads
    the same as another group's with another answer, and the wordings left out (per style
    and reason: rejected by verification, or never verified)."""

    templates: list[TemplateStats] = field(default_factory=list)
    conflicting_groups: int = 0
    wordings_dropped: dict[str, dict[str, int]] = field(default_factory=dict)
    wordings: dict[str, WordingTally] = field(default_factory=dict)
    unverified_asked: int = 0  # wordings asked though never verified (--unverified)
    # generate.gold_rows: documents, rows, cells checked, stated and not found in their text
    gold_rows: dict[str, int] | None = None
    # What the user should know about the gold ids (a rule that applies to no template,
    # gold ids naming no document of the corpus), one line each.
    warnings: list[str] = field(default_factory=list)
    # Per table of the database: its rows and attributes, the templates reading it and the
    # questions they gave (GRAMMAR v1's Table 4), filled by the step (``table_stats``).
    tables: list[TableStats] = field(default_factory=list)

    @property
    def queries(self) -> int:
        """Text queries in the dataset."""
        return sum(sum(t.queries.values()) for t in self.templates if t.skipped is None)

    def overview(self) -> DatasetOverview:
        """The dataset at a glance (the layout of GRAMMAR's Table 2): SQL templates,
        groups, text templates and text queries per style, and what was left out."""
        styles = sorted({s for t in self.templates for s in t.queries})
        used = [t for t in self.templates if t.skipped is None]
        return DatasetOverview(
            sql_templates=len(used),
            combinations=sum(t.combinations for t in used),
            semantic_groups=sum(t.kept_groups for t in used),
            multi_answer_groups=sum(t.multi_answer_groups for t in used),
            null_answer_groups=sum(t.null_answer_groups for t in used),
            unanswerable_queries_groups=sum(t.unanswerable for t in used),
            text_templates={s: sum(t.text_templates.get(s, 0) for t in used) for s in styles},
            text_queries={s: sum(t.queries.get(s, 0) for t in used) for s in styles},
            skipped_templates={
                t.template_id: t.skipped for t in self.templates if t.skipped is not None
            },
            conflicting_groups=self.conflicting_groups,
            gold_groups=dict(
                sum((collections.Counter(t.gold) for t in used), collections.Counter())
            ),
            wordings_dropped=self.wordings_dropped,
            wordings=self.wordings,
            unverified_asked=self.unverified_asked,
            gold_rows=self.gold_rows,
            warnings=self.warnings,
        )


class RejectedWording(BaseModel):
    """One wording the checks rejected, shown as an example."""

    template: str = Field(description="SQL template id.")
    text: str = Field(description="The wording.")
    reason: str = Field(description="Why it was rejected.")


class WordingTally(BaseModel):
    """The wordings of one style: how many were proposed, verified, rejected, unchecked."""

    proposed: int = Field(description="Wordings proposed (by the LLM, verbalizer or a file).")
    verified: int = Field(description="Judged to ask exactly what their SQL answers.")
    rejected: int = Field(description="Rejected by a check.")
    unchecked: int = Field(description="Never judged.")
    rate: float | None = Field(description="verified / (verified + rejected); null: none judged.")
    reasons: dict[str, int] = Field(description="Rejections per check, most common first.")
    examples: list[RejectedWording] = Field(description="A few rejected wordings.")

    @classmethod
    def of(cls, counts: StyleCounts, examples: int = 3) -> WordingTally:
        """The verifier's counts of one style as dataset.stats.json and the report show
        them (a few rejections as examples)."""
        return cls(
            proposed=counts.proposed,
            verified=counts.verified,
            rejected=counts.rejected,
            unchecked=counts.unchecked,
            rate=counts.rate,
            reasons=dict(counts.reasons.most_common()),
            examples=[
                RejectedWording(template=tid, text=text, reason=reason)
                for tid, text, reason in counts.examples[:examples]
            ],
        )


class DatasetOverview(BaseModel):
    """The dataset at a glance, as dataset.stats.json (``overview``) and the report show it.
    Every field has a default so that files written by earlier versions still read."""

    sql_templates: int = Field(0, description="SQL templates that yielded groups.")
    combinations: int = Field(0, description="Placeholder combinations of those templates.")
    semantic_groups: int = Field(0, description="Groups kept: one instantiated SQL query each.")
    multi_answer_groups: int = Field(0, description="Groups with several answers.")
    null_answer_groups: int = Field(0, description="Groups whose answer is NULL.")
    unanswerable_queries_groups: int = Field(0, description="Combinations without an answer.")
    text_templates: dict[str, int] = Field(
        default_factory=dict, description="Wordings used, per style."
    )
    text_queries: dict[str, int] = Field(
        default_factory=dict, description="Questions in the dataset, per style."
    )
    skipped_templates: dict[str, str] = Field(
        default_factory=dict, description="Template id -> why it was skipped."
    )
    conflicting_groups: int = Field(
        0, description="Groups dropped: a question reads as another group's with another answer."
    )
    gold_groups: dict[str, int] = Field(
        default_factory=dict,
        description="Kept groups by what their gold ids say: states, holes, entity, unknown.",
    )
    wordings_dropped: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Per style: wordings left out, per reason."
    )
    wordings: dict[str, WordingTally] = Field(
        default_factory=dict, description="Per style: the wording checks."
    )
    unverified_asked: int = Field(
        0, description="Wordings asked that were never verified (generate --unverified)."
    )
    gold_rows: dict[str, int] | None = Field(
        None, description="generate.gold_rows: documents, rows, cells checked and stated."
    )
    warnings: list[str] = Field(
        default_factory=list, description="What the user should know about the gold ids."
    )


def read_overview(path: Path) -> DatasetOverview | None:
    """The overview in a dataset.stats.json (``table2`` in files written before it was
    named ``overview``); None when the file holds none."""
    import json

    data = json.loads(path.read_text(encoding="utf-8"))
    found = data.get("overview", data.get("table2"))
    return None if found is None else DatasetOverview.model_validate(found)


class TableStats(BaseModel):
    """One table of the database in the dataset, as GRAMMAR v1's Table 4 counts it (rows,
    attributes, templates and queries per table), so that a user sees which tables the
    test set covers and which it does not. A template counts for every table it reads: a
    join counts for both of its tables, so the tables' counts add up to more than the
    dataset's. Every field has a default so that later fields leave older readers intact."""

    table: str = Field(description="The table, as the database spells it.")
    rows: int | None = Field(None, description="Rows in the table when the dataset was made.")
    attributes: int = Field(0, description="Columns of the table.")
    attributes_asked: list[str] = Field(
        default_factory=list,
        description="Its columns that a question of the dataset asks for (the answer) or "
        "names (a placeholder).",
    )
    sql_templates: int = Field(
        0, description="SQL templates that read the table and were asked (not skipped)."
    )
    text_templates: dict[str, int] = Field(
        default_factory=dict, description="Wordings of those templates asked, per style."
    )
    semantic_groups: int = Field(
        0, description="Groups kept from those templates: the paper's SQL queries."
    )
    text_queries: dict[str, int] = Field(
        default_factory=dict, description="Questions of those templates, per style."
    )
    why: str | None = Field(
        None, description="Why no question reads the table; null when some does."
    )

    @property
    def queries(self) -> int:
        """Text queries that read the table, all styles together."""
        return sum(self.text_queries.values())


def _why_no_question(reading: list[TemplateStats]) -> str:
    """Why the templates that read a table gave no question, in one line."""
    parts = []
    skipped = [t for t in reading if t.skipped is not None]
    if skipped:
        parts.append(f"{len(skipped)} of {len(reading)} templates skipped: {skipped[0].skipped}")
    asked = [t for t in reading if t.skipped is None]
    if asked and not any(t.groups for t in asked):
        parts.append("no answer on this data")
    multi = sum(t.multi_answer_groups for t in asked)
    null = sum(t.null_answer_groups for t in asked)
    if multi:
        parts.append(f"{multi} groups with several answers dropped (--allow-multi keeps them)")
    if null:
        parts.append(f"{null} groups with a NULL answer dropped (--include-null asks them)")
    if not parts:  # groups there were, and none is left: the conflicts took them
        parts.append("every group dropped: its questions read as another group's")
    return "no question: " + "; ".join(parts)


def table_stats(
    stats: DatasetStats, schema: SchemaInfo, untemplated: dict[str, str] | None = None
) -> list[TableStats]:
    """Per table of ``schema`` (schema order): its rows and attributes, the templates of
    ``stats`` that read it, their wordings, groups and questions; and for a table no
    question reads, why: no rows, no template (``untemplated``: table -> why no template
    reads it, where known, e.g. the schema enumerator's reason), or what became of its
    templates' groups. Pure: the counts come from ``stats`` and the schema's statistics."""
    untemplated = untemplated or {}
    out = []
    for table in schema.tables:
        name = table.name.lower()
        reading = [t for t in stats.templates if name in (n.lower() for n in t.tables)]
        asked = [t for t in reading if t.skipped is None]
        text_templates: collections.Counter[str] = collections.Counter()
        text_queries: collections.Counter[str] = collections.Counter()
        for t in asked:
            text_templates.update(t.text_templates)
            text_queries.update(t.queries)
        columns = {
            c.split(".", 1)[1].lower()
            for t in asked
            if t.kept_groups and sum(t.queries.values())
            for c in t.columns
            if c.split(".", 1)[0].lower() == name
        }
        why = None
        if not sum(text_queries.values()):
            if reading:
                why = _why_no_question(reading)
            elif not table.row_count:
                why = "no rows"
            else:
                why = untemplated.get(table.name, "no template of templates/sql.yaml reads it")
        out.append(
            TableStats(
                table=table.name,
                rows=table.row_count,
                attributes=len(table.columns),
                attributes_asked=[c.name for c in table.columns if c.name.lower() in columns],
                sql_templates=len(asked),
                text_templates=dict(text_templates),
                semantic_groups=sum(t.kept_groups for t in asked),
                text_queries=dict(text_queries),
                why=why,
            )
        )
    return out


def gold_part(gold_ids: Sequence[str] | None, gold_kind: str | None) -> str:
    """What a group's gold ids say, as ``gold_groups`` counts it: ``unknown`` (none
    known), ``holes`` (no document states the answer, or a fact it is computed from), else
    the kind (``states``, ``computed``, ``entity``)."""
    if gold_kind is None:
        return "unknown"
    return gold_kind if gold_ids or gold_kind == "entity" else "holes"


# What a dataset.stats.json recounted says of itself: by ``generate --refresh``, or by a
# reader after the dataset changed since generate (use_dataset, a hand edit).
RECOUNTED = (
    "the dataset's counts (templates asked, groups, questions, gold ids, per table) were "
    "recounted from the dataset as it is now (after generate --refresh, or a dataset "
    "changed since generate); what generation saw (combinations, multi-answer, NULL and "
    "unanswered groups, wordings, skipped templates) is generate's"
)


def recounted(
    data: dict[str, Any], records: Iterable[QueryRecord], tables_of: Mapping[str, Sequence[str]]
) -> dict[str, Any]:
    """A dataset.stats.json's content (``data``) with the counts that describe the dataset
    as it is now recounted from its ``records`` (``generate --refresh`` changed, removed
    and added groups): the overview's SQL templates asked, groups, questions per style
    and gold groups, and each table's templates, groups and questions (``tables_of``:
    template id -> the tables it reads). What generation saw (combinations, the
    multi-answer, NULL and unanswered groups it met, wordings, skipped templates) is
    kept, and the overview says so (:data:`RECOUNTED`). Pure."""
    groups: dict[str, QueryRecord] = {}
    questions: collections.Counter[tuple[str, str]] = collections.Counter()
    for q in records:
        if q.source != "sql" or q.template_id is None:
            continue
        groups.setdefault(q.group_id, q)
        questions[q.template_id, q.variant] += 1
    per_template: collections.Counter[str] = collections.Counter(
        q.template_id for q in groups.values() if q.template_id is not None
    )
    gold: collections.Counter[str] = collections.Counter()
    for q in groups.values():
        gold[gold_part(q.gold_ids, q.gold_kind)] += 1
    out = dict(data)
    overview = dict(out.get("overview") or {})
    styles: collections.Counter[str] = collections.Counter()
    for (_, style), n in questions.items():
        styles[style] += n
    overview.update(
        sql_templates=len(per_template),
        semantic_groups=len(groups),
        text_queries=dict(styles),
        gold_groups=dict(gold),
        warnings=[*(w for w in overview.get("warnings", []) if w != RECOUNTED), RECOUNTED],
    )
    out["overview"] = overview
    if isinstance(out.get("tables"), list):
        rows = []
        for entry in out["tables"]:
            name = str(entry.get("table", "")).lower()
            reading = [t for t, read in tables_of.items() if name in (n.lower() for n in read)]
            asked = [t for t in reading if per_template[t]]
            by_style: collections.Counter[str] = collections.Counter()
            for (tid, style), n in questions.items():
                if tid in reading:
                    by_style[style] += n
            why = entry.get("why")
            if not sum(by_style.values()) and why is None:
                why = "its questions left the dataset at generate --refresh"
            rows.append(
                {
                    **entry,
                    "sql_templates": len(asked),
                    "semantic_groups": sum(per_template[t] for t in reading),
                    "text_queries": dict(by_style),
                    "why": why,
                }
            )
        out["tables"] = rows
    return out


def read_table_stats(path: Path) -> list[TableStats] | None:
    """The per-table view in a dataset.stats.json; None for a file written before it
    was kept (regenerate the dataset to get it)."""
    import json

    data = json.loads(path.read_text(encoding="utf-8"))
    found = data.get("tables")
    return None if found is None else [TableStats.model_validate(t) for t in found]


def _reference_hash(record: QueryRecord) -> int:
    """A reference as TextConflicts compares it: its values as text, case folded."""
    return hash(tuple(str(v).casefold() for v in record.reference.values))


class TextConflicts:
    """Finds the groups of a streamed dataset whose question text (normalized) is also
    another group's question with a different reference: a reader cannot tell which answer
    is meant, so neither is known. Keeps three 8-byte hashes per query, not the texts."""

    def __init__(self) -> None:
        self._text = array("q")
        self._reference = array("q")
        self._group = array("q")

    def watch(self, records: Iterable[QueryRecord]) -> Iterator[QueryRecord]:
        """Pass ``records`` through, noting each one."""
        for record in records:
            self.note(record)
            yield record

    def note(self, record: QueryRecord) -> None:
        """Note one record (its text, reference and group, as hashes)."""
        self._text.append(hash(near_duplicate_key(record.query)))
        self._reference.append(_reference_hash(record))
        self._group.append(hash(record.group_id))

    def revise(self, position: int, record: QueryRecord) -> None:
        """The record noted at ``position`` (in the order noted) has another reference
        now: ``record``'s."""
        self._reference[position] = _reference_hash(record)

    def forget(self, position: int) -> None:
        """The record noted at ``position`` left the dataset: it conflicts with none."""
        self._text[position] = hash(("left the dataset", position))

    def conflicting_groups(self) -> set[int]:
        """Hashes (``hash(group_id)``) of every group with a conflicting question."""
        if not self._text:
            return set()
        import numpy as np

        text = np.frombuffer(self._text, dtype=np.int64)
        reference = np.frombuffer(self._reference, dtype=np.int64)
        group = np.frombuffer(self._group, dtype=np.int64)
        order = np.lexsort((reference, text))
        text, reference, group = text[order], reference[order], group[order]
        # Runs of one text; a run holding two references is a conflict.
        differs = np.r_[False, (reference[1:] != reference[:-1]) & (text[1:] == text[:-1])]
        run_of = np.cumsum(np.r_[True, text[1:] != text[:-1]]) - 1
        bad_runs = np.unique(run_of[differs])
        if not len(bad_runs):
            return set()
        return {int(g) for g in group[np.isin(run_of, bad_runs)]}


def group_id(template: SqlTemplate, bindings: dict[str, Scalar]) -> str:
    """Stable id of a semantic group: the template's SQL and the bound values."""
    return group_id_of(normalize_sql(template.sql), bindings)


def group_id_of(normalized_sql: str, bindings: dict[str, Scalar]) -> str:
    """:func:`group_id` of a template whose SQL is already normalized
    (:func:`~ragaudit.generate.sql.templates.normalize_sql`), as a caller that ids many
    groups of one template computes it once."""
    return "g-" + stable_id(normalized_sql, sorted(bindings.items()))


class GoldResolver:
    """Applies the gold-id rules, with one query per rule that needs a lookup column.

    A rule naming a column the database lacks is an error, not a rule that never applies
    (which would give every query ``[]``, "no document holds the answer"). A template
    none of whose placeholders a rule names gets no gold ids (None: unknown)."""

    def __init__(self, db: Database, schema: SchemaInfo, rules: list[GoldRule]) -> None:
        self.rules = rules
        self._maps: dict[int, dict[Scalar, list[Scalar]]] = {}
        for i, rule in enumerate(rules):
            where = f"generate.gold_ids[{i}]"
            table_name, _, column_name = rule.placeholder.partition(".")
            table = schema.table(table_name)
            if table is None:
                known = ", ".join(t.name for t in schema.tables)
                raise ConfigError(
                    f"{where}: placeholder {rule.placeholder}: the database has no table "
                    f"{table_name} (tables: {known})"
                )
            for name in (column_name, rule.id_column):
                if name is not None and table.column(name) is None:
                    known = ", ".join(c.name for c in table.columns)
                    raise ConfigError(
                        f"{where}: {table.name} has no column {name} (columns: {known})"
                    )
            if rule.id_column is None:
                continue
            key_column, id_column = table.column(column_name), table.column(rule.id_column)
            if key_column is None or id_column is None:  # both were checked just above
                raise AssertionError(f"{where}: {table.name} lost a column")
            q = db.engine.dialect.identifier_preparer.quote
            key = q(key_column.name)
            ident = q(id_column.name)
            mapping: dict[Scalar, list[Scalar]] = {}
            for k, v in db.stream(f"SELECT DISTINCT {key}, {ident} FROM {q(table.name)}"):
                mapping.setdefault(k, []).append(v)
            self._maps[i] = mapping

    def __call__(self, bindings: dict[str, Scalar]) -> list[str] | None:
        """The documents the rules name for these placeholder values; None when no rule
        names one of the placeholders."""
        lowered = {k.lower(): v for k, v in bindings.items()}
        ids: list[str] | None = None
        for i, rule in enumerate(self.rules):
            if rule.placeholder.lower() not in lowered:
                continue
            ids = ids if ids is not None else []
            value = lowered[rule.placeholder.lower()]
            values = self._maps[i].get(value, []) if i in self._maps else [value]
            for v in values:
                doc = rule.format.format(value=v)
                if doc not in ids:
                    ids.append(doc)
        return ids


class FactGold:
    """Gold ids that mean "states the answer", from a file of the facts each document
    states (``generate.gold_facts``): the documents stating the facts the answer rests
    on (:attr:`~ragaudit.generate.sql.instantiate.Plan.facts`: each foreign key of the
    path from the asked row, then the answer's own cell, each named by its row's key),
    [] when one of them is stated by no document (a hole).

    Facts are taken from the asked row outward, and a fact that a document already
    chosen states is not looked up again: the profile of the asked row that says "the
    artist of X is Y" states both the foreign key and Y's name, so it alone is gold.
    A foreign key of a table whose column the file records for no row at all (a file
    that keeps only the cells a document writes verbatim, not the links) is left out:
    the answer's own cell decides, as it did before links were followed.

    A record may also list the ``rows`` its document is about (``generate.gold_rows``
    writes them): then only those rows were checked, and a question about another row
    has unknown gold ids (None), not []."""

    def __init__(self, path: Path, schema: SchemaInfo) -> None:
        self.path = path
        self._docs: dict[tuple[str, str, str], list[str]] = {}
        # Per document, the facts it states, to tell a fact a chosen document covers.
        self._states: dict[str, set[tuple[str, str, str]]] = {}
        # (table, column) of every fact the file records, for any row.
        self._recorded: set[tuple[str, str]] = set()
        self._covered: set[tuple[str, str]] | None = None
        if not path.is_file():
            raise ConfigError(f"generate.gold_facts: {path}: no such file{looked_in(path)}")
        for number, row in iter_jsonl_dicts(path):
            doc = row.get("id")
            facts = row.get("facts")
            if not isinstance(doc, str) or not isinstance(facts, list):
                raise RecordFileError(f"{path}:{number}: expected {{id, facts: [...]}}")
            if "rows" in row:
                self._cover(path, number, row["rows"], schema)
            for fact in facts:
                try:
                    table, key, column = fact["table"], fact["row_key"], fact["column"]
                except (KeyError, TypeError):
                    raise RecordFileError(
                        f"{path}:{number}: a fact needs table, row_key and column"
                    ) from None
                info = schema.table(str(table))
                if info is None or info.column(str(column)) is None:
                    raise ConfigError(
                        f"generate.gold_facts: {path}:{number}: the database has no column "
                        f"{table}.{column}"
                    )
                cell = (info.name, str(key), str(column).lower())
                docs = self._docs.setdefault(cell, [])
                if doc not in docs:
                    docs.append(doc)
                self._states.setdefault(doc, set()).add(cell)
                self._recorded.add((info.name, cell[2]))

    def _cover(self, path: Path, number: int, rows: Any, schema: SchemaInfo) -> None:
        """Note the rows a document is about (the only rows whose facts were checked)."""
        if not isinstance(rows, list):
            raise RecordFileError(f"{path}:{number}: rows: expected a list of {{table, row_key}}")
        covered = self._covered if self._covered is not None else set()
        for entry in rows:
            if not isinstance(entry, dict) or "table" not in entry or "row_key" not in entry:
                raise RecordFileError(f"{path}:{number}: a row needs table and row_key")
            info = schema.table(str(entry["table"]))
            if info is None:
                raise ConfigError(
                    f"generate.gold_facts: {path}:{number}: the database has no table "
                    f"{entry['table']}"
                )
            covered.add((info.name, str(entry["row_key"])))
        self._covered = covered

    def __call__(
        self,
        facts: Sequence[AnswerFact],
        group: Group,
        stale: Collection[tuple[str, str, str, str]] = (),
        *,
        computed: bool = False,
    ) -> list[str] | None:
        """The documents stating the facts ``group``'s answer rests on; None when that is
        not known (the answer is no stored fact, there is no value to state, or no
        document is about a fact's row when the file says which rows were checked).
        ``stale`` holds (document, table, row key, column lowered) of the facts a
        document states that the database no longer holds (``generate --refresh``):
        such a document states none of them. With ``computed``, ``facts`` are those an
        answer is computed from (:attr:`Plan.computed`): see :meth:`_computed`."""
        if not facts or group.keys is None or not group.answers or group.answers == [None]:
            return None
        if computed:
            return self._computed(facts, group.keys, stale)
        steps = [
            (i, fact)
            for i, fact in enumerate(facts)
            if i == len(facts) - 1 or (fact.table, fact.column.lower()) in self._recorded
        ]
        out: list[str] = []
        for i, fact in steps:
            column = fact.column.lower()
            cells = [(fact.table, str(row[i]), column) for row in group.keys]
            if self._covered is not None and not any(
                (table, key) in self._covered for table, key, _ in cells
            ):
                return None
            if any(
                cell in self._states.get(doc, ()) and (doc, *cell) not in stale
                for doc in out
                for cell in cells
            ):
                continue  # a document already chosen states it
            stated = [
                doc
                for cell in cells
                for doc in self._docs.get(cell, ())
                if (doc, *cell) not in stale
            ]
            if not stated:
                return []  # a fact the answer needs is stated nowhere: a hole
            out.extend(doc for doc in dict.fromkeys(stated) if doc not in out)
        return out

    def _computed(
        self,
        facts: Sequence[AnswerFact],
        keys: Sequence[tuple[Scalar, ...]],
        stale: Collection[tuple[str, str, str, str]],
    ) -> list[str] | None:
        """The documents that state every fact a computed answer is computed from, row by
        row (each of ``keys``, NULL keys: a row the answer skips): a count needs each
        counted row's link to the asked one stated, a sum each summed value too. [] when
        one of them is stated nowhere (the knowledge base cannot give the answer: a
        hole); None when no row is computed over (a count of nothing, which no document
        states) or the file records none of these facts for any row."""
        rows = [row for row in keys if None not in row]
        steps = [
            (i, fact)
            for i, fact in enumerate(facts)
            if (fact.table, fact.column.lower()) in self._recorded
        ]
        if not rows or not steps:
            return None
        out: list[str] = []
        # The cells the documents chosen so far state: a fact one of them states adds none.
        covered: set[tuple[str, str, str]] = set()
        for i, fact in steps:
            column = fact.column.lower()
            cells = list(dict.fromkeys((fact.table, str(row[i]), column) for row in rows))
            if self._covered is not None and not any(
                (table, key) in self._covered for table, key, _ in cells
            ):
                return None
            for cell in cells:
                if cell in covered:
                    continue
                stated = [doc for doc in self._docs.get(cell, ()) if (doc, *cell) not in stale]
                if not stated:
                    return []  # a fact the answer is computed from is stated nowhere: a hole
                for doc in dict.fromkeys(stated):
                    if doc not in out:
                        out.append(doc)
                        covered.update(
                            c for c in self._states.get(doc, ()) if (doc, *c) not in stale
                        )
        return out


def _sample(groups: Iterator[Group], limit: int | None, rng: random.Random) -> Iterable[Group]:
    """All groups (streamed), or a seeded uniform sample of ``limit`` of them (reservoir,
    in their original order)."""
    if limit is None:
        return groups
    reservoir: list[tuple[int, Group]] = []
    for n, group in enumerate(groups):
        if n < limit:
            reservoir.append((n, group))
        else:
            j = rng.randint(0, n)
            if j < limit:
                reservoir[j] = (n, group)
    return [g for _, g in sorted(reservoir, key=lambda item: item[0])]


# Why ``generate`` leaves a group out under its options (:func:`not_asked`): what the group
# has that the options do not keep. ``generate --refresh`` reports a group that came to
# have one of them as leaving the dataset for that reason.
MULTI_ANSWER = "it has several answers (allow_multi is false)"
NULL_ANSWER = "its answer is NULL (include_null is false)"
NO_ANSWER = "it has no answer (include_unanswerable is false)"
LARGE_SET = f"its set answer has more than {MAX_SET_SIZE} rows"


def not_asked(group: Group, options: GenerateOptions, *, set_answer: bool = False) -> str | None:
    """Why ``generate`` does not ask ``group`` under ``options``, or None when it does: a
    multi-answer group only with ``allow_multi``, a NULL answer only with ``include_null``
    (the row exists but its value is not recorded, and most systems cannot say "not
    recorded" in a way anyone can check), a group without answer only with
    ``include_unanswerable``.

    The one statement of the dataset's group rules: ``generate`` keeps the groups it
    passes, and ``generate --refresh`` drops a group whose new answer it does not pass, so
    that a refreshed dataset holds no group that generating it again would leave out.

    >>> options = GenerateOptions()
    >>> not_asked(Group(bindings={}, answers=[None]), options)
    'its answer is NULL (include_null is false)'
    >>> not_asked(Group(bindings={}, answers=[None]), GenerateOptions(include_null=True))

    A template of the ``set`` kind asks for a set: its groups are asked whatever
    ``allow_multi`` says, unless the set is larger than anyone asks for in one question.

    >>> not_asked(Group(bindings={}, answers=list(range(11))), options, set_answer=True)
    'its set answer has more than 10 rows'
    """
    if not group.answers:
        return None if options.include_unanswerable else NO_ANSWER
    if set_answer:
        return LARGE_SET if len(group.answers) > MAX_SET_SIZE else None
    if group.is_multi:
        return None if options.allow_multi else MULTI_ANSWER
    if group.answers == [None]:
        return None if options.include_null else NULL_ANSWER
    return None


def is_asked(group: Group, options: GenerateOptions, *, set_answer: bool = False) -> bool:
    """Whether ``generate`` asks ``group`` under ``options`` (:func:`not_asked` says why
    not)."""
    return not_asked(group, options, set_answer=set_answer) is None


def query_label(reference: Reference) -> str | None:
    """The label ``generate`` gives a grounded query by its reference: ``unanswerable``
    (no answer in the data), ``null`` (the answer cell is NULL) or none."""
    if not reference.values:
        return "unanswerable"
    return "null" if reference.is_null else None


@dataclass(frozen=True)
class Wordings:
    """The wordings one SQL template's groups are asked in, per style, with their text
    template ids: what ``generate`` (and ``generate --refresh`` for a new group) turns a
    group into."""

    template: SqlTemplate
    styles: dict[str, list[str]]
    text_ids: dict[tuple[str, str], str]

    def queries(
        self,
        gid: str,
        bindings: dict[str, Scalar],
        reference: Reference,
        gold_ids: list[str] | None,
        gold_kind: GoldKind | None,
    ) -> Iterator[QueryRecord]:
        """The group's questions, one per wording of every style; each query id is a
        stable hash of the group and the wording, so the same group worded alike gets the
        same ids in every run."""
        label = query_label(reference)
        for style, wordings in self.styles.items():
            for wording in wordings:
                yield QueryRecord(
                    query_id="q-" + stable_id(gid, style, wording),
                    group_id=gid,
                    template_id=self.template.id,
                    text_template_id=self.text_ids[(style, wording)],
                    variant=style,
                    query=fill(wording, bindings),
                    reference=reference,
                    bindings=bindings,
                    gold_ids=gold_ids,
                    gold_kind=gold_kind,
                    label=label,
                    source="sql",
                )


def template_wordings(
    template: SqlTemplate, texts: TextTemplates, options: GenerateOptions
) -> Wordings | None:
    """The wordings of ``template`` that ``generate`` asks (the options' styles, the same
    number per style when ``balanced``); None when there is none. A wording whose
    placeholders do not match the template's is a :class:`TemplateFileError`."""
    styles = texts.get(template.id, {})
    if options.styles is not None:
        styles = {s: styles.get(s, []) for s in options.styles}
    if not any(styles.values()):
        return None
    for style, wordings in styles.items():
        for wording in wordings:
            problem = placeholder_problem(wording, template.placeholder_list)
            if problem:
                raise TemplateFileError(
                    f"text template of {template.id} ({style}): {problem}: {wording!r}"
                )
    if options.balanced:
        n = min(len(w) for w in styles.values())
        if n == 0:  # the same number per style is none: nothing is asked of the template
            return None
        styles = {s: w[:n] for s, w in styles.items()}
    text_ids = {
        (style, wording): f"{template.id}:{style}:{stable_id(wording, length=8)}"
        for style, wordings in styles.items()
        for wording in wordings
    }
    return Wordings(template, styles, text_ids)


NO_WORDING = "no wording to ask (none written, or none verified)"


def why_no_wordings(template: SqlTemplate, texts: TextTemplates, options: GenerateOptions) -> str:
    """Why :func:`template_wordings` gives ``template`` no wording, in one line: none at
    all, or (``balanced``) none in a style, so that the same number per style is none."""
    styles = texts.get(template.id, {})
    if options.styles is not None:
        styles = {s: styles.get(s, []) for s in options.styles}
    empty = sorted(s for s, w in styles.items() if not w)
    if options.balanced and empty and any(styles.values()):
        return (
            f"no wording to ask in style {', '.join(empty)} (none written, or none verified), "
            "and balanced asks the same number of wordings in every style"
        )
    return NO_WORDING


def template_reads(
    template: SqlTemplate, schema: SchemaInfo, dialect: str
) -> tuple[list[str], list[str]]:
    """The tables a template reads and the columns its questions ask for or name
    (``Table.Column``), as the schema spells them; none for a template that does not
    validate (its instantiation says why)."""
    try:
        shape = check_template(template.sql, schema, dialect=dialect)
    except UserError:
        return [], []
    columns = []
    if shape.answer_table and shape.answer_column:
        columns.append(f"{shape.answer_table}.{shape.answer_column}")
    for placeholder in shape.placeholders:
        table = schema.table(placeholder.table)
        column = table.column(placeholder.column) if table else None
        if table is not None and column is not None:
            columns.append(f"{table.name}.{column.name}")
    return list(shape.tables), list(dict.fromkeys(columns))


def generate(
    db: Database,
    schema: SchemaInfo,
    templates: list[SqlTemplate],
    texts: TextTemplates,
    options: GenerateOptions,
    *,
    stats: DatasetStats | None = None,
    on_template: Callable[[SqlTemplate, TemplateStats], None] | None = None,
) -> Iterator[QueryRecord]:
    """Yield the dataset's QueryRecords, template by template; fill ``stats`` on the way."""
    stats = stats if stats is not None else DatasetStats()
    gold = GoldResolver(db, schema, options.gold_ids)
    facts = FactGold(options.gold_facts, schema) if options.gold_facts else None
    dialect = {"postgresql": "postgres"}.get(db.dialect, db.dialect)
    used: set[str] = set()
    for template in templates:
        used.update(p.key.lower() for p in template.placeholder_list)
        tstats = TemplateStats(template_id=template.id)
        tstats.tables, tstats.columns = template_reads(template, schema, dialect)
        stats.templates.append(tstats)
        wordings = template_wordings(template, texts, options)
        if wordings is None:
            tstats.skipped = why_no_wordings(template, texts, options)
            if on_template:
                on_template(template, tstats)
            continue
        styles = wordings.styles
        tstats.text_templates = {s: len(w) for s, w in styles.items()}
        tstats.queries = {s: 0 for s in styles}
        plan_ = plan_template(template.sql, schema, dialect=dialect)
        set_answer = template.kind == "set"
        tstats.combinations = count_combinations(db, plan_)
        rng = random.Random(f"{options.seed}:{template.id}")
        answered: set[tuple[Scalar, ...]] = set()

        def counted(
            groups: Iterator[Group],
            tstats: TemplateStats = tstats,
            answered: set[tuple[Scalar, ...]] = answered,
            set_answer: bool = set_answer,
        ) -> Iterator[Group]:
            for group in groups:
                tstats.groups += 1
                if options.include_unanswerable:
                    answered.add(tuple(group.bindings.values()))
                if group.is_multi and not set_answer:  # a set's groups are its questions
                    tstats.multi_answer_groups += 1
                elif group.answers == [None]:
                    tstats.null_answer_groups += 1
                if is_asked(group, options, set_answer=set_answer):
                    yield group

        kept: Iterable[Group] = _sample(
            counted(iter_groups(db, plan_, keyed=facts is not None)),
            options.max_groups_per_template,
            rng,
        )
        if options.include_unanswerable:

            def unanswered(
                tstats: TemplateStats = tstats,
                plan_: Plan = plan_,
                answered: set[tuple[Scalar, ...]] = answered,
                rng: random.Random = rng,
            ) -> Iterator[Group]:
                # Runs after every answered group was seen, so `answered` is complete.
                blanks = (
                    Group(bindings=b, answers=[]) for b in iter_unanswered(db, plan_, answered)
                )
                for group in _sample(blanks, options.max_groups_per_template, rng):
                    tstats.unanswerable += 1
                    yield group

            kept = itertools.chain(kept, unanswered())
        for group in kept:
            tstats.kept_groups += 1
            gold_ids, gold_kind = group_gold(group, plan_, facts, gold)
            part = gold_part(gold_ids, gold_kind)
            tstats.gold[part] = tstats.gold.get(part, 0) + 1
            reference = Reference.from_values(group.answers)
            for record in wordings.queries(
                group_id(template, group.bindings), group.bindings, reference, gold_ids, gold_kind
            ):
                tstats.queries[record.variant] += 1
                yield record
        if on_template:
            on_template(template, tstats)
    for i, rule in enumerate(options.gold_ids):
        if rule.placeholder.lower() not in used:
            stats.warnings.append(
                f"generate.gold_ids[{i}]: no template of this dataset has the placeholder "
                f"{rule.placeholder}, so the rule gave no gold ids"
            )


def group_gold(
    group: Group,
    plan_: Plan,
    facts: FactGold | None,
    rules: GoldResolver,
    stale: Collection[tuple[str, str, str, str]] = (),
) -> tuple[list[str] | None, GoldKind | None]:
    """A group's gold ids and what they mean: the documents that state its answer where
    the facts are known (none stating it by a fact in ``stale``, see :class:`FactGold`),
    else the documents the gold-id rules name for its entity."""
    if facts is not None:
        stated = facts(plan_.facts, group, stale, computed=plan_.computed)
        if stated is not None:
            return stated, ("computed" if plan_.computed else "states")
    ids = rules(group.bindings)
    return ids, ("entity" if ids is not None else None)
