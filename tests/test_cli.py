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
