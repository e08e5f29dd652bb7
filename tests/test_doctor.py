"""ragaudit doctor: the resolved configuration, the database's schema and one LLM round trip
(steps/doctor.py, cli/doctor.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import ragaudit as ra
from tests.support.cli import ragaudit


def test_doctor_shows_schema_of_the_example_database(tmp_path: Path) -> None:
    result = ragaudit("doctor", "--example", "--skip-llm", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for table in ("Client", "Department", "Employee", "Project"):
        assert table in result.stdout
    assert "FK→Client" in result.stdout
    assert (tmp_path / "runs" / "default" / "ragaudit.yaml").is_file()


def test_doctor_reports_an_unreadable_database_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "broken.db").write_text("this is not a database")
    result = ragaudit(
        "doctor", "--db", f"sqlite:///{tmp_path / 'broken.db'}", "--skip-llm", cwd=tmp_path
    )
    assert result.returncode == 1
    assert "database check failed" in result.stderr
    assert "file is not a database" in result.stderr
    assert "Traceback" not in result.stderr


def test_doctor_on_a_duckdb_file(tmp_path: Path) -> None:
    import duckdb

    conn = duckdb.connect(str(tmp_path / "d.duckdb"))
    conn.execute("CREATE TABLE city (name VARCHAR PRIMARY KEY, country VARCHAR)")
    conn.execute("INSERT INTO city VALUES ('Orrin', 'Nowhere')")
    conn.close()
    result = ragaudit(
        "doctor", "--db", f"duckdb:///{tmp_path / 'd.duckdb'}", "--skip-llm", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "city" in result.stdout and "country" in result.stdout


def test_doctor_with_a_table_subset(tmp_path: Path) -> None:
    db = tmp_path / "two.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE kept (a TEXT)")
    conn.execute("CREATE TABLE dropped (b TEXT)")
    conn.commit()
    conn.close()
    (tmp_path / "ragaudit.yaml").write_text(f"database:\n  url: sqlite:///{db}\n  tables: [kept]\n")
    result = ragaudit("doctor", "--skip-llm", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "kept" in result.stdout and "dropped" not in result.stdout


LONG = "The manual explains every setting of the pump and what each one is for. " * 25


def _documents(tmp_path: Path) -> None:
    """Three documents, five paragraphs; one paragraph far longer than 256 tokens."""
    folder = tmp_path / "documents"
    folder.mkdir()
    (folder / "alder.txt").write_text(
        "Alder Bridge is being built in Norhaven for the county.\n\n"
        "Work began on 3 May 2021 and is planned to end in June 2023.\n"
    )
    (folder / "birch.txt").write_text("Birch Tunnel is being built in Eastmoor.\n")
    (folder / "manual.md").write_text(f"Short intro.\n\n{LONG}\n")
    (tmp_path / "ragaudit.yaml").write_text(
        "llm:\n  context_size: 256\n"
        "corpus:\n  path: documents\n  chunking: paragraph\n"
        "systems:\n  - name: bm25-top2\n    retriever: bm25\n    k: 2\n"
    )


def test_doctor_counts_the_corpus_and_flags_chunks_too_long_for_the_model(
    tmp_path: Path,
) -> None:
    _documents(tmp_path)
    result = ragaudit("doctor", "--skip-llm", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "3 documents, 5 chunks (chunking: paragraph)" in out
    assert "3 of them have fewer than 12 words" in out
    out += " ".join(result.stderr.split())  # the warnings
    assert "1 chunk is longer than the model's context (llm.context_size: 256 tokens)" in out
    assert "manual#1 (~" in out  # the long paragraph, by its id
    assert "manual#0" not in out
    # What happens to it, and what to do.
    assert "generate --documents drops" in out and "records an error" in out
    assert "no database" in out.lower()


def test_project_doctor_gives_the_corpus_figures_the_command_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragaudit.llm.tokens import estimate_tokens

    _documents(tmp_path)
    monkeypatch.chdir(tmp_path)
    report = ra.Project("ragaudit.yaml", progress="none").doctor(use_llm=False)
    assert report.ok and report.corpus_error is None
    corpus = report.corpus
    assert corpus is not None
    assert (corpus.documents, corpus.chunks, corpus.context_size) == (3, 5, 256)
    assert [(c.id, c.tokens) for c in corpus.too_long] == [
        ("manual#1", estimate_tokens(LONG.strip()))
    ]
    assert corpus.longest_tokens == estimate_tokens(LONG.strip())
    assert corpus.short_chunks == 3  # "Short intro." and the two one-line documents
    # bm25-top2's prompt can hold the two longest chunks: more than the context too.
    assert [(p.system, p.k) for p in corpus.crowded] == [("bm25-top2", 2)]


def test_a_corpus_doctor_cannot_read_is_a_failed_check(tmp_path: Path) -> None:
    (tmp_path / "ragaudit.yaml").write_text("corpus:\n  path: missing\n")
    result = ragaudit("doctor", "--skip-llm", cwd=tmp_path)
    assert result.returncode == 1
    assert "corpus check failed" in result.stderr and "missing" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_documents_config_init_writes_fits_page_long_documents_in_the_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``init --documents`` on a folder of page-long documents (600 words each, as a
    library's reference pages are): its built-in systems' k chunks fit the model's
    context, so doctor has nothing to flag (one chunk per file put three pages, ~4,200
    tokens, in a 4,096-token context)."""
    assert ragaudit("init", "--documents", cwd=tmp_path).returncode == 0
    folder = tmp_path / "documents"
    folder.mkdir()
    for i in range(21):
        words = " ".join(f"word{i}x{j}" if j % 7 else "the" for j in range(600))
        (folder / f"page{i}.txt").write_text(f"Page {i}. {words}.\n")
    monkeypatch.chdir(tmp_path)
    report = ra.Project("ragaudit.yaml", progress="none").doctor(use_llm=False)
    corpus = report.corpus
    assert corpus is not None and corpus.documents == 21
    assert corpus.chunks > 21  # windows, not one chunk per page
    assert not corpus.too_long and not corpus.crowded
