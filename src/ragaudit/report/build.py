"""``ragaudit report``: one self-contained HTML file from a run's analysis.

It reads summary.json (required), drilldown.jsonl, dataset.stats.json, usage.json, the
responses and, when the corpus is a generated world, its world.json, and writes
report.html: headline verdicts, a table per system and variant, charts (inline SVG), the
dataset summary, the knowledge base (which reports an LLM rewrite repaired or failed), the
LLM usage, and drill-down tables of gap and non-robust groups. Every text that comes from
data (documents, queries, LLM replies) is escaped by the template engine: the page holds
no script at all.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ragaudit.analysis.metrics import SOURCES, retrieval_count
from ragaudit.errors import UserError
from ragaudit.generate.dataset import DatasetOverview, read_overview
from ragaudit.records.io import atomic_write_text, iter_jsonl_dicts
from ragaudit.report import charts
from ragaudit.rundir import RunDir

DRILL_GROUPS = 20  # per system, variant and tag
TEXT_CHARS = 400

TABLE_METRICS = (
    ("accuracy", "accuracy"),
    ("robustness", "R"),
    ("gap_fraction", "λ (gap fraction)"),
    ("acc_retrieval_db", "Acc_retrieval_db"),
    ("accuracy_retrieval", "retrieval accuracy"),
    ("robustness_retrieval", "retrieval R"),
)


@dataclass
class ReportData:
    """Everything the template shows."""

    title: str
    outcome: str
    headlines: list[dict[str, Any]]
    other_verdicts: list[str]
    tables: list[dict[str, Any]]
    charts: list[dict[str, str]]
    ranking: list[dict[str, Any]]
    dataset: DatasetOverview | None
    usage: list[dict[str, Any]]
    drilldown: list[dict[str, Any]]
    world: dict[str, Any] | None = None
    blame: list[dict[str, Any]] | None = None
    warnings: list[str] = field(default_factory=list)  # where the retrieval rule misfits


def _interval(entry: Any) -> str:
    if not isinstance(entry, dict) or entry.get("value") is None:
        return "n/a" if not isinstance(entry, int | float) else f"{entry:.2f}"
    low, high = entry["ci95"]
    return f"{entry['value']:.2f} [{low:.2f}, {high:.2f}]"


def _side(summary: dict[str, Any], side: dict[str, Any], metric: str) -> str:
    entry = summary["systems"].get(side["system"], {}).get("variants", {}).get(side["variant"])
    shown = _interval(entry.get(metric)) if entry else f"{side['value']:.2f}"
    label = dict(TABLE_METRICS).get(metric, metric)
    return f"{side['system']} / {side['variant']}: {label} {shown}"


def _headlines(summary: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    significant, rest = [], []
    for c in summary.get("comparisons", []):
        if c["p_value"] is not None and c["p_value"] < 0.05:
            significant.append(
                {
                    "verdict": c["verdict"],
                    "sides": [
                        _side(summary, c["a"], c["metric"]),
                        _side(summary, c["b"], c["metric"]),
                    ],
                    "p": c["p_value"],
                }
            )
        else:
            rest.append(c["verdict"])
    significant.sort(key=lambda h: h["p"])
    return significant, rest


def _tables(summary: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for name, system in summary["systems"].items():
        rows = []
        for variant, m in system["variants"].items():
            rows.append(
                {
                    "variant": variant,
                    "queries": m["n_queries"],
                    "groups": m["n_groups"],
                    "errors": m.get("n_errors", 0),
                    "retrieval_queries": retrieval_count(
                        (m.get("accuracy_retrieval") or {}).get("n", 0),
                        m.get("retrieval_left_out") or {},
                    ),
                    "cells": [_interval(m.get(key)) for key, _ in TABLE_METRICS],
                }
            )
        out.append(
            {
                "system": name,
                "acc_retrieval_db": _interval(system.get("acc_retrieval_db")),
                "holes": _interval(system["knowledge_base_holes"])
                if system.get("knowledge_base_holes")
                else None,
                "headers": [label for _, label in TABLE_METRICS],
                "rows": rows,
            }
        )
    return out


def _ranking(summary: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for system, entry in summary.get("retrieval_ranking", {}).items():
        for variant, metrics in entry["variants"].items():
            out.append(
                {
                    "system": system,
                    "variant": variant,
                    "metrics": [(name, _interval(value)) for name, value in metrics.items()],
                }
            )
    return out


def _responses(run: RunDir, system: str, wanted: set[str]) -> dict[str, dict[str, Any]]:
    path = run.responses(system)
    if not path.exists() or not wanted:
        return {}
    return {
        str(row["query_id"]): row
        for _, row in iter_jsonl_dicts(path)
        if str(row["query_id"]) in wanted
    }


def _clip(text: Any) -> str | None:
    if text is None:
        return None
    text = str(text)
    return text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS] + "…"


def _scan_drilldown(run: RunDir) -> list[dict[str, Any]]:
    """The rows of the first gap and non-robust groups of each system and variant,
    streamed from drilldown.jsonl."""
    chosen: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = defaultdict(list)
    if not run.drilldown.exists():
        return []
    for _, row in iter_jsonl_dicts(run.drilldown):
        key = (str(row["system"]), str(row["variant"]))
        if row["tag"] not in ("gap", "non-robust"):
            continue
        slot = (*key, str(row["tag"]))
        group = str(row["group_id"])
        if group not in chosen[slot]:
            if len(chosen[slot]) >= DRILL_GROUPS:
                continue
            chosen[slot].append(group)
        groups[(*slot, group)].append(row)
    sections = []
    by_system: dict[str, set[str]] = defaultdict(set)
    for (system, _, _, _), rows in groups.items():
        by_system[system].update(str(r["query_id"]) for r in rows)
    answers = {s: _responses(run, s, ids) for s, ids in by_system.items()}
    for (system, variant, tag), group_ids in sorted(chosen.items()):
        entries = []
        for group in group_ids:
            rows = groups[(system, variant, tag, group)]
            queries = []
            for r in rows:
                record = r.get("record") or {}
                answer = answers.get(system, {}).get(str(r["query_id"]), {})
                retrieved = answer.get("retrieved") or []
                queries.append(
                    {
                        "query": _clip(r.get("query") or record.get("query")),
                        "reference": _clip(r.get("reference") or record.get("reference")),
                        "response": _clip(answer.get("response", record.get("response"))),
                        "error": _clip(answer.get("error")),
                        "correct": r["correct"],
                        "retrieval_correct": r.get("retrieval_correct"),
                        "source": r.get("source"),
                        "retrieved": [
                            {"id": _clip(item.get("id")), "text": _clip(item.get("text"))}
                            for item in retrieved[:3]
                        ]
                        or [
                            {"id": _clip(i), "text": None}
                            for i in record.get("retrieved_ids") or []
                        ],
                    }
                )
            entries.append({"group": _clip(group), "queries": queries})
        sections.append({"system": system, "variant": variant, "tag": tag, "groups": entries})
    return sections


RULES = {
    "evidence": "by evidence: the gold ids list the documents that state each answer, so a "
    "question no document answers is a hole of the knowledge base, a wrong answer whose "
    "retrieval missed every such document is the retriever's, and one whose retrieval held "
    "one is the language model's",
    "convention": "by the GRAMMAR convention (nothing says which documents state the "
    "answers): a wrong answer in a gap group (every wording wrong) is the knowledge base's, "
    "one whose retrieval was judged wrong the retriever's, any other the language model's",
}


def _blame(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Where the answers go wrong, per system and variant, as analyze counted it."""
    rows = []
    for name, system in summary["systems"].items():
        for variant, m in system["variants"].items():
            b = m.get("blame")
            if not b:
                continue
            rows.append(
                {
                    "label": f"{name} / {variant}",
                    "rule": b["rule"],
                    "counts": [b["counts"].get(part, 0) for part in SOURCES],
                    "holes_answered": b["holes_answered"] if b["by_evidence"] else None,
                    "by_evidence": b["by_evidence"],
                    "by_convention": b["by_convention"],
                }
            )
    return rows


