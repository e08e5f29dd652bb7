"""ragaudit.yaml: validation with one-line errors that name the line and the key's path."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragaudit.config import Config, example_config, load_config, parse_config
from ragaudit.errors import ConfigError


def test_the_example_written_by_init_is_valid_and_uses_the_example_database() -> None:
    config = parse_config(example_config())
    assert config.database.url == "example"
    assert config.llm.model == "local"
    assert config.llm.max_concurrency == Config().llm.max_concurrency


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "llm:\n  model: local\n  max_concurency: 4\n",
            "ragaudit.yaml:3: llm.max_concurency: unknown key",
        ),
        (
            "llm:\n  max_concurrency: many\n",
            "ragaudit.yaml:2: llm.max_concurrency: Input should be a valid integer",
        ),
        (
            "llm:\n  max_concurrency: 0\n",
            "ragaudit.yaml:2: llm.max_concurrency: Input should be greater than or equal to 1",
        ),
        (
            "database:\n  timeout_s: -1\n",
            "ragaudit.yaml:2: database.timeout_s: Input should be greater than 0",
        ),
        (
            "llm:\n  model: claude:x\n",
            "ragaudit.yaml:2: llm.model: unknown backend 'claude'",
        ),
        ("run:\n  name: ../escape\n", "ragaudit.yaml:2: run.name: String should match pattern"),
        ("colour: blue\n", "ragaudit.yaml:1: colour: unknown key"),
        ("- a\n- b\n", "ragaudit.yaml:1: the file must be a mapping"),
        ("llm: [\n", "ragaudit.yaml:2:1: invalid YAML"),
    ],
)
def test_mistakes_are_one_line_with_line_and_key_path(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    message = str(info.value)
    assert message.startswith(expected), message
    assert "\n" not in message


def test_several_mistakes_are_counted() -> None:
    with pytest.raises(ConfigError, match=r"\(and 1 more\)"):
        parse_config("llm:\n  max_concurrency: 0\n  timeout_s: 0\n")


def test_missing_file_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="ragaudit init writes one"):
        load_config(tmp_path / "ragaudit.yaml")


def test_empty_file_means_defaults() -> None:
    assert parse_config("") == Config()


def test_environment_supplies_base_url_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-abcdef123456")
    config = parse_config("llm:\n  model: openai:m\n")
    assert config.llm.resolved_base_url() == "http://127.0.0.1:8000/v1"
    assert config.llm.resolved_api_key() == "sk-from-env-abcdef123456"
    assert config.masked_dict()["llm"]["api_key"] == "***"


def test_config_file_wins_over_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-abcdef123456")
    config = parse_config("llm:\n  model: openai:m\n  api_key: sk-from-file-abcdef123456\n")
    assert config.llm.resolved_api_key() == "sk-from-file-abcdef123456"
    assert "sk-from-file" not in repr(config)


def test_a_key_given_twice_is_an_error_with_both_lines() -> None:
    text = "llm:\n  model: local\n  timeout_s: 30\n  model: openai:gpt-4o\n"
    with pytest.raises(ConfigError) as info:
        parse_config(text, source="ragaudit.yaml")
    assert str(info.value) == "ragaudit.yaml:4: duplicate key 'model' (first at line 2)"
    nested = "templates:\n  styles:\n    - short\ntemplates:\n  per_style: 2\n"
    with pytest.raises(ConfigError, match=r"ragaudit.yaml:4: duplicate key 'templates'"):
        parse_config(nested, source="ragaudit.yaml")


def test_bytes_that_are_not_utf8_are_one_line_with_the_offset(tmp_path: Path) -> None:
    path = tmp_path / "ragaudit.yaml"
    path.write_bytes(b"llm:\n  model: caf\xe9\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: not UTF-8 at byte 17"


@pytest.mark.timeout(10)
def test_an_alias_that_refers_to_itself_is_an_error_not_a_hang() -> None:
    with pytest.raises(ConfigError, match=r"ragaudit.yaml:1: run.name"):
        parse_config("run: &x {name: *x}\n", source="ragaudit.yaml")
