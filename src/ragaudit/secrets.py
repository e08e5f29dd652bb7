"""Keeping API keys out of everything ragaudit writes or prints.

Keys are registered as soon as they are read (config or environment); every
string on its way to a log, error message, cache or report can then be passed
through :func:`redact`, and everything others wrote that ragaudit stores (a system's
answer, a model's reply) through :func:`redact_known`.

A registered secret is masked in the forms it is commonly written in, in any case (a
server may echo it lower-cased): :data:`SECRET_FORMS` lists them, and
:data:`MIN_FOLDED_LENGTH` says which secrets are too short for all of them.
"""

from __future__ import annotations

import base64
import html
import json
import re
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any

MASK = "***"
_lock = threading.Lock()
_known: set[str] = set()
# Shapes of common API keys, masked even if they were never registered.
_KEY_SHAPES = re.compile(r"\b(sk-[A-Za-z0-9_\-]{12,}|Bearer\s+[A-Za-z0-9_\-.]{12,})")

MIN_SECRET_LENGTH = 4
"""A shorter value is not registered: masking it would mask ordinary text."""

MIN_FOLDED_LENGTH = 8
"""A secret at least this long is masked in any case and in its binary encodings (hex,
base64) too; a shorter one only as written (and percent-, JSON- or HTML-escaped), since
ignoring case would mask ordinary words that happen to spell it (a password ``Admin``)
and its short encodings could turn up by chance in other encoded data."""

SECRET_FORMS = (
    "as written",
    "percent-encoded (urllib's quote with safe '' or '/', quote_plus, encodeURIComponent)",
    "JSON-escaped (\\uXXXX or raw for non-ASCII, '/' as '\\/' or not)",
    "HTML-escaped",
    "hex of its UTF-8 bytes",
    "base64, standard and URL-safe, padded or not",
    "inside base64 of a longer text (HTTP Basic auth's user:key or :key)",
)
"""The forms a registered secret is masked in. One of :data:`MIN_FOLDED_LENGTH` characters
or more is masked in each of them in any case (a server may echo the key lower- or
upper-cased); a shorter one only in the first four, in the case it was written in.

Inside base64 of a longer text, what is masked is the run of characters made of the
secret's bits alone (at whichever of the three offsets within a 3-byte group it starts):
the one or two characters at each end, which mix in the neighbouring bytes, stay. Not
detected: other encodings (base32, double percent-encoding, base64 broken into lines), an
encoding of the secret after a change of its case, and the secret reversed or split."""


def _fold(text: str) -> str:
    """``text`` lower-cased, one character for one, so that a position in it is the same
    position in ``text``: ``str.lower`` keeps the length of every character but one, the
    dotted capital I, which lower-cases to two."""
    return text.lower() if text.isascii() else text.replace("\u0130", "i").lower()


