"""Every verb's ``--help``: it exits 0, names the command, lists each of its options, and
shows the fixed choices that typer checks (no command checks a choice by hand)."""

from __future__ import annotations

import enum
import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

import pytest
import typer.main
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
    ("export",),
    ("export", "mlflow"),
    ("export", "tables"),
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


def _flags(path: tuple[str, ...]) -> list[str]:
    """Every flag of every option of ``ragaudit PATH`` (both of ``--on/--off``), read from
    the parsed command that typer builds (typer carries its own click, so by attribute)."""
    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.get_command(None, name)
        assert command is not None, name
    return [
        flag
        for param in command.params
        if param.param_type_name == "option"
        for flag in (*param.opts, *param.secondary_opts)
    ]


@pytest.mark.parametrize("path", [(), *VERBS], ids=lambda p: " ".join(p) or "ragaudit")
def test_help_at_80_columns_cuts_no_option_name_and_no_summary(path: tuple[str, ...]) -> None:
    """In an 80-column terminal every flag of the command is printed whole (not
    ``--include-unanswe…``), no line runs past the edge, and the list of commands of a
    group gives each summary whole (not cut with "...")."""
    done = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert all(len(line) <= 80 for line in lines), [ln for ln in lines if len(ln) > 80]
    assert "…" not in done.output
    cut = [ln for ln in lines if ln.rstrip().endswith("...") and "Usage:" not in ln]
    assert not cut, done.output
    for flag in [*_flags(path), "--help"]:
        whole = rf"(?<![\w-]){re.escape(flag)}(?![\w-])"
        assert re.search(whole, done.output), (path, flag, done.output)
