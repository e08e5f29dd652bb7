"""Package attributes imported on first use. A package's ``__init__`` that re-exports its
API would otherwise import every module (sqlalchemy, sqlglot, numpy...) as soon as any one
of them is needed, e.g. the few-line options module ``ragaudit.yaml`` is checked against:
the command line would pay for the whole database layer to print ``--version``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``exports`` maps each public name to the
    module (relative to the package) that defines it; the first access imports it."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        importlib.import_module(package).__dict__[name] = value
        return value

    return __getattr__
