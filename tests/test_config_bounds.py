"""Every number of ``ragaudit.yaml`` is finite and has a maximum that docs/configuration.md
states: ``.inf``, ``.nan`` and a value above the maximum are each a one-line error naming
the file, the line and the key, for every numeric option of every section, every kind of
system and every dict of numbers, found by walking the composed configuration's schema
(a new option without a maximum fails here). The run's folder is checked where it is
configured: a file in its way is one line naming ``run.root`` or ``run.name``, never a
``NotADirectoryError`` from the first step, and nothing ``doctor`` writes out of the
configuration can hold a value JSON has no form for."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragaudit.cli.main import main
from ragaudit.config import Config, parse_config
from ragaudit.errors import ConfigError
from ragaudit.steps.doctor import run_doctor
from ragaudit.systems.options import KINDS
from tests.support.cli import ragaudit

DOCS = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
SCHEMA = Config.model_json_schema()
DEFS: dict[str, Any] = {**SCHEMA["$defs"], "Config": SCHEMA}  # the file is a model too

# The least each model that has required keys needs to validate, so that a number can be
# put in it: every kind of system, and a model's price.
REQUIRED: dict[str, dict[str, Any]] = {
    "BuiltinSystemConfig": {"name": "s"},
    "HTTPSystemConfig": {"name": "s", "kind": "http", "url": "http://localhost:9/ask"},
    "CallableSystemConfig": {"name": "s", "kind": "callable", "target": "m:f"},
    "LangChainSystemConfig": {"name": "s", "kind": "langchain", "target": "m:f"},
    "LlamaIndexSystemConfig": {"name": "s", "kind": "llamaindex", "target": "m:f"},
    "ModelPrice": {"input": 1, "output": 1},
    "GoldRule": {"placeholder": "T.c"},
}
# A key for each dict whose keys are free text (a dict keyed by a Literal takes its first).
KEYS = {"llm.prices": "openai:m", "generate.documents.thresholds": "stand_alone"}


@dataclass(frozen=True)
class Leaf:
    """One numeric option: where it is (``dotted``, as errors name it; ``fields``, the
    field names only, as the docs' tables do), its schema, and how to write a file with a
    value there."""

    dotted: str
    fields: tuple[str, ...]
    schema: dict[str, Any]
    place: Callable[[Any], dict[str, Any]]
    model: str

    @property
    def maximum(self) -> float:
        return float(self.schema["maximum"])

    @property
    def minimum(self) -> float:
        return float(self.schema.get("minimum", self.schema.get("exclusiveMinimum")))

    @property
    def exclusive(self) -> bool:
        """Whether the minimum itself is refused (``gt=``, a timeout above 0)."""
        return "exclusiveMinimum" in self.schema

    @property
    def integer(self) -> bool:
        return bool(self.schema["type"] == "integer")


def _ref(node: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return name, DEFS[name]
    return None, node


def _walk(
    node: dict[str, Any],
    place: Callable[[Any], dict[str, Any]],
    dotted: tuple[str, ...],
    fields: tuple[str, ...],
    model: str,
    seen: set[str],
) -> Iterator[Leaf]:
    name, node = _ref(node)
    for option in node.get("anyOf", []) + node.get("oneOf", []):  # optional, or a kind
        if option.get("type") != "null":
            yield from _walk(option, place, dotted, fields, model, seen)
    kind = node.get("type")  # a Literal number (schema_version: 1) is no range: skipped
    if kind in ("integer", "number") and "const" not in node and "enum" not in node:
        yield Leaf(".".join(dotted), fields, node, place, model)
    elif kind == "object" and name is not None:  # a section, a system kind, a price
        seen.add(name)
        base = REQUIRED.get(name, {})
        missing = set(node.get("required", [])) - set(base)
        assert not missing, f"{name}: give REQUIRED[{name!r}] a value for {sorted(missing)}"
        for key, sub in node.get("properties", {}).items():

            def inner(value: Any, key: str = key, base: dict[str, Any] = base) -> dict[str, Any]:
                return place({**base, key: value})

            yield from _walk(sub, inner, (*dotted, key), (*fields, key), name, seen)
    elif kind == "object" and isinstance(node.get("additionalProperties"), dict):
        names = node.get("propertyNames", {}).get("enum")
        key = names[0] if names else KEYS.get(".".join(fields), "x")
        yield from _walk(
            node["additionalProperties"],
            lambda value: place({key: value}),
            (*dotted, str(key)),
            fields,
            model,
            seen,
        )
    elif kind == "array" and "items" in node:
        yield from _walk(
            node["items"], lambda value: place([value]), (*dotted, "0"), fields, model, seen
        )


VISITED: set[str] = set()
LEAVES = list(_walk({"$ref": "#/$defs/Config"}, lambda value: value, (), (), "Config", VISITED))
IDS = [f"{leaf.model}:{leaf.dotted}" for leaf in LEAVES]


def _text(leaf: Leaf, value: Any) -> str:
    return yaml.safe_dump(leaf.place(value), sort_keys=False)


def test_the_walk_reaches_every_section_kind_and_dict_of_numbers() -> None:
    assert {cls.__name__ for cls in KINDS.values()} <= VISITED
    assert set(DEFS) == VISITED  # no model of the file is left out
    found = {leaf.dotted for leaf in LEAVES}
    for dotted in (
        "llm.max_tokens",
        "llm.timeout_s",
        "llm.prices.openai:m.input",
        "database.timeout_s",
        "generate.documents.mix.fact_single",
        "generate.documents.thresholds.stand_alone",
        "reference_free.thresholds.faithfulness",
        "corpus.chunk_size",
        "systems.0.retries",
        "systems.0.text_weight",
        "harness.timeout_s",
    ):
        assert dotted in found, dotted


@pytest.mark.parametrize("leaf", LEAVES, ids=IDS)
def test_every_numeric_option_has_a_finite_range(leaf: Leaf) -> None:
    assert "maximum" in leaf.schema, f"{leaf.dotted} ({leaf.model}) has no le= maximum"
    assert "minimum" in leaf.schema or leaf.exclusive, f"{leaf.dotted} has no ge=/gt= minimum"
    assert math.isfinite(leaf.maximum) and math.isfinite(leaf.minimum)
    assert leaf.minimum < leaf.maximum


def _doctor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], leaf: Leaf, value: Any
) -> tuple[object, str]:
    """``ragaudit doctor`` on a ragaudit.yaml with ``value`` at ``leaf``, in this process
    (the same entry point as the command, with its error handling): exit status, stderr."""
    (tmp_path / "ragaudit.yaml").write_text(_text(leaf, value), encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(["doctor", "--skip-llm", "-c", "ragaudit.yaml"])
    return info.value.code, capsys.readouterr().err


@pytest.mark.parametrize("leaf", LEAVES, ids=IDS)
def test_doctor_refuses_inf_nan_and_out_of_range_in_one_line_naming_the_key(
    leaf: Leaf, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    top, bottom = leaf.maximum, leaf.minimum
    above: float = int(top) + 1 if leaf.integer else top + 1
    below: float = bottom if leaf.exclusive else bottom - 1
    for value, words in (
        (math.inf, "finite number"),
        (-math.inf, "finite number"),
        (math.nan, "finite number"),
        (above, "less than or equal to"),
        (below, "greater than"),
    ):
        code, err = _doctor(tmp_path, capsys, leaf, value)
        assert code == 2, (value, err)
        assert re.match(rf"^error: ragaudit\.yaml:\d+: {re.escape(leaf.dotted)}: ", err), err
        assert words in err and len(err.strip().splitlines()) == 1, err
    # The maximum is a value the file may hold, and so is the minimum as far as its own
    # range goes (a mix of one weight of 0 is refused as a mix, not as a weight).
    parse_config(_text(leaf, int(top) if leaf.integer else top))
    if not leaf.exclusive:
        try:
            parse_config(_text(leaf, int(bottom) if leaf.integer else bottom))
        except ConfigError as exc:
            assert "greater than" not in str(exc), str(exc)


def _documented() -> dict[str, dict[str, str]]:
    """Each table row of docs/configuration.md by its section and the keys it names."""
    rows: dict[str, dict[str, str]] = {}
    section = ""
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^#+ `([a-z_.]+)`", line)
        if heading:
            section = heading.group(1)
        elif line.startswith("| `"):
            first = line.split("|")[1]
            for key in re.findall(r"`([a-z_]+)`", first):
                rows.setdefault(section, {})[key] = line
    return rows


def _shown(number: float) -> str:
    return f"{int(number):,}" if float(number).is_integer() else f"{number:g}"


@pytest.mark.parametrize("leaf", LEAVES, ids=IDS)
def test_every_maximum_is_in_the_configuration_reference(leaf: Leaf) -> None:
    rows = _documented()
    row = None
    for cut in range(len(leaf.fields) - 1, 0, -1):  # llm.prices' row is in the llm table
        row = rows.get(".".join(leaf.fields[:cut]), {}).get(leaf.fields[cut])
        if row is not None:
            break
    assert row is not None, f"docs/configuration.md has no row for {leaf.dotted}"
    top, bottom = re.escape(_shown(leaf.maximum)), re.escape(_shown(leaf.minimum))
    # "1 to 1,024", "from 0 to 1,000,000", or "above 0, at most 86,400"
    start = rf"above {bottom}, at most" if leaf.exclusive else rf"(?<![\d,.\-]){bottom} to"
    assert re.search(rf"{start} {top}(?!,?\d)", row), (leaf.dotted, row)


def test_a_number_too_large_for_any_type_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config("llm:\n  max_tokens: 99999999999999999999999\n")
    message = str(info.value)
    assert message.startswith("ragaudit.yaml:2: llm.max_tokens: Input should be less than or")
    with pytest.raises(ConfigError, match=r"^ragaudit.yaml:2: llm.timeout_s: .*finite"):
        parse_config("llm:\n  timeout_s: 1.0e+400\n")  # a literal too large is inf


def test_a_value_yaml_reads_but_python_cannot_hold_is_one_line() -> None:
    """A 5000-digit integer (beyond what Python converts from text) and a date that is no
    day are YAML scalars that fail only when built: one line with the file and line."""
    with pytest.raises(ConfigError) as info:
        parse_config("run:\n  name: r\nllm:\n  max_tokens: " + "9" * 5000 + "\n")
    assert str(info.value) == (
        "ragaudit.yaml:4: cannot read '99999999999999999999...': a number of 5000 digits, "
        "far above any maximum"
    )
    with pytest.raises(ConfigError, match=r"^ragaudit\.yaml:2: cannot read '2024-02-30': day"):
        parse_config("llm:\n  model: 2024-02-30\n")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('llm: {model: "openai:\\ud800"}', "llm.model"),
        ('database: {url: "sqlite:///x\\ud800.db"}', "database.url"),
        ('corpus: {path: "docs\\udfff.jsonl"}', "corpus.path"),
        (
            'run: {name: "r"}\nsystems: [{name: a, kind: http, url: "http://h/\\ud83d"}]',
            "systems.0.url",
        ),
    ],
)
def test_a_lone_surrogate_anywhere_in_the_file_is_one_line_naming_the_key(
    text: str, key: str, tmp_path: Path
) -> None:
    """Half a character escaped in YAML (``\\ud800``) is no Unicode text: refused where it
    is read, naming the key, never a traceback from the first file a step writes."""
    with pytest.raises(ConfigError, match=rf"^ragaudit\.yaml:\d+: {re.escape(key)}: .*surrogate"):
        parse_config(text)
    (tmp_path / "ragaudit.yaml").write_text(text + "\n")
    done = ragaudit("doctor", "--skip-llm", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{key}: holds a lone surrogate" in done.stderr


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan"])
def test_a_non_finite_number_in_an_http_request_template_is_refused(value: str) -> None:
    text = (
        "systems:\n  - name: api\n    kind: http\n    url: http://localhost:9/ask\n"
        f"    request:\n      query: '{{query}}'\n      options: [1, {{temperature: {value}}}]\n"
    )
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    message = str(info.value)
    assert message.startswith("ragaudit.yaml:5: systems.0.request: options[1].temperature: ")
    assert "not a finite number" in message and "\n" not in message


def test_what_doctor_writes_of_the_configuration_is_json(tmp_path: Path) -> None:
    """The configuration doctor reports (and every step records in provenance.json) is
    strict JSON with every number at its maximum, and with a request template's numbers."""
    for leaf in LEAVES:
        top = int(leaf.maximum) if leaf.integer else leaf.maximum
        json.dumps(parse_config(_text(leaf, top)).masked_dict(), allow_nan=False)
    request = {"query": "{query}", "temperature": 0.5, "n": [1, 2.5]}
    systems = [{**REQUIRED["HTTPSystemConfig"], "request": request, "timeout_s": 86_400}]
    data = {"run": {"root": str(tmp_path / "runs")}, "systems": systems}
    report = run_doctor(parse_config(yaml.safe_dump(data)), use_llm=False)
    json.dumps(report.config, allow_nan=False)
    assert report.config["systems"][0]["request"]["n"] == [1, 2.5]


# -- run.root and run.name --------------------------------------------------------------


def test_a_file_as_run_root_is_one_line_naming_the_key(tmp_path: Path) -> None:
    file = tmp_path / "passwd"
    file.write_text("root:x:0:0\n")
    with pytest.raises(ConfigError) as info:
        parse_config(f"run:\n  root: {file}\n")
    assert str(info.value) == (
        f"ragaudit.yaml:2: run.root: {file} is a file, not a folder: run.root names the "
        "folder that holds the runs"
    )
    with pytest.raises(ConfigError) as info:
        parse_config(f"run:\n  root: {file / 'deeper' / 'runs'}\n")
    assert str(info.value).startswith(
        f"ragaudit.yaml:2: run.root: {file / 'deeper' / 'runs'}: {file} is a file"
    )


def test_a_file_in_the_run_folders_place_is_one_line_naming_run_name(tmp_path: Path) -> None:
    (tmp_path / "mine").write_text("")
    with pytest.raises(ConfigError) as info:
        parse_config(f"run:\n  root: {tmp_path}\n  name: mine\n")
    message = str(info.value)
    assert message.startswith(f"ragaudit.yaml:1: run: {tmp_path / 'mine'} is a file")
    assert "run.name" in message and "\n" not in message
    # A folder, or one not made yet, is fine.
    assert parse_config(f"run:\n  root: {tmp_path / 'new'}\n").run.root == tmp_path / "new"


def test_a_folder_is_checked_when_assigned_too(tmp_path: Path) -> None:
    from ragaudit.config import assign

    (tmp_path / "taken").write_text("")
    config = parse_config(f"run:\n  root: {tmp_path}\n")
    with pytest.raises(ConfigError, match=r"^run=: .*taken is a file"):
        assign(config.run, "name", "taken", "run=")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("run:\n  root: {file}\n", "error: c.yaml:2: run.root: {file} is a file, not a folder"),
        ("run:\n  root: {file}/sub\n", "error: c.yaml:2: run.root: {file}/sub: {file} is a file"),
        ("llm:\n  timeout_s: .inf\n", "error: c.yaml:2: llm.timeout_s: Input should be a finite"),
        (
            "llm:\n  max_tokens: 99999999999999999999999\n",
            "error: c.yaml:2: llm.max_tokens: Input should be less than or equal to 1000000",
        ),
    ],
)
def test_doctor_says_what_is_wrong_in_one_line(tmp_path: Path, text: str, expected: str) -> None:
    file = tmp_path / "passwd"
    file.write_text("root:x:0:0\n")
    (tmp_path / "c.yaml").write_text(text.format(file=file))
    result = ragaudit("doctor", "--skip-llm", "-c", "c.yaml", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(expected.format(file=file)), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["run", "--concurrency", "5000"], "run --concurrency: concurrency: "),
        (["run", "--timeout", "inf"], "run --timeout: timeout_s: "),
        (["run", "--timeout", "1e9"], "run --timeout: timeout_s: "),
        (["generate", "--seed", "-5"], "generate --seed: seed: "),
        (["generate", "--seed", "99999999999999"], "generate --seed: seed: "),
        (
            ["generate", "--max-groups-per-template", "99999999999"],
            "generate --max-groups-per-template: max_groups_per_template: ",
        ),
    ],
)
def test_a_flag_is_held_to_the_bounds_of_its_configuration_key(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    """Flags that override a configuration key are checked as the key is: before, some
    ended in a validation traceback and others were taken silently."""
    (tmp_path / "ragaudit.yaml").write_text("database: {url: example}\n")
    result = ragaudit(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert expected in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


# -- numbers YAML reads as text, and the lambda study's flags ---------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1e400", "Input should be a finite whole number, not 1e400 (too large for any number)"),
        ("-1e400", "Input should be a finite whole number, not -1e400 (too large for any"),
        ("'nan'", "Input should be a finite whole number, not nan"),
        ("1e3", "Input should be a whole number written in digits, not 1e3 (YAML reads it as "),
        ("15e-1", "Input should be a whole number, not 15e-1 (1.5)"),
        ("1.0e+400", "Input should be a finite number"),  # a float to YAML: inf
        ("abc", "Input should be a valid integer, unable to parse string as an integer"),
    ],
)
def test_a_number_yaml_reads_as_text_is_named_as_a_number_for_an_integer_key(
    value: str, expected: str
) -> None:
    """YAML 1.1 reads ``1e400`` and ``1e3`` as strings (its floats need a dot): "unable
    to parse string as an integer" said neither that the value is infinite nor how to
    write it. Text that is no number at all keeps pydantic's message."""
    with pytest.raises(ConfigError) as info:
        parse_config(f"harness:\n  concurrency: {value}\n")
    message = str(info.value)
    assert message.startswith(f"ragaudit.yaml:2: harness.concurrency: {expected}"), message
    assert "\n" not in message


