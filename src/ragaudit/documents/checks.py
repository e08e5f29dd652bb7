"""The checks a generated question-answer pair passes before it is accepted, cheapest first
(pure; :mod:`ragaudit.documents.generator` calls the LLM):

1. :func:`question_problem` (in :mod:`.generation`): the question stands without its text;
   :func:`names_no_subject`: it says what it asks about in the corpus (a word of its
   document's title, or one few documents hold); :func:`one_of_several`: a ``simple``
   question does not ask for one thing where its sentence gives several.
2. :func:`answer_support`: the answer's content words are looked up in the context. All
   found decides *supported*; a number the context does not hold decides *unsupported*;
   anything else is left to the critique's ``answer_grounding`` rating.
   :func:`case_ambiguous`: a ``simple`` answer of one name is not one of two names the
   context tells apart by case.
3. :func:`critique_prompt`: four critiques in one structured call (stand-alone, question
   specificity, question-context grounding, answer-context grounding), each 1-5 with a
   reason, against thresholds in the configuration.
4. The labeller (:mod:`.labels`) says which label the pair has, whatever was requested.
5. For a requested ``unanswerable`` question, :func:`reading_prompt`: the model, given the
   context and the corpus passages that rank highest for the question, says whether any of
   them answers it.
6. :func:`near_duplicate`: a question too close (cosine of embeddings) to one accepted
   before is dropped.

A ``simple`` pair's reference is read back the same way: the model answers the question
from the context alone (:func:`reading_prompt`), and :func:`answers_agree` compares that
answer with the reference.

A generated wording of an accepted question is first checked for drift without the model
(:func:`wording_drift`: the kind of fact asked, the names, numbers and code kept), then
read like a question: the model answers it from the context alone, and
:func:`answers_agree` compares that answer with the pair's answer, or else with the answer
the model reads for the question itself.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ValidationError, field_validator

from ragaudit.llm.parsing import CUT, extract_json, marked_cut, read_cut_object
from ragaudit.llm.types import Messages, system, user
from ragaudit.records.models import CritiqueRating

# The four critiques of "Know Your RAG" section 6.2, in the order they are asked.
CRITIQUES: tuple[str, ...] = (
    "stand_alone",
    "specificity",
    "question_grounding",
    "answer_grounding",
)

# Function words: a content word is any other word of two letters or more, or a number.
_STOP_WORDS = (
    "a an the and or but nor of to in on at by for from with without into onto over under "
    "about above below between among through during before after since until than then as "
    "is are was were be been being am do does did done has have had having will would "
    "shall should can could may might must it its it's this that these those there here "
    "which who whom whose what when where why how not no yes so such very also only just "
    "both either neither each every all any some most more less many much few other "
    "another same own he she they them their his her hers him we us our you your i me my "
    "mine one ones if while because although though whether up down out off again further "
    "once "
)
_STOP = frozenset(_STOP_WORDS.split())
_WORD = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")
_NUMBER = re.compile(r"^[0-9]+(?:[.,][0-9]+)*$")
_ORDINAL = re.compile(r"^([0-9]+)(?:st|nd|rd|th)$")

Support = Literal["supported", "unsupported"]
# Up to this many content words, an answer is a value or a name: all of them missing from
# the context decides that it is not supported.
SHORT_ANSWER_WORDS = 3


def _words(text: str) -> list[str]:
    """The words of ``text``, accents dropped and case folded; a number keeps its decimal
    point and loses its thousands separators' commas only where they separate groups of
    three (1,200 -> 1200), and an ordinal its suffix (7th -> 7)."""
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()
    words = []
    for word in _WORD.findall(plain):
        if re.fullmatch(r"[0-9]{1,3}(?:,[0-9]{3})+", word):
            word = word.replace(",", "")
        # An ordinal is its number: "the 7th of September" states "September 7".
        word = _ORDINAL.sub(r"\1", word)
        words.append(word)
    return words


def stem(word: str) -> str:
    """A crude stem, enough to find "founded" where the context says "founding" or
    "projects" where it says "project"."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry its content: numbers and non-function words."""
    return [w for w in _words(text) if w not in _STOP and (len(w) > 1 or w.isdigit())]


# A statement is written as the context's own (the ``statements`` strategy lists what the
# context states): at least this share of its content words must be in the context. In
# issue 41's trials on Python's reference, every wrong statement that passed the other
# checks held 29% to 80% of its words there ("A bytes literal is a sequence of bytes
# enclosed in single or double quotes.", from a window that never says it), every right
# one 89% or more.
STATEMENT_SHARE = 0.85


