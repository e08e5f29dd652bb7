"""YAML files that users edit by hand (configuration, templates): parsing that keeps line
numbers, so that every error can say ``file:line: dotted.key: message``."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from ragaudit.errors import UserError

M = TypeVar("M", bound=BaseModel)


def parse_yaml(text: str, source: str, error: type[UserError] = UserError) -> tuple[Any, Any]:
    """Parse ``text``; return ``(data, node tree)``. Syntax errors name ``source:line:col``;
    a key given twice in one mapping is an error too (YAML would keep the last one
    silently, and a setting the user wrote would be ignored)."""
    root: yaml.Node | None = None
    try:
        root = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        place = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        problem = getattr(exc, "problem", None) or str(exc)
        raise error(f"{place}: invalid YAML: {problem}") from None
    except RecursionError:  # some thousand nested '[' or levels: the parser recurses
        raise error(f"{source}: invalid YAML: nested too deeply to read") from None
    except ValueError:  # well-formed, but no Python value: 2024-02-30, a 5000-digit number
        raise error(_unbuildable_scalar(root, source)) from None
    duplicate = _duplicate_key(root)
    if duplicate:
        key, line, first = duplicate
        raise error(f"{source}:{line}: duplicate key '{key}' (first at line {first})")
    broken = _not_unicode(data, (), set())
    if broken is not None:
        shown = ".".join(str(part) for part in broken) or "the file"
        raise error(
            f"{where(source, root, broken)}: {shown}: holds a lone surrogate (an escape such "
            r"as \ud800, half of a character), which is no Unicode text: write the "
            "character itself"
        )
    return data, root


def _not_unicode(value: Any, path: tuple[Any, ...], seen: set[int]) -> tuple[Any, ...] | None:
    """The path of the first key or string of ``value`` that is not Unicode text (a lone
    surrogate escaped in YAML), which every file ragaudit writes would refuse later, as a
    traceback; None when all are. ``seen``: the mappings and lists already walked (an
    alias may make the data refer to itself; its own check says so)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path
        return None
    if not isinstance(value, dict | list) or id(value) in seen:
        return None
    seen.add(id(value))
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        found = _not_unicode(key, (*path, key), seen) if isinstance(key, str) else None
        found = found or _not_unicode(item, (*path, key), seen)
        if found is not None:
            return found
    return None


_INT_TAG = "tag:yaml.org,2002:int"


def _unbuildable_scalar(root: yaml.Node | None, source: str) -> str:
    """What to say of the first value in ``root`` that YAML reads but Python cannot build
    (a date that is no day, an integer longer than Python converts): ``source:line``, the
    value and why, so that it is one line naming where, not a ``ValueError``."""
    constructor = yaml.constructor.SafeConstructor()
    stack: list[yaml.Node] = [root] if root is not None else []
    seen: set[int] = set()  # an alias refers to a node again
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            try:
                constructor.construct_object(node)
            except ValueError as exc:
                text = str(node.value)
                shown = text if len(text) <= 20 else f"{text[:20]}..."
                digits = sum(c.isdigit() for c in text)
                too_long = node.tag == _INT_TAG and digits > sys.get_int_max_str_digits() > 0
                reason = f"a number of {digits} digits, far above any maximum" if too_long else exc
                return f"{source}:{node.start_mark.line + 1}: cannot read {shown!r}: {reason}"
        elif isinstance(node, yaml.MappingNode):
            stack.extend(reversed([part for pair in node.value for part in pair]))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
    return f"{source}: invalid YAML: a value that cannot be read"  # not found again: unlikely


def _duplicate_key(root: yaml.Node | None) -> tuple[str, int, int] | None:
    """The first key repeated within one mapping: (key, its line, the first one's line)."""
    stack = [root] if root is not None else []
    seen_nodes: set[int] = set()  # an alias refers to a node again, or to its own parent
    while stack:
        node = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key, value in node.value:
                line = key.start_mark.line + 1
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    if key.value in seen:
                        return key.value, line, seen[key.value]
                    seen[key.value] = line
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return None