def test_a_whole_number_in_e_notation_is_refused_with_its_digits() -> None:
    for value, written in (("1e3", "write 1000)"), ("1e30", "write it in digits)")):
        with pytest.raises(ConfigError) as info:
            parse_config(f"harness:\n  concurrency: {value}\n")
        assert str(info.value).endswith(f"(YAML reads it as text: {written}"), str(info.value)
    # A float key reads the same text as the number it is (pydantic's float parsing).
    assert parse_config("harness:\n  timeout_s: 1e3\n").harness.timeout_s == 1000.0


def _neutral(path: Path) -> Path:
    """A neutral file of two systems, twelve groups of two wordings each."""
    rows = [
        {
            "system": system,
            "query_id": f"{system}-{g}-{v}",
            "group_id": f"g{g}",
            "variant": "short",
            "query": f"question {g} {v}",
            "reference": f"a{g}",
            "response": "",
            "retrieved_ids": [f"d{g}"],
            "gold_ids": [f"d{g}"],
            "correct": g % 3 != 0 or v == 0,
        }
        for system in ("rag", "bm25")
        for g in range(12)
        for v in range(2)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--lambda-draws", "99999999999999999999", "--lambda-study"],
            "error: --lambda-draws must be at most 100,000, not 99,999,999,999,999,999,999",
        ),
        (["--lambda-draws", "100001", "--lambda-target", "0.5"], "error: --lambda-draws must"),
    ],
)
def test_lambda_draws_beyond_the_maximum_is_one_line(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    """Before, a draw count too large for an array ended in NumPy's ValueError
    ("Maximum allowed dimension exceeded") and its traceback."""
    results = _neutral(tmp_path / "results.jsonl")
    done = ragaudit("analyze", "--neutral", str(results), *args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(expected) and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs/default/summary.json").exists()


def test_the_lambda_study_from_python_refuses_nan_and_too_many_draws(tmp_path: Path) -> None:
    import ragaudit as ra

    results = _neutral(tmp_path / "results.jsonl")
    project = ra.Project(root=tmp_path, progress="none")
    with pytest.raises(ra.UserError, match=r"^--lambda-target: nan is not a number \(a lambda"):
        project.analyze(neutral=[results], lambda_targets=[0.5, math.nan])
    for draws in (2**63, 100_001):
        with pytest.raises(ra.UserError, match=r"^--lambda-draws must be at most 100,000, not"):
            project.analyze(neutral=[results], lambda_targets=[0.5], lambda_draws=draws)
    assert not (tmp_path / "runs/default/summary.json").exists()
    # The maximum itself is a count of draws the study takes.
    from ragaudit.options import MAX_LAMBDA_DRAWS
    from ragaudit.steps.analyze import checked_lambda

    assert MAX_LAMBDA_DRAWS == 100_000
    assert checked_lambda([0.5, 0.2], MAX_LAMBDA_DRAWS) == (0.2, 0.5)


@pytest.mark.parametrize("value", ["nan", "1.5", "-0.1", "inf"])
def test_a_lambda_target_that_is_no_share_is_one_line(tmp_path: Path, value: str) -> None:
    (tmp_path / "ragaudit.yaml").write_text("database: {url: example}\n")
    result = ragaudit("analyze", "--lambda-target", value, cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert "--lambda-target: " in result.stderr and "Traceback" not in result.stderr
    if value == "nan":
        assert "is not a number" in result.stderr


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["judge", "--samples", "1000000", "--dry-run"], "judge --samples 1000000: give a whole"),
        (["judge", "--retrieval-rule", "recall@99999999999999999999"], "K is a whole number"),
        (["analyze", "--seed", "99999999999"], "seed must be a whole number from 0 to"),
    ],
)
def test_a_count_no_run_could_use_is_one_line_before_anything_runs(
    tmp_path: Path, args: list[str], why: str
) -> None:
    """Flags beside the configuration have its bounds: a vote of a million verdicts, a
    recall@K past any retrieval, a seed past 2**31 - 1 are refused in one line, at once."""
    import ragaudit as ra

    ra.Project.example(root=tmp_path, progress="none")
    (tmp_path / "ragaudit.yaml").write_text("database:\n  url: example\n")
    result = ragaudit(*args, cwd=tmp_path, timeout=60)
    assert result.returncode == 2, result.stderr
    assert why in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("value", ["true", "null", "{count: true}", "yes"])
def test_per_kind_takes_numbers_or_all_never_a_flag(value: str) -> None:
    """``templates.per_kind`` is a number for every kind, 'all' or a number per kind: a
    YAML flag (true, yes) or null is a one-line error, never read as 1."""
    with pytest.raises(ConfigError, match="per_kind"):
        parse_config(f"templates:\n  per_kind: {value}\n")
