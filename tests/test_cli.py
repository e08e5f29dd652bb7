"""The command line: version, help, init, and one-line user errors without tracebacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragaudit import __version__
from ragaudit.config import parse_config
from tests.support.cli import ragaudit

COMMANDS = ["init", "doctor"]


def test_version(tmp_path: Path) -> None:
    result = ragaudit("--version", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == f"ragaudit {__version__}"


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_every_command_has_help(tmp_path: Path, command: str | None) -> None:
    args = [command, "--help"] if command else ["--help"]
    result = ragaudit(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Usage" in result.stdout
    if command is None:
        for name in COMMANDS:
            assert name in result.stdout


def test_init_writes_a_valid_commented_config_and_will_not_overwrite(tmp_path: Path) -> None:
    assert ragaudit("init", cwd=tmp_path).returncode == 0
    text = (tmp_path / "ragaudit.yaml").read_text()
    assert text.lstrip().startswith("#")
    assert parse_config(text).database.url == "example"
    again = ragaudit("init", cwd=tmp_path)
    assert again.returncode == 2
    assert (
        again.stderr.strip() == "error: ragaudit.yaml already exists (use --force to overwrite it)"
    )
    assert ragaudit("init", "--force", cwd=tmp_path).returncode == 0


def test_the_first_help_is_for_a_database_and_for_documents(tmp_path: Path) -> None:
    """A documents-only user reads ``ragaudit --help`` first: it must not read as
    SQL-only, and it says where each half starts."""
    result = ragaudit("--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "your database" in text and "your documents" in text
    assert "ragaudit init --documents" in text and "generate --documents" in text


def _section(text: str, name: str) -> str:
    """The lines of a top-level section of a YAML file as written (comments included)."""
    lines = text.splitlines()
    start = lines.index(f"{name}:")
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i] and not lines[i][0].isspace()),
        len(lines),
    )
    return "\n".join(lines[start:end])


def test_init_documents_writes_a_documents_only_config(tmp_path: Path) -> None:
    result = ragaudit("init", "--documents", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "documents" in result.stdout and "ragaudit doctor" in result.stdout
    text = (tmp_path / "ragaudit.yaml").read_text()
    assert text.lstrip().startswith("#")
    config = parse_config(text)
    assert config.database.url is None and "\ndatabase:" not in text
    assert config.corpus.path == Path("documents")
    assert config.generate.documents.strategy == "statements"
    systems = {s.name: s for s in config.systems}
    assert set(systems) == {"bm25-top3", "dense-top3", "llm-only"}
    assert {getattr(s, "retriever", None) for s in systems.values()} == {"bm25", "dense", "none"}
    # What both examples share is written alike, comments included.
    sql = tmp_path / "sql.yaml"
    assert ragaudit("init", str(sql), cwd=tmp_path).returncode == 0
    for name in ("run", "llm", "harness"):
        assert _section(text, name) == _section(sql.read_text(), name), name
    again = ragaudit("init", "--documents", cwd=tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr


def test_a_bad_config_is_one_line_without_traceback(tmp_path: Path) -> None:
    (tmp_path / "ragaudit.yaml").write_text("llm:\n  model: local\n  max_concurency: 4\n")
    result = ragaudit("doctor", "--skip-llm", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == "error: ragaudit.yaml:3: llm.max_concurency: unknown key"
    assert "Traceback" not in result.stderr + result.stdout


def test_unknown_option_is_a_usage_error(tmp_path: Path) -> None:
    result = ragaudit("doctor", "--colour", cwd=tmp_path)
    assert result.returncode == 2
    assert "No such option" in result.stderr
    assert "Traceback" not in result.stderr


def test_sqlite_url_with_missing_file(tmp_path: Path) -> None:
    result = ragaudit("doctor", "--db", "sqlite:///nope.db", "--skip-llm", cwd=tmp_path)
    assert result.returncode == 1
    assert "no database file at nope.db" in result.stderr


def test_model_output_is_shown_literally_not_as_markup(llm_server, tmp_path: Path) -> None:
    from tests.support.scripted_llm_server import Reply

    llm_server.enqueue(Reply(content="[bold]Yes[/bold] for [Client.Name] [/]"))
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "sk-x-000000000000"}
    result = ragaudit("doctor", "--llm", "openai:m", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "answer:   [bold]Yes[/bold] for [Client.Name] [/]" in result.stdout


def test_config_may_come_before_the_verb_as_after_it(tmp_path: Path) -> None:
    """``ragaudit -c FILE VERB`` reads FILE as ``ragaudit VERB -c FILE`` does (git's -C
    habit); the verb's own -c wins where both are given; a missing file is one line."""
    assert ragaudit("init", "mine.yaml", cwd=tmp_path).returncode == 0
    text = (tmp_path / "mine.yaml").read_text()
    (tmp_path / "mine.yaml").write_text(text.replace("name: default", "name: mine", 1))
    assert ragaudit("init", "other.yaml", cwd=tmp_path).returncode == 0
    before = ragaudit("-c", "mine.yaml", "doctor", "--skip-llm", cwd=tmp_path)
    after = ragaudit("doctor", "--skip-llm", "-c", "mine.yaml", cwd=tmp_path)
    assert before.returncode == after.returncode == 0, before.stderr
    assert "run directory: runs/mine" in before.stdout and "runs/mine" in after.stdout
    both = ragaudit("-c", "mine.yaml", "doctor", "--skip-llm", "-c", "other.yaml", cwd=tmp_path)
    assert "runs/mine" not in both.stdout and "run directory: runs/" in both.stdout
    missing = ragaudit("-c", "nope.yaml", "doctor", "--skip-llm", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.strip() == (
        "error: nope.yaml: no such file (a configuration file: ragaudit init writes one)"
    )
