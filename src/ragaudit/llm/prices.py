"""What LLM calls cost in money: the price of each model per million input and output
tokens, and the cost of a count of tokens at that price.

A price comes from ``llm.prices`` in ragaudit.yaml when the model is named there, else
from :data:`DEFAULT_PRICES`, a small table of common hosted models' list prices as of
:data:`PRICES_READ` (a snapshot, not re-checked: providers change their prices, so the
configuration overrides it). The embedded model runs on this machine and costs 0, and
says so. A model with no known price has no cost: null with the reason, never a made-up
0, unless it made no billed request at all (nothing was spent).

Costs are exact decimals rounded to :data:`COST_PLACES` places, so that the cost of a step
is the sum of its models' costs and a run's total the sum of its steps', to the digit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import ROUND_HALF_EVEN, Decimal

from pydantic import BaseModel, Field

from ragaudit.options import StrictOptions

# The month of the providers' published list prices the default table gives (USD per
# million tokens, standard tier, no batch or cached-input discount). They were written
# from what was published then and not re-checked here (ragaudit's machine has no
# internet), and prices change: override a model's price with llm.prices.
PRICES_READ = "2025-06"
PRICES_SOURCE = f"default table, list prices as of {PRICES_READ}, not re-checked"
EMBEDDED_NOTE = "the embedded model runs on this machine: no per-token price, costs 0"

# A tenth of a millionth of a dollar: below the price of one token of any model listed.
COST_PLACES = 10
_QUANTUM = Decimal(1).scaleb(-COST_PLACES)
_MILLION = Decimal(1_000_000)


class ModelPrice(StrictOptions):
    """The price of one model: US dollars per million input (prompt) tokens and per
    million output (completion) tokens."""

    # At most 10,000 USD per million tokens: more than ten times the dearest model listed
    # anywhere, so that a price above it is a slip of the keyboard, not a price.
    input: float = Field(ge=0, le=10_000, description="USD per million input (prompt) tokens")
    output: float = Field(ge=0, le=10_000, description="USD per million output (completion) tokens")


# OpenAI's list prices for a few common models (standard tier), by model name as
# ``openai:<model>`` names it.
DEFAULT_PRICES: dict[str, ModelPrice] = {
    "gpt-4o": ModelPrice(input=2.50, output=10.00),
    "gpt-4o-mini": ModelPrice(input=0.15, output=0.60),
    "gpt-4.1": ModelPrice(input=2.00, output=8.00),
    "gpt-4.1-mini": ModelPrice(input=0.40, output=1.60),
    "gpt-4.1-nano": ModelPrice(input=0.10, output=0.40),
    "o3-mini": ModelPrice(input=1.10, output=4.40),
    "o4-mini": ModelPrice(input=1.10, output=4.40),
    "gpt-3.5-turbo": ModelPrice(input=0.50, output=1.50),
}


class PriceUsed(BaseModel):
    """The price a cost was computed at, and where it came from."""

    input: float = Field(description="USD per million input tokens")
    output: float = Field(description="USD per million output tokens")
    source: str = Field(description="'llm.prices', the default table (with its date), or embedded")


def is_embedded(model: str) -> bool:
    """Whether ``model`` (as llm.model names it) runs on this machine: ``local`` or
    ``local:<gguf>``."""
    return model.partition(":")[0] == "local"


def price_of(model: str, prices: Mapping[str, ModelPrice] | None = None) -> PriceUsed | None:
    """The price of ``model`` (``openai:gpt-4o-mini``, ``local``, ...): the configuration's
    (``prices``, by the full name or by the name after the backend), else the default
    table's, else 0 for the embedded model; None when nothing says.

    >>> price_of("openai:gpt-4o-mini").input
    0.15
    >>> price_of("openai:gpt-4o-mini", {"gpt-4o-mini": ModelPrice(input=0.1, output=0.5)}).source
    'llm.prices'
    >>> price_of("local").source
    'embedded'
    >>> price_of("openai:my-vllm-model") is None
    True
    """
    name = model.partition(":")[2]
    own = prices or {}
    for key in (model, name):
        if key and key in own:
            return PriceUsed(input=own[key].input, output=own[key].output, source="llm.prices")
    if model.partition(":")[0] == "openai" and name in DEFAULT_PRICES:
        found = DEFAULT_PRICES[name]
        return PriceUsed(input=found.input, output=found.output, source=PRICES_SOURCE)
    if is_embedded(model):
        return PriceUsed(input=0.0, output=0.0, source="embedded")
    return None


def no_price_reason(model: str) -> str:
    """Why ``model`` has no cost: no price known, and how to give one."""
    return f"no price for {model}: give it under llm.prices (USD per million tokens)"


def token_cost(price: PriceUsed, prompt_tokens: int, completion_tokens: int) -> Decimal:
    """The cost of ``prompt_tokens`` and ``completion_tokens`` at ``price``, in USD,
    rounded to :data:`COST_PLACES` places.

    >>> token_cost(PriceUsed(input=0.15, output=0.60, source="x"), 1000, 500)
    Decimal('0.0004500000')
    """
    raw = (
        Decimal(prompt_tokens) * Decimal(str(price.input))
        + Decimal(completion_tokens) * Decimal(str(price.output))
    ) / _MILLION
    return raw.quantize(_QUANTUM, rounding=ROUND_HALF_EVEN)


class Cost(BaseModel):
    """A cost in US dollars, or null with the reason it cannot be given (a model with no
    known price made billed requests). ``note`` says what a reader should know of a figure
    that is given (the embedded model's 0)."""

    usd: float | None = Field(description="US dollars; null when some model has no known price")
    reason: str | None = Field(None, description="why usd is null")
    note: str | None = Field(None, description="what the figure rests on, when it needs saying")

    @property
    def exact(self) -> Decimal | None:
        """The cost as the exact decimal it was computed as (None when unknown)."""
        return None if self.usd is None else Decimal(str(self.usd))

    def per(self, n: int) -> Cost:
        """This cost divided over ``n`` items (a cost per answer, per pair); null with a
        reason when ``n`` is 0.

        >>> Cost(usd=0.003).per(4).usd
        0.00075
        >>> Cost(usd=0.003).per(0).reason
        'nothing to divide it over'
        """
        if self.usd is None:
            return self
        if n <= 0:
            return Cost(usd=None, reason="nothing to divide it over")
        share = (Decimal(str(self.usd)) / n).quantize(_QUANTUM, rounding=ROUND_HALF_EVEN)
        return Cost(usd=float(share), note=self.note)

    def __str__(self) -> str:
        """The cost as :func:`format_usd` shows it: ``$0.01``, or ``n/a`` when unknown.

        >>> str(Cost(usd=0.01234)), str(Cost(usd=None, reason="x"))
        ('$0.01', 'n/a')
        """
        return format_usd(self.usd)


def format_usd(usd: float | None) -> str:
    """A cost for a table: cents from a cent up, else six decimal places (a small test
    run costs fractions of a cent); ``n/a`` when unknown.

    >>> format_usd(12.3456), format_usd(0.000123456), format_usd(0.0), format_usd(None)
    ('$12.35', '$0.000123', '$0', 'n/a')
    >>> format_usd(0.0000001)
    '<$0.000001'
    """
    if usd is None:
        return "n/a"
    if usd == 0:
        return "$0"
    if usd >= 0.01:
        return f"${usd:,.2f}"
    shown = f"{usd:.6f}".rstrip("0")
    return "<$0.000001" if shown == "0." else f"${shown}"


def total_cost(parts: Iterable[Cost]) -> Cost:
    """The sum of ``parts``: exact, null with the first reason when any part is null, and
    the notes kept once each.

    >>> total_cost([Cost(usd=0.1), Cost(usd=0.2)]).usd
    0.3
    >>> total_cost([Cost(usd=0.1), Cost(usd=None, reason="no price for x")]).reason
    'no price for x'
    """
    total = Decimal(0)
    notes: list[str] = []
    for part in parts:
        if part.usd is None:
            return Cost(usd=None, reason=part.reason)
        total += Decimal(str(part.usd))
        if part.note and part.note not in notes:
            notes.append(part.note)
    return Cost(usd=float(total), note="; ".join(notes) or None)


def model_cost(
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    prices: Mapping[str, ModelPrice] | None = None,
) -> tuple[Cost, PriceUsed | None]:
    """What ``model`` cost for the tokens of its billed requests, and the price used. A
    model without a price that made no billed request cost nothing; with billed tokens, it
    has no cost (null, with the reason).

    >>> model_cost("openai:gpt-4o-mini", 2_000_000, 1_000_000)[0].usd
    0.9
    >>> model_cost("openai:unknown", 10, 2)[0].reason
    'no price for openai:unknown: give it under llm.prices (USD per million tokens)'
    >>> model_cost("local", 10, 2)[0].note
    'the embedded model runs on this machine: no per-token price, costs 0'
    """
    price = price_of(model, prices)
    if price is None:
        if prompt_tokens == completion_tokens == 0:
            return Cost(usd=0.0), None
        return Cost(usd=None, reason=no_price_reason(model)), None
    note = EMBEDDED_NOTE if price.source == "embedded" else None
    usd = token_cost(price, prompt_tokens, completion_tokens)
    return Cost(usd=float(usd), note=note), price


__all__ = [
    "COST_PLACES",
    "DEFAULT_PRICES",
    "EMBEDDED_NOTE",
    "PRICES_READ",
    "Cost",
    "ModelPrice",
    "PriceUsed",
    "format_usd",
    "is_embedded",
    "model_cost",
    "price_of",
    "token_cost",
    "total_cost",
]
