"""The ``compare`` step: the run's systems ranked on each of its test sets (SQL-grounded,
generated from documents, imported; or by wording or label), and how far the rankings
agree (:mod:`ragaudit.analysis.ranking`), into compare.json and compare.md."""

from __future__ import annotations

import fnmatch
import json
import math
from collections import Counter

from ragaudit.analysis.metrics import Example
from ragaudit.analysis.ranking import (
    ANSWER_METRICS,
    ExampleScore,
    RankingStudy,
    SetKey,
    example_score,
    rank_sets,
    robustness_unmeasured,
    set_of,
    set_scores,
)
from ragaudit.errors import StaleInputError, UserError, check_seed
from ragaudit.judge.retrieval import DEFAULT_RULE, RetrievalRule, check_rule
from ragaudit.records.io import atomic_write_json, atomic_write_text, read_jsonl
from ragaudit.records.models import FREE_METRICS, FreeScoreRecord, ResponseRecord
from ragaudit.report.compare import CompareFile, compare_markdown, read_compare
from ragaudit.rundir import RunDir
from ragaudit.steps.analyze import load_examples, refuse_closed_domain_under_another_rule
from ragaudit.store.examples import from_responses
from ragaudit.store.manifest import open_manifest
from ragaudit.store.records import (
    read_dataset,
    read_fresh_scores,
    read_run_records,
    record_files,
)


def _selected(
    examples: list[Example], patterns: list[str] | None, metric: str, left_out: dict[str, str]
) -> list[Example]:
    """The examples of the systems matching ``patterns``; none matching is an error that
    says why, naming the matching systems left out for ``metric``."""
    if not patterns:
        return examples

    def matches(system: str) -> bool:
        return any(fnmatch.fnmatchcase(system, p) for p in patterns)

    known = sorted({ex.system for ex in examples})
    for pattern in patterns:
        if not any(fnmatch.fnmatchcase(s, pattern) for s in [*known, *left_out]):
            raise UserError(
                f"--system {pattern}: no system of the run matches it (the run's systems: "
                f"{', '.join(sorted({*known, *left_out}))})"
            )
    chosen = {s for s in known if matches(s)}
    if not chosen:
        excluded = {s: why for s, why in sorted(left_out.items()) if matches(s)}
        if excluded:
            whys = "; ".join(f"{s} {why}" for s, why in excluded.items())
            raise UserError(
                f"every system matching {', '.join(patterns)} is left out of {metric}: {whys}"
            )
        raise UserError(
            f"no system matches {', '.join(patterns)} (the run's systems: {', '.join(known)})"
        )
    return [ex for ex in examples if ex.system in chosen]


def _answering(run: RunDir) -> set[str]:
    """Systems that gave at least one answer (retrieval-only ones give none)."""
    out: set[str] = set()
    for path in record_files(run, ResponseRecord):
        answers = (r for r in read_jsonl(path, ResponseRecord) if r.response is not None)
        found = next((r.system for r in answers), None)
        if found is not None:
            out.add(found)
    return out


def _free_examples(run: RunDir, metric: str) -> tuple[list[Example], dict[tuple[str, str], float]]:
    """One example per scored response, and its reference-free score by (system, query)."""
    files = record_files(run, FreeScoreRecord)
    if not files:
        raise UserError(
            f"no reference-free scores in {run.scores_dir}: run ragaudit judge --reference-free"
        )
    queries = read_dataset(run).by_id
    values: dict[tuple[str, str], float] = {}
    examples = []
    for _, records in read_fresh_scores(run, files):
        for record in records:
            score = record.metrics.get(metric)  # type: ignore[call-overload]  # checked name
            q = queries.get(record.query_id)
            if score is None or score.score is None or q is None:
                continue
            values[record.system, record.query_id] = score.score
            examples.append(
                Example(
                    query_id=q.query_id,
                    group_id=q.group_id,
                    variant=q.variant,
                    correct=False,
                    system=record.system,
                    label=q.label,
                    origin=q.source,
                )
            )
    return examples, values


