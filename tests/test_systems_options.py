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


GRID = """\
systems:
  - name: ret
    generator: none
    grid:
      retriever: [keyword, bm25, dense, hybrid]
      text_weight: [0.3, 0.7]
      k: [1, 5]
  - name: ans
    k: 3
    grid:
      generator: [concise, strict, llm_only]
      retriever: [bm25, hybrid]
"""


def test_a_grid_expands_into_one_system_per_meaningful_combination() -> None:
    config = parse_config(GRID)
    names = [s.name for s in config.systems]
    # The text weight varies only the hybrid retriever, and llm_only retrieves nothing:
    # 3 x 2 + 2 x 2 retrieval systems, 2 x 2 + 1 answer systems.
    assert names == [
        "ret-keyword-k1", "ret-keyword-k5", "ret-bm25-k1", "ret-bm25-k5",
        "ret-dense-k1", "ret-dense-k5",
        "ret-hybrid-w0.3-k1", "ret-hybrid-w0.3-k5", "ret-hybrid-w0.7-k1", "ret-hybrid-w0.7-k5",
        "ans-concise-bm25", "ans-concise-hybrid", "ans-strict-bm25", "ans-strict-hybrid",
        "ans-llm_only",
    ]  # fmt: skip
    by_name = {s.name: s for s in config.systems}
    hybrid = by_name["ret-hybrid-w0.3-k5"]
    assert (hybrid.retriever, hybrid.text_weight, hybrid.k, hybrid.generator) == (
        "hybrid",
        0.3,
        5,
        "none",
    )
    assert by_name["ans-llm_only"].retriever == "none"
    assert by_name["ans-strict-hybrid"].k == 3  # the entry's own options stay
    assert all(s.grid is None for s in config.systems)


def test_the_resolved_configuration_of_a_grid_loads_again_as_the_same_systems() -> None:
    config = parse_config(GRID)
    again = parse_config(yaml.safe_dump(config.masked_dict()))
    assert [s.model_dump() for s in again.systems] == [s.model_dump() for s in config.systems]


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ("retriever: [bm25, fuzzy]", "4: systems.0: grid \\(retriever=fuzzy\\): retriever: Input"),
        ("colour: [red]", "4: systems.0: grid \\(colour=red\\): colour: unknown key"),
        ("k: []", "systems.0: grid: k: give a list of values"),
        # a value the combination does not use is still checked
        ("text_weight: [0.2, 1.5]", "grid \\(text_weight=1.5\\): text_weight: Input should be"),
        ("name: [a, b]", "grid: name cannot vary"),
        ("llm: ['openai:a/b', 'openai:a_b']", "two different combinations are both named"),
    ],
)
def test_grid_mistakes_name_the_entry_and_the_value(grid: str, message: str) -> None:
    text = (
        f"run:\n  name: x\nsystems:\n  - name: ret\n    generator: none\n    grid:\n      {grid}\n"
    )
    with pytest.raises(ConfigError, match=message):
        parse_config(text)


def test_a_grid_system_named_like_another_entry_is_an_error() -> None:
    text = GRID + "  - {name: ret-bm25-k1, generator: none}\n"
    with pytest.raises(ConfigError, match="two systems are named 'ret-bm25-k1'"):
        parse_config(text)


def test_a_grid_over_a_required_option_expands_as_if_each_value_were_written() -> None:
    """An HTTP system's url (or an adapter's target) is required: a grid over it is where
    it is written, each system with its own (issue 37 item 20)."""
    config = parse_config(
        "systems:\n"
        "  - name: api\n"
        "    kind: http\n"
        "    grid:\n"
        "      url: ['http://127.0.0.1:8001/ask', 'http://127.0.0.1:8002/ask']\n"
        "      retries: [0, 3]\n"
        "  - name: fn\n"
        "    kind: callable\n"
        "    grid:\n"
        "      target: ['mod:small', 'mod:large']\n"
    )
    got = [(s.name, getattr(s, "url", None) or s.target, s.retries if s.kind == "http" else None)
           for s in config.systems]  # fmt: skip
    assert got == [
        ("api-http_127.0.0.1_8001_ask-0", "http://127.0.0.1:8001/ask", 0),
        ("api-http_127.0.0.1_8001_ask-3", "http://127.0.0.1:8001/ask", 3),
        ("api-http_127.0.0.1_8002_ask-0", "http://127.0.0.1:8002/ask", 0),
        ("api-http_127.0.0.1_8002_ask-3", "http://127.0.0.1:8002/ask", 3),
        ("fn-mod_small", "mod:small", None),
        ("fn-mod_large", "mod:large", None),
    ]
    again = parse_config(yaml.safe_dump(config.masked_dict()))
    assert [s.model_dump() for s in again.systems] == [s.model_dump() for s in config.systems]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        # each value is checked as if written out, the first one too
        ("kind: http\n    grid:\n      url: [1, 'http://h/a']", r"grid \(url=1\): url: Input"),
        ("kind: http\n    grid:\n      url: ['http://h/a', 2]", r"grid \(url=2\): url: Input"),
        ("kind: callable\n    grid:\n      target: [m:f, nocolon]", r"grid \(target=nocolon\)"),
        ("kind: callable\n    grid:\n      target: [nocolon, m:f]", r"grid \(target=nocolon\)"),
        # a required option neither written nor varied is still missing
        ("kind: http\n    grid:\n      retries: [1, 2]", r"systems\.0\.url: Field required"),
        ("kind: http\n    grid:\n      url: []", "grid: url: give a list of values"),
    ],
)
def test_a_grid_over_a_required_option_checks_every_value(entry: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(f"systems:\n  - name: api\n    {entry}\n")


def test_a_secret_in_a_gridded_url_does_not_become_part_of_a_systems_name() -> None:
    """A system's name is written everywhere (records, reports): a token in a URL it was
    made from is masked there too (issue 37 items 13 and 20)."""
    config = parse_config(
        "systems:\n  - name: api\n    kind: http\n    grid:\n"
        "      url: ['http://h/a?token=tok-5ecret-9b1', 'http://h/b?token=tok-5ecret-9b1']\n"
    )
    assert [s.name for s in config.systems] == ["api-http_h_a_token", "api-http_h_b_token"]
    assert config.systems[0].url == "http://h/a?token=tok-5ecret-9b1"  # sent as written
