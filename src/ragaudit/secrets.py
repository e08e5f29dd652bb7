"""Keeping API keys out of everything ragaudit writes or prints.

Keys are registered as soon as they are read (config or environment); every
string on its way to a log, error message, cache or report can then be passed
through :func:`redact`.
"""

from __future__ import annotations

import re
import threading
import urllib.parse
from typing import Any

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


SECRET_NAME_PARTS = ("key", "token", "secret", "pass", "pwd", "auth", "credential", "signature")
"""A URL parameter whose name contains one of these, in any case, carries a secret: libpq's
``password``, ``passwd`` and ``sslpassword``, ``api_key``, ``apikey``, ``access_token``,
``client_secret``, ``Authorization``, S3's ``X-Amz-Signature``, ``X-Amz-Security-Token`` and
``X-Amz-Credential``... (a name such as ``author`` is masked too: showing a value needlessly
hidden costs less than printing a key)."""

SECRET_NAMES = frozenset({"sig", "sas"})
"""URL parameters that carry a secret under a name too short to match by a part: Azure's
shared access signature (``sig``) and token (``sas``)."""


def is_secret_parameter(name: str) -> bool:
    """Whether the URL parameter ``name`` (as written: percent-encoded or not, in any case)
    carries a secret: its name contains one of :data:`SECRET_NAME_PARTS` or is one of
    :data:`SECRET_NAMES`. The one rule every URL ragaudit shows or stores is masked by.

    >>> [is_secret_parameter(n) for n in ("api_key", "X-Amz-Signature", "SIG", "lang", "sign")]
    [True, True, True, False, False]
    """
    lowered = urllib.parse.unquote_plus(name).lower()
    return lowered in SECRET_NAMES or any(part in lowered for part in SECRET_NAME_PARTS)


# The password of a URL's user part, read as SQLAlchemy reads it: from "://user:" to the "@".
_USER_PASSWORD = re.compile(r"(?P<user>://[^:/]*:)(?P<value>[^@]*)(?P<at>@)")


def register_url_value(value: str) -> None:
    """Register a secret taken from a URL, decoded and as a URL would quote it (a message
    may quote either)."""
    register_secret(value)
    register_secret(urllib.parse.quote(value, safe=""))
    register_secret(urllib.parse.quote_plus(value))


def _mask_parameter(piece: str) -> str:
    """One ``&``-separated piece of a URL's query or fragment (the first one starts with its
    ``?`` or ``#``), with its value shown as ``***`` and registered when its name says it is
    a secret. A secret value runs to the next ``&`` (a ``#`` in it may be the secret's own, as
    SQLAlchemy reads a database URL); after any other parameter a ``#`` starts a fragment,
    whose parameters are masked the same way (OAuth returns ``#access_token=...``)."""
    lead = piece[:1] if piece[:1] in ("?", "#") else ""
    name, equals, value = piece[len(lead) :].partition("=")
    if "#" in name:  # a fragment starts before any value
        cut = len(lead) + name.index("#")
        return piece[:cut] + _mask_parameter(piece[cut:])
    if not equals:
        return piece
    if is_secret_parameter(name):
        register_secret(value)
        register_url_value(urllib.parse.unquote_plus(value))
        return f"{lead}{name}={MASK}"
    if "#" in value:
        cut = value.index("#")
        return f"{lead}{name}={value[:cut]}" + _mask_parameter(value[cut:])
    return piece


def mask_url_query(url: str) -> str:
    """``url`` with the value of every secret-like parameter of its query or fragment
    (:func:`is_secret_parameter`) shown as ``***`` and registered as a secret, decoded and
    URL-encoded, so that a message quoting it either way is masked too; the rest is kept as
    written.

    >>> mask_url_query("https://h/ask?lang=en&Token=t0k3n-abc")
    'https://h/ask?lang=en&Token=***'
    >>> mask_url_query("https://h/s3/f.csv?X-Amz-Signature=5a1b2c&X-Amz-Expires=60")
    'https://h/s3/f.csv?X-Amz-Signature=***&X-Amz-Expires=60'
    """
    starts = [at for at in (url.find("?"), url.find("#")) if at >= 0]
    if not starts:
        return url
    start = min(starts)
    return url[:start] + "&".join(_mask_parameter(p) for p in url[start:].split("&"))


def mask_url(url: str) -> str:
    """``url`` with the password of its user part and the value of every secret-like query
    parameter (:func:`is_secret_parameter`) shown as ``***`` and registered as secrets, the
    rest as written: for a URL that is shown or stored (a resolved configuration, an error
    message).

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


# A value that is a template, not a literal: a field ragaudit fills in ({query}) or a
# reference to the environment (${VAR}). Neither is a credential as written.
_TEMPLATE_FIELD = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")


def _mask_literals(value: Any) -> Any:
    """Every literal string in ``value`` (at any depth) shown as ``***`` and registered,
    decoded and URL-encoded (a GET sends it in a query string); templates, numbers, booleans
    and null are kept as written."""
    if isinstance(value, str):
        if _TEMPLATE_FIELD.search(value):
            return value
        register_url_value(value)
        return MASK
    if isinstance(value, dict):
        return {key: _mask_literals(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_mask_literals(item) for item in value]
    return value


def mask_secret_fields(value: Any) -> Any:
    """A copy of the JSON-like ``value`` (an HTTP system's request template: GET query
    parameters or a POST body) with what every key named like a secret
    (:func:`is_secret_parameter`, at any depth) holds shown as ``***`` and registered, as
    the same parameter is in a URL: a string written out, or every one inside a mapping or
    list under that key. A template string (``{query}``, ``${VAR}``), a number or a boolean
    is not a credential and is kept.

    >>> mask_secret_fields({"q": "{query}", "api_key": "k-123456", "opts": {"max_tokens": 64}})
    {'q': '{query}', 'api_key': '***', 'opts': {'max_tokens': 64}}
    """
    if isinstance(value, dict):
        return {
            key: _mask_literals(item) if is_secret_parameter(str(key)) else mask_secret_fields(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [mask_secret_fields(item) for item in value]
    return value


def register_header_secrets(headers: dict[str, str]) -> None:
    """Register the literal value of every header named like a secret
    (:func:`is_secret_parameter`: ``Authorization``, ``X-Api-Key``, ...) and the credential
    after its scheme (``Bearer <token>``), which a system may echo alone; a ``${VAR}``
    reference is registered once read (``expand_env``)."""
    for name, value in headers.items():
        if is_secret_parameter(name) and not _TEMPLATE_FIELD.search(value):
            register_secret(value)
            register_secret(value.split()[-1] if value.split() else "")


def mask(value: str | None) -> str | None:
    """Show that a secret is set without showing it: ``***`` (None stays None)."""
    return None if value is None else MASK
