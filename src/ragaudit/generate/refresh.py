"""A dataset's references executed again on the database as it is now
(``generate --refresh``).

Every grounded question names its SQL template and its bindings, so its reference can be
derived again when the data changes. The refresh is set-based, as generation is: one
statement per template returns every group with its answers, and each is compared with
the group the dataset holds (by group id, from the template's SQL and the bindings):

* **unchanged**: the same answers; its questions, their ids and every record of them stay;
* **changed**: other answers; its questions get the new reference and new ids, so that no
  verdict given against the old reference is ever kept;
* **vanished**: the group is not returned and a value it names is no longer in its
  placeholder's column; or its new answer is one the dataset's own rules leave out (a NULL
  answer without ``include_null``, several without ``allow_multi``, none without
  ``include_unanswerable``: :func:`~ragaudit.generate.dataset.not_asked`, the rule
  ``generate`` applies), or one of its questions now reads as another group's with another
  answer (generate drops both groups): its questions leave the dataset, and the report
  counts why (``vanished_why``);
* **new**: groups the dataset does not hold, added only when asked, worded as
  ``generate`` words them.

Three passes, each streamed: the dataset read for what each group answered (a hash of the
group id and of its answers, and three hashes per question for the conflict check, so
that a million questions cost tens of megabytes), the database, and the dataset written
again (once more, without them, where groups conflict: rare). Records the refresh cannot
re-derive (generated from documents, imported, or of a template no longer in
``templates/sql.yaml`` or whose SQL was edited since) are left as they are and counted
with why.

:func:`stale_documents` says which documents of the corpus state a fact the database no
longer holds (``generate.gold_facts``; a generated world writes one): their text is stale.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ragaudit.db.engine import Database
from ragaudit.db.schema import SchemaInfo
from ragaudit.errors import ConfigError, looked_in
from ragaudit.frames import frame
from ragaudit.generate.dataset import (
    FactGold,
    GoldResolver,
    TextConflicts,
    Wordings,
    group_gold,
    group_id_of,
    is_asked,
    not_asked,
    query_label,
    template_wordings,
)
from ragaudit.generate.facts import states
from ragaudit.generate.options import GenerateOptions
from ragaudit.generate.sql.instantiate import (
    Group,
    Plan,
    iter_groups,
    iter_unanswered,
    placeholder_domains,
)
from ragaudit.generate.sql.instantiate import plan as plan_template
from ragaudit.generate.sql.templates import SqlTemplate, normalize_sql
from ragaudit.generate.text.templates import TextTemplates
from ragaudit.records.io import RecordFileError, iter_jsonl_dicts
from ragaudit.records.models import (
    QueryRecord,
    Reference,
    RefreshedGroup,
    RefreshStatus,
    Scalar,
    StaleDocument,
    StaleFact,
    stable_id,
)

if TYPE_CHECKING:
    import pandas as pd

# Why records were left as they are, as the result counts them.
NO_SQL = {
    "document": "generated from documents: no SQL to execute again",
    "imported": "imported: no SQL to execute again",
}
TEMPLATE_GONE = "its template is no longer in templates/sql.yaml"
TEMPLATE_EDITED = "its template's SQL was edited since the dataset was generated"

# Why a group left the dataset, as the result counts them (``vanished_why``): a value it
# names is gone, or it became a group ``generate`` leaves out: an answer the dataset's
# rules do not keep (the reasons of :func:`~ragaudit.generate.dataset.not_asked`), or a
# question that now reads as another group's with another answer.
VALUE_GONE = "a value it names is gone"
CONFLICTING = "a question of it reads as another group's with another answer"


# What the key of a line of the dataset says when it names no group (observe, rewrite).
AS_IS = 0  # a question left as it is
BLANK = 1  # a blank line


def _key_of(group_id: str) -> int:
    """A group's key: a hash of its id that is never :data:`AS_IS` or :data:`BLANK`."""
    return _key_of_hash(hash(group_id))


def _key_of_hash(h: int) -> int:
    """:func:`_key_of` from ``hash(group_id)`` (as :class:`TextConflicts` names groups)."""
    return h if h > BLANK or h < AS_IS else h + 2


