"""The template steps: ``templates sql``, ``templates text`` and ``templates check``."""

from __future__ import annotations

import contextlib
import functools
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ragaudit.config import Config
from ragaudit.db import Database, SchemaInfo, introspect
from ragaudit.errors import FATAL_LLM_ERRORS, ConfigError, LLMError, UserError
from ragaudit.generate.sql.coverage import SchemaCoverage, schema_coverage
from ragaudit.generate.sql.enumeration import (
    FILE_HAS_NONE,
    enumerate_templates,
    untemplated,
)
from ragaudit.generate.sql.instantiate import Group, count_combinations, iter_groups, plan
from ragaudit.generate.sql.llm import llm_sql_templates
from ragaudit.generate.sql.templates import (
    SqlTemplate,
    check_template,
    import_reference_sql,
    load_templates,
    save_templates,
)
from ragaudit.generate.text.llm import STYLE_INSTRUCTIONS, StyleRequest, llm_text_templates
from ragaudit.generate.text.templates import (
    TextTemplates,
    Verdict,
    WordingKey,
    dedupe,
    fill,
    import_reference_text,
    load_text_templates,
    placeholder_problem,
    save_text_templates,
)
from ragaudit.generate.text.verbalize import BUILT_IN_STYLES, describe, verbalize
from ragaudit.generate.text.verifier import (
    StyleCounts,
    Verifier,
    VerifyOutcome,
    averify_all,
    wording_counts,
)
from ragaudit.generate.text.verify import sample_template
from ragaudit.judge.matchers import gives_answer
from ragaudit.llm.client import LLMClient
from ragaudit.progress import SILENT, Progress
from ragaudit.rundir import RunDir
from ragaudit.store.files import write_coverage


def open_database(config: Config) -> tuple[Database, SchemaInfo]:
    """The configured database, read-only, and its schema."""
    if not config.database.url:
        raise ConfigError("no database configured: set database.url (or use --db / --example)")
    db = Database(config.database.url, timeout_s=config.database.timeout_s)
    db.check_connection()
    return db, introspect(db, tables=config.database.tables)


def make_verifier(config: Config, llm: LLMClient, db: Database, schema: SchemaInfo) -> Verifier:
    """The wording verifier as the configuration asks for it: reading comprehension after
    back-mapping when ``templates.reading_check``, judged by the deterministic matchers."""
    reading = gives_answer if config.templates.reading_check else None
    return Verifier(llm, db, schema, reading=reading)


def _dialect(db: Database) -> str:
    return db.sqlglot_dialect


def template_counts(db: Database, schema: SchemaInfo, template: SqlTemplate) -> SqlTemplate:
    """The template with its tables, placeholders, combinations, groups (single-answer)
    and multi-answer groups (dropped unless ``--allow-multi``) filled in from the data."""
    shape = check_template(template.sql, schema, dialect=_dialect(db))
    plan_ = plan(template.sql, schema, dialect=_dialect(db))
    single = multi = 0
    for group in iter_groups(db, plan_):
        multi += group.is_multi
        single += not group.is_multi
    if template.kind == "set":  # a set answer is what it asks: every group is one
        single, multi = single + multi, 0
    return template.model_copy(
        update={
            "tables": list(shape.tables),
            "placeholders": [p.key for p in shape.placeholders],
            "combinations": count_combinations(db, plan_),
            "groups": single,
            "multi_answer_groups": multi,
        }
    )


def no_answer_reason(template: SqlTemplate) -> str | None:
    """Why a counted template yields no question, or None."""
    if template.groups:
        return None
    if template.multi_answer_groups:
        return (
            f"every group has several answers ({template.multi_answer_groups}): one answer "
            "per question is required"
        )
    return "yields no answer on this data"


@dataclass
class SqlTemplatesResult:
    """What ``templates sql`` did."""

    path: Path
    written: bool
    templates: list[SqlTemplate]
    rejected: list[tuple[str, str]]  # (sql, reason)
    notes: dict[str, str] = field(default_factory=dict)  # table -> why it yields no template
    # Per table and column, the kinds of template that reach it, and why none does.
    coverage: SchemaCoverage | None = None

    def __repr__(self) -> str:
        # Short in a notebook: the templates themselves are in the file, and .templates.
        kept = "written" if self.written else "kept as it was"
        return (
            f"<SqlTemplatesResult {self.path} ({kept}): {len(self.templates)} templates, "
            f"{len(self.rejected)} candidates rejected, {len(self.notes)} tables without one>"
        )