def word_share(context: str, answer: str) -> float | None:
    """The share of ``answer``'s distinct content words (by stem) that ``context`` holds;
    None when the answer has none."""
    stems = {stem(w) for w in _words(context)}
    distinct = list(dict.fromkeys(content_words(answer)))
    if not distinct:
        return None
    return 1 - sum(stem(w) not in stems for w in distinct) / len(distinct)


# How a summary or a conclusion opens; its words are the combining's, not the context's.
_DISCOURSE = re.compile(
    r"^\s*(?:in summary|in conclusion|in short|overall|therefore|thus|hence|as a result)\b,?",
    re.IGNORECASE,
)


def statement_not_stated(context: str, answer: str, what: str = "statement") -> str | None:
    """Why a ``statements`` reference (or a ``simple`` answer written as a sentence:
    ``what``, "answer") is not a statement of ``context``, or None: fewer than
    :data:`STATEMENT_SHARE` of its content words are there (an opening "In summary," or
    "Therefore," not counted)."""
    share = word_share(context, _DISCOURSE.sub("", answer))
    if share is None or share >= STATEMENT_SHARE:
        return None
    return (
        f"the {what} is not the context's: {share:.0%} of its content words are in it "
        f"(at least {STATEMENT_SHARE:.0%} must be)"
    )


def answer_support(context: str, answer: str) -> tuple[Support | None, str]:
    """Whether ``context`` supports ``answer``, when looking its words up decides it, with
    the reason: *unsupported* when the answer holds a number the context does not, or is
    short (a value, a name) and none of its words is in the context; *supported* when the
    context holds every content word of the answer; else None (the critique's
    answer-grounding rating decides)."""
    found = _words(context)
    numbers = {w for w in found if _NUMBER.match(w)}
    stems = {stem(w) for w in found}
    wanted = content_words(answer)
    if not wanted:
        return None, "the answer has no content word to look up"
    for word in wanted:
        if _NUMBER.match(word) and word not in numbers:
            return "unsupported", f"the context does not hold the answer's number {word}"
    distinct = list(dict.fromkeys(wanted))
    missing = [w for w in distinct if stem(w) not in stems]
    if not missing:
        return "supported", "every content word of the answer is in the context"
    if len(missing) == len(distinct) <= SHORT_ANSWER_WORDS:
        # A short answer (a name, a value) none of whose words is in the context was not
        # read there, whatever a critique says.
        return "unsupported", "no word of the short answer is in the context"
    share = 1 - len(missing) / len(set(wanted))
    return None, f"{share:.0%} of the answer's content words are in the context"


def answer_in_question(question: str, answer: str) -> str | None:
    """Why a pair is circular, or None: every content word of ``answer`` is in
    ``question`` ("What was the name of the Duchy of Normandy?" answered "Duchy of
    Normandy"), so the question gives its answer and asks nothing. Its words are all in
    the context and a reader reads it back, so no other check drops it.

    >>> answer_in_question("What is the name of the Rhine-Meuse Delta?", "The Rhine-Meuse Delta")
    "it holds its own answer ('The Rhine-Meuse Delta')"
    """
    wanted = {stem(w) for w in content_words(answer)}
    if wanted and wanted <= {stem(w) for w in content_words(question)}:
        return f"it holds its own answer ({answer[:60]!r})"
    return None


# A question asks for one thing of a kind when it opens "What method ..." or "Which kind
# of option ...": the word after its question word is the kind (an auxiliary is not).
_KIND = re.compile(
    r"^\s*(?:what|which)\s+(?:(?:kind|type|sort)s?\s+of\s+)?([a-z]+)\b", re.IGNORECASE
)
_NOT_KIND = frozenset(_STOP_WORDS.split()) | {"happens", "kind", "type", "sort"}
# A sentence ends at its full stop, or at a blank line or a heading.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n|\n(?=#)")
# The question's words the sentence it was written from holds, at least.
WRITTEN_FROM_SHARE = 0.75


def _plural(kind: str) -> set[str]:
    """The plural forms of a kind noun: methods, classes, properties."""
    forms = {kind + "s", kind + "es"}
    if kind.endswith("y"):
        forms.add(kind[:-1] + "ies")
    return forms


