"""Write a generated world to disk: the database, the documents, the map of the facts each
document states, and a ragaudit.yaml that points at them.

    <out>/company.sqlite | company.duckdb   the relational data (read-only for ragaudit)
    <out>/documents.jsonl                   {"id", "text"}: one project report each
    <out>/document_facts.jsonl              {"id", "facts": [{table, row_key, column, stated}]}
    <out>/world.json                        profile, row counts, facts never stated
    <out>/ragaudit.yaml                     database, corpus, gold facts and rule, two systems

Everything is written into a temporary folder beside ``out`` and renamed into place, so
a killed build never leaves a half world that looks complete.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragaudit.errors import UserError
from ragaudit.records.io import staged_folder
from ragaudit.world.company import SCHEMA, Company, make_company
from ragaudit.world.documents import NEVER_STATED, project_reports

TABLES = ("Department", "Employee", "Client", "Project")

# What becomes of a report whose rewrite fails its check twice: keep its template wording,
# or drop it from the corpus.
OnFailure = Literal["template", "drop"]


class WorldRewrite(BaseModel):
    """The ``rewrite`` entry of world.json, as ``ragaudit world --llm`` writes it and the
    report reads it: the model, how many reports passed the check at once, after a repair
    or failed (and which), and what became of the failed ones (``on_failure``)."""

    model: str
    rewritten: int
    repaired: int
    failed: int
    on_failure: OnFailure
    repaired_ids: list[str]
    failed_ids: list[str]


class WorldFile(BaseModel):
    """What ragaudit reads of a generated world's world.json (the rest is ignored): the
    settings it was built with, its row counts, its reports, the facts they state, and
    the LLM rewrite when there was one."""

    model_config = ConfigDict(extra="ignore")

    seed: int | None = None
    size: int | None = None
    rows: dict[str, int] = Field(default_factory=dict)
    documents: int
    facts_stated: int = 0
    rewrite: WorldRewrite | None = None


def read_world_file(folder: Path) -> WorldFile | None:
    """``folder``'s world.json, or None when there is none or it is not one (the folder
    is then no generated world)."""
    try:
        return WorldFile.model_validate_json((folder / "world.json").read_bytes())
    except (OSError, ValidationError):
        return None


@dataclass(frozen=True)
class WorldSummary:
    """What was built, and where."""

    out: Path
    database: Path
    rows: dict[str, int]
    documents: int
    facts: int
    # What the reader must know of what was written (a document longer than a page).
    warnings: tuple[str, ...] = ()


def _rows(company: Company, table: str) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = getattr(company, table.lower())
    return rows


def _write_sqlite(company: Company, path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        for table in TABLES:
            conn.execute(f'CREATE TABLE "{table}" ({", ".join(SCHEMA[table])})')
            marks = ", ".join("?" * len(SCHEMA[table]))
            conn.executemany(f'INSERT INTO "{table}" VALUES ({marks})', _rows(company, table))
        conn.commit()
    finally:
        conn.close()


def _write_duckdb(company: Company, path: Path) -> None:
    import duckdb
    import pyarrow as pa

    conn = duckdb.connect(str(path))
    try:
        conn.execute("SET enable_progress_bar = false")
        for table in TABLES:
            columns = [c.split()[0] for c in SCHEMA[table]]
            rows = _rows(company, table)
            arrow = pa.table({c: [r[i] for r in rows] for i, c in enumerate(columns)})
            # DuckDB checks a foreign key against the table as it was before a bulk insert,
            # so the supervisor's reference to the same table is left out there.
            defs = [
                c.replace(" REFERENCES Employee(Name)", "") if table == "Employee" else c
                for c in SCHEMA[table]
            ]
            conn.execute(f'CREATE TABLE "{table}" ({", ".join(defs)})')
            conn.register("incoming", arrow)
            conn.execute(f'INSERT INTO "{table}" SELECT * FROM incoming')
            conn.unregister("incoming")
    finally:
        conn.close()


_PROJECT_REPORT = (
    "  gold_ids:                    # where no single fact is asked (a count): the project's "
    "report\n    - placeholder: Project.Name\n"
)


def world_config(
    database: Path,
    documents: Path,
    *,
    header: str = "# Written by ragaudit world: the generated company, its documents, two systems.",
    documents_are: str = "reports",
    gold_ids: str = _PROJECT_REPORT,
) -> str:
    """A world's ragaudit.yaml: its SQLite database, its documents, the facts they state
    as gold facts (``gold_ids``: rules for the answers that are no single fact), and two
    built-in systems. ``header`` says what wrote it."""
    return f"""{header}