def _nothing_to_ask(
    schema: SchemaInfo, notes: dict[str, str], rejected: list[tuple[str, str]]
) -> str:
    """The one-line explanation of a run that found no SQL template."""
    if not schema.tables:
        return "no SQL template: the database has no tables (check database.url and tables)"
    if not any(t.row_count for t in schema.tables):
        return f"no SQL template: none of the database's {len(schema.tables)} tables has rows"
    why = "; ".join(f"{table}: {note}" for table, note in notes.items())
    if rejected:
        sql, reason = rejected[0]
        first = f"{len(rejected)} candidates rejected, e.g. {sql[:80]}: {reason}"
        why = first + (f"; {why}" if why else "")
    return f"no SQL template: {why or 'nothing to ask'}"


def _file_notes(
    config: Config, templates: list[SqlTemplate]
) -> tuple[dict[str, str], SchemaCoverage | None]:
    """Why no template of a kept file reads each table with rows that none reads, as a
    new file's notes say, and the file's coverage of the schema; a template that no longer
    fits the schema reads nothing (``templates check`` says why), and a database that
    cannot be opened leaves both out."""
    try:
        db, schema = open_database(config)
    except UserError:
        return {}, None
    try:
        read: set[str] = set()
        valid = []
        for template in templates:
            with contextlib.suppress(UserError):
                read.update(check_template(template.sql, schema, dialect=_dialect(db)).tables)
                valid.append(template)
        found = untemplated(db, schema, read, empty=True)
        notes = {name: FILE_HAS_NONE if why is None else why for name, why in found.items()}
        return notes, schema_coverage(db, schema, valid, notes=notes, enumerated=False)
    finally:
        db.dispose()


def make_sql_templates(
    config: Config,
    run: RunDir,
    *,
    from_reference: Path | None = None,
    overwrite: bool = False,
    llm: LLMClient | None = None,
) -> SqlTemplatesResult:
    """Write ``templates/sql.yaml`` from the schema enumerator, the LLM
    (``templates.sql_generator: llm``) or a reference JSON file.

    An existing file is the user's: it is kept as it is unless ``overwrite``. Finding no
    template at all is a :class:`UserError` that says why per table, and writes nothing.
    """
    path = run.templates_sql
    if path.exists() and not overwrite:
        kept_file = load_templates(path).templates
        file_notes, file_coverage = _file_notes(config, kept_file)
        write_coverage(run, file_coverage)
        return SqlTemplatesResult(path, False, kept_file, [], file_notes, file_coverage)
    db, schema = open_database(config)
    rejected: list[tuple[str, str]] = []
    notes: dict[str, str] = {}
    used_llm = not from_reference and config.templates.sql_generator == "llm"
    if from_reference:
        candidates = import_reference_sql(from_reference)
    elif config.templates.sql_generator == "llm":
        if llm is None:
            raise ConfigError("templates.sql_generator is llm but no LLM client was given")
        result = llm.run(
            llm_sql_templates(
                llm, db, schema, list(config.templates.targets), config.templates.criteria
            )
        )
        candidates, rejected = result.templates, list(result.rejected)
    else:
        found = enumerate_templates(db, schema, per_kind=config.templates.per_kind or None)
        candidates, notes = found.templates, found.notes
    kept: list[SqlTemplate] = []
    for template in candidates:
        try:
            counted = template_counts(db, schema, template)
        except UserError as exc:
            rejected.append((template.sql, str(exc)))
            continue
        reason = no_answer_reason(counted)
        if reason:
            rejected.append((template.sql, reason))
            continue
        kept.append(counted)
    try:
        if not kept:
            raise UserError(_nothing_to_ask(schema, notes, rejected))
        coverage = schema_coverage(
            db, schema, kept, notes=notes, enumerated=not from_reference and not used_llm
        )
    finally:
        db.dispose()
    run.create()
    save_templates(path, kept)
    write_coverage(run, coverage)
    return SqlTemplatesResult(path, True, kept, rejected, notes, coverage)


