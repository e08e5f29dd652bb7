"""The ``analyze`` step: judged examples -> summary.json, summary.md and a per-group
drill-down, with paired comparisons between variants and between systems."""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from json.encoder import encode_basestring as json_string
from pathlib import Path
from typing import Any, Literal

from ragaudit.analysis import Example, SystemSummary, analyze
from ragaudit.analysis.metrics import (
    SOURCES,
    Tag,
    VariantMetrics,
    gold_state,
    retrieval_count,
    source_of,
)
from ragaudit.analysis.retrieval_metrics import ranking_columns, ranking_summary
from ragaudit.analysis.significance import Comparison, PairedCounts, compare_many, compare_sets
from ragaudit.errors import UserError
from ragaudit.judge.retrieval import DEFAULT_RULE, RetrievalRule, RuleFit
from ragaudit.records.io import (
    atomic_write_json,
    atomic_write_text,
    iter_jsonl_dicts,
    read_jsonl,
    write_jsonl_atomic,
)
from ragaudit.records.models import Judgement, QueryRecord, ResponseRecord
from ragaudit.rundir import RunDir
from ragaudit.steps.inputs import from_records, from_responses, read_neutral

Outcome = Literal["answer", "retrieval"]

METRIC_NAMES = (
    "accuracy",
    "robustness",
    "accuracy_retrieval",
    "robustness_retrieval",
    "gap_fraction",
    "acc_retrieval_db",
    "accuracy_balanced",
)


def show(value: object) -> str:
    """A figure for a table: proportions with their interval, plain numbers to 2 decimals."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


@dataclass
class AnalysisResult:
    """Everything ``analyze`` computed."""

    summaries: dict[str, SystemSummary]
    comparisons: list[dict[str, Any]]
    markdown: str
    ranking: dict[str, dict[str, Any]] = field(default_factory=dict)
    undecided: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _group_counts(
    examples: Iterable[Example], retrieval: bool = False
) -> dict[str, tuple[int, int]]:
    """Per group: (correct, total) of the answers, or of the retrievals (``retrieval``;
    examples without a retrieval verdict are left out)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    if retrieval:
        for ex in examples:
            if ex.retrieval_correct is not None:
                entry = counts[ex.group_id]
                entry[0] += ex.retrieval_correct
                entry[1] += 1
    else:
        for ex in examples:
            entry = counts[ex.group_id]
            entry[0] += ex.correct
            entry[1] += 1
    return {g: (c, n) for g, (c, n) in counts.items()}


def comparisons(
    examples: list[Example], seed: int = 0, *, outcomes: tuple[Outcome, ...] = ("answer",)
) -> list[dict[str, Any]]:
    """Every pair of variants within a system, and every pair of systems within a variant,
    compared on accuracy and R, paired by semantic group, for each outcome: the answer's
    correctness, and the retrieval's (metrics ``accuracy_retrieval`` and
    ``robustness_retrieval``, verdicts saying "retrieval"). Outcomes over the same groups
    share their resamples. The answer comparisons come first, then the retrieval ones."""
    by: dict[tuple[str, str], list[Example]] = defaultdict(list)
    failed_sides: set[tuple[str, str]] = set()
    for ex in examples:
        side = (ex.system, ex.variant)
        by[side].append(ex)
        if ex.errored:
            failed_sides.add(side)
    systems = sorted({s for s, _ in by})
    variants = sorted({v for _, v in by})
    errored = {side: side in failed_sides for side in by}
    pairs = [((s, v1), (s, v2)) for s in systems for v1, v2 in itertools.combinations(variants, 2)]
    pairs += [((s1, v), (s2, v)) for v in variants for s1, s2 in itertools.combinations(systems, 2)]
    out: dict[Outcome, list[dict[str, Any]]] = {outcome: [] for outcome in outcomes}
    for left, right in pairs:
        if left not in by or right not in by:
            continue
        counted = {
            outcome: PairedCounts.from_dicts(
                _group_counts(by[left], outcome == "retrieval"),
                _group_counts(by[right], outcome == "retrieval"),
            )
            for outcome in outcomes
        }
        counted = {o: c for o, c in counted.items() if o == "answer" or c.groups}
        shared = [c.groups for c in counted.values()]
        items = [(o, m, c) for o, c in counted.items() for m in ("accuracy", "robustness")]
        if all(groups == shared[0] for groups in shared):
            results = compare_sets([(m, c) for _, m, c in items], seed=seed)
        else:
            results = [r for _, m, c in items for r in compare_many(c, (m,), seed=seed)]
        for (outcome, _, counts), result in zip(items, results, strict=True):
            out[outcome].append(
                _comparison(left, right, counts, result, outcome, by, systems, variants, errored)
            )
    return [row for outcome in outcomes for row in out[outcome]]


