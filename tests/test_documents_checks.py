"""The pure parts of generation from documents: reading the model's replies strictly, the
deterministic checks a pair passes first, and the label quotas."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragaudit.documents import checks
from ragaudit.documents import generation as gen
from ragaudit.documents.generator import quotas
from ragaudit.documents.options import DocumentOptions
from ragaudit.llm.parsing import CUT
from tests.conftest import REPO

CONTEXT = (
    "Tiandrul Tramway is being built in Cheismouth, Tusland. Work got under way on "
    "2022-06-14. Completion is planned for 13 December 2023. The project employs 1,200 "
    "people. Truxin Geirkwick manages the project."
)


def test_a_facts_reply_gives_the_theme_and_the_statements() -> None:
    reply = (
        "Theme: the Tiandrul Tramway project\n\n> Tiandrul Tramway is built in Cheismouth.\n"
        "> Work got under way on 2022-06-14.\n- Truxin Geirkwick manages the project.\n"
        "> Tiandrul Tramway is built in Cheismouth.\nStatements:"
    )
    facts = gen.parse_facts_reply(reply)
    assert facts.theme == "the Tiandrul Tramway project"
    assert facts.facts == (
        "Tiandrul Tramway is built in Cheismouth.",
        "Work got under way on 2022-06-14.",
        "Truxin Geirkwick manages the project.",
    )  # the repeated statement once, the heading line dropped


@pytest.mark.parametrize(
    "reply",
    [
        "> Tiandrul Tramway is built in Cheismouth.",  # no theme
        "Theme: a long theme that says everything and lists nothing",  # no statement
    ],
)
def test_a_facts_reply_without_theme_or_statements_is_refused(reply: str) -> None:
    with pytest.raises(ValueError):
        gen.parse_facts_reply(reply)


def test_statements_are_complete_sentences() -> None:
    reply = "Here are three:\n> A and B were built in 2020 by C.\n> short one\n> Is this one?"
    assert gen.parse_statements(reply) == ["A and B were built in 2020 by C."]
    with pytest.raises(ValueError):
        gen.parse_statements("Here are three:\n> ok")


@pytest.mark.parametrize(
    ("reply", "question"),
    [
        ("When did work on Tiandrul Tramway start?", "When did work on Tiandrul Tramway start?"),
        ('Question: "Who manages Tiandrul Tramway?"', "Who manages Tiandrul Tramway?"),
        ("> Where is it built?\nThis asks for the place.", "Where is it built?"),
    ],
)
def test_one_question_is_read(reply: str, question: str) -> None:
    assert gen.parse_question(reply) == question


@pytest.mark.parametrize("reply", ["The tramway started in 2022.", "Who? \nWhere?"])
def test_no_question_or_several_are_refused(reply: str) -> None:
    with pytest.raises(ValueError):
        gen.parse_question(reply)


@pytest.mark.parametrize(
    ("question", "bad"),
    [
        ("According to the passage, who manages the project?", True),
        ("What does the context say about Tiandrul Tramway?", True),
        ("Who?", True),
        ("Who manages the Tiandrul Tramway project?", False),
        ("Which text editor does Truxin Geirkwick use?", False),  # "text" alone is fine
    ],
)
def test_a_question_that_leans_on_its_context_is_a_problem(question: str, bad: bool) -> None:
    assert (gen.question_problem(question) is not None) == bad


def test_simple_replies_give_pairs_up_to_n() -> None:
    reply = (
        'Sure: {"pairs": [{"question": "Who manages Tiandrul Tramway?", "answer": '
        '"Truxin Geirkwick"}, {"question": "How many people work on it?", "answer": 1200}]}'
    )
    pairs = gen.parse_simple_reply(reply, 2)
    assert [(p.question, p.answer) for p in pairs][1] == ("How many people work on it?", "1200")
    assert len(gen.parse_simple_reply(reply, 1)) == 1
    one = gen.parse_simple_reply('{"question": "Q here?", "answer": "A"}', 3)
    assert one[0].answer == "A"
    for bad in ('{"pairs": []}', '{"pairs": [{"question": "Q?"}]}', "no json"):
        with pytest.raises(ValueError):
            gen.parse_simple_reply(bad, 2)


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("Truxin Geirkwick manages the project.", "supported"),
        ("Completion is planned for 13 December 2023.", "supported"),
        ("The project employs 1200 people.", "supported"),  # 1,200 in the context
        ("The project employs 1,300 people.", "unsupported"),  # a number it does not hold
        ("Work started in 2021.", "unsupported"),
        ("Norhaven", "unsupported"),  # a short answer none of whose words is there
        ("Cheismouth and Norhaven", None),
        ("The tramway will ease congestion in the city centre.", None),  # the critique decides
    ],
)
def test_answer_support_decides_by_content_words_where_it_can(
    answer: str, verdict: str | None
) -> None:
    assert checks.answer_support(CONTEXT, answer)[0] == verdict


@pytest.mark.parametrize(
    "reply",
    [
        '{"stand_alone": [5, "names it"], "specificity": [4, "x"], '
        '"question_grounding": [3, "y"], "answer_grounding": [2, "z"]}',
        '```json\n{"Stand alone": {"rating": "5", "reason": "names it"}, "specificity": "4/5",'
        ' "question-grounding": 3.0, "answer_grounding": [2]}\n```',
    ],
)
def test_critiques_are_read_in_the_shapes_models_write(reply: str) -> None:
    got = checks.parse_critiques(reply)
    assert [got[name].rating for name in checks.CRITIQUES] == [5, 4, 3, 2]
    assert checks.failed_critiques(got, dict.fromkeys(checks.CRITIQUES, 3)) == [
        "answer_grounding 2<3 (z)" if "z" in reply else "answer_grounding 2<3",
    ]


@pytest.mark.parametrize(
    "reply",
    [
        '{"stand_alone": [5, "a"], "specificity": [4, "b"], "question_grounding": [3, "c"]}',
        '{"stand_alone": [9, "a"], "specificity": [4, "b"], "question_grounding": [3, "c"], '
        '"answer_grounding": [2, "d"]}',
        '{"stand_alone": ["high"], "specificity": [4], "question_grounding": [3], '
        '"answer_grounding": [2]}',
        "[5, 4, 3, 2]",
    ],
)
def test_critiques_missing_or_out_of_range_are_refused(reply: str) -> None:
    with pytest.raises(ValueError):
        checks.parse_critiques(reply)


def test_the_why_of_a_critique_reply_is_the_reason_of_its_low_ratings_only() -> None:
    """Reasons are asked only for ratings below 4, in one "why": it goes to each low
    rating, a high rating has none, and a reply cut inside the why keeps it as far as it
    got; cut before it, only the low ratings say that their reason was cut."""
    whole = (
        '{"stand_alone": 2, "specificity": 5, "question_grounding": 3, "answer_grounding": 4, '
        '"why": "it says the project without naming it"}'
    )
    got = checks.parse_critiques(whole)
    assert {n: c.reason for n, c in got.items()} == {
        "stand_alone": "it says the project without naming it",
        "specificity": "",
        "question_grounding": "it says the project without naming it",
        "answer_grounding": "",
    }
    assert checks.failed_critiques(got, dict.fromkeys(checks.CRITIQUES, 3)) == [
        "stand_alone 2<3 (it says the project without naming it)"
    ]
    inside = checks.parse_critiques(whole[: whole.index("without")])
    assert inside["stand_alone"].reason == "it says the project" + CUT
    assert inside["specificity"].reason == ""
    before = checks.parse_critiques(whole[: whole.index('"why"')])
    assert [before[n].reason for n in checks.CRITIQUES] == [CUT, "", CUT, ""]
    every_five = checks.parse_critiques(whole.replace(": 2", ": 5").replace(": 3", ": 5"))
    assert {c.reason for c in every_five.values()} == {""}


def test_a_critique_cut_after_its_four_ratings_is_read_from_them() -> None:
    """A small model's long reasons run into the token limit; asking again gets the same
    long reasons, so the ratings before the cut are used."""
    long = "the question names its subject and the context states it plainly " * 3
    whole = (
        f'{{"stand_alone": [5, "{long}"], "specificity": [4, "{long}"], '
        f'"question_grounding": [3, "{long}"], "answer_grounding": [2, "{long}"]}}'
    )
    cut = whole[: whole.index('"answer_grounding"') + 30]
    got = checks.parse_critiques(cut)
    assert [got[name].rating for name in checks.CRITIQUES] == [5, 4, 3, 2]
    # The reasons before the cut are kept; the one it fell inside, as far as it got.
    assert got["question_grounding"].reason == long
    assert got["answer_grounding"].reason == "the q" + CUT
    cut_before_reason = checks.parse_critiques(whole[: whole.index('"answer_grounding"') + 24])
    assert cut_before_reason["answer_grounding"] == checks.Critique(rating=2, reason=CUT)
    with pytest.raises(ValueError):  # cut before the fourth rating: asked again
        checks.parse_critiques(whole[: whole.index('"answer_grounding"')])
    with pytest.raises(ValueError):  # an out-of-range rating is no rating
        checks.parse_critiques(cut.replace("[5,", "[7,"))


@pytest.mark.parametrize(
    ("reply", "answer", "passage"),
    [
        ('{"answer": "unknown", "passage": null}', None, None),
        ("Unknown.", None, None),
        ('{"answer": "Truxin Geirkwick", "passage": "[2]"}', "Truxin Geirkwick", 2),
        ('{"answer": "Not stated", "passage": 1}', None, 1),
    ],
)
def test_readings_say_what_was_found_and_where(
    reply: str, answer: str | None, passage: int | None
) -> None:
    got = checks.parse_reading(reply)
    assert (got.answer, got.passage) == (answer, passage)


def test_a_reading_that_is_not_the_json_asked_is_refused() -> None:
    with pytest.raises(ValueError):
        checks.parse_reading('{"result": "x"}')


@pytest.mark.parametrize(
    ("expected", "found", "same"),
    [
        ("Completion is planned for 9 June 2023.", "9 June 2023", True),  # inside the statement
        ("911", "The duchy was founded in 911.", True),  # the statement inside the reading
        ("Rhin", "Rhin", True),
        (None, None, True),  # both unknown: a question the context does not answer
        ("Work began on 3 May 2021.", "9 June 2023", False),  # another date
        ("Mira Tessel", "Norhaven", False),
        ("Mira Tessel", None, False),  # the wording is not answered
        (None, "Norhaven", False),  # the wording is answered, the question was not
        ("1,000 m3/s", "1,200 m3/s", False),  # a number the other does not hold
        # Answers without a content word are compared by their words and symbols.
        ("only once", "once", True),
        ('"x"', "x", True),
        ("once, when the def statement is executed", "once", True),
        ("0o", "0x", False),
        ("double it", 'f"{{', False),
        ("()", "(5,)", False),
    ],
)
def test_two_readings_agree_when_one_holds_the_other(
    expected: str | None, found: str | None, same: bool
) -> None:
    assert checks.answers_agree(expected, found) is same


def test_a_wording_is_read_without_wrapping() -> None:
    assert gen.parse_wording('Here it is:\n"Tiandrul Tramway manager?"') == (
        "Tiandrul Tramway manager?"
    )
    with pytest.raises(ValueError):
        gen.parse_wording("Here it is:")


@pytest.mark.parametrize(
    ("wording", "leaks"),
    [
        ("Tiandrul Tramway manager?", False),
        ("Is Truxin Geirkwick the manager of Tiandrul Tramway?", True),  # the name
        ("Tiandrul Tramway completion in 2023?", True),  # the year
    ],
)
def test_a_wording_that_gives_the_answer_away_is_caught(wording: str, leaks: bool) -> None:
    question = "Who manages the Tiandrul Tramway project?"
    answer = "Truxin Geirkwick manages the project, due in 2023."
    assert (gen.answer_leak(question, wording, answer) is not None) == leaks


def test_a_wording_that_is_the_question_again_or_off_its_style_is_dropped_unread() -> None:
    """The checks the step gives the generator: the wordings of SQL templates' style
    lengths, and the question itself up to case and punctuation."""
    from ragaudit.steps.documents import wording_problem

    question = "Who manages the Tiandrul Tramway project?"
    same = "who manages the Tiandrul Tramway project"
    assert wording_problem("short", question, same) == "the same as the generated question"
    long = "Who is the person that manages the Tiandrul Tramway project for the city council?"
    assert wording_problem("short", question, long) == (
        "length: 14 words; the short style allows at most 12"
    )
    assert wording_problem("short", question, "Tiandrul Tramway manager?") is None
    assert wording_problem("formal", question, long) is None  # no length rule of its own


def test_near_duplicates_are_found_by_cosine() -> None:
    kept = np.array([[1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    close = np.array([0.62, 0.78], dtype=np.float32)
    close /= np.linalg.norm(close)
    found = checks.near_duplicate(close, kept, 0.99)
    assert found is not None and found[0] == 1
    assert checks.near_duplicate(np.array([0.0, 1.0], dtype=np.float32), kept, 0.9) is None
    assert checks.near_duplicate(close, np.zeros((0, 0), dtype=np.float32), 0.5) is None


def test_quotas_split_the_size_by_largest_remainders() -> None:
    uniform = DocumentOptions(mix="uniform").shares()  # type: ignore[arg-type]
    assert quotas(uniform, 10) == {
        "fact_single": 3,
        "summary": 3,
        "reasoning": 2,
        "unanswerable": 2,
    }
    assert sum(quotas(uniform, 7).values()) == 7
    skewed = DocumentOptions(mix={"fact_single": 3, "reasoning": 1}).shares()
    assert quotas(skewed, 4) == {"fact_single": 3, "reasoning": 1}


def test_document_options_refuse_what_cannot_work() -> None:
    with pytest.raises(ValueError, match="needs strategy: statements"):
        DocumentOptions(strategy="simple", mix={"summary": 1})
    with pytest.raises(ValueError, match="unknown critique"):
        DocumentOptions(thresholds={"fluency": 3})
    with pytest.raises(ValueError, match="one of them > 0"):
        DocumentOptions(mix={"summary": 0})
    assert DocumentOptions(thresholds={"specificity": 4}).thresholds["stand_alone"] == 3


@pytest.mark.parametrize(
    ("question", "wording", "drift"),
    [
        # Paraphrases: the same kind of fact, every name, number and piece of code kept.
        ('Why is r"\\" a syntax error?', 'What makes the literal r"\\" a syntax error?', None),
        ("What does -7 // 2 evaluate to?", "-7 // 2 result?", None),
        ("How is a tuple with one element written?", "One-element tuple syntax?", None),
        ("When are default parameter values evaluated?", "At what point are they computed?", None),
        ("What is the Island off the shore?", "What island lies off the shore?", None),
        # The demo's: a name in the possessive is the name.
        (
            "Who is the project director responsible for the Quoumplo Observatory project report?",
            "Who is the project director overseeing the Quoumplo Observatory's report?",
            None,
        ),
        # Drifts: another kind of fact, or a name, number or piece of code lost or added.
        (
            "When are default parameter values evaluated?",
            "Why is a mutable default list shared between calls?",
            "it asks for a reason, the question for a time",
        ),
        (
            'What does 0 or "x" return?',
            'Does 0 or "x" return True or False?',
            "it asks for yes or no, the question for a thing",
        ),
        (
            'Why is r"\\" a syntax error?',
            "Why is the backslash not a valid string literal?",
            """it leaves out 'r"\\\\"' of the question""",
        ),
        (
            "What does -7 // 2 evaluate to?",
            "What does 7 // 2 evaluate to?",
            "it leaves out '-7' of the question",
        ),
        (
            "What is the bend of Rhine in Basel called?",
            "What is the bend called?",
            "it leaves out 'rhine' of the question",
        ),
        (
            "What does s[0] return?",
            'What does s[0] = "x" raise?',
            "it adds '\"x\"', which the question does not have",
        ),
    ],
)
def test_a_wording_that_drifts_is_caught_before_it_is_read(
    question: str, wording: str, drift: str | None
) -> None:
    assert checks.wording_drift(question, wording) == drift


def test_what_a_question_asks_for_is_read_from_its_question_words() -> None:
    assert checks.asks_for("How often is b evaluated?") == "an amount"
    assert checks.asks_for("Which century was the program?") == "a time"
    assert checks.asks_for("Whose idea was it?") == "a person"
    assert checks.asks_for("How do you write a literal brace?") == "a way"
    assert checks.asks_for("Can a raw string end in a backslash?") == "yes or no"
    assert checks.asks_for("Octal literal prefix?") is None  # no question word: any


def test_a_window_past_the_first_names_its_page_so_a_question_from_it_can(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41: with a page cut into 200-word windows, ``simple`` asked "What is the
    default value for the `case_sensitive` parameter?" of a window that never says whose
    parameter it is. A window past the first of its document is written from with the
    document's title (its short first line, else its id) as a first line; the first one
    and a whole document are left as they are."""
    from ragaudit.config import load_config
    from ragaudit.steps.documents import corpus_contexts

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "documents"
    folder.mkdir()
    body = " ".join(f"word{i}" for i in range(450))
    (folder / "choice.txt").write_text(f"click.Choice\n\n{body}\n")
    (folder / "untitled.txt").write_text(f"This page has no title line at all, it starts {body}\n")
    config = tmp_path / "ragaudit.yaml"
    config.write_text(
        "corpus:\n  path: documents\n  chunking: window\n  chunk_size: 200\n  chunk_overlap: 50\n"
    )
    contexts, _ = corpus_contexts(load_config(config))
    by_id = {c.id: c.text for c in contexts}
    assert by_id["choice#0"].startswith("click.Choice\n\nword0")  # the title, on its line
    assert by_id["choice#1"].startswith("click.Choice (continued)\n\nword")
    assert by_id["untitled#2"].startswith("untitled (continued)\n\nword")
    whole = tmp_path / "whole.yaml"
    whole.write_text("corpus:\n  path: documents\n")
    assert [c.text.strip() for c in corpus_contexts(load_config(whole))[0]] == [
        (folder / name).read_text().strip() for name in ("choice.txt", "untitled.txt")
    ]