@dataclass
class TextTemplatesResult:
    """What ``templates text`` (or ``templates verify``) did."""

    path: Path
    texts: TextTemplates
    verdicts: dict[WordingKey, Verdict]
    worded: list[tuple[str, str]] = field(default_factory=list)  # (template id, style)
    kept: int = 0  # wordings kept from the file as they were
    rejected: list[tuple[str, str, str, str]] = field(default_factory=list)  # id, style, text, why
    fallbacks: list[tuple[str, str, str]] = field(default_factory=list)  # id, style, note
    verification: VerifyOutcome | None = None
    counts: dict[str, StyleCounts] = field(default_factory=dict)
    orphans: list[str] = field(default_factory=list)  # wordings' ids with no SQL template
    generation_calls: int = 0

    @property
    def written(self) -> bool:
        """Something was worded or judged (the file was rewritten)."""
        return bool(self.worded) or bool(self.verification and self.verification.judged)

    def __repr__(self) -> str:
        # Short in a notebook: per style, what was proposed and what verification said.
        styles = ", ".join(
            f"{style}: {c.proposed} proposed, {c.verified} verified, {c.rejected} rejected, "
            f"{c.unchecked} not checked"
            for style, c in self.counts.items()
        )
        return f"<TextTemplatesResult {self.path}: {styles or 'no wording'}>"


def style_instructions(config: Config) -> dict[str, str]:
    """The instruction of every configured style (built-in or from the config)."""
    out = {}
    for style in config.templates.styles:
        instruction = config.templates.style_instructions.get(style) or STYLE_INSTRUCTIONS.get(
            style
        )
        if instruction is None:
            raise ConfigError(
                f"templates.styles: style '{style}' needs an instruction in "
                f"templates.style_instructions.{style}"
            )
        out[style] = instruction
    return out


def _style_requests(
    config: Config, schema: SchemaInfo, template: SqlTemplate, styles: list[str], example: Group
) -> dict[str, StyleRequest]:
    """What the LLM is asked per style: the instruction, the verbalizer's sentence filled
    with the example's values to reword, and the verbalizer's wordings to fall back on."""
    instructions = style_instructions(config)
    out = {}
    for style in styles:
        base = style if style in BUILT_IN_STYLES else "short"
        sentence = verbalize(template, schema, base, 1, config.templates.seed)[0]
        fallback = (
            verbalize(template, schema, style, VERBALIZER_BANK, config.templates.seed)
            if style in BUILT_IN_STYLES
            else []
        )
        out[style] = StyleRequest(
            instruction=instructions[style],
            example=fill(sentence, example.bindings),
            fallback=dedupe(fallback),
        )
    return out


# Enough to take every pattern of the verbalizer's phrase banks, in seeded order.
VERBALIZER_BANK = 100


def _verbalized(
    config: Config,
    schema: SchemaInfo,
    template: SqlTemplate,
    style: str,
    verifier: Verifier | None,
    verdicts: dict[WordingKey, Verdict],
) -> list[str]:
    """``per_style`` wordings from the verbalizer. With a verifier, its patterns are tried
    in seeded order until ``per_style`` are verified (the rejected ones tried are kept, with
    their verdicts, for the user to see); without, the first ``per_style``."""
    n = config.templates.per_style
    if verifier is None:
        return dedupe(verbalize(template, schema, style, n, config.templates.seed))
    out: list[str] = []
    verified = 0
    for text in dedupe(verbalize(template, schema, style, VERBALIZER_BANK, config.templates.seed)):
        verdict = verifier.run(verifier.averify(template, [text])).get(text)
        out.append(text)
        if verdict is not None:
            verdicts[(template.id, style, text)] = verdict
        verified += verdict is None or verdict.verified
        if verified >= n:
            break
    return out


