"""The label mix of generate --documents (``--mix`` and ``generate.documents.mix``): every
weight a finite number >= 0, some > 0, or a one-line error (issue 37 item 17)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragaudit.config import parse_config
from ragaudit.errors import ConfigError
from tests.support.cli import ragaudit


@pytest.mark.parametrize(
    "mix",
    [
        "fact_single=inf",
        "fact_single=-inf",
        "summary=1e309",  # a number too large for a float is infinite too
        "fact_single=Infinity,summary=1",
        "fact_single=1e308,summary=1e308",  # each finite, their total is not
        "fact_single=nan",
        "fact_single=-1",
    ],
)
def test_a_weight_that_is_not_a_finite_number_is_a_one_line_error(tmp_path: Path, mix: str) -> None:
    result = ragaudit("generate", "--example", "--documents", "--mix", mix, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("error: --mix: ")
    assert "finite" in result.stderr
    provenance = tmp_path / "runs" / "default" / "provenance.json"
    assert not provenance.exists() or "generate" not in provenance.read_text()


@pytest.mark.parametrize("weight", [".inf", "-.inf", ".nan", "1e309"])
def test_a_weight_in_ragaudit_yaml_that_is_not_finite_names_its_line(weight: str) -> None:
    text = f"generate:\n  documents:\n    mix:\n      fact_single: {weight}\n      summary: 1\n"
    with pytest.raises(ConfigError, match=r"generate\.documents\.mix(\.fact_single)?: .*finite"):
        parse_config(text)


def test_finite_weights_are_kept_as_given() -> None:
    config = parse_config("generate:\n  documents:\n    mix: {fact_single: 3, summary: 1}\n")
    assert config.generate.documents.shares() == {"fact_single": 0.75, "summary": 0.25}
