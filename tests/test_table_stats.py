"""The paper's per-table statistics (GRAMMAR v1, Table 4 / Appendix G; issue 39, item 5):
for every table of the database, its rows and attributes, the templates that read it and
the groups and questions they gave, and why a table no question reads has none. Counted
on the example database in SQLite, DuckDB and PostgreSQL and checked against the database
itself (rows and columns counted with SQL here) and against the files the other steps
wrote (templates/sql.yaml's tables, dataset.jsonl's groups and questions)."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import ragaudit as ra
from ragaudit.db import SchemaInfo
from ragaudit.db.schema import ColumnInfo, TableInfo
from ragaudit.generate.dataset import DatasetStats, TemplateStats, table_stats
from ragaudit.generate.sql.templates import load_templates, save_templates
from ragaudit.rundir import RunDir
from tests.conftest import sqlite_people
from tests.support import postgres as pg
from tests.support.cli import ragaudit

EXAMPLE = Path(ra.__file__).parent / "data" / "example.sqlite"
TABLES = ("Department", "Employee", "Client", "Project")  # in the order their keys allow


def _copy_example(url_kind: str, tmp_path: Path, server: pg.PostgresServer | None) -> str:
    """The bundled example database in ``url_kind`` (its own DDL, its rows); its URL."""
    if url_kind == "sqlite":
        shutil.copy(EXAMPLE, tmp_path / "example.sqlite")
        return f"sqlite:///{tmp_path / 'example.sqlite'}"
    source = sqlite3.connect(EXAMPLE)
    ddl = {
        name: sql
        for name, sql in source.execute("SELECT name, sql FROM sqlite_master WHERE type='table'")
    }
    rows = {t: source.execute(f'SELECT * FROM "{t}"').fetchall() for t in TABLES}
    source.close()
    if url_kind == "duckdb":
        import duckdb

        conn = duckdb.connect(str(tmp_path / "example.duckdb"))
        for table in TABLES:
            conn.execute(ddl[table])
            marks = ", ".join(["?"] * len(rows[table][0]))
            conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows[table])
        conn.close()
        return f"duckdb:///{tmp_path / 'example.duckdb'}"
    import psycopg

    assert server is not None
    dbname = f"example_{abs(hash(str(tmp_path))) % 10**8}"
    with psycopg.connect(server.conninfo, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {dbname}")
        admin.execute(f"CREATE DATABASE {dbname}")
    conninfo = server.conninfo.replace("dbname=postgres", f"dbname={dbname}")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        for table in TABLES:  # unquoted, as PostgreSQL users write them: lower case
            conn.execute(ddl[table])
            marks = ", ".join(["%s"] * len(rows[table][0]))
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO {table} VALUES ({marks})", rows[table])
    return server.url.rsplit("/", 1)[0] + f"/{dbname}"


def _sql(url: str) -> Callable[[str], Any]:
    """Plain SQL on the test's database: the rows of a statement, and its column names."""

    def run(sql: str) -> tuple[list[tuple[Any, ...]], list[str]]:
        if url.startswith("sqlite:///"):
            conn: Any = sqlite3.connect(url.removeprefix("sqlite:///"))
        elif url.startswith("duckdb:///"):
            import duckdb

            conn = duckdb.connect(url.removeprefix("duckdb:///"), read_only=True)
        else:
            import psycopg

            conn = psycopg.connect(url)
        try:
            cur = conn.cursor()
            cur.execute(sql)
            return list(cur.fetchall()), [d[0] for d in cur.description]
        finally:
            conn.close()

    return run


@pytest.fixture(params=["sqlite", "duckdb", "postgresql"])
def example_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    server = request.getfixturevalue("postgres_server") if request.param == "postgresql" else None
    return _copy_example(request.param, tmp_path, server)


