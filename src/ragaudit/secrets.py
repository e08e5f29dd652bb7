"""Keeping API keys out of everything ragaudit writes or prints.

Keys are registered as soon as they are read (config or environment); every
string on its way to a log, error message, cache or report can then be passed
through :func:`redact`.
"""

from __future__ import annotations

import re
import threading

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


def mask(value: str | None) -> str | None:
    """Show that a secret is set without showing it: ``***`` (None stays None)."""
    return None if value is None else MASK
