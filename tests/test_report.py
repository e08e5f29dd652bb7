"""ragaudit report: one self-contained HTML file, checked in headless Chromium: it renders,
its charts are there, the browser logs no error, it makes no network request, and a
<script> planted in a document stays inert text."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragaudit.records import (
    QueryRecord,
    Reference,
    ResponseRecord,
    RetrievedItem,
    write_jsonl_atomic,
)
from ragaudit.records.models import CandidateRecord, CritiqueRating
from ragaudit.rundir import RunDir
from ragaudit.store.manifest import open_manifest
from tests.conftest import IN_CI
from tests.support.cli import ragaudit

PLANTED = (
    '<script>window.__pwned = 1; document.title = "pwned";</script>'
    '<img src="x" onerror="window.__pwned = 2">'
)


def _run(tmp_path: Path, documents: bool = False) -> Path:
    """A judged and analyzed run of two systems and two variants, with a planted script in
    a retrieved document and in a response. With ``documents``, half the groups come from
    a generation from documents, whose candidates are there too."""
    root = tmp_path / "runs" / "default"
    queries, responses = [], {"kw": [], "dense": []}
    for g in range(12):
        for variant in ("short", "long"):
            for i in range(2):
                qid = f"q{g}-{variant}-{i}"
                queries.append(
                    QueryRecord(
                        query_id=qid,
                        group_id=f"g{g}",
                        variant=variant,
                        query=f"Who manages project {g}? ({variant} wording {i})",
                        reference=Reference.from_values([f"Person {g}"]),
                        gold_ids=[f"doc{g}"],
                        source="document" if documents and g >= 6 else "sql",
                    )
                )
                for system in responses:
                    # kw fails one long query in half the groups; dense always fails group 0.
                    right = not (
                        (system == "kw" and variant == "long" and g % 2 == 0 and i == 0)
                        or (system == "dense" and g == 0)
                    )
                    doc = f"doc{g}" if right else f"doc{g + 1}"
                    text = PLANTED if g == 0 else f"Project {g} is managed by Person {g}."
                    responses[system].append(
                        ResponseRecord(
                            query_id=qid,
                            system=system,
                            response=f"Person {g}" if right else PLANTED,
                            retrieved=[RetrievedItem(id=doc, score=1.0, text=text)],
                        )
                    )
    write_jsonl_atomic(root / "dataset.jsonl", queries)
    for system, records in responses.items():
        write_jsonl_atomic(root / "responses" / f"{system}.jsonl", records)
    if documents:
        write_jsonl_atomic(root / "candidates.jsonl", _candidates())
    for step in (("judge", "--no-llm"), ("analyze",), ("report",)):
        done = ragaudit(*step, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    return root / "report.html"


def _candidates() -> list[CandidateRecord]:
    """Six statements candidates (one dropped by its critique) and their ratings."""
    out = []
    for g in range(6, 12):
        requested = ("fact_single", "summary")[g % 2]
        low = g == 11
        out.append(
            CandidateRecord(
                candidate_id=f"c{g}",
                context_id=f"doc{g}#0",
                gold_ids=[f"doc{g}"],
                strategy="statements",
                requested_label=requested,
                question=f"Who manages project {g}?",
                answer=f"Person {g}",
                critiques={
                    n: CritiqueRating(rating=2 if low and n == "specificity" else 5, reason="")
                    for n in (
                        "stand_alone",
                        "specificity",
                        "question_grounding",
                        "answer_grounding",
                    )
                },
                observed_label="fact_single",
                accepted=not low,
                dropped="critique: specificity 2" if low else None,
                calls=5,
                tokens=900,
            )
        )
    return out


def test_report_splits_the_sources_and_shows_the_generation(tmp_path: Path) -> None:
    html = _run(tmp_path, documents=True).read_text()
    summary = json.loads((tmp_path / "runs" / "default" / "summary.json").read_text())
    assert set(summary["by_source"]) == {"document", "sql"}
    document = summary["by_source"]["document"]["systems"]["dense"]["variants"]["short"]
    assert document["n_queries"] == 12  # 6 groups of 2 short wordings
    statements = summary["documents"]["strategies"]["statements"]
    assert (statements["candidates"], statements["accepted"]) == (6, 5)
    assert statements["calls_per_pair"] == 6.0  # 30 calls for 5 accepted pairs
    assert statements["confusion"] == {
        "fact_single": {"fact_single": 3},
        "summary": {"fact_single": 3},
    }
    section = html.split('id="by-source"', 1)[1].split("<h2", 1)[0]
    assert "SQL-grounded questions" in section and "Questions from the documents" in section
    generation = html.split('id="documents"', 1)[1].split("<h2", 1)[0]
    assert 'id="chart-critiques"' in generation and "<svg" in generation
    row = re.search(r"<tr><td>summary</td>(.*?)</tr>", generation)
    assert row is not None  # Figure 2: summary was asked, fact_single observed
    assert re.findall(r'<td class="num">(\d+)</td>', row.group(1)) == ["3", "0", "0", "0"]
    assert "0.67 [" in generation  # specificity passed 2 of 3 summary candidates


def test_report_shows_the_rankings_of_compare(tmp_path: Path) -> None:
    _run(tmp_path, documents=True)
    for step in (("compare", "--metric", "accuracy", "--resamples", "200"), ("report",)):
        done = ragaudit(*step, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    html = (tmp_path / "runs" / "default" / "report.html").read_text()
    section = html.split('id="rankings"', 1)[1].split("<h2", 1)[0]
    assert "Ranked on accuracy, test sets by source (reference: SQL-grounded)" in section
    assert re.search(r"<tr><td>kw</td>", section) and re.search(r"<tr><td>dense</td>", section)
    assert 'id="compare-0-0"' in section and "<svg" in section
    assert "Kendall&#39;s tau-b" in section


def test_report_escapes_data_and_states_the_verdicts(tmp_path: Path) -> None:
    html = _run(tmp_path).read_text()
    assert "<script" not in html.replace("&lt;script", "")  # no script tag at all
    assert "&lt;script&gt;window.__pwned" in html
    assert "kw: long is less" in html  # a headline verdict
    assert html.count("<svg") == 3
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)  # no network assets
    assert "@import" not in html and not re.search(r"url\((?!#)", html)  # only #clip-paths


def test_report_needs_an_analysis(tmp_path: Path) -> None:
    done = ragaudit("report", cwd=tmp_path)
    assert done.returncode == 2 and "run ragaudit analyze first" in done.stderr


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        if IN_CI:
            raise RuntimeError("CI must test the report in Chromium: make test installs it")
        pytest.skip("headless Chromium is not installed (scripts/ensure-chromium.sh)")
    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium fetch a driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or ""
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
    try:
        yield driver
    finally:
        driver.quit()


def test_report_in_headless_chromium(browser: object, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    path = _run(tmp_path)
    driver.get(path.as_uri())  # type: ignore[attr-defined]
    assert driver.title == "ragaudit report: default"  # type: ignore[attr-defined]
    assert driver.execute_script("return window.__pwned === undefined")  # type: ignore[attr-defined]
    charts = driver.find_elements(By.CSS_SELECTOR, "figure.chart svg")  # type: ignore[attr-defined]
    assert len(charts) == 3 and all(c.size["width"] > 100 for c in charts)
    body = driver.find_element(By.TAG_NAME, "body").text  # type: ignore[attr-defined]
    assert "is less robust than" in body
    for details in driver.find_elements(By.TAG_NAME, "details"):  # type: ignore[attr-defined]
        driver.execute_script("arguments[0].open = true", details)  # type: ignore[attr-defined]
    shown = driver.find_element(By.TAG_NAME, "body").text  # type: ignore[attr-defined]
    assert "<script>window.__pwned = 1;" in shown  # the planted script is visible text
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]  # type: ignore[attr-defined]
    assert errors == []
    requests = [
        json.loads(entry["message"])["message"]
        for entry in driver.get_log("performance")  # type: ignore[attr-defined]
    ]
    urls = [
        m["params"]["request"]["url"]
        for m in requests
        if m["method"] == "Network.requestWillBeSent"
    ]
    assert urls and all(u == path.as_uri() for u in urls), urls


def test_report_names_the_reports_a_world_rewrite_repaired_or_failed(tmp_path: Path) -> None:
    report = _run(tmp_path)
    world = tmp_path / "world"
    world.mkdir()
    rewrite = {
        "model": "local:m.gguf",
        "rewritten": 17,
        "repaired": 2,
        "failed": 1,
        "on_failure": "template",
        "repaired_ids": ["Valdoro", "Kesmarin"],
        "failed_ids": ["<script>x()</script>"],
    }
    meta = {"documents": 20, "facts_stated": 93, "rewrite": rewrite}
    (world / "world.json").write_text(json.dumps(meta))
    config = report.parent / "ragaudit.yaml"
    settings = yaml.safe_load(config.read_text()) if config.exists() else {}
    settings["corpus"] = {"path": str(world / "documents.jsonl")}
    config.write_text(yaml.safe_dump(settings))
    assert "Knowledge base" not in report.read_text()  # no world behind the first report
    done = ragaudit("report", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    html = report.read_text()
    assert "20 project reports stating 93 facts" in html
    assert (
        "17 passed at once, 2 after one repair, 1 failed twice (kept in template wording)" in html
    )
    assert "Valdoro, Kesmarin" in html
    assert "&lt;script&gt;x()&lt;/script&gt;" in html and "<script>x()" not in html


def test_report_shows_the_wordings_verified_and_rejected_per_style(tmp_path: Path) -> None:
    report = _run(tmp_path)
    stats = {  # the key of files written before it was named "overview": still read
        "table2": {
            "sql_templates": 1,
            "combinations": 12,
            "semantic_groups": 12,
            "multi_answer_groups": 0,
            "text_templates": {"short": 2},
            "text_queries": {"short": 24},
            "conflicting_groups": 2,
            "wordings": {
                "short": {
                    "proposed": 5,
                    "verified": 2,
                    "rejected": 3,
                    "unchecked": 0,
                    "rate": 0.4,
                    "reasons": {"back-mapping": 2, "conflict": 1},
                    "examples": [
                        {"template": "t", "text": "Where is '[P.Name]'?", "reason": PLANTED}
                    ],
                },
                "long": {
                    "proposed": 1,
                    "verified": 0,
                    "rejected": 0,
                    "unchecked": 1,
                    "rate": None,
                    "reasons": {},
                    "examples": [],
                },
            },
        }
    }
    _plant_dataset_stats(report.parent, stats)
    done = ragaudit("report", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    html = report.read_text()
    table = html.split('id="wording-verification"', 1)[1].split("</table>", 1)[0]
    row = re.search(r"<tr><td>short</td>(.*?)</tr>", table, re.DOTALL)
    assert row is not None
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))
    assert cells == ["5", "2", "3", "0", "40%", "2 back-mapping, 1 conflict"]
    assert "n/a (none judged)" in html  # an undefined rate is said to be undefined
    assert "groups dropped: a question reads as another's with another answer" in html
    assert "&lt;script&gt;window.__pwned" in html and "<script>window" not in html
    assert "only verified wordings are asked" in html
    # A dataset generated with --unverified says so, with the count, not "only verified".
    stats["table2"]["unverified_asked"] = 1
    _plant_dataset_stats(report.parent, stats)
    assert ragaudit("report", cwd=tmp_path).returncode == 0
    html = report.read_text()
    assert "only verified wordings are asked" not in html
    assert "so 1 wording never verified is asked too" in html
    # A file from before the per-table view: no table, and a line that says why.
    assert 'id="per-table-counts"' not in html
    assert "written before ragaudit counted the dataset per table" in html


def test_report_shows_the_dataset_per_table_and_the_tables_no_question_reads(
    tmp_path: Path,
) -> None:
    report = _run(tmp_path)
    overview = {
        "sql_templates": 3,
        "semantic_groups": 12,
        "text_templates": {"short": 4, "long": 2},
        "text_queries": {"short": 20, "long": 10},
    }
    tables = [
        {
            "table": "Client",
            "rows": 5,
            "attributes": 4,
            "attributes_asked": ["Name", "City"],
            "sql_templates": 2,
            "text_templates": {"short": 3, "long": 1},
            "semantic_groups": 9,
            "text_queries": {"short": 15, "long": 5},
            "why": None,
        },
        {
            "table": "Project",
            "rows": 6,
            "attributes": 8,
            "attributes_asked": ["Name"],
            "sql_templates": 2,
            "text_templates": {"short": 2, "long": 2},
            "semantic_groups": 6,
            "text_queries": {"short": 8, "long": 8},
            "why": None,
        },
        {"table": "Audit", "rows": 0, "attributes": 2, "why": f"no rows {PLANTED}"},
    ]
    stats = {"overview": overview, "tables": tables}
    _plant_dataset_stats(report.parent, stats)
    done = ragaudit("report", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    html = report.read_text()
    section = html.split('id="per-table"', 1)[1].split("</table>", 1)[0]
    rows = [
        re.findall(r"<td[^>]*>(.*?)</td>", row)
        for row in re.findall(r"<tr>(.*?)</tr>", section, re.DOTALL)
    ]
    assert rows[1:] == [
        ["Client", "5", "2 of 4", "2", "4", "9", "20", ""],
        ["Project", "6", "1 of 8", "2", "4", "6", "16", ""],
        [
            "Audit",
            "0",
            "0 of 2",
            "0",
            "0",
            "0",
            "0",
            "no rows " + PLANTED.replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;"),
        ],
        # The dataset's own totals: a template reading both tables counts once.
        ["dataset", "11", "3 of 14", "3", "6", "12", "30", ""],
    ]
    assert "No question reads 1 table (Audit)" in html
    assert "<script>window" not in html


def test_the_metrics_table_fits_1280_pixels_and_explains_its_terms(
    browser: object, tmp_path: Path
) -> None:
    """At 1,280 px the metrics tables fit the page (no scrolling sideways, the page's or
    the table's), and every column header says what it means: a tooltip, and a line of
    the legend under the tables."""
    from selenium.webdriver.common.by import By

    driver: Any = browser
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False},
    )
    try:
        driver.get(_run(tmp_path, documents=True).as_uri())
        assert driver.execute_script("return window.innerWidth") == 1280
        tables = driver.find_elements(By.CSS_SELECTOR, "table.metrics")
        assert len(tables) >= 2  # the pooled tables and the tables per source
        for table in tables:
            width, room = driver.execute_script(
                "const t = arguments[0];"
                "return [t.getBoundingClientRect().width, t.parentElement.clientWidth];",
                table,
            )
            assert 0 < width <= room <= 1280, (width, room)
        page = driver.execute_script("return document.documentElement.scrollWidth")
        assert page <= 1280
        legend = driver.find_element(By.ID, "metrics-terms").text
        for header in tables[0].find_elements(By.TAG_NAME, "th"):
            term = header.text.split("\n")[0].strip()
            title = header.get_attribute("title") or ""
            assert len(title) > 20, (term, title)  # a sentence, not the name again
            assert f"{term}: {title}" in legend, (term, legend)
        for term in ("Acc_retrieval_db", "R", "λ"):
            assert re.search(rf"(^|\n){re.escape(term)}\b.*: ", legend), term
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_report_shows_the_coverage_of_the_schema_while_its_templates_are_the_runs(
    tmp_path: Path,
) -> None:
    """templates sql counts what its templates reach; the report shows it per table, with
    every unreached column a user could ask about and why, as the Python coverage says;
    once templates/sql.yaml is edited the coverage is no longer shown as current."""
    import ragaudit as ra
    from ragaudit.generate.sql.coverage import ID_LIKE
    from ragaudit.rundir import RunDir

    project = ra.Project.example(root=tmp_path, progress="none")
    project.config.templates.per_kind = 1  # type: ignore[assignment]  # a sample leaves some out
    coverage = project.templates_sql().coverage
    assert coverage is not None
    project.templates_text(verify=False)
    dataset = project.generate(unverified=True)
    truth = {q.query: q.reference.display for q in dataset}
    project.run([ra.system(lambda q: truth[q], name="rag")])
    project.judge(llm=None)
    project.analyze()
    html = project.report().read_text()
    section = html.split('id="schema-coverage"', 1)[1].split("</table>", 1)[0]
    for name, table in coverage.tables.items():
        assert f"<td>{name}</td>" in section
        assert f"{table.reached} of {len(table.columns)}" in section
    unreached = [
        f"{name}.{column}: {c.why}"
        for name, t in coverage.tables.items()
        for column, c in t.columns.items()
        if c.why is not None and c.why != ID_LIKE
    ]
    assert unreached, "the example has columns no template reaches"
    shown = html.split('id="schema-coverage"', 1)[1].split("</ul>", 1)[0]
    for line in unreached:
        assert f"not asked: {line}" in html.replace("&#39;", "'"), line
    assert len(shown.split("<li>")) - 1 == len(unreached)
    sql = RunDir(project.run_dir).templates_sql
    sql.write_text(sql.read_text() + "\n# edited by hand\n")
    html = project.report().read_text()
    assert 'id="schema-coverage"' not in html
    assert "templates/sql.yaml changed since its coverage was counted" in html


def _plant_dataset_stats(run: Path, stats: dict) -> None:
    """A dataset.stats.json written as generate writes it, with its manifest entry (a
    hand-written one, with none, is recounted from the dataset by every reader)."""
    (run / "dataset.stats.json").write_text(json.dumps(stats))
    open_manifest(RunDir(run)).record("dataset_stats")
