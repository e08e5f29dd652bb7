"""Terminal output shared by the commands: consoles, and the usage table every command
prints at its end."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ragaudit.llm.estimate import DryRun
from ragaudit.llm.prices import EMBEDDED_NOTE, format_usd
from ragaudit.llm.usage import UsageMeter
from ragaudit.report.terminal import compact_table

# soft_wrap: a message stays one line however wide the terminal (tables still fit it).
# emoji=False: names are the user's (a rater "openai:m:default", a system "gpt:smile:v2")
# and are printed as written, never with rich's :code: emoji put in.
console = Console(highlight=False, soft_wrap=True, emoji=False)
err_console = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)


def _seconds(value: float) -> str:
    """Seconds to the hundredth under 100 s ("0.19"), whole from 100 ("350", "2265"), so
    that a long run's figures leave a step's name its room in 80 columns."""
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def usage_table(meter: UsageMeter) -> Table:
    """One row per step: calls, cache hits, tokens, retries, failures, time and cost (at
    llm.prices over the default table; cache hits cost nothing); under a step that asked
    several models, a row per model; under ``run``, a row per system answered. A cost that
    cannot be given shows ``n/a`` and the caption says why; the embedded model's 0 says
    so too, in the caption alone when every cost is 0 (so that a step's name, such as
    "generate-documents", fits 80 columns unfolded)."""
    headers = [
        "step",
        "calls",
        "cached",
        "tok in",
        "tok out",
        "retry",
        "fail",
        "LLM s",
        "wall s",
        "cost",
    ]
    costs = meter.costs()
    notes: list[str] = []
    rows: list[list[str]] = []
    for name, usage in meter.snapshot().items():
        cost = costs[name]
        rows.append(
            [
                name,
                str(usage.calls),
                str(usage.cache_hits),
                str(usage.prompt_tokens),
                str(usage.completion_tokens),
                str(usage.retries),
                f"{usage.failures} ({usage.oversized} oversized)"
                if usage.oversized
                else str(usage.failures),
                _seconds(usage.llm_seconds),
                _seconds(usage.wall_seconds),
                format_usd(cost.usd),
            ]
        )
        for note in (cost.reason, cost.note):
            if note and note not in notes:
                notes.append(note)
        if len(usage.models) > 1:
            for model, mu in usage.models.items():
                rows.append(
                    [
                        f"  {model}",
                        str(mu.calls),
                        str(mu.cache_hits),
                        str(mu.prompt_tokens),
                        str(mu.completion_tokens),
                        *([""] * 4),
                        format_usd(cost.models[model].usd),
                    ]
                )
        for part, models in usage.parts.items():
            rows.append(
                [
                    f"  system {part}",
                    str(sum(m.calls for m in models.values())),
                    str(sum(m.cache_hits for m in models.values())),
                    str(sum(m.prompt_tokens for m in models.values())),
                    str(sum(m.completion_tokens for m in models.values())),
                    *([""] * 4),
                    format_usd(cost.parts[part].usd),
                ]
            )
    free = bool(rows) and all(row[-1] == format_usd(0.0) for row in rows)
    if free:
        headers, rows = headers[:-1], [row[:-1] for row in rows]
        if EMBEDDED_NOTE not in notes:
            notes.insert(0, f"{format_usd(0.0)} throughout")
    table = compact_table("LLM usage", headers, frozenset({"step"}))
    for row in rows:
        table.add_row(*row)
    if notes:
        table.caption = "cost: " + "; ".join(notes)
        table.caption_justify = "left"
    return table


def print_dry_run(dry: DryRun) -> None:
    """A dry run on the terminal: a row per line of work (what, model, items, requests
    the backend would answer, those the cache would, tokens, cost, how the tokens were
    come by), the totals, and what the figures rest on."""
    table = Table(
        title=f"Dry run of {dry.step}: nothing asked, nothing written", title_justify="left"
    )
    for header in ("work", "model", "items", "requests", "cached", "tok in", "tok out", "cost"):
        table.add_column(
            header, justify="left" if header in ("work", "model") else "right", overflow="fold"
        )
    for line in dry.lines:
        table.add_row(
            line.what,
            line.model or "(its own)",
            str(line.items),
            str(line.requests),
            str(line.cached),
            str(line.prompt_tokens),
            str(line.completion_tokens),
            format_usd(line.cost.usd),
        )
    cost = dry.cost
    table.add_row(
        "total",
        "",
        "",
        str(dry.requests),
        str(dry.cached),
        str(dry.prompt_tokens),
        str(dry.completion_tokens),
        format_usd(cost.usd),
        style="bold",
    )
    console.print(table)
    for line in dry.lines:
        console.print(f"{line.what}: tokens {line.tokens_from}", markup=False)
    notes = [*dry.notes]
    for line in dry.lines:
        for note in (line.cost.reason, line.cost.note):
            if note and line.model is not None and note not in notes:
                notes.append(note)
    for note in notes:
        console.print(f"note: {note}", markup=False)
    console.print(
        f"would spend {dry.requests} LLM requests ({dry.cached} more from the cache, free), "
        f"{dry.prompt_tokens + dry.completion_tokens} tokens, {format_usd(cost.usd)}",
        markup=False,
    )
