"""The ``analyze`` step: judged examples -> summary.json, summary.md and a per-group
drill-down, with paired comparisons between variants and between systems."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragaudit.analysis import Example, SystemSummary, analyze
from ragaudit.analysis.significance import PairedCounts, compare_many
from ragaudit.errors import UserError
from ragaudit.judge.retrieval import RetrievalRule
from ragaudit.pipeline.inputs import from_records, read_neutral
from ragaudit.records.io import (
    atomic_write_json,
    atomic_write_text,
    read_jsonl,
    write_jsonl_atomic,
)
from ragaudit.records.models import Judgement, QueryRecord
from ragaudit.rundir import RunDir

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


def _group_counts(examples: Iterable[Example]) -> dict[str, tuple[int, int]]:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for ex in examples:
        counts[ex.group_id][0] += ex.correct
        counts[ex.group_id][1] += 1
    return {g: (c, n) for g, (c, n) in counts.items()}


def comparisons(examples: list[Example], seed: int = 0) -> list[dict[str, Any]]:
    """Every pair of variants within a system, and every pair of systems within a variant,
    compared on accuracy and R, paired by semantic group."""
    by: dict[tuple[str, str], list[Example]] = defaultdict(list)
    for ex in examples:
        by[(ex.system, ex.variant)].append(ex)
    systems = sorted({s for s, _ in by})
    variants = sorted({v for _, v in by})
    pairs = [((s, v1), (s, v2)) for s in systems for v1, v2 in itertools.combinations(variants, 2)]
    pairs += [((s1, v), (s2, v)) for v in variants for s1, s2 in itertools.combinations(systems, 2)]
    out = []
    for left, right in pairs:
        if left not in by or right not in by:
            continue
        counts = PairedCounts.from_dicts(_group_counts(by[left]), _group_counts(by[right]))
        name_a = left[1] if left[0] == right[0] else left[0]
        name_b = right[1] if left[0] == right[0] else right[0]
        for result in compare_many(counts, ("accuracy", "robustness"), seed=seed):
            out.append(
                {
                    "a": {"system": left[0], "variant": left[1]},
                    "b": {"system": right[0], "variant": right[1]},
                    **result.as_dict(),
                    "verdict": result.verdict(name_a, name_b),
                }
            )
    return out


def markdown_table(summaries: dict[str, SystemSummary]) -> str:
    """One row per system and variant, every metric with its 95% interval."""
    head = "| system | variant | queries | groups | " + " | ".join(METRIC_NAMES) + " |"
    lines = [head, "|" + "---|" * (4 + len(METRIC_NAMES))]
    for system, summary in summaries.items():
        for variant, m in summary.variants.items():
            cells = [show(getattr(m, name)) for name in METRIC_NAMES]
            lines.append(
                f"| {system} | {variant} | {m.n_queries} | {m.n_groups} | "
                + " | ".join(cells)
                + " |"
            )
        lines.append(
            f"| {system} | all variants | | | acc_retrieval_db (gap in every variant): "
            f"{summary.acc_retrieval_db} |" + " |" * (len(METRIC_NAMES) - 1)
        )
    return "\n".join(lines) + "\n"


def _judgement_files(run: RunDir) -> list[Path]:
    folder = run.judgements("x").parent
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise UserError(
            f"nothing to analyze: no judgements in {folder} "
            "(run ragaudit judge, or pass --neutral FILE)"
        )
    return files


def load_examples(
    run: RunDir, neutral: list[Path], rule: RetrievalRule, system: str | None = None
) -> list[Example]:
    """Examples from neutral files, or from the run's dataset and judgements."""
    if neutral:
        return [ex for path in neutral for ex in read_neutral(path, system=system, rule=rule)]
    files = _judgement_files(run)  # before the dataset: say what is missing first
    queries = list(read_jsonl(run.dataset, QueryRecord))
    examples: list[Example] = []
    for path in files:
        examples.extend(from_records(iter(queries), read_jsonl(path, Judgement)))
    return examples


def _drilldown_rows(
    run: RunDir,
    neutral: list[Path],
    examples: list[Example],
    summaries: dict[str, SystemSummary],
    system: str | None,
) -> Iterator[dict[str, Any] | str]:
    """One line per query with its group's tag. Texts are read again from the inputs as
    they stream out, so those of a million queries are never all in memory."""

    def row(ex: Example, texts: dict[str, Any]) -> dict[str, Any]:
        return {
            "system": ex.system,
            "variant": ex.variant,
            "group_id": ex.group_id,
            "tag": summaries[ex.system].variants[ex.variant].tags[ex.group_id],
            "query_id": ex.query_id,
            **texts,
            "correct": ex.correct,
            "retrieval_correct": ex.retrieval_correct,
        }

    if neutral:
        # The examples were read from these files in this order, one per non-blank line:
        # each line is embedded as it is, next to its verdicts, without parsing it again.
        position = iter(examples)
        for path in neutral:
            with path.open(encoding="utf-8") as handle:
                for line in handle:
                    if not line.strip():
                        continue
                    ex = next(position, None)
                    if ex is None:
                        return
                    head = json.dumps(row(ex, {}), ensure_ascii=False)[:-1]
                    yield head + ', "record": ' + line.strip() + "}"
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
    rule: RetrievalRule = "same_set",
    seed: int = 0,
    system: str | None = None,
    llm_only: str | None = None,
) -> AnalysisResult:
    """Analyze and write summary.json, summary.md and drilldown.jsonl into the run;
    ``system`` names the system of neutral files."""
    neutral = neutral or []
    examples = load_examples(run, neutral, rule, system)
    if not examples:
        raise UserError("nothing to analyze: the inputs hold no judged answers")
    summaries = analyze(examples, llm_only=llm_only)
    compared = comparisons(examples, seed=seed)
    table = markdown_table(summaries)
    run.root.mkdir(parents=True, exist_ok=True)
    atomic_write_json(
        run.summary,
        {
            "systems": {name: s.as_dict() for name, s in summaries.items()},
            "comparisons": compared,
        },
    )
    verdicts = "".join(f"- {c['verdict']}\n" for c in compared)
    atomic_write_text(run.root / "summary.md", table + ("\n" + verdicts if verdicts else ""))
    write_jsonl_atomic(run.drilldown, _drilldown_rows(run, neutral, examples, summaries, system))
    return AnalysisResult(summaries, compared, table)


def default_neutral(paths: list[Path]) -> list[Path]:
    """Expand folders into their ``*.jsonl`` files."""
    out: list[Path] = []
    for p in paths:
        out.extend(sorted(p.glob("*.jsonl")) if p.is_dir() else [p])
    return out
