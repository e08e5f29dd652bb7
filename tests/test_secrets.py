"""No API key appears in any output, error, cache file or run artifact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragaudit.config import LLMConfig
from ragaudit.llm import make_llm, user
from ragaudit.secrets import redact, register_secret
from tests.support.cli import ragaudit
from tests.support.scripted_llm_server import Reply, ScriptedLLMServer

KEY = "sk-ragaudit-SECRET-7f3a9c1e5b2d"


def _all_artifacts(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def test_key_never_leaks_into_outputs_errors_or_files(
    llm_server: ScriptedLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": llm_server.base_url}
    # A server that echoes the key back in its error, as some do.
    llm_server.enqueue(
        Reply(
            status=401,
            body=json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}"}}),
        )
    )
    refused = ragaudit("doctor", "--example", "--llm", "openai:m", cwd=tmp_path, env=env)
    ok = ragaudit("doctor", "--example", "--llm", "openai:m", cwd=tmp_path, env=env)
    assert refused.returncode == 1 and "refused the credentials (HTTP 401)" in refused.stderr
    assert ok.returncode == 0, ok.stderr
    assert "answer:" in ok.stdout and "echo:" in ok.stdout

    # The cached client path, too.
    config = LLMConfig(model="openai:m", base_url=llm_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    cache_path = tmp_path / "runs" / "default" / "cache" / "llm.sqlite"
    with make_llm(config, cache_path=cache_path) as client:
        client.complete([user("cache me")])
    assert llm_server.headers_seen[-1]["authorization"] == f"Bearer {KEY}"  # it was really used

    outputs = refused.stdout + refused.stderr + ok.stdout + ok.stderr
    assert KEY not in outputs
    files = _all_artifacts(tmp_path)
    assert any(p.name == "llm.sqlite" for p in files)
    assert any(p.name == "usage.json" for p in files)
    for path in files:
        assert KEY.encode() not in path.read_bytes(), f"key leaked into {path}"
    resolved = (tmp_path / "runs" / "default" / "ragaudit.yaml").read_text()
    assert "api_key: '***'" in resolved


def test_redact_masks_registered_and_key_shaped_strings() -> None:
    register_secret("hunter2-password")
    assert redact("db password hunter2-password here") == "db password *** here"
    assert redact("Authorization: Bearer abcdefghijklmnop") == "Authorization: ***"
    assert redact("key sk-abcdefghijklmnop1234 end") == "key *** end"
    assert redact("nothing secret") == "nothing secret"


def test_database_password_is_masked_in_output_and_run_files(
    postgres_server, tmp_path: Path
) -> None:
    # The test server trusts loopback, so any password connects: the point is where it shows.
    password = "pg-Pa55word-9e1f"
    url = postgres_server.url.replace("ragaudit@", f"ragaudit:{password}@")
    result = ragaudit("doctor", "--db", url, "--skip-llm", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "ragaudit:***@127.0.0.1" in result.stdout
    assert password not in result.stdout + result.stderr
    for path in _all_artifacts(tmp_path):
        assert password.encode() not in path.read_bytes(), f"password leaked into {path}"


def test_credentials_in_the_llm_url_are_refused_and_never_shown(tmp_path: Path) -> None:
    password = "url-Pa55word-7c2d"
    url = f"http://alice:{password}@127.0.0.1:9/v1"
    (tmp_path / "ragaudit.yaml").write_text(f"llm:\n  model: openai:m\n  base_url: {url}\n")
    result = ragaudit("doctor", "--example", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ragaudit.yaml:3: llm.base_url: ")
    assert "user or password in the URL is not supported" in result.stderr
    assert "OPENAI_API_KEY" in result.stderr
    (tmp_path / "ragaudit.yaml").write_text("llm:\n  model: openai:m\n")
    env = {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-t-0000000000"}
    from_env = ragaudit("doctor", "--example", cwd=tmp_path, env=env)
    assert from_env.returncode == 2 and "Traceback" not in from_env.stderr
    assert from_env.stderr.startswith("error: OPENAI_BASE_URL: a user or password in the URL")
    for out in (result, from_env):
        assert password not in out.stdout + out.stderr
    for path in _all_artifacts(tmp_path):
        assert password.encode() not in path.read_bytes(), f"password leaked into {path}"