def one_of_several(context: str, question: str) -> str | None:
    """Why a question asks for one thing where its context gives several, or None: it asks
    for one of a kind ("What method is used to customize the meaning of attribute access
    for class instances?") and the sentence it was written from speaks of that kind in the
    plural only ("The following methods can be defined to customize the meaning of
    attribute access ... for class instances."). Its answer is one of them ("__getattr__",
    the first of four); the reading, by the same model, reads the same one, and the
    critiques rated it 5 (issue 41's trial on Python's reference). The words of the
    context's first line (its title) name the subject, not the sentence, so they are not
    looked for; the kind is the word after the question word, or the two words there
    ("What environment variable ...").

    >>> one_of_several("Jobs. The following options change how often a job runs.",
    ...                "What option changes how often a job runs?")  # doctest: +ELLIPSIS
    "it asks for one option where its context gives several ('The following options...')"
    >>> one_of_several("Jobs. The `retries` option changes how often a job runs.",
    ...                "What option changes how often a job runs?")
    """
    match = _KIND.match(question)
    if not match or match.group(1).casefold() in _NOT_KIND:
        return None
    kind = match.group(1).casefold()
    after = question[match.end() :].split()
    kinds = [kind]
    if after and after[0].casefold() not in _NOT_KIND and after[0].isalpha():
        kinds.append(after[0].casefold())  # "environment variable"
    asked = {stem(w) for w in content_words(question)} - {stem(k) for k in kinds}
    title = {stem(w) for w in content_words(context.strip().split("\n", 1)[0])}
    if len(asked - title) >= 2:
        asked -= title
    if len(asked) < 2:
        return None
    best, best_share = "", 0.0
    for sentence in _SENTENCE_END.split(context):
        said = {stem(w) for w in _words(sentence)}
        share = sum(any(_same_word(a, w) for w in said) for a in asked) / len(asked)
        if share > best_share:
            best, best_share = sentence, share
    if best_share < WRITTEN_FROM_SHARE:
        return None
    words = set(_words(best))
    for one in kinds:
        if words & _plural(one) and one not in words:
            written = " ".join(best.split())
            return f"it asks for one {one} where its context gives several ({written[:80]!r})"
    return None


# An identifier: a name a reader must write with its case ("Pdb", not "pdb").
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What may stand before a word that opens a sentence or a heading: a capital there is the
# sentence's, not the name's.
_OPENS = ".!?:#*=-"


def case_ambiguous(context: str, answer: str) -> str | None:
    """Why a one-word answer is right or wrong by its case alone, or None: the context
    writes the same word in another case inside a sentence, so the two are two names (the
    module "pdb" and its class "Pdb"). Issue 41's trial on Python's reference accepted
    "pdb" for "What is the name of the Python Debugger class?": the reading and the four
    critiques agreed with it, by case-blind comparison or by reading the module's name.

    >>> case_ambiguous('The module "pdb" is defined as the class "Pdb".', "pdb")
    "its answer 'pdb' is right or wrong by its case: the context also writes 'Pdb'"
    >>> case_ambiguous("Rules. rules are read first.", "Rules") is None
    True
    """
    token = answer.strip().strip("\"'`“”‘’").removesuffix("()")
    if not _IDENTIFIER.fullmatch(token):
        return None
    for found in _IDENTIFIER.finditer(context):
        word = found.group()
        if word == token or word.casefold() != token.casefold():
            continue
        if word[0].isupper() and word[1:] == token[1:] and _opens(context, found.start()):
            continue  # a sentence's or a heading's capital
        if token[0].isupper() and token[1:] == word[1:] and not _mid_sentence(context, token):
            continue  # the answer is the capitalized one, and only ever opens a sentence
        return (
            f"its answer {token!r} is right or wrong by its case: the context also writes {word!r}"
        )
    return None


def _opens(context: str, at: int) -> bool:
    """Whether the word at offset ``at`` of ``context`` opens a sentence or a heading (only
    spaces, quotes and an opening bracket stand between it and a full stop, a colon, a
    heading's marks or the start)."""
    before = context[:at].rstrip(" \t\n\"'`“”‘’(")
    return not before or before[-1] in _OPENS


def _mid_sentence(context: str, word: str) -> bool:
    """Whether ``context`` writes ``word`` (as a whole word) inside a sentence somewhere."""
    pattern = rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])"
    return any(not _opens(context, found.start()) for found in re.finditer(pattern, context))


# Words that say what kind of thing a statement is about ("the `name` parameter"), not
# what it says of it: a statement that adds only these to its question adds nothing.
_FORM_WORDS = "param parameter argument arg option attribute field function method class "
_FORM_WORDS += "property setting variable called named"
_FORM_STEMS = frozenset(_FORM_WORDS.split()) | {stem(w) for w in _FORM_WORDS.split()}


def restates_question(question: str, statement: str) -> str | None:
    """Why a statement answers its question only by repeating it, or None: every content
    word of ``statement`` is in ``question`` but for words that name a kind of thing
    ("parameter", "method"). "What is the name of the group command?" answered "The name
    parameter is the name of the group command." (issue 41's trial, from ``:param name:
    The name of the group command.``) asks for a name and is given none; a reader finds
    the statement in the context, so no other check drops it. A yes-or-no question is
    answered by a statement of its own words ("Is it thread-safe?" "It is not
    thread-safe."), so it is never taken for one.

    >>> restates_question("What is the name of the group command?",
    ...                   "The name parameter is the name of the group command.")
    "it only restates its question ('The name parameter is the name of the group command.')"
    >>> restates_question("What is the capital of France?", "Paris is the capital of France.")
    """
    if asks_for(question) == "yes or no":
        return None
    said = {stem(w) for w in content_words(statement)} - _FORM_STEMS
    if said <= {stem(w) for w in content_words(question)}:
        return f"it only restates its question ({statement[:60]!r})"
    return None