def _values_key(values: list[Scalar]) -> int:
    """A hash of a reference's values, their types included (12, 12.0 and True differ)."""
    return hash(tuple((v.__class__, v) for v in values))


def revised_query_id(query: QueryRecord, reference: Reference) -> str:
    """The id of a question whose group's answer changed: a stable hash of the group, the
    wording and the new reference, so that no record of the old question (its response,
    its verdict) is taken for one of the new, and two runs refreshed against the same
    data give the same ids.

    >>> q = QueryRecord(query_id="q-1", group_id="g-1", variant="short", query="Staff?",
    ...                 reference=Reference.from_values([12]))
    >>> revised_query_id(q, Reference.from_values([13])) != revised_query_id(
    ...     q, Reference.from_values([14]))
    True
    """
    wording = query.text_template_id or query.query
    return "q-" + stable_id(query.group_id, query.variant, wording, reference.values)


@dataclass
class _Template:
    """A template of the dataset the refresh executes again."""

    template: SqlTemplate
    plan: Plan
    normalized: str
    wordings: Wordings | None
    domains: list[set[Scalar]] | None = None  # loaded when a group of it is missing
    set_answer: bool = False  # a template of the set kind: its groups are sets


@dataclass
class _Moved:
    """What the refresh noted of one group that moved, while its questions stream by."""

    status: RefreshStatus
    group_id: str
    template_id: str
    bindings: dict[str, Scalar]
    old: Reference | None
    new: Reference | None
    old_query_ids: list[str] = field(default_factory=list)
    new_query_ids: list[str] = field(default_factory=list)
    stale_documents: list[str] = field(default_factory=list)

    def record(self) -> RefreshedGroup:
        """As a line of refresh.jsonl."""
        return RefreshedGroup(
            status=self.status,
            group_id=self.group_id,
            template_id=self.template_id,
            bindings=self.bindings,
            old=self.old,
            new=self.new,
            old_query_ids=self.old_query_ids,
            new_query_ids=self.new_query_ids,
            stale_documents=self.stale_documents,
        )


class RefreshCount(BaseModel):
    """Semantic groups and their questions in one class."""

    groups: int = Field(0, description="Semantic groups.")
    queries: int = Field(0, description="Their questions (one per wording).")


class RefreshReport(BaseModel):
    """What a refresh found and did (refresh.stats.json, and what ``Project.refresh``
    returns): each class counted, the questions left as they are with why, the records
    retired, and every group that moved (``moved``, as refresh.jsonl lists them) with the
    documents that state facts no longer true (``stale``)."""

    unchanged: RefreshCount = Field(description="Same answers: questions, ids, records kept.")
    changed: RefreshCount = Field(
        description="Other answers: new reference, new question ids; old records retired."
    )
    vanished: RefreshCount = Field(
        description="A value the group names is gone, or generate would leave it out now "
        "(vanished_why): its questions left the dataset."
    )
    vanished_why: dict[str, int] = Field(
        default_factory=dict,
        description="Vanished groups, per reason: a value it names is gone; an answer the "
        "dataset's options leave out (a NULL answer without include_null, several without "
        "allow_multi, none without include_unanswerable); a question that reads as another "
        "group's with another answer.",
    )
    new: RefreshCount = Field(description="Groups the dataset lacked, added (with --new).")
    new_not_added: int = Field(
        0, description="Groups the dataset lacks that --new would add (counted, not added)."
    )
    new_asked: bool = Field(False, description="Whether new groups were asked for (--new).")
    dropped_new: int = Field(
        0, description="New groups left out: a question reads as another group's."
    )
    left_as_is: dict[str, int] = Field(
        default_factory=dict, description="Questions not refreshed, per reason."
    )
    retired: dict[str, int] = Field(
        default_factory=dict,
        description="Records of questions that left (responses, judgements, scores) moved "
        "to retired/, per kind.",
    )
    stale_documents: int = Field(0, description="Documents stating a fact no longer true.")
    notes: list[str] = Field(default_factory=list, description="What the user should know.")
    moved: list[RefreshedGroup] = Field(
        default_factory=list, exclude=True, description="Every group that moved."
    )
    stale: list[StaleDocument] = Field(
        default_factory=list, exclude=True, description="The stale documents."
    )

    @property
    def asks(self) -> int:
        """Questions ``run`` asks next: the changed and the new."""
        return self.changed.queries + self.new.queries

    def to_pandas(self) -> pd.DataFrame:
        """One row per group that moved: status, template, bindings, the old and new
        answers (display strings), and how many questions it has now."""

        rows = [
            {
                "status": m.status,
                "template_id": m.template_id,
                "group_id": m.group_id,
                "bindings": m.bindings,
                "old": m.old.display if m.old is not None else None,
                "new": m.new.display if m.new is not None else None,
                "queries": len(m.new_query_ids) or len(m.old_query_ids),
                "stale_documents": m.stale_documents,
            }
            for m in self.moved
        ]
        columns = [
            "status",
            "template_id",
            "group_id",
            "bindings",
            "old",
            "new",
            "queries",
            "stale_documents",
        ]
        return frame(rows, columns)


