"""The ``analyze`` step: judged examples -> summary.json, summary.md and a per-group
drill-down, with paired comparisons between variants and between systems."""

from __future__ import annotations

import contextlib
import json
import shutil
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from json.encoder import encode_basestring as json_string
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ragaudit.analysis import Analysis, Example, analyze
from ragaudit.analysis.by_label import label_breakdown
from ragaudit.analysis.comparisons import comparisons
from ragaudit.analysis.documents import generation_figures, source_breakdown
from ragaudit.analysis.group_counts import group_comparisons, shape_ranking, system_figures
from ragaudit.analysis.lambda_study import (
    DEFAULT_DRAWS,
    check_targets,
    example_verdicts,
    lambda_study,
    table_verdicts,
)
from ragaudit.analysis.metrics import (
    gold_state,
    robustness_note,
    source_of,
    with_left_out,
    without_retriever,
)
from ragaudit.analysis.reliability import reference_free_figures
from ragaudit.analysis.repeats import stability
from ragaudit.analysis.retrieval_metrics import ranking_summary
from ragaudit.analysis.summary import (
    DocumentFigures,
    Outcome,
    ReferenceFreeFigures,
    Summary,
    SystemFigures,
    Tag,
)
from ragaudit.errors import StaleInputError, UserError, check_seed
from ragaudit.judge.cascade import retrieval_rule_of
from ragaudit.judge.options import ReferenceFreeOptions
from ragaudit.judge.retrieval import (
    DEFAULT_RULE,
    RetrievalRule,
    RuleFit,
    check_rule,
    retrieval_correct,
)
from ragaudit.records.io import atomic_write_text, read_jsonl, write_jsonl_atomic
from ragaudit.records.models import (
    CandidateRecord,
    Judgement,
    RepeatJudgement,
    RepeatResponse,
    ResponseRecord,
)
from ragaudit.report.summary_file import write_summary
from ragaudit.report.text import summary_markdown
from ragaudit.rundir import RunDir
from ragaudit.steps.cost import cost_figures
from ragaudit.steps.inputs import read_neutral
from ragaudit.steps.judge import read_judge_stats
from ragaudit.steps.label import read_label_figures
from ragaudit.steps.scan import read_scan
from ragaudit.store import answer_sql
from ragaudit.store.answers import fresh_answer_table, judged_rules
from ragaudit.store.examples import answer_examples, repeat_attempts, retrieval_examples
from ragaudit.store.files import DrilldownRow, read_documents_thresholds
from ragaudit.store.manifest import expand_folders, notify, open_manifest, provenance_options
from ragaudit.store.records import (
    OneRecordEach,
    RecordModel,
    read_dataset,
    read_fresh_scores,
    record_files,
)


@dataclass(frozen=True)
class AnalysisResult:
    """Everything ``analyze`` computed: the summary (what summary.json holds) and
    summary.md's text."""

    summary: Summary
    markdown: str

    @property
    def summaries(self) -> dict[str, SystemFigures]:
        """The figures per system (``summary.systems``)."""
        return self.summary.systems


def _record_files(run: RunDir, model: RecordModel) -> list[Path]:
    """The run's judgements or responses files; none is an error that says which step
    writes them."""
    files = record_files(run, model)
    if not files:
        kind, folder = (
            ("judgements", run.judgements_dir)
            if model is Judgement
            else ("responses", run.responses_dir)
        )
        hint = "ragaudit judge, or pass --neutral FILE" if kind == "judgements" else "ragaudit run"
        raise UserError(f"nothing to analyze: no {kind} in {folder} (run {hint})")
    return files


def load_examples(
    run: RunDir,
    neutral: list[Path],
    rule: RetrievalRule,
    system: str | None = None,
    outcome: Outcome = "answer",
    undecided: Counter[str] | None = None,
    left_out: dict[tuple[str, str], Counter[str]] | None = None,
    dropped: set[int] | None = None,
    judge_failed: list[Example] | None = None,
    under: set[str] | None = None,
) -> list[Example]:
    """Examples from neutral files, or from the run's dataset and its judgements (outcome
    ``answer``) or responses (outcome ``retrieval``: retrieval correctness is analyzed as
    if it were the answer's). Judgements the judge failed to give are counted per system
    in ``undecided`` and left out of the answers, their retrievals kept in
    ``judge_failed`` for the retrieval figures; with outcome ``retrieval``, the queries without a
    retrieval verdict are counted per system and variant in ``left_out``, by why, and
    their positions among the neutral lines added to ``dropped``; ``under`` receives the
    rules each judgement was given under. A second record of one
    (system, query), in its file or in another of the run (or of ``neutral``), is a
    one-line error naming both files: counted twice, it would weigh that query double."""
    left_out = left_out if left_out is not None else {}
    dropped = dropped if dropped is not None else set()
    if neutral:
        given = Counter(path.resolve() for path in neutral)
        twice = next((path for path in neutral if given[path.resolve()] > 1), None)
        if twice is not None:
            raise UserError(f"{twice} is given twice: its results would be counted twice")
        seen = OneRecordEach("row")  # the files are one set of results: a query once
        examples: list[Example] = [
            ex for path in neutral for ex in read_neutral(path, system=system, rule=rule, seen=seen)
        ]
        if outcome == "retrieval":
            kept = []
            for position, ex in enumerate(examples):
                if ex.retrieval_correct is None:
                    dropped.add(position)
                    state = gold_state(ex.gold)
                    why = "no retrieved ids" if state == "judged" else state
                    left_out.setdefault((ex.system, ex.variant), Counter())[why] += 1
                else:
                    kept.append(replace(ex, correct=ex.retrieval_correct))
            examples = kept
        return examples
    # Every record goes through the run store's read_run_records: a query's second
    # judgement or response, in its own file or another (a copy kept beside it), is
    # refused, never counted.
    if outcome == "retrieval":
        return retrieval_examples(run, rule, _record_files(run, ResponseRecord), left_out)
    return answer_examples(run, _record_files(run, Judgement), undecided, judge_failed, under)


