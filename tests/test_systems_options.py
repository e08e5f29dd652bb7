"""The systems: entries of ragaudit.yaml: one options class per kind, told apart by kind, with
line-accurate one-line errors (systems/options.py and each kind's module)."""

from __future__ import annotations

import pytest
import yaml

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
        ("systems:\n  - {name: a, kind: http, url: x, retriever: dense}\n", "retriever: unknown"),
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


def test_a_config_written_when_every_system_had_every_key_still_loads() -> None:
    """Run directories written before each kind had its own options carry the other kinds'
    keys at their "not set" values on every system; they still load, as the same systems."""
    from ragaudit.systems.adapters import CallableSystemConfig
    from ragaudit.systems.base import FLAT_DEFAULTS
    from ragaudit.systems.builtin import BuiltinSystemConfig

    flat = {**FLAT_DEFAULTS, "k": None, "timeout_s": None}
    config = parse_config(
        yaml.safe_dump(
            {
                "systems": [
                    {**flat, "name": "f", "kind": "callable", "target": "m:f"},
                    {**flat, "name": "b", "kind": "builtin", "retriever": "keyword", "k": 1},
                ]
            }
        )
    )
    function, builtin = config.systems
    assert isinstance(function, CallableSystemConfig) and function.target == "m:f"
    assert isinstance(builtin, BuiltinSystemConfig)
    assert (builtin.retriever, builtin.k) == ("keyword", 1)
    # A real value of another kind's key is still a mistake, not something to ignore.
    with pytest.raises(ConfigError, match=r"systems\.0\.url: unknown key"):
        parse_config(
            yaml.safe_dump(
                {
                    "systems": [
                        {
                            **flat,
                            "name": "f",
                            "kind": "callable",
                            "target": "m:f",
                            "url": "http://x",
                        }
                    ]
                }
            )
        )