def _comparison(
    left: tuple[str, str],
    right: tuple[str, str],
    counts: PairedCounts,
    result: Comparison,
    outcome: Outcome,
    by: dict[tuple[str, str], list[Example]],
    systems: list[str],
    variants: list[str],
    errored: dict[tuple[str, str], bool],
) -> dict[str, Any]:
    """One comparison as summary.json holds it: figures, both sides, and the verdict."""
    paired = set(counts.groups)
    per_group: list[Counter[str]] = [Counter(), Counter()]
    for i, side in enumerate((left, right)):
        if errored[side]:
            per_group[i] = Counter(
                ex.group_id
                for ex in by[side]
                if ex.errored
                and ex.group_id in paired
                and (outcome == "answer" or ex.retrieval_correct is not None)
            )
    errors = [sum(c.values()) for c in per_group]
    same_system = left[0] == right[0]
    name_a = left[1] if same_system else left[0]
    name_b = right[1] if same_system else right[0]
    # Say which system (or which wording) a verdict is about when there are several.
    context = ""
    if same_system and len(systems) > 1:
        context = f"{left[0]}: "
    elif not same_system and len(variants) > 1:
        context = f"{left[1]} queries: "
    figures = result.as_dict()
    if outcome == "retrieval":
        context = f"{context[:-2]}, retrieval: " if context else "retrieval: "
        figures["metric"] = f"{result.metric}_retrieval"
    # Each side says what it is and its value; the difference is a - b.
    figures["a"] = {"system": left[0], "variant": left[1], "value": result.a, "errors": errors[0]}
    figures["b"] = {"system": right[0], "variant": right[1], "value": result.b, "errors": errors[1]}
    verdict = result.verdict(name_a, name_b) + _errors_note(
        result, counts, (name_a, name_b), per_group
    )
    if context and verdict.startswith("No "):  # mid-sentence now
        verdict = "no" + verdict[2:]
    return {**figures, "verdict": context + verdict}


def _errors_note(
    result: Comparison,
    counts: PairedCounts,
    names: tuple[str, str],
    per_group: list[Counter[str]],
) -> str:
    """What a verdict owes to errors (timeouts, HTTP errors, counted as wrong answers).
    A significant difference is said to be possibly driven by errors when the worse side,
    had every query it failed on been answered correctly, would be at least as good as the
    other side. Otherwise the error counts are given. Nothing when neither side failed."""
    errors = [sum(c.values()) for c in per_group]
    if not any(errors):
        return ""
    counted = f"errors: {names[0]} {errors[0]}, {names[1]} {errors[1]}"
    if result.significant() and result.difference is not None:
        worse = 1 if result.difference > 0 else 0
        better_value = result.a if worse == 1 else result.b
        index = {g: i for i, g in enumerate(counts.groups)}
        correct = (counts.correct_b if worse == 1 else counts.correct_a).copy()
        total = counts.total_b if worse == 1 else counts.total_a
        for group, n in per_group[worse].items():
            i = index[group]
            correct[i] = min(int(total[i]), int(correct[i]) + n)
        if result.metric == "robustness":
            denominator = int(total[correct > 0].sum())
        else:
            denominator = int(total.sum())
        repaired = int(correct.sum()) / denominator if denominator else None
        if repaired is not None and better_value is not None and repaired >= better_value:
            return (
                f" Errors, not answers, may drive this verdict: {names[worse]} failed on "
                f"{errors[worse]} queries (timeouts, HTTP errors); answered correctly, they "
                f"would give it {result.metric} {repaired:.2f} against {better_value:.2f} "
                f"({counted})."
            )
    return f" ({counted})"


