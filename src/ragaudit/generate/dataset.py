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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragaudit.config import GenerateOptions, GoldRule
from ragaudit.db.engine import Database
from ragaudit.db.schema import SchemaInfo
from ragaudit.errors import ConfigError
from ragaudit.generate.instantiate import (
    AnswerFact,
    Group,
    Plan,
    count_combinations,
    iter_groups,
    iter_unanswered,
)
from ragaudit.generate.instantiate import plan as plan_template
from ragaudit.generate.sql_templates import SqlTemplate, TemplateFileError, normalize_sql
from ragaudit.generate.text_templates import (
    TextTemplates,
    fill,
    near_duplicate_key,
    placeholder_problem,
)
from ragaudit.records.io import RecordFileError, iter_jsonl_dicts
from ragaudit.records.models import GoldKind, QueryRecord, Reference, Scalar, stable_id


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
    # "holes" (no document states it: gold ids []), "entity" (a gold-id rule), "unknown".
    gold: dict[str, int] = field(default_factory=dict)


@dataclass
class DatasetStats:
    """Totals over all templates, the groups dropped because one of their questions reads
    the same as another group's with another answer, and the wordings left out (per style
    and reason: rejected by verification, or never verified)."""

    templates: list[TemplateStats] = field(default_factory=list)
    conflicting_groups: int = 0
    wordings_dropped: dict[str, dict[str, int]] = field(default_factory=dict)
    # per style: proposed, verified, rejected, unchecked, rate, reasons, examples
    wordings: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def queries(self) -> int:
        """Text queries in the dataset."""
        return sum(sum(t.queries.values()) for t in self.templates if t.skipped is None)

    def table2(self) -> dict[str, Any]:
        """The paper's Table 2 layout: SQL templates, groups, text templates and text
        queries per style."""
        styles = sorted({s for t in self.templates for s in t.queries})
        used = [t for t in self.templates if t.skipped is None]
        return {
            "sql_templates": len(used),
            "combinations": sum(t.combinations for t in used),
            "semantic_groups": sum(t.kept_groups for t in used),
            "multi_answer_groups": sum(t.multi_answer_groups for t in used),
            "null_answer_groups": sum(t.null_answer_groups for t in used),
            "unanswerable_queries_groups": sum(t.unanswerable for t in used),
            "text_templates": {s: sum(t.text_templates.get(s, 0) for t in used) for s in styles},
            "text_queries": {s: sum(t.queries.get(s, 0) for t in used) for s in styles},
            "skipped_templates": {t.template_id: t.skipped for t in self.templates if t.skipped},
            "conflicting_groups": self.conflicting_groups,
            "gold_groups": dict(
                sum((collections.Counter(t.gold) for t in used), collections.Counter())
            ),
            "wordings_dropped": self.wordings_dropped,
            "wordings": self.wordings,
        }


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
            self._text.append(hash(near_duplicate_key(record.query)))
            self._reference.append(hash(tuple(str(v).casefold() for v in record.reference.values)))
            self._group.append(hash(record.group_id))
            yield record

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
    return "g-" + stable_id(normalize_sql(template.sql), sorted(bindings.items()))


class GoldResolver:
    """Applies the gold-id rules, with one query per rule that needs a lookup column."""

    def __init__(self, db: Database, schema: SchemaInfo, rules: list[GoldRule]) -> None:
        self.rules = rules
        self._maps: dict[int, dict[Scalar, list[Scalar]]] = {}
        for i, rule in enumerate(rules):
            if rule.id_column is None:
                continue
            table_name, _, column_name = rule.placeholder.partition(".")
            table = schema.table(table_name)
            if (
                table is None
                or table.column(column_name) is None
                or table.column(rule.id_column) is None
            ):
                raise ConfigError(
                    f"generate.gold_ids: {rule.placeholder} / {rule.id_column}: unknown column"
                )
            q = db.engine.dialect.identifier_preparer.quote
            key = q(table.column(column_name).name)  # type: ignore[union-attr]
            ident = q(table.column(rule.id_column).name)  # type: ignore[union-attr]
            mapping: dict[Scalar, list[Scalar]] = {}
            for k, v in db.stream(f"SELECT DISTINCT {key}, {ident} FROM {q(table.name)}"):
                mapping.setdefault(k, []).append(v)
            self._maps[i] = mapping

    def __call__(self, bindings: dict[str, Scalar]) -> list[str] | None:
        if not self.rules:
            return None
        lowered = {k.lower(): v for k, v in bindings.items()}
        ids: list[str] = []
        for i, rule in enumerate(self.rules):
            if rule.placeholder.lower() not in lowered:
                continue
            value = lowered[rule.placeholder.lower()]
            values = self._maps[i].get(value, []) if i in self._maps else [value]
            for v in values:
                doc = rule.format.format(value=v)
                if doc not in ids:
                    ids.append(doc)
        return ids


