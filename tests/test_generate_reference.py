"""GRAMMAR-Gen reproduces the reference tool's datasets from its own templates."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ragaudit.db import Database, introspect
from ragaudit.generate import (
    DatasetStats,
    GenerateOptions,
    GoldRule,
    generate,
    import_reference_sql,
    import_reference_text,
)
from ragaudit.generate.sql.templates import normalize_sql


def _dataset(root: Path, name: str, db_file: str, **options):  # type: ignore[no-untyped-def]
    db = Database(f"sqlite:///{root / db_file}")
    schema = introspect(db)
    templates = import_reference_sql(root / name / "sql_templates.json")
    texts = import_reference_text(root / name / "text_templates_short.json", "short", templates)
    import_reference_text(root / name / "text_templates_long.json", "long", templates, into=texts)
    stats = DatasetStats()
    records = list(generate(db, schema, templates, texts, GenerateOptions(**options), stats=stats))
    return templates, records, stats


def _bindings_from_group_sql(template_sql: str, group_sql: str) -> dict[str, str] | None:
    """The values the reference tool pasted into its template (it stores the filled SQL)."""
    pattern = re.escape(normalize_sql(template_sql))
    keys = re.findall(r"'\\\[([^\]]+?)\\\]'", pattern)
    for key in keys:
        pattern = pattern.replace(f"'\\[{key}\\]'", "'(.*?)'", 1)
    match = re.fullmatch(pattern, normalize_sql(group_sql))
    if match is None:
        return None
    return {
        key.replace("\\", ""): value.replace("''", "'")
        for key, value in zip(keys, match.groups(), strict=True)
    }


def _reference_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _check_every_reference_line(reference: Path, templates, records) -> int:  # type: ignore[no-untyped-def]
    by_sql = {normalize_sql(t.sql): t.id for t in templates}
    ours = {
        (r.template_id, tuple(sorted((k, str(v)) for k, v in r.bindings.items()))): r
        for r in records
    }
    lines = _reference_lines(reference)
    for line in lines:
        template_id = by_sql[normalize_sql(line["template_id"])]
        sql = next(t.sql for t in templates if t.id == template_id)
        bindings = _bindings_from_group_sql(sql, line["group_id"])
        assert bindings is not None, line["group_id"]
        key = (template_id, tuple(sorted(bindings.items())))
        assert key in ours, f"no group for {line['group_id']}"
        answer = ours[key].reference
        if answer.is_null:  # the reference tool printed a NULL answer as Python's "None"
            assert line["reference"] in (None, "None"), line
        else:
            assert answer.display == str(line["reference"]), line
    return len(lines)


def test_aurp_balanced_has_157_groups_and_471_queries_per_style(grammar_reference: Path) -> None:
    rules = [GoldRule(placeholder=p) for p in ("Client.Name", "Employee.Name", "Project.Name")]
    # The reference tool asks groups whose answer is NULL; ragaudit does with include_null.
    templates, records, stats = _dataset(
        grammar_reference,
        "aurp",
        "aurp/aurp.sqlite",
        balanced=True,
        gold_ids=rules,
        include_null=True,
    )
    overview = stats.overview()
    assert overview.sql_templates == 10
    assert overview.semantic_groups == 157
    assert overview.null_answer_groups == 1
    _, _, default = _dataset(grammar_reference, "aurp", "aurp/aurp.sqlite", balanced=True)
    assert default.overview().semantic_groups == 156  # by default it is dropped, and counted
    assert default.overview().null_answer_groups == 1
    assert overview.multi_answer_groups == 0
    assert overview.text_queries == {"short": 471, "long": 471}
    assert len({r.group_id for r in records}) == 157
    assert len({r.query_id for r in records}) == len(records) == 942
    checked = _check_every_reference_line(
        grammar_reference / "aurp_short_balanced.jsonl", templates, records
    )
    assert checked == 471
    # The wordings are the reference's own, filled with the same values.
    reference_queries = {
        line["query"].strip()
        for line in _reference_lines(grammar_reference / "aurp_short_balanced.jsonl")
    }
    assert reference_queries <= {r.query for r in records if r.variant == "short"}
    gold = {
        line["query"].strip(): line["gold_ids"]
        for line in _reference_lines(grammar_reference / "aurp_short_balanced.jsonl")
    }
    assert all(gold[r.query] == r.gold_ids for r in records if r.query in gold)


def test_spider_open_has_185_combinations_and_57_answered_groups(
    grammar_reference: Path,
) -> None:
    templates, records, stats = _dataset(
        grammar_reference,
        "spider_open",
        "spider_open/company_employee.sqlite",
        balanced=True,
        include_null=True,
    )
    overview = stats.overview()
    assert overview.combinations == 185
    assert overview.semantic_groups == 57
    join = next(t for t in stats.templates if t.template_id.startswith("year-working"))
    assert (join.combinations, join.groups) == (133, 5)
    for variant in ("short", "long"):
        _check_every_reference_line(
            grammar_reference / f"spider_open_{variant}_balanced.jsonl", templates, records
        )


def test_ids_are_stable_across_runs(grammar_reference: Path) -> None:
    _, first, _ = _dataset(grammar_reference, "aurp", "aurp/aurp.sqlite")
    _, second, _ = _dataset(grammar_reference, "aurp", "aurp/aurp.sqlite")
    assert [r.query_id for r in first] == [r.query_id for r in second]
    assert [r.group_id for r in first] == [r.group_id for r in second]