def retrieval_queries(m: VariantMetrics) -> str:
    """How many queries the retrieval figures count, and those left out and why."""
    n = m.accuracy_retrieval.n if m.accuracy_retrieval is not None else 0
    return retrieval_count(n, m.retrieval_left_out)


def markdown_table(summaries: dict[str, SystemSummary]) -> str:
    """One row per system and variant, every metric with its 95% interval."""
    head = (
        "| system | variant | queries | groups | errors | retrieval queries | "
        + " | ".join(METRIC_NAMES)
        + " |"
    )
    lines = [head, "|" + "---|" * (6 + len(METRIC_NAMES))]
    for system, summary in summaries.items():
        for variant, m in summary.variants.items():
            cells = [show(getattr(m, name)) for name in METRIC_NAMES]
            lines.append(
                f"| {system} | {variant} | {m.n_queries} | {m.n_groups} | {m.n_errors} | "
                f"{retrieval_queries(m)} | " + " | ".join(cells) + " |"
            )
        holes = summary.knowledge_base_holes
        lines.append(
            f"| {system} | all variants | | | | | acc_retrieval_db (gap in every variant): "
            f"{summary.acc_retrieval_db}"
            + (f"; groups no document answers: {holes}" if holes else "")
            + " |"
            + " |" * (len(METRIC_NAMES) - 1)
        )
    return "\n".join(lines) + "\n"


BLAME_HEADERS = (
    "system",
    "variant",
    "rule",
    "correct",
    "knowledge base",
    "retriever",
    "language model",
    "holes answered",
)


def blame_rows(summaries: dict[str, SystemSummary]) -> list[list[str]]:
    """Where the answers go wrong, per system and variant: the rule that decided (evidence:
    gold ids that say which documents state the answer; convention: a gap group is the
    knowledge base's), each source's share of the queries, and the correct answers to
    questions no document answers (from the model's own knowledge, or a leak)."""
    rows = []
    for system, summary in summaries.items():
        for variant, m in summary.variants.items():
            b = m.blame
            total = sum(b.counts.values())
            shares = [f"{b.counts[part] / total:.2f}" if total else "n/a" for part in SOURCES]
            holes = str(b.holes_answered) if b.by_evidence else "n/a"
            rows.append([system, variant, b.rule, *shares, holes])
    return rows


def blame_table(summaries: dict[str, SystemSummary]) -> str:
    """:func:`blame_rows` as a markdown table."""
    lines = ["| " + " | ".join(BLAME_HEADERS) + " |", "|" + "---|" * len(BLAME_HEADERS)]
    lines += ["| " + " | ".join(row) + " |" for row in blame_rows(summaries)]
    return "\n".join(lines) + "\n"


def _record_files(run: RunDir, kind: str) -> list[Path]:
    folder = (run.judgements("x") if kind == "judgements" else run.responses("x")).parent
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        hint = "ragaudit judge, or pass --neutral FILE" if kind == "judgements" else "ragaudit run"
        raise UserError(f"nothing to analyze: no {kind} in {folder} (run {hint})")
    return files


def _retrieved_ids(run: RunDir, system: str) -> dict[str, tuple[str, ...]] | None:
    """Query id -> retrieved ids from the system's responses, if ragaudit ran it."""
    path = run.responses(system)
    if not path.exists():
        return None
    out = {}
    for _, row in iter_jsonl_dicts(path):
        out[str(row["query_id"])] = tuple(str(item["id"]) for item in row.get("retrieved") or [])
    return out


