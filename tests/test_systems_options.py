"""The systems: entries of ragaudit.yaml: one options class per kind, told apart by kind, with
line-accurate one-line errors (systems/options.py and each kind's module)."""

from __future__ import annotations

import pytest

from ragaudit.config import parse_config
from ragaudit.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("systems:\n  - {name: a, generator: llm_only, retriever: bm25}\n", "retrieves nothing"),
        ("systems:\n  - {name: a, retriever: none}\n", "needs a retriever"),
        ("systems:\n  - {name: a, kind: callable}\n", "systems.0.target: Field required"),
        ("systems:\n  - {name: a, kind: callable, target: f}\n", "expected 'module:attribute'"),
        ("systems:\n  - {name: a, kind: grpc}\n", "systems.0: kind must be one of builtin, http"),
        # an option of another kind is a mistake, not something to ignore
        ("systems:\n  - {name: a, kind: http, url: x, retriever: bm25}\n", "retriever: unknown"),
        ("systems:\n  - {name: a}\n  - {name: a}\n", "two systems are named 'a'"),
        ("systems:\n  - {name: a, k: 0}\n", "systems.0.k: Input should be greater"),
        ("systems:\n  - {name: a, retriever: fuzzy}\n", "systems.0.retriever"),
    ],
)
def test_system_declarations_are_checked(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(text)


def test_llm_only_needs_no_retriever_setting() -> None:
    config = parse_config("systems:\n  - {name: o, generator: llm_only}\n")
    assert config.systems[0].retriever == "none"
