"""How ``ragaudit compare``'s studies are shown: compare.md (markdown tables), the
terminal's tables, and the report's chart of each study (inline SVG)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from ragaudit.analysis.ranking import RankingStudy, SetAgreement, set_name
from ragaudit.errors import StaleInputError, UserError
from ragaudit.judge.retrieval import DEFAULT_RULE
from ragaudit.report import charts
from ragaudit.rundir import RunDir
from ragaudit.store.manifest import open_manifest


class CompareFile(BaseModel):
    """compare.json: one study per metric and split, the latest of each."""

    schema_version: int = 1
    studies: list[RankingStudy] = Field(default_factory=list)


def read_compare(path: Path) -> list[RankingStudy]:
    """The studies of a compare.json (none when the file is absent); a file that does not
    read as one is an error that names it."""
    if not path.exists():
        return []
    try:
        return CompareFile.model_validate_json(path.read_text(encoding="utf-8")).studies
    except (ValidationError, ValueError) as err:
        first = str(err).splitlines()[0]
        raise UserError(f"{path}: not a compare.json this ragaudit reads ({first})") from None


def _cell(value: float | None, interval: tuple[float, float] | None = None) -> str:
    if value is None:
        return "n/a"
    if interval is None:
        return f"{value:.3f}"
    return f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]"


def _p(value: float | None) -> str:
    if value is None:
        return "n/a"
    return "< 0.001" if value < 0.001 else f"{value:.3g}"


def ranking_rows(study: RankingStudy) -> tuple[list[str], list[list[str]]]:
    """The rankings side by side: a row per system in the reference set's order, the
    metric with its interval and the rank on each set."""
    headers = ["system"]
    for ranking in study.sets:
        headers += [f"{set_name(ranking.name)} {study.metric}", "rank"]
    by_set = [{r.system: r for r in ranking.systems} for ranking in study.sets]
    order = [r.system for r in study.sets[0].systems]
    order += sorted({s for ranked in by_set[1:] for s in ranked} - set(order))
    rows = []
    for system in order:
        row = [system]
        for ranked in by_set:
            entry = ranked.get(system)
            row += [_cell(entry.value, entry.ci95), f"{entry.rank:g}"] if entry else ["n/a", ""]
        rows.append(row)
    return headers, rows


PAIR_HEADERS = [
    "ahead on the reference",
    "behind",
    "difference (reference)",
    "p (Holm)",
    "difference (other)",
    "p (Holm)",
]


def flip_rows(agreement: SetAgreement) -> list[list[str]]:
    """The pairs the other set reverses, with both sets' differences."""
    return [
        [
            o.better,
            o.worse,
            _cell(o.reference_difference, o.reference_ci95),
            _p(o.reference_p),
            _cell(o.other_difference, o.other_ci95),
            _p(o.other_p),
        ]
        for o in agreement.flips
    ]


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return out


def study_title(study: RankingStudy) -> str:
    """``Ranked on recall@5, test sets by source (reference: SQL-grounded)``."""
    return (
        f"Ranked on {study.metric}, test sets by {study.by} "
        f"(reference: {set_name(study.reference)})"
    )


def study_markdown(study: RankingStudy) -> str:
    """One study as markdown: the rankings, then each agreement's sentence and flips."""
    lines = [f"## {study_title(study)}", ""]
    headers, rows = ranking_rows(study)
    lines += _table(headers, rows)
    lines.append("")
    groups = ", ".join(f"{set_name(r.name)} {r.groups}" for r in study.sets)
    lines.append(
        f"Intervals: 95%, {study.n_boot} resamples of each set's semantic groups "
        f"(groups: {groups}); rank 1 is best."
    )
    for system, why in study.left_out.items():
        lines.append(f"- {system} is left out of {study.metric}: {why}")
    for ranking in study.sets:
        for system, why in ranking.left_out.items():
            lines.append(f"- {system} is not ranked on {set_name(ranking.name)}: {why}")
        for note in ranking.notes:
            lines.append(f"- {set_name(ranking.name)}: {note}")
    for agreement in study.agreements:
        lines += [
            "",
            f"**{set_name(agreement.other)} vs {set_name(agreement.reference)}.** "
            + agreement.sentence,
        ]
        if agreement.flips:
            lines += ["", *_table(PAIR_HEADERS, flip_rows(agreement))]
    return "\n".join(lines) + "\n"


def compare_markdown(studies: list[RankingStudy]) -> str:
    """compare.md: every study of the run."""
    head = "# Do the test sets rank the systems alike?\n\n"
    return head + "\n".join(study_markdown(s) for s in studies)


def terminal_tables(study: RankingStudy) -> list[Any]:
    """The study's rankings and flips as rich tables."""
    from rich.table import Table

    headers, rows = ranking_rows(study)
    table = Table(title=study_title(study))
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    out: list[Any] = [table]
    for agreement in study.agreements:
        if agreement.flips:
            flips = Table(
                title=f"pairs {set_name(agreement.other)} reverses "
                f"(separated by {set_name(agreement.reference)})"
            )
            for i, header in enumerate(PAIR_HEADERS):
                flips.add_column(header, justify="left" if i < 2 else "right")
            for row in flip_rows(agreement):
                flips.add_row(*row)
            out.append(flips)
    return out


def study_chart(study: RankingStudy, agreement: SetAgreement) -> str:
    """Each system's metric on the reference set (x) against the other set (y), with
    both intervals; the systems of a reversed pair in red, the diagonal dashed."""
    ref = {r.system: r for r in study.sets[0].systems}
    other_set = next(s for s in study.sets if s.name == agreement.other)
    other = {r.system: r for r in other_set.systems}
    flipped = {s for o in agreement.flips for s in (o.better, o.worse)}
    points = [
        (s, ref[s].value, ref[s].ci95, other[s].value, other[s].ci95, s in flipped)
        for s in agreement.systems
    ]
    return charts.agreement_scatter(
        points,
        xlabel=f"{study.metric}, {set_name(agreement.reference)} set",
        ylabel=f"{study.metric}, {set_name(agreement.other)} set",
    )


def compare_again(run: RunDir, why: str) -> StaleInputError:
    """What to run to make the studies of compare.json again, its records having changed
    (``why``): ``compare`` with the options of its latest study (its metric, split,
    reference, resamples, seed, and the systems and rule recorded beside it), each door
    wording it its own way; where compare.json cannot be read, compare as it is."""
    options: dict[str, object] = {}
    with contextlib.suppress(UserError):
        studies = read_compare(run.compare)
        if studies:
            last = studies[-1]
            recorded = open_manifest(run).check("compare").options or {}
            chosen = {
                "metric": last.metric,
                "by": last.by,
                "reference": last.reference,
                "systems": recorded.get("systems"),
                "alpha": last.alpha,
                "resamples": last.n_boot,
                "seed": last.seed,
                "retrieval_rule": recorded.get("rule"),
            }
            defaults = {
                "metric": "accuracy",
                "by": "source",
                "alpha": 0.05,
                "resamples": 1000,
                "seed": 0,
                "retrieval_rule": DEFAULT_RULE,
            }
            options = {
                key: value
                for key, value in chosen.items()
                if value is not None and defaults.get(key) != value
            }
    return StaleInputError(
        f"{run.compare} is stale ({why}): its rankings are left out of the report",
        "compare",
        options,
    )
