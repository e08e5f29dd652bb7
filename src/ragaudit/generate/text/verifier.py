"""The wording verifier: every wording of an SQL template checked to ask exactly what the
template answers, with the LLM, and what the verdicts add up to per style.

The checks are in :mod:`ragaudit.generate.text.verify`, :mod:`~ragaudit.generate.text.coverage`
and :mod:`~ragaudit.generate.text.naturalness`; :class:`Verifier` runs them with the LLM,
cheapest first: the deterministic ones (placeholders, naturalness, a question asking why,
qualifiers and reversed relations, the answer in the wording), then back-mapping (the
wording read back as SQL by the LLM and executed, and every table and column it names
accounted for), then, when asked for, reading comprehension. A wording keeps its
verdict while neither it nor its SQL template changes; a failed LLM call leaves the wording
unverified (counted, with the reason) and never stops the others.

The engine reads no configuration and writes no file: ``ragaudit templates verify``
(:mod:`ragaudit.steps.templates`) gives it the database, the LLM and its options, and
stores the verdicts in ``templates/text.yaml``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ragaudit import aio
from ragaudit.db import Database, SchemaInfo
from ragaudit.db.schema import TableInfo
from ragaudit.errors import FATAL_LLM_ERRORS, LLMError, UserError
from ragaudit.generate.sql.instantiate import Group
from ragaudit.generate.sql.templates import SqlTemplate
from ragaudit.generate.text import coverage
from ragaudit.generate.text import verify as checks
from ragaudit.generate.text.naturalness import naturalness_problem
from ragaudit.generate.text.templates import (
    TextTemplates,
    Verdict,
    WordingKey,
    fingerprint,
    placeholder_problem,
)
from ragaudit.llm.client import LLMClient
from ragaudit.llm.types import assistant, user
from ragaudit.records.models import Reference

# Whether a reply gives a reference's answer: the judge's deterministic matchers
# (:func:`ragaudit.judge.matchers.gives_answer`), given by the caller, since the judge
# is a layer above the wordings.
AnswerCheck = Callable[[Reference, str], bool]

# Reasons of a reading that are the model's SQL mistakes, not a different meaning: asked
# again once, with the error.
_REPAIRABLE = (
    "unknown column",
    "unknown table",
    "not valid SQL",
    "holds no SQL",
    "does not fit the schema",
    "exactly one statement",
    "only a single SELECT",
    "does not run",
)
T = TypeVar("T")


class Verifier:
    """Checks wordings of SQL templates on one database with one LLM.

    ``reading`` adds the reading-comprehension check after back-mapping, deciding with it
    whether the model's answer is the SQL's (off by default: on the labelled set it
    rejected many faithful wordings and few corrupted ones that back-mapping had let
    through; docs/generate.md has the figures). Without an LLM only the deterministic
    checks run, and a wording that passes them gets no verdict.
    """

    def __init__(
        self,
        llm: LLMClient | None,
        db: Database,
        schema: SchemaInfo,
        *,
        reading: AnswerCheck | None = None,
        repairs: int = 1,
        word_asks: int = 0,
    ) -> None:
        self.llm = llm
        self.db = db
        self.schema = schema
        self.reading = reading
        self.repairs = repairs
        self.word_asks = word_asks
        self.calls = 0
        self.failures: list[tuple[str, str, str]] = []  # template id, text, reason
        self._samples: dict[str, checks.TemplateSample] = {}
        self._ddl: dict[tuple[str, ...], str] = {}
        self._examples: dict[str, dict[str, list[str]]] = {}  # table -> column key -> values

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine from synchronous code (on the LLM client's loop, if any)."""
        return self.llm.run(coro) if self.llm is not None else aio.run(coro)

    def _column_examples(self, tables: list[TableInfo]) -> dict[str, list[str]]:
        """Example values of the tables' text columns (queried once per table)."""
        out: dict[str, list[str]] = {}
        for table in tables:
            if table.name not in self._examples:
                self._examples[table.name] = checks.column_examples(self.db, [table])
            out |= self._examples[table.name]
        return out

    def sample(self, template: SqlTemplate) -> checks.TemplateSample:
        """The template's sampled groups and example (computed once per template); the
        example's values are not among those the schema prompt shows."""
        found = self._samples.get(template.sql)
        if found is None:
            tables = [t for t in self.schema.tables if t.row_count]
            shown = self._column_examples(
                [
                    t
                    for t in tables
                    if t.name.lower() in {p.table.lower() for p in template.placeholder_list}
                ]
            )
            avoid = frozenset(v for values in shown.values() for v in values)
            found = self._samples[template.sql] = checks.sample_template(
                self.db, self.schema, template, avoid=avoid
            )
        return found

    def deterministic(self, template: SqlTemplate, text: str) -> str | None:
        """Why the wording fails a check that needs no LLM, or None."""
        problem = placeholder_problem(text, template.placeholder_list)
        if problem:
            return f"placeholders: {problem}"
        problem = naturalness_problem(text, [t.name for t in self.schema.tables])
        if problem:
            return problem
        if checks.asks_why(text):
            return "asks why: a reason is not a value any SQL returns"
        shape = self.sample(template).shape
        problem = coverage.qualifier_problem(
            text, shape, self.schema, template.sql
        ) or coverage.reversed_problem(text, shape, self.schema, template.sql)
        if problem:
            return problem
        leaked = checks.answer_in_wording(self.db, self.sample(template).shape, text)
        if leaked is not None:
            return f"answer in the wording: it names {leaked!r}, a value of the answer column"
        return None

    def _schema_ddl(self, sample: checks.TemplateSample) -> str:
        tables = checks.schema_prompt_tables(self.schema, sample.shape.tables)
        names = tuple(t.name for t in tables)
        if names not in self._ddl:
            self._ddl[names] = checks.ddl(tables, self._column_examples(tables))
        return self._ddl[names]

    def _shown(self, sample: checks.TemplateSample) -> list[str]:
        """The example values the back-mapping prompt's schema shows."""
        tables = checks.schema_prompt_tables(self.schema, sample.shape.tables)
        return [v for values in self._column_examples(tables).values() for v in values]

    async def backmap(
        self, template: SqlTemplate, text: str, examples: int | None = None
    ) -> str | None:
        """Why the LLM's reading of the wording, executed, does not give the template's
        answers, or None. The wording is read with the sample's first example, and when
        that reading runs but gives the template's answer for none of the groups, with the
        next (what a small model reads can hang on how one name sounds); it passes when
        one reading gives the template's answers. A reading that fails otherwise (SQL that
        does not run after its repair, the answer given away, several columns, another
        column that agrees on some groups) is not read again: on the labelled set of
        docs/generate.md, those second readings cost 164 of 897 calls and changed two
        verdicts, one faithful wording accepted and one corrupted. ``examples`` caps how
        many are tried."""
        sample = self.sample(template)
        first = None
        for example in sample.examples[:examples]:
            reason, other_answers = await self._backmap_one(sample, example, text)
            if not reason:
                return None
            first = first or reason
            if not other_answers:
                break
        return first  # the first example's reading: the one every wording is asked about

    async def _backmap_one(
        self, sample: checks.TemplateSample, example: Group, text: str
    ) -> tuple[str | None, bool]:
        """Why one reading of the wording filled with ``example`` fails (None when it
        passes), and whether it failed by running and giving the template's answer for no
        group (worth reading with another example). Asked again once
        (``repairs``), with what went wrong: a reading that is not valid SQL; one that
        selects the template's answer but looks a value up in a column the database has
        no such value in ("no Project.Client is 'Blue Lagoon Luxury Resort', it is a
        Project.Name"); one that computes an answer (``COUNT(...)``) where the template
        selects a stored column. A reading that agrees must also account for every table
        and column the question names (:func:`coverage.unaccounted`). With ``word_asks``,
        one it does not use is asked about, and the reading that comes back must agree
        and account for it too; that is off by default: on the labelled set it cost 30
        calls and changed no verdict."""
        question = checks.filled(text, example)
        conversation = list(checks.backmap_prompt(self._schema_ddl(sample), question))
        reason = ""
        repairs, word_asks = self.repairs, self.word_asks
        asked_about: list[str] = []  # the names the model was asked about
        assert self.llm is not None
        while True:
            reply = (await self.llm.acomplete(conversation)).text
            self.calls += 1
            sql = None
            try:
                # The model's slips that change nothing the question asks are undone
                # first: a column under the wrong alias, a join nothing uses, a filter
                # copied from the schema's examples.
                dialect = self.db.sqlglot_dialect
                sql = checks.recover_reading(reply)
                sql = checks.repair_aliases(sql, self.schema, dialect)
                sql = checks.drop_unused_joins(sql, self.schema, dialect)
                sql = checks.drop_copied_examples(
                    sql, question, self._shown(sample), sample.shape.placeholders, dialect
                )
                restored = checks.parametrize(
                    sql, example, sample.shape.placeholders, self.db.sqlglot_dialect
                )
                reading = checks.compare_reading(self.db, self.schema, sample, restored)
            except checks.ReadingError as exc:
                if asked_about:  # the first reading agreed; the one asked for does not run
                    return reason, False
                reason = f"back-mapping: the question reads as {_short(sql or reply)}: {exc}"
                if repairs and any(r in str(exc) for r in _REPAIRABLE):
                    repairs -= 1
                    conversation += [
                        assistant(reply),
                        user(f"That query is wrong: {exc}. Reply with the corrected SQL only."),
                    ]
                    continue
                return reason, False
            if reading.agreement >= checks.MIN_AGREEMENT:
                missing = coverage.unaccounted(
                    text, sample.shape, self.schema, reading.sql, self.db.sqlglot_dialect
                )
                if not missing:
                    return None, False
                said = ", ".join(repr(m) for m in missing)
                if asked_about:
                    return reason, False
                reason = (
                    f"unaccounted: the question names {said}, which its reading "
                    f"({_short(reading.sql)}) does not use"
                )
                if not word_asks:
                    return reason, False
                word_asks -= 1
                asked_about = missing
                conversation += [
                    assistant(reply),
                    user(
                        f"The question says {said}, and that query does not use it. Reply "
                        "with the corrected SQL only."
                    ),
                ]
                continue
            wrong = (
                f"the question reads as {_short(reading.sql)}, which gives the "
                f"template's answer for {reading.agree} of {reading.compared} groups"
            )
            if asked_about:
                said = ", ".join(repr(m) for m in asked_about)
                return f"unaccounted: asked about {said}, {wrong}", False
            absent = None
            if repairs and reading.same_answer and reading.answered == 0:
                absent = self._absent_lookup(sample, example, reading.sql)
            if absent is not None:
                # The asked column, looked up where the database has no such value: asked
                # again with that fact, as a query that does not run is.
                repairs -= 1
                column, value, holder = absent
                conversation += [
                    assistant(reply),
                    user(
                        f"That query returns no row: no {column} is {str(value)!r}, it is a "
                        f"{holder}. Reply with the corrected SQL only."
                    ),
                ]
                reason = f"back-mapping: {wrong}"
                continue
            if repairs and reading.computed:
                # The wording passed the qualifier check: it asks for no count, total or
                # extreme, so a computed answer is the reader's, not the question's.
                repairs -= 1
                conversation += [
                    assistant(reply),
                    user(
                        f"That query computes {reading.computed}, and the question asks for "
                        "no count, total, difference or extreme: the value is stored in a "
                        "column. Reply with the corrected SQL only."
                    ),
                ]
                reason = f"back-mapping: {wrong}"
                continue
            # A reading that gives the answer for no group may hang on how one name sounds;
            # one that gives it for some reads another column that sometimes agrees.
            return f"back-mapping: {wrong}", reading.agree == 0

    def _absent_lookup(
        self, sample: checks.TemplateSample, example: Group, reading_sql: str
    ) -> tuple[str, object, str] | None:
        """(``Table.Column`` looked in, value, ``Table.Column`` that holds it) for the
        first of the example's values that the reading looks up in a column that has no
        such value, or None. Where the value is comes from the template, and is told only
        once the reading looked where it cannot be: a wording that names another entity
        for it still names a table its reading must account for (checked after)."""
        for p in sample.shape.placeholders:
            value = example.bindings[p.key]
            column = checks.looked_up_where_absent(
                self.db, self.schema, reading_sql, p.token, value
            )
            if column is not None:
                return column, value, p.key
        return None

    async def read(self, template: SqlTemplate, text: str) -> str | None:
        """Why the LLM, answering the wording from facts about the example's rows, does not
        give the SQL's answer, or None."""
        sample = self.sample(template)
        lines = checks.facts(self.db, self.schema, sample)
        assert self.llm is not None
        reply = (
            await self.llm.acomplete(
                checks.reading_prompt(lines, checks.filled(text, sample.example))
            )
        ).text
        self.calls += 1
        reference = Reference.from_values(sample.example.answers)
        assert self.reading is not None
        if self.reading(reference, reply):
            return None
        return f"reading: answered {reply.strip()[:60]!r} where the answer is {reference.display!r}"

    async def averify(
        self, template: SqlTemplate, texts: list[str], *, examples: int | None = None
    ) -> dict[str, Verdict]:
        """A verdict for each text of one template, cheapest check first. A text whose LLM
        call failed gets none (it stays unverified) and is listed in ``failures``.
        ``examples`` caps the back-mapping's examples (all of them by default)."""
        out: dict[str, Verdict] = {}
        try:
            self.sample(template)
        except UserError as exc:
            for text in texts:
                out[text] = Verdict(False, f"unverifiable: {exc}", fingerprint(template.sql, text))
            return out
        pending = []
        for text in texts:
            reason = self.deterministic(template, text)
            if reason:
                out[text] = Verdict(False, reason, fingerprint(template.sql, text))
            else:
                pending.append(text)
        if self.llm is None:  # the deterministic checks alone: no verdict for a pass
            return out
        steps = ["backmap", "read"] if self.reading is not None else ["backmap"]
        for step in steps:  # one check over every text in turn: its prompt prefix is shared
            still = []
            for text in pending:
                try:
                    if step == "backmap":
                        reason = await self.backmap(template, text, examples)
                    else:
                        reason = await self.read(template, text)
                except FATAL_LLM_ERRORS:
                    raise  # a wrong key or model: every wording would fail alike
                except LLMError as exc:
                    self.failures.append((template.id, text, str(exc)))
                    continue
                if reason:
                    out[text] = Verdict(False, reason, fingerprint(template.sql, text))
                else:
                    still.append(text)
            pending = still
        for text in pending:
            out[text] = Verdict(True, None, fingerprint(template.sql, text))
        return out

    async def averify_candidates(
        self, template: SqlTemplate, _style: str, texts: list[str]
    ) -> dict[str, Verdict]:
        """:meth:`averify` for the LLM text generator's candidates: one reading each (a
        rejected candidate costs one call, and the generator asks for another)."""
        return await self.averify(template, texts, examples=1)