def compare_examples(
    run: RunDir, metric: str, rule: RetrievalRule = DEFAULT_RULE
) -> tuple[list[Example], dict[str, str], ExampleScore]:
    """The examples ``metric`` is computed from, the systems left out with why, and how an
    example scores: retrieval metrics from the responses (no judging needed), accuracy
    and R from the judgements, a reference-free metric from scores/."""
    left_out: dict[str, str] = {}
    if metric in FREE_METRICS:
        examples, values = _free_examples(run, metric)

        def free(ex: Example) -> float | None:
            return values.get((ex.system, ex.query_id))

        return examples, left_out, free
    try:
        score = example_score(metric)
    except ValueError as err:
        raise UserError(str(err)) from None
    if metric in ANSWER_METRICS:
        try:
            under: set[str] = set()
            examples = load_examples(run, [], rule, outcome="answer", under=under)
            refuse_closed_domain_under_another_rule(under, rule)
        except StaleInputError:
            raise
        except UserError as err:
            if "no judgements in" not in str(err):
                raise
            raise UserError(
                f"no judgements in {run.judgements_dir}: {metric} needs them (run "
                "ragaudit judge), or rank retrieval with recall@K, mrr, ndcg@K or "
                "accuracy_retrieval, which need none"
            ) from None
        answering = _answering(run)
        for system in sorted({ex.system for ex in examples} - answering):
            left_out[system] = (
                "gives no answers (retrieval only)"
                if run.responses(system).exists()
                else f"has judgements but no responses ({run.responses(system)} is missing)"
            )
        return [ex for ex in examples if ex.system in answering], left_out, score
    if not run.dataset.exists():
        raise UserError(f"no dataset at {run.dataset}: run ragaudit generate first")
    queries = read_dataset(run).by_id
    files = record_files(run, ResponseRecord)
    if not files:
        raise UserError(
            f"nothing to compare: no responses in {run.responses_dir} (run ragaudit run)"
        )
    examples = []
    for _, responses in read_run_records(run, ResponseRecord, files):
        found = list(from_responses(queries, responses, rule))
        if found and not any(ex.retrieved for ex in found):
            left_out[found[0].system] = "retrieves nothing"
            continue
        examples.extend(found)
    return examples, left_out, score


def run_compare(
    run: RunDir,
    *,
    metric: str = "accuracy",
    by: SetKey = "source",
    reference: str | None = None,
    systems: list[str] | None = None,
    alpha: float = 0.05,
    n_boot: int = 1000,
    seed: int = 0,
    rule: RetrievalRule = DEFAULT_RULE,
) -> tuple[RankingStudy, dict[str, str]]:
    """Rank the run's systems (those matching ``systems``, shell patterns) on ``metric``
    in each test set, compare the rankings with the reference set's, and write the study
    into compare.json (replacing an earlier one of the same metric and split) and
    compare.md. Returns the study and the systems left out, with why."""
    if not (math.isfinite(alpha) and 0 < alpha <= 0.5):
        raise UserError(f"alpha must be above 0 and at most 0.5, not {alpha}")
    if n_boot < 100:
        raise UserError(f"resamples must be at least 100, not {n_boot}")
    check_seed(seed)
    if by not in ("source", "variant", "label"):
        raise UserError(f"by must be source, variant or label, not {by!r}")
    check_rule(rule)
    manifest = open_manifest(run)
    inputs = manifest.input_digests("compare")  # before they are read
    examples, left_out, score = compare_examples(run, metric, rule)
    if not examples and left_out:
        whys = "; ".join(f"{s} {why}" for s, why in sorted(left_out.items()))
        hint = (
            " (rank retrieval with recall@K, mrr, ndcg@K or accuracy_retrieval)"
            if metric in ANSWER_METRICS
            else ""
        )
        raise UserError(f"every system of the run is left out of {metric}: {whys}{hint}")
    examples = _selected(examples, systems, metric, left_out)
    scores = set_scores(examples, score, by=by, robustness=metric == "robustness")
    unmeasured = robustness_unmeasured(scores) if metric == "robustness" else []
    if unmeasured:
        raise UserError(
            f"robustness cannot be measured on {', '.join(unmeasured)} (by {by}): one query "
            "per group there (no group outside the gaps has two), so none can be non-robust "
            "and R is 1.00 by construction; rank on accuracy, or split the sets so that "
            "their groups hold several wordings (--by source)"
        )
    if len(scores) < 2:
        found = ", ".join(f"{n} ({c})" for n, c in Counter(_names(examples, by)).items())
        raise UserError(
            f"compare needs two test sets with scored queries; by {by}, the run has "
            f"{found or 'none'}"
        )
    try:
        study = rank_sets(
            scores,
            metric=metric,
            by=by,
            reference=reference,
            alpha=alpha,
            n_boot=n_boot,
            n_perm=n_boot,
            seed=seed,
        )
    except ValueError as err:
        raise UserError(str(err)) from None
    study = study.model_copy(update={"left_out": dict(left_out)})
    # The studies kept from before are of the records as they were then: dropped where the
    # records have moved since, so that compare.json holds studies of these records only.
    kept = [s for s in read_compare(run.compare) if (s.metric, s.by) != (metric, by)]
    if kept and not manifest.check("compare").current:
        kept = []
    studies = [*kept, study]
    atomic_write_json(run.compare, json.loads(CompareFile(studies=studies).model_dump_json()))
    atomic_write_text(run.compare_md, compare_markdown(studies))
    # What a study's own fields do not say, for the command that makes it again.
    manifest.record("compare", inputs=inputs, options={"systems": systems, "rule": rule})
    return study, left_out


def _names(examples: list[Example], by: SetKey) -> list[str]:
    return [name for ex in examples if (name := set_of(ex, by)) is not None]


__all__ = ["compare_examples", "run_compare"]