def _blame_note(blame: list[dict[str, Any]]) -> str:
    """Which rule decided the chart, in words."""
    rules = {row["rule"] for row in blame}
    if rules == {"evidence"}:
        return "Decided " + RULES["evidence"] + "."
    if rules == {"convention"}:
        return "Decided " + RULES["convention"] + "."
    evidence = sum(row["by_evidence"] for row in blame)
    convention = sum(row["by_convention"] for row in blame)
    return (
        f"Mixed: {evidence} answers decided {RULES['evidence']}; {convention} answers "
        f"(whose gold ids name only the entity, or none) {RULES['convention']}."
    )


def _charts(summary: dict[str, Any], blame: list[dict[str, Any]]) -> list[dict[str, str]]:
    labels, tags, acc, rob = [], defaultdict(list), [], []
    for name, system in summary["systems"].items():
        for variant, m in system["variants"].items():
            labels.append(f"{name} / {variant}")
            total = max(1, m["n_groups"])
            for tag in ("robust", "non-robust", "gap"):
                tags[tag].append(m["groups"].get(tag, 0) / total)
            acc.append(_point(m.get("accuracy")))
            rob.append(_point(m.get("robustness")))
    out = [
        {
            "id": "chart-tags",
            "title": "Semantic groups by tag",
            "svg": charts.stacked_bars(labels, dict(tags), "share of groups"),
        },
        {
            "id": "chart-accuracy",
            "title": "Accuracy and robustness R per variant (95% intervals)",
            "svg": charts.interval_dots(labels, {"accuracy": acc, "R": rob}),
        },
    ]
    if blame:
        parts = {
            part: [row["counts"][i] / max(1, sum(row["counts"])) for row in blame]
            for i, part in enumerate(SOURCES)
        }
        out.append(
            {
                "id": "chart-sources",
                "title": "Where the answers go wrong: knowledge base, retriever, language model",
                "svg": charts.stacked_bars(
                    [row["label"] for row in blame], parts, "share of queries"
                ),
                "note": _blame_note(blame),
            }
        )
    return out


