"""An LLM base URL that answers, but not in HTTP (a wrong port: an SSH daemon, a raw TCP
service), is a failed call with one line, retried like a dropped connection, on both
transports; never a traceback (llm/backends/openai_http.py)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragaudit.config import LLMConfig
from ragaudit.errors import LLMError
from ragaudit.llm import make_llm, user
from ragaudit.llm.backends.openai_http import OpenAIBackend
from tests.support.cli import ragaudit, without_progress

BANNER = b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n"


class BannerServer:
    """A real TCP server on 127.0.0.1 that greets every connection with an SSH banner,
    reads what the client sends, and closes: what a client meets on a wrong port."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.connections = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._socket.accept()
            except OSError:  # closed
                return
            self.connections += 1
            threading.Thread(target=self._greet, args=(conn,), daemon=True).start()

    @staticmethod
    def _greet(conn: socket.socket) -> None:
        with conn:
            try:
                conn.sendall(BANNER)
                conn.settimeout(2)
                conn.recv(65536)
            except OSError:
                pass

    def close(self) -> None:
        self._socket.close()


@pytest.fixture
def banner_server() -> Iterator[BannerServer]:
    server = BannerServer()
    yield server
    server.close()


@pytest.mark.parametrize("transport", ["aiohttp", "openai-sdk"])
def test_a_server_that_does_not_speak_http_is_a_one_line_error_after_retries(
    transport: str, banner_server: BannerServer
) -> None:
    config = LLMConfig(
        model="openai:m",
        base_url=banner_server.base_url,
        api_key="sk-test-key-0123456789abcdef",
        max_retries=1,
        transport=transport,
    )
    with make_llm(config) as client:
        assert isinstance(client.backend, OpenAIBackend)
        client.backend.backoff_base_s = 0.01
        with pytest.raises(LLMError) as caught:
            client.complete([user("q")])
    message = str(caught.value)
    assert "\n" not in message
    assert "gave up after 2 attempts" in message  # retried as a dropped connection is
    assert "no valid HTTP reply" in message
    assert banner_server.connections >= 2
    assert "sk-test-key" not in message


def _config(tmp_path: Path, base_url: str) -> None:
    (tmp_path / "ragaudit.yaml").write_text(
        f"llm:\n  model: openai:m\n  base_url: {base_url}\n  max_retries: 1\n"
        "  max_retry_wait_s: 1\n  timeout_s: 5\n"
    )


def test_doctor_reports_a_server_that_does_not_speak_http_in_one_line(
    tmp_path: Path, banner_server: BannerServer
) -> None:
    _config(tmp_path, banner_server.base_url)
    result = ragaudit("doctor", "--example", cwd=tmp_path, env={"OPENAI_API_KEY": "sk-x"})
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 1  # doctor's "a check failed", as for a refused connection
    lines = [line for line in without_progress(result.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and "LLM check failed" in lines[0]
    assert "no valid HTTP reply (HttpProcessingError: Bad status line)" in lines[0]


def test_label_records_pairs_undecided_when_the_server_does_not_speak_http(
    tmp_path: Path, banner_server: BannerServer
) -> None:
    _config(tmp_path, banner_server.base_url)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        json.dumps({"id": "q1", "context": "Paris is in France.", "question": "Where is Paris?"})
        + "\n"
    )
    result = ragaudit("label", "--input", str(pairs), cwd=tmp_path, env={"OPENAI_API_KEY": "x"})
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 0, result.stderr  # as for a server that cannot be reached
    assert "undecided" in result.stdout
    record = json.loads((tmp_path / "runs/default/labels.jsonl").read_text().splitlines()[0])
    assert record["label"] is None
    assert "no valid HTTP reply (HttpProcessingError: Bad status line)" in json.dumps(record)


def test_generate_documents_stops_in_one_line_when_the_server_does_not_speak_http(
    tmp_path: Path, banner_server: BannerServer
) -> None:
    _config(tmp_path, banner_server.base_url)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Orrin is a town of nine thousand people on the river Ash. " * 4)
    (tmp_path / "ragaudit.yaml").write_text(
        (tmp_path / "ragaudit.yaml").read_text() + f"corpus:\n  path: {corpus}\n"
    )
    result = ragaudit(
        "generate", "--documents", "--strategy", "simple", "--size", "1",
        cwd=tmp_path, env={"OPENAI_API_KEY": "x"},
    )  # fmt: skip
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 2
    lines = [line for line in without_progress(result.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: no pair accepted")
    assert not (tmp_path / "runs/default/dataset.jsonl").exists()
