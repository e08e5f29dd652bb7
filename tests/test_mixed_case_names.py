"""Tables and columns named in mixed case and quoted, as PostgreSQL keeps them
("Client"."Industry", the names an ORM such as Prisma writes): the same test set on every
engine. PostgreSQL reads an unquoted name in lower case, so its catalog's names are
compared as quoted names; before, a quoted "Industry" was refused there as an unknown
column, and the enumerator kept only the templates whose columns carried a table alias."""

from __future__ import annotations

from pathlib import Path

import pytest

import ragaudit as ra
from ragaudit.db import Database, introspect
from ragaudit.db.validate import validate_select
from ragaudit.errors import SQLValidationError
from ragaudit.records.io import read_jsonl
from ragaudit.records.models import QueryRecord
from ragaudit.rundir import RunDir

DDL = [
    'CREATE TABLE "Client" ("ClientName" VARCHAR(40) PRIMARY KEY, "Industry" VARCHAR(40), '
    '"HomeCity" VARCHAR(40))',
    'CREATE TABLE "Project" ("Title" VARCHAR(40) PRIMARY KEY, "SiteCity" VARCHAR(40), '
    '"Owner" VARCHAR(40) REFERENCES "Client"("ClientName"))',
]
CLIENTS = [
    ("Acme Works", "Energy", "Oslo"),
    ("Globex", "Water", "Bergen"),
    ("Initech", "Retail", "Tromso"),
    ("Umbrella", "Health", "Bodo"),
    ("Hooli", "Media", "Alta"),
    ("Vandelay", "Trade", "Molde"),
]
PROJECTS = [
    ("Harbour Bridge", "Oslo", "Acme Works"),
    ("Dam Upgrade", "Voss", "Globex"),
    ("Depot", "Narvik", "Initech"),
    ("Clinic", "Hamar", "Umbrella"),
    ("Studio", "Lillehammer", "Hooli"),
    ("Warehouse", "Kristiansund", "Vandelay"),
]
# Every template the enumerator writes on SQLite, where case never matters.
EXPECTED = {
    "industry-by-client-clientname",
    "homecity-by-client-clientname",
    "sitecity-by-project-title",
    "client-industry-by-project-title-via-owner",
    "client-homecity-by-project-title-via-owner",
}


def test_quoted_mixed_case_names_give_the_same_test_set_on_every_engine(  # type: ignore[no-untyped-def]
    make_db, tmp_path: Path
) -> None:
    url = make_db(DDL, {'"Client"': CLIENTS, '"Project"': PROJECTS})
    project = ra.Project(root=tmp_path, db=url, progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    project.generate(unverified=True)
    queries = list(read_jsonl(RunDir(project.run_dir).dataset, QueryRecord))
    by_template: dict[str, set[str]] = {}
    for q in queries:
        by_template.setdefault(q.template_id.lower(), set()).add(q.reference.display)
    assert set(by_template) >= EXPECTED, sorted(by_template)
    assert by_template["industry-by-client-clientname"] == {c[1] for c in CLIENTS}
    assert by_template["client-homecity-by-project-title-via-owner"] == {c[2] for c in CLIENTS}


def test_an_unquoted_mixed_case_name_is_refused_on_postgresql_with_the_name_to_write(  # type: ignore[no-untyped-def]
    make_db,
) -> None:
    """PostgreSQL would read ``Industry`` as ``industry`` and fail at execution: the check
    says so at once, with the name to write; SQLite and DuckDB, which ignore case, take
    either."""
    url = make_db(DDL, {'"Client"': CLIENTS, '"Project"': PROJECTS})
    db = Database(url)
    try:
        schema = introspect(db)
    finally:
        db.dispose()
    quoted = 'SELECT "Industry" FROM "Client" WHERE "ClientName" = \'[Client.ClientName]\''
    validate_select(quoted, schema)
    cases = {
        'SELECT Industry FROM "Client" WHERE "ClientName" = \'x\'': (
            "unknown column 'industry' (PostgreSQL reads unquoted names in lower case: "
            'write "Industry", quoted)'
        ),
        'SELECT "Industry" FROM Client WHERE "ClientName" = \'x\'': (
            "unknown table 'client' (PostgreSQL reads unquoted names in lower case: "
            'write "Client", quoted)'
        ),
    }
    for sql, message in cases.items():
        if schema.dialect != "postgresql":
            validate_select(sql, schema)
            continue
        with pytest.raises(SQLValidationError) as caught:
            validate_select(sql, schema)
        assert message in str(caught.value)