def load_examples(
    run: RunDir,
    neutral: list[Path],
    rule: RetrievalRule,
    system: str | None = None,
    outcome: Outcome = "answer",
    undecided: Counter[str] | None = None,
    left_out: dict[tuple[str, str], Counter[str]] | None = None,
    dropped: set[int] | None = None,
) -> list[Example]:
    """Examples from neutral files, or from the run's dataset and its judgements (outcome
    ``answer``) or responses (outcome ``retrieval``: retrieval correctness is analyzed as
    if it were the answer's). Judgements the judge failed to give are counted per system
    in ``undecided`` and left out; with outcome ``retrieval``, the queries without a
    retrieval verdict are counted per system and variant in ``left_out``, by why, and
    their positions among the neutral lines added to ``dropped``."""
    left_out = left_out if left_out is not None else {}
    dropped = dropped if dropped is not None else set()
    if neutral:
        examples = [ex for path in neutral for ex in read_neutral(path, system=system, rule=rule)]
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
    files = _record_files(run, "judgements" if outcome == "answer" else "responses")
    queries = list(read_jsonl(run.dataset, QueryRecord))
    examples: list[Example] = []
    for path in files:
        if outcome == "retrieval":
            examples.extend(
                from_responses(iter(queries), read_jsonl(path, ResponseRecord), rule, left_out)
            )
            continue
        judgements = list(read_jsonl(path, Judgement))
        retrieved = _retrieved_ids(run, judgements[0].system) if judgements else None
        examples.extend(from_records(iter(queries), iter(judgements), retrieved, undecided))
    return examples