def refuse_closed_domain_under_another_rule(under: set[str], rule: RetrievalRule) -> None:
    """Refuse figures under ``rule`` of answers judged under the closed-domain rule
    (``under``: the judgements' ``judged_under`` lines) with another retrieval rule: such
    a verdict of the answer rests on the rule the judge applied, so it cannot be given
    again from the retrieved ids alone. Every reader that takes a rule calls it."""
    closed = {u for u in under if "closed domain on" in u}
    applied = _rules_of(closed)
    if closed and applied != {rule}:
        shown = " and ".join(sorted(applied)) or UNRECORDED_RULE
        raise StaleInputError(
            f"the answers were judged under the closed-domain rule, whose verdicts rest "
            f"on the retrieval rule the judge applied ({shown}), not {rule}",
            "judge",
            {"retrieval_rule": rule, "closed_domain": True},
        )


def with_rule(ex: Example, rule: RetrievalRule) -> Example:
    """``ex`` with its retrieval verdict given again by ``rule``, from the ids its system
    retrieved and its gold ids, as the judge gives it (:func:`retrieval_correct`)."""
    return replace(
        ex,
        retrieval_correct=retrieval_correct(ex.retrieved or (), ex.gold, rule, failed=ex.errored),
    )


_LITERAL = {True: "true", False: "false", None: "null"}


def _neutral_head(ex: Example, tag: Tag) -> str:
    """A drill-down line's own fields, as the start of a JSON object (the same keys and
    order as the rows of a run): written by hand, since a million dicts encoded one by one
    cost seconds. Strings go through the JSON string encoder."""
    quote = json_string
    return (
        f'{{"system": {quote(ex.system)}, "variant": {quote(ex.variant)}, '
        f'"group_id": {quote(ex.group_id)}, "tag": "{tag}", "query_id": {quote(ex.query_id)}, '
        f'"correct": {_LITERAL[ex.correct]}, '
        f'"retrieval_correct": {_LITERAL[ex.retrieval_correct]}, '
        f'"source": "{source_of(ex, tag)[0]}"'
    )


def _drilldown_rows(
    run: RunDir,
    neutral: list[Path],
    examples: list[Example],
    analysis: Analysis,
    dropped: set[int] | None = None,
) -> Iterator[DrilldownRow | str]:
    """One line per query with its group's tag. Texts are read again from the inputs as
    they stream out, so those of a million queries are never all in memory."""
    tag = analysis.tag

    def row(ex: Example, query: str | None, reference: str | None) -> DrilldownRow:
        return {
            "system": ex.system,
            "variant": ex.variant,
            "group_id": ex.group_id,
            "tag": tag(ex),
            "query_id": ex.query_id,
            "query": query,
            "reference": reference,
            "correct": ex.correct,
            "retrieval_correct": ex.retrieval_correct,
            "source": source_of(ex, tag(ex))[0],
        }

    if neutral:
        # The examples were read from these files in this order, one per non-blank line:
        # each line is embedded as it is, next to its verdicts, without parsing it again.
        # Lines left out of the analysis (``dropped``, by position) have no line here.
        position = iter(examples)
        number = -1
        for path in neutral:
            with path.open(encoding="utf-8") as handle:
                for line in handle:
                    if not line.strip():
                        continue
                    number += 1
                    if dropped and number in dropped:
                        continue
                    ex = next(position, None)
                    if ex is None:
                        return
                    yield _neutral_head(ex, tag(ex)) + ', "record": ' + line.strip() + "}"
        return
    index = read_dataset(run).by_id  # the step's own: read once (run_analysis holds it)
    for ex in examples:
        q = index.get(ex.query_id)
        yield row(ex, q.query if q else None, q.reference.display if q else None)


Engine = Literal["auto", "memory", "sql"]

# From this many rows of the run's answer table on, ``--engine auto`` aggregates it in SQL
# (DuckDB over answers.parquet) rather than in memory: below it the in-memory path is as
# fast and needs no table; above it, memory grows with every answer held as a record
# (about 1 GB per million), while the SQL path's grows with the groups only. The figures
# are the same either way (tests/test_analysis_sql.py).
SQL_MIN_ROWS = 1_000_000


