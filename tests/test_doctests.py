"""The ``>>>`` examples in the docstrings of the pure analysis, the records and the public
API are documentation and tests: each one runs here."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import ragaudit.analysis
import ragaudit.api

MODULES = sorted(
    [f"ragaudit.analysis.{m.name}" for m in pkgutil.iter_modules(ragaudit.analysis.__path__)]
    + [f"ragaudit.api.{m.name}" for m in pkgutil.iter_modules(ragaudit.api.__path__)]
    + ["ragaudit.llm.backends.scripted", "ragaudit.records.models", "ragaudit.judge.matchers"]
    + ["ragaudit.errors", "ragaudit.progress"]
)


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_of_a_module_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"


def test_the_public_api_has_examples() -> None:
    """The entry points a new user meets first show how they are called."""
    from ragaudit.api.evaluate import evaluate
    from ragaudit.llm.backends.scripted import Scripted

    for obj in (evaluate, Scripted):
        assert ">>>" in (obj.__doc__ or ""), obj
