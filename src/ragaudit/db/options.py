"""The ``database`` section of ragaudit.yaml: the data the questions are grounded in."""

from __future__ import annotations

from pydantic import Field

from ragaudit.options import StrictOptions
from ragaudit.secrets import register_secret


class DatabaseConfig(StrictOptions):
    """The relational database the questions are grounded in."""

    url: str | None = Field(
        None,
        description="SQLAlchemy URL (sqlite:///f.db, duckdb:///f.duckdb, "
        "postgresql://user@host/db) or 'example' for the bundled example database.",
    )
    timeout_s: float = Field(30.0, gt=0, description="Statement timeout for every query.")
    tables: list[str] | None = Field(None, description="Only these tables (default: all).")


def mask_url_password(url: str | None) -> str | None:
    """``scheme://user:secret@host/db`` -> ``scheme://user:***@host/db``; the password is
    registered so that it is masked in messages too. Other strings are returned as is."""
    if not url or "://" not in url:
        return url
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:  # not a SQLAlchemy URL: the database layer reports that
        return url
    if not parsed.password:
        return url
    register_secret(str(parsed.password))
    return parsed.render_as_string(hide_password=True)