def _base64_forms(raw: bytes, encode: Callable[[bytes], bytes]) -> list[str]:
    """``raw`` in base64 (by ``encode``), padded and not, and the run of characters made of
    its bits alone when it sits inside longer encoded data, at each of the three offsets
    within a 3-byte group."""
    alone = encode(raw).decode("ascii")
    forms = [alone, alone.rstrip("=")]
    for lead in range(3):
        encoded = encode(b"\0" * lead + raw).decode("ascii")
        first = -(-8 * lead // 6)  # the first character whose 6 bits are all the secret's
        end = 8 * (lead + len(raw)) // 6  # past the last one
        forms.append(encoded[first:end])
    return forms


def _text_forms(secret: str) -> list[str]:
    """``secret`` as written, percent-encoded, JSON- and HTML-escaped."""
    quote = urllib.parse.quote
    forms = [
        secret,
        quote(secret, safe=""),
        quote(secret),
        urllib.parse.quote_plus(secret),
        quote(secret, safe="!'()*"),  # JavaScript's encodeURIComponent
        html.escape(secret),
    ]
    for ascii_only in (True, False):
        escaped = json.dumps(secret, ensure_ascii=ascii_only)[1:-1]
        forms += [escaped, escaped.replace("/", "\\/")]
    return forms


def _folded_forms(secret: str) -> list[str]:
    """Every form of ``secret`` in :data:`SECRET_FORMS`, folded (:func:`_fold`)."""
    raw = secret.encode("utf-8")
    forms = [*_text_forms(secret), raw.hex()]
    forms += _base64_forms(raw, base64.b64encode) + _base64_forms(raw, base64.urlsafe_b64encode)
    return [_fold(form) for form in forms]


def _probes(forms: set[str]) -> tuple[str, ...]:
    """The forms a text holding any of ``forms`` must hold: those that hold no other."""
    return tuple(f for f in forms if not any(o != f and o in f for o in forms))


class _Matcher:
    """The registered secrets as the strings looked for: the forms of the short ones as
    written (``exact``), those of the others folded (``folded``), each longest first; and
    for each, the few that a text holding any must hold (``probes``), which are all a text
    holding no secret is searched for."""

    def __init__(self, secrets: set[str]) -> None:
        exact: set[str] = set()
        folded: set[str] = set()
        for secret in secrets:
            if len(secret) >= MIN_FOLDED_LENGTH:
                folded.update(_folded_forms(secret))
            else:
                exact.update(_text_forms(secret))
        self.exact = tuple(sorted(exact, key=len, reverse=True))
        self.folded = tuple(sorted(folded, key=len, reverse=True))
        self.exact_probes = _probes(exact)
        self.folded_probes = _probes(folded)

    def mask(self, text: str) -> str:
        """``text`` with every stretch that is a form of a registered secret shown as
        ``***`` (overlapping or touching stretches as one)."""
        spans: list[tuple[int, int]] = []
        for forms, probes, haystack in (
            (self.exact, self.exact_probes, text),
            (self.folded, self.folded_probes, _fold(text) if self.folded else ""),
        ):
            if not any(probe in haystack for probe in probes):
                continue
            for form in forms:
                at = haystack.find(form)
                while at >= 0:
                    spans.append((at, at + len(form)))
                    at = haystack.find(form, at + 1)
        if not spans:
            return text
        spans.sort()
        pieces: list[str] = []
        kept = 0  # where the text not yet copied starts
        for start, end in spans:
            if start > kept or not pieces:
                pieces += [text[kept:start], MASK]
            kept = max(kept, end)
        pieces.append(text[kept:])
        return "".join(pieces)


_matcher: _Matcher | None = None


def _current_matcher() -> _Matcher:
    """The matcher of the secrets registered now, built again if one was added since."""
    global _matcher
    matcher = _matcher
    if matcher is None:
        with _lock:
            matcher = _matcher
            if matcher is None:
                matcher = _matcher = _Matcher(_known)
    return matcher


def register_secret(value: str | None) -> None:
    """Remember a secret so that :func:`redact` and :func:`redact_known` mask it wherever
    it appears, in the forms of :data:`SECRET_FORMS`. A value shorter than
    :data:`MIN_SECRET_LENGTH` is not worth masking ordinary text for."""
    global _matcher
    if value and len(value) >= MIN_SECRET_LENGTH and value not in _known:
        with _lock:
            _known.add(value)
            _matcher = None  # built again, with it, by the next redact


def redact(text: str) -> str:
    """Return ``text`` with every registered secret (in the forms of :data:`SECRET_FORMS`)
    and every key-shaped token replaced by ``***``: for what ragaudit itself prints or
    writes (errors, logs), where a key-shaped string is never wanted.

    >>> register_secret("Doctest-Key-5ecret-e1f0")
    >>> redact("401: invalid key doctest-key-5ecret-e1f0, token sk-abcdefghijklmnop")
    '401: invalid key ***, token ***'
    """
    if not text:
        return text
    if _known:
        text = _current_matcher().mask(text)
    return _KEY_SHAPES.sub(MASK, text)


def redact_known(text: str | None) -> str | None:
    """``text`` with every registered secret masked (in the forms of :data:`SECRET_FORMS`),
    and nothing else changed: for what others wrote (a system's answer, a model's reply),
    which ragaudit stores, where a key the other side echoed (lower-cased, URL- or
    base64-encoded) must not land. It runs on every stored text: one that holds no secret
    costs a lower-casing and a few substring searches, and nothing while no secret is
    registered.

    >>> register_secret("Doctest-Key-5ecret-e1f0")
    >>> redact_known("echo: DOCTEST-KEY-5ECRET-E1F0 / RG9jdGVzdC1LZXktNWVjcmV0LWUxZjA=")
    'echo: *** / ***'
    """
    if not text or not _known:
        return text
    return _current_matcher().mask(text)


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
    """Register a secret taken from a URL, decoded: a message may quote it so or as a URL
    would quote it, and :func:`register_secret` masks both (:data:`SECRET_FORMS`)."""
    register_secret(value)


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
