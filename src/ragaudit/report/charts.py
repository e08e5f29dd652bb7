"""The report's charts as inline SVG (matplotlib, no network assets, no fonts to fetch:
text is drawn as paths). Their titles are the HTML figure captions."""

from __future__ import annotations

import io
import re
from typing import Any

_COLOURS = {
    "correct": "#2e7d32",
    "robust": "#2e7d32",
    "non-robust": "#f9a825",
    "gap": "#c62828",
    "knowledge base": "#6a1b9a",
    "retriever": "#1565c0",
    "language model": "#ef6c00",
    "system error": "#616161",
}


def _svg(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buffer.getvalue()
    # Inline: drop the XML prolog and DOCTYPE, which are not allowed inside HTML.
    text = re.sub(r"^<\?xml[^>]*>\s*", "", text)
    text = re.sub(r"<!DOCTYPE[^>]*>\s*", "", text)
    # matplotlib repeats labels in comments; labels come from data, so none are kept. The
    # metadata block (creator, date) says nothing a reader needs.
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.DOTALL)
    return re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)


def _figure(width: float, height: float) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "path"
    matplotlib.rcParams["svg.hashsalt"] = "ragaudit"  # the same data gives the same file
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))


def stacked_bars(labels: list[str], parts: dict[str, list[float]], xlabel: str) -> str:
    """Horizontal stacked bars: one bar per label, one segment per part (shares)."""
    fig, ax = _figure(7.0, 0.45 * len(labels) + 1.2)
    left = [0.0] * len(labels)
    for name, values in parts.items():
        ax.barh(labels, values, left=left, label=name, color=_COLOURS.get(name))
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.set_xlim(0, 1)
    ax.set_xlabel(xlabel)
    ax.invert_yaxis()
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.08), ncol=len(parts), frameon=False)
    return _svg(fig)


def interval_dots(
    labels: list[str], series: dict[str, list[tuple[float, float, float] | None]]
) -> str:
    """A dot per label and series with its 95% interval as a line (values in [0, 1])."""
    fig, ax = _figure(7.0, 0.45 * len(labels) + 1.2)
    offsets = [(i - (len(series) - 1) / 2) * 0.22 for i in range(len(series))]
    for offset, (name, points) in zip(offsets, series.items(), strict=True):
        for row, point in enumerate(points):
            if point is None:
                continue
            value, low, high = point
            y = row + offset
            ax.plot([low, high], [y, y], color="#555555", linewidth=1.5)
            ax.plot(
                [value],
                [y],
                "o",
                color="#1565c0" if name == "accuracy" else "#2e7d32",
                label=name if row == 0 else None,
            )
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlim(-0.02, 1.02)
    ax.invert_yaxis()
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.08), ncol=len(series), frameon=False)
    return _svg(fig)


def grouped_bars(
    groups: list[str], series: dict[str, list[float | None]], ylabel: str, top: float
) -> str:
    """Vertical bars: one cluster per group, one bar per series (None: no bar)."""
    fig, ax = _figure(max(5.0, 1.1 * len(groups) + 2.0), 3.2)
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        shown = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None]
        ax.bar([x for x, _ in shown], [v for _, v in shown], width=width, label=name)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylim(0, top)
    ax.set_ylabel(ylabel)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.02), ncol=len(series), frameon=False)
    return _svg(fig)


# (label, x, x interval, y, y interval, highlighted)
ScatterPoint = tuple[str, float, tuple[float, float], float, tuple[float, float], bool]


def agreement_scatter(points: list[ScatterPoint], xlabel: str, ylabel: str) -> str:
    """One dot per item at (x, y) with both 95% intervals as lines, its label beside it,
    and the diagonal y = x: items off the diagonal's order are where two rankings differ.
    Highlighted items (a reversed pair) are red."""
    fig, ax = _figure(6.5, 5.5)
    values = [v for p in points for v in (*p[2], *p[4])] or [0.0, 1.0]
    low, high = min(values), max(values)
    pad = 0.05 * (high - low or 1.0)
    low, high = low - pad, high + pad
    ax.plot([low, high], [low, high], linestyle="--", color="#999999", linewidth=1)
    # Close points' labels are staggered, so that a cluster of similar systems stays legible.
    order = sorted(range(len(points)), key=lambda i: (points[i][3], points[i][1]))
    stagger = {i: (position % 3 - 1) * 7 for position, i in enumerate(order)}
    for index, (label, x, (x0, x1), y, (y0, y1), hot) in enumerate(points):
        colour = "#c62828" if hot else "#1565c0"
        ax.plot([x0, x1], [y, y], color=colour, alpha=0.35, linewidth=1)
        ax.plot([x, x], [y0, y1], color=colour, alpha=0.35, linewidth=1)
        ax.plot([x], [y], "o", color=colour)
        ax.annotate(
            label, (x, y), textcoords="offset points", xytext=(4, stagger[index]), fontsize=7
        )
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return _svg(fig)


# One system and variant of the lambda study: its label, a point per reached target
# (lambda, accuracy and its band, R and its band, None where R is undefined), and the
# figures of all its groups (lambda, accuracy, R), drawn as a star.
Band = tuple[float, float, float]  # mean, low, high
LambdaLine = tuple[
    str, list[tuple[float, Band, Band | None]], tuple[float, float, float | None] | None
]


def _band_line(
    ax: Any, xs: list[float], bands: list[Band], style: str, colour: str, label: str
) -> None:
    """A line through the means with its band shaded."""
    ax.plot(xs, [b[0] for b in bands], style, color=colour, markersize=3, label=label)
    ax.fill_between(
        xs, [b[1] for b in bands], [b[2] for b in bands], color=colour, alpha=0.15, linewidth=0
    )


def lambda_lines(lines: list[LambdaLine]) -> str:
    """Accuracy (solid) and R (dashed) against lambda, one colour per system and variant,
    each with the band of its draws shaded and its observed figures as stars: accuracy
    falls as lambda rises, R stays, and lines of accuracy cross where R's do not."""
    fig, ax = _figure(7.0, 4.4)
    for index, (label, points, observed) in enumerate(lines):
        colour = f"C{index % 10}"
        _band_line(
            ax,
            [x for x, _, _ in points],
            [a for _, a, _ in points],
            "-o",
            colour,
            f"{label}: accuracy",
        )
        measured = [(x, r) for x, _, r in points if r is not None]
        _band_line(
            ax, [x for x, _ in measured], [r for _, r in measured], "--s", colour, f"{label}: R"
        )
        if observed is not None:
            lam, acc, rob = observed
            stars = [acc] if rob is None else [acc, rob]
            ax.plot([lam] * len(stars), stars, "*", color=colour, markersize=11)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("λ: share of queries in gap groups (★ as observed)")
    ax.set_ylabel("accuracy (solid), R (dashed)")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, frameon=False)
    return _svg(fig)