def _short(sql: str, limit: int = 160) -> str:
    """SQL on one line, cut to ``limit`` characters."""
    one = " ".join(sql.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def held(
    templates: dict[str, SqlTemplate], key: WordingKey, verdicts: dict[WordingKey, Verdict]
) -> bool:
    """The wording has a verdict that still applies to its text and SQL."""
    verdict = verdicts.get(key)
    template = templates.get(key[0])
    return verdict is not None and template is not None and verdict.holds(template.sql, key[2])


def resolve_conflicts(
    texts: TextTemplates, verdicts: dict[WordingKey, Verdict], sql: dict[str, SqlTemplate]
) -> int:
    """Reject every usable wording that reads the same as a usable wording of another SQL
    template (once filled with the same values, one text would have two answers); returns
    how many were rejected."""
    usable = [
        (tid, text)
        for tid, styles in texts.items()
        for style, wordings in styles.items()
        for text in wordings
        if tid in sql and verdicts.get((tid, style, text), Verdict(True)).verified
    ]
    clashes = checks.conflicts(usable)
    rejected = 0
    for tid, styles in texts.items():
        for style, wordings in styles.items():
            for text in wordings:
                other = clashes.get((tid, text))
                if other is None:
                    continue
                verdicts[(tid, style, text)] = Verdict(
                    False,
                    f"conflict: reads the same as a wording of {other}, which has other answers",
                    fingerprint(sql[tid].sql, text),
                )
                rejected += 1
    return rejected


@dataclass
class StyleCounts:
    """What verification found for one style."""

    proposed: int = 0
    verified: int = 0
    rejected: int = 0
    unchecked: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    examples: list[tuple[str, str, str]] = field(default_factory=list)  # id, text, reason

    @property
    def rate(self) -> float | None:
        """Verified among the judged wordings; None when none was judged."""
        judged = self.verified + self.rejected
        return self.verified / judged if judged else None


def reason_kind(reason: str) -> str:
    """The check that gave a rejection: the reason's prefix (``back-mapping``, ...)."""
    head = reason.split(":", 1)[0]
    return (
        head
        if head
        in {
            "placeholders",
            "unnatural",
            "asks why",
            "qualifier",
            "reversed relation",
            "answer in the wording",
            "conflict",
            "back-mapping",
            "unaccounted",
            "reading",
            "unverifiable",
        }
        else "by hand"
    )


def wording_counts(
    texts: TextTemplates, verdicts: dict[WordingKey, Verdict], sql: dict[str, SqlTemplate]
) -> dict[str, StyleCounts]:
    """Per style: wordings proposed, verified, rejected (by which check), not yet checked."""
    out: dict[str, StyleCounts] = {}
    for tid, styles in texts.items():
        for style, wordings in styles.items():
            counts = out.setdefault(style, StyleCounts())
            for text in wordings:
                counts.proposed += 1
                key = (tid, style, text)
                if not held(sql, key, verdicts):
                    counts.unchecked += 1
                elif verdicts[key].verified:
                    counts.verified += 1
                else:
                    reason = verdicts[key].reason or ""
                    counts.rejected += 1
                    counts.reasons[reason_kind(reason)] += 1
                    counts.examples.append((tid, text, reason))
    return out


@dataclass
class VerifyOutcome:
    """What one verification pass did."""

    verdicts: dict[WordingKey, Verdict]
    judged: int
    conflicts: int
    calls: int
    failures: list[tuple[str, str, str]]


async def averify_all(
    verifier: Verifier,
    templates: list[SqlTemplate],
    texts: TextTemplates,
    verdicts: dict[WordingKey, Verdict],
    *,
    recheck: bool = False,
    on_template: Callable[[SqlTemplate, int], None] | None = None,
) -> VerifyOutcome:
    """Give a verdict to every wording that has none that holds (every wording with
    ``recheck``), then reject cross-template conflicts. ``verdicts`` is updated in place."""
    by_id = {t.id: t for t in templates}
    judged = 0
    for template in templates:
        todo: dict[str, list[str]] = {}
        for style, wordings in texts.get(template.id, {}).items():
            for text in wordings:
                if recheck or not held(by_id, (template.id, style, text), verdicts):
                    todo.setdefault(text, []).append(style)
        if todo:
            found = await verifier.averify(template, list(todo))
            for text, verdict in found.items():
                for style in todo[text]:
                    verdicts[(template.id, style, text)] = verdict
            judged += len(found)
        if on_template:
            on_template(template, len(todo))
    conflicts = resolve_conflicts(texts, verdicts, by_id)
    return VerifyOutcome(verdicts, judged, conflicts, verifier.calls, verifier.failures)
