"""A key echoed in another case or encoding is masked too: a server that lower-cases the
key, or quotes it base64- or percent-encoded (HTTP Basic auth's ``user:key``), must not
land it in candidates.jsonl, scores/*.jsonl, the cache or a message. Short secrets are
masked only as written, so that ordinary words are left alone."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

from ragaudit.secrets import MASK, redact, redact_known, register_secret
from tests.support.cli import ragaudit
from tests.support.scripted_llm_server import Reply, ScriptedLLMServer

# '/', '+' and '=' are written differently percent-encoded, in base64 and URL-safe base64.
KEY = "Proj-Key/9fA3xQ7b+Lm2ZwT="


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _key_bits(prefix: str, key: str = KEY) -> str:
    """The characters of base64(prefix + key) made of the key's bits alone: what would let
    a reader decode the key (the one or two at each end mix in the prefix or padding)."""
    encoded = _b64(prefix + key)
    lead = len(prefix.encode())
    return encoded[-(-8 * lead // 6) : 8 * (lead + len(key.encode())) // 6]


# Basic auth's user:key puts the key at each of the three offsets within base64's
# 3-byte groups: 6, 1 and 2 bytes before it.
USERS = ("alice:", ":", "b:")


def _echoes(key: str = KEY) -> list[str]:
    """What an echoing server writes: the key in every case and encoding it is masked in."""
    return [
        key.lower(),
        key.upper(),
        key.swapcase(),
        _b64(key),
        base64.urlsafe_b64encode(key.encode()).decode().rstrip("="),
        quote(key, safe=""),
        quote(key, safe="").lower(),
        quote_plus(key),
        *(_b64(user + key) for user in USERS),
        key.encode().hex().upper(),
        json.dumps(key).replace("/", "\\/"),
    ]


def _echo(key: str = KEY) -> str:
    return " ".join(_echoes(key))


def _leaks(text: str, key: str = KEY) -> list[str]:
    """The forms of ``key`` that ``text`` holds, compared in any case (base64 too: stricter
    than a decoder needs)."""
    forms = [
        key,
        quote(key, safe=""),
        quote_plus(key),
        _b64(key).rstrip("="),
        base64.urlsafe_b64encode(key.encode()).decode().rstrip("="),
        *(_key_bits(user, key) for user in USERS),
        key.encode().hex(),
    ]
    folded = text.lower()
    return [form for form in forms if form.lower() in folded]


def _files_leaking(root: Path) -> dict[str, list[str]]:
    found = {}
    for path in root.rglob("*"):
        if path.is_file():
            leaks = _leaks(path.read_bytes().decode("utf-8", "replace"))
            if leaks:
                found[str(path.relative_to(root))] = leaks
    return found


# -- the masking itself ------------------------------------------------------------------


def test_every_case_and_encoding_of_a_registered_key_is_masked() -> None:
    key = "Unit-Key/4kT9pQ+zW7vRm="
    register_secret(key)
    assert len(_leaks(_echo(key), key)) == 9  # the helper sees every form before masking
    for text in _echoes(key):
        masked = redact_known(text)
        assert masked is not None and MASK in masked, text
        assert _leaks(masked, key) == [], (text, masked)
    assert _leaks(redact(f"HTTP 401: invalid key {_echo(key)}"), key) == []  # messages too


@pytest.mark.parametrize("user", ["", "a", "ab", "alice", "service-account"])
def test_basic_auth_keeps_at_most_the_characters_that_mix_in_the_user(user: str) -> None:
    """At any offset of the key inside the encoded ``user:key``, what is left around the
    mask is the user's part and at most three characters after it: nothing to decode the
    key from."""
    key = "Basic-Key-8nB2xL5qJ0"
    register_secret(key)
    encoded = _b64(f"{user}:{key}")
    masked = redact_known(f"Authorization: Basic {encoded}")
    assert masked is not None
    before, mask, after = masked.removeprefix("Authorization: Basic ").partition(MASK)
    assert mask == MASK and encoded.startswith(before) and encoded.endswith(after)
    assert len(before) <= len(_b64(f"{user}:")) and len(after) <= 3
    assert _leaks(masked, key) == []


def test_the_rest_of_the_text_is_kept_as_written_even_around_non_ascii() -> None:
    """Masking works on a lower-cased copy: positions must stay those of the text, also
    after a dotted capital I (two characters once lower-cased) and other non-ASCII."""
    key = "Keep-Rest-3hV8sD1wQz"
    register_secret(key)
    text = f"İstanbul ÜBER {key.upper()} naïve ΣΑΣ {_b64(key)}{key} end İ"
    assert redact_known(text) == "İstanbul ÜBER *** naïve ΣΑΣ *** end İ"  # touching: one
    plain = "A reply quoting no key: aGVsbG8gd29ybGQ= and 68656c6c6f, Proj-Key aside."
    assert redact_known(plain) == plain


def test_a_non_ascii_key_is_masked_in_any_case_and_escaped() -> None:
    key = "Schlüssel-Geheim-42x"
    register_secret(key)
    for form in (key.upper(), key.lower(), json.dumps(key)[1:-1], quote(key), _b64(key)):
        assert redact_known(f"echo {form} .") == "echo *** .", form


def test_a_secret_registered_later_is_masked_by_the_next_call() -> None:
    first, second = "Later-One-6gH2kL9pXc", "Later-Two-1mN4bV7cZq"
    register_secret(first)
    assert redact_known(f"{first.lower()} {second.lower()}") == f"*** {second.lower()}"
    register_secret(second)
    assert redact_known(f"{first.lower()} {second.lower()}") == "*** ***"


def test_a_short_secret_is_masked_only_as_written() -> None:
    """A secret under 8 characters is masked as written (percent-encoded too), but not in
    another case or in base64 or hex: the password ``Tide/7`` must not mask the word
    "tide", nor short encoded data that spells it by chance; one under 4 characters is
    not registered at all."""
    register_secret("Tide/7")
    register_secret("Bay")
    assert redact_known("Tide/7 and Tide%2F7 here") == "*** and *** here"
    ordinary = f"The tide/7 TIDE/7 at the Bay: {_b64('Tide/7')} {b'Tide/7'.hex()}"
    assert redact_known(ordinary) == ordinary
    assert redact("low tide at the bay") == "low tide at the bay"


# -- through a real HTTP server and the steps that store what a model wrote ---------------


def _env(server: ScriptedLLMServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}


def test_an_echoed_key_in_any_case_or_encoding_never_reaches_candidates_cache_or_output(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """generate --documents: the critiques' reasons echo the key (stored in
    candidates.jsonl and the cache), and the labeller's error echoes it (a dropped
    candidate's reason); doctor prints an echoing 401."""
    from tests.test_documents_cli import LABELLER, Script, _setup

    script = Script()
    label_errors = [1]

    def echoing(body: dict[str, Any]) -> str | Reply:
        system = body["messages"][0]["content"]
        if LABELLER in system and label_errors:
            label_errors.pop()
            message = f"invalid key for this model: {_echo()}"
            return Reply(status=400, body=json.dumps({"error": {"message": message}}))
        reply = script(body)
        if "You review test questions" in system:
            ratings = json.loads(reply)
            reasons = {k: [v[0], f"{v[1]}; you sent {_echo()}"] for k, v in ratings.items()}
            return json.dumps(reasons)
        return reply

    llm_server.responder = echoing
    env = {**_setup(tmp_path, llm_server, llm="  max_retries: 0\n"), **_env(llm_server)}
    generated = ragaudit(
        "generate", "--documents", "--size", "2", "--mix", "fact_single", cwd=tmp_path, env=env
    )
    assert generated.returncode == 0, generated.stderr
    assert llm_server.headers_seen[-1]["authorization"] == f"Bearer {KEY}"  # really sent
    llm_server.responder = None
    llm_server.enqueue(
        Reply(status=401, body=json.dumps({"error": {"message": f"Incorrect key {_echo()}"}}))
    )
    refused = ragaudit("doctor", "--example", "--llm", "openai:m", cwd=tmp_path, env=env)
    assert refused.returncode == 1 and "refused the credentials (HTTP 401)" in refused.stderr

    for out in (generated, refused):
        assert _leaks(out.stdout + out.stderr) == []
    assert _files_leaking(tmp_path) == {}
    candidates = (tmp_path / "runs" / "default" / "candidates.jsonl").read_text()
    assert "you sent ***" in candidates  # the echo was stored, masked
    assert "the server rejected the request (HTTP 400): invalid key" in candidates