def test_per_table_counts_match_the_database_and_the_dataset(
    example_url: str, tmp_path: Path
) -> None:
    project = ra.Project(root=tmp_path, db=example_url, progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    dataset = project.generate(unverified=True)
    per_table = dataset.tables
    sql = _sql(example_url)
    run = RunDir(project.run_dir)
    templates = load_templates(run.templates_sql).templates
    reads = {t.id: {n.lower() for n in t.tables} for t in templates}
    queries = [json.loads(line) for line in run.dataset.read_text().splitlines()]
    assert [t.table.lower() for t in per_table] == sorted(t.lower() for t in TABLES)
    for t in per_table:
        ((count,),), _ = sql(f"SELECT COUNT(*) FROM {t.table}")
        _, columns = sql(f"SELECT * FROM {t.table} LIMIT 0")
        assert t.rows == count and t.attributes == len(columns)
        mine = {tid for tid, tables in reads.items() if t.table.lower() in tables}
        assert t.sql_templates == len(mine)
        asked = [q for q in queries if q["template_id"] in mine]
        assert t.semantic_groups == len({q["group_id"] for q in asked})
        assert t.text_queries == dict(Counter(q["variant"] for q in asked))
        wordings = {(q["variant"], q["text_template_id"]) for q in asked}
        assert sum(t.text_templates.values()) == len(wordings)
        assert t.why is None  # every table of the example is read by some question
    # What the questions ask for or name: never an id (the enumerator's rule), and every
    # other column of the example but Project's client and manager ids and Employee's
    # Department (a foreign key, asked through the join as Department's own name).
    asked = {t.table.lower(): {c.lower() for c in t.attributes_asked} for t in per_table}
    assert asked == {
        "client": {"name", "industry", "city"},
        "department": {"name", "floor"},
        "employee": {"name", "jobtitle", "supervisor"},
        "project": {"name", "city", "startdate", "enddate", "budgeteur"},
    }
    # A join template counts for both tables: the tables' groups add up to more than the
    # dataset's, which counts each group once.
    overview = dataset.stats.overview()
    assert overview.semantic_groups == len({q["group_id"] for q in queries})
    assert sum(t.semantic_groups for t in per_table) > overview.semantic_groups
    # The same view read back from dataset.stats.json, as the report and a later session
    # read it.
    again = ra.Project(root=tmp_path, db=example_url, progress="none").dataset().tables
    assert again.tables == per_table.tables
    frame = again.to_pandas()
    assert list(frame["rows"]) == [t.rows for t in per_table]


def test_a_table_no_question_reads_says_why(people_db_url: str, tmp_path: Path) -> None:
    project = ra.Project(root=tmp_path, db=people_db_url, progress="none")
    found = project.templates_sql()
    # The user's file leaves out every question asked by a person's name.
    path = RunDir(project.run_dir).templates_sql
    kept = [
        t
        for t in load_templates(path).templates
        if {p.table for p in t.placeholder_list} != {"person"}
    ]
    assert len(kept) < len(found.templates)
    save_templates(path, kept)
    project.templates_text(verify=False)
    per_table = project.generate(unverified=True).tables
    why = {t.table: t.why for t in per_table}
    sql = _sql(people_db_url)
    for t in per_table:
        assert t.rows == sql(f"SELECT COUNT(*) FROM {t.table}")[0][0][0]
    assert why["empty_thing"] == "no rows" and per_table["empty_thing"].rows == 0
    # The enumerator reaches a person's badges and assignments through the person (how
    # many, which), so it has no note for them; the user's file leaves those out with the
    # person's own questions. A table the enumerator would ask, which the file leaves out:
    # generate does not search the data again (what templates sql costs), it says the file
    # has none.
    assert set(found.notes) == {"empty_thing"}
    for table in ("badge", "assignment", "person"):
        assert why[table] == "no template of templates/sql.yaml reads it"
    assert why["event"] is None and why["loose"] is None
    assert [t.table for t in per_table.uncovered] == [
        "assignment",
        "badge",
        "empty_thing",
        "person",
    ]
    assert all(t.queries == 0 and t.sql_templates == 0 for t in per_table.uncovered)
    # In the DataFrame, a table that has questions has no reason: missing, never NaN.
    frame = per_table.to_pandas().set_index("table")
    assert frame.loc["empty_thing", "why"] == "no rows"
    assert frame.loc["event", "why"] is pd.NA


def _schema(*tables: tuple[str, int, int]) -> SchemaInfo:
    return SchemaInfo(
        "sqlite",
        [
            TableInfo(name, [ColumnInfo(f"c{i}", "TEXT") for i in range(columns)], row_count=rows)
            for name, rows, columns in tables
        ],
    )


def test_templates_that_gave_no_question_say_what_became_of_their_groups() -> None:
    schema = _schema(("A", 3, 2), ("B", 4, 3), ("C", 5, 2), ("D", 2, 2), ("E", 2, 2))
    asked = TemplateStats(
        "ab",
        groups=3,
        kept_groups=3,
        queries={"short": 6},
        text_templates={"short": 2},
        tables=["A", "B"],
        columns=["A.c0", "B.c1"],
    )
    stats = DatasetStats(
        templates=[
            asked,
            TemplateStats(
                "c", skipped="no wording to ask (none written, or none verified)", tables=["C"]
            ),
            TemplateStats(
                "d",
                groups=4,
                multi_answer_groups=3,
                null_answer_groups=1,
                queries={"short": 0},
                text_templates={"short": 1},
                tables=["D"],
            ),
            TemplateStats(
                "e", groups=0, queries={"short": 0}, text_templates={"short": 1}, tables=["E"]
            ),
        ]
    )
    by_name = {t.table: t for t in table_stats(stats, schema)}
    # The join template counts for both of its tables, with the columns of each.
    for name, column in (("A", "c0"), ("B", "c1")):
        t = by_name[name]
        assert (t.sql_templates, t.semantic_groups, t.text_queries, t.why) == (
            1,
            3,
            {"short": 6},
            None,
        )
        assert t.attributes_asked == [column]
    assert by_name["B"].rows == 4 and by_name["B"].attributes == 3
    assert by_name["C"].why == (
        "no question: 1 of 1 templates skipped: no wording to ask (none written, or none verified)"
    )
    assert by_name["C"].sql_templates == 0  # a skipped template asks nothing
    assert by_name["D"].why == (
        "no question: 3 groups with several answers dropped (--allow-multi keeps them); "
        "1 groups with a NULL answer dropped (--include-null asks them)"
    )
    assert by_name["E"].why == "no question: no answer on this data"


def test_generate_prints_the_table_per_table(tmp_path: Path) -> None:
    for step in (("templates", "sql"), ("templates", "text", "--no-verify")):
        assert ragaudit(*step, "--example", cwd=tmp_path).returncode == 0
    done = ragaudit("generate", "--example", "--unverified", cwd=tmp_path, env={"COLUMNS": "160"})
    assert done.returncode == 0, done.stderr
    assert "Per table (a template counts for every table it reads)" in done.stdout
    stats = json.loads((tmp_path / "runs/default/dataset.stats.json").read_text())
    rows = {t["table"]: t for t in stats["tables"]}
    client = next(line for line in done.stdout.splitlines() if "│ Client " in line)
    cells = [c.strip() for c in client.strip("│ ").split("│")]
    expected = rows["Client"]
    assert cells == [
        "Client",
        str(expected["rows"]),
        f"{len(expected['attributes_asked'])} of {expected['attributes']}",
        str(expected["sql_templates"]),
        str(sum(expected["text_templates"].values())),
        str(expected["semantic_groups"]),
        str(sum(expected["text_queries"].values())),
    ]
    assert expected["rows"] == 5  # the example's five clients
    assert "no question reads" not in done.stderr  # every table of the example is read


def test_generate_says_which_tables_no_question_reads_and_why(tmp_path: Path) -> None:
    url = sqlite_people(tmp_path / "people.sqlite")
    for step in (("templates", "sql"), ("templates", "text", "--no-verify")):
        assert ragaudit(*step, "--db", url, cwd=tmp_path).returncode == 0
    done = ragaudit("generate", "--db", url, "--unverified", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith("no question reads")]
    # Badges and assignments have no name of their own, but a person's are counted.
    assert said == ["no question reads empty_thing: no rows"]


def test_aurp_per_table_is_the_papers_table_4b(grammar_reference: Path) -> None:
    """GRAMMAR v1's Table 4(b) on the reference Aurp database, its templates and wordings:
    per table the rows, the SQL queries (semantic groups, the NULL answer included as the
    reference tool keeps it) and the text queries are the paper's."""
    from ragaudit.config import GenerateOptions
    from ragaudit.db import Database, introspect
    from ragaudit.generate import generate
    from ragaudit.generate.sql.templates import import_reference_sql
    from ragaudit.generate.text.templates import import_reference_text

    root = grammar_reference / "aurp"
    db = Database(f"sqlite:///{root / 'aurp.sqlite'}")
    schema = introspect(db)
    templates = import_reference_sql(root / "sql_templates.json")
    texts = import_reference_text(root / "text_templates_short.json", "short", templates)
    import_reference_text(root / "text_templates_long.json", "long", templates, into=texts)
    stats = DatasetStats()
    options = GenerateOptions(include_null=True)
    assert list(generate(db, schema, templates, texts, options, stats=stats))
    per_table = {t.table: t for t in table_stats(stats, schema)}
    paper = {  # table: (rows, SQL queries, text queries), Table 4(b)
        "Project": (10, 50, 300),
        "Employee": (29, 87, 522),
        "Client": (10, 20, 120),
    }
    sql = _sql(f"sqlite:///{root / 'aurp.sqlite'}")
    for name, (rows, groups, queries) in paper.items():
        t = per_table[name]
        assert (t.rows, t.semantic_groups, t.queries) == (rows, groups, queries)
        assert t.rows == sql(f"SELECT COUNT(*) FROM {name}")[0][0][0]
    overview = stats.overview()
    assert (overview.semantic_groups, sum(overview.text_queries.values())) == (157, 942)
    db.dispose()


def test_a_link_table_is_not_said_to_lack_a_key(tmp_path: Path) -> None:
    """A table with no key of its own that links two others is asked through their keys
    (the enumerator's association rule): when no template reads it, generate does not
    claim that no column names its rows, as it does for a table that links one."""
    from ragaudit.db import Database, introspect
    from ragaudit.generate.sql.enumeration import enumerate_templates, why_no_template

    path = tmp_path / "link.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE a (a_id INTEGER PRIMARY KEY, name TEXT);"
        "CREATE TABLE b (b_id INTEGER PRIMARY KEY, name TEXT);"
        "CREATE TABLE link (a_id INTEGER REFERENCES a(a_id), b_id INTEGER REFERENCES b(b_id),"
        " role TEXT);"
        "CREATE TABLE note (a_id INTEGER REFERENCES a(a_id), body TEXT);"
        "INSERT INTO a VALUES (1, 'Ann'), (2, 'Bo');"
        "INSERT INTO b VALUES (1, 'Oak'), (2, 'Elm');"
        "INSERT INTO link VALUES (1, 1, 'lead'), (2, 2, 'aide'), (1, 2, 'aide');"
        "INSERT INTO note VALUES (1, 'x'), (2, 'y');"
    )
    conn.commit()
    conn.close()
    db = Database(f"sqlite:///{path}")
    schema = introspect(db)
    # Neither is said to lack a key: the link table is asked through a's and b's names,
    # the table that refers to one is counted per row of a.
    assert why_no_template(db, schema, ["link", "note"]) == {}
    notes = enumerate_templates(db, schema).notes
    assert "note" not in notes and "link" not in notes
    # A table that nothing links and nothing names is still explained.
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE stray (body TEXT); INSERT INTO stray VALUES ('x');")
    conn.commit()
    conn.close()
    schema = introspect(db)
    said = why_no_template(db, schema, ["stray"])
    unnamed = "no text column named like name, title, label, code or email to ask by"
    assert said == {"stray": unnamed}
    assert enumerate_templates(db, schema).notes["stray"] == said["stray"]
    db.dispose()


