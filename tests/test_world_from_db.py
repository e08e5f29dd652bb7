"""ragaudit world --from-db (issue 39, item 1): documents that state the rows of the user's
own database, in a copy of it, with fictitious names and deliberate holes, from which the
dataset's gold ids mean "states the answer"."""

from __future__ import annotations

import doctest
import hashlib
import json
import re
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragaudit as ra
from ragaudit.errors import UserError
from ragaudit.judge.matchers import match
from ragaudit.records.models import Reference
from ragaudit.world import profiles as profiles_module
from ragaudit.world.profiles import parse_profile_id, profile_id, shown
from tests.support.cli import ragaudit
from tests.support.scripted_llm_server import ScriptedLLMServer

SPIDER = Path(__file__).resolve().parents[2] / "shared" / "reference" / "grammar" / "spider_open"


def _spider() -> Path:
    database = SPIDER / "company_employee.sqlite"
    if not database.is_file():
        pytest.skip(f"the GRAMMAR reference data is not at {SPIDER} (it is in ../shared only)")
    return database


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _cells(path: Path) -> dict[tuple[str, str, str], object]:
    """(table, str(primary key), column) -> value, for every one-column-key table."""
    conn = sqlite3.connect(path)
    try:
        out = {}
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
            keys = [c[1] for c in info if c[5]]
            if len(keys) != 1:
                continue
            names = [c[1] for c in info]
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                record = dict(zip(names, row, strict=True))
                for column, value in record.items():
                    out[table, str(record[keys[0]]), column] = value
        return out
    finally:
        conn.close()