@dataclass
class RefreshTally:
    """What the refresh found, per class; the questions left as they are, by why; the
    groups found new but not added (without ``new``); and what the user should know."""

    unchanged: RefreshCount = field(default_factory=RefreshCount)
    changed: RefreshCount = field(default_factory=RefreshCount)
    vanished: RefreshCount = field(default_factory=RefreshCount)
    new: RefreshCount = field(default_factory=RefreshCount)
    new_not_added: int = 0
    dropped_new: int = 0
    vanished_why: dict[str, int] = field(default_factory=dict)
    left_as_is: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def vanish(self, why: str) -> None:
        """Count one group that left the dataset, and why."""
        self.vanished.groups += 1
        self.vanished_why[why] = self.vanished_why.get(why, 0) + 1


StaleCells = set[tuple[str, str, str, str]]  # (document, table, row key, column lowered)


class Refresher:
    """One refresh of a dataset against ``db``: :meth:`observe` every question of the
    dataset, :meth:`execute` the templates, then :meth:`rewrite` the dataset (the
    questions in their order, changed ones revised, vanished ones left out, new groups
    last), and take out the groups that now conflict (:meth:`conflicting`,
    :meth:`without_conflicting`). :attr:`moved` then lists every group that moved,
    :attr:`retired` the ids of the questions that left, and :attr:`tally` the counts.

    A group is kept only as ``generate`` would keep it now: its new answer must pass the
    dataset's own rules (:func:`~ragaudit.generate.dataset.not_asked`, the function
    ``generate`` applies, under the options the dataset was generated with), and no
    question of it may read as another group's with another answer."""

    def __init__(
        self,
        db: Database,
        schema: SchemaInfo,
        templates: list[SqlTemplate],
        texts: TextTemplates,
        options: GenerateOptions,
        *,
        new: bool = False,
        stale: StaleCells | None = None,
    ) -> None:
        self.db = db
        self.schema = schema
        self.options = options
        self.new = new
        self.stale = stale or set()
        self._stale_documents = {cell[0] for cell in self.stale}
        self.gold = GoldResolver(db, schema, options.gold_ids)
        self.facts = FactGold(options.gold_facts, schema) if options.gold_facts else None
        self._dialect = {"postgresql": "postgres"}.get(db.dialect, db.dialect)
        self._sql = {t.id: t for t in templates}
        self._texts = texts
        self._templates: dict[str, _Template] = {}
        self._stored: dict[int, int] = {}  # group key -> hash of its answers
        self._as_is: dict[str, str] = {}  # template id -> why its questions are left as is
        self._keys = array("q")  # per line of the dataset: its group's key, AS_IS or BLANK
        self._last = AS_IS  # the group of the last question observed
        # Groups are checked as generate checks its groups (a question that reads as another
        # group's with another answer): every grounded question is noted, since a changed
        # answer can make an unchanged group's question ambiguous as well as a new one.
        self.conflicts = TextConflicts()
        self._changed: dict[int, Group] = {}
        # group key -> why it leaves the dataset, and its reference now (None: a value it
        # names is gone, so it has none)
        self._leaving: dict[int, tuple[str, Reference | None]] = {}
        self._new: list[tuple[_Template, str, Group]] = []
        self._new_at: list[tuple[int, int]] = []  # a new question's place among those noted
        self._gold_cache: dict[int, tuple[list[str] | None, Any]] = {}
        self._moved: dict[int, _Moved] = {}
        self.retired: set[str] = set()
        self.tally = RefreshTally()

    # -- pass 1: the dataset -------------------------------------------------------------

    def observe(self, number: int, query: QueryRecord) -> None:
        """Note what the question on line ``number`` of the dataset asks (every question,
        in the file's order): its group and what the group answered, or why it is left as
        it is. One hash per line is kept, so that the dataset can be written again from
        its lines without reading them as records (:meth:`rewrite`)."""
        keys = self._keys
        while len(keys) < number - 1:
            keys.append(BLANK)
        why = self._left_as_is(query)
        if why is not None:
            self.tally.left_as_is[why] = self.tally.left_as_is.get(why, 0) + 1
            keys.append(AS_IS)
            return
        h = _key_of(query.group_id)
        keys.append(h)
        self.conflicts.note(query)
        if h != self._last:
            self._last = h
            self._stored[h] = _values_key(query.reference.values)

    def _left_as_is(self, query: QueryRecord) -> str | None:
        """Why ``query`` cannot be refreshed, or None: no SQL (from documents, imported),
        its template gone from templates/sql.yaml or its SQL edited since (its first group
        is checked: an edited SQL makes every group of the template another group)."""
        if query.source != "sql":
            return NO_SQL.get(query.source, query.source)
        tid = query.template_id or ""
        known = self._templates.get(tid)
        if known is not None:
            return None
        if tid in self._as_is:
            return self._as_is[tid]
        template = self._sql.get(tid)
        if template is None:
            self._as_is[tid] = TEMPLATE_GONE
            return TEMPLATE_GONE
        prepared = self._prepare(template)
        if group_id_of(prepared.normalized, query.bindings) != query.group_id:
            self._as_is[tid] = TEMPLATE_EDITED
            return TEMPLATE_EDITED
        self._templates[tid] = prepared
        return None

    def _prepare(self, template: SqlTemplate) -> _Template:
        return _Template(
            template=template,
            plan=plan_template(template.sql, self.schema, dialect=self._dialect),
            normalized=normalize_sql(template.sql),
            wordings=template_wordings(template, self._texts, self.options) if self.new else None,
            set_answer=template.kind == "set",
        )

    # -- pass 2: the database ------------------------------------------------------------

    def execute(self, on_template: Callable[[str], None] | None = None) -> None:
        """Execute every template of the dataset once (set-based), noting the groups whose
        answers changed and, with ``new``, the groups the dataset does not hold."""
        sampled = self.options.max_groups_per_template is not None
        if self.new and sampled:
            self.tally.notes.append(
                "new groups were not looked for: the dataset is a sample "
                f"(max_groups_per_template {self.options.max_groups_per_template}), so a "
                "group it lacks may be one the sample left out"
            )
        look_for_new = not sampled
        keyed = self.facts is not None
        for known in self._templates.values():
            answered: set[tuple[Scalar, ...]] = set()
            unanswerable = look_for_new and self.options.include_unanswerable
            for group in iter_groups(self.db, known.plan, keyed=keyed):
                gid = group_id_of(known.normalized, group.bindings)
                h = _key_of(gid)
                if unanswerable:
                    answered.add(tuple(group.bindings.values()))
                stored = self._stored.pop(h, None)
                if stored is None:
                    if look_for_new and is_asked(group, self.options, set_answer=known.set_answer):
                        self._found_new(known, gid, group)
                    continue
                if stored != _values_key(group.answers):
                    self._moves(h, group, known.set_answer)
            if unanswerable:
                for bindings in iter_unanswered(self.db, known.plan, answered):
                    gid = group_id_of(known.normalized, bindings)
                    if _key_of(gid) not in self._stored:  # a group the dataset lacks
                        self._found_new(known, gid, Group(bindings=bindings, answers=[]))
            if on_template is not None:
                on_template(known.template.id)
        if TEMPLATE_EDITED in self._as_is.values():
            self.tally.notes.append(
                "a template's SQL was edited since the dataset was generated, so its groups "
                "are other groups: they are left as they are (ragaudit generate makes the "
                "dataset again)"
            )

    def _moves(self, h: int, group: Group, set_answer: bool = False) -> None:
        """A group of the dataset whose answers are other now: changed, or leaving where
        ``generate`` would not ask it with these answers (the same rule, not a copy)."""
        why = not_asked(group, self.options, set_answer=set_answer)
        if why is None:
            self._changed[h] = group
        else:
            self._leaving[h] = (why, Reference.from_values(group.answers))

    def _found_new(self, known: _Template, gid: str, group: Group) -> None:
        """A group the dataset lacks: added with ``new`` where its template has a wording
        to ask it in (none left verified: counted, not added), else counted."""
        if self.new and known.wordings is not None:
            self._new.append((known, gid, group))
        else:
            self.tally.new_not_added += 1

    # -- pass 3: the dataset written again -----------------------------------------------

    def rewrite(self, lines: Iterable[str]) -> Iterator[str]:
        """The dataset after the refresh, line by line from its lines as :meth:`observe`
        saw them: unchanged questions and those left as they are as they were (not read
        again), changed ones revised (new reference, new id), vanished ones left out, then
        the new groups' questions. Blank lines are dropped. Groups that conflict now are
        still in it: :meth:`without_conflicting` takes them out."""
        tally = self.tally
        keys = self._keys
        noted = -1  # the position of the question among those noted for conflicts
        last_unchanged = AS_IS
        for number, line in enumerate(lines, start=1):
            if number > len(keys):  # a torn last line the reader skipped, or blanks
                break
            h = keys[number - 1]
            if h == BLANK:
                continue
            if h == AS_IS:
                yield line
                continue
            noted += 1
            query: QueryRecord | None = None
            if h in self._stored:  # not returned: vanished, or no answer now
                query = QueryRecord.model_validate_json(line)
                self._resolve_missing(h, query)
            leaving = self._leaving.get(h)
            if leaving is not None:
                self._leave(h, query or QueryRecord.model_validate_json(line), *leaving)
                self.conflicts.forget(noted)
                continue
            group = self._changed.get(h)
            if group is not None:
                revised = self._revise(h, query or QueryRecord.model_validate_json(line), group)
                self.conflicts.revise(noted, revised)
                yield revised.model_dump_json(exclude_unset=True)
                continue
            tally.unchanged.queries += 1
            if h != last_unchanged:
                tally.unchanged.groups += 1
                last_unchanged = h
            yield line
        for new_query in self._new_queries():
            noted += 1
            self._new_at.append((noted, _key_of(new_query.group_id)))
            self.conflicts.note(new_query)
            yield new_query.model_dump_json(exclude_unset=True)

    def _resolve_missing(self, h: int, query: QueryRecord) -> None:
        """A group the database no longer returns: vanished when a value it names is gone
        from its placeholder's column, else it has no answer now (which is a change unless
        it had none before, kept only where the dataset asks groups without answer)."""
        stored = self._stored.pop(h)
        known = self._templates[query.template_id or ""]
        if known.domains is None:
            known.domains = [set(d) for d in placeholder_domains(self.db, known.plan)]
        names = [ph.key for ph in known.plan.placeholders]
        lowered = {k.lower(): v for k, v in query.bindings.items()}
        gone = any(
            lowered.get(name.lower()) not in domain
            for name, domain in zip(names, known.domains, strict=True)
        )
        if gone:
            self._leaving[h] = (VALUE_GONE, None)
            return
        if stored != _values_key([]):
            self._moves(h, Group(bindings=dict(query.bindings), answers=[]))

    def _leave(self, h: int, query: QueryRecord, why: str, now: Reference | None) -> None:
        """``query`` leaves the dataset with its group (``why``; ``now``: the group's
        reference now, None when a value it names is gone): noted in the group's line of
        refresh.jsonl, its records retired."""
        moved = self._moved.get(h)
        if moved is None:
            moved = self._moved[h] = _Moved(
                "vanished",
                query.group_id,
                self._templates[query.template_id or ""].template.id,
                dict(query.bindings),
                old=query.reference,
                new=now,
                stale_documents=self._stale_of(query.gold_ids),
            )
            self.tally.vanish(why)
        moved.old_query_ids.append(query.query_id)
        self.retired.add(query.query_id)
        self.tally.vanished.queries += 1

    def _revise(self, h: int, query: QueryRecord, group: Group) -> QueryRecord:
        """``query`` with its group's new reference, gold ids and label, under a new id."""
        moved = self._moved.get(h)
        known = self._templates[query.template_id or ""]
        if moved is None:
            reference = Reference.from_values(group.answers)
            moved = self._moved[h] = _Moved(
                "changed",
                query.group_id,
                known.template.id,
                dict(query.bindings),
                old=query.reference,
                new=reference,
                stale_documents=self._stale_of(query.gold_ids),
            )
            self.tally.changed.groups += 1
            self._gold_cache[h] = self._gold_of(known, group)
        assert moved.new is not None
        gold_ids, gold_kind = self._gold_cache[h]
        new_id = revised_query_id(query, moved.new)
        moved.old_query_ids.append(query.query_id)
        moved.new_query_ids.append(new_id)
        self.retired.add(query.query_id)
        self.tally.changed.queries += 1
        # A label ragaudit gave by the reference follows it; one a labeller gave stays.
        label = query.label
        if label in (None, "null", "unanswerable"):
            label = query_label(moved.new)
        return query.model_copy(
            update={
                "query_id": new_id,
                "reference": moved.new,
                "gold_ids": gold_ids,
                "gold_kind": gold_kind,
                "label": label,
            }
        )

    def _gold_of(self, known: _Template, group: Group) -> tuple[list[str] | None, Any]:
        """A group's gold ids as ``generate`` gives them now, no document stating a fact
        by its old value (it is stale: it states none of the facts the answer rests on
        now)."""
        return group_gold(group, known.plan, self.facts, self.gold, self.stale)

    def _stale_of(self, gold_ids: list[str] | None) -> list[str]:
        """Of a group's old gold documents, those that state a fact no longer true."""
        return [doc for doc in gold_ids or [] if doc in self._stale_documents]

    def _new_queries(self) -> Iterator[QueryRecord]:
        for known, gid, group in self._new:
            assert known.wordings is not None  # only worded templates' groups are noted
            gold_ids, gold_kind = self._gold_of(known, group)
            reference = Reference.from_values(group.answers)
            moved = _Moved("new", gid, known.template.id, dict(group.bindings), None, reference)
            self._moved[_key_of(gid)] = moved
            self.tally.new.groups += 1
            for query in known.wordings.queries(
                gid, group.bindings, reference, gold_ids, gold_kind
            ):
                moved.new_query_ids.append(query.query_id)
                self.tally.new.queries += 1
                yield query
        self._new.clear()

    def conflicting(self) -> set[int]:
        """The keys of the groups of the rewritten dataset a question of which reads the
        same as another group's with another answer (neither answer could be known), as
        ``generate`` finds the groups it drops; empty almost always.

        A new group that conflicts is not added, and a group the dataset held leaves only
        where it conflicts with another held group: one that conflicts with a new group
        alone stays, so that whether new groups are asked for never decides what becomes
        of a held group."""
        bad = {_key_of_hash(g) for g in self.conflicts.conflicting_groups()}
        new = {h for h in bad if h in self._moved and self._moved[h].status == "new"}
        if not new:
            return bad
        for position, h in self._new_at:
            if h in new:
                self.conflicts.forget(position)
        # Forgetting questions makes no conflict: what is left is held groups only.
        return new | {_key_of_hash(g) for g in self.conflicts.conflicting_groups()}

    def without_conflicting(
        self, records: Iterable[QueryRecord], bad: set[int]
    ) -> Iterator[QueryRecord]:
        """The rewritten dataset's ``records`` without the groups in ``bad``
        (:meth:`conflicting`), as ``generate`` leaves such groups out: a new group is not
        added (counted in ``dropped_new``); a changed or unchanged one leaves the dataset
        (vanished, :data:`CONFLICTING`), the records of its questions retired."""
        tally = self.tally
        held: set[int] = set()  # unchanged groups leaving: each of their questions counts
        new_left: set[int] = set()
        for query in records:
            h = _key_of(query.group_id)
            if h not in bad or query.source != "sql":
                yield query
                continue
            moved = self._moved.get(h)
            if moved is None:  # an unchanged group
                moved = self._moved[h] = _Moved(
                    "vanished",
                    query.group_id,
                    query.template_id or "",
                    dict(query.bindings),
                    old=query.reference,
                    new=query.reference,
                    stale_documents=self._stale_of(query.gold_ids),
                )
                tally.unchanged.groups -= 1
                tally.vanish(CONFLICTING)
                held.add(h)
            elif moved.status == "new":
                if h not in new_left:
                    new_left.add(h)
                    tally.new.groups -= 1
                    tally.new.queries -= len(moved.new_query_ids)
                    tally.dropped_new += 1
                continue
            elif moved.status == "changed":  # its old questions were retired already
                moved.status = "vanished"
                tally.changed.groups -= 1
                tally.changed.queries -= len(moved.new_query_ids)
                tally.vanished.queries += len(moved.old_query_ids)
                tally.vanish(CONFLICTING)
                moved.new_query_ids = []
                continue
            if h in held:
                tally.unchanged.queries -= 1
                tally.vanished.queries += 1
                moved.old_query_ids.append(query.query_id)
                self.retired.add(query.query_id)
        for h in new_left:
            del self._moved[h]

    @property
    def moved(self) -> list[RefreshedGroup]:
        """Every group that moved, as the lines of refresh.jsonl: the changed ones first
        (old and new answers side by side), then the vanished, then the new, each in the
        dataset's order."""
        order = {"changed": 0, "vanished": 1, "new": 2}
        moved = sorted(self._moved.values(), key=lambda m: order[m.status])
        return [m.record() for m in moved]