run:
  name: world
database:
  url: sqlite:///{database}
corpus:
  path: {documents}
generate:
  balanced: true
  # Gold ids: the {documents_are} that state the answer (the facts each one states).
  gold_facts: {documents.parent / "document_facts.jsonl"}
{gold_ids}systems:
  - name: keyword-top1
    retriever: keyword
    k: 1
  - name: hybrid-top3
    retriever: hybrid          # needs pip install 'ragaudit[dense]'
    text_weight: 0.5
    k: 3
harness:
  store_texts: true            # keep the retrieved passages: the report shows them
"""


def read_world(out: Path, *, size: int, seed: int, engine: str) -> WorldSummary | None:
    """The world already in ``out`` when it is the one these settings would build (so a
    step on top of it, like the LLM rewrite, can go on), else None."""
    meta = read_world_file(out)
    db_name = "company.sqlite" if engine == "sqlite" else "company.duckdb"
    if meta is None or (meta.size, meta.seed) != (size, seed) or not (out / db_name).exists():
        return None
    return WorldSummary(out, out / db_name, meta.rows, meta.documents, meta.facts_stated)


def write_documents(folder: Path, documents: Iterable[Any]) -> tuple[int, int]:
    """documents.jsonl and document_facts.jsonl of ``documents`` (each with ``doc_id``,
    ``text`` and ``facts``), streamed; how many documents and facts were written."""
    count = facts = 0
    with (
        (folder / "documents.jsonl").open("w", encoding="utf-8") as docs,
        (folder / "document_facts.jsonl").open("w", encoding="utf-8") as stated,
    ):
        for document in documents:
            docs.write(json.dumps({"id": document.doc_id, "text": document.text}) + "\n")
            stated.write(json.dumps({"id": document.doc_id, "facts": document.facts}) + "\n")
            count += 1
            facts += len(document.facts)
    return count, facts


def build_world(
    out: Path,
    *,
    size: int = 60,
    seed: int = 0,
    engine: str = "sqlite",
    force: bool = False,
    on_step: Callable[[str], None] | None = None,
) -> WorldSummary:
    """Generate a world of about ``size`` rows into ``out`` (a new or empty folder, or any
    folder with ``force``)."""
    if engine not in ("sqlite", "duckdb"):
        raise UserError(f"world: engine {engine!r}: use sqlite or duckdb")
    if size < 20:
        raise UserError(f"world: --size {size} is too small (at least 20 rows)")
    if out.exists() and any(out.iterdir()) and not force:
        raise UserError(f"{out} exists and is not empty (--force, or force=True, replaces it)")
    step = on_step or (lambda _s: None)
    step("company")
    company = make_company(size, seed)
    with staged_folder(out) as tmp:
        step("database")
        db_name = "company.sqlite" if engine == "sqlite" else "company.duckdb"
        (_write_sqlite if engine == "sqlite" else _write_duckdb)(company, tmp / db_name)
        step("documents")
        documents, facts = write_documents(tmp, project_reports(company, seed))
        rows = {t: len(_rows(company, t)) for t in TABLES}
        (tmp / "world.json").write_text(
            json.dumps(
                {
                    "seed": seed,
                    "size": size,
                    "profile": company.profile,
                    "rows": rows,
                    "documents": documents,
                    "facts_stated": facts,
                    "never_stated": {t: list(c) for t, c in NEVER_STATED.items()},
                },
                indent=2,
            )
            + "\n"
        )
        final = out.resolve()
        config = world_config(final / db_name, final / "documents.jsonl")
        if engine == "duckdb":
            config = config.replace("sqlite:///", "duckdb:///")
        (tmp / "ragaudit.yaml").write_text(config)
    return WorldSummary(out, out / db_name, rows, documents, facts)
