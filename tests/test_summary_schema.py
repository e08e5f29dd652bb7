"""summary.json as typed models: the committed JSON Schema, reading files back (old,
broken, newer), and the report layer rendering from the models."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from rich.console import Console

from ragaudit.analysis import summary as summary_module
from ragaudit.analysis.comparisons import verdict
from ragaudit.analysis.significance import PairedCounts, compare
from ragaudit.analysis.summary import SCHEMA_VERSION, Proportion, Summary
from ragaudit.errors import UserError
from ragaudit.report import terminal
from ragaudit.report.summary_file import read_summary, schema_text, write_summary
from ragaudit.report.text import across_variants, blame_rows, summary_markdown
from ragaudit.rundir import RunDir
from ragaudit.steps.analyze import run_analysis

SCHEMA = Path(__file__).resolve().parents[1] / "docs" / "summary.schema.json"


def _rows() -> list[dict[str, Any]]:
    """Two systems, two variants: one system always wrong on "long" (robustness undefined),
    one that times out; gold ids that state the answer, holes, unknown ones; labels."""
    rows = []
    for system in ("rag", "down"):
        for g in range(24):
            for variant in ("short", "long"):
                gold = [f"d{g}"] if g % 4 else ([] if g % 8 == 0 else None)
                correct = system == "rag" and not (g % 5 == 0 and variant == "long")
                row: dict[str, Any] = {
                    "system": system,
                    "query_id": f"{system}-{g}-{variant}",
                    "group_id": f"g{g}",
                    "variant": variant,
                    "correct": correct if system == "rag" or variant == "short" else False,
                    "retrieved_ids": [f"d{g}" if correct else "dx", "dy"],
                    "gold_ids": gold,
                    "label": "fact" if g % 2 else "list",
                }
                if gold is not None:
                    row["gold_kind"] = "states"
                if system == "down" and g % 6 == 0:
                    row["error"] = "timed out after 30 s"
                rows.append(row)
    return rows


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, Summary, str]:
    folder = tmp_path_factory.mktemp("analysis")
    path = folder / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    run = RunDir(folder / "run")
    result = run_analysis(run, neutral=[path])
    return run, result.summary, result.markdown


def test_the_committed_schema_is_the_one_the_models_generate() -> None:
    """docs/summary.schema.json is regenerated with ``python -m
    ragaudit.report.summary_file docs/summary.schema.json``."""
    assert SCHEMA.read_text(encoding="utf-8") == schema_text(), (
        "docs/summary.schema.json is stale: run "
        "python -m ragaudit.report.summary_file docs/summary.schema.json"
    )


def test_every_model_and_field_says_what_it_means() -> None:
    models = [
        value
        for value in vars(summary_module).values()
        if isinstance(value, type)
        and issubclass(value, BaseModel)
        and value.__module__ == summary_module.__name__
        and not value.__name__.startswith("_")
    ]
    assert Summary in models and len(models) >= 8
    for model in models:
        assert model.__doc__ and model.__doc__ != BaseModel.__doc__, model.__name__
        for name, info in model.model_fields.items():
            assert info.description, f"{model.__name__}.{name} has no description"


def test_a_real_summary_validates_against_the_schema(analyzed: tuple[RunDir, Summary, str]) -> None:
    run, summary, _ = analyzed
    data = json.loads(run.summary.read_text(encoding="utf-8"), parse_constant=_no_constant)
    assert data["schema_version"] == SCHEMA_VERSION == 9
    # The analysis filled every part the schema describes.
    assert data["comparisons"] and data["retrieval_ranking"] and data["systems"]
    assert any(c["undefined"] for c in data["comparisons"])
    assert data["systems"]["rag"]["knowledge_base_holes"] is not None
    assert Summary.model_validate(data) == summary
    try:
        import jsonschema
    except ImportError:
        return  # the models are the schema's source; jsonschema is optional here
    jsonschema.validate(data, json.loads(schema_text()))


def _no_constant(name: str) -> None:
    raise ValueError(f"summary.json holds {name}, which is not JSON")


def test_read_back_the_summary_renders_the_same(analyzed: tuple[RunDir, Summary, str]) -> None:
    """summary.md and the terminal tables come from the models alone: the summary read
    back from summary.json gives the same text as the one the analysis computed."""
    run, summary, markdown = analyzed
    again = read_summary(run.summary)
    assert again == summary
    assert summary_markdown(again) == markdown == run.summary_md.read_text(encoding="utf-8")
    assert _terminal(again) == _terminal(summary)


def _terminal(summary: Summary) -> str:
    out = io.StringIO()
    console = Console(file=out, width=160, no_color=True)
    for table in terminal.system_tables(summary):
        console.print(table)
    console.print(terminal.blame_table(summary))
    ranking = terminal.ranking_table(summary)
    assert ranking is not None
    console.print(ranking)
    return out.getvalue()


def test_the_terminal_tables_show_the_figures(analyzed: tuple[RunDir, Summary, str]) -> None:
    _, summary, _ = analyzed
    shown = _terminal(summary)
    rag = summary.systems["rag"]
    assert f"rag  (Acc_retrieval_db across variants: {across_variants(rag)}" in shown
    assert str(rag.variants["short"].accuracy) in shown
    assert "Where the answers go wrong" in shown and "Retrieval ranking" in shown
    assert terminal.judge_failed_lines(summary) == []
    failed = summary.model_copy(update={"judge_failed": {"rag": 3}})
    assert terminal.judge_failed_lines(failed) == [
        "rag: 3 answers left out, the LLM judge failed on them (rerun ragaudit judge to retry them)"
    ]


def test_a_summary_without_schema_version_reads_as_version_1(
    analyzed: tuple[RunDir, Summary, str], tmp_path: Path
) -> None:
    run, summary, _ = analyzed
    data = json.loads(run.summary.read_text(encoding="utf-8"))
    del data["schema_version"]
    old = tmp_path / "summary.json"
    old.write_text(json.dumps(data))
    assert read_summary(old).schema_version == 1
    # Version 1 lacked the label figures and the scan: they read as absent.
    assert read_summary(old).model_copy(update={"schema_version": SCHEMA_VERSION}) == summary


def test_a_summary_from_before_blame_and_errors_still_reads(
    analyzed: tuple[RunDir, Summary, str], tmp_path: Path
) -> None:
    """Fields later versions added (warnings, judge_failed, errors, blame, undefined...)
    take their defaults in a file written before them."""
    run, _, _ = analyzed
    data = json.loads(run.summary.read_text(encoding="utf-8"))
    for key in ("schema_version", "warnings", "judge_failed"):
        del data[key]
    for system in data["systems"].values():
        del system["knowledge_base_holes"]
        for m in system["variants"].values():
            for key in ("n_errors", "retrieval_left_out", "blame", "accuracy_balanced"):
                del m[key]
    for c in data["comparisons"]:
        del c["undefined"], c["a"]["errors"], c["b"]["errors"]
    old = tmp_path / "summary.json"
    old.write_text(json.dumps(data))
    summary = read_summary(old)
    m = summary.systems["rag"].variants["short"]
    assert (m.n_errors, m.blame, m.retrieval_left_out) == (0, None, {})
    assert summary.warnings == [] and summary.judge_failed == {}
    # The report layer renders it: no blame row where blame was not counted.
    assert blame_rows(summary) == []
    assert "| rag | short | 24 | 24 | 0 |" in summary_markdown(summary)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{\n  "systems": [\n', r"summary.json:3: not valid JSON: EOF while parsing a list"),
        ("[1, 2]", r"summary.json: not a valid summary: \(summary\): Input should be an object"),
        ('{"systems": {}}', r"summary.json: not a valid summary: retrieval_rule: Field required"),
        (
            '{"retrieval_rule": "any_hit", "systems": {}, "extra": 1}',
            r"summary.json: not a valid summary: extra: unknown field",
        ),
        (
            '{"schema_version": 10, "retrieval_rule": "any_hit", "systems": {}}',
            r"summary.json: not a valid summary: schema_version: schema_version 10 is newer than "
            r"this ragaudit understands \(9\); upgrade ragaudit",
        ),
        (
            '{"retrieval_rule": "x", "systems": {"s": {"system": "s", "acc_retrieval_db": '
            '{"value": NaN, "k": 0, "n": 0, "ci95": [0, 1]}, "variants": {}}}}',
            r"summary.json: not a valid summary: systems.s.acc_retrieval_db.value: Input should be "
            r"a finite number$",
        ),
    ],
)
def test_a_broken_summary_is_one_line_naming_the_file(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "summary.json"
    path.write_text(text)
    with pytest.raises(UserError, match="^" + re.escape(f"{tmp_path}/") + message) as caught:
        read_summary(path)
    assert "\n" not in str(caught.value)


def test_a_missing_summary_says_to_analyze_first(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="run ragaudit analyze first"):
        read_summary(tmp_path / "summary.json")


def test_an_undefined_figure_is_null_never_nan(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        Proportion(value=math.nan, k=0, n=0, ci95=(0.0, 1.0))
    empty = Summary(retrieval_rule="all_gold", systems={})
    write_summary(tmp_path / "summary.json", empty)
    assert json.loads((tmp_path / "summary.json").read_text()) == {
        "schema_version": 9,
        "outcome": "answer",
        "retrieval_rule": "all_gold",
        "warnings": [],
        "systems": {},
        "judge_failed": {},
        "comparisons": [],
        "retrieval_ranking": {},
        "by_label": {},
        "label_comparisons": [],
        "labels": None,
        "weight_scan": None,
        "lambda_study": None,
        "by_source": {},
        "documents": None,
        "reference_free": None,
        "stability": {},
        "cost": None,
    }


def test_a_verdict_goes_on_in_lower_case_after_its_context() -> None:
    even = {f"g{i}": (1, 2) for i in range(20)}
    result = compare(PairedCounts.from_dicts(even, even))
    assert not result.significant()
    alone = verdict(result, "short", "long")
    within = verdict(result, "short", "long", context="rag, retrieval: ")
    assert alone.startswith("No significant accuracy difference between short and long")
    assert within == "rag, retrieval: no" + alone.removeprefix("No")