def choose_engine(
    run: RunDir,
    engine: Engine,
    *,
    neutral: list[Path],
    table: Path | None,
    outcome: Outcome,
    rejudge: bool = False,
) -> tuple[Literal["memory", "sql"], list[str]]:
    """Which path analyzes: ``memory`` (the answers as records) or ``sql`` (the answer
    table aggregated by DuckDB), with why not SQL where it was asked for or could not be
    chosen. ``auto`` takes SQL for a table given (``table``) or a run whose answer table has
    :data:`SQL_MIN_ROWS` rows or more, when SQL can give every figure; neutral JSON Lines,
    ``--outcome retrieval`` and another retrieval rule than the judge's (``rejudge``) are
    analyzed in memory."""
    if engine == "memory":
        if table is not None:
            raise UserError("a Parquet answer table is analyzed in SQL: --engine sql or auto")
        return "memory", []
    why: list[str] = []
    if neutral:
        why.append("neutral JSON Lines are read in memory (give a Parquet answer table)")
    if outcome != "answer":
        why.append("--outcome retrieval is analyzed in memory")
    if rejudge:
        why.append(
            "retrieval verdicts by another rule than the judge's are given in memory (the "
            "answer table holds the judge's)"
        )
    if not why and table is None and engine == "auto":
        path = run.answers_table
        if not path.is_file() or answer_sql.table_rows([path]) < SQL_MIN_ROWS:
            return "memory", []
    if why:
        if engine == "sql":
            raise UserError(
                "the SQL engine (--engine sql, engine='sql') cannot analyze these inputs: "
                + "; ".join(why)
            )
        return "memory", why
    return "sql", []


def run_analysis(
    run: RunDir,
    *,
    neutral: list[Path] | None = None,
    rule: RetrievalRule | None = None,
    seed: int = 0,
    system: str | None = None,
    llm_only: str | None = None,
    outcome: Outcome = "answer",
    reference_free: ReferenceFreeOptions | None = None,
    engine: Engine = "auto",
    table: Path | None = None,
    lambda_targets: Sequence[float] | None = None,
    lambda_draws: int = DEFAULT_DRAWS,
    by: str = "analyze",
) -> AnalysisResult:
    """Analyze and write summary.json, summary.md and drilldown.jsonl into the run;
    ``neutral``: files in the neutral format, or folders of them (a folder stands for
    its ``*.jsonl`` files whenever the summary is checked, so a file added to it makes
    the summary stale); ``system`` names the system of neutral files;
    ``reference_free`` (the configuration's section) reads the reference-free scores,
    when the run has them, at its thresholds.
    ``rule``: the retrieval rule. None takes the judge's for judged answers (the rule
    their retrieval verdicts were given by) and ``all_gold`` otherwise; another rule than
    the judge's gives every retrieval verdict again by it, from the ids retrieved and the
    gold ids (no judge is needed), except where the judge applied the closed-domain rule,
    whose verdicts rest on the judge's retrieval rule: judge again with that rule.
    ``engine`` chooses the path (:func:`choose_engine`): in memory, or the run's answer
    table (or ``table``, a Parquet file in its schema) aggregated in SQL; both give the
    same figures. ``lambda_targets``: the lambda study at these shares of queries in gap
    groups, ``lambda_draws`` resamples each (:mod:`ragaudit.analysis.lambda_study`);
    None: no study. The files written are recorded in the run's manifest with what they
    were made from and these options (``by``: the step that asked), so that a reader of
    them later computes them again, with the same options, once an input has changed
    (:func:`current_summary`). Nothing is written where the analysis fails."""
    check_seed(seed)
    if system is not None and not neutral:
        raise UserError(
            f"analyze --system {system}: names the system of --neutral files, and no "
            "--neutral file is given (the run's own systems are all analyzed; "
            "compare --system or gate --system pick some)"
        )
    targets = checked_lambda(lambda_targets, lambda_draws)
    given = neutral or []
    neutral = expand_folders(given)
    if given and not neutral:
        # Never the run's own records in their place: that would be a summary of other
        # systems than the ones asked for.
        folders = ", ".join(str(p) for p in given)
        raise UserError(f"--neutral {folders}: no *.jsonl file in it, so nothing to analyze")
    manifest = open_manifest(run)
    # The inputs as they are before they are read: a change during the analysis leaves
    # the summary stale, never current.
    inputs = manifest.input_digests("summary", neutral) if table is None else None
    options = summary_options(
        neutral=given,
        rule=rule,
        seed=seed,
        system=system,
        llm_only=llm_only,
        outcome=outcome,
        reference_free=reference_free,
        engine=engine,
        lambda_targets=targets,
        lambda_draws=lambda_draws,
    )
    result = _analysis(
        run,
        neutral=neutral,
        rule=rule,
        seed=seed,
        system=system,
        llm_only=llm_only,
        outcome=outcome,
        reference_free=reference_free,
        engine=engine,
        table=table,
        targets=targets,
        lambda_draws=lambda_draws,
    )
    if inputs is not None:
        manifest.record("summary", step=by, options=options, inputs=inputs)
    else:  # a Parquet table of the user's: the run's files were not its inputs
        manifest.forget("summary")
    return result


