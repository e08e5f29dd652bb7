"""Terminal output shared by the commands: consoles, and the usage table every command
prints at its end."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ragaudit.llm.usage import UsageMeter

# soft_wrap: a message stays one line however wide the terminal (tables still fit it).
# emoji=False: names are the user's (a rater "openai:m:default", a system "gpt:smile:v2")
# and are printed as written, never with rich's :code: emoji put in.
console = Console(highlight=False, soft_wrap=True, emoji=False)
err_console = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)


def usage_table(meter: UsageMeter) -> Table:
    """One row per step: calls, cache hits, tokens, retries, failures and time."""
    table = Table(title="LLM usage", title_justify="left")
    for header in (
        "step",
        "calls",
        "cached",
        "tok in",
        "tok out",
        "retry",
        "fail",
        "LLM s",
        "wall s",
    ):
        table.add_column(header, justify="left" if header == "step" else "right")
    for name, usage in meter.steps.items():
        table.add_row(
            name,
            str(usage.calls),
            str(usage.cache_hits),
            str(usage.prompt_tokens),
            str(usage.completion_tokens),
            str(usage.retries),
            f"{usage.failures} ({usage.oversized} oversized)"
            if usage.oversized
            else str(usage.failures),
            f"{usage.llm_seconds:.2f}",
            f"{usage.wall_seconds:.2f}",
        )
    return table
