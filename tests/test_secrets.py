"""No API key appears in any output, error, cache file or run artifact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragaudit.config import LLMConfig, parse_config
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


def test_a_password_in_the_database_urls_query_is_masked_in_output_and_run_files(
    postgres_server, tmp_path: Path
) -> None:
    """libpq takes the password as a query parameter too (issue 37 item 13)."""
    password = "pg-Query-Pa55-3b7a"
    url = f"{postgres_server.url}?sslmode=disable&password={password}"
    result = ragaudit("doctor", "--db", url, "--skip-llm", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "password=***" in result.stdout and "sslmode=disable" in result.stdout
    assert password not in result.stdout + result.stderr
    run = tmp_path / "runs" / "default"
    assert "password=***" in (run / "ragaudit.yaml").read_text()
    assert "password=***" in (run / "provenance.json").read_text()
    for path in _all_artifacts(tmp_path):
        assert password.encode() not in path.read_bytes(), f"password leaked into {path}"


# Names a secret travels under in URLs: libpq's, OAuth's, API gateways', S3 presigned URLs'
# and Azure SAS tokens'; a percent-encoded name is read as what it decodes to.
SECRET_NAMES = [
    "password", "PWD", "passwd", "SSLPassword", "token", "Key", "api_key", "apikey",
    "API-KEY", "access_token", "client_secret", "auth", "Authorization", "oauth_token",
    "X-Amz-Signature", "X-Amz-Security-Token", "X-Amz-Credential", "sig", "SAS",
    "passphrase", "api%5Fkey",
]  # fmt: skip


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_every_secret_like_url_parameter_is_masked_and_registered(name: str) -> None:
    """Parameter names are matched by pattern, in any case: anything containing key,
    token, secret, pass, pwd, auth, credential or signature, and sig and sas (hostile pass
    on issue 37, finding 5); each value is registered decoded and URL-encoded, so that a
    message quoting it either way is masked."""
    from urllib.parse import quote, quote_plus, unquote

    from ragaudit.config import mask_url_password
    from ragaudit.secrets import mask_url, mask_url_query

    secret = f"qs {name[:6]}/5ecret+41d9="  # encodes differently in a path and a query
    written = quote(secret, safe="")
    url = f"postgresql://alice:user-Pa55-8c1e@db.example/app?sslmode=require&{name}={written}"
    shown = mask_url_password(url)
    assert shown is not None and written not in shown and "user-Pa55-8c1e" not in shown
    # SQLAlchemy renders the query again, a percent-encoded name decoded.
    assert any(f"{n}=***" in shown for n in (name, unquote(name)))
    assert "sslmode=require" in shown and "alice:***@" in shown
    for form in (secret, written, quote_plus(secret)):
        assert form not in shown
        assert form not in redact(f"could not connect with {form}"), form  # registered
    # What follows a secret up to the next & is masked with it, a # too (SQLAlchemy reads
    # one as part of the value).
    system = f"https://h.example/ask?lang=en&{name}={written}#top"
    assert mask_url(system) == f"https://h.example/ask?lang=en&{name}=***"
    assert mask_url_query(f"/ask?{name}={written}&page=2") == f"/ask?{name}=***&page=2"
    # OAuth's implicit flow returns its token in the fragment.
    assert mask_url_query(f"/cb#{name}={written}&state=1") == f"/cb#{name}=***&state=1"


@pytest.mark.parametrize(
    "url", ["sqlite:///f.db?mode=ro", "https://h/ask?lang=en&sign=1&region=eu&sv=2024-01-01"]
)
def test_parameters_named_like_no_secret_are_shown_as_written(url: str) -> None:
    from ragaudit.config import mask_url_password
    from ragaudit.secrets import mask_url

    assert mask_url(url) == url
    assert mask_url_password(url) == url


def test_a_database_url_that_does_not_parse_shows_no_password(tmp_path: Path) -> None:
    secret = "bad-url-Pa55-6a0b"
    result = ragaudit(
        "doctor", "--db", f"postgresql://u@h:notaport/db?password={secret}", "--skip-llm",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert secret not in result.stdout + result.stderr
    for path in _all_artifacts(tmp_path):
        assert secret.encode() not in path.read_bytes(), f"password leaked into {path}"


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


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("key", "key in the URL's query"),
        ("api_key", "key in the URL's query"),
        ("access_token", "key in the URL's query"),
        ("X-Amz-Signature", "key in the URL's query"),
        # A name that says nothing (Azure Functions take their key as ?code=): a query is
        # never sent as one, since the request path goes after the base URL.
        ("code", "a query in the URL is not supported"),
    ],
)
def test_a_key_in_the_llm_urls_query_is_refused_and_never_shown(
    tmp_path: Path, name: str, why: str
) -> None:
    """Some services take their key as ``?key=``; the request path goes after the base URL,
    so it would be neither sent right nor hidden: refused, masked, whatever the parameter
    is called (issue 37 item 13; hostile pass on it, finding 5: ``?api_key=`` was accepted
    and printed, in "LLM check failed: ..." too)."""
    secret = f"qs-{name}-5ecret-0d4e"
    url = f"http://127.0.0.1:9/v1?{name}={secret}"
    (tmp_path / "ragaudit.yaml").write_text(f"llm:\n  model: openai:m\n  base_url: '{url}'\n")
    result = ragaudit("doctor", "--example", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ragaudit.yaml:3: llm.base_url: ")
    assert why in result.stderr and len(result.stderr.strip().splitlines()) == 1
    (tmp_path / "ragaudit.yaml").write_text("llm:\n  model: openai:m\n")
    env = {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-t-0000000000"}
    from_env = ragaudit("doctor", "--example", cwd=tmp_path, env=env)
    assert from_env.returncode == 2 and "Traceback" not in from_env.stderr
    assert from_env.stderr.startswith("error: OPENAI_BASE_URL: ")
    assert why in from_env.stderr and len(from_env.stderr.strip().splitlines()) == 1
    assert "LLM check failed" not in from_env.stdout + from_env.stderr
    for out in (result, from_env):
        assert secret not in out.stdout + out.stderr
    for path in _all_artifacts(tmp_path):
        assert secret.encode() not in path.read_bytes(), f"key leaked into {path}"


def test_a_token_in_an_http_systems_url_is_masked_in_the_run_files(tmp_path: Path) -> None:
    """An HTTP system's endpoint may carry its token (``?token=``, ``?api_key=``, a presigned
    ``X-Amz-Signature``, ...) or a user and password: doctor's output, the resolved
    configuration and the provenance show them as *** (issue 37 item 13; hostile pass on
    it, finding 5: api_key and access_token were printed and written in clear)."""
    password = "sys-Pa55-77c1"
    planted = {
        name: f"sys-{name}-5ecret-{number:04d}"
        for number, name in enumerate(
            ["token", "api_key", "access_token", "client_secret", "apikey", "auth",
             "X-Amz-Signature", "X-Amz-Security-Token"]
        )
    }  # fmt: skip
    query = "&".join(f"{name}={secret}" for name, secret in planted.items())
    url = f"http://bob:{password}@127.0.0.1:9/ask?lang=en&{query}&page=2"
    (tmp_path / "ragaudit.yaml").write_text(
        f"systems:\n  - name: mine\n    kind: http\n    url: '{url}'\n"
    )
    result = ragaudit("doctor", "--example", "--skip-llm", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    run = tmp_path / "runs" / "default"
    masked = "&".join(f"{name}=***" for name in planted)
    expected = f"http://bob:***@127.0.0.1:9/ask?lang=en&{masked}&page=2"
    assert expected in (run / "ragaudit.yaml").read_text()
    assert expected in (run / "provenance.json").read_text()
    assert f"url: {expected}" in result.stdout
    parse_config((tmp_path / "ragaudit.yaml").read_text()).masked_dict()  # as each step does
    for secret in (password, *planted.values()):
        assert secret not in result.stdout + result.stderr
        assert secret not in redact(f"connection failed: {url}")  # registered
        for path in _all_artifacts(run):  # the user's own ragaudit.yaml holds it, of course
            assert secret.encode() not in path.read_bytes(), f"secret leaked into {path}"
