"""Every verb's ``--help``: it exits 0, names the command, lists each of its options, and
shows the fixed choices that typer checks (no command checks a choice by hand)."""

from __future__ import annotations

import enum
import inspect
import typing
from collections.abc import Callable
from typing import Any

import pytest
from typer.models import OptionInfo
from typer.testing import CliRunner

from ragaudit.cli import app

VERBS = [
    ("init",),
    ("doctor",),
    ("templates",),
    ("templates", "sql"),
    ("templates", "text"),
    ("templates", "verify"),
    ("templates", "check"),
    ("generate",),
    ("run",),
    ("world",),
    ("label",),
    ("judge",),
    ("scan",),
    ("analyze",),
    ("compare",),
    ("gate",),
    ("demo",),
    ("report",),
]


def _registered() -> dict[tuple[str, ...], Callable[..., Any] | None]:
    """Every command and group of the app, by its path, with the function it runs."""
    found: dict[tuple[str, ...], Callable[..., Any] | None] = {}
    for command in app.registered_commands:
        found[(command.name or "",)] = command.callback
    for group in app.registered_groups:
        assert group.name and group.typer_instance is not None
        found[(group.name,)] = None
        for command in group.typer_instance.registered_commands:
            found[(group.name, command.name or "")] = command.callback
    return found


def test_every_registered_verb_has_a_help_test() -> None:
    assert set(_registered()) == set(VERBS)


def _options(fn: Callable[..., Any]) -> list[tuple[str, type | None]]:
    """The first flag of each option of a command, with its enum type when it has one."""
    out = []
    hints = typing.get_type_hints(fn, include_extras=True)
    for name in inspect.signature(fn).parameters:
        hint = hints[name]
        for meta in getattr(hint, "__metadata__", ()):
            if isinstance(meta, OptionInfo):
                # In Annotated[...], typer.Option's first flag arrives as its "default".
                flags = [d for d in (meta.default, *meta.param_decls) if isinstance(d, str)]
                base = typing.get_args(hint)[0]
                choices = next(
                    (t for t in (base, *typing.get_args(base)) if isinstance(t, enum.EnumMeta)),
                    None,
                )
                out.append((flags[0].split("/")[0], choices))  # --on/--off: the first
    return out


@pytest.mark.parametrize("path", VERBS, ids=" ".join)
def test_help_lists_every_option(path: tuple[str, ...]) -> None:
    done = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert done.exit_code == 0, done.output
    assert f"Usage: ragaudit {' '.join(path)}" in done.output
    fn = _registered()[path]
    if fn is None:  # a group: its help lists its commands
        for other in VERBS:
            if len(other) == 2 and other[0] == path[0]:
                assert other[1] in done.output
        return
    assert fn.__doc__ and fn.__doc__.split()[0] in done.output
    options = _options(fn)
    assert options or path == ("report",) or path == ("init",)
    for flag, choices in options:
        assert flag in done.output, (path, flag)
        for choice in choices or ():
            assert choice.value in done.output, (path, flag, choice)


def test_a_choice_outside_the_enum_is_refused_by_the_parser(tmp_path: Any) -> None:
    done = CliRunner().invoke(app, ["world", str(tmp_path / "w"), "--engine", "oracle"])
    assert done.exit_code == 2
    assert "oracle" in done.output
    assert not (tmp_path / "w").exists()
