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