def test_an_echoed_key_never_reaches_the_scores_or_their_failure_reasons(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """judge --reference-free: the claims a model extracts echo the key (stored in
    scores/rag.jsonl), and a failed check echoes it in its error (the score's reason)."""
    from tests.test_reference_free_cli import _responder, _run

    failures = [1]

    def echoing(body: dict[str, Any]) -> str | Reply:
        instructions = str(body["messages"][0]["content"])
        if instructions.startswith("You check claims") and failures:
            failures.pop()
            message = f"upstream said: {_echo()}"
            return Reply(status=500, body=json.dumps({"error": {"message": message}}))
        reply = _responder(body)
        if instructions.startswith("You split an answer"):
            claims = json.loads(reply)["claims"]
            return json.dumps({"claims": [*claims, f"The caller's key is {_echo()}."]})
        return reply

    llm_server.responder = echoing
    root = _run(tmp_path)
    scored = ragaudit(
        "judge", "--reference-free", "--metric", "faithfulness", cwd=tmp_path, env=_env(llm_server)
    )
    assert scored.returncode == 0, scored.stderr
    assert llm_server.headers_seen[-1]["authorization"] == f"Bearer {KEY}"
    assert _leaks(scored.stdout + scored.stderr) == []
    assert _files_leaking(tmp_path) == {}
    scores = (root / "scores" / "rag.jsonl").read_text()
    assert "The caller's key is ***" in scores  # the echo was stored, masked
    assert "LLM failed: " in scores and "upstream said" in scores