def read_text(path: Path, missing_hint: str, error: type[UserError] = UserError) -> str:
    """A file a user gives or edits, as text: a missing file says what writes it
    (``missing_hint``), an unreadable one why, and bytes that are not UTF-8 where."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: no such file ({missing_hint})") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 at byte {exc.start}") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror}") from None


def read_yaml(
    path: Path, missing_hint: str, error: type[UserError] = UserError
) -> tuple[Any, Any, str]:
    """Read and parse a YAML file: ``(data, node tree, source name)``. A missing file is an
    ``error`` that says what writes it (``missing_hint``)."""
    data, root = parse_yaml(read_text(path, missing_hint, error), str(path), error)
    return data, root, str(path)


def line_of(root: yaml.Node | None, path: tuple[Any, ...]) -> int | None:
    """The 1-based line of the node at ``path`` (or of its deepest existing parent)."""
    node = root
    line = node.start_mark.line + 1 if node is not None else None
    for key in path:
        if isinstance(node, yaml.MappingNode):
            match = next((kv for kv in node.value if kv[0].value == str(key)), None)
            if match is None:
                break
            line = match[0].start_mark.line + 1
            node = match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return line


def where(source: str, root: yaml.Node | None, path: tuple[Any, ...]) -> str:
    """``source:line`` of ``path``, or just ``source`` when the line is unknown."""
    line = line_of(root, path)
    return f"{source}:{line}" if line else source


def validation_message(
    exc: ValidationError,
    source: str,
    root: yaml.Node | None,
    prefix: tuple[Any, ...] = (),
    tags: frozenset[str] = frozenset(),
) -> str:
    """One line for the first error of a pydantic validation: ``file:line: key.path: msg``.
    ``tags`` are the names of a tagged union's members, which pydantic puts in the path
    after a list index (``systems.0.http.url``); the file has no such key, so they go."""
    err = exc.errors()[0]
    raw = (*prefix, *err["loc"])
    loc = tuple(
        part
        for i, part in enumerate(raw)
        if not (part in tags and i > 0 and isinstance(raw[i - 1], int))
    )
    dotted = ".".join(str(part) for part in loc) or "(top level)"
    message = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
    if err["type"] == "value_error" and "error" in err.get("ctx", {}):
        message = str(err["ctx"]["error"])  # our own message, without "Value error, "
    if err["type"] == "int_parsing":
        message = _not_an_integer(err.get("input")) or message
    more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return f"{where(source, root, loc)}: {dotted}: {message}{more}"


def _not_an_integer(value: Any) -> str | None:
    """What to say of text given for a whole number that is a number all the same, or
    None for other text (``abc``: pydantic's message says it). YAML reads ``1e400`` and
    ``1e3`` as text (its floats need a dot, ``1.0e+3``), so "unable to parse string as an
    integer" would name neither what the value is nor what to write."""
    if not isinstance(value, str):
        return None
    try:
        number = float(value.strip())
    except ValueError:
        return None
    shown = value.strip() if len(value.strip()) <= 20 else value.strip()[:20] + "..."
    if not math.isfinite(number):
        why = " (too large for any number)" if math.isinf(number) else ""
        return f"Input should be a finite whole number, not {shown}{why}"
    if not number.is_integer():
        return f"Input should be a whole number, not {shown} ({number:g})"
    digits = f"write {int(number)}" if abs(number) < 1e15 else "write it in digits"
    return (
        f"Input should be a whole number written in digits, not {shown} "
        f"(YAML reads it as text: {digits})"
    )


def validate_model(
    model: type[M],
    data: Any,
    source: str,
    root: yaml.Node | None,
    error: type[UserError] = UserError,
    tags: frozenset[str] = frozenset(),
) -> M:
    """``model.model_validate(data)`` with a one-line, line-accurate error."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(validation_message(exc, source, root, tags=tags)) from None
