"""Text templates: wordings of a SQL template in a style (``short``, ``long``, or a
user-defined one), with the same placeholders, e.g. ``Get industry for '[Client.Name]'.``

Stored in ``templates/text.yaml`` as ``templates: {sql template id: {style: [text, ...]}}``.
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
from ragaudit.generate.sql_templates import SqlTemplate, TemplateFileError, normalize_sql
from ragaudit.records.io import atomic_write_text
from ragaudit.yamlfile import read_yaml, where

# [Table.Column] in a text template; the quotes around it, if any, are the wording's own.
TOKEN = re.compile(r"\[\s*([^\[\]'.]+?)\s*\.\s*([^\[\]'.]+?)\s*\]")

TextTemplates = dict[str, dict[str, list[str]]]  # sql template id -> style -> texts


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
    for tid, styles in templates.items():
        if not isinstance(styles, dict):
            raise TemplateFileError(
                f"{where(source, root, ('templates', tid))}: templates.{tid}: expected "
                "{style: [text, ...]}"
            )
        for style, texts in styles.items():
            at = where(source, root, ("templates", tid, style))
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise TemplateFileError(f"{at}: templates.{tid}.{style}: expected a list of texts")
            out.setdefault(str(tid), {})[str(style)] = texts
            lines[(str(tid), str(style))] = at
            item_lines[(str(tid), str(style))] = [
                where(source, root, ("templates", tid, style, i)) for i in range(len(texts))
            ]
    return LoadedTextTemplates(path=path, templates=out, lines=lines, item_lines=item_lines)


_HEADER = """\
# ragaudit text templates: wordings of each SQL template (by id) in each style.
# Every text must carry exactly its SQL template's placeholders, written [Table.Column]
# (quotes around them are part of your wording). Edit freely; ragaudit templates check
# revalidates, and ragaudit never overwrites this file unless you pass --overwrite.
"""


def save_text_templates(path: Path, templates: TextTemplates) -> None:
    """Write the text templates file atomically."""
    body = yaml.safe_dump(
        {"schema_version": 1, "templates": templates},
        sort_keys=False,
        allow_unicode=True,
        width=10_000,
    )
    atomic_write_text(path, _HEADER + body)


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