def ranking_table(ranking: dict[str, dict[str, Any]]) -> str:
    """Recall@k, MRR and nDCG per system and variant, as a markdown table."""
    if not ranking:
        return ""
    names = ranking_columns(ranking)
    lines = [
        "| system | variant | queries | " + " | ".join(names) + " |",
        "|" + "---|" * (3 + len(names)),
    ]
    for system, entry in ranking.items():
        for variant, metrics in entry["variants"].items():
            n = next(iter(metrics.values()))["n"]
            cells = [show_mean(metrics[name]) if name in metrics else "" for name in names]
            lines.append(f"| {system} | {variant} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def show_mean(entry: dict[str, Any]) -> str:
    """A mean with its interval, as in the tables."""
    if entry["value"] is None:
        return "n/a"
    low, high = entry["ci95"]
    return f"{entry['value']:.2f} [{low:.2f}, {high:.2f}]"


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
    summaries: dict[str, SystemSummary],
    system: str | None,
    dropped: set[int] | None = None,
) -> Iterator[dict[str, Any] | str]:
    """One line per query with its group's tag. Texts are read again from the inputs as
    they stream out, so those of a million queries are never all in memory."""

    def tag(ex: Example) -> Tag:
        return summaries[ex.system].variants[ex.variant].tags[ex.group_id]

    def row(ex: Example, texts: dict[str, Any]) -> dict[str, Any]:
        return {
            "system": ex.system,
            "variant": ex.variant,
            "group_id": ex.group_id,
            "tag": tag(ex),
            "query_id": ex.query_id,
            **texts,
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
    texts = {
        q.query_id: (q.query, q.reference.display) for q in read_jsonl(run.dataset, QueryRecord)
    }
    for ex in examples:
        query, reference = texts.get(ex.query_id, (None, None))
        yield row(ex, {"query": query, "reference": reference})


def run_analysis(
    run: RunDir,
    *,
    neutral: list[Path] | None = None,
    rule: RetrievalRule = DEFAULT_RULE,
    seed: int = 0,
    system: str | None = None,
    llm_only: str | None = None,
    outcome: Outcome = "answer",
) -> AnalysisResult:
    """Analyze and write summary.json, summary.md and drilldown.jsonl into the run;
    ``system`` names the system of neutral files."""
    neutral = neutral or []
    undecided: Counter[str] = Counter()
    left_out: dict[tuple[str, str], Counter[str]] = {}
    dropped: set[int] = set()
    examples = load_examples(run, neutral, rule, system, outcome, undecided, left_out, dropped)
    if not examples:
        what = (
            "judged answers"
            if outcome == "answer"
            else "responses to queries whose gold ids name a document"
        )
        failed = f" ({sum(undecided.values())} judgements failed: rerun ragaudit judge)"
        why = sum((c for c in left_out.values()), Counter())
        listed = ", ".join(f"{n} {k}" for k, n in sorted(why.items()))
        skipped = f" (left out, by what their gold ids say: {listed})"
        raise UserError(
            f"nothing to analyze: the inputs hold no {what}"
            + (failed if undecided else "")
            + (skipped if why else "")
        )
    summaries = analyze(examples, llm_only=llm_only)
    warnings: list[str] = []
    for (name, variant), counts in sorted(left_out.items()):
        metrics = summaries.get(name, None)
        if metrics is not None and variant in metrics.variants:
            merged = Counter(metrics.variants[variant].retrieval_left_out) + counts
            metrics.variants[variant].retrieval_left_out = dict(sorted(merged.items()))
        else:
            listed = ", ".join(f"{n} {why}" for why, n in sorted(counts.items()))
            warnings.append(
                f"{name} / {variant}: no query has gold ids that name a document, so it has "
                f"no retrieval figures (left out: {listed})"
            )
    if neutral or outcome == "retrieval":
        warnings += rule_warnings(examples, rule)
    else:
        # The judgements hold the verdicts: their rule, and its warnings, are the judge's.
        rule, judged_warnings = _judge_rule(run)
        warnings += judged_warnings
    # Whether the retriever found the gold documents needs no judge: the same comparisons
    # on retrieval correctness say which half of the system breaks.
    both: tuple[Outcome, ...] = ("answer", "retrieval")
    compared = comparisons(
        examples, seed=seed, outcomes=both if outcome == "answer" else ("answer",)
    )
    ranking = ranking_summary(examples)
    table = markdown_table(summaries)
    run.root.mkdir(parents=True, exist_ok=True)
    atomic_write_json(
        run.summary,
        {
            "outcome": outcome,
            "retrieval_rule": rule,
            "warnings": warnings,
            "systems": {name: s.as_dict() for name, s in summaries.items()},
            "judge_failed": dict(undecided),
            "comparisons": compared,
            "retrieval_ranking": ranking,
        },
    )
    verdicts = "".join(f"- {c['verdict']}\n" for c in compared)
    ranked = ranking_table(ranking)
    atomic_write_text(
        run.summary_md,
        (f"Outcome analyzed: retrieval correctness ({rule})\n\n" if outcome == "retrieval" else "")
        + "".join(f"Warning: {w}\n\n" for w in warnings)
        + table
        + "\nWhere the answers go wrong (shares of the queries)\n\n"
        + blame_table(summaries)
        + _undecided_note(undecided)
        + ("\n" + verdicts if verdicts else "")
        + ("\nRetrieval ranking (mean [95% CI])\n\n" + ranked if ranked else ""),
    )
    write_jsonl_atomic(
        run.drilldown, _drilldown_rows(run, neutral, examples, summaries, system, dropped)
    )
    return AnalysisResult(summaries, compared, table, ranking, dict(undecided), warnings)


def rule_warnings(examples: Iterable[Example], rule: RetrievalRule) -> list[str]:
    """Where ``rule`` does not fit the retrievals it judged (a top-5 system under
    ``same_set``): one warning per system and reason, with counts."""
    fit = RuleFit(rule)
    for ex in examples:
        if ex.retrieved is not None and not ex.errored:
            fit.add(ex.system, ex.retrieved, ex.gold)
    return fit.warnings()


UNRECORDED_RULE = "not recorded (judged before ragaudit judge recorded its rule)"


def _judge_rule(run: RunDir) -> tuple[str, list[str]]:
    """The retrieval rule the judge decided the run's verdicts by, and its warnings, from
    judge.stats.json; :data:`UNRECORDED_RULE` where an older judge did not record it
    (never analyze's own rule, which did not decide them)."""
    path = run.judge_stats
    if not path.exists():
        return UNRECORDED_RULE, []
    try:
        stats = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    rules = sorted({e["retrieval_rule"] for e in stats.values() if e.get("retrieval_rule")})
    warnings = [w for e in stats.values() for w in e.get("rule_warnings") or []]
    return (" and ".join(rules) if rules else UNRECORDED_RULE), warnings


def _undecided_note(undecided: Counter[str]) -> str:
    """What the figures leave out because the judge could not decide, or nothing."""
    if not undecided:
        return ""
    parts = ", ".join(f"{system} {n}" for system, n in sorted(undecided.items()))
    return f"\nLeft out, the LLM judge failed on them (rerun ragaudit judge to retry): {parts}\n"


def default_neutral(paths: list[Path]) -> list[Path]:
    """Expand folders into their ``*.jsonl`` files."""
    out: list[Path] = []
    for p in paths:
        out.extend(sorted(p.glob("*.jsonl")) if p.is_dir() else [p])
    return out
