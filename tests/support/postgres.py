"""A throw-away PostgreSQL server for the test suite, on loopback, started from the
server binaries that ``make test`` installs (scripts/ensure-postgres.sh)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


def find_bin_dir() -> Path | None:
    """The newest PostgreSQL server bin folder on this machine, or None."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    if candidates:
        return Path(candidates[0]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    bin_dir: Path
    root: Path
    port: int
    user: str = "ragaudit"

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/postgres"

    @property
    def conninfo(self) -> str:
        return f"host=127.0.0.1 port={self.port} user={self.user} dbname=postgres"


def _as_server_user(cmd: list[str]) -> list[str]:
    # initdb and postgres refuse to run as root; the Debian package creates 'postgres'.
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", "postgres", "--", *cmd]


def start(bin_dir: Path) -> PostgresServer:
    """initdb a fresh cluster in a temp folder and start it on a free loopback port."""
    root = Path(tempfile.mkdtemp(prefix="ragaudit-pg-"))
    os.chmod(root, 0o755)
    if os.geteuid() == 0:
        entry = pwd.getpwnam("postgres")
        os.chown(root, entry.pw_uid, entry.pw_gid)
    data = root / "data"
    server = PostgresServer(bin_dir=bin_dir, root=root, port=_free_port())
    subprocess.run(
        _as_server_user(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                server.user,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ]
        ),
        check=True,
        capture_output=True,
    )
    options = (
        f"-p {server.port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off "
        "-c synchronous_commit=off -c full_page_writes=off"
    )
    subprocess.run(
        _as_server_user(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(root / "server.log"),
                "-w",
                "-t",
                "60",
                "start",
            ]
        ),
        check=True,
        capture_output=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", server.port)) == 0:
                return server
        time.sleep(0.2)
    raise RuntimeError(f"PostgreSQL did not start; see {root / 'server.log'}")


def stop(server: PostgresServer) -> None:
    subprocess.run(
        _as_server_user(
            [
                str(server.bin_dir / "pg_ctl"),
                "-D",
                str(server.root / "data"),
                "-m",
                "immediate",
                "stop",
            ]
        ),
        capture_output=True,
    )
    shutil.rmtree(server.root, ignore_errors=True)
