"""Names printed as written and counts that read (issue 37, second hostile pass, the
cosmetic findings): no rich emoji codes in user-supplied names, the documents table's
dropped wordings, a --mix label given twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragaudit.cli.console import console, err_console
from ragaudit.cli.generate import parse_mix
from ragaudit.errors import UserError
from tests.support.cli import ragaudit
from tests.support.hostile_files import BERLIN, PARIS, write_jsonl

# -- cosmetic ------------------------------------------------------------------------------


def test_the_wordings_cell_says_what_was_dropped_and_why() -> None:
    from ragaudit.cli.generate import wordings_cell

    cell = wordings_cell({"kept": 0, "length": 3, "asks something else": 1})
    assert cell == '0 (dropped: 3 for "length", 1 for "asks something else")'
    assert wordings_cell({"kept": 5}) == "5"


@pytest.mark.parametrize("out", [console, err_console])
def test_the_consoles_print_emoji_codes_as_written(out: Any) -> None:
    with out.capture() as captured:
        out.print("openai:m:default gpt:smile:v2")
    assert captured.get().strip() == "openai:m:default gpt:smile:v2"


def test_the_progress_bars_show_names_as_written() -> None:
    from ragaudit.api.progress import RichProgress

    progress = RichProgress()
    try:
        progress.task("gpt:smile:v2 [b]x[/b]", total=1)
        bars = progress._progress  # rich's Progress: its columns render the description
        task = bars.tasks[0]
        assert bars.columns[0].render(task).plain == "gpt:smile:v2 [b]x[/b]"
        # What else the bars' console prints as text keeps its colons too.
        assert bars.console.render_str("a:smile:b", markup=False).plain == "a:smile:b"
    finally:
        progress.close()


def test_human_rater_names_are_printed_as_written(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "pairs.jsonl", [{**PARIS, "id": "a"}, {**BERLIN, "id": "b"}])
    write_jsonl(tmp_path / "ann.jsonl", [{"id": "a", "label": "summary", "rater": "gpt:smile:v2"}])
    result = ragaudit(
        "label", "--input", "pairs.jsonl", "--no-llm", "--human", "ann.jsonl", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "gpt:smile:v2" in result.stdout and "😄" not in result.stdout


def test_mix_refuses_a_label_given_twice() -> None:
    with pytest.raises(UserError, match=r"fact_single is given twice"):
        parse_mix("fact_single=1,fact_single=2")
    assert parse_mix("fact_single=1, summary=2") == {"fact_single": 1.0, "summary": 2.0}