class FactGold:
    """Gold ids that mean "states the answer", from a file of the facts each document
    states (``generate.gold_facts``): the documents stating the answer's fact (the answer
    column of the answer's row, named by its primary key), [] when none does."""

    def __init__(self, path: Path, schema: SchemaInfo) -> None:
        self.path = path
        self._docs: dict[tuple[str, str, str], list[str]] = {}
        if not path.is_file():
            raise ConfigError(f"generate.gold_facts: {path}: no such file")
        for number, row in iter_jsonl_dicts(path):
            doc = row.get("id")
            facts = row.get("facts")
            if not isinstance(doc, str) or not isinstance(facts, list):
                raise RecordFileError(f"{path}:{number}: expected {{id, facts: [...]}}")
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
                docs = self._docs.setdefault((info.name, str(key), str(column).lower()), [])
                if doc not in docs:
                    docs.append(doc)

    def __call__(self, fact: AnswerFact | None, group: Group) -> list[str] | None:
        """The documents stating ``group``'s answer; None when that is not known (the
        answer is no single stored fact, or there is no value to state)."""
        if fact is None or group.keys is None or not group.answers or group.answers == [None]:
            return None
        column = fact.column.lower()
        out: list[str] = []
        for key in group.keys:
            for doc in self._docs.get((fact.table, str(key), column), ()):
                if doc not in out:
                    out.append(doc)
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
    for template in templates:
        tstats = TemplateStats(template_id=template.id)
        stats.templates.append(tstats)
        styles = texts.get(template.id, {})
        if options.styles is not None:
            styles = {s: styles.get(s, []) for s in options.styles}
        if not any(styles.values()):
            tstats.skipped = "no wording to ask (none written, or none verified)"
            if on_template:
                on_template(template, tstats)
            continue
        for style, wordings in styles.items():
            for wording in wordings:
                problem = placeholder_problem(wording, template.placeholder_list)
                if problem:
                    raise TemplateFileError(
                        f"text template of {template.id} ({style}): {problem}: {wording!r}"
                    )
        if options.balanced:
            n = min(len(w) for w in styles.values())
            styles = {s: w[:n] for s, w in styles.items()}
        tstats.text_templates = {s: len(w) for s, w in styles.items()}
        tstats.queries = {s: 0 for s in styles}
        plan_ = plan_template(template.sql, schema, dialect=dialect)
        tstats.combinations = count_combinations(db, plan_)
        rng = random.Random(f"{options.seed}:{template.id}")
        answered: set[tuple[Scalar, ...]] = set()

        def counted(
            groups: Iterator[Group],
            tstats: TemplateStats = tstats,
            answered: set[tuple[Scalar, ...]] = answered,
        ) -> Iterator[Group]:
            for group in groups:
                tstats.groups += 1
                if options.include_unanswerable:
                    answered.add(tuple(group.bindings.values()))
                if group.is_multi:
                    tstats.multi_answer_groups += 1
                    if not options.allow_multi:
                        continue
                elif group.answers == [None]:
                    # The row exists but its value is not recorded: by default not asked,
                    # since most systems cannot say "not recorded" in a way anyone can check.
                    tstats.null_answer_groups += 1
                    if not options.include_null:
                        continue
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
        text_ids = {
            (style, wording): f"{template.id}:{style}:{stable_id(wording, length=8)}"
            for style, wordings in styles.items()
            for wording in wordings
        }
        for group in kept:
            tstats.kept_groups += 1
            gid = group_id(template, group.bindings)
            reference = Reference.from_values(group.answers)
            gold_ids, gold_kind = _gold(group, plan_, facts, gold)
            part = (
                "unknown"
                if gold_kind is None
                else gold_kind
                if gold_ids or gold_kind == "entity"
                else "holes"
            )
            tstats.gold[part] = tstats.gold.get(part, 0) + 1
            for style, wordings in styles.items():
                for wording in wordings:
                    text_id = text_ids[(style, wording)]
                    yield QueryRecord(
                        query_id="q-" + stable_id(gid, style, wording),
                        group_id=gid,
                        template_id=template.id,
                        text_template_id=text_id,
                        variant=style,
                        query=fill(wording, group.bindings),
                        reference=reference,
                        bindings=group.bindings,
                        gold_ids=gold_ids,
                        gold_kind=gold_kind,
                        label=(
                            "unanswerable"
                            if not group.answers
                            else "null"
                            if reference.is_null
                            else None
                        ),
                        source="sql",
                    )
                    tstats.queries[style] += 1
        if on_template:
            on_template(template, tstats)


def _gold(
    group: Group, plan_: Plan, facts: FactGold | None, rules: GoldResolver
) -> tuple[list[str] | None, GoldKind | None]:
    """A group's gold ids and what they mean: the documents that state its answer where
    the facts are known, else the documents the gold-id rules name for its entity."""
    if facts is not None:
        stated = facts(plan_.fact, group)
        if stated is not None:
            return stated, "states"
    ids = rules(group.bindings)
    return ids, ("entity" if ids is not None else None)
