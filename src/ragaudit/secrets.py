"""Keeping API keys out of everything ragaudit writes or prints.

Keys are registered as soon as they are read (config or environment); every
string on its way to a log, error message, cache or report can then be passed
through :func:`redact`.
"""

from __future__ import annotations

import re
import threading
import urllib.parse

MASK = "***"
_lock = threading.Lock()
_known: set[str] = set()
# Shapes of common API keys, masked even if they were never registered.
_KEY_SHAPES = re.compile(r"\b(sk-[A-Za-z0-9_\-]{12,}|Bearer\s+[A-Za-z0-9_\-.]{12,})")


def register_secret(value: str | None) -> None:
    """Remember a secret so that :func:`redact` masks it wherever it appears."""
    if value and len(value) >= 4:
        with _lock:
            _known.add(value)


def redact(text: str) -> str:
    """Return ``text`` with every registered secret and key-shaped token replaced by ``***``."""
    if not text:
        return text
    with _lock:
        known = sorted(_known, key=len, reverse=True)
    for secret in known:
        text = text.replace(secret, MASK)
    return _KEY_SHAPES.sub(MASK, text)


def redact_known(text: str | None) -> str | None:
    """``text`` with every registered secret masked, and nothing else changed: for what
    others wrote (a system's answer, a model's reply), which ragaudit stores, where a key
    the other side echoed must not land. Costs nothing while no secret is registered."""
    if not text or not _known:
        return text
    with _lock:
        known = sorted(_known, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


SECRET_URL_PARAMETERS = frozenset({"password", "pwd", "passwd", "sslpassword", "token", "key"})
"""URL query parameters whose value is a secret (compared case-insensitively): libpq and
many drivers and services take a password, token or key there."""

_SECRET_QUERY = re.compile(
    r"(?P<name>[?&](?:" + "|".join(sorted(SECRET_URL_PARAMETERS)) + r")=)(?P<value>[^&]*)",
    re.IGNORECASE,
)
# The password of a URL's user part, read as SQLAlchemy reads it: from "://user:" to the "@".
_USER_PASSWORD = re.compile(r"(?P<user>://[^:/]*:)(?P<value>[^@]*)(?P<at>@)")


def register_url_value(value: str) -> None:
    """Register a secret taken from a URL, decoded and as a URL would quote it (a message
    may quote either)."""
    register_secret(value)
    register_secret(urllib.parse.quote(value, safe=""))
    register_secret(urllib.parse.quote_plus(value))


def mask_url_query(url: str) -> str:
    """``url`` with the value of every password-like query parameter
    (:data:`SECRET_URL_PARAMETERS`) shown as ``***`` and registered as a secret; the rest is
    kept as written.

    >>> mask_url_query("https://h/ask?lang=en&Token=t0k3n-abc")
    'https://h/ask?lang=en&Token=***'
    """
    head, mark, query = url.partition("?")
    if not mark:
        return url
    for match in _SECRET_QUERY.finditer(mark + query):
        register_secret(match["value"])
        register_url_value(urllib.parse.unquote_plus(match["value"]))
    return head + _SECRET_QUERY.sub(lambda m: m["name"] + MASK, mark + query)


def mask_url(url: str) -> str:
    """``url`` with the password of its user part and of every password-like query parameter
    shown as ``***`` and registered as secrets, the rest as written: for a URL that is shown
    or stored (a resolved configuration, an error message).

    >>> mask_url("postgresql://app:s3cret@db/prod?sslmode=require&password=s3cret")
    'postgresql://app:***@db/prod?sslmode=require&password=***'
    """
    if "://" not in url:
        return url
    for match in _USER_PASSWORD.finditer(url):
        register_secret(match["value"])
        register_url_value(urllib.parse.unquote(match["value"]))
    url = _USER_PASSWORD.sub(lambda m: m["user"] + MASK + m["at"], url)
    return mask_url_query(url)


def mask(value: str | None) -> str | None:
    """Show that a secret is set without showing it: ``***`` (None stays None)."""
    return None if value is None else MASK