def _people_run(tmp_path: Path) -> tuple[ra.Project, Path]:
    """A real run on the test suite's ``people`` database (SQLite): templates by the
    enumerator, the verbalizer's wordings, generate, a system that answers every question
    with its reference, judged by the matchers, analyzed. One of its tables no question
    reads (an empty one): the others are asked by name or counted per person."""
    url = sqlite_people(tmp_path / "people.sqlite")
    project = ra.Project(root=tmp_path, db=url, progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    project.generate(unverified=True)

    def oracle(question: str, record: Any) -> str:
        return str(record.reference.display)

    project.run([ra.system(oracle, name="oracle")])
    project.judge(llm=None)
    project.analyze()
    return project, tmp_path / "people.sqlite"


def _per_table_rows(html: str) -> list[list[str]]:
    """The cells of the report's per-table table, a list per row (headers left out)."""
    section = html.split('id="per-table-counts"', 1)[1].split("</table>", 1)[0]
    return [
        re.findall(r"<td[^>]*>(.*?)</td>", row)
        for row in re.findall(r"<tr>(.*?)</tr>", section, re.DOTALL)
    ][1:]


def test_the_report_of_a_real_run_counts_each_table_and_names_the_ones_left_out(
    tmp_path: Path,
) -> None:
    """End to end, from the database to report.html: each table's row of the report holds
    the counts computed here apart from ragaudit, from the database (COUNT(*), PRAGMA
    table_info), from templates/sql.yaml's SQL (its tables read with sqlglot) and from
    dataset.jsonl (groups, questions, wordings); a table no template reads is there with
    0s, and the text above the table names every such table."""
    import sqlglot
    import yaml
    from sqlglot import exp

    project, path = _people_run(tmp_path)
    html = project.report().read_text(encoding="utf-8")
    run = RunDir(project.run_dir)
    conn = sqlite3.connect(path)
    names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    rows = {n: conn.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0] for n in names}
    columns = {n: len(conn.execute(f'PRAGMA table_info("{n}")').fetchall()) for n in names}
    conn.close()
    templates = yaml.safe_load(run.templates_sql.read_text(encoding="utf-8"))["templates"]
    reads = {
        t["id"]: {x.name.lower() for x in sqlglot.parse_one(t["sql"]).find_all(exp.Table)}
        for t in templates
    }
    queries = [json.loads(line) for line in run.dataset.read_text().splitlines()]
    expected = {}
    for name in names:
        mine = {tid for tid, tables in reads.items() if name.lower() in tables}
        asked = [q for q in queries if q["template_id"] in mine]
        expected[name] = [
            str(rows[name]),
            str(len(mine)),
            str(len({(q["variant"], q["text_template_id"]) for q in asked})),
            str(len({q["group_id"] for q in asked})),
            str(len(asked)),
        ]
    shown = {r[0]: r for r in _per_table_rows(html)}
    assert set(shown) == set(names) | {"dataset"}
    for name in names:
        cell = shown[name]
        # table, rows, "asked of attributes", templates, wordings, groups, questions, why
        assert [cell[1], *cell[3:7]] == expected[name], name
        assert cell[2].endswith(f" of {columns[name]}")
    uncovered = sorted(n for n in names if expected[n][-1] == "0")
    # Badges and assignments are counted per person: only the empty table is unread.
    assert uncovered == ["empty_thing"]
    for name in uncovered:
        assert shown[name][1:7] == [str(rows[name]), f"0 of {columns[name]}", "0", "0", "0", "0"]
        assert shown[name][7]  # and why, in the last column
    assert "No question reads 1 table (empty_thing)" in html
    # The dataset's own row counts each template, group and question once.
    total = shown["dataset"]
    assert total[3:7] == [
        str(len({q["template_id"] for q in queries})),
        str(len({(q["variant"], q["text_template_id"]) for q in queries})),
        str(len({q["group_id"] for q in queries})),
        str(len(queries)),
    ]


