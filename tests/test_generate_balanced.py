"""``generate --balanced`` asks the same number of wordings in every style: a template
with no wording in one style is asked nothing, and it is then counted as skipped, with
why, everywhere the dataset is counted (the overview, the per-table view), never as a
template asked with groups of no question."""

from __future__ import annotations

from pathlib import Path

import yaml

import ragaudit as ra
from ragaudit.rundir import RunDir

TEMPLATE = "industry-by-client-name"


def test_a_template_balanced_to_no_wording_is_skipped_and_counted_so(tmp_path: Path) -> None:
    project = ra.Project.example(root=tmp_path, progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    run = RunDir(project.run_dir)
    texts = yaml.safe_load(run.templates_text.read_text(encoding="utf-8"))
    texts["templates"][TEMPLATE]["long"] = []
    run.templates_text.write_text(yaml.safe_dump(texts, sort_keys=False), encoding="utf-8")

    dataset = project.generate(unverified=True, balanced=True)
    asked = {q.template_id for q in dataset}
    assert TEMPLATE not in asked
    overview = dataset.stats.overview()
    why = overview.skipped_templates[TEMPLATE]
    assert "style long" in why and "balanced" in why
    # The overview counts the templates and groups that were asked, and only those.
    assert overview.sql_templates == len(asked)
    groups = {q.group_id for q in dataset}
    assert overview.semantic_groups == len(groups)
    client = next(t for t in dataset.tables if t.table == "Client")
    reading = {t.template_id for t in dataset.stats.templates if "Client" in t.tables}
    assert TEMPLATE in reading
    assert client.sql_templates == len(reading & asked)

    # Unbalanced, the template's short wordings are asked.
    dataset = project.generate(unverified=True, balanced=False)
    assert TEMPLATE in {q.template_id for q in dataset}
