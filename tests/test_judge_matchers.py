"""Deterministic matchers: what they decide, and how often they agree with the paper's
stored judgements."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragaudit.judge.matchers import dates, match, normalize, numbers
from ragaudit.records.models import Reference


def _decide(values: list, response: str) -> tuple[bool, bool | None, str]:
    d = match(Reference.from_values(values), response)
    return d.decided, d.correct, d.rule


@pytest.mark.parametrize(
    ("values", "response", "rule"),
    [
        (["Maldives"], "maldives", "exact"),
        (["Blue Horizon Hotels"], "The client is the Blue Horizon Hotels group.", "contains"),
        ([1000], "It employs 1,000 people.", "number"),
        ([1000], "about 1000.0 in total", "number"),
        ([1000], "exactly 1 000", "number"),
        (["1000"], "1,000", "number"),
        (["2023-03-01"], "It started on 1 March 2023.", "date"),
        (["2023-03-01"], "It started on March 1, 2023.", "date"),
        (["2023-03-01"], "Start: 2023-03-01", "contains"),
        (["blue", "green"], "Green and blue badges.", "set"),
    ],
)
def test_decides_correct(values: list, response: str, rule: str) -> None:
    assert _decide(values, response) == (True, True, rule)


@pytest.mark.parametrize(
    ("values", "response", "expected"),
    [
        (["Paris"], "", (True, False, "refusal")),
        (["Paris"], "I don't know.", (True, False, "refusal")),
        (["Paris"], "The documents do not mention it.", (True, False, "refusal")),
        ([], "I do not know.", (True, True, "refusal")),  # unanswerable: refusing is right
        (["Paris"], "Lyon", (False, None, "undecided")),  # may be a paraphrase: for the LLM
        (["blue", "green"], "Blue.", (False, None, "undecided")),  # half a set
        (
            ["Banking"],
            "As an AI I have no access, but it is the banking industry.",
            (False, None, "undecided"),
        ),  # a hedge that still answers
        ([None], "It is not recorded.", (True, True, "not-recorded")),  # the truthful answer
        ([None], "", (True, False, "refusal")),
        ([2], "I don't have access; try these steps: 1. ask 2. check", (True, False, "refusal")),
        (["2024-09-16"], "Rouvmit Medical Hub", (True, False, "no-date")),  # no date at all
        (["2024-09-16"], "16th of September", (False, None, "undecided")),  # a partial date
        (["2024-09-16"], "It started on 26 October 2022.", (False, None, "undecided")),
        (["Rouvmit"], "Valdoro", (False, None, "undecided")),  # not a date question
    ],
)
def test_refusals_and_what_is_left_to_the_llm(values: list, response: str, expected) -> None:
    assert _decide(values, response) == expected


@pytest.mark.parametrize(
    ("values", "response"),
    [
        (["Paris"], "It is not Paris."),
        (["Paris"], "The capital isn't Paris; it is Lyon."),
        (["Paris"], "Lyon rather than Paris."),
        (["Paris"], "Lyon, instead of Paris."),
        ([5], "It has more than 5 employees."),
        ([5], "Not 5."),
        ([1000], "The budget was never 1,000 dollars."),
    ],
)
def test_a_denied_reference_is_not_an_answer_given(values: list, response: str) -> None:
    """The reference right after a word that denies it ("not Paris") is for the LLM judge:
    the response names it to say it is not the answer (issue 36, a notebook user's finding)."""
    assert _decide(values, response) == (False, None, "undecided")


@pytest.mark.parametrize(
    ("values", "response", "rule"),
    [
        (["Paris"], "Not Lyon: the capital is Paris.", "contains"),  # denies Lyon only
        (["Paris"], "It is not Lyon. Paris is.", "contains"),
        (["China"], "It is in Beijing, China. No. 25 Finance Street.", "contains"),  # "No."
        ([5], "It is 5, not 6.", "contains"),
        ([5], "Not 6 but exactly 5.", "contains"),
        ([5], "It is not 4. It is 5.0.", "number"),
    ],
)
def test_a_denial_of_something_else_still_decides(values: list, response: str, rule: str) -> None:
    assert _decide(values, response) == (True, True, rule)


def test_small_numbers_need_a_word_boundary() -> None:
    assert _decide([3], "Project 13 is late.") == (False, None, "undecided")


def test_parsers() -> None:
    assert normalize("The  Blue-Horizon, Hotels!") == "blue horizon hotels"
    assert numbers("1,000 and 2 500.5 and -3") == [1000.0, 2500.5, -3.0]
    assert {d.isoformat() for d in dates("on 3rd of Sept 2024 or 2024-02-30")} == {"2024-09-03"}


def test_agreement_with_the_stored_judgements(grammar_reference: Path) -> None:
    decided = correct = agree_correct = incorrect = agree_incorrect = total = 0
    for path in sorted(grammar_reference.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            d = match(Reference.from_values([row["reference"]]), row["response"])
            total += 1
            if not d.decided:
                continue
            decided += 1
            if d.correct:
                correct += 1
                agree_correct += row["correct"] is True
            else:
                incorrect += 1
                agree_incorrect += row["correct"] is False
    assert total == 5482
    assert decided >= 0.6 * total  # most answers need no LLM
    assert agree_correct / correct >= 0.98
    assert agree_incorrect / incorrect >= 0.95


def test_normalization_keeps_a_numbers_sign_and_nothing_else_of_a_hyphen() -> None:
    assert normalize("-12") == "-12" != normalize("12")
    assert normalize("\u221212 EUR") == "-12 eur"  # the minus sign is the same sign
    assert normalize("-$12") == "-$12"
    assert normalize("2024-03-01") == "2024 03 01"  # a date's hyphens join its parts
    assert normalize("Room 12-13, T-1000") == "room 12 13 t 1000"
    assert numbers("\u22123 and 1.2k and 1.2.3") == [-3.0]  # no piece of a longer token


def test_the_testers_answers_are_not_credited_through_evaluate() -> None:
    """Answers that name another number than the reference (its sign flipped, a scale
    word, a range, date arithmetic), judged by the matchers alone (no LLM): none is
    Correct, while the right answers beside them still are, by a matcher."""
    import ragaudit as ra

    wrong = [
        (12, a)
        for a in (
            *("-12", "\u221212", "minus 12", "It is -12 EUR", "12 thousand", "12 million"),
            *("12k", "12 billion", "12-13", "12\u201313", "12 or 13", "-12.0"),
        )
    ]
    wrong += [(-12, "12"), ("2024-03-01", "2024-03-01 minus one day")]
    right = [(12, a) for a in ("12", "$12", "12 EUR", "It has 12 floors.")]
    right += [(-12, "-12"), (-12, "minus 12"), (12000, "12,000"), ("2024-03-01", "2024-03-01")]
    rows = [{"question": "q", "answer": a, "reference": r} for r, a in wrong + right]
    judged = ra.evaluate(rows).judgements
    verdicts = [(row["answer"], j.correct, j.method) for row, j in zip(rows, judged, strict=True)]
    assert not any(correct for _, correct, _ in verdicts[: len(wrong)]), verdicts
    assert all(
        correct and method.startswith("match:") for _, correct, method in verdicts[len(wrong) :]
    ), verdicts


# -- symbols tell answers apart (issue 13, defect 6) -----------------------------------------

_LETTERS = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", min_size=1)
_SYMBOLS = st.sampled_from(["+", "++", "#", "&T", "@", "$", "€", "°", "™", "🎉", "❤️", "🚀"])


@given(base=_LETTERS, symbol=_SYMBOLS)
def test_a_name_with_a_symbol_is_never_decided_equal_to_the_name_without_it(
    base: str, symbol: str
) -> None:
    longer = base + symbol
    for reference, response in ((longer, base), (base, longer), (base, f"=> {longer}.")):
        decision = match(Reference.from_values([reference]), response)
        assert not (decision.decided and decision.correct), (reference, response, decision)


@given(answer=st.one_of(_SYMBOLS, st.builds(lambda a, b: a + b, _LETTERS, _SYMBOLS)))
def test_an_answer_with_symbols_matches_itself_alone_and_in_a_sentence(answer: str) -> None:
    for response in (answer, f"=> {answer}.", f"{answer.upper()}"):
        decision = match(Reference.from_values([answer]), response)
        assert decision.decided and decision.correct, (answer, response, decision)


@pytest.mark.parametrize(
    ("reference", "response"),
    [("C++", "C"), ("C", "C++"), ("C#", "C"), ("C", "We use C# here"), ("AT&T", "AT")],
)
def test_symbols_are_not_erased(reference: str, response: str) -> None:
    assert not match(Reference.from_values([reference]), response).correct
    assert normalize(reference) != normalize(response)


@pytest.mark.parametrize(
    ("response", "correct"),
    [
        ("No value is recorded for that.", True),
        ("Her start date is not recorded.", True),
        ("I don't know.", True),
        ("Unknown", True),
        ("2021-04-01", None),  # a value where none is recorded: the LLM judge decides
        ("The end date is 2021-05-01; the budget is unknown.", None),  # a value, and more
        ("It is not null: Alice.", None),
        (
            "I don't know the exact figure, but records suggest it was around 2021 when the "
            "project started and it ran for two years",
            None,
        ),  # a long hedge that gives a value: for the LLM judge
    ],
)
def test_a_null_answer_is_right_when_the_response_says_it_is_not_recorded(
    response: str, correct: bool | None
) -> None:
    decision = match(Reference.from_values([None]), response)
    assert decision.correct is correct
    assert decision.decided == (correct is not None)


@pytest.mark.parametrize(
    ("reference", "response"),
    [
        ("Grade A", "Grade B"),
        ("Type A", "Type AB"),
        ("Vitamin A", "Vitamin D"),
        ("Series A", "Series B funding"),
        ("A+", "+"),
        ("Q&A", "Q&"),
    ],
)
def test_a_capital_a_is_a_letter_not_an_article(reference: str, response: str) -> None:
    assert not match(Reference.from_values([reference]), response).correct


@pytest.mark.parametrize(
    ("reference", "response"),
    [("Banking", "It is the Banking industry."), ("project manager", "A project manager.")],
)
def test_articles_before_a_word_are_still_ignored(reference: str, response: str) -> None:
    assert match(Reference.from_values([reference]), response).correct
