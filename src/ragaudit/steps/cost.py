"""What a run's LLM requests cost in money, for summary.json and the report: usage.json
(each step's last run: billed requests per model, at the prices of the command that ran
it) divided over what the steps made: the answers of each system, the accepted document
pairs, the verified wordings.

Every figure is read from usage.json's costs, so that the figures add up to its records
exactly: a step's cost is the sum of its models', the total the sum of the steps'.
"""

from __future__ import annotations

import json

from pydantic import ValidationError

from ragaudit.analysis.summary import (
    CostFigure,
    CostFigures,
    ModelCostFigures,
    StepCostFigures,
    UnitCost,
)
from ragaudit.errors import UserError
from ragaudit.llm.prices import Cost
from ragaudit.llm.usage import UsageFile
from ragaudit.rundir import RunDir
from ragaudit.store.files import read_usage

BASIS = (
    "each step's last run (usage.json), at the prices of the command that ran it: "
    "requests the cache answered cost nothing"
)
# The steps that write and check the wordings of the SQL half.
WORDING_STEPS = ("templates", "verify")


def _figure(cost: Cost) -> CostFigure:
    return CostFigure(usd=cost.usd, reason=cost.reason, note=cost.note)


def _unit(cost: Cost, units: int) -> UnitCost:
    return UnitCost(cost=_figure(cost), units=units, each=_figure(cost.per(units)))


def _step_cost(usage: UsageFile, name: str) -> Cost:
    found = usage.costs.get(name)
    if found is None:
        return Cost(usd=None, reason=f"step {name} was recorded without its cost")
    return found


def cost_figures(run: RunDir) -> CostFigures | None:
    """The cost figures of ``run`` (summary.json's ``cost``), or None when no step has
    recorded its LLM usage."""
    usage = read_usage(run)
    if usage is None or not usage.steps:
        return None
    steps: dict[str, StepCostFigures] = {}
    for name, step in usage.steps.items():
        recorded = usage.costs.get(name)
        models: dict[str, ModelCostFigures] = {}
        for model, mu in step.models.items():
            own = recorded.models.get(model) if recorded is not None else None
            price = own.price if own is not None else None
            models[model] = ModelCostFigures(
                calls=mu.calls,
                cache_hits=mu.cache_hits,
                prompt_tokens=mu.prompt_tokens,
                completion_tokens=mu.completion_tokens,
                cost=_figure(own)
                if own is not None
                else CostFigure(usd=None, reason="recorded without its cost"),
                price_input=price.input if price else None,
                price_output=price.output if price else None,
                price_source=price.source if price else None,
            )
        steps[name] = StepCostFigures(
            calls=step.calls,
            cache_hits=step.cache_hits,
            prompt_tokens=step.prompt_tokens,
            completion_tokens=step.completion_tokens,
            cost=_figure(_step_cost(usage, name)),
            models=models,
        )
    return CostFigures(
        basis=BASIS,
        total=_figure(usage.total_cost()),
        steps=steps,
        per_system=_per_system(run, usage),
        per_document_pair=_per_pair(run, usage),
        per_verified_wording=_per_wording(run, usage),
    )


def _per_system(run: RunDir, usage: UsageFile) -> dict[str, UnitCost]:
    """Per system of the last run: its part of the run step's cost over its askings."""
    step = usage.steps.get("run")
    cost = usage.costs.get("run")
    if step is None or cost is None or not run.run_stats.exists():
        return {}
    try:
        stats = json.loads(run.run_stats.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    out: dict[str, UnitCost] = {}
    for name, entry in stats.items():
        asked = int(entry.get("asked", 0)) if isinstance(entry, dict) else 0
        part = cost.parts.get(name)
        if part is None:
            part = Cost(
                usd=None,
                reason="it asked no LLM through ragaudit: an adapter answers with its own "
                "model, which ragaudit does not meter",
            )
        out[name] = _unit(part, asked)
    return out


def _per_pair(run: RunDir, usage: UsageFile) -> UnitCost | None:
    """The generation from documents' cost over the pairs it accepted."""
    if "generate-documents" not in usage.steps or not run.documents_stats.exists():
        return None
    try:
        accepted = int(json.loads(run.documents_stats.read_text(encoding="utf-8"))["accepted"])
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError):
        return None
    return _unit(_step_cost(usage, "generate-documents"), accepted)


def _per_wording(run: RunDir, usage: UsageFile) -> UnitCost | None:
    """What writing and verifying the wordings cost over the wordings verified."""
    names = [n for n in WORDING_STEPS if n in usage.steps]
    if not names or not run.templates_text.exists():
        return None
    from ragaudit.generate.text.templates import load_text_templates
    from ragaudit.llm.prices import total_cost

    try:
        verdicts = load_text_templates(run.templates_text).verdicts
    except (UserError, ValidationError):
        return None
    verified = sum(1 for v in verdicts.values() if v.verified)
    return _unit(total_cost(_step_cost(usage, n) for n in names), verified)


__all__ = ["BASIS", "cost_figures"]
