"""The Python API mirrors the CLI, for notebooks: the same steps on the same run files."""

from __future__ import annotations

from pathlib import Path

from ragaudit.config import Config
from ragaudit.records import QueryRecord, read_jsonl
from ragaudit.rundir import RunDir
from ragaudit.steps.generate import generate_dataset
from ragaudit.steps.templates import check, make_sql_templates, make_text_templates


def test_the_pipeline_from_python(tmp_path: Path) -> None:
    config = Config.model_validate(
        {
            "run": {"root": str(tmp_path), "name": "nb"},
            "database": {"url": "example"},
            "templates": {"per_style": 2},
        }
    )
    run = RunDir.from_config(config).create()
    sql = make_sql_templates(config, run)
    assert sql.written and sql.templates and not sql.rejected
    text = make_text_templates(config, run)  # no LLM: the deterministic checks alone
    assert all(len(styles["short"]) == 2 for styles in text.texts.values())
    # Only rejections: entity-less wordings ("City for 'X'") of two templates read the same.
    assert text.verdicts and not any(v.verified for v in text.verdicts.values())
    assert all((v.reason or "").startswith("conflict: ") for v in text.verdicts.values())
    assert all(c.unchecked for c in text.counts.values())
    assert check(config, run) == []
    options = config.generate.model_copy(update={"balanced": True, "unverified": True})
    stats = generate_dataset(config, run, options)
    records = list(read_jsonl(run.dataset, QueryRecord))
    assert len(records) == sum(stats.overview().text_queries.values())
    assert {r.variant for r in records} == {"short", "long"}