def test_spider_renamed_states_true_facts_of_a_copy_and_leaves_the_database_alone(
    tmp_path: Path,
) -> None:
    database = _spider()
    before = hashlib.sha256(database.read_bytes()).hexdigest()
    made = ragaudit(
        "world", "w", "--from-db", f"sqlite:///{database}", "--rename", "--holes", "0.2",
        cwd=tmp_path,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "documents (profiles)" in made.stdout
    assert hashlib.sha256(database.read_bytes()).hexdigest() == before  # only read
    world = tmp_path / "w"
    docs = {d["id"]: d["text"] for d in _lines(world / "documents.jsonl")}
    assert len(docs) == 19 + 7  # a profile per company and per person; employment links
    real = sqlite3.connect(database)
    real_names = {
        n for (n,) in real.execute("SELECT Name FROM company UNION SELECT Name FROM people")
    }
    copy = sqlite3.connect(world / "database.sqlite")
    fake_names = {
        n for (n,) in copy.execute("SELECT Name FROM company UNION SELECT Name FROM people")
    }
    # Every name is fictitious, in the copy and the documents, and nothing else changed.
    assert len(fake_names) == len(real_names) == 26 and not fake_names & real_names
    text = "\n".join(docs.values())
    assert not [n for n in real_names if re.search(rf"\b{re.escape(n)}\b", text)]
    for table in ("company", "people", "employment"):
        strip = [c for (c,) in real.execute(f"SELECT name FROM pragma_table_info('{table}')")]
        kept = [c for c in strip if c != "Name"]
        cols = ", ".join(f'"{c}"' for c in kept)
        assert sorted(real.execute(f"SELECT {cols} FROM {table}").fetchall()) == sorted(
            copy.execute(f"SELECT {cols} FROM {table}").fetchall()
        )
    # Every fact a profile is said to state is the copy's value, written in that profile.
    cells = _cells(world / "database.sqlite")
    facts = _lines(world / "document_facts.jsonl")
    stated = 0
    for record in facts:
        for fact in record["facts"]:
            value = cells[fact["table"], fact["row_key"], fact["column"]]
            assert fact["stated"] == shown(value)
            assert fact["stated"] in docs[record["id"]], (record["id"], fact)
            stated += fact["column"] != "Name"
    # Holes: a fifth of the attributes is stated nowhere; the meta says what was done.
    attributes = 19 * 6 + 7 * 3
    assert 0.65 * attributes < stated - 10 < 0.95 * attributes  # 10 names of linked rows
    meta = json.loads((world / "world.json").read_text())
    assert meta["renamed"] is True and meta["holes"] == 0.2 and meta["links"] == ["employment"]
    assert str(database) in meta["source"]

    # The journey on it: questions over the copy, gold ids the profiles that state them.
    for step in (
        ("templates", "sql"),
        ("templates", "text", "--no-verify"),
        ("generate", "--unverified"),
    ):
        done = ragaudit(*step, cwd=world)
        assert done.returncode == 0, done.stderr
    queries = _lines(world / "runs/world/dataset.jsonl")
    # Gold that states the answer, or (a count, a total) every row it is computed from.
    kinds = {q["gold_kind"] for q in queries if q["gold_ids"] is not None}
    assert "states" in kinds and kinds <= {"states", "computed"}
    holes = [q for q in queries if q["gold_ids"] == []]
    answered = [q for q in queries if q["gold_ids"] and q["gold_kind"] == "states"]
    assert holes and answered
    for q in answered:
        reference = Reference.model_validate(q["reference"])
        assert any(match(reference, docs[d]).correct for d in q["gold_ids"]), q
    for q in queries:  # every question names its rows by their fictitious names
        assert not [n for n in real_names if f"'{n}'" in q["query"]]


def test_a_run_of_the_built_in_systems_blames_the_holes_on_the_knowledge_base(
    tmp_path: Path,
) -> None:
    """The world of a database, end to end from Python: its project, the dataset, a
    built-in system (a scripted reader that answers with the passage's sentence about
    the question's subject), the judge's matchers and the analysis."""
    database = _spider()

    def reader(messages: list[dict]) -> str:
        prompt = messages[-1]["content"]
        asked = re.findall(r"'([^']+)'", prompt.rsplit("Question", 1)[-1])
        for sentence in re.split(r"(?<=\.)\s+", prompt):
            if asked and all(a in sentence for a in asked) and " is " in sentence:
                return sentence
        return "I don't know."

    world = ra.make_world(
        tmp_path / "w", from_db=f"sqlite:///{database}", rename=True, holes=0.3, progress="none"
    )
    assert world.summary.documents == 26
    project = world.project(llm=ra.llm.Scripted(responder=reader), progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    dataset = project.generate(unverified=True)
    project.run(["keyword-top1"])
    project.judge(llm=None)
    summary = project.analyze()
    figures = summary.systems["keyword-top1"]
    holes = [q for q in dataset.queries if q.gold_ids == []]
    assert holes and figures.knowledge_base_holes is not None
    assert figures.knowledge_base_holes.k > 0
    for variant in figures.variants.values():
        accuracy = variant.accuracy.value
        assert accuracy is not None and 0 < accuracy < 1  # the reader reads what was found
        blame = variant.blame
        assert blame is not None and blame.by_evidence > 0
        # A question no profile answers is the knowledge base's failure: the reader only
        # says what its passage states, so it answers none of them (no hole answered).
        assert blame.counts.get("knowledge base", 0) > 0 and blame.holes_answered == 0


def test_any_engine_is_copied_with_its_keys_types_and_renamed_references(  # type: ignore[no-untyped-def]
    make_db, tmp_path: Path
) -> None:
    """Each engine's database is copied into SQLite with its keys (the enumerator joins
    along them), its dates and decimals as SQLite holds them, and every name renamed
    wherever a foreign key holds it: a project's client is the client's renamed name."""
    url = make_db(
        [
            "CREATE TABLE client (name VARCHAR(40) PRIMARY KEY, industry VARCHAR(40))",
            "CREATE TABLE project (id INTEGER PRIMARY KEY, title VARCHAR(40), "
            "client VARCHAR(40) REFERENCES client(name), budget NUMERIC(10, 2), start DATE)",
        ],
        {
            "client": [("Acme Works", "Energy"), ("Globex", "Water")],
            "project": [
                (1, "Harbour Bridge", "Acme Works", 1250.5, "2023-03-01"),
                (2, "Dam Upgrade", "Globex", 99.25, "2024-11-30"),
            ],
        },
    )
    out = tmp_path / "w"
    world = ra.make_world(out, from_db=url, rename=True, holes=0.0, progress="none")
    copy = sqlite3.connect(world.summary.database)
    clients = {n for (n,) in copy.execute('SELECT "name" FROM "client"')}
    assert len(clients) == 2 and not clients & {"Acme Works", "Globex"}
    rows = copy.execute('SELECT "title", "client", "budget", "start" FROM "project"').fetchall()
    assert {r[1] for r in rows} == clients  # the foreign key holds after the renaming
    assert not {r[0] for r in rows} & {"Harbour Bridge", "Dam Upgrade"}
    assert sorted((r[2], r[3]) for r in rows) == [(99.25, "2024-11-30"), (1250.5, "2023-03-01")]
    ddl = copy.execute("SELECT sql FROM sqlite_master WHERE name = 'project'").fetchone()[0]
    assert 'PRIMARY KEY ("id")' in ddl and 'REFERENCES "client" ("name")' in ddl
    facts = [f for r in _lines(out / "document_facts.jsonl") for f in r["facts"]]
    client_facts = [f for f in facts if (f["table"], f["column"]) == ("project", "client")]
    assert len(client_facts) == 2 and {f["stated"] for f in client_facts} == clients
    assert all(f["asks"].startswith("What is the client of ") for f in client_facts)
    assert {f["stated"] for f in facts if f["column"] == "start"} == {
        "2023-03-01",
        "2024-11-30",
    }


def test_names_written_inside_other_text_are_renamed_in_their_own_rows(  # type: ignore[no-untyped-def]
    make_db, tmp_path: Path
) -> None:
    """A description that names its own row (a person's bio naming the person) is renamed
    as the name columns are, whole name for whole name; a name written in a row that
    neither is nor points at the named row is left (renaming it would rewrite any equal
    word) and counted in world.json. A name's part ("Acme"), a longer word ("Globexia")
    and a number that is also a row's name ("1999") are never replaced."""
    url = make_db(
        [
            "CREATE TABLE client (name VARCHAR(40) PRIMARY KEY, note VARCHAR(200))",
            "CREATE TABLE person (id INTEGER PRIMARY KEY, name VARCHAR(40), bio VARCHAR(200))",
            "CREATE TABLE site (id INTEGER PRIMARY KEY, name VARCHAR(40), remark VARCHAR(200))",
        ],
        {
            "client": [
                ("Acme Works", "Spun off from Globex in 2001; Acme Works and Acme are one."),
                ("Globex", "Rival of Acme Works (and of Globexia)."),
            ],
            "person": [(1, "Ada Lovelace", "Ada Lovelace consults for Globex.")],
            "site": [(1, "1999", "Opened in 1999 by Ada Lovelace")],
        },
    )
    out = tmp_path / "w"
    ra.make_world(out, from_db=url, rename=True, holes=0.0, progress="none")
    copy = sqlite3.connect(out / "database.sqlite")
    clients = dict(copy.execute('SELECT "note", "name" FROM "client"').fetchall())
    acme = next(name for note, name in clients.items() if note.startswith("Spun off"))
    globex = next(name for note, name in clients.items() if note.startswith("Rival"))
    assert {acme, globex}.isdisjoint({"Acme Works", "Globex"})
    assert set(clients) == {
        f"Spun off from Globex in 2001; {acme} and Acme are one.",
        "Rival of Acme Works (and of Globexia).",
    }
    ((ada, bio),) = copy.execute('SELECT "name", "bio" FROM "person"').fetchall()
    assert ada != "Ada Lovelace" and bio == f"{ada} consults for Globex."
    ((site, remark),) = copy.execute('SELECT "name", "remark" FROM "site"').fetchall()
    assert site != "1999" and remark == "Opened in 1999 by Ada Lovelace"
    documents = (out / "documents.jsonl").read_text()
    assert ada in documents and globex in documents and acme in documents
    assert not re.search(r"\bAda Lovelace consults\b", documents)
    renaming = json.loads((out / "world.json").read_text())["renaming"]
    assert renaming == {
        "replaced_in_text": {"client.note": 1, "person.bio": 1},
        "left_in_text": {"client.note": 2, "person.bio": 1, "site.remark": 1},
    }


def test_bad_choices_are_one_line_errors_that_write_nothing(tmp_path: Path) -> None:
    database = _spider()
    url = f"sqlite:///{database}"
    cases = [
        ((url, ["employment"], None), "has no one-column primary key"),
        ((url, ["nope"], None), "no table 'nope'"),
        ((url, None, ["people.Foo"]), "'people.Foo' is no Table.Column"),
        ((f"sqlite:///{tmp_path / 'none.db'}", None, None), "no database file"),
    ]
    for (where, tables, columns), message in cases:
        with pytest.raises(UserError, match=re.escape(message)):
            ra.make_world(
                tmp_path / "w", from_db=where, tables=tables, columns=columns, progress="none"
            )
        assert not (tmp_path / "w").exists()
    with pytest.raises(UserError, match="--size"):
        ra.make_world(tmp_path / "w", from_db=url, size=100)
    with pytest.raises(UserError, match="from_db"):
        ra.make_world(tmp_path / "w", rename=True)
    cli = ragaudit("world", "w", "--from-db", url, "--table", "employment", cwd=tmp_path)
    assert cli.returncode != 0 and "Traceback" not in cli.stderr
    assert "no one-column primary key" in cli.stderr and not (tmp_path / "w").exists()


def test_the_llm_rewrite_of_profiles_is_checked_against_the_copy(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """``--from-db --llm``: each profile is rewritten in prose and read back, one question
    per fact; a rewrite that changed a value (planted here: a sales figure off by one) is
    caught, told which fact it lost, and repaired."""
    database = _spider()
    planted: list[str] = []

    def llm(body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        if prompt.startswith("Rewrite this profile"):
            profile = prompt.split("Profile: ", 1)[1].split("\n\n", 1)[0]
            sentences = re.split(r"(?<=\.)\s+", profile)
            if "433.5" in profile and "An earlier rewrite" not in prompt:
                planted.append(profile)
                sentences = [s.replace("433.5", "434.5") for s in sentences]
            return " ".join(reversed(sentences))
        if "Answer each question from the document alone" in prompt:
            document = prompt.split("Document: ", 1)[1].split("\n\nAnswer each", 1)[0]
            asked = len(re.findall(r"^\d+\. ", prompt, re.MULTILINE))
            return json.dumps({"answers": [document] * asked})
        return json.dumps({"verdict": "Incorrect", "reason": "scripted"})

    llm_server.responder = llm
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "sk-t-0000000000"}
    done = ragaudit(
        "world", "w", "--from-db", f"sqlite:///{database}", "--rename", "--llm",
        "--model", "openai:scripted", cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(planted) == 1
    prompts = [r["messages"][-1]["content"] for r in llm_server.requests]
    # Each fact was asked about in the profile's own terms, and the planted change caught.
    assert any("What is the sales in billion of " in p for p in prompts)
    assert any("lost or changed these facts: sales in billion 433.5" in p for p in prompts)
    meta = json.loads((tmp_path / "w" / "world.json").read_text())["rewrite"]
    assert meta["repaired"] == 1 and meta["failed"] == 0 and meta["rewritten"] == 25
    documents = {d["id"]: d["text"] for d in _lines(tmp_path / "w" / "documents.jsonl")}
    assert not any("434.5" in text for text in documents.values())
    for record in _lines(tmp_path / "w" / "document_facts.jsonl"):
        for fact in record["facts"]:
            assert fact["stated"] in documents[record["id"]]


def test_profile_ids_are_unambiguous_whatever_the_names_hold(tmp_path: Path) -> None:
    """A table ``a`` keyed ``b/1`` and a table ``a/b`` keyed ``1`` would both give the id
    ``a/b/1`` joined as they are, and a key written ``b%2F1`` that of ``b/1`` decoded
    naively: each name's "/" and "%" are encoded, so every profile has its own id, the
    world's own corpus check (doctor) accepts the corpus, each id reads back as its row's
    table and key, and an ordinary name keeps its plain id."""
    database = tmp_path / "own.sqlite"
    conn = sqlite3.connect(database)
    conn.execute('CREATE TABLE "a" ("k" TEXT PRIMARY KEY, "name" TEXT, "note" TEXT)')
    conn.execute('CREATE TABLE "a/b" ("id" INTEGER PRIMARY KEY, "name" TEXT, "note" TEXT)')
    conn.execute('CREATE TABLE "café/%" ("k" TEXT PRIMARY KEY, "name" TEXT, "note" TEXT)')
    conn.execute('CREATE TABLE "plain" ("id" INTEGER PRIMARY KEY, "name" TEXT, "note" TEXT)')
    conn.executemany(
        'INSERT INTO "a" VALUES (?, ?, ?)',
        [("b/1", "Slash", "x"), ("b%2F1", "Encoded", "y"), ("50%", "Percent", "z")],
    )
    conn.execute("INSERT INTO \"a/b\" VALUES (1, 'One', 'w')")
    conn.execute("INSERT INTO \"café/%\" VALUES ('☃/ß', 'Snow', 'u')")
    conn.execute("INSERT INTO \"plain\" VALUES (3, 'Three', 'v')")
    conn.commit()
    conn.close()
    made = ragaudit(
        "world", "w", "--from-db", f"sqlite:///{database}", "--holes", "0", cwd=tmp_path
    )
    assert made.returncode == 0, made.stderr
    doctor = ragaudit("doctor", "--config", "w/ragaudit.yaml", "--skip-llm", cwd=tmp_path)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    world = ra.Project(tmp_path / "w" / "ragaudit.yaml", root=tmp_path / "w", progress="none")
    report = world.doctor(use_llm=False)
    assert report.corpus_error is None, report.corpus_error
    ids = [d["id"] for d in _lines(tmp_path / "w" / "documents.jsonl")]
    assert sorted(ids) == sorted(
        ["a/b%2F1", "a/b%252F1", "a/50%25", "a%2Fb/1", "café%2F%25/☃%2Fß", "plain/3"]
    )
    assert report.corpus is not None and report.corpus.documents == len(ids)
    # Each id names its row: the table and key its name fact is recorded under.
    for record in _lines(tmp_path / "w" / "document_facts.jsonl"):
        (name_fact,) = [f for f in record["facts"] if f["column"] == "name"]
        assert parse_profile_id(record["id"]) == (name_fact["table"], name_fact["row_key"])


# Names made of the characters that matter: the separator, the escape's own, the letters
# of its codes, and characters beyond ASCII (a composed and a decomposed "é").
_NAME = st.text(alphabet=st.sampled_from(list("/%2F5ab é\u0301☃ß𝄞")), max_size=8)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_NAME, _NAME), max_size=12, unique=True))
def test_distinct_rows_never_share_a_profile_id(rows: list[tuple[str, str]]) -> None:
    """Over any (table, key) pairs: distinct rows get distinct ids, each reads back as its
    row, and a name with neither "/" nor "%" is written as it is."""
    ids = [profile_id(table, key) for table, key in rows]
    assert len(set(ids)) == len(rows)
    for (table, key), made in zip(rows, ids, strict=True):
        assert parse_profile_id(made) == (table, key)
        assert made.count("/") == 1
        if not set("%/") & set(table + key):
            assert made == f"{table}/{key}"  # ordinary names: the id as it always was


def test_what_is_no_profile_id_is_refused_and_the_examples_run() -> None:
    for wrong in ("company", "a/b/1", "a/50%", "a/%2f", "a/%41"):
        with pytest.raises(ValueError, match="is no profile id"):
            parse_profile_id(wrong)
    assert doctest.testmod(profiles_module).failed == 0


def test_keys_a_document_writes_alike_are_refused_not_given_one_id(tmp_path: Path) -> None:
    """An SQLite column without a type holds 1 and '1' as two keys, which a document
    writes alike: the world is refused with a one-line error naming the table, and no
    corpus is written."""
    database = tmp_path / "own.sqlite"
    conn = sqlite3.connect(database)
    conn.execute('CREATE TABLE "loose" ("k" PRIMARY KEY, "name" TEXT)')
    conn.executemany('INSERT INTO "loose" VALUES (?, ?)', [(1, "Number"), ("1", "Text")])
    conn.commit()
    conn.close()
    made = ragaudit("world", "w", "--from-db", f"sqlite:///{database}", cwd=tmp_path)
    assert made.returncode == 2, made.stdout + made.stderr
    assert "table 'loose'" in made.stderr and "share the id 'loose/1'" in made.stderr
    assert "Traceback" not in made.stderr
    assert not (tmp_path / "w" / "documents.jsonl").exists()