def make_text_templates(
    config: Config,
    run: RunDir,
    *,
    references: dict[str, Path] | None = None,
    overwrite: bool = False,
    llm: LLMClient | None = None,
    progress: Progress = SILENT,
) -> TextTemplatesResult:
    """Word every (SQL template, style) that has no wording yet, keep every wording the file
    already has (``overwrite`` words everything again), and verify what has no verdict.

    Wordings come from reference files (``{style: path}``), the LLM
    (``templates.text_generator: llm``, each candidate verified as it is written, re-asked
    with the reasons, the verbalizer filling in) or the built-in verbalizer. With ``llm``
    and ``templates.verify``, every wording gets a verdict; without, only the deterministic
    checks run and passing wordings stay unverified. ``progress`` shows the SQL templates
    worded (``wording``).
    """
    path = run.templates_text
    sql = load_templates(run.templates_sql).templates
    task = progress.task("wording", len(sql))
    texts: TextTemplates = {}
    verdicts: dict[WordingKey, Verdict] = {}
    if path.exists() and not overwrite:
        loaded = load_text_templates(path)
        texts, verdicts = loaded.templates, loaded.verdicts
    known = {t.id for t in sql}
    result = TextTemplatesResult(path, texts, verdicts)
    result.orphans = [tid for tid in texts if tid not in known]
    result.kept = sum(len(w) for styles in texts.values() for w in styles.values())
    missing = {
        t.id: [s for s in config.templates.styles if not texts.get(t.id, {}).get(s)] for t in sql
    }
    missing = {tid: styles for tid, styles in missing.items() if styles}
    use_llm = config.templates.text_generator == "llm" and not references
    if use_llm and llm is None and missing:
        raise ConfigError("templates.text_generator is llm but no LLM client was given")
    db, schema = open_database(config)
    verifier = (
        make_verifier(config, llm, db, schema)
        if (llm is not None and config.templates.verify)
        else None
    )
    imported: TextTemplates = {}
    for style, ref in (references or {}).items():
        import_reference_text(ref, style, sql, into=imported)
    for template in sql:
        styles = missing.get(template.id)
        if styles and references:
            for style in styles:
                found = imported.get(template.id, {}).get(style)
                if found:
                    texts.setdefault(template.id, {})[style] = found
                    result.worded.append((template.id, style))
        elif styles and use_llm:
            assert llm is not None
            sample = (
                verifier.sample(template) if verifier else sample_template(db, schema, template)
            )
            try:
                made = llm.run(
                    llm_text_templates(
                        llm,
                        template,
                        _style_requests(config, schema, template, styles, sample.example),
                        config.templates.per_style,
                        meaning=describe(template, schema),
                        bindings=dict(sample.example.bindings),
                        verify=verifier.averify_candidates if verifier else None,
                        precheck=(
                            functools.partial(verifier.deterministic, template)
                            if verifier
                            else None
                        ),
                        attempts=config.templates.attempts,
                    )
                )
            except FATAL_LLM_ERRORS:
                raise
            except LLMError as exc:
                # One template's failure is that template's: the verbalizer words it, with
                # a note, and the others are worded by the LLM as asked.
                note = f"worded by the verbalizer: the LLM failed ({str(exc)[:200]})"
                for style in styles:
                    texts.setdefault(template.id, {})[style] = _verbalized(
                        config, schema, template, style, verifier, verdicts
                    )
                    result.worded.append((template.id, style))
                    result.fallbacks.append((template.id, style, note))
                task.advance()
                continue
            result.generation_calls += made.calls
            for style in styles:
                rejected_now = [
                    t for (s, t), v in made.verdicts.items() if s == style and not v.verified
                ]
                texts.setdefault(template.id, {})[style] = made.texts.get(style, []) + rejected_now
                result.worded.append((template.id, style))
            for (style, text), verdict in made.verdicts.items():
                verdicts[(template.id, style, text)] = verdict
            result.rejected += [(template.id, *item) for item in made.rejected]
            result.fallbacks += [(template.id, s, note) for s, note in made.fallbacks.items()]
        elif styles:
            for style in styles:
                texts.setdefault(template.id, {})[style] = _verbalized(
                    config, schema, template, style, verifier, verdicts
                )
                result.worded.append((template.id, style))
        task.advance()
    result.verification = verify_texts(verifier, db, schema, sql, texts, verdicts)
    result.counts = wording_counts(texts, verdicts, {t.id: t for t in sql})
    db.dispose()
    run.create()
    save_text_templates(path, texts, verdicts)
    return result


