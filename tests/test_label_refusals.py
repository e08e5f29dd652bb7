"""label refuses what it cannot use (issue 37, second hostile pass, findings 6 and 9): a
wrong key or model stops the step with one line and writes nothing; a human file that
gives one pair two labels is refused naming both lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragaudit.errors import UserError
from ragaudit.steps.label import read_human_labels
from tests.support.cli import ragaudit
from tests.support.hostile_files import BERLIN, PARIS, RUN, one_line_error, write_jsonl
from tests.support.scripted_llm_server import Reply, ScriptedLLMServer

# -- finding 6: a wrong key stops label ------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "said"),
    [(401, "refused the credentials (HTTP 401)"), (404, "HTTP 404")],
)
def test_label_stops_on_a_wrong_key_or_model_with_one_line(
    llm_server: ScriptedLLMServer, tmp_path: Path, status: int, said: str
) -> None:
    write_jsonl(tmp_path / "pairs.jsonl", [PARIS, BERLIN])
    llm_server.responder = lambda body: Reply(status=status)
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "sk-t-wrong-0000"}
    result = ragaudit("label", "--input", "pairs.jsonl", "--llm", "openai:m", cwd=tmp_path, env=env)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and said in errors[0], result.stderr
    assert "wrote" not in result.stdout
    assert not (tmp_path / RUN / "labels.jsonl").exists()
    assert not (tmp_path / RUN / "labels" / "pairs.jsonl").exists()  # nothing half written
    assert llm_server.request_count < 4  # stopped at the first refusal, not after each pair


# -- finding 9: one pair, two labels -------------------------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_a_pair_given_two_labels_in_one_file_is_refused_naming_both_lines(
    tmp_path: Path, suffix: str
) -> None:
    path = tmp_path / f"ann{suffix}"
    if suffix == ".csv":
        path.write_text("id,label\na,fact_single\nb,summary\na,summary\n")
        lines = "2 and 4"
    else:
        write_jsonl(
            path,
            [
                {"id": "a", "label": "fact_single"},
                {"id": "b", "label": "summary"},
                {"id": "a", "label": "summary"},
            ],
        )
        lines = "1 and 3"
    with pytest.raises(UserError, match=f"lines {lines} give pair") as caught:
        read_human_labels(path, {"a", "b"})
    assert "'a'" in str(caught.value) and "fact_single" in str(caught.value)


def test_the_same_label_twice_is_one_label_and_raters_are_apart(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "ann.jsonl",
        [
            {"id": "a", "label": "summary"},
            {"id": "a", "label": "Summary"},  # the same label, spelt otherwise
            {"id": "a", "label": "reasoning", "rater": "bob"},  # another rater
        ],
    )
    records = read_human_labels(path, {"a"})
    assert [(r.pair_id, r.rater, r.label) for r in records] == [
        ("a", "human:ann", "summary"),
        ("a", "bob", "reasoning"),
    ]


def test_label_refuses_a_file_with_two_labels_for_one_pair(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "pairs.jsonl", [{**PARIS, "id": "a"}])
    write_jsonl(
        tmp_path / "ann.jsonl",
        [{"id": "a", "label": "fact_single"}, {"id": "a", "label": "summary"}],
    )
    result = ragaudit(
        "label", "--input", "pairs.jsonl", "--no-llm", "--human", "ann.jsonl", cwd=tmp_path
    )
    one_line_error(result, "ann.jsonl", "lines 1 and 2")
    assert not (tmp_path / RUN / "labels.jsonl").exists()