def summary_options(
    *,
    neutral: Sequence[Path],
    rule: RetrievalRule | None,
    seed: int,
    system: str | None,
    llm_only: str | None,
    outcome: Outcome,
    reference_free: ReferenceFreeOptions | None,
    engine: Engine,
    lambda_targets: Sequence[float] | None,
    lambda_draws: int,
) -> dict[str, Any]:
    """The options a summary was made with, as the manifest records them: what
    :func:`current_summary` gives :func:`run_analysis` to make it again."""
    return {
        "neutral": [str(p.absolute()) for p in neutral],
        "retrieval_rule": rule,
        "seed": seed,
        "system": system,
        "llm_only": llm_only,
        "outcome": outcome,
        "reference_free": (reference_free or ReferenceFreeOptions()).model_dump(mode="json"),
        "engine": engine,
        "lambda_targets": None if lambda_targets is None else list(lambda_targets),
        "lambda_draws": lambda_draws,
    }


def current_summary(run: RunDir, *, by: str) -> Summary:
    """The run's summary as its inputs are now: summary.json where the manifest says it
    was made from the files as they are, else analyzed again (and written) with the
    options recorded for it, which is said once (a :class:`RunNotice`). What a reader of
    the figures (``report``, ``export``) reads instead of summary.json itself, so that
    it never passes on figures older than the records (``by``: that reader's step). A
    summary no step recorded options for (written before the manifest, or edited by hand),
    or whose recorded options cannot be read, is made again with those of the last
    ``analyze`` in provenance.json, else with analyze's defaults. A summary deleted is
    made again as a stale one is, where the manifest recorded it; no summary ever made is
    a one-line error; an input the summary was read from outside the run that is gone is a
    :class:`~ragaudit.errors.StaleInputError` naming ``analyze``."""
    from ragaudit.report.summary_file import read_summary

    manifest = open_manifest(run)
    # A summary deleted after analyze recorded it is made again with its options, as a
    # stale one is; only a run never analyzed has none to make.
    if not run.summary.is_file() and manifest.entry(run.summary) is None:
        raise UserError(f"no summary at {run.summary}: run ragaudit analyze first")
    state = manifest.check("summary")
    manifest.save()
    if state.current:
        try:
            return read_summary(run.summary)
        except UserError as exc:  # current by its digests, yet no summary of this ragaudit
            state = replace(state, current=False, why=str(exc))
    recorded, how = _options_to_recompute(run, state.options, state.why)
    neutral = expand_folders(recorded.neutral)
    gone = next(
        (
            Path(p)
            for p in recorded.neutral
            if not Path(p).exists() or (Path(p).is_dir() and not expand_folders([p]))
        ),
        None,
    )
    if gone is not None:
        emptied = ", a folder that holds no file now" if gone.is_dir() else ", which is gone"
        raise StaleInputError(
            f"{run.summary} was analyzed from {gone}{emptied}",
            "analyze",
            {"neutral": list(recorded.neutral), "system": recorded.system},
        )
    if recorded.llm_only is not None and not neutral:
        judged = sorted(
            path.stem for path in run.judgements_dir.glob("*.jsonl") if path.stat().st_size
        )
        if recorded.llm_only not in judged:
            raise StaleInputError(
                f"{run.summary} is stale ({state.why}) and was analyzed with "
                f"{recorded.llm_only} as the system that answers without retrieval, which "
                f"has no judgements now (judged: {', '.join(judged) or 'none'})",
                "analyze",
            )
    # An error of the records themselves (a duplicate line) says what to fix: it is
    # raised as it is, since analyzing again could not mend it.
    result = run_analysis(
        run,
        neutral=[Path(p) for p in recorded.neutral],
        rule=recorded.retrieval_rule,
        seed=recorded.seed,
        system=recorded.system,
        llm_only=recorded.llm_only,
        outcome=recorded.outcome,
        reference_free=recorded.reference_free,
        engine=recorded.engine,
        lambda_targets=recorded.lambda_targets,
        lambda_draws=recorded.lambda_draws,
        by=f"analyze (for {by})",
    )
    notify(f"{run.summary} was stale ({state.why}): analyzed again {how}")
    return result.summary


