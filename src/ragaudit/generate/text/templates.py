"""Text templates: wordings of a SQL template in a style (``short``, ``long``, or a
user-defined one), with the same placeholders, e.g. ``Get industry for '[Client.Name]'.``

Stored in ``templates/text.yaml`` as ``templates: {sql template id: {style: [wording, ...]}}``
where a wording is its text, or ``{text, verified: true | rejected: reason, checked}`` once
``ragaudit templates verify`` has judged it (``checked`` fingerprints the SQL, the text
and the version of the checks the verdict was given for: edit either, or upgrade to
stricter checks, and the wording is verified again).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ragaudit.db.placeholders import Placeholder
from ragaudit.generate.sql.templates import SqlTemplate, TemplateFileError, normalize_sql
from ragaudit.records.io import atomic_write_text
from ragaudit.records.models import stable_id
from ragaudit.yamlfile import read_yaml, where

# [Table.Column] in a text template; the quotes around it, if any, are the wording's own.
TOKEN = re.compile(r"\[\s*([^\[\]'.]+?)\s*\.\s*([^\[\]'.]+?)\s*\]")

TextTemplates = dict[str, dict[str, list[str]]]  # sql template id -> style -> texts
WordingKey = tuple[str, str, str]  # (sql template id, style, text)


@dataclass(frozen=True)
class Verdict:
    """Whether a wording asks exactly what its SQL template answers, and why not.

    ``checked`` fingerprints the SQL and the text the verdict was given for; a verdict
    without one was written by hand and is the user's word.
    """

    verified: bool
    reason: str | None = None
    checked: str | None = None

    def holds(self, sql: str, text: str) -> bool:
        """The verdict still applies: the SQL and the text are the ones it judged."""
        return self.checked is None or self.checked == fingerprint(sql, text)


# The version of the verifier's checks: raised whenever a check changes what it decides,
# so that a verdict the machine gave under older checks is judged again (a verdict written
# by hand has no fingerprint and stays). 2: the reader's slips undone, questions asking why.
# 3: naturalness, qualifiers, reversed relations and every named table or column accounted
# for by the reading (issue 37). 4: a wording read again with another example only when
# its reading gave the template's answer for no group, and no re-ask about a name it left
# out (issue 40).
CHECKS_VERSION = 4


def fingerprint(sql: str, text: str) -> str:
    """A short hash of a SQL template, one of its wordings and the version of the checks
    that judged it."""
    return stable_id(normalize_sql(sql), text, str(CHECKS_VERSION), length=10)


def tokens_in(text: str) -> set[str]:
    """The placeholder keys (``Table.Column``) a text template uses."""
    return {f"{t}.{c}" for t, c in TOKEN.findall(text)}


def placeholder_problem(text: str, placeholders: list[Placeholder]) -> str | None:
    """Why ``text`` does not carry exactly the SQL template's placeholders, or None."""
    wanted = {p.key for p in placeholders}
    found = tokens_in(text)
    missing, extra = sorted(wanted - found), sorted(found - wanted)
    if missing and extra:
        return f"missing {', '.join(missing)}; unknown {', '.join(extra)}"
    if missing:
        return f"missing placeholder {', '.join(missing)}"
    if extra:
        return f"unknown placeholder {', '.join(extra)}"
    return None


def fill(text: str, bindings: Mapping[str, Any]) -> str:
    """The text template with every ``[Table.Column]`` replaced by its value."""
    return TOKEN.sub(lambda m: str(bindings[f"{m.group(1)}.{m.group(2)}"]), text)


def near_duplicate_key(text: str) -> str:
    """Texts equal up to case, punctuation and spacing are the same wording."""
    return " ".join(re.sub(r"[^\w\[\].]+", " ", text.lower()).split())


def dedupe(texts: list[str]) -> list[str]:
    """Drop near-duplicates, keeping the first of each."""
    seen: set[str] = set()
    out = []
    for text in texts:
        key = near_duplicate_key(text)
        if key not in seen:
            seen.add(key)
            out.append(text.strip())
    return out


@dataclass
class LoadedTextTemplates:
    """Text templates read from a file, with ``file:line`` of each list for messages."""

    path: Path
    templates: TextTemplates
    lines: dict[tuple[str, str], str]
    item_lines: dict[tuple[str, str], list[str]]
    verdicts: dict[WordingKey, Verdict]


def _wording(item: object, at: str) -> tuple[str, Verdict | None]:
    """One list item: a text, or a mapping with the text and its verdict."""
    if isinstance(item, str):
        return item, None
    if not isinstance(item, dict) or not isinstance(item.get("text"), str):
        raise TemplateFileError(f"{at}: expected a text, or a mapping with 'text'")
    unknown = set(item) - {"text", "verified", "rejected", "checked"}
    if unknown:
        raise TemplateFileError(
            f"{at}: unknown key '{sorted(unknown)[0]}' (text, verified, rejected, checked)"
        )
    verified, rejected = item.get("verified"), item.get("rejected")
    checked = item.get("checked")
    if verified is not None and not isinstance(verified, bool):
        raise TemplateFileError(f"{at}: verified must be true or false")
    if rejected is not None and not isinstance(rejected, str):
        raise TemplateFileError(f"{at}: rejected must be the reason, as text")
    if verified and rejected:
        raise TemplateFileError(f"{at}: a wording is verified or rejected, not both")
    if checked is not None and not isinstance(checked, str):
        raise TemplateFileError(f"{at}: checked must be text")
    if verified:
        return item["text"], Verdict(True, None, checked)
    if rejected or verified is False:
        return item["text"], Verdict(False, rejected or "rejected by hand", checked)
    return item["text"], None