def _point(entry: Any) -> tuple[float, float, float] | None:
    if not isinstance(entry, dict) or entry.get("value") is None:
        return None
    return (entry["value"], *entry["ci95"])


def _usage(run: RunDir) -> list[dict[str, Any]]:
    if not run.usage.exists():
        return []
    steps = json.loads(run.usage.read_text(encoding="utf-8")).get("steps", {})
    return [
        {
            "step": name,
            "calls": u.get("calls", 0),
            "cache_hits": u.get("cache_hits", 0),
            "prompt_tokens": u.get("prompt_tokens", 0),
            "completion_tokens": u.get("completion_tokens", 0),
            "llm_seconds": f"{u.get('llm_seconds', 0.0):.1f}",
            "wall_seconds": f"{u.get('wall_seconds', 0.0):.1f}",
        }
        for name, u in steps.items()
    ]


def _world(run: RunDir) -> dict[str, Any] | None:
    """world.json of the generated world the run's corpus comes from, if it does: how many
    reports, and what the LLM rewrite (``ragaudit world --llm``) repaired or failed."""
    try:
        config = yaml.safe_load(run.config.read_text(encoding="utf-8")) or {}
        corpus = Path(str((config.get("corpus") or {})["path"]))
        meta = json.loads((corpus.parent / "world.json").read_text(encoding="utf-8"))
    except (OSError, KeyError, TypeError, ValueError, yaml.YAMLError):
        return None
    if not isinstance(meta, dict) or "documents" not in meta:
        return None
    return {
        "folder": str(corpus.parent),
        "documents": meta["documents"],
        "facts_stated": meta.get("facts_stated", 0),
        "rewrite": meta.get("rewrite"),
    }


def collect(run: RunDir) -> ReportData:
    """Read the run's files into what the report shows."""
    if not run.summary.exists():
        raise UserError(f"no {run.summary}: run ragaudit analyze first")
    try:
        summary = json.loads(run.summary.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{run.summary}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    headlines, rest = _headlines(summary)
    drill = _scan_drilldown(run)
    blame = _blame(summary)
    dataset = None
    if run.dataset_stats.exists():
        dataset = read_overview(run.dataset_stats)
    return ReportData(
        title=f"ragaudit report: {run.root.name}",
        outcome=summary.get("outcome", "answer"),
        headlines=headlines,
        other_verdicts=rest,
        warnings=list(summary.get("warnings") or []),
        tables=_tables(summary),
        charts=_charts(summary, blame),
        blame=blame,
        ranking=_ranking(summary),
        dataset=dataset,
        usage=_usage(run),
        drilldown=drill,
        world=_world(run),
    )


def render(data: ReportData) -> str:
    """The HTML page (autoescaped; the inline SVG charts are ragaudit's own output)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ragaudit.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    return env.get_template("report.html.j2").render(data=data)


def write_report(run: RunDir) -> Path:
    """Collect, render and write report.html atomically; return its path."""
    atomic_write_text(run.report, render(collect(run)))
    return run.report