def test_a_run_generated_before_the_per_table_counts_still_reports(tmp_path: Path) -> None:
    """A dataset.stats.json written before the per-table view (no ``tables``, templates
    without their tables and columns) still gives a report with its other dataset counts,
    which says the per-table counts need generate again; the dataset still reads in
    Python, and only asking it for its tables says to generate again."""
    project, _ = _people_run(tmp_path)
    run = RunDir(project.run_dir)
    stats = json.loads(run.dataset_stats.read_text(encoding="utf-8"))
    del stats["tables"]
    for template in stats["templates"]:
        del template["tables"], template["columns"]
    run.dataset_stats.write_text(json.dumps(stats), encoding="utf-8")
    html = project.report().read_text(encoding="utf-8")
    assert 'id="dataset"' in html and 'id="per-table-counts"' not in html
    assert "written before ragaudit counted the dataset per table" in html
    dataset = ra.Project(root=tmp_path, progress="none").dataset()
    assert len(dataset) == len(run.dataset.read_text().splitlines()) > 0
    with pytest.raises(ra.UserError, match="run generate again"):
        _ = dataset.tables
    # The same file with the view: no such line.
    project.generate(unverified=True)
    html = project.report().read_text(encoding="utf-8")
    assert 'id="per-table-counts"' in html
    assert "written before ragaudit counted the dataset per table" not in html


def test_a_kept_templates_file_says_why_tables_have_no_template(tmp_path: Path) -> None:
    """``templates sql`` on a file that exists keeps it and says, as a new file's notes
    do, why each table with rows that none of its templates reads has no template: the
    enumerator's reason where a scan tells it, else that the file has none for it."""
    url = sqlite_people(tmp_path / "people.sqlite")
    project = ra.Project(root=tmp_path, db=url, progress="none")
    fresh = project.templates_sql()
    assert fresh.written and fresh.notes
    kept = project.templates_sql()
    assert not kept.written
    assert kept.notes == fresh.notes  # the same reasons, word for word
    # The user deletes every template that reads one table: that table is named too.
    run = RunDir(project.run_dir)
    templates = load_templates(run.templates_sql).templates
    table = templates[0].tables[0]
    save_templates(run.templates_sql, [t for t in templates if table not in t.tables])
    notes = project.templates_sql().notes
    assert notes[table] == "no template of templates/sql.yaml reads it"
    result = ragaudit("templates", "sql", "--db", url, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"no template from {table}: no template of templates/sql.yaml reads it" in (
        result.stderr
    )