def test_a_window_is_written_from_its_first_whole_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A later trial of issue 41 (Python's reference, 400-word windows): a window opened
    with 'type) is up to the "__getitem__()" method.', and the model wrote that fragment
    as a statement ("The special method names in Python are up to the __getitem__()
    method."), which every check passed. A window past the first is written from its
    first whole sentence where the fragment before it is in the words the previous window
    shares; the systems' chunks are not changed."""
    from ragaudit.config import load_config
    from ragaudit.steps.documents import corpus_contexts
    from ragaudit.systems.corpus import chunk, load_corpus

    monkeypatch.chdir(tmp_path)
    (tmp_path / "documents").mkdir()
    sentences = [f"Sentence {i} says that item{i} is up to the method{i}." for i in range(40)]
    (tmp_path / "documents" / "special.txt").write_text("Special names\n\n" + " ".join(sentences))
    (tmp_path / "ragaudit.yaml").write_text(
        "corpus:\n  path: documents\n  chunking: window\n  chunk_size: 100\n  chunk_overlap: 20\n"
    )
    config = load_config(tmp_path / "ragaudit.yaml")
    contexts, _ = corpus_contexts(config)
    pieces = chunk(load_corpus(config.corpus.path), "window", size=100, overlap=20)
    assert len(contexts) == len(pieces) > 2
    for context, piece in zip(contexts[1:], pieces[1:], strict=True):
        assert not piece.text.startswith("Sentence")  # the windows open mid-sentence
        body = context.text.split("\n\n", 1)[1]
        assert body.startswith("Sentence ") and piece.text.endswith(body)
        # What was left out is in the previous window's shared words.
        assert len(piece.text[: -len(body)].split()) < 20
    # The first window is left as it is, on the page's lines.
    assert contexts[0].text.split() == pieces[0].text.split() and "\n" in contexts[0].text


def test_a_section_title_in_a_window_reads_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41's trial on Python's reference: a window held "... automatic resource
    locking/synchronization. Customizing instance and subclass checks
    ========================================" on one line, and the model wrote
    "Customizing instance and subclass checks is a common use case for metaclasses".
    A window is written from on the page's lines, its section titles as headings; what
    only looks like an adornment (a table's border, an indented rule, a line after text
    that is not a title) is left as it is."""
    from ragaudit.config import load_config
    from ragaudit.documents.markup import render_markup
    from ragaudit.steps.documents import corpus_contexts

    page = (
        "Special method names\n********************\n\n"
        "Uses for metaclasses\n--------------------\n\n"
        "Some ideas that have been explored include enum, logging and automatic\n"
        "resource locking/synchronization.\n\n\n"
        "Customizing instance and subclass checks\n"
        "========================================\n\n"
        "The following methods override the default behavior of isinstance().\n\n"
        "+-------+---------+\n| a     | b       |\n+=======+=========+\n\n"
        "   code line\n   ---\n"
        "Not a title, the line before is text\nstill text\n=====\n"
    )
    rendered = render_markup(page)
    assert rendered.splitlines()[:4] == [
        "## Special method names",
        "",
        "## Uses for metaclasses",
        "",
    ]
    assert "\n\n## Customizing instance and subclass checks\n\nThe following" in rendered
    for kept in ("+=======+=========+", "   ---", "still text\n====="):
        assert kept in rendered
    overlined = "*****\nTitle\n*****\nBody."
    assert render_markup(overlined) == "## Title\nBody."

    monkeypatch.chdir(tmp_path)
    (tmp_path / "documents").mkdir()
    (tmp_path / "documents" / "specialnames.txt").write_text(page)
    (tmp_path / "ragaudit.yaml").write_text(
        "corpus:\n  path: documents\n  chunking: window\n  chunk_size: 400\n"
    )
    [window], _ = corpus_contexts(load_config(tmp_path / "ragaudit.yaml"))
    assert "synchronization.\n\n## Customizing instance and subclass checks\n" in window.text
    assert "====" not in window.text.split("+")[0]  # the titles' adornments are gone


def test_rest_markup_is_written_from_as_the_page_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41's trial on click's docstrings: ``.. versionadded:: 3.0`` became a
    reference "added in Python 3.0", and ``:param name: The name of the group command.``
    a reference that restates its question. A context is written from with its reST
    rendered as Sphinx shows it; prose and Markdown are left alone."""
    from ragaudit.config import load_config
    from ragaudit.documents.markup import render_markup
    from ragaudit.steps.documents import corpus_contexts

    page = (
        "click.open_file\n\nOpens a file, see :func:`~click.File` and :ref:`the guide <files>`.\n"
        ":param str filename: The name of the file, or ``-`` for stdin.\n"
        ":returns: The file object.\n"
        ".. versionchanged:: 8.0\n    Added the ``lazy`` parameter.\n"
        ".. warning::\n    Not thread-safe.\n"
        "Example::\n\n.. code-block:: python\n\n    open_file('x')\n"
        ".. versionadded:: 3.0\n"
    )
    assert render_markup(page) == (
        "click.open_file\n\nOpens a file, see `File` and the guide.\n"
        "Parameter `filename`: The name of the file, or `-` for stdin.\n"
        "Returns: The file object.\n"
        "Changed in version 8.0:\n    Added the `lazy` parameter.\n"
        "Warning:\n    Not thread-safe.\n"
        "Example:\n\n\n    open_file('x')\n"
        "New in version 3.0.\n"
    )
    prose = "Markdown `code`, ```fenced```, a time 10:30 and a ratio 1::2 stay.\n- item: x"
    assert render_markup(prose) == prose

    monkeypatch.chdir(tmp_path)
    (tmp_path / "documents").mkdir()
    (tmp_path / "documents" / "open_file.txt").write_text(page)
    (tmp_path / "ragaudit.yaml").write_text("corpus:\n  path: documents\n")
    [context], _ = corpus_contexts(load_config(tmp_path / "ragaudit.yaml"))
    assert context.text == render_markup(page)
    # The page is rendered before it is cut, and a window keeps its lines.
    (tmp_path / "windows.yaml").write_text(
        "corpus:\n  path: documents\n  chunking: window\n  chunk_size: 400\n"
    )
    [window], _ = corpus_contexts(load_config(tmp_path / "windows.yaml"))
    assert window.text.split() == render_markup(page).split()
    assert "\n\n\n" not in window.text and "Example:\n\n    open_file('x')" in window.text
    assert "Parameter `filename`:" in window.text and "New in version 3.0." in window.text


def test_the_restating_check_on_labelled_statement_pairs() -> None:
    """docs/documents.md: on 40 statement pairs written for the project (16 that only
    restate their question, from issue 41's trial and the recorded generations, and 24
    that answer it, yes-or-no questions, "X is the Y" answers and named parameters among
    them), the check drops 13 of the 16 and keeps all 24. What it misses is a verb its
    crude stem does not join ("begin"/"began", "set"/"sets")."""
    from ragaudit.documents.checks import restates_question

    cases = json.loads((REPO / "tests/data/document_restating_set.json").read_text())
    flagged = [restates_question(c["question"], c["statement"]) is not None for c in cases]
    dropped = sum(f for f, c in zip(flagged, cases, strict=True) if c["restates"])
    kept = sum(not f for f, c in zip(flagged, cases, strict=True) if not c["restates"])
    assert (dropped, sum(c["restates"] for c in cases)) == (13, 16)
    assert (kept, sum(not c["restates"] for c in cases)) == (24, 24)


def test_the_one_of_several_and_case_checks_on_labelled_simple_pairs() -> None:
    """docs/documents.md: on 24 simple pairs written for the project (7 that ask for one
    thing where their sentence gives several, 3 whose answer is another name in another
    case, 14 right), the two checks drop 6 of the 7 and 3 of the 3, and keep 12 of the 14.
    What the first misses is a sentence that names the kind in the singular too ("kinds
    of key"); the second drops a right name whose other-case twin is in the context
    ("Tallow" beside the module "tallow"; "None" beside "none of")."""
    data = json.loads((REPO / "tests/data/document_simple_check_set.json").read_text())
    several = [checks.one_of_several(p["context"], p["question"]) for p in data["pairs"]]
    case = [checks.case_ambiguous(p["context"], p["answer"]) for p in data["pairs"]]
    labels = [p["label"] for p in data["pairs"]]

    def count(found: list[str | None], label: str) -> tuple[int, int]:
        return sum(f is not None for f, lab in zip(found, labels, strict=True) if lab == label), (
            labels.count(label)
        )

    assert count(several, "one_of_several") == (6, 7)
    assert count(case, "case") == (3, 3)
    # Neither check drops a pair of the other's kind; the right ones they drop:
    assert count(several, "case") == (0, 3) and count(case, "one_of_several") == (0, 7)
    right_dropped = [
        p["answer"]
        for p, a, b in zip(data["pairs"], several, case, strict=True)
        if p["label"] == "right" and (a or b)
    ]
    assert right_dropped == ["Tallow", "None"]


def test_the_subject_check_on_labelled_questions() -> None:
    """docs/documents.md: on 24 questions written for the project from ten reference pages
    of a made-up library (12 that say what they ask about, 12 that would fit many of the
    pages), the check keeps all 12 and drops 8 of the 12. What it misses is a question
    whose only distinctive word is one page's ("What does the function return?", where one
    page alone says "return"), and a pronoun beside a word of the title ("What does it
    raise on an error?" of the LoadError page)."""
    data = json.loads((REPO / "tests/data/document_subject_set.json").read_text())
    docs: dict[str, str] = data["documents"]
    corpus = checks.CorpusWords(docs.items())
    flagged = [
        checks.names_no_subject(q["question"], q["doc"], docs[q["doc"]].splitlines()[0], corpus)
        is not None
        for q in data["questions"]
    ]
    pairs = list(zip(flagged, data["questions"], strict=True))
    kept = sum(not f for f, q in pairs if q["names_subject"])
    dropped = sum(f for f, q in pairs if not q["names_subject"])
    assert (kept, sum(q["names_subject"] for q in data["questions"])) == (12, 12)
    assert (dropped, sum(not q["names_subject"] for q in data["questions"])) == (8, 12)


def test_a_question_naming_a_snake_case_name_names_its_subject() -> None:
    """Issue 41's trial on Python's reference dropped "What is the purpose of
    '__class_getitem__'?" as naming no subject: split at its underscores, its words
    ("class", "getitem") are on many pages. A name joined by underscores counts whole, so
    it passes where one page holds it, and a question of common words alone still fails."""
    pages = [(f"p{i}", f"Page {i}\nA class defines __getitem__ and a method.") for i in range(12)]
    pages.append(("special", "Special method names\n__class_getitem__ parameterizes a class."))
    corpus = checks.CorpusWords(pages)
    title = "Special method names"
    assert (
        checks.names_no_subject(
            "What is the purpose of '__class_getitem__'?", "special", title, corpus
        )
        is None
    )
    assert checks.names_no_subject("What does a class getitem do?", "special", title, corpus)


def test_a_question_naming_the_keyword_its_title_quotes_names_its_subject() -> None:
    """Issue 41's trials on Python's reference dropped "What is the purpose of the 'while'
    statement?" from the page 'The "while" statement' in every run: "while" is a function
    word and "statement" is on most pages. A name the title quotes is the page's subject,
    quoted or not in the question; a question of the corpus's common words still fails."""
    pages = [(f"p{i}", f"Page {i}\nA statement is executed.") for i in range(12)]
    pages.append(("while", 'The "while" statement\nThe statement repeats while true.'))
    corpus = checks.CorpusWords(pages)
    title = 'The "while" statement'
    for question in (
        "What is the purpose of the 'while' statement?",
        "What does a while statement repeat?",
    ):
        assert checks.names_no_subject(question, "while", title, corpus) is None, question
    assert checks.names_no_subject("What is a statement?", "while", title, corpus)


SQUAD_SET = REPO.parent / "shared" / "reference" / "squad2-subset" / "dev-v2.0-subset.json"


def test_the_subject_check_keeps_the_questions_people_wrote_for_squad() -> None:
    """docs/documents.md: of the 386 answerable questions people wrote for the SQuAD
    subset's 83 paragraphs (two broad articles, "Normans" and "Rhine"), the check keeps
    385: "Who did Rollo sign the treaty of Saint-Clair-sur-Epte with?" names no word of
    its title and passes by its rare names. The one dropped asks about "the Delta" that
    many paragraphs of the Rhine article describe."""
    if not SQUAD_SET.exists():
        pytest.skip(f"SQuAD reference subset not found at {SQUAD_SET} (../shared is absent)")
    data = json.loads(SQUAD_SET.read_text(encoding="utf-8"))
    paragraphs = {
        f"{a['title']}#{i}": (a["title"], p)
        for a in data["data"]
        for i, p in enumerate(a["paragraphs"])
    }
    corpus = checks.CorpusWords((pid, p["context"]) for pid, (_, p) in paragraphs.items())
    asked = [
        (pid, title, qa["question"])
        for pid, (title, p) in paragraphs.items()
        for qa in p["qas"]
        if not qa.get("is_impossible")
    ]
    dropped = [q for pid, title, q in asked if checks.names_no_subject(q, pid, title, corpus)]
    assert (len(asked) - len(dropped), len(asked)) == (385, 386), dropped


def test_a_statement_must_be_the_contexts_own_words() -> None:
    """Issue 41's trials on Python's reference: every wrong ``statements`` pair that passed
    the other checks was a statement the context does not make, most of whose words are
    not in it (a reading by the same model agreed with it); every right one held at least
    89% of its content words there. A statement holding less than 85% is dropped."""
    literals = (
        "Python supports string and bytes literals and various numeric literals. Evaluation "
        "of a literal yields an object of the given type with the given value. All literals "
        "correspond to immutable data types."
    )
    hallucinated = "A bytes literal is a sequence of bytes enclosed in single or double quotes."
    assert checks.answer_support(literals, hallucinated)[0] is None  # the words alone: open
    why = checks.statement_not_stated(literals, hallucinated)
    assert why is not None and "29% of its content words" in why
    # A heading read as a list item: three of its four words are in the context.
    metaclasses = (
        "Uses for metaclasses. Some ideas that have been explored include enum, logging and "
        "interface checking. Customizing instance and subclass checks. The following methods "
        "override isinstance() and issubclass()."
    )
    heading = "Customizing instance and subclass checks is a common use case for metaclasses."
    assert checks.statement_not_stated(metaclasses, heading) is not None
    # The context's own statement, and one in a few words of its own, are kept.
    popitem = (
        "popitem() removes and returns a (key, value) pair from the dictionary. Pairs are "
        "returned in LIFO (last-in, first-out) order."
    )
    kept = (
        'popitem() removes and returns a "(key, value)" pair from the dictionary. Pairs '
        "are always returned in LIFO (last-in, first-out) order."
    )
    share = checks.word_share(popitem, kept)
    assert share is not None and 0.85 <= share < 1
    assert checks.statement_not_stated(popitem, kept) is None
    assert checks.statement_not_stated(popitem, "Pairs are returned in LIFO order.") is None
