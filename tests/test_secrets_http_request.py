"""An HTTP system's `request` may hold a credential written out (``api_key: "..."``): a
GET sends it as a query parameter, a POST in the body. Named like a secret
(:func:`ragaudit.secrets.is_secret_parameter`), its value is masked everywhere ragaudit
shows or stores it, as the same parameter written in `url` is: doctor's output, the run's
ragaudit.yaml and provenance.json, and what the system echoes back (issue 37, third
hostile pass, item 3)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ragaudit.config import parse_config
from ragaudit.secrets import redact
from tests.support.cli import ragaudit

GET_KEY = "GetLiteralKey31xyz"
GET_TOKEN = "GetLiteralTok33xyz"
URL_KEY = "UrlKey32xyz"
BODY_KEY = "LiteralBodyKey12xyz"
NESTED_SECRET = "NestedSecret77xyz"


class EchoServer:
    """A real HTTP server standing in for a user's RAG endpoint that echoes what it got
    (path with its query string, and body) in its answer, as a debugging endpoint does."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        seen = self.seen

        class Handler(BaseHTTPRequestHandler):
            def _echo(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("utf-8") if length else ""
                seen.append(self.path + " " + body)
                reply = json.dumps({"answer": f"echo {self.path} {body}"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            do_GET = do_POST = _echo

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/echo"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def echo_server() -> Iterator[EchoServer]:
    server = EchoServer()
    yield server
    server.close()


def _config(url: str) -> str:
    return f"""systems:
  - name: getecho
    kind: http
    method: GET
    url: {url}?api_key={URL_KEY}
    request: {{question: "{{query}}", access_token: "{GET_TOKEN}", api_key: "{GET_KEY}"}}
  - name: postecho
    kind: http
    url: {url}
    request:
      question: "{{query}}"
      api_key: "{BODY_KEY}"
      options: {{client_secret: "{NESTED_SECRET}", max_tokens: 64, lang: en}}
      token: "${{BODY_TOK}}"
"""


def test_secret_named_request_values_are_masked_in_output_run_files_and_records(
    tmp_path: Path, echo_server: EchoServer
) -> None:
    (tmp_path / "ragaudit.yaml").write_text(_config(echo_server.url))
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps(
            {
                "id": "q1",
                "context": "Paris is in France.",
                "question": "Where is Paris?",
                "answer": "France",
            }
        )
        + "\n"
    )
    doctor = ragaudit("doctor", "--example", "--skip-llm", cwd=tmp_path)
    assert doctor.returncode == 0, doctor.stderr
    imported = ragaudit("generate", "--import", str(questions), cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    ran = ragaudit("run", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr

    # The values were really sent: the literal is what the system needs.
    sent = " ".join(echo_server.seen)
    for secret in (GET_KEY, GET_TOKEN, URL_KEY, BODY_KEY, NESTED_SECRET):
        assert secret in sent

    run = tmp_path / "runs" / "default"
    resolved = (run / "ragaudit.yaml").read_text()
    assert "access_token: '***'" in resolved and "api_key: '***'" in resolved
    assert "client_secret: '***'" in resolved
    assert "max_tokens: 64" in resolved  # not a credential: a number is shown as written
    assert "token: ${BODY_TOK}" in resolved  # a reference to the environment, shown as is
    assert "access_token: '***'" in doctor.stdout
    echoed = [json.loads(line) for line in (run / "responses" / "getecho.jsonl").open()]
    assert echoed[0]["error"] is None and "access_token=***" in echoed[0]["response"]
    for secret in (GET_KEY, GET_TOKEN, URL_KEY, BODY_KEY, NESTED_SECRET):
        assert secret not in doctor.stdout + doctor.stderr + ran.stdout + ran.stderr
        for path in run.rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), f"{secret} leaked into {path}"


def test_masked_dict_registers_the_values_it_masks() -> None:
    """Every step writes the resolved configuration first: what it masks there is then
    masked in every message too, e.g. a connection error quoting the GET URL."""
    config = parse_config(
        "systems:\n  - name: s\n    kind: http\n    method: GET\n    url: http://127.0.0.1:9/a\n"
        "    request: {q: '{query}', Api-Key: 'Masked-In-Messages-88', n: 'plain-value'}\n"
    )
    masked = config.masked_dict()["systems"][0]["request"]
    assert masked == {"q": "{query}", "Api-Key": "***", "n": "plain-value"}
    message = "connection failed: http://127.0.0.1:9/a?q=x&Api-Key=Masked-In-Messages-88"
    assert "Masked-In-Messages-88" not in redact(message)
    assert "plain-value" in redact("plain-value")


def test_an_http_system_built_from_python_registers_its_literal_credentials(
    tmp_path: Path, echo_server: EchoServer
) -> None:
    """Without a configuration file (a notebook builds the system): the adapter registers
    the credentials of its request and headers itself, so an echo of them is stored
    masked."""
    from ragaudit import aio
    from ragaudit.harness.ask import run_system
    from ragaudit.records.io import read_jsonl
    from ragaudit.records.models import ResponseRecord
    from ragaudit.systems.adapters import HTTPSystem
    from tests.support.datasets import queries

    key, bearer = "PyOnlyLiteral-5150", "PyOnlyBearer-6160"
    system = HTTPSystem(
        "py",
        echo_server.url,
        method="GET",
        headers={"Authorization": f"Bearer {bearer}"},
        request={"q": "{query}", "api_key": key},
    )
    out = tmp_path / "r.jsonl"

    async def go() -> None:
        try:
            await run_system(system, queries([f"repeat {bearer}"]), out)
        finally:
            await system.aclose()

    aio.run(go())
    assert key in " ".join(echo_server.seen)
    (record,) = read_jsonl(out, ResponseRecord)
    assert record.error is None and "api_key=***" in (record.response or "")
    assert key not in out.read_text() and bearer not in out.read_text()
