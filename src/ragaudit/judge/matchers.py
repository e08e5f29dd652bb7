"""Deterministic answer matching: decide what can be decided without an LLM.

The matchers only ever decide **Correct** (the reference is in the response: exactly,
contained, as the same number in another format, as the same date in another format, or
every value of a set answer) or **Incorrect** for a refusal or an empty response when an
answer exists, for a date asked and a response without a single digit, or for a response
that says nothing the question did not (its entity's name, "Yes, I can help you find
that.") where the reference does. Everything else is left undecided for the LLM judge: a
response that does not contain the reference may still say it in other words.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
import unicodedata
from dataclasses import dataclass

from ragaudit.documents.checks import stem
from ragaudit.records.models import Reference, Scalar

# An article is a word before another word ("the Banking industry"), matched before case
# is folded: a capital "A" is a letter ("Grade A", "Vitamin A", "Series A funding") except
# where a sentence starts; and nothing is an article next to a kept symbol ("Q&A", "A+").
_ARTICLES = re.compile(
    r"(?<![\w&+#@$])(?:the|an|a|The|An|THE|AN)(?=\s+\w)|(?:^|(?<=[.!?:;]\s))A(?=\s+\w)"
)
# ASCII text (the common case) by one regex: what is not a word character, one of
# "%.-/", or an ASCII symbol that tells answers apart (see _meaningful) becomes a space.
_NON_WORD_ASCII = re.compile(r"[^\w%.\-/+#&@$<=>^`|~]+")
_REFUSAL = re.compile(
    r"(\bi (do not|don't|cannot|can't) (know|answer|find|say|determine)|\bi (do not|don't) "
    r"have (access|information|any information|the information|enough information)|"
    r"\bas an ai\b|\bunable to "
    r"(answer|find|determine)|\bnot (provided|mentioned|available|specified|stated|given) in"
    r"|\bno (information|mention|data) (about|on|regarding|is|available)|\bcannot be "
    r"(determined|found|answered)|\b(do|does) not (contain|mention|provide|specify|say|"
    r"include)|^n/?a$|"
    r"^(unknown|none)\.?$)",
    re.IGNORECASE,
)
_NUMBER = re.compile(
    r"(?<![\w.])[-+]?\d{1,3}(?:[,\u00a0\u202f ]\d{3})+(?:\.\d+)?(?![\w])"
    r"|(?<![\w.])[-+]?\d+(?:\.\d+)?(?![\w])"
)
_MONTHS = {
    m: i
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for m in names
}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_DAY_MONTH_YEAR = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\s*,?\s+(\d{{4}})\b", re.IGNORECASE
)
_MONTH_DAY_YEAR = re.compile(
    rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\s*,?\s+(\d{{4}})\b", re.IGNORECASE
)


@dataclass(frozen=True)
class Decision:
    """What the matchers concluded: decided or not, the verdict, and which rule decided."""

    decided: bool
    correct: bool | None
    rule: str


UNDECIDED = Decision(False, None, "undecided")


# Characters that are not letters or digits but tell answers apart ("C++" is not "C",
# "AT&T" is not "AT", an emoji is an answer): normalization keeps them, and a match may
# not stop next to one.
_MEANINGFUL = frozenset("+#&@$")


def _meaningful(ch: str) -> bool:
    """A symbol normalization must keep: the listed ones, and every Unicode symbol
    (maths, currency, emoji and other pictographs)."""
    return ch in _MEANINGFUL or unicodedata.category(ch).startswith("S")


def normalize(text: str) -> str:
    """Case-, accent-width-, punctuation- and article-insensitive form of a text; symbols
    that distinguish answers (``C++``, ``C#``, ``AT&T``, emoji) are kept."""
    text = _ARTICLES.sub(" ", unicodedata.normalize("NFKC", text)).casefold()
    if text.isascii():
        text = _NON_WORD_ASCII.sub(" ", text)
    else:
        text = "".join(
            ch if ch.isalnum() or ch in "_%.-/" or _meaningful(ch) else " " for ch in text
        )
    return " ".join(text.replace("-", " ").split()).strip(" .")


def numbers(text: str) -> list[float]:
    """Numbers written in a text, whatever their thousands separators.

    >>> numbers("1,000 staff and 2.5 million in 2023")
    [1000.0, 2.5, 2023.0]
    """
    return [n for _, n in _numbers_at(text)]


def _numbers_at(text: str) -> list[tuple[int, float]]:
    """Each number written in a text, with where it starts."""
    out = []
    for match in _NUMBER.finditer(text):
        cleaned = re.sub(r"[,\u00a0\u202f ]", "", match.group())
        try:
            out.append((match.start(), float(cleaned)))
        except ValueError:
            continue
    return out


def dates(text: str) -> set[dt.date]:
    """Dates written as 2023-03-01, 1 March 2023 or March 1, 2023 (and abbreviations)."""
    found: set[dt.date] = set()

    def add(year: str, month: int, day: str) -> None:
        with contextlib.suppress(ValueError):
            found.add(dt.date(int(year), month, int(day)))

    for y, m, d in _ISO.findall(text):
        add(y, int(m), d)
    for d, m, y in _DAY_MONTH_YEAR.findall(text):
        add(y, _MONTHS[m.lower()], d)
    for m, d, y in _MONTH_DAY_YEAR.findall(text):
        add(y, _MONTHS[m.lower()], d)
    return found


# "No value is recorded", "it is not listed", "unknown": what a truthful answer to a
# question whose answer cell is NULL says.
_NOT_RECORDED = re.compile(
    r"\b(not|never|isn't|wasn't) (been )?(recorded|listed|given|specified|stated|entered|"
    r"filled in|on record)\b|\bno (value|record|entry) (is |was )?(recorded|listed|given|"
    r"on record|for)\b|^(unknown|not recorded|no value)\.?$",
    re.IGNORECASE,
)
# A "not recorded" answer that says more than this may be giving a value too: the LLM
# judge reads it.
_NOT_RECORDED_MAX_WORDS = 15


def is_refusal(response: str) -> bool:
    """An empty answer, or one that says it does not know."""
    return not response.strip() or bool(_REFUSAL.search(response.strip()))


def _as_number(value: Scalar) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and re.fullmatch(r"[-+]?\d[\d,\s]*(\.\d+)?", value.strip()):
        found = numbers(value)
        return found[0] if len(found) == 1 else None
    return None


# Words that deny what follows them ("not Paris", "isn't Paris" (normalized "isn t"),
# "rather than Paris", "more than 5"): a reference found just after one is not an answer
# the response gives, so that occurrence decides nothing and the LLM judge reads it.
_DENIALS = frozenset(
    {"not", "never", "no", "neither", "nor", "t", "than", "except", "unlike", "without"}
)
_DENIAL_WINDOW = 3  # words before the value


def _denied(before: str) -> bool:
    """Whether the text just before a found value denies it (``before`` is the response up
    to the value)."""
    clause = re.split(r"[.!?;:](?:\s|$)", before)[-1]  # a denial ends with its sentence
    words = normalize(clause).split()[-_DENIAL_WINDOW:]
    joined = " ".join(words)
    return bool(_DENIALS.intersection(words)) or "instead of" in joined


def _value_matches(value: Scalar, response: str, norm_response: str) -> str | None:
    """The rule by which ``value`` is found in the response (in an occurrence that no
    word just before it denies), or None."""
    text = str(value)
    norm_value = normalize(text)
    if norm_value and norm_value == norm_response:
        return "exact"
    # Word boundaries, and no decimal continuation: "10" is not in "10.5"; a kept symbol
    # is part of the word: "c" is not in "c++".
    symbols = "".join(sorted({ch for ch in norm_response if _meaningful(ch)}))
    word = rf"[\w{re.escape(symbols)}]" if symbols else r"\w"
    if norm_value and any(
        not _denied(norm_response[: m.start()])
        for m in re.finditer(
            rf"(?<!{word})(?<!\d\.){re.escape(norm_value)}(?!{word})(?!\.\d)", norm_response
        )
    ):
        return "contains"
    number = _as_number(value)
    if number is not None and any(
        abs(n - number) <= max(1e-9, 1e-6 * abs(number)) and not _denied(response[:start])
        for start, n in _numbers_at(response)
    ):
        return "number"
    value_dates = dates(text)
    if value_dates and value_dates & dates(response):
        return "date"
    return None


def match(reference: Reference, response: str | None, *, question: str | None = None) -> Decision:
    """Decide Correct (reference found), Incorrect (refusal while an answer exists; with
    the ``question``, a response that says nothing beyond it), or leave it to the LLM
    judge."""
    response = response or ""
    if not reference.values:  # unanswerable: saying so is the right answer
        return Decision(True, True, "refusal") if is_refusal(response) else UNDECIDED
    if not response.strip():
        return Decision(True, False, "refusal")
    if reference.is_null:
        # The row exists and the value is not recorded: saying so is the right answer
        # (such groups are asked only with generate.include_null).
        says_so = is_refusal(response) or _NOT_RECORDED.search(response.strip())
        if says_so and len(response.split()) <= _NOT_RECORDED_MAX_WORDS:
            return Decision(True, True, "not-recorded")
        return UNDECIDED
    norm_response = normalize(response)
    rules = [_value_matches(v, response, norm_response) for v in reference.values if v is not None]
    found = bool(rules) and all(rules)
    if is_refusal(response):
        # A hedge that still gives the answer ("I have no access, but it is X") is for the
        # LLM judge; a plain refusal is wrong when an answer exists.
        # Numbers inside a refusal are mostly list numbering, not answers.
        hedged = any(
            rule is not None and _as_number(value) is None
            for rule, value in zip(
                rules, [v for v in reference.values if v is not None], strict=True
            )
        )
        return UNDECIDED if hedged else Decision(True, False, "refusal")
    if found:
        rule = rules[0] if len(rules) == 1 else "set"
        return Decision(True, True, rule or "contains")
    if _no_date_given(reference, response):
        return Decision(True, False, "no-date")
    if question is not None and _question_only(question, reference, response):
        return Decision(True, False, "question-only")
    return UNDECIDED


def gives_answer(reference: Reference, response: str | None) -> bool:
    """Whether the matchers decide that ``response`` gives the ``reference`` answer: for a
    check that trusts a sure match only (an undecided response does not give it), such as
    the wording verifier's reading comprehension.

    >>> gives_answer(Reference.from_values(["Oslo"]), "It is in Oslo.")
    True
    >>> gives_answer(Reference.from_values(["Oslo"]), "Somewhere in Norway.")
    False
    """
    decision = match(reference, response)
    return decision.decided and bool(decision.correct)


# Words of a reply that carry no answer: the courtesies of a model that talks about the
# question instead of answering it ("Yes, you may request the details of ...").
# fmt: off
_FILLER = frozenset({
    "yes", "sure", "certainly", "ok", "okay", "please", "glad", "happy", "here", "you",
    "your", "i", "me", "my", "we", "can", "may", "could", "would", "will", "help",
    "provide", "find", "give", "tell", "request", "details", "detail", "information", "a",
    "an", "the", "of", "to", "for", "and", "in", "on", "at", "with", "as", "by", "from",
    "about", "it", "its", "this", "that", "is", "are", "was", "be",
})
# fmt: on


def _beyond(question: str, text: str) -> set[str]:
    """The words of ``text`` (by crude stem) that the question does not hold, filler
    left out."""

    def words(t: str) -> set[str]:
        return {stem(w) for w in re.findall(r"[^\W_]+", normalize(t))}

    return {w for w in words(text) - words(question) if w not in _FILLER}


def _question_only(question: str, reference: Reference, response: str) -> bool:
    """The response says nothing its question did not, and the reference does: it names
    the question's entity ("Walmart" for Walmart's industry) or answers a request with
    "Yes". The 1.5B judge credited 32 such replies of the embedded model asked Spider-Open's
    questions without retrieval (docs/analyze.md), reasoning from what it knows of the
    entity ("The sector linked to ExxonMobil is oil and gas").

    >>> _question_only("Industry of 'Walmart'?", Reference.from_values(["Retailing"]), "Walmart.")
    True
    >>> _question_only("Industry of 'Walmart'?", Reference.from_values(["Retailing"]), "Retail")
    False
    >>> _question_only("Industry of 'Bank of China'?", Reference.from_values(["Banking"]), "Bank")
    False
    """
    asked = " ".join(str(v) for v in reference.values if v is not None)
    return not _beyond(question, response) and bool(_beyond(question, asked))


def _no_date_given(reference: Reference, response: str) -> bool:
    """A date was asked and the response has no digit at all: whatever it names (a small
    model often answers a project's name), it is not the date."""
    values = [v for v in reference.values if v is not None]
    return (
        len(values) == 1
        and bool(dates(str(values[0])))
        and not any(ch.isdigit() for ch in response)
    )