# A word is rare in a corpus when at most this share of its documents hold it (and at least
# one, its own): a question that holds one names something few documents are about.
RARE_SHARE = 0.1


# A code name joined by underscores ("__class_getitem__", "resilient_parsing"), kept whole:
# its parts ("class", "getitem") are words many pages of a library's reference share.
_SNAKE_NAME = re.compile(r"\w*[^\W\d_]\w*_\w*|\w*_\w*[^\W\d_]\w*")


def _subject_words(text: str) -> set[str]:
    """The stems of ``text``'s content words, a code name also split into its parts and
    kept whole: "click.testing.CliRunner" gives click, test, cli, runner and clirunner;
    "__contains__" gives contain and __contains__."""
    split = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    whole = {name.casefold() for name in _SNAKE_NAME.findall(text) if name.strip("_")}
    return {stem(w) for w in content_words(text) + content_words(split)} | whole


class CorpusWords:
    """Which documents of a corpus hold each word (by stem): what tells a word that names
    one document's subject from one every document uses."""

    def __init__(self, texts: Iterable[tuple[str, str]]) -> None:
        by_doc: dict[str, set[str]] = {}
        for doc_id, text in texts:
            by_doc.setdefault(doc_id, set()).update(_subject_words(text))
        self.words = by_doc
        self.documents = Counter(w for words in by_doc.values() for w in words)
        self.rare_at = max(1, int(RARE_SHARE * len(by_doc)))
        # A title word more than half the documents hold ("project report", the library's
        # name on every page) names none of them.
        self.common_at = max(1, len(by_doc) // 2)

    def rare_in(self, doc_id: str, text: str) -> list[str]:
        """The stems of ``text`` that document ``doc_id`` holds and that few documents
        hold (at most :data:`RARE_SHARE` of them, or only it)."""
        own = self.words.get(doc_id, set())
        found = _subject_words(text) & own
        return sorted(w for w in found if self.documents[w] <= self.rare_at)


def _same_word(a: str, b: str) -> bool:
    # "edit" in a title names what "the editor" of a question is.
    return a == b or (min(len(a), len(b)) >= 4 and (a.startswith(b) or b.startswith(a)))


# A name written in quotes or backticks: "while", `strict`, 'if'.
_QUOTED = re.compile(r"[\"'`“‘]([^\"'`“”‘’\s]+)[\"'`”’]")


def _quoted_names(text: str) -> set[str]:
    """The names ``text`` writes in quotes or backticks, casefolded."""
    return {name.casefold().removesuffix("()") for name in _QUOTED.findall(text)}


def names_no_subject(question: str, doc_id: str, title: str, corpus: CorpusWords) -> str | None:
    r"""Why a question does not say what it is about, or None: it shares no word with its
    document's title and none of its words that the document holds is rare in the corpus.
    "What is the name of the CLI?" (from ``click.version_option``), "What is the character
    set for the input and output data?" (``click.testing.CliRunner``): every reference page
    of a library has a name and data, and the critiques rated both 5 for standing alone.
    The title is what a page is about ("click.Path"); a rare word is a name the question
    gives in its place ("Rollo", "resilient_parsing"), so a question about a paragraph of a
    broad article ("Normans") passes by what it names.

    >>> corpus = CorpusWords([("a", "click.Path\nA path. file_okay: allow a file."),
    ...                       ("b", "click.File\nA file. lazy: allow opening it late.")])
    >>> names_no_subject("What allows a file?", "a", "click.Path", corpus)
    "it does not name its subject (no word of its title 'click.Path', none rare in the corpus)"
    >>> names_no_subject("What does file_okay allow?", "a", "click.Path", corpus)
    """
    if title.strip() and title.strip().casefold() in question.casefold():
        return None  # "`click.command`": common words, one name
    asked_words = {w.casefold() for w in re.findall(r"[\w.]+", question)} | _quoted_names(question)
    if _quoted_names(title) & asked_words:
        return None  # 'The "while" statement': a keyword is a name, though a common word
    asked = _subject_words(question)
    naming = [t for t in _subject_words(title) if corpus.documents[t] <= corpus.common_at]
    if any(_same_word(a, t) for a in asked for t in naming):
        return None
    if corpus.rare_in(doc_id, question):
        return None
    return (
        f"it does not name its subject (no word of its title {title[:60]!r}, "
        "none rare in the corpus)"
    )


# -- critiques -----------------------------------------------------------------------------

# What a re-ask of a critique or a reading tells the model to reply with (as the prompts
# do, in other words).
CRITIQUE_REPLY = "JSON with the four ratings"
READING_REPLY = 'JSON: {"answer": ..., "passage": ...}'


class Critique(CritiqueRating):
    """One critique as the model replies it: a rating from 1 (bad) to 5 (good), forgiving
    how a number is written, and why."""

    @field_validator("rating", mode="before")
    @classmethod
    def _number(cls, value: object) -> object:
        # "4", "4/5" and 4.0 are all a four; anything else is refused and re-asked.
        if isinstance(value, str):
            found = re.match(r"\s*([1-5])(?:\.0+)?\s*(?:/\s*5)?\s*$", value)
            return int(found.group(1)) if found else value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value


# A reason is asked only for a low rating: the 1.5B critic rated 102 of 103 recorded pairs 5
# on all four, and its four reasons for them were two thirds of the critique's tokens
# (issue 40). The reasons of the low ratings share one "why".
WHY_BELOW = 4
_CRITIQUE_SHAPE = (
    "{"
    + ", ".join(f'"{name}": <1-5>' for name in CRITIQUES)
    + f', "why": "<for a rating below {WHY_BELOW}: why, in a few words; else empty>"}}'
)


def critique_prompt(context: str, question: str, answer: str | None) -> Messages:
    """Ask for the four critiques of a question-answer pair written from ``context``, in
    one reply (``answer`` None: a question meant to be unanswered, whose stand-alone and
    specificity ratings alone are used). The instructions come first and never change (a
    cached prefix)."""
    return [
        system(
            "You review test questions written from a context. Rate the question and answer "
            "below on four criteria, each from 1 (bad) to 5 (good):\n"
            "stand_alone: 5 when someone who never saw the context understands what the "
            "question asks about, because it names its subject; 1 when it needs the context "
            "to be understood (it says 'the passage' or 'the text', or 'it' for an unnamed "
            "subject).\n"
            "specificity: the question is specific enough to find this context among many "
            "others; a question so general that many texts answer it gets 1.\n"
            "question_grounding: the context answers the question clearly and unambiguously; "
            "a question the context does not answer gets 1.\n"
            "answer_grounding: everything the answer says is stated in the context or follows "
            "from it; an answer the context does not support gets 1.\n"
            f"Reply with JSON only: {_CRITIQUE_SHAPE}"
        ),
        user(
            f"Context:\n{context.strip()}\n\nQuestion: {question}"
            + (f"\nAnswer: {answer}" if answer is not None else "")
        ),
    ]


def parse_critiques(reply: str) -> dict[str, Critique]:
    """The four critiques of a :func:`critique_prompt` reply: bare ratings and one ``why``
    for those below :data:`WHY_BELOW` (as asked), or each as ``[rating, reason]`` or
    ``{"rating": ..., "reason": ...}`` (as models also write). A reply cut at the token limit
    after its four ratings is read from them (asking again gets the same long reasons), by
    the one reader of cut replies (:func:`~ragaudit.llm.parsing.read_cut_object`): a reason
    is kept as far as it got, and one the cut left out says so. Raises ``ValueError``
    naming what is missing or out of range, so that it is re-asked."""
    try:
        value = extract_json(reply)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return _critiques(value)
    # No JSON, or a part of a cut one (a rating's list): what the reply completed.
    cut = read_cut_object(reply)
    try:
        if cut is None:
            raise ValueError("nothing to read")
        return _critiques(cut, cut=True)
    except ValueError:  # said as it always was, so that cached re-asks stay valid
        raise ValueError(f"expected a JSON object: {_CRITIQUE_SHAPE}") from None


def _critiques(value: dict[Any, Any], *, cut: bool = False) -> dict[str, Critique]:
    """The four critiques of a reply's JSON object (``cut``: of a reply that was cut, whose
    reasons the cut left out say so)."""
    lowered = {
        str(k).strip().lower().replace(" ", "_").replace("-", "_"): v for k, v in value.items()
    }
    why = lowered.get("why")
    why = why.strip() if isinstance(why, str) else ""
    out: dict[str, Critique] = {}
    for name in CRITIQUES:
        if name not in lowered:
            raise ValueError(f"no rating for {name}")
        item = lowered[name]
        own_reason = isinstance(item, list | tuple | dict)  # written as the old shape asked
        if isinstance(item, list | tuple):
            item = {"rating": item[0] if item else None, "reason": " ".join(map(str, item[1:]))}
        elif not isinstance(item, dict):
            item = {"rating": item}
        try:
            got = Critique.model_validate(item)
        except ValidationError:
            raise ValueError(f"{name}: the rating must be a whole number from 1 to 5") from None
        low = got.rating < WHY_BELOW
        if not got.reason and low and why:
            got = Critique(rating=got.rating, reason=why)
        if cut and not got.reason and (own_reason or low):  # a reason it owed, cut off
            got = Critique(rating=got.rating, reason=marked_cut(""))
        out[name] = got
    return out


def failed_critiques(critiques: dict[str, Critique], thresholds: dict[str, int]) -> list[str]:
    """The critiques rated below their threshold, as ``name rating<threshold (reason)``."""
    out = []
    for name in CRITIQUES:
        floor = thresholds.get(name, 1)
        got = critiques[name]
        if got.rating < floor:
            why = f" ({got.reason.strip()[:80]})" if got.reason.strip() else ""
            out.append(f"{name} {got.rating}<{floor}{why}")
    return out


# -- reading checks --------------------------------------------------------------------------

_UNKNOWN = frozenset(
    {"", "unknown", "none", "n/a", "na", "not stated", "not mentioned", "not given", "no answer"}
)


def reading_prompt(passages: Sequence[str], question: str) -> Messages:
    """Ask whether any of ``passages`` answers ``question``: the answer and the passage's
    number, or unknown. Checks that a question meant to be unanswerable is not answered by
    its context nor by the corpus passages most like it."""
    numbered = "\n\n".join(f"[{i}] {p.strip()}" for i, p in enumerate(passages, start=1))
    return [
        system(
            "You answer a question from numbered passages only. If a passage states or "
            "implies the answer, give the answer and that passage's number. If none does, "
            "the answer is unknown. Reply with JSON only: "
            '{"answer": "<the answer, or unknown>", "passage": <number, or null>}'
        ),
        user(f"Passages:\n{numbered}\n\nQuestion: {question}"),
    ]


class ReadingReply(BaseModel):
    """A reading: the answer found (None when unknown) and in which passage."""

    answer: str | None = None
    passage: int | None = None

    @field_validator("answer", mode="before")
    @classmethod
    def _unknown(cls, value: object) -> object:
        if value is None:
            return None
        text = " ".join(str(value).split()).strip(" .\"'")
        return None if text.casefold() in _UNKNOWN else text

    @field_validator("passage", mode="before")
    @classmethod
    def _number(cls, value: object) -> object:
        if isinstance(value, str):
            found = re.search(r"\d+", value)
            return int(found.group(0)) if found else None
        return value


def parse_reading(reply: str) -> ReadingReply:
    """The answer of a :func:`reading_prompt` reply; a bare "unknown" is read as such. A
    reply cut at the token limit inside its answer is read as far as it got (the model
    copying a long passage: asked again, it copies it again, and the candidate was lost
    to ``llm: check``, 3 of 45 in issue 41's trial); the answer is compared as that
    beginning. Raises ``ValueError`` for anything else that is not the JSON asked for.

    >>> parse_reading('```json\\n{"answer": "It edits the given text in the defined ed')
    ReadingReply(answer='It edits the given text in the defined ed', passage=None)
    """
    if reply.strip().strip(" .\"'").casefold() in _UNKNOWN:
        return ReadingReply()
    try:
        value = extract_json(reply)
    except ValueError:
        cut = read_cut_object(reply)
        if cut is None or not isinstance(cut.get("answer"), str):
            raise
        value = {**cut, "answer": cut["answer"].removesuffix(CUT)}
    if not isinstance(value, dict) or "answer" not in value:
        raise ValueError('expected {"answer": ..., "passage": ...}')
    try:
        return ReadingReply.model_validate({k: value.get(k) for k in ("answer", "passage")})
    except ValidationError:
        raise ValueError("passage must be a passage number or null") from None


def answers_agree(expected: str | None, found: str | None) -> bool:
    """Whether two answers read from one context are the same answer: both unknown, or
    every content word of one (numbers included) is in the other. The wording check reads
    a wording's answer from the context and compares it so (a small model asked "is this
    the same question?" says yes to most rewordings, docs/documents.md)."""
    if expected is None or found is None:
        return expected is None and found is None
    if "supported" in (answer_support(expected, found)[0], answer_support(found, expected)[0]):
        return True
    if content_words(expected) and content_words(found):
        return False
    # An answer of function words, single letters or symbols ("once", "x", "0o", "()")
    # has no content word to look up: its tokens, every word and run of symbols, are.
    mine, theirs = _answer_tokens(expected), _answer_tokens(found)
    return bool(mine and theirs) and (mine <= theirs or theirs <= mine)


def reading_agrees(question: str, reference: str, read: str | None) -> bool:
    """Whether the answer read for ``question`` is the pair's ``reference``, on what each
    says beyond the question: :func:`answers_agree` of the two with the question's words
    and symbols taken out. The words the question already holds agree with any answer
    that repeats them: issue 41's trial read "['--help']" for "What is the default name
    of the help parameter?", whose one content word, "help", is in the reference "The
    help_option_names parameter is used to define how the default help parameter is
    named", and the pair passed. A reading that says nothing beyond the question confirms
    nothing: in a later trial the model read "The Python Debugger" for "What is the
    purpose of the Python Debugger?" from a passage that never says what the reference
    did ("set breakpoints, inspect variables, and step through code"), and compared whole
    the reading's words were all in the reference. Where the reference alone says nothing
    beyond the question, the two are compared whole (a question that holds its answer is
    another check's).

    >>> question = "What is the default name of the help parameter?"
    >>> reading_agrees(question, "It defines how the default help parameter is named.", "--help")
    False
    >>> reading_agrees(question, "The help parameter is named --help by default.", "--help")
    True
    >>> reading_agrees("What does style('A', blink=True) do?",
    ...                "It styles the text 'A' with blinking text.",
    ...                "It prints the styled text 'A' with the blink style enabled.")
    True
    >>> reading_agrees("What is the purpose of the Python Debugger?",
    ...                "The Python Debugger lets users set breakpoints.", "The Python Debugger")
    False
    """
    if read is None:
        return False

    # Words as the support lookup splits them ("resolve_path" is resolve and path), by
    # stem ("blinking" is the question's "blink=True"), and runs of symbols.
    def tokens(text: str) -> list[str]:
        return re.findall(r"[^\W_]+|[^\w\s]+|_+", _unquoted(text))

    asked = {stem(t) for t in tokens(question)}

    # A sentence's stops and commas say nothing: "Bridge 1 is built." says no more than
    # the question "Is it recorded that bridge 1 is built?" by its full stop.
    def beyond(text: str) -> str:
        return " ".join(
            t for t in tokens(text) if stem(t) not in asked and not _PUNCTUATION.fullmatch(t)
        )

    mine, theirs = beyond(reference), beyond(read)
    if not _answer_tokens(mine):
        return answers_agree(reference, read)
    if not _answer_tokens(theirs):
        return False
    return answers_agree(mine, theirs)


# Tokens of sentence punctuation alone.
_PUNCTUATION = re.compile(r"[.,;:!?]+")

# Words too common to tell two short answers apart.
_ANSWER_STOP = frozenset(
    {"a", "an", "the", "of", "to", "in", "on", "at", "by", "for", "with", "it", "its"}
    | {"is", "are", "was", "were", "be"}
)


def _answer_tokens(text: str) -> set[str]:
    """The words and runs of symbols of an answer (quotes dropped), casefolded, without
    the commonest function words: ``'only once'`` is {only, once}, ``'f"{{'`` {f, {{}."""
    return {t for t in re.findall(r"\w+|[^\w\s]+", _unquoted(text)) if t not in _ANSWER_STOP}


def _unquoted(text: str) -> str:
    """``text`` casefolded, its quotes and backticks made spaces."""
    return re.sub(r"[\"'`“”‘’«»]", " ", text.casefold())


# -- what a wording must keep of its question -------------------------------------------------

# What a question asks for, by its question words (first match wins): a wording that asks
# for another kind of fact (a place for a time, a reason for a value) asks something else,
# however its answer reads. "what" and "which" ask for a thing of any kind.
_ASKS: tuple[tuple[str, str], ...] = (
    (r"\bwhy\b|\breason\b|\bwhat (?:makes|causes)\b", "a reason"),
    (r"\bhow (?:many|much|often|long|far|big|large|old)\b", "an amount"),
    (
        r"\bwhen\b|\b(?:what|which) (?:year|date|time|day|month|century)\b|\bat what point\b",
        "a time",
    ),
    (r"\bwhere\b|\bin what (?:place|country|city|region)\b", "a place"),
    (r"\bwho\b|\bwhom\b|\bwhose\b", "a person"),
    (r"\bhow\b", "a way"),
    (r"\bwhat\b|\bwhich\b", "a thing"),
)
# A question without a question word that opens with one of these asks yes or no.
_YES_NO = re.compile(
    r"^(?:is|are|was|were|do|does|did|can|could|will|would|should|has|have|had|may|must)\b",
    re.IGNORECASE,
)
# A token a rewording must keep as written: a number, code (a token holding a symbol,
# e.g. r"\", -7, //, s[0], 1_000_000) or a name (a capitalized word after the first). A
# hyphen or an apostrophe between letters is part of a word ("one-element", "river's").
_SYMBOL = re.compile(r"[0-9\\\"'`\[\](){}<>=%/*+\-_.|&^~@#$]")
_WORDLIKE = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", re.UNICODE)


def asks_for(question: str) -> str | None:
    """What kind of fact ``question`` asks for, by its question words ("a time", "a
    reason", ...; "yes or no" for a question opening with a verb), or None when it has
    no question word (a short query such as "Octal literal prefix?").

    >>> asks_for("When are default values evaluated?"), asks_for("Is 07 valid?")
    ('a time', 'yes or no')
    """
    text = question.casefold()
    for pattern, kind in _ASKS:
        if re.search(pattern, text):
            return kind
    return "yes or no" if _YES_NO.match(question.strip()) else None


def kept_tokens(question: str) -> set[str]:
    """The tokens of ``question`` a rewording must keep as written: numbers, code and names
    (capitalized words after the first), without the punctuation that ends a sentence.

    >>> sorted(kept_tokens("Why does s[0] = 'x' fail in one-element Python code?"))
    ["'x'", '=', 'python', 's[0]']
    >>> sorted(kept_tokens("Who directs the Quoumplo Observatory's report?"))
    ['observatory', 'quoumplo']
    """
    out = set()
    for i, raw in enumerate(question.split()):
        token = raw.rstrip("?!,;:")
        if token.endswith(".") and not re.search(r"[0-9]\.$", token):
            token = token.rstrip(".")
        if not token:
            continue
        if _WORDLIKE.fullmatch(token):
            if i > 0 and token[0].isupper():
                # A name, whatever case a wording gives it; its possessive is the name
                # ("the Quoumplo Observatory's report" keeps "Observatory").
                out.add(re.sub(r"['’]s$", "", token.casefold()))
        elif _SYMBOL.search(token):
            out.add(token)
    return out


def wording_drift(question: str, wording: str) -> str | None:
    """Why ``wording`` asks something other than ``question`` whatever its answer reads, or
    None: it asks for another kind of fact (a reason where the question asks for a time;
    yes or no where it asks for a value), or it leaves out a number, a piece of code or a
    name that the question has, or adds a number or code (the rewording prompt asks to
    keep them as written). A
    small reader answers a drifted wording with the question's answer when both point at
    one sentence ("Why is the backslash not a valid string literal?" for a question about
    ``r"\"``); these decide before it is asked. docs/documents.md states the rates."""
    asked, worded = asks_for(question), asks_for(wording)
    # "what" and "which" ask for any kind of fact: "What has shortened the Rhine?" and
    # "Why has the Rhine been shortened?" are people's paraphrases in SQuAD.
    if asked and worded and asked != worded and "a thing" not in (asked, worded):
        return f"it asks for {worded}, the question for {asked}"
    if "yes or no" in (asked, worded) and asked != worded and None not in (asked, worded):
        return f"it asks for {worded}, the question for {asked}"
    mine, theirs = kept_tokens(question), kept_tokens(wording)
    words = {w.casefold() for w in _WORDLIKE.findall(wording)}  # a name in any case
    lost = sorted((mine - theirs) - words, key=question.casefold().find)
    if lost:
        return f"it leaves out {lost[0]!r} of the question"
    # Code and numbers it adds (a name it adds may be the subject's fuller name).
    added = sorted(t for t in theirs - mine if not _WORDLIKE.fullmatch(t))
    if added:
        return f"it adds {added[0]!r}, which the question does not have"
    return None


# -- near-duplicates -------------------------------------------------------------------------


def near_duplicate(
    vector: np.ndarray, kept: np.ndarray, threshold: float
) -> tuple[int, float] | None:
    """The row of ``kept`` (unit vectors, one per accepted question) closest to ``vector``
    and its cosine, when that cosine reaches ``threshold``; else None."""
    if kept.size == 0:
        return None
    sims = kept @ vector
    best = int(np.argmax(sims))
    return (best, float(sims[best])) if sims[best] >= threshold else None


__all__ = [
    "CRITIQUES",
    "CRITIQUE_REPLY",
    "RARE_SHARE",
    "READING_REPLY",
    "CorpusWords",
    "Critique",
    "ReadingReply",
    "answer_in_question",
    "answer_support",
    "answers_agree",
    "asks_for",
    "case_ambiguous",
    "content_words",
    "critique_prompt",
    "failed_critiques",
    "kept_tokens",
    "names_no_subject",
    "near_duplicate",
    "one_of_several",
    "parse_critiques",
    "parse_reading",
    "reading_agrees",
    "reading_prompt",
    "restates_question",
    "statement_not_stated",
    "stem",
    "word_share",
    "wording_drift",
]
