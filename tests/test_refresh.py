"""``generate --refresh`` (issue 38, part 1): the references executed again when the
database changes. On the demo company in SQLite, DuckDB and PostgreSQL, ten rows are
updated (answers and keys), two deleted and three inserted; the refresh must count every
class exactly as planted, and a judged run refreshed, run and judged again must ask its
system only the changed and new questions, keeping every other verdict as it was."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import ragaudit as ra
from ragaudit.generate.dataset import MULTI_ANSWER, NO_ANSWER, NULL_ANSWER, not_asked
from ragaudit.generate.options import GenerateOptions
from ragaudit.generate.refresh import CONFLICTING, VALUE_GONE
from ragaudit.generate.sql.instantiate import Group
from ragaudit.generate.sql.templates import SqlTemplate, load_templates, save_templates
from ragaudit.generate.text.templates import load_text_templates, save_text_templates
from ragaudit.records.io import read_jsonl
from ragaudit.records.models import Judgement, QueryRecord, RepeatJudgement, RepeatResponse
from ragaudit.rundir import RunDir
from ragaudit.store.records import read_refresh_log
from ragaudit.world.company import SCHEMA
from tests.support import postgres as pg
from tests.support.cli import ragaudit

# The questions of the test: two of a client, two of a project, one through the project's
# client (a join), one of an employee. Each row changed below moves a known set of them.
TEMPLATES = (
    "industry-by-client-name",
    "location-by-client-name",
    "location-by-project-name",
    "startdate-by-project-name",
    "client-industry-by-project-name-via-client",
    "jobtitle-by-employee-name",
)
CLIENT = ("industry-by-client-name", "location-by-client-name")
PROJECT = (
    "location-by-project-name",
    "startdate-by-project-name",
    "client-industry-by-project-name-via-client",
)
NEW_CLIENTS = ("Quarrow Partners", "Velmet Trust", "Obrin & Sons")


# -- the demo company in each engine ------------------------------------------------------


def _copy_to_postgres(sqlite_path: Path, server: pg.PostgresServer, dbname: str) -> str:
    """The world's tables and rows in a fresh PostgreSQL database; its URL."""
    import psycopg

    with psycopg.connect(server.conninfo, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {dbname}")
        admin.execute(f"CREATE DATABASE {dbname}")
    source = sqlite3.connect(sqlite_path)
    conninfo = server.conninfo.replace("dbname=postgres", f"dbname={dbname}")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        # Names unquoted, as PostgreSQL users write them (folded to lower case). As the
        # DuckDB world does, the supervisor's reference to its own table is left out, so
        # that rows can go in in any order.
        for table, columns in SCHEMA.items():
            defs = [c.replace(" REFERENCES Employee(Name)", "") for c in columns]
            conn.execute(f"CREATE TABLE {table} ({', '.join(defs)})")
        for table in ("Department", "Employee", "Client", "Project"):
            rows = source.execute(f'SELECT * FROM "{table}"').fetchall()
            marks = ", ".join(["%s"] * len(SCHEMA[table]))
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    source.close()
    return server.url.rsplit("/", 1)[0] + f"/{dbname}"


Execute = Callable[[str], list[tuple[Any, ...]]]


def _executor(url: str) -> Callable[[], Iterator[Execute]]:
    """A way to run plain SQL on the test's database (committed at the end)."""
    from contextlib import contextmanager

    @contextmanager
    def connect() -> Iterator[Execute]:
        if url.startswith("sqlite:///"):
            conn: Any = sqlite3.connect(url.removeprefix("sqlite:///"))
        elif url.startswith("duckdb:///"):
            import duckdb

            conn = duckdb.connect(url.removeprefix("duckdb:///"))
        else:
            import psycopg

            conn = psycopg.connect(url.replace("postgresql://", "postgresql://", 1))

        def execute(sql: str) -> list[tuple[Any, ...]]:
            cur = conn.execute(sql)
            try:
                return list(cur.fetchall())
            except Exception:  # a statement that returns no rows
                return []

        try:
            yield execute
            conn.commit()
        finally:
            conn.close()

    return connect  # type: ignore[return-value]


@pytest.fixture(params=["sqlite", "duckdb", "postgresql"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    """The demo company (``ragaudit world``) in each engine: its folder and database URL."""
    engine = "duckdb" if request.param == "duckdb" else "sqlite"
    built = ra.make_world(tmp_path / "world", size=60, seed=0, engine=engine, progress="none")
    folder = built.path
    if request.param == "sqlite":
        return folder, f"sqlite:///{folder / 'company.sqlite'}"
    if request.param == "duckdb":
        return folder, f"duckdb:///{folder / 'company.duckdb'}"
    server = request.getfixturevalue("postgres_server")
    name = f"world_{abs(hash(request.node.name)) % 10**8}"
    return folder, _copy_to_postgres(folder / "company.sqlite", server, name)


def _project(folder: Path, url: str, run: str = "world") -> ra.Project:
    """The world's project on ``url``, with the test's templates, verbalized (unverified),
    and its dataset generated."""
    project = ra.Project(folder / "ragaudit.yaml", root=folder, db=url, run=run, progress="none")
    project.templates_sql()
    path = RunDir(project.run_dir).templates_sql
    by_id = {t.id.lower(): t for t in load_templates(path).templates}
    save_templates(path, [by_id[t] for t in TEMPLATES])
    project.templates_text(verify=False)
    project.generate(unverified=True)
    return project


# -- what is planted -----------------------------------------------------------------------


def _plant(execute: Execute) -> dict[str, Any]:
    """Update ten rows (six answers: two client industries, two project locations, two
    job titles; four keys: two projects and two clients renamed), delete two projects and
    insert three clients. Returns the rows chosen, by role."""
    with_projects = [r[0] for r in execute("SELECT DISTINCT Client FROM Project ORDER BY Client")][
        :2
    ]
    idle = [
        r[0]
        for r in execute(
            "SELECT Name FROM Client WHERE Name NOT IN (SELECT Client FROM Project) ORDER BY Name"
        )
    ][:2]
    quoted = ", ".join(f"'{c}'" for c in with_projects)
    others = [
        r[0]
        for r in execute(f"SELECT Name FROM Project WHERE Client NOT IN ({quoted}) ORDER BY Name")
    ]
    moved, renamed, deleted = others[:2], others[2:4], others[4:6]
    employees = [r[0] for r in execute("SELECT Name FROM Employee ORDER BY Name")][:2]
    affected = execute(f"SELECT COUNT(*) FROM Project WHERE Client IN ({quoted})")[0][0]
    assert len(with_projects) == len(idle) == len(moved) == len(renamed) == len(deleted) == 2
    for client in with_projects:
        execute(f"UPDATE Client SET Industry = Industry || ' and Mining' WHERE Name = '{client}'")
    for project in moved:
        execute(f"UPDATE Project SET Location = 'Far ' || Location WHERE Name = '{project}'")
    for employee in employees:
        execute(f"UPDATE Employee SET JobTitle = 'Senior ' || JobTitle WHERE Name = '{employee}'")
    for project in renamed:
        execute(f"UPDATE Project SET Name = Name || ' Two' WHERE Name = '{project}'")
    for client in idle:
        execute(f"UPDATE Client SET Name = Name || ' Group' WHERE Name = '{client}'")
    for project in deleted:
        execute(f"DELETE FROM Project WHERE Name = '{project}'")
    for client in NEW_CLIENTS:
        execute(f"INSERT INTO Client VALUES ('{client}', 'Energy', 'Lornhaven, Ziosland')")
    return {
        "clients_with_projects": with_projects,
        "projects_of_those": int(affected),
        "idle_clients": idle,
        "moved": moved,
        "renamed": renamed,
        "deleted": deleted,
        "employees": employees,
    }


def _expected(planted: dict[str, Any]) -> dict[str, int]:
    """The groups of each class the plan makes, counted from the plan alone."""
    return {
        # two industries (and every project of those clients, through the join), two
        # locations, two job titles
        "changed": 2 + planted["projects_of_those"] + 2 + 2,
        # a renamed or deleted project: each of its three questions; a renamed client: two
        "vanished": 4 * len(PROJECT) + 2 * len(CLIENT),
        # a renamed project or client under its new name, and the three clients inserted
        "new": 2 * len(PROJECT) + 2 * len(CLIENT) + 3 * len(CLIENT),
    }


def _stale_expected(folder: Path, planted: dict[str, Any]) -> set[str]:
    """The reports stating a cell the plan changed or a row it renamed or deleted, read
    from the world's own facts file."""
    changed = {("Client", c, "industry") for c in planted["clients_with_projects"]}
    changed |= {("Project", p, "location") for p in planted["moved"]}
    gone = {("Project", p) for p in planted["renamed"] + planted["deleted"]}
    gone |= {("Client", c) for c in planted["idle_clients"]}
    stale = set()
    for line in (folder / "document_facts.jsonl").read_text().splitlines():
        doc = json.loads(line)
        for fact in doc["facts"]:
            cell = (fact["table"], fact["row_key"], fact["column"].lower())
            if cell in changed or cell[:2] in gone:
                stale.add(doc["id"])
    return stale


# -- the acceptance test -------------------------------------------------------------------


def test_refresh_counts_every_class_as_planted_and_asks_only_what_changed(
    world: tuple[Path, str], tmp_path: Path
) -> None:
    folder, url = world
    project = _project(folder, url)
    run = RunDir(project.run_dir)
    before = list(read_jsonl(run.dataset, QueryRecord))
    per_group = {
        t: c // len({q.group_id for q in before if q.template_id.lower() == t})
        for t, c in Counter(q.template_id.lower() for q in before).items()
    }
    assert set(per_group) == set(TEMPLATES)

    calls: list[str] = []

    def answers(question: str, record: QueryRecord) -> str:
        calls.append(record.query_id)
        return record.reference.display

    system = ra.system(answers, name="oracle")
    project.run([system])
    assert len(calls) == len(before)
    project.judge(llm=None)
    judged_before = {j.query_id: j for j in read_jsonl(run.judgements("oracle"), Judgement)}
    assert all(j.correct for j in judged_before.values())
    unrefreshed = tmp_path / "unrefreshed"
    shutil.copytree(run.root, unrefreshed)

    with _executor(url)() as execute:
        planted = _plant(execute)
    expected = _expected(planted)

    report = project.refresh(new=True)
    assert report.changed.groups == expected["changed"]
    assert report.vanished.groups == expected["vanished"]
    assert report.new.groups == expected["new"]
    groups_before = len({q.group_id for q in before})
    assert report.unchanged.groups == groups_before - expected["changed"] - expected["vanished"]
    # Questions: each group has its template's wordings.
    moved = {m.group_id: m for m in report.moved}
    for status in ("changed", "vanished", "new"):
        counted = getattr(report, status).queries
        assert counted == sum(
            per_group[m.template_id.lower()] for m in moved.values() if m.status == status
        )
    assert report.unchanged.queries + report.changed.queries + report.vanished.queries == len(
        before
    )
    # Every changed group holds its old and new answers; the new ones are the database's.
    for m in moved.values():
        if m.status == "changed":
            assert m.old is not None and m.new is not None and m.old != m.new
            assert len(m.old_query_ids) == len(m.new_query_ids)
            assert not set(m.old_query_ids) & set(m.new_query_ids)
        elif m.status == "vanished":
            assert m.new is None and m.old_query_ids and not m.new_query_ids
        else:
            assert m.old is None and m.new is not None and m.new_query_ids
    renamed_new = {
        value
        for m in moved.values()
        if m.status == "new"
        for key, value in m.bindings.items()
        if key.lower() == "project.name"
    }
    assert {f"{p} Two" for p in planted["renamed"]} <= renamed_new
    # The stale reports are those stating a changed cell or a row renamed or deleted.
    assert {d.document for d in report.stale} == _stale_expected(folder, planted)
    assert report.stale_documents == len(report.stale)
    # refresh.jsonl holds the same.
    logged, documents = read_refresh_log(run)
    assert [g.group_id for g in logged] == list(moved)
    assert len(documents) == report.stale_documents

    # The dataset: unchanged questions as they were, changed ones under new ids.
    after = {q.query_id: q for q in read_jsonl(run.dataset, QueryRecord)}
    retired = {i for m in moved.values() for i in m.old_query_ids}
    for q in before:
        if q.query_id in retired:
            assert q.query_id not in after
        else:
            assert after[q.query_id] == q
    assert len(after) == len(before) - report.vanished.queries + report.new.queries

    # Run and judge again: only the changed and new questions are asked and judged.
    calls.clear()
    project.run([system])
    assert sorted(calls) == sorted(
        i for m in moved.values() if m.status != "vanished" for i in m.new_query_ids
    )
    assert len(calls) == report.changed.queries + report.new.queries == report.asks
    judged = project.judge(llm=None).systems["oracle"]
    assert judged.judged_now == report.asks
    assert judged.already_judged == report.unchanged.queries
    now = {j.query_id: j for j in read_jsonl(run.judgements("oracle"), Judgement)}
    assert set(now) == set(after)  # no verdict of a question that left
    for query_id, verdict in now.items():
        if query_id in judged_before:
            assert verdict == judged_before[query_id]  # kept as it was
        assert verdict.reference_digest == after[query_id].reference.digest
    old = list(read_jsonl(run.retired_dir / "judgements" / "oracle.jsonl", Judgement))
    assert {j.query_id for j in old} == retired
    assert report.retired == {"responses": len(retired), "judgements": len(retired)}

    # The gate pairs only groups whose references are the same on both runs, and says
    # how many differ (a changed group keeps its id, with other questions and answers);
    # the run not refreshed lacks the questions asked since, which its coverage counts.
    result = ragaudit(
        "gate", str(run.root), str(unrefreshed), "--min-coverage", "0.5", cwd=tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr
    groups_now = groups_before - expected["vanished"] + expected["new"]
    assert (
        f"{expected['changed']} of the baseline's {groups_now} groups ask other questions "
        "or have other references on the candidate"
    ) in result.stdout
    assert f"({report.unchanged.queries} / " in result.stdout  # the queries paired

    # The report shows the refresh: its counts, what moved, the stale documents.
    project.analyze()
    html = project.report().read_text()
    assert "Refresh: references executed again" in html
    assert f'<td>changed</td><td class="num">{expected["changed"]}</td>' in html
    first = report.stale[0].document
    assert f"<code>{first}</code>" in html

    # A second refresh finds nothing more to move, and changes nothing.
    text = run.dataset.read_text()
    again = project.refresh(new=True)
    assert (again.changed.groups, again.vanished.groups, again.new.groups) == (0, 0, 0)
    assert run.dataset.read_text() == text


# -- what a refresh leaves alone, and how it says so ---------------------------------------


@pytest.fixture
def sqlite_world(tmp_path: Path) -> tuple[ra.Project, Path]:
    """The demo company in SQLite with the test's templates and a generated dataset; its
    project and database file."""
    built = ra.make_world(tmp_path / "world", size=60, seed=0, progress="none")
    database = built.path / "company.sqlite"
    return _project(built.path, f"sqlite:///{database}"), database


def _sql(database: Path, statement: str) -> None:
    conn = sqlite3.connect(database)
    conn.execute(statement)
    conn.commit()
    conn.close()


def _groups(run: RunDir) -> dict[str, list[Any]]:
    """The grounded groups of the run's dataset: group id -> its answers."""
    return {
        q.group_id: q.reference.values
        for q in read_jsonl(run.dataset, QueryRecord)
        if q.source == "sql"
    }


@pytest.mark.parametrize(
    ("answers", "flag", "why"),
    [([None], "include_null", NULL_ANSWER), (["a", "b"], "allow_multi", MULTI_ANSWER),
     ([], "include_unanswerable", NO_ANSWER)],
)  # fmt: skip
def test_the_rule_generate_and_the_refresh_share_says_why_a_group_is_not_asked(
    answers: list[Any], flag: str, why: str
) -> None:
    """One rule decides which groups a dataset asks: a NULL, multi-answer or unanswered
    group is left out, with why, unless its option keeps it; a single answer always
    passes."""
    group = Group(bindings={"Client.Name": "Acme"}, answers=answers)
    assert not_asked(group, GenerateOptions()) == why
    assert not_asked(group, GenerateOptions(**{flag: True})) is None
    assert not_asked(Group(bindings={}, answers=["x"]), GenerateOptions()) is None


def _as_generate_makes_it(project: ra.Project) -> None:
    """The refreshed dataset holds the groups, with the answers, that ``generate`` makes
    on the same data under the dataset's options (checked by generating it again)."""
    run = RunDir(project.run_dir)
    refreshed = _groups(run)
    refreshed_gold = {
        q.group_id: (q.gold_ids, q.gold_kind)
        for q in read_jsonl(run.dataset, QueryRecord)
        if q.source == "sql"
    }
    recounted = json.loads(run.dataset_stats.read_text())
    options = recounted["options"]
    project.generate(
        unverified=True,
        include_null=options["include_null"],
        include_unanswerable=options["include_unanswerable"],
        allow_multi=options["allow_multi"],
    )
    assert refreshed == _groups(run)
    # dataset.stats.json was recounted by the refresh: the counts generate gives now.
    generated = json.loads(run.dataset_stats.read_text())
    for name in ("semantic_groups", "text_queries"):
        assert recounted["overview"][name] == generated["overview"][name], name
    assert recounted["overview"]["semantic_groups"] == len(refreshed)
    # Gold groups by hand over the refreshed groups (generate counts them before it drops
    # the groups whose questions read alike, so its own count can hold those too).
    by_hand: Counter[str] = Counter()
    for gold_ids, kind in refreshed_gold.values():
        by_hand[
            "unknown" if kind is None else kind if gold_ids or kind == "entity" else "holes"
        ] += 1
    assert recounted["overview"]["gold_groups"] == dict(by_hand)
    for before, now in zip(recounted["tables"], generated["tables"], strict=True):
        for name in ("semantic_groups", "text_queries"):
            assert before[name] == now[name], (before["table"], name)


@pytest.mark.parametrize("include_unanswerable", [False, True])
def test_a_group_whose_answer_is_gone_while_its_values_remain_follows_include_unanswerable(
    sqlite_world: tuple[ra.Project, Path], include_unanswerable: bool
) -> None:
    """A project that loses its client still exists: its question through the client has
    no answer now, which is not a value gone. A dataset that asks groups without answer
    keeps it, changed to no answer and labelled unanswerable; one that does not (the
    default) drops it, as generate would, and says why; its other questions stay."""
    project, database = sqlite_world
    run = RunDir(project.run_dir)
    if include_unanswerable:
        project.generate(unverified=True, include_unanswerable=True)
    target = next(
        q.bindings
        for q in read_jsonl(run.dataset, QueryRecord)
        if q.template_id == "client-industry-by-project-name-via-client" and q.reference.values
    )["Project.Name"]
    _sql(database, f"UPDATE Project SET Client = NULL WHERE Name = '{target}'")
    report = project.refresh()
    (moved,) = report.moved
    assert moved.template_id == "client-industry-by-project-name-via-client"
    assert moved.new is not None and moved.new.values == [] and moved.old is not None
    after = [q for q in read_jsonl(run.dataset, QueryRecord) if q.group_id == moved.group_id]
    if include_unanswerable:
        assert (report.changed.groups, report.vanished.groups) == (1, 0)
        assert after and all(q.label == "unanswerable" for q in after)
        assert all(q.reference.display == "(no answer)" for q in after)
    else:
        assert (report.changed.groups, report.vanished.groups) == (0, 1)
        assert moved.status == "vanished" and not after
        assert report.vanished_why == {NO_ANSWER: 1}
        assert report.vanished.queries == len(moved.old_query_ids) > 0
        assert any(NO_ANSWER in note for note in report.notes)
    # The report's stale document: the project's own report names the client it lost.
    stale = {d.document: d for d in report.stale}
    assert [f.column for f in stale[target].facts] == ["Client"]
    assert stale[target].facts[0].now is None
    _as_generate_makes_it(project)


@pytest.mark.parametrize("include_null", [False, True])
def test_a_group_whose_answer_became_null_follows_the_datasets_include_null(
    world: tuple[Path, str], include_null: bool
) -> None:
    """A client's industry set to NULL, in each engine: generated without include_null
    (the default), generate leaves such groups out, so the refresh drops the client's
    industry question and each asked through its projects (vanished, with why; their
    records retired), and no question says "no value is recorded"; generated with
    include_null, they change to the NULL answer, labelled null."""
    folder, url = world
    project = _project(folder, url)
    run = RunDir(project.run_dir)
    if include_null:
        project.generate(unverified=True, include_null=True)
    system = ra.system(lambda q, record: record.reference.display, name="oracle")
    project.run([system])
    asked = {
        value
        for q in read_jsonl(run.dataset, QueryRecord)
        if (q.template_id or "").lower() == "industry-by-client-name"
        for key, value in q.bindings.items()
        if key.lower() == "client.name"
    }
    with _executor(url)() as execute:
        # A client asked of that has projects: the questions through them turn NULL too.
        client, projects = next(
            (name, count)
            for name, count in execute(
                "SELECT Client, COUNT(*) FROM Project GROUP BY Client ORDER BY Client"
            )
            if name in asked
        )
        execute(f"UPDATE Client SET Industry = NULL WHERE Name = '{client}'")
    report = project.refresh()
    moved = report.moved
    assert len(moved) == 1 + projects
    assert all(m.new is not None and m.new.is_null for m in moved)
    after = list(read_jsonl(run.dataset, QueryRecord))
    gone = {i for m in moved for i in m.old_query_ids}
    assert not gone & {q.query_id for q in after}
    assert report.retired == {"responses": len(gone)}
    if include_null:
        assert report.changed.groups == 1 + projects and report.vanished.groups == 0
        changed = [q for q in after if q.reference.is_null]
        assert changed and all(q.label == "null" for q in changed)
        assert {q.query_id for q in changed} == {i for m in moved for i in m.new_query_ids}
    else:
        assert report.changed.groups == 0 and report.vanished.groups == 1 + projects
        assert {m.status for m in moved} == {"vanished"}
        assert report.vanished_why == {NULL_ANSWER: 1 + projects}
        assert report.vanished.queries == len(gone)
        assert not any(q.reference.is_null or q.label == "null" for q in after)
        assert any(NULL_ANSWER in note for note in report.notes)
        stats = json.loads(run.refresh_stats.read_text())
        assert stats["vanished_why"] == {NULL_ANSWER: 1 + projects}
    _as_generate_makes_it(project)


def test_a_group_that_came_to_have_several_answers_leaves_a_dataset_of_single_answers(
    tmp_path: Path,
) -> None:
    """A template asking a project location's client: one project moved to another's
    location gives that location two clients. Without allow_multi generate asks no such
    group, so the refresh drops it (vanished, with why), and the moved project's old
    location, gone, takes its own group with it."""
    built = ra.make_world(tmp_path / "world", size=60, seed=0, progress="none")
    database = built.path / "company.sqlite"
    project = ra.Project(built.path / "ragaudit.yaml", root=built.path, progress="none")
    project.templates_sql()
    path = RunDir(project.run_dir).templates_sql
    by_id = {t.id.lower(): t for t in load_templates(path).templates}
    asked = SqlTemplate(
        id="client-by-project-location",
        sql='SELECT "Client" FROM "Project" WHERE "Location" = \'[Project.Location]\'',
    )
    save_templates(path, [by_id["industry-by-client-name"], asked])
    project.templates_text(verify=False)
    project.generate(unverified=True)
    run = RunDir(project.run_dir)
    with _executor(f"sqlite:///{database}")() as execute:
        rows = execute(
            "SELECT Name, Location, Client FROM Project WHERE Location IN (SELECT Location "
            "FROM Project GROUP BY Location HAVING COUNT(*) = 1) AND Client IS NOT NULL "
            "ORDER BY Name"
        )
        mover = rows[0]
        target = next(r for r in rows[1:] if r[2] != mover[2])
        execute(f"UPDATE Project SET Location = '{target[1]}' WHERE Name = '{mover[0]}'")
    report = project.refresh()
    why = {m.bindings["Project.Location"]: m for m in report.moved if m.status == "vanished"}
    assert set(why) == {mover[1], target[1]}
    assert why[target[1]].new is not None and sorted(why[target[1]].new.values) == sorted(
        [mover[2], target[2]]
    )
    assert why[mover[1]].new is None  # the location itself is gone
    assert report.vanished_why == {MULTI_ANSWER: 1, VALUE_GONE: 1}
    assert report.changed.groups == 0
    assert not any(len(v) > 1 for v in _groups(run).values())
    _as_generate_makes_it(project)


def test_a_changed_answer_that_makes_two_groups_conflict_takes_both_out(
    sqlite_world: tuple[ra.Project, Path],
) -> None:
    """Two clients whose names differ only in case, with the same industry: their
    questions read alike and answer alike, so generate keeps both. One's industry
    changes: the questions now read alike with other answers, which generate leaves out
    (neither answer could be known), so the refresh drops both groups, the unchanged one
    too, its records retired; their location questions, still alike, stay."""
    project, database = sqlite_world
    run = RunDir(project.run_dir)
    name, industry, location = next(
        iter(_rows(database, "SELECT Name, Industry, Location FROM Client ORDER BY Name"))
    )
    twin = name.upper()
    _sql(database, f"INSERT INTO Client VALUES ('{twin}', '{industry}', '{location}')")
    project.generate(unverified=True)
    project.run([ra.system(lambda q, record: record.reference.display, name="oracle")])
    held = [
        q
        for q in read_jsonl(run.dataset, QueryRecord)
        if q.template_id == "industry-by-client-name" and q.bindings["Client.Name"] in (name, twin)
    ]
    assert {q.bindings["Client.Name"] for q in held} == {name, twin}
    _sql(database, f"UPDATE Client SET Industry = 'Shipbuilding' WHERE Name = '{twin}'")
    report = project.refresh()
    assert report.vanished_why == {CONFLICTING: 2}
    assert report.changed.groups == 0 and report.vanished.groups == 2
    assert report.vanished.queries == len(held)
    moved = {m.bindings["Client.Name"]: m for m in report.moved}
    assert set(moved) == {name, twin} and {m.status for m in moved.values()} == {"vanished"}
    assert moved[twin].new is not None and moved[twin].new.values == ["Shipbuilding"]
    assert not moved[twin].new_query_ids
    assert {i for m in moved.values() for i in m.old_query_ids} == {q.query_id for q in held}
    assert report.retired == {"responses": len(held)}
    after = list(read_jsonl(run.dataset, QueryRecord))
    assert not {q.group_id for q in held} & {q.group_id for q in after}
    locations = [
        q
        for q in after
        if q.template_id == "location-by-client-name" and q.bindings["Client.Name"] == twin
    ]
    assert locations
    assert (
        report.unchanged.queries + report.vanished.queries
        == sum(1 for q in after if q.source == "sql") + report.vanished.queries
    )
    _as_generate_makes_it(project)


def _rows(database: Path, statement: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(database)
    try:
        return list(conn.execute(statement).fetchall())
    finally:
        conn.close()


def test_questions_without_sql_and_of_a_template_removed_are_left_as_they_are(
    sqlite_world: tuple[ra.Project, Path],
) -> None:
    project, database = sqlite_world
    run = RunDir(project.run_dir)
    imported = QueryRecord(
        query_id="imp-1",
        group_id="imp-g1",
        variant="short",
        query="Who audits the accounts?",
        reference={"values": ["Brightwell"], "display": "Brightwell"},  # type: ignore[arg-type]
        source="imported",
    )
    with run.dataset.open("a") as handle:
        handle.write(imported.model_dump_json(exclude_unset=True) + "\n")
    # The job-title template leaves templates/sql.yaml: its questions cannot be re-derived.
    kept = [t for t in load_templates(run.templates_sql).templates if not t.id.startswith("job")]
    save_templates(run.templates_sql, kept)
    texts = load_text_templates(run.templates_text)
    wordings = {tid: w for tid, w in texts.templates.items() if not tid.startswith("job")}
    save_text_templates(run.templates_text, wordings, texts.verdicts)
    jobs = [
        q for q in read_jsonl(run.dataset, QueryRecord) if (q.template_id or "").startswith("job")
    ]
    employee = jobs[0].bindings["Employee.Name"]
    _sql(database, f"UPDATE Employee SET JobTitle = 'Chief Auditor' WHERE Name = '{employee}'")
    report = project.refresh()
    assert report.left_as_is == {
        "imported: no SQL to execute again": 1,
        "its template is no longer in templates/sql.yaml": len(jobs),
    }
    assert report.changed.groups == report.vanished.groups == 0
    after = list(read_jsonl(run.dataset, QueryRecord))
    assert after[-1] == imported
    assert [q for q in after if q.template_id and q.template_id.startswith("job")] == jobs


def test_a_sampled_dataset_is_refreshed_but_gets_no_new_groups(tmp_path: Path) -> None:
    """Where generate kept a sample of each template's groups, a group the dataset lacks
    may be one the sample left out: --new adds none, and says why."""
    built = ra.make_world(tmp_path / "world", size=60, seed=0, progress="none")
    database = built.path / "company.sqlite"
    project = ra.Project(built.path / "ragaudit.yaml", root=built.path, progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    project.generate(unverified=True, max_groups_per_template=3)
    _sql(database, "INSERT INTO Client VALUES ('Quarrow Partners', 'Energy', 'Lornhaven')")
    report = project.refresh(new=True)
    assert report.new.groups == 0
    assert any("a sample (max_groups_per_template 3)" in note for note in report.notes)
    assert report.unchanged.queries == len(
        list(read_jsonl(RunDir(project.run_dir).dataset, QueryRecord))
    )


def test_the_command_line_refresh_prints_what_moved_and_refuses_mixed_options(
    sqlite_world: tuple[ra.Project, Path],
) -> None:
    project, database = sqlite_world
    folder = database.parent
    run = RunDir(project.run_dir)
    client = json.loads(
        next(
            line
            for line in run.dataset.read_text().splitlines()
            if '"industry-by-client-name"' in line
        )
    )["bindings"]["Client.Name"]
    _sql(database, f"UPDATE Client SET Industry = 'Shipbuilding' WHERE Name = '{client}'")
    args = ("--config", str(folder / "ragaudit.yaml"), "--db", f"sqlite:///{database}")
    text = run.dataset.read_text()
    for wrong, message in (
        (("--new",), "--new goes with --refresh"),
        (("--refresh", "--balanced"), "--refresh keeps the options the dataset was generated"),
        (("--refresh", "--documents"), "--documents and --import have none"),
    ):
        result = ragaudit("generate", *args, *wrong, cwd=folder)
        assert result.returncode == 2, result.stdout + result.stderr
        assert message in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert run.dataset.read_text() == text  # nothing written
    result = ragaudit("generate", *args, "--refresh", cwd=folder)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # The counts printed are those of refresh.stats.json; a client's industry moves its
    # own question and those through each of its projects.
    stats = json.loads(run.refresh_stats.read_text())
    projects = sum(
        1
        for q in read_jsonl(run.dataset, QueryRecord)
        if q.template_id == "client-industry-by-project-name-via-client"
        and q.reference.values == ["Shipbuilding"]
    )
    assert stats["changed"]["groups"] == 1 + projects // per_wording(run)
    row = next(line for line in lines if "changed (new answer, new ids)" in line)
    cells = [c.strip() for c in row.split("│") if c.strip()]
    assert cells[1:] == [str(stats["changed"]["groups"]), str(stats["changed"]["queries"])]
    assert any("industry-by-client-name" in line and "Shipbuilding" in line for line in lines)
    assert "next: ragaudit run and ragaudit judge" in result.stdout
    assert (
        str(run.refresh_log.relative_to(folder)) in result.stdout
        or str(run.refresh_log) in result.stdout
    )


def per_wording(run: RunDir) -> int:
    """The questions of one group of the join template (its wordings)."""
    counts = Counter(
        q.group_id
        for q in read_jsonl(run.dataset, QueryRecord)
        if q.template_id == "client-industry-by-project-name-via-client"
    )
    return next(iter(counts.values()))


def test_nothing_to_refresh_without_a_dataset(tmp_path: Path) -> None:
    built = ra.make_world(tmp_path / "world", size=60, seed=0, progress="none")
    project = ra.Project(built.path / "ragaudit.yaml", root=built.path, progress="none")
    with pytest.raises(ra.UserError, match="nothing to refresh: no dataset"):
        project.refresh()


def test_a_dataset_generated_again_on_changed_data_never_keeps_old_verdicts(
    sqlite_world: tuple[ra.Project, Path],
) -> None:
    """generate (not --refresh) gives a changed group's questions their old ids: the
    verdicts remember the reference they were given against, so analyze refuses them and
    judge judges exactly those again."""
    project, database = sqlite_world
    run = RunDir(project.run_dir)
    project.run([ra.system(lambda q, record: record.reference.display, name="oracle")])
    project.judge(llm=None)
    client = next(
        q.bindings["Client.Name"]
        for q in read_jsonl(run.dataset, QueryRecord)
        if q.template_id == "industry-by-client-name"
    )
    _sql(database, f"UPDATE Client SET Industry = 'Shipbuilding' WHERE Name = '{client}'")
    project.generate(unverified=True)
    moved = [
        q for q in read_jsonl(run.dataset, QueryRecord) if q.reference.values == ["Shipbuilding"]
    ]
    assert moved
    with pytest.raises(ra.UserError, match="against another reference, or other gold ids, than"):
        project.analyze()
    with pytest.raises(ra.UserError, match="against another reference, or other gold ids, than"):
        project.compare(by="variant")
    report = project.judge(llm=None).systems["oracle"]
    assert report.judged_now == len(moved)
    verdicts = {j.query_id: j for j in read_jsonl(run.judgements("oracle"), Judgement)}
    # The old answers (given before the change) are wrong against the new reference.
    assert all(verdicts[q.query_id].correct is False for q in moved)
    assert project.analyze().systems["oracle"].variants


def test_a_new_group_whose_question_reads_as_another_groups_is_left_out(
    sqlite_world: tuple[ra.Project, Path],
) -> None:
    """As generate leaves out groups whose question reads the same as another's with
    another answer, --new adds no such group; the group the dataset held stays."""
    project, database = sqlite_world
    run = RunDir(project.run_dir)
    held = next(
        q
        for q in read_jsonl(run.dataset, QueryRecord)
        if q.template_id == "industry-by-client-name"
    )
    name = held.bindings["Client.Name"]
    _sql(database, f"INSERT INTO Client VALUES ('{name.upper()}', 'Shipbuilding', 'Nowhere')")
    report = project.refresh(new=True)
    assert report.dropped_new >= 1  # its industry question reads as the held client's
    assert any("new groups left out" in note for note in report.notes)
    after = list(read_jsonl(run.dataset, QueryRecord))
    assert not any(q.reference.values == ["Shipbuilding"] for q in after)
    assert held in after
    added = {m.group_id for m in report.moved if m.status == "new"}
    assert {q.group_id for q in after if q.bindings.get("Client.Name") == name.upper()} == added
    assert report.new.groups == len(added)


def test_the_repeats_of_a_question_that_left_leave_with_it(
    sqlite_world: tuple[ra.Project, Path],
) -> None:
    """run --repeat N keeps the other askings in repeats/: a refresh moves those of the
    questions that left to retired/ too, so the next judge and analyze read no repeat of
    a question the dataset no longer has, and only the new questions are asked again."""
    project, database = sqlite_world
    run = RunDir(project.run_dir)
    project.run([ra.system(lambda q, record: record.reference.display, name="oracle")], repeat=3)
    project.judge(llm=None)
    client = next(
        q.bindings["Client.Name"]
        for q in read_jsonl(run.dataset, QueryRecord)
        if q.template_id == "industry-by-client-name"
    )
    _sql(database, f"UPDATE Client SET Industry = 'Shipbuilding' WHERE Name = '{client}'")
    report = project.refresh()
    assert report.changed.groups >= 1
    gone = {i for m in report.moved for i in m.old_query_ids}
    assert report.retired == {
        "responses": len(gone),
        "judgements": len(gone),
        "repeats/responses": 2 * len(gone),
        "repeats/judgements": 2 * len(gone),
    }
    left = read_jsonl(run.repeat_responses("oracle"), RepeatResponse)
    assert not {r.query_id for r in left} & gone
    old = list(
        read_jsonl(run.retired_dir / "repeats" / "judgements" / "oracle.jsonl", RepeatJudgement)
    )
    assert {(j.query_id, j.repeat) for j in old} == {(q, r) for q in gone for r in (1, 2)}
    project.run([ra.system(lambda q, record: record.reference.display, name="oracle")], repeat=3)
    judged = project.judge(llm=None).systems["oracle"]
    assert judged.judged_now == report.asks
    assert judged.repeats is not None and judged.repeats.judged_now == 2 * report.asks
    stability = project.analyze().stability["oracle"]
    assert stability.flaky_queries == []