def verify_texts(
    verifier: Verifier | None,
    db: Database,
    schema: SchemaInfo,
    sql: list[SqlTemplate],
    texts: TextTemplates,
    verdicts: dict[WordingKey, Verdict],
    *,
    recheck: bool = False,
    progress: Progress = SILENT,
) -> VerifyOutcome:
    """Verdicts for every wording that has none that holds: with the LLM when a verifier
    is given, else by the deterministic checks alone (those that pass stay unverified).
    ``progress`` shows the SQL templates whose wordings are judged (``verifying``)."""
    if verifier is None:
        verifier = Verifier(None, db, schema)
    task = progress.task("verifying", len(sql))
    return verifier.run(
        averify_all(
            verifier,
            sql,
            texts,
            verdicts,
            recheck=recheck,
            on_template=lambda _template, _judged: task.advance(),
        )
    )


def verify_text_templates(
    config: Config,
    run: RunDir,
    llm: LLMClient | None,
    *,
    recheck: bool = False,
    progress: Progress = SILENT,
) -> TextTemplatesResult:
    """``templates verify``: judge every wording of ``templates/text.yaml`` that has no
    verdict that holds (all of them with ``recheck``) and store the verdicts in the file.
    ``progress`` shows the SQL templates whose wordings are judged (``verifying``)."""
    sql = load_templates(run.templates_sql).templates
    loaded = load_text_templates(run.templates_text)
    texts, verdicts = loaded.templates, loaded.verdicts
    db, schema = open_database(config)
    verifier = make_verifier(config, llm, db, schema) if llm else None
    result = TextTemplatesResult(run.templates_text, texts, verdicts)
    result.orphans = [tid for tid in texts if tid not in {t.id for t in sql}]
    result.verification = verify_texts(
        verifier, db, schema, sql, texts, verdicts, recheck=recheck, progress=progress
    )
    result.counts = wording_counts(texts, verdicts, {t.id: t for t in sql})
    db.dispose()
    save_text_templates(run.templates_text, texts, verdicts)
    return result


def check(config: Config, run: RunDir) -> list[str]:
    """Revalidate both template files against the database; one line per problem, each
    naming the file and the line."""
    loaded = load_templates(run.templates_sql)
    db, schema = open_database(config)
    problems: list[str] = []
    valid_ids = set()
    for template in loaded.templates:
        at = loaded.lines[template.id]
        try:
            counted = template_counts(db, schema, template)
        except UserError as exc:
            problems.append(f"{at}: {template.id}: {exc}")
            continue
        reason = no_answer_reason(counted)
        if reason:
            problems.append(f"{at}: {template.id}: {reason}")
            continue
        valid_ids.add(template.id)
    if run.templates_text.exists():
        texts = load_text_templates(run.templates_text)
        by_id = {t.id: t for t in loaded.templates}
        for (tid, style), at in texts.lines.items():
            worded = by_id.get(tid)
            if worded is None:
                problems.append(f"{at}: templates.{tid}: no SQL template has this id")
                continue
            item_lines = texts.item_lines[(tid, style)]
            for i, text in enumerate(texts.templates[tid][style]):
                problem = placeholder_problem(text, worded.placeholder_list)
                if problem:
                    problems.append(
                        f"{item_lines[i]}: templates.{tid}.{style}[{i}]: {problem}: {text!r}"
                    )
    db.dispose()
    return problems


def require_usable(result: TextTemplatesResult) -> None:
    """A wording step that leaves not one usable wording has failed, whatever it wrote:
    say why (the most common rejection) rather than let ``generate`` find out."""
    usable = sum(c.verified + c.unchecked for c in result.counts.values())
    if usable:
        return
    proposed = sum(c.proposed for c in result.counts.values())
    reasons: Counter[str] = Counter()
    for c in result.counts.values():
        reasons.update(c.reasons)
    why = ", ".join(f"{n} {kind}" for kind, n in reasons.most_common(3)) or "none was proposed"
    raise UserError(
        f"no usable wording: {proposed} proposed, none verified ({why}); the rejected ones "
        f"and their reasons are in {result.path}"
    )
