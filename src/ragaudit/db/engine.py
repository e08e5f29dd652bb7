"""Read-only connections to the user's database, with a timeout on every statement.

Read-only is enforced by the database, not only by our SQL checks:

* SQLite: opened with ``mode=ro`` and ``PRAGMA query_only``; timeouts by a progress handler;
* DuckDB: ``read_only=True``; timeouts by interrupting the connection;
* PostgreSQL (psycopg 3): ``default_transaction_read_only=on`` and ``statement_timeout``.

Other SQLAlchemy URLs are accepted as they are: there read-only rests on the account's
permissions, which :attr:`Database.read_only_enforced` reports.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine, make_url

from ragaudit.db.options import mask_url_password, register_url_secrets, render_masked
from ragaudit.errors import DatabaseError

EXAMPLE_URL = "example"


def example_database_path() -> Path:
    """The small example SQLite database bundled with the package."""
    return Path(str(resources.files("ragaudit") / "data" / "example.sqlite"))


@dataclass(frozen=True)
class QueryResult:
    """Rows of a query with their column names."""

    columns: list[str]
    rows: list[tuple[Any, ...]]


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()
    return text[0] if text else type(orig).__name__


class Database:
    """A read-only handle on one database, named by a SQLAlchemy URL (or ``example``)."""

    def __init__(self, url: str, *, timeout_s: float = 30.0) -> None:
        self.timeout_s = timeout_s
        if url == EXAMPLE_URL:
            url = f"sqlite:///{example_database_path()}"
        if url.startswith("postgres://"):  # the common spelling SQLAlchemy 2 no longer takes
            url = "postgresql://" + url[len("postgres://") :]
        try:
            parsed = make_url(url)
        except Exception:
            raise DatabaseError(
                f"database URL {mask_url_password(url)!r} is not a SQLAlchemy URL "
                "(e.g. sqlite:///data.db, duckdb:///data.duckdb, postgresql://user@host/db)"
            ) from None
        register_url_secrets(parsed)
        self.url: URL = parsed
        self.dialect = parsed.get_backend_name()
        self.read_only_enforced = self.dialect in {"sqlite", "duckdb", "postgresql"}
        self.engine: Engine = self._make_engine(parsed)

    # -- construction ---------------------------------------------------------------------

    @property
    def display_url(self) -> str:
        """The URL with its password hidden, in the user part and in the query string."""
        return render_masked(self.url)

    @property
    def sqlglot_dialect(self) -> str:
        """The dialect name sqlglot uses for this database."""
        return {"postgresql": "postgres", "mssql": "tsql"}.get(self.dialect, self.dialect)

    def _make_engine(self, url: URL) -> Engine:
        if self.dialect == "sqlite":
            return self._sqlite_engine(url)
        if self.dialect == "duckdb":
            path = url.database or ""
            if path in ("", ":memory:"):
                raise DatabaseError(
                    "duckdb: an in-memory database has no data to read; give a file"
                )
            if not Path(path).is_file():
                raise DatabaseError(f"duckdb: no database file at {path}")
            return sa.create_engine(url, connect_args={"read_only": True}, poolclass=sa.NullPool)
        if self.dialect == "postgresql":
            url = url.set(drivername="postgresql+psycopg")
            timeout_ms = int(self.timeout_s * 1000)
            options = f"-c default_transaction_read_only=on -c statement_timeout={timeout_ms}"
            return sa.create_engine(
                url,
                connect_args={"options": options, "connect_timeout": 10},
                pool_pre_ping=True,
            )
        try:
            return sa.create_engine(url)
        except Exception as exc:
            raise DatabaseError(f"{self.display_url}: cannot use this database: {exc}") from None

    def _sqlite_engine(self, url: URL) -> Engine:
        path = url.database or ""
        if path in ("", ":memory:"):
            raise DatabaseError("sqlite: an in-memory database has no data to read; give a file")
        file = Path(path)
        if not file.is_file():
            raise DatabaseError(f"sqlite: no database file at {file}")
        uri = f"file:{urllib.parse.quote(str(file.resolve()))}?mode=ro"

        def connect() -> sqlite3.Connection:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            conn.execute("PRAGMA query_only = ON")
            return conn

        return sa.create_engine("sqlite://", creator=connect, poolclass=sa.NullPool)

    # -- execution ------------------------------------------------------------------------

    def check_connection(self) -> None:
        """Open and close one connection; a :class:`DatabaseError` saying why if it fails."""
        try:
            with self.engine.connect() as conn:
                conn.execute(sa.text("SELECT 1"))
        except sa.exc.SQLAlchemyError as exc:
            raise DatabaseError(f"{self.display_url}: cannot connect: {_first_line(exc)}") from None

    @contextlib.contextmanager
    def _errors(self, timeout: float) -> Iterator[None]:
        """Turn driver errors into one-line :class:`DatabaseError` messages."""
        try:
            yield
        except self._query_errors() as exc:
            message = _first_line(exc)
            if _is_timeout(message):
                raise DatabaseError(
                    f"{self.display_url}: query ran past the {timeout:g} s timeout"
                ) from None
            raise DatabaseError(f"{self.display_url}: query failed: {message}") from None

    def _query_errors(self) -> tuple[type[BaseException], ...]:
        """SQLAlchemy's errors, and the driver's own error classes, raised where ragaudit
        uses its cursor directly. (One tuple: mypy rejects a starred one in ``except``.)"""
        if self.dialect == "sqlite":
            import sqlite3

            return (sa.exc.SQLAlchemyError, sqlite3.Error)
        if self.dialect == "duckdb":
            import duckdb

            return (sa.exc.SQLAlchemyError, duckdb.Error)
        return (sa.exc.SQLAlchemyError,)

    @staticmethod
    def _clause(statement: str | sa.TextClause) -> sa.TextClause:
        if isinstance(statement, sa.TextClause):
            return statement
        # A plain string runs as written: a literal ':' is not a bind parameter.
        return sa.text(statement.replace(":", r"\:"))

    def execute(
        self,
        statement: str | sa.TextClause,
        params: dict[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
        max_rows: int | None = None,
    ) -> QueryResult:
        """Run one statement read-only, cancelled after ``timeout_s``; return its rows.

        Plain strings run as they are (a literal ``:`` is not a parameter); build
        parametrised statements with :func:`ragaudit.db.placeholders.bind_template`.
        """
        timeout = timeout_s or self.timeout_s
        with (
            self._errors(timeout),
            self.engine.connect() as conn,
            _deadline(conn, self.dialect, timeout),
        ):
            result = conn.execute(self._clause(statement), params or {})
            columns = list(result.keys())
            rows = result.fetchmany(max_rows) if max_rows else result.fetchall()
        return QueryResult(columns=columns, rows=[tuple(r) for r in rows])

    def stream(
        self,
        statement: str | sa.TextClause,
        params: dict[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
        batch_size: int = 10_000,
    ) -> Iterator[tuple[Any, ...]]:
        """Yield the rows of one read-only statement in batches, without holding them all
        in memory (server-side cursors where the driver has them)."""
        timeout = timeout_s or self.timeout_s
        if isinstance(statement, str) and not params and self.dialect in ("sqlite", "duckdb"):
            # An in-process engine with a plain statement: its own cursor already yields
            # tuples, and skipping SQLAlchemy's row objects halves the cost per row (a
            # million-group template streams in about half the time).
            with (
                self._errors(timeout),
                self.engine.connect() as conn,
                _deadline(conn, self.dialect, timeout),
            ):
                cursor = conn.connection.cursor()
                try:
                    cursor.execute(statement)
                    while rows := cursor.fetchmany(batch_size):
                        for row in rows:
                            yield tuple(row)
                finally:
                    cursor.close()
            return
        # Streaming is set on the query alone: on PostgreSQL it becomes a server-side
        # cursor, which the timeout's SET LOCAL must not go through.
        clause = self._clause(statement).execution_options(
            stream_results=True, yield_per=batch_size
        )
        with (
            self._errors(timeout),
            self.engine.connect() as conn,
            _deadline(conn, self.dialect, timeout),
        ):
            result = conn.execute(clause, params or {})
            for batch in result.partitions(batch_size):
                for row in batch:
                    yield tuple(row)

    def dispose(self) -> None:
        """Close pooled connections."""
        self.engine.dispose()


def _is_timeout(message: str) -> bool:
    lowered = message.lower()
    return (
        "interrupt" in lowered or "statement timeout" in lowered or "canceling statement" in lowered
    )


class _deadline:
    """Cancel the statement running on ``conn`` once ``timeout`` seconds have passed."""

    def __init__(self, conn: sa.Connection, dialect: str, timeout: float) -> None:
        self.conn = conn
        self.dialect = dialect
        self.timeout = timeout
        self._timer: threading.Timer | None = None

    def __enter__(self) -> None:
        raw = self.conn.connection.driver_connection
        if self.dialect == "sqlite":
            if raw is None:  # an invalidated connection: there is nothing to run a statement on
                raise DatabaseError("sqlite: the connection is closed")
            deadline = time.monotonic() + self.timeout
            raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        elif self.dialect == "duckdb":
            target = getattr(raw, "_ConnectionWrapper__c", raw)
            interrupt = getattr(target, "interrupt", None) or getattr(raw, "interrupt", None)
            if interrupt is not None:
                self._timer = threading.Timer(self.timeout, interrupt)
                self._timer.daemon = True
                self._timer.start()
        elif self.dialect == "postgresql":
            self.conn.execute(sa.text(f"SET LOCAL statement_timeout = {int(self.timeout * 1000)}"))

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self.dialect == "sqlite":
            raw = self.conn.connection.driver_connection
            if raw is None:  # an invalidated connection: there is no handler to remove
                raise DatabaseError("sqlite: the connection is closed")
            raw.set_progress_handler(None, 0)