def load_text_templates(path: Path) -> LoadedTextTemplates:
    """Read ``templates/text.yaml``; errors name the file, the line and the key."""
    data, root, source = read_yaml(path, "ragaudit templates text writes one", TemplateFileError)
    if not isinstance(data, dict) or set(data) - {"schema_version", "templates"}:
        raise TemplateFileError(f"{source}:1: expected 'schema_version' and 'templates' only")
    if data.get("schema_version", 1) != 1:
        raise TemplateFileError(f"{where(source, root, ('schema_version',))}: unknown version")
    templates = data.get("templates") or {}
    if not isinstance(templates, dict):
        raise TemplateFileError(f"{where(source, root, ('templates',))}: expected a mapping")
    out: TextTemplates = {}
    lines: dict[tuple[str, str], str] = {}
    item_lines: dict[tuple[str, str], list[str]] = {}
    verdicts: dict[WordingKey, Verdict] = {}
    for tid, styles in templates.items():
        if not isinstance(styles, dict):
            raise TemplateFileError(
                f"{where(source, root, ('templates', tid))}: templates.{tid}: expected "
                "{style: [text, ...]}"
            )
        for style, items in styles.items():
            at = where(source, root, ("templates", tid, style))
            if not isinstance(items, list):
                raise TemplateFileError(f"{at}: templates.{tid}.{style}: expected a list of texts")
            key = (str(tid), str(style))
            item_lines[key] = [
                where(source, root, ("templates", tid, style, i)) for i in range(len(items))
            ]
            texts = []
            for item, item_at in zip(items, item_lines[key], strict=True):
                text, verdict = _wording(item, f"{item_at}: templates.{tid}.{style}")
                texts.append(text)
                if verdict is not None:
                    verdicts[(str(tid), str(style), text)] = verdict
            out.setdefault(str(tid), {})[str(style)] = texts
            lines[key] = at
    return LoadedTextTemplates(
        path=path, templates=out, lines=lines, item_lines=item_lines, verdicts=verdicts
    )


_HEADER = """\
# ragaudit text templates: wordings of each SQL template (by id) in each style.
# Every text must carry exactly its SQL template's placeholders, written [Table.Column]
# (quotes around them are part of your wording). Edit freely; ragaudit templates check
# revalidates, and ragaudit templates text keeps what is here and only words what is
# missing (unless you pass --overwrite).
# ragaudit templates verify judges each wording: `verified: true`, or `rejected: why`.
# `generate` asks only verified wordings. To overrule a verdict, write the other one;
# editing a text (or its SQL template) has it verified again.
"""


def save_text_templates(
    path: Path, templates: TextTemplates, verdicts: dict[WordingKey, Verdict] | None = None
) -> None:
    """Write the text templates file atomically; wordings with a verdict are written as
    ``{text, verified | rejected, checked}``, the others as plain texts."""
    verdicts = verdicts or {}
    body: dict[str, dict[str, list[object]]] = {}
    for tid, styles in templates.items():
        for style, texts in styles.items():
            items: list[object] = []
            for text in texts:
                verdict = verdicts.get((tid, style, text))
                if verdict is None:
                    items.append(text)
                    continue
                item: dict[str, object] = {"text": text}
                if verdict.verified:
                    item["verified"] = True
                else:
                    item["rejected"] = verdict.reason or "rejected"
                if verdict.checked:
                    item["checked"] = verdict.checked
                items.append(item)
            body.setdefault(tid, {})[style] = items
    dumped = yaml.safe_dump(
        {"schema_version": 1, "templates": body},
        sort_keys=False,
        allow_unicode=True,
        width=10_000,
    )
    atomic_write_text(path, _HEADER + dumped)


def import_reference_text(
    path: Path, style: str, sql_templates: list[SqlTemplate], into: TextTemplates | None = None
) -> TextTemplates:
    """Add the reference tool's ``text_templates_<style>.json`` (``{SQL: [text, ...]}``) to
    ``into``, matching each SQL to a template of ``sql_templates`` by its normalized text."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise TemplateFileError(f"{path}: cannot read reference text templates: {exc}") from None
    if not isinstance(data, dict):
        raise TemplateFileError(f"{path}: expected {{SQL: [text, ...]}}")
    by_sql = {normalize_sql(t.sql): t.id for t in sql_templates}
    out: TextTemplates = into if into is not None else {}
    for sql, texts in data.items():
        tid = by_sql.get(normalize_sql(sql))
        if tid is None:
            raise TemplateFileError(f"{path}: no SQL template matches {normalize_sql(sql)!r}")
        out.setdefault(tid, {})[style] = [str(t).strip() for t in texts]
    return out