class RecordedAnalysis(BaseModel):
    """The options a summary was made with, as the manifest (or provenance.json) holds
    them, checked before any is used: a hand-edited manifest never reaches the analysis
    (nor a summary written from it) with a value ``analyze`` itself would refuse."""

    model_config = ConfigDict(extra="ignore")

    neutral: list[str] = Field(default_factory=list)
    retrieval_rule: RetrievalRule | None = None
    seed: int = Field(0, strict=True)  # analyze refuses true for a seed, as here
    system: str | None = None
    llm_only: str | None = None
    outcome: Outcome = "answer"
    reference_free: ReferenceFreeOptions | None = None
    engine: Engine = "auto"
    lambda_targets: list[float] | None = None
    lambda_draws: int = DEFAULT_DRAWS

    @field_validator("neutral", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value

    @field_validator("lambda_draws", mode="before")
    @classmethod
    def _none_is_default(cls, value: Any) -> Any:
        return DEFAULT_DRAWS if value is None else value

    @model_validator(mode="after")
    def _as_analyze_checks(self) -> RecordedAnalysis:
        if self.retrieval_rule is not None:
            check_rule(self.retrieval_rule)
        check_seed(self.seed)
        checked_lambda(self.lambda_targets, self.lambda_draws)
        return self


def _options_to_recompute(
    run: RunDir, recorded: dict[str, Any] | None, why: str | None
) -> tuple[RecordedAnalysis, str]:
    """The options to analyze a stale summary again with, and how to say where they came
    from: those the manifest recorded for it; where it recorded none (a run from before
    the manifest) or they cannot be read, those of the last ``analyze`` in
    provenance.json; else analyze's defaults. Options of neutral files that the manifest
    does not name cannot be told from provenance (a path relative to wherever analyze
    ran): refused, naming analyze."""
    problems: list[str] = []
    sources: list[tuple[dict[str, Any], str]] = []
    if recorded is not None:
        sources.append((recorded, "with the options it was made with"))
    given = provenance_options(run, "analyze")
    if given:
        sources.append((given, "with the options of the last analyze in provenance.json"))
    for options, how in sources:
        if how.endswith("provenance.json") and options.get("neutral"):
            raise StaleInputError(
                f"{run.summary} was analyzed from --neutral files that the run does not hold, "
                f"and {why}",
                "analyze",
                {"neutral": list(options["neutral"]), "system": options.get("system")},
            )
        try:
            chosen = RecordedAnalysis.model_validate(options)
        except (ValidationError, UserError) as exc:
            problems.append(f"{how[5:]} could not be read: {_first_error(exc)}")
            continue
        return chosen, how + "".join(f" ({p})" for p in problems)
    problems = problems or ["no options were recorded for it"]
    return RecordedAnalysis(), f"with analyze's defaults ({'; '.join(problems)})"


def _first_error(exc: Exception) -> str:
    """One line of a validation error: the first field and what is wrong with it."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "options"
        return f"{where}: {first['msg']}"
    return str(exc)


def _analysis(
    run: RunDir,
    *,
    neutral: list[Path],
    rule: RetrievalRule | None,
    seed: int,
    system: str | None,
    llm_only: str | None,
    outcome: Outcome,
    reference_free: ReferenceFreeOptions | None,
    engine: Engine,
    table: Path | None,
    targets: tuple[float, ...] | None,
    lambda_draws: int,
) -> AnalysisResult:
    """:func:`run_analysis`'s work: the figures, written."""
    judged_rule, judged_warnings = _judge_rule(run)
    asked_rule = rule

    def another_rule(judged: str) -> bool:
        # Another rule than the verdicts' for judged answers: the verdicts are given again
        # by it, in memory (the answer table holds the judge's).
        return (
            asked_rule is not None
            and outcome == "answer"
            and not neutral
            and table is None
            and set(judged.split(" and ")) != {asked_rule}
        )

    rejudge = another_rule(judged_rule)
    if rule is None:
        rule = DEFAULT_RULE if neutral or outcome != "answer" else None
    chosen, _ = choose_engine(
        run, engine, neutral=neutral, table=table, outcome=outcome, rejudge=rejudge
    )
    table_rules: set[str] | None = None
    if chosen == "sql" and table is None:
        table_rules = judged_rules(fresh_answer_table(run))
        if table_rules:
            judged_rule, judged_warnings = _judge_rule(run, table_rules)
            rejudge = another_rule(judged_rule)
            if rejudge:
                chosen, _ = choose_engine(
                    run, engine, neutral=neutral, table=table, outcome=outcome, rejudge=True
                )
    if chosen == "sql":
        strict = engine == "sql" or table is not None  # a table has no records to fall back on
        result = sql_analysis(
            run,
            table=table,
            seed=seed,
            llm_only=llm_only,
            strict=strict,
            lambda_targets=targets,
            lambda_draws=lambda_draws,
            judged=table_rules,
        )
        if result is not None:
            return result
    # Held for the whole step, so that every reader of the dataset in it shares one read.
    _held = read_dataset(run) if not neutral and run.dataset.exists() else None
    undecided: Counter[str] = Counter()
    left_out: dict[tuple[str, str], Counter[str]] = {}
    dropped: set[int] = set()
    # The answers the judge failed on: no verdict, but their retrieval needs none, so they
    # count in every retrieval figure, as compare counts them.
    failed: list[Example] = []
    labels = read_label_figures(run) if not neutral else None
    scan = read_scan(run) if not neutral else None
    documents = read_document_figures(run, seed) if not neutral else None
    asked = ResponseRecord if outcome == "retrieval" else Judgement
    if not neutral and not record_files(run, asked) and (labels or scan or documents):
        # A labelled or generated test set (and its scan) is worth a summary before any
        # system ran. Only then: a run with records whose records cannot be read is
        # refused, as gate and compare refuse it.
        return _write(
            run,
            Summary(
                retrieval_rule=rule or judged_rule,
                systems={},
                labels=labels,
                weight_scan=scan,
                documents=documents,
                cost=cost_figures(run),
            ),
        )
    under: set[str] = set()
    examples = load_examples(
        run,
        neutral,
        rule or DEFAULT_RULE,
        system,
        outcome,
        undecided,
        left_out,
        dropped,
        failed,
        under=under,
    )
    recorded = _rules_of(under)
    if recorded and not neutral and outcome == "answer":
        # The verdicts' own rules, whatever judge.stats.json says.
        judged_rule, judged_warnings = _judge_rule(run, recorded)
        rejudge = another_rule(judged_rule)
        if rejudge and rule is None:
            rule = asked_rule
    if rejudge and rule is not None:
        refuse_closed_domain_under_another_rule(under, rule)
        examples = [with_rule(ex, rule) for ex in examples]
        failed = [with_rule(ex, rule) for ex in failed]
    if not examples:
        what = (
            "judged answers"
            if outcome == "answer"
            else "responses to queries whose gold ids name a document"
        )
        retry = f" ({sum(undecided.values())} judgements failed: rerun ragaudit judge)"
        why = sum((c for c in left_out.values()), Counter())
        listed = ", ".join(f"{n} {k}" for k, n in sorted(why.items()))
        skipped = f" (left out, by what their gold ids say: {listed})"
        raise UserError(
            f"nothing to analyze: the inputs hold no {what}"
            + (retry if undecided else "")
            + (skipped if why else "")
        )
    check_llm_only(llm_only, {ex.system for ex in examples})
    analysis = analyze(examples, llm_only=llm_only, judge_failed=failed)
    systems, warnings = with_left_out(analysis.systems, left_out)
    if neutral or outcome == "retrieval" or rejudge:
        assert rule is not None
        warnings += rule_warnings([*examples, *failed] if rejudge else examples, rule)
    else:
        # The judgements hold the verdicts: their rule is the judge's; where it does not
        # fit the retrievals is counted over the answers as they are now.
        rule = judged_rule
        warnings += judged_warnings
        if _one_rule(judged_rule):
            warnings += rule_warnings([*examples, *failed], judged_rule)
    if not neutral and outcome == "answer":
        warnings += _unjudged(run, {*analysis.systems, *undecided}, partly=True)
        warnings += _unjudged_repeats(run)
    # R that cannot be measured is said once here, not once per comparison.
    note = robustness_note(systems)
    if note is not None:
        warnings.append(note)
    # Whether the retriever found the gold documents needs no judge: the same comparisons
    # on retrieval correctness say which half of the system breaks.
    both: tuple[Outcome, ...] = ("answer", "retrieval")
    by_label, label_comparisons = label_breakdown(examples, seed, judge_failed=failed)
    summary = Summary(
        by_source=source_breakdown(
            examples,
            seed,
            outcomes=both if outcome == "answer" else ("answer",),
            judge_failed=failed,
        ),
        documents=documents,
        outcome=outcome,
        retrieval_rule=rule,
        warnings=warnings,
        systems=systems,
        judge_failed=dict(undecided),
        comparisons=comparisons(
            examples,
            seed=seed,
            outcomes=both if outcome == "answer" else ("answer",),
            judge_failed=failed,
        ),
        retrieval_ranking=ranking_summary([*examples, *failed]),
        by_label=by_label,
        label_comparisons=label_comparisons,
        labels=labels,
        weight_scan=scan,
        lambda_study=None
        if targets is None
        else lambda_study(example_verdicts(examples), targets, draws=lambda_draws, seed=seed),
        reference_free=None
        if neutral or outcome != "answer"
        else read_reference_free(run, examples, reference_free or ReferenceFreeOptions()),
        # The repeats of run --repeat N: how stable each answer is, beside the figures of
        # the first asking above.
        stability=stability(repeat_attempts(run)) if not neutral and outcome == "answer" else {},
        # What the run's LLM requests cost in money (usage.json).
        cost=None if neutral else cost_figures(run),
    )
    result = _write(run, summary)
    # Each line's retrieval verdict and source as the figures read them: none for a
    # system without a retriever (as the SQL path writes them).
    read, _ = without_retriever(examples, failed)
    rows = _drilldown_rows(run, neutral, read, analysis, dropped)
    # A DrilldownRow is a plain dict at run time, which the writer encodes as it is.
    write_jsonl_atomic(run.drilldown, rows)
    return result


def sql_analysis(
    run: RunDir,
    *,
    table: Path | None = None,
    seed: int = 0,
    llm_only: str | None = None,
    strict: bool = False,
    lambda_targets: Sequence[float] | None = None,
    lambda_draws: int = DEFAULT_DRAWS,
    judged: set[str] | None = None,
) -> AnalysisResult | None:
    """The analysis of the run's answer table (fresh: built again where the JSON Lines
    changed since), or of ``table``, aggregated in SQL by DuckDB out of core, its
    retrieval verdicts labelled by the rules its judgements record (``judged``)
    (:mod:`ragaudit.store.answer_sql`); the figures are those of the in-memory path. None
    where a figure is computed in memory only (labels, several sources, reference-free
    scores: :func:`~ragaudit.store.answer_sql.sql_blockers`), or a one-line error with
    why when ``strict``. The lambda study, when asked, resamples the same per-group counts
    the figures come from."""
    paths = [table] if table is not None else [fresh_answer_table(run)]
    run.root.mkdir(parents=True, exist_ok=True)
    spill = run.root / ".duckdb.tmp"
    try:
        with answer_sql.connect(spill) as con:
            blockers = answer_sql.sql_blockers(con, paths)
            if blockers:
                if strict:
                    raise UserError(
                        "the SQL engine (--engine sql, engine='sql') cannot give every "
                        "figure here: " + "; ".join(blockers)
                    )
                return None
            found = answer_sql.aggregate(con, paths)
            if not len(found.groups) or not np.any(found.groups.counts["n"]):
                raise UserError(
                    "nothing to analyze: the inputs hold no judged answers"
                    + (
                        f" ({sum(found.judge_failed.values())} judgements failed: rerun "
                        "ragaudit judge)"
                        if found.judge_failed
                        else ""
                    )
                )
            systems = system_figures(found.groups, found.sides, llm_only)
            check_llm_only(llm_only, systems)
            rule, warnings = _judge_rule(run, judged)
            if _one_rule(rule):
                warnings += answer_sql.rule_fit(con, rule).warnings()
            warnings += _unjudged(run, {*systems, *found.judge_failed}, partly=True)
            warnings += _unjudged_repeats(run)
            note = robustness_note(systems)
            if note is not None:
                warnings.append(note)
            summary = Summary(
                by_source={},
                documents=read_document_figures(run, seed),
                outcome="answer",
                retrieval_rule=rule,
                warnings=warnings,
                systems=systems,
                judge_failed=found.judge_failed,
                comparisons=group_comparisons(
                    found.groups, seed=seed, outcomes=("answer", "retrieval")
                ),
                retrieval_ranking=shape_ranking(found.shapes, found.label_shapes, found.depth),
                by_label={},
                label_comparisons=[],
                labels=read_label_figures(run),
                weight_scan=read_scan(run),
                lambda_study=None
                if lambda_targets is None
                else lambda_study(
                    table_verdicts(found.groups), lambda_targets, draws=lambda_draws, seed=seed
                ),
                reference_free=None,
                stability=stability(repeat_attempts(run)),
                cost=cost_figures(run),
            )
            result = _write(run, summary)
            answer_sql.write_drilldown(con, run.drilldown)
            return result
    finally:
        shutil.rmtree(spill, ignore_errors=True)


def checked_lambda(
    targets: Sequence[float] | None, draws: int = DEFAULT_DRAWS
) -> tuple[float, ...] | None:
    """The lambda study's targets sorted and without repeats (None: no study), or a
    one-line error naming what is wrong: a target that is not a number (NaN) or outside
    [0, 1], no target, fewer than one draw or more than
    :data:`~ragaudit.options.MAX_LAMBDA_DRAWS` (each draw is a resample held in memory and
    computed per target, system and variant: a number beyond it would run for days or
    fail in NumPy, not give a steadier figure)."""
    from ragaudit.options import MAX_LAMBDA_DRAWS

    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise UserError(f"--lambda-draws must be a whole number of at least 1, not {draws!r}")
    if draws > MAX_LAMBDA_DRAWS:
        raise UserError(f"--lambda-draws must be at most {MAX_LAMBDA_DRAWS:,}, not {draws:,}")
    if targets is None:
        return None
    for target in targets:
        if isinstance(target, float) and target != target:
            raise UserError(
                "--lambda-target: nan is not a number (a lambda target is a share of "
                "queries, from 0 to 1)"
            )
    try:
        return check_targets(targets)
    except ValueError as error:
        raise UserError(f"--lambda-target: {error}") from None


def check_llm_only(llm_only: str | None, systems: Iterable[str]) -> None:
    """Refuse ``--llm-only`` naming no system of the answers analyzed: the open-domain
    figures would be computed against nothing and read as if a system were left out."""
    names = sorted(set(systems))
    if llm_only is not None and llm_only not in names:
        raise UserError(
            f"--llm-only {llm_only}: no system of that name among the answers analyzed "
            f"(systems: {', '.join(names) or 'none'})"
        )


def _has_any(run: RunDir, system: str) -> bool:
    """Whether ``system`` has a judgements file with anything in it (a judge stopped
    before its first verdict leaves an empty one, which is no judgement at all)."""
    path = run.judgements(system)
    return path.exists() and path.stat().st_size > 0


def _unjudged(run: RunDir, analyzed: set[str], *, partly: bool = False) -> list[str]:
    """A warning for each system that answered but has no judgements: the figures leave it
    out, which a reader would otherwise not notice. With ``partly``, also for a system
    judged on only some of its answers, or that answered only some of the dataset's
    questions (``run --limit``, a dataset generated or refreshed since): its figures count
    those only."""
    out = [
        f"{path.stem} answered ({path.name}) but has no judgements, so it is not in these "
        f"figures: run ragaudit judge --system {path.stem}"
        for path in sorted(run.responses_dir.glob("*.jsonl"))
        if path.stem not in analyzed and path.stat().st_size and not _has_any(run, path.stem)
    ]
    if not partly:
        return out
    # Read only where some system answered: an answer table analyzed on its own (the
    # analysis benchmark's) has no dataset beside it.
    asked: set[str] | None = None
    for path in sorted(run.responses_dir.glob("*.jsonl")):
        verdicts = run.judgements(path.stem)
        if path.stem not in analyzed or not verdicts.exists():
            continue
        if asked is None:
            asked = set(read_dataset(run).by_id)
        answered = _query_ids(path) & asked
        judged = _query_ids(verdicts) & answered
        if len(judged) < len(answered):
            out.append(
                f"{path.stem}: {len(answered) - len(judged)} of its {len(answered)} answers "
                "have no judgement, so these figures count the other "
                f"{len(judged)}: run ragaudit judge --system {path.stem}"
            )
        if asked and len(answered) < len(asked):
            out.append(
                f"{path.stem} answered {len(answered)} of the dataset's {len(asked)} "
                "questions, so these figures count those only: ask it the rest (ragaudit "
                f"run --system {path.stem} for a system of the configuration, "
                "project.run([the system]) for one of Python)"
            )
    return out


def _query_ids(path: Path) -> set[str]:
    """The query ids of a JSON Lines file of records, read as ids only (the records
    themselves were read and checked by the analysis)."""
    ids: set[str] = set()
    with path.open("rb") as handle:
        for line in handle:
            if line.strip():
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    ids.add(json.loads(line)["query_id"])
    return ids


def _unjudged_repeats(run: RunDir) -> list[str]:
    """A warning for each system whose repeats (``run --repeat N``) are not all judged:
    its stability figures leave those out, which a reader would otherwise not notice."""
    out = []
    for path in record_files(run, RepeatResponse):
        asked = {(r.query_id, r.repeat) for r in read_jsonl(path, RepeatResponse)}
        verdicts = run.repeats_dir / "judgements" / path.name
        judged = (
            {(j.query_id, j.repeat) for j in read_jsonl(verdicts, RepeatJudgement)}
            if verdicts.exists()
            else set()
        )
        missing = len(asked - judged)
        if missing:
            out.append(
                f"{path.stem}: {missing} of its {len(asked)} repeats have no judgement, so "
                f"its stability figures leave them out: run ragaudit judge --system {path.stem}"
            )
    return out


def read_reference_free(
    run: RunDir, examples: list[Example], options: ReferenceFreeOptions
) -> ReferenceFreeFigures | None:
    """The reliability of the run's reference-free scores (scores/) against the judged
    answers, or None when none was scored."""
    records = [r for _, file in read_fresh_scores(run) for r in file]
    return reference_free_figures(examples, records, options.thresholds, options.target_precision)


def read_document_figures(run: RunDir, seed: int = 0) -> DocumentFigures | None:
    """The figures of the run's generation from documents (candidates.jsonl, with the
    critique thresholds it ran with), or None when it has not run."""
    if not run.candidates.exists():
        return None
    # No stats (or unreadable ones): the pass rates use the default thresholds.
    thresholds = read_documents_thresholds(run)
    return generation_figures(read_jsonl(run.candidates, CandidateRecord), thresholds, seed)


def _write(run: RunDir, summary: Summary) -> AnalysisResult:
    """Write summary.json and summary.md."""
    markdown = summary_markdown(summary)
    run.root.mkdir(parents=True, exist_ok=True)
    write_summary(run.summary, summary)
    atomic_write_text(run.summary_md, markdown)
    return AnalysisResult(summary, markdown)


def rule_warnings(examples: Iterable[Example], rule: RetrievalRule) -> list[str]:
    """Where ``rule`` does not fit the retrievals it judged (a top-5 system under
    ``same_set``): one warning per system and reason, with counts."""
    fit = RuleFit(rule)
    for ex in examples:
        if ex.retrieved is not None and not ex.errored:
            fit.add(ex.system, ex.retrieved, ex.gold)
    return fit.warnings()


UNRECORDED_RULE = "not recorded (judged before ragaudit judge recorded its rule)"


def _judge_rule(run: RunDir, judged: set[str] | None = None) -> tuple[str, list[str]]:
    """The retrieval rule the run's verdicts were given by, and its warnings. The rules
    the judgements themselves record (``judged``: each one's ``judged_under``) decide it:
    a judge killed before it wrote judge.stats.json, or an older stats file put back,
    leaves stats that no longer say which rule gave the verdicts. judge.stats.json gives
    the rule where no judgement records one; :data:`UNRECORDED_RULE` where neither says
    (never analyze's own rule, which did not decide them). Judgements given under
    several rules are said in a warning. Where the rule does not fit the retrievals
    (:func:`rule_warnings`) is counted by the caller over the answers as they are now,
    never taken from the stats, which count those the judge saw."""
    stats = read_judge_stats(run.judge_stats) if run.judge_stats.exists() else {}
    stated = sorted({e.retrieval_rule for e in stats.values() if e.retrieval_rule})
    warnings: list[str] = []
    if not judged:
        return (" and ".join(stated) if stated else UNRECORDED_RULE), warnings
    rules = sorted(judged)
    if len(rules) > 1:
        warnings.append(
            f"the judgements were given under several retrieval rules ({', '.join(rules)}): "
            "judge again under one (judge --retrieval-rule), or give analyze --retrieval-rule "
            "to apply one to every answer"
        )
    return " and ".join(rules), warnings


def _one_rule(rule: str) -> bool:
    """Whether ``rule`` (as :func:`_judge_rule` says it) names one retrieval rule: not
    several, nor :data:`UNRECORDED_RULE`."""
    return rule != UNRECORDED_RULE and " and " not in rule


def _rules_of(under: set[str]) -> set[str]:
    """The retrieval rules named by a set of ``judged_under`` lines."""
    return {r for u in under if (r := retrieval_rule_of(u)) is not None}