def _facts_of(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(document, fact) for every fact of a facts file (``generate.gold_facts``)."""
    for number, row in iter_jsonl_dicts(path):
        doc, facts = row.get("id"), row.get("facts")
        if not isinstance(doc, str) or not isinstance(facts, list):
            raise RecordFileError(f"{path}:{number}: expected {{id, facts: [...]}}")
        for fact in facts:
            if not isinstance(fact, dict) or not {"table", "row_key", "column"} <= set(fact):
                raise RecordFileError(f"{path}:{number}: a fact needs table, row_key and column")
            yield doc, fact


def stale_documents(
    db: Database,
    schema: SchemaInfo,
    facts_path: Path,
    texts: Callable[[], Mapping[str, str]] | None = None,
) -> tuple[list[StaleDocument], list[str]]:
    """The documents that state a fact the database no longer holds, from the facts file
    at ``facts_path`` (``{id, facts: [{table, row_key, column, stated?}]}``): a fact whose
    row is gone, or whose value the stated text (else the document's own text, from
    ``texts``) does not state (:func:`ragaudit.generate.facts.states`). One statement per
    table. Returns them and notes on what could not be checked."""
    if not facts_path.is_file():
        raise ConfigError(f"generate.gold_facts: {facts_path}: no such file{looked_in(facts_path)}")
    wanted: dict[str, dict[str, set[str]]] = {}  # table -> key -> columns
    facts: list[tuple[str, str, str, str, str | None]] = []
    for doc, fact in _facts_of(facts_path):
        info = schema.table(str(fact["table"]))
        if info is None:
            continue  # FactGold names such a file's errors when it is read for gold ids
        key, column = str(fact["row_key"]), str(fact["column"])
        stated = fact.get("stated")
        facts.append((doc, info.name, key, column, None if stated is None else str(stated)))
        wanted.setdefault(info.name, {}).setdefault(key, set()).add(column)
    notes: list[str] = []
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    unkeyed: set[str] = set()
    quote = db.engine.dialect.identifier_preparer.quote
    for table_name, keys in wanted.items():
        table = schema.table(table_name)
        assert table is not None
        if len(table.primary_key) != 1:
            notes.append(
                f"stale documents: {table_name} has no one-column primary key to name its "
                "rows by: its facts were not checked"
            )
            unkeyed.add(table_name)
            continue
        columns = {c.lower() for cols in keys.values() for c in cols}
        known = [c.name for c in table.columns if c.name.lower() in columns]
        pk = table.primary_key[0]
        select = ", ".join(quote(n) for n in [pk, *known])
        for values in db.stream(f"SELECT {select} FROM {quote(table.name)}"):
            key = str(values[0])
            if key in keys:
                rows[(table_name, key)] = {
                    n.lower(): v for n, v in zip(known, values[1:], strict=True)
                }
    loaded: Mapping[str, str] | None = None
    unchecked = 0
    found: dict[str, list[StaleFact]] = {}
    for doc, table_name, key, column, stated in facts:
        row = rows.get((table_name, key))
        if row is None:
            if table_name in unkeyed:
                continue
            found.setdefault(doc, []).append(
                StaleFact(table=table_name, row_key=key, column=column, stated=stated, gone=True)
            )
            continue
        value = row.get(column.lower())
        text = stated
        if text is None:
            if loaded is None:
                loaded = texts() if texts is not None else {}
            text = loaded.get(doc)
            if text is None:
                unchecked += 1
                continue
        if value is not None and states(text, value):
            continue
        now = value if value is None or isinstance(value, bool | int | float | str) else str(value)
        found.setdefault(doc, []).append(
            StaleFact(table=table_name, row_key=key, column=column, stated=stated, now=now)
        )
    if unchecked:
        notes.append(
            f"stale documents: {unchecked} facts of {facts_path.name} say nothing of what "
            "they state and their document is not in the corpus: not checked"
        )
    return [StaleDocument(document=doc, facts=f) for doc, f in found.items()], notes


def describe_stale(document: StaleDocument) -> str:
    """What a stale document states wrongly, in one line: a row that is gone once, else
    each fact with what it states and what the database holds now.

    >>> describe_stale(StaleDocument(document="d1", facts=[
    ...     StaleFact(table="Client", row_key="Acme", column="Industry", stated="Water",
    ...               now="Energy"),
    ...     StaleFact(table="Project", row_key="Dam", column="Name", gone=True),
    ...     StaleFact(table="Project", row_key="Dam", column="Location", gone=True)]))
    "Client Acme Industry: states 'Water', now 'Energy'; Project Dam: its row is gone"
    """
    parts: list[str] = []
    rows_gone: list[tuple[str, str]] = []
    for fact in document.facts:
        if fact.gone:
            if (fact.table, fact.row_key) not in rows_gone:
                rows_gone.append((fact.table, fact.row_key))
            continue
        stated = f"states {fact.stated!r}, " if fact.stated is not None else ""
        parts.append(f"{fact.table} {fact.row_key} {fact.column}: {stated}now {fact.now!r}")
    parts += [f"{table} {key}: its row is gone" for table, key in rows_gone]
    return "; ".join(parts)


def stale_cells(documents: Iterable[StaleDocument]) -> StaleCells:
    """Every (document, table, row key, column) the documents state wrongly now."""
    return {(d.document, f.table, f.row_key, f.column.lower()) for d in documents for f in d.facts}


def read_refresh_stats(path: Path) -> RefreshReport | None:
    """The counts of the last refresh (refresh.stats.json), None when there is none or it
    cannot be read as one."""
    try:
        return RefreshReport.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return None
