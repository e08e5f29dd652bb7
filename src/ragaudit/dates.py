"""How English prose writes the parts of a date: month names and ordinal days. Shared by
the world's reports (which write dates so) and the "states the value" check (which must
find them), below both."""

from __future__ import annotations

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def ordinal(day: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st: a day of the month as prose writes it."""
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"
