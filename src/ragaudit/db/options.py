"""The ``database`` section of ragaudit.yaml: the data the questions are grounded in, and
its URL as it may be shown.

A URL carries a password in its user part (``postgresql://user:secret@host/db``) and, for
libpq and many drivers, in its query string too (``...?password=secret``, ``?sslpassword=``,
``?token=``, ``?api_key=``: every name :func:`ragaudit.secrets.is_secret_parameter` matches):
both are masked as ``***`` and registered with :mod:`ragaudit.secrets`, so that an error
message that quotes them is masked as well.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from ragaudit.options import MAX_TIMEOUT_S, StrictOptions
from ragaudit.secrets import is_secret_parameter, mask_url, mask_url_query, register_url_value

if TYPE_CHECKING:  # SQLAlchemy is imported only where a URL is parsed (the CLI starts faster)
    from sqlalchemy.engine import URL


class DatabaseConfig(StrictOptions):
    """The relational database the questions are grounded in."""

    url: str | None = Field(
        None,
        description="SQLAlchemy URL (sqlite:///f.db, duckdb:///f.duckdb, "
        "postgresql://user@host/db) or 'example' for the bundled example database.",
    )
    timeout_s: float = Field(
        30.0, gt=0, le=MAX_TIMEOUT_S, description="Statement timeout for every query."
    )
    tables: list[str] | None = Field(None, description="Only these tables (default: all).")


def register_url_secrets(url: URL) -> None:
    """Register the password and every secret-like query value of ``url`` as secrets
    (:func:`ragaudit.secrets.is_secret_parameter`)."""
    if url.password:
        register_url_value(str(url.password))
    for name, values in url.query.items():
        if is_secret_parameter(name):
            for value in (values,) if isinstance(values, str) else values:
                register_url_value(value)


def render_masked(url: URL) -> str:
    """``url`` as text with its password and secret-like query values shown as ``***``
    (and registered as secrets)."""
    register_url_secrets(url)
    return mask_url_query(url.render_as_string(hide_password=True))


def mask_url_password(url: str | None) -> str | None:
    """A database URL as written with its secrets shown as ``***`` and registered, so that
    they are masked in messages too: the password of the user part (hidden by SQLAlchemy's
    rendering, which knows where it ends) and the value of every secret-like query parameter
    (:func:`ragaudit.secrets.is_secret_parameter`, masked as written). A URL that does not
    parse is masked as text (for the message that says so); other strings are returned as is.

    >>> mask_url_password("postgresql://app@db/prod?sslmode=require&password=s3cret")
    'postgresql://app@db/prod?sslmode=require&password=***'
    """
    if not url or "://" not in url:
        return url
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:  # not a SQLAlchemy URL: mask it as text
        return mask_url(url)
    register_url_secrets(parsed)
    if parsed.password:
        return mask_url_query(parsed.render_as_string(hide_password=True))
    return mask_url_query(url)
