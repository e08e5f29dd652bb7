"""Deterministic answer matching: decide what can be decided without an LLM.

The matchers only ever decide **Correct** (the reference is in the response: exactly,
contained, as the same number in another format, as the same date in another format, or
every value of a set answer) or **Incorrect** for a refusal or an empty response when an
answer exists, for a date asked and a response without a single digit, or for a response
that says nothing the question did not (its entity's name, "Yes, I can help you find
that.") where the reference does. Everything else is left undecided for the LLM judge: a
response that does not contain the reference may still say it in other words. A response
that holds the reference but also offers another value of its kind beside it ("either X or
Y", "X, Y and Z" where one value is asked) or denies it ("not X") is left undecided too,
with the reason (:attr:`Decision.why`), since a matcher must be right whenever it decides.
A number is matched as the quantity it says, with its sign and its scale: "-12", "minus
12" and "12 thousand" do not answer 12, and a range ("12-13") names another value.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import re
import unicodedata
from collections.abc import Sequence
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
# A number as written, its sign with it ("-12", "\u221212" with the minus sign): never a
# piece of a longer one ("1" is not in "1.2k", nor "1.2" in "1.2.3").
_NUMBER = re.compile(
    r"(?<![\w.])[-+\u2212]?\d{1,3}(?:[,\u00a0\u202f ]\d{3})+(?:\.\d+)?(?![\w])(?!\.\d)"
    r"|(?<![\w.])[-+\u2212]?\d+(?:\.\d+)?(?![\w])(?!\.\d)"
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


# Why the matchers leave to the LLM judge a response that holds the reference, worded for
# the judge's prompt ("Note: the response ...").
NAMES_ANOTHER = "names another value beside the true answer"
DENIES = "seems to deny the true answer"


@dataclass(frozen=True)
class Decision:
    """What the matchers concluded: decided or not, the verdict, and which rule decided;
    for an undecided response that holds the reference, ``why`` they declined it
    (:data:`NAMES_ANOTHER` or :data:`DENIES`), for the LLM judge to be told."""

    decided: bool
    correct: bool | None
    rule: str
    why: str | None = None


UNDECIDED = Decision(False, None, "undecided")


# Characters that are not letters or digits but tell answers apart ("C++" is not "C",
# "AT&T" is not "AT", an emoji is an answer): normalization keeps them, and a match may
# not stop next to one.
_MEANINGFUL = frozenset("+#&@$")


def _meaningful(ch: str) -> bool:
    """A symbol normalization must keep: the listed ones, and every Unicode symbol
    (maths, currency, emoji and other pictographs)."""
    return ch in _MEANINGFUL or unicodedata.category(ch).startswith("S")


# Currency symbols, which may stand between a number's sign and its digits ("-$12").
_CURRENCY = "$\u20ac\u00a3\u00a5\u20b9"
# A hyphen joins or separates words ("Blue-Horizon", "2024-03-01", "12-13"), except the
# sign of a number: one that opens a word before a digit or an amount ("-12", "-$12").
_HYPHEN = re.compile(rf"-(?![{_CURRENCY}]?\d)|(?<=[^\s{_CURRENCY}])-")
# The minus sign (U+2212) before a digit is the sign a hyphen writes.
_MINUS_SIGN = re.compile(rf"\u2212(?=[{_CURRENCY}]?\d)")


def normalize(text: str) -> str:
    """Case-, accent-width-, punctuation- and article-insensitive form of a text; symbols
    that distinguish answers (``C++``, ``C#``, ``AT&T``, emoji) are kept, and so is the
    sign of a number ("-12" is not "12")."""
    text = _ARTICLES.sub(" ", unicodedata.normalize("NFKC", text)).casefold()
    text = _MINUS_SIGN.sub("-", text)
    if text.isascii():
        text = _NON_WORD_ASCII.sub(" ", text)
    else:
        text = "".join(
            ch if ch.isalnum() or ch in "_%.-/" or _meaningful(ch) else " " for ch in text
        )
    return " ".join(_HYPHEN.sub(" ", text).split()).strip(" .")


def numbers(text: str) -> list[float]:
    """Numbers written in a text, whatever their thousands separators.

    >>> numbers("1,000 staff and 2.5 million in 2023")
    [1000.0, 2.5, 2023.0]
    """
    return [n for _, n in _numbers_at(text)]


def _numbers_at(text: str) -> list[tuple[int, float]]:
    """Each number written in a text, with where it starts."""
    return [(start, n) for start, _, n in _number_spans(text)]


def _number_spans(text: str) -> list[tuple[int, int, float]]:
    """Each number written in a text, with where it starts and ends."""
    out = []
    for match in _NUMBER.finditer(text):
        cleaned = re.sub(r"[,\u00a0\u202f ]", "", match.group()).replace("\u2212", "-")
        try:
            out.append((match.start(), match.end(), float(cleaned)))
        except ValueError:
            continue
    return out


def dates(text: str) -> set[dt.date]:
    """Dates written as 2023-03-01, 1 March 2023 or March 1, 2023 (and abbreviations)."""
    return {day for _, _, day in _date_spans(text)}


def _date_spans(text: str) -> list[tuple[int, int, dt.date]]:
    """Each date written in a text (as :func:`dates` reads them), with where it starts
    and ends."""
    found: list[tuple[int, int, dt.date]] = []

    def add(span: re.Match[str], year: str, month: int, day: str) -> None:
        with contextlib.suppress(ValueError):
            found.append((span.start(), span.end(), dt.date(int(year), month, int(day))))

    for m in _ISO.finditer(text):
        add(m, m[1], int(m[2]), m[3])
    for m in _DAY_MONTH_YEAR.finditer(text):
        add(m, m[3], _MONTHS[m[2].lower()], m[1])
    for m in _MONTH_DAY_YEAR.finditer(text):
        add(m, m[3], _MONTHS[m[1].lower()], m[2])
    return found


# -- a number read with its sign, its scale and what stands next to it --------------------
#
# "-12", "minus 12", "12 thousand", "12 000" and "12-13" all hold the characters "12"; none
# of them answers 12. A number found in a response is the reference's only when it reads
# as the same quantity: with its sign (a "-" or a minus sign attached, "minus" or
# "negative" before it), with its scale (a word multiplies it: "12 thousand" is 12,000; an
# abbreviation such as "k", "m" or "bn" qualifies it, so "12 m" equals "12 m" alone),
# whole ("12" is not in "12 000", nor "3" in "2024-03-01"), and not a term of a sum or of
# date arithmetic ("12 minus 3", "2024-03-01 minus one day"). A range ("12-13", "12 to 13")
# holds the reference beside another value: the matchers leave it to the judge, saying so.

# A sign before an amount ("-$12", "minus 12", "negative $12"), and a dash of another kind
# (en dash, figure dash) before a number, which may be a minus or a separator.
_SIGN_BEFORE = re.compile(
    rf"(?:(?<![\w.])(?P<minus>[-\u2212])[{_CURRENCY}]?"
    rf"|\b(?P<word>minus|negative)\s+(?:[{_CURRENCY}]\s*)?"
    rf"|(?<![\w.])(?P<dash>[\u2010-\u2015\ufe58\ufe63\uff0d])[{_CURRENCY}]?)$",
    re.IGNORECASE,
)
_SCALE_WORDS = {
    "hundred": 1e2,
    "thousand": 1e3,
    "million": 1e6,
    "billion": 1e9,
    "trillion": 1e12,
}
# A scale after a number: a word ("thousand", "millions") or an abbreviation ("k", "M",
# "bn", "mn", "lakh"), apart from the number (an attached one, "12k", makes no number).
_SCALE_AFTER = re.compile(
    r"\s*(?:(?P<word>hundred|thousand|million|billion|trillion)(?P<rest>\w*)"
    r"|(?P<abbr>k|m|mn|mln|mio|b|bn|tn|lakhs?|crores?)\b(?![.,]\d))",
    re.IGNORECASE,
)
# A temperature below zero: the number's sign, after it.
_BELOW_ZERO = re.compile(
    r"\s*(?:\u00b0\s*[cf]?\s*|degrees?\s+(?:(?:celsius|fahrenheit|c|f)\s+)?)?below\s+zero\b",
    re.IGNORECASE,
)
# How many days, weeks ... date arithmetic adds ("plus two weeks", "three days after").
_COUNT = (
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a\s+few|"
    r"few|several|some)"
)
_PERIOD = (
    r"(?:business\s+|working\s+|calendar\s+)?(?:days?|weeks?|fortnights?|months?|years?|quarters?)"
)
_SHIFT_AFTER = re.compile(
    rf"^\s*(?:(?:plus|minus|[-+\u2212\u2013])\s*{_COUNT}\s+{_PERIOD}\b"
    rf"|\+|[*x\u00d7\u00f7]\s*[{_CURRENCY}]?\s*\d"
    rf"|(?:minus|times|multiplied\s+by|divided\s+by)\s+(?:[{_CURRENCY}]?\s*\d|{_COUNT}\b))",
    re.IGNORECASE,
)
_SHIFT_BEFORE = re.compile(
    rf"(?:\b{_PERIOD}\s+(?:after|before|from|following|preceding|prior\s+to|ahead\s+of|"
    rf"later\s+than|earlier\s+than)\s+(?:the\s+)?"
    rf"|(?:\d%?|\))\s*[+*x\u00d7\u00f7]\s*|\b(?:times|multiplied\s+by|divided\s+by)\s+)"
    rf"[{_CURRENCY}]?\s*$",
    re.IGNORECASE,
)
# A range: the value, a dash or "to", and another number ("12-13", "12 to 13", "12% -
# 15%", "1 July 2021 - 15 July 2021"), either way round.
_RANGE_JOIN = r"(?:[-~\u2010-\u2015\u2212\ufe58\ufe63\uff0d]|to|till|until|through|thru)"
_RANGE_AFTER = re.compile(
    rf"^\s*(?:%|[^\W\d_]{{1,4}}\.?)?\s*{_RANGE_JOIN}\s*[{_CURRENCY}]?\s*[-+\u2212]?\d",
    re.IGNORECASE,
)
_DATE_RANGE_AFTER = re.compile(rf"^\s*{_RANGE_JOIN}\s*(?:\d|{_MONTH}\s)", re.IGNORECASE)
_RANGE_BEFORE = re.compile(
    rf"\d\s*(?:%|[^\W\d_]{{1,4}}\.?)?\s*{_RANGE_JOIN}\s*[{_CURRENCY}]?\s*$", re.IGNORECASE
)
_ENDS_IN_NUMBER = re.compile(
    r"(?:\d%?|\b(?:hundred|thousand|million|billion|trillion)s?)$", re.IGNORECASE
)
_OPENS_WITH_NUMBER = re.compile(rf"^(?:[{_CURRENCY}]\s*)?[-+\u2212]?\d")


@dataclass(frozen=True)
class _Quantity:
    """A number as a text writes it: where it is written (``start`` to ``end``, its sign
    word and its scale word with it; ``digits``, the number alone), its value (signed,
    times its scale word) and ``mark``, what else qualifies it: a scale abbreviation
    ("k", "bn"), "~" for a dash that may be a minus."""

    start: int
    end: int
    digits: tuple[int, int]
    value: float
    mark: str = ""

    def same(self, other: _Quantity) -> bool:
        """Whether both say one quantity: the same value and the same qualifier."""
        return self.mark == other.mark and _equal(self.value, other.value)


def _equal(a: float, b: float) -> bool:
    return abs(a - b) <= max(1e-9, 1e-6 * abs(b))


@functools.lru_cache(maxsize=4096)
def _quantities(text: str) -> tuple[_Quantity, ...]:
    """Each number written in a text, read with its sign and its scale (see above)."""
    out = []
    for start, end, n in _number_spans(text):
        digits_start = start + (text[start] in "+-\u2212")
        mark = ""
        if digits_start == start:  # no sign attached: one may stand before it
            # A sign is a few characters before the digits ("negative $ 12").
            sign = _SIGN_BEFORE.search(text, max(0, start - 16), start)
            if sign and (sign["minus"] or sign["word"]):
                n, start = -n, sign.start()
            elif sign and sign["dash"]:
                mark, start = "~", sign.start()
        digits_end = end
        below = _BELOW_ZERO.match(text, end)
        if below:  # "12 below zero", "12 degrees below zero"
            n, end = -n, below.end()
        scale = None if below else _SCALE_AFTER.match(text, end)
        if scale and scale["word"]:
            if scale["rest"].casefold() in ("", "s"):
                n *= _SCALE_WORDS[scale["word"].casefold()]
            else:  # "thousandths"
                mark += scale["word"].casefold() + scale["rest"].casefold()
            end = scale.end()
        elif scale:
            mark += scale["abbr"].casefold()
            end = scale.end()
        out.append(_Quantity(start, end, (digits_start, digits_end), n, mark))
    return tuple(out)


def _reads_as(value: Scalar, text: str, start: int, end: int) -> bool:
    """Whether the value found written at ``text[start:end]`` (as its text or as its
    number) is the value there: each number written there is whole and is the value's own,
    with its sign and its scale ("-12", "minus 12", "12 thousand" are not 12; "12" in
    "12 000" or in "2024-03-12" is no number of its own), and the value is no term of a sum
    or of date arithmetic ("12 minus 3", "2024-03-01 minus one day")."""
    written = text[start:end]
    if not any(ch.isdigit() for ch in written):
        return True
    inside = [q for q in _quantities(text) if q.digits[0] < end and q.digits[1] > start]
    if any(q.digits[0] < start or q.digits[1] > end for q in inside):
        return False  # a piece of a longer number
    number = _as_number(value)
    own = (_Quantity(0, 0, (0, 0), number),) if number is not None else _quantities(str(value))
    if len(own) != len(inside) or not all(a.same(b) for a, b in zip(own, inside, strict=True)):
        return False
    if not dates(str(value)):
        for day_start, day_end, _ in _date_spans(text):
            inner = day_start <= start and end <= day_end and (day_start, day_end) != (start, end)
            # A date's year, or its ISO year and month, still answers them.
            year = re.fullmatch(r"\d{4}", written) or (
                start == day_start and re.fullmatch(r"\d{4}-\d{1,2}", written)
            )
            if inner and not year:
                return False
    return not _shifted(text, start, end)


def _extent(text: str, start: int, end: int) -> tuple[int, int]:
    """Where the value found at ``text[start:end]`` stands, with its sign and scale words
    and the whole date it is part of."""
    for q in _quantities(text):
        if q.digits[0] < end and q.digits[1] > start:
            start, end = min(start, q.start), max(end, q.end)
    for day_start, day_end, _ in _date_spans(text):
        if day_start <= start and end <= day_end:
            start, end = day_start, day_end
    return start, end


def _shifted(text: str, start: int, end: int) -> bool:
    """A number or a date that a sum or date arithmetic changes: "12 minus 3", "3 + 12",
    "2024-03-01 minus one day", "two weeks after 2024-03-01", and "12+"."""
    start, end = _extent(text, start, end)
    written = text[start:end]
    return bool(
        (_ENDS_IN_NUMBER.search(written) and _SHIFT_AFTER.match(text[end:]))
        or (_OPENS_WITH_NUMBER.match(written) and _SHIFT_BEFORE.search(text[:start]))
        or (dates(written) and _SHIFT_BEFORE.search(text[:start]))
    )


def _ranged(text: str, start: int, end: int) -> bool:
    """The value found at ``text[start:end]`` is an end of a range of numbers or dates:
    "12-13", "12 to 13", "from 2021-07-01 to 2021-08-01"."""
    start, end = _extent(text, start, end)
    written = text[start:end]
    if dates(written):  # "1 July 2021 - 15 July 2021", "March 1, 2024 to March 5, 2024"
        return bool(_DATE_RANGE_AFTER.match(text[end:]) or _RANGE_BEFORE.search(text[:start]))
    return bool(
        (_ENDS_IN_NUMBER.search(written) and _RANGE_AFTER.match(text[end:]))
        or (_OPENS_WITH_NUMBER.match(written) and _RANGE_BEFORE.search(text[:start]))
    )


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
    to the value, as written: its punctuation ends a denial's clause)."""
    # A denial ends with its clause: "Not Lyon: Paris", "No, it is Paris", "not Lyon but
    # Paris" deny Lyon or nothing, not Paris.
    clause = re.split(r"[.!?;:,](?:\s|$)|\bbut\b", before, flags=re.IGNORECASE)[-1]
    words = normalize(clause).split()[-_DENIAL_WINDOW:]
    joined = " ".join(words)
    return bool(_DENIALS.intersection(words)) or "instead of" in joined


def _value_matches(value: Scalar, response: str, norm_response: str) -> str | None:
    """The rule by which ``value`` is found in the response (in an occurrence that no
    word just before it denies, and that reads as the value: see :func:`_reads_as`), or
    None."""
    text = str(value)
    norm_value = normalize(text)
    if norm_value and norm_value == norm_response and _reads_as(value, response, 0, len(response)):
        return "exact"
    # Word boundaries, and no decimal continuation: "10" is not in "10.5"; a kept symbol
    # is part of the word: "c" is not in "c++".
    symbols = "".join(sorted({ch for ch in norm_response if _meaningful(ch)}))
    word = rf"[\w{re.escape(symbols)}]" if symbols else r"\w"
    found = (
        [
            m.start()
            for m in re.finditer(
                rf"(?<!{word})(?<!\d\.){re.escape(norm_value)}(?!{word})(?!\.\d)",
                norm_response,
            )
        ]
        if norm_value
        else []
    )
    if found:
        # A denial is read in the response as written, where punctuation still ends its
        # clause; in the normalized text only where the value cannot be placed there.
        pattern = _text_pattern(text)
        written = [(m.start(), m.end()) for m in pattern.finditer(response)] if pattern else []
        if any(
            not _denied(response[:start]) and _reads_as(value, response, start, end)
            for start, end in written
        ):
            return "contains"
        if not written and any(
            not _denied(norm_response[:start])
            and _reads_as(value, norm_response, start, start + len(norm_value))
            for start in found
        ):
            return "contains"
    number = _as_number(value)
    if number is not None and any(
        not q.mark
        and _equal(q.value, number)
        and not _denied(response[: q.start])
        and _reads_as(value, response, *q.digits)
        for q in _quantities(response)
    ):
        return "number"
    value_dates = dates(text)
    if value_dates and any(
        day in value_dates and not _denied(response[:start]) and not _shifted(response, start, end)
        for start, end, day in _date_spans(response)
    ):
        return "date"
    return None


# -- a reference found, but with another value beside it or denied -----------------------
#
# The matchers credit a response that holds the reference; that is right only if the
# response gives it as the answer. Two lexical shapes undo it: another value offered beside
# it (a choice, "either X or Y", "X, or possibly Y", "maybe X, maybe Y"; or a list, "X, Y
# and Z", where one value is asked) and a denial ("not X", "isn't X", "X is wrong"). Such a
# response goes to the LLM judge, told which shape the matchers saw. The rule reads words
# only, next to each occurrence of the reference, so it errs towards the judge: an
# appositive that looks like a list ("Wolfsburg, Germany") is declined too, an extra detail
# that does not look like another value ("Finance, based in Orrin") is not.

# Bullets and numbering at the start of a line: the line is an item of a list.
_BULLET = re.compile(r"(?m)^[ \t]*(?:[-*\u2022]|\d{1,2}[.)])[ \t]+")
# A sentence ends at ".", "!" or "?" after a lowercase letter, a digit or a closing mark,
# so that "U.S. Steel" and "Corp. A" stay whole.
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]\"'\u201d\u2019%][.!?])\s+|(?<=[!?])\s+")
# A title or an abbreviation whose period ends no sentence.
_ABBREVIATION = re.compile(
    r"(?<![\w.])(?:dr|mr|mrs|ms|prof|st|mt|jr|sr|inc|corp|co|ltd|no|vs|etc|approx|e\.g|i\.e)\.$",
    re.IGNORECASE,
)
# Words that offer a choice when they stand just before or after the reference ("between X
# and Y" gives a range, not the value).
_CHOICE = frozenset({"or", "either", "whether", "between"})
_HEDGES = frozenset({"maybe", "perhaps", "possibly"})
# Words that may stand between a choice word and the reference ("or it could be X").
# fmt: off
_CHOICE_FILLER = frozenset({
    "maybe", "perhaps", "possibly", "probably", "even", "else", "rather", "also", "it",
    "is", "was", "s", "could", "might", "may", "would", "be", "the", "a", "an", "in", "on",
    "at", "its",
})
# First words of a phrase that describes the value rather than naming another one
# ("Finance, based in Orrin", "Paris, not Lyon", "China, which ...").
_NOT_A_VALUE = frozenset({
    "i", "we", "you", "he", "she", "it", "they", "this", "that", "these", "those", "its",
    "their", "his", "her", "our", "my", "your", "which", "who", "whom", "whose", "where",
    "when", "while", "what", "as", "at", "by", "for", "from", "in", "into", "of", "on",
    "onto", "to", "with", "within", "without", "near", "under", "over", "about", "around",
    "after", "before", "since", "until", "during", "per", "via", "based", "located",
    "headquartered", "situated", "founded", "known", "called", "named", "formerly", "also",
    "both", "all", "each", "respectively", "not", "never", "no", "but", "so", "because",
    "although", "though", "however", "according", "is", "are", "was", "were", "has",
    "have", "had", "be", "been", "being", "and", "or", "nor", "then", "than", "there",
    "here", "etc", "including", "such", "like", "especially", "mainly", "mostly",
    "specifically", "namely", "more", "less", "only", "just", "see", "note", "please",
    "throughout", "among", "between", "across", "beside", "besides", "along", "against",
    "if", "unless", "whether", "yes", "ok", "okay", "sure", "well", "thus", "hence",
    "therefore", "meanwhile", "instead", "alternatively", "overall", "finally", "today",
    "probably", "likely", "surely", "certainly", "definitely", "obviously", "apparently",
    "presumably", "maybe", "perhaps", "possibly", "again", "too", "still", "currently", "now",
})
# Lowercase words inside a capitalized name ("Bank of China", "Design and Visualization").
_NAME_JOINERS = frozenset(
    {"of", "and", "the", "for", "in", "on", "at", "to", "de", "du", "la", "le", "von", "van", "y"}
)
# Words that make a phrase a clause, not a value ("Throughout the year, X").
_VERBS = frozenset({"is", "are", "was", "were", "has", "have", "had", "does", "did"})
# fmt: on
# What ends a list item after the value, and what joins two items.
_ITEM_END = re.compile(r"[,;/&()]|\s(?:and|or|but|plus)\s|[.!?:](?:\s|$)", re.IGNORECASE)
_JOIN = r"(?:[,;/&]\s*(?:(?:and|plus)\s+)?|\s(?:and|plus)\s+)"
_JOIN_AFTER = re.compile(rf"[)\]\"'\u201d\u2019]*\s*{_JOIN}", re.IGNORECASE)
_JOIN_BEFORE = re.compile(rf"{_JOIN}[(\[\"'\u201c\u2018]*$", re.IGNORECASE)
# What introduces the items of a list ("The departments are X, Y").
_PREAMBLE = re.compile(
    r"^.*\b(?:is|are|was|were|be|include|includes|including|namely)\b", re.IGNORECASE
)
# "X, though it might be Y", "X, possibly Y": another value offered after the reference.
_MAYBE_AFTER = re.compile(
    r"^[\s,;()\-]*(?:(?:but|though|although|or)\s+)?(?:(?:it|this|that)\s+(?:might|could|may)"
    r"\s+(?:also\s+)?be|(?:also\s+)?(?:maybe|perhaps|possibly))\s+[^\W_]",
    re.IGNORECASE,
)
# A sentence that opens on another choice ("X. Or Y.", "X. Perhaps Y.").
_CHOICE_OPENS = re.compile(
    r"^\W*(?:or|alternatively|either|maybe|perhaps|possibly)\b"
    r"|^\W*(?:it|this|that)\s+(?:might|could|may)\s+(?:also\s+)?be\b",
    re.IGNORECASE,
)
# "X is wrong", "X is not correct", "X isn't his department": a denial after the
# reference.
_DENIED_AFTER = re.compile(
    r"^\W*(?:is|was|are|were)\s+(?:not|never|wrong|incorrect|false)\b"
    r"|^\W*(?:is|was|are|were)n['\u2019]?t\b",
    re.IGNORECASE,
)
# "X? No, Y": a reference asked back and answered no.
_NO_OPENS = re.compile(r"^\W*no\b(?!\s+\w)", re.IGNORECASE)
# What may stand before a number or a date that is an item by itself.
_LEAD_NUMBER = re.compile(
    r"^[\s$\u20ac\u00a3\u00a5]*(?:(?:about|around|approximately|roughly)\s+)?"
    r"[$\u20ac\u00a3\u00a5]?\s*$",
    re.IGNORECASE,
)
_LEAD_DATE = re.compile(r"^\s*(?:(?:on|the|from)\s+)*$", re.IGNORECASE)


def _sentences(response: str) -> list[str]:
    """The response's sentences, with line breaks inside one read as list breaks ("; ")
    and bullets dropped, so that a bulleted list reads as "X; Y"."""
    text = _BULLET.sub("", unicodedata.normalize("NFKC", response))
    text = re.sub(r"(?<=[.!?])[ \t]*\n\s*", " ", text)  # a line that ends its sentence
    text = re.sub(r"[ \t]*\n\s*", "; ", text.strip())
    sentences: list[str] = []
    for part in _SENTENCE_END.split(text):
        if sentences and _ABBREVIATION.search(sentences[-1]):  # "Dr. Helena Quantum"
            sentences[-1] += " " + part
        elif part.strip():
            sentences.append(part)
    return sentences


def _text_pattern(value: str) -> re.Pattern[str] | None:
    """Where a text value is written in a (non-normalized) sentence: its normalized words
    in order, with punctuation, hyphens or an article between them, on word boundaries."""
    words = normalize(value).split()
    if not words:
        return None
    gap = r"(?:[\W_]+(?:(?:the|an|a)[\W_]+)?)"
    body = gap.join(re.escape(w) for w in words)
    return re.compile(rf"(?<![\w+#&@$])(?<!\d\.){body}(?![\w+#&@$])(?!\.\d)", re.IGNORECASE)


def _spans(value: Scalar, sentence: str) -> list[tuple[int, int]]:
    """Where ``value`` is written in ``sentence``: as its text, as the same number or as
    the same date."""
    pattern = _text_pattern(str(value))
    spans = [(m.start(), m.end()) for m in pattern.finditer(sentence)] if pattern else []
    spans = [(start, end) for start, end in spans if _reads_as(value, sentence, start, end)]
    number = _as_number(value)
    if number is not None:
        spans += [
            (q.start, q.end)
            for q in _quantities(sentence)
            if not q.mark and _equal(q.value, number) and _reads_as(value, sentence, *q.digits)
        ]
    value_dates = dates(str(value))
    if value_dates:
        spans += [
            (start, end)
            for start, end, day in _date_spans(sentence)
            if day in value_dates and not _shifted(sentence, start, end)
        ]
    return spans


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.casefold())


def _offers_choice(before: str, after: str) -> bool:
    """A choice word next to the reference: "either X", "or X", "or it could be X" before
    it; "X or", "X, possibly Y", "X, though it might be Y" after it."""
    clause = re.split(r"[.!?;:](?:\s|$)", before)[-1]
    for word in reversed(_words(clause)[-5:]):
        if word in _CHOICE:
            return True
        if word not in _CHOICE_FILLER:
            break
    following = _words(after)[:2]
    if following[:1] == ["or"] or following == ["and", "or"]:  # "X or Y", "X and/or Y"
        return True
    return bool(_MAYBE_AFTER.match(after))


def _same_case(a: str, b: str) -> bool:
    return (
        (a.isupper() and b.isupper())
        or (a.islower() and b.islower())
        or (a.isdigit() and b.isdigit())
    )


def _holds(text: str, part: str) -> bool:
    """``part`` is in ``text`` as whole words (both normalized)."""
    return bool(part) and re.search(rf"(?<!\w){re.escape(part)}(?!\w)", text) is not None


def _names_text(
    piece: str, written: str, reference: str, refs: list[str], asked: str, initial: bool
) -> bool:
    """Whether a list item next to a text reference names another value: a short phrase
    that opens as a name of its kind does (in the case of the reference as written, either
    case where that opens its sentence), not a description ("based in Orrin", "the CEO"),
    the reference again, one that holds another member of a set reference ("blue
    badges"), or words of the question (its entity). A longer name that holds the
    reference ("Engineering Documentation" beside "Engineering") is another value."""
    words = piece.strip(" \t\"'\u201c\u201d\u2018\u2019[]*-").split()
    if not words or len(words) > 6 or not any(ch.isalnum() for ch in words[0]):
        return False
    if words[0].casefold() in ("the", "a", "an"):  # "X, the CEO": an appositive
        return False
    first = words[0].strip("\"'\u201c\u201d\u2018\u2019")
    acronym = len(first) > 1 and first.isupper()  # "IT Support", not "it"
    if not first or (not acronym and first.casefold().rstrip(".") in _NOT_A_VALUE):
        return False
    if _VERBS.intersection(w.casefold() for w in words):
        return False
    norm = normalize(" ".join(words))
    own = normalize(reference)
    if norm == own or any(_holds(norm, r) for r in refs if r != own) or _holds(asked, norm):
        return False
    if not initial and not _same_case(first[0], written.strip()[:1] or first[0]):
        return False
    if first[0].isupper():
        # A capitalized value's name is capitalized throughout ("Conceptual Design and
        # Visualization"), where a description is not ("Volkswagen headquarters in
        # Wolfsburg").
        return all(
            w[0].isupper() or not w[0].isalpha() or w.casefold() in _NAME_JOINERS for w in words
        )
    # A lowercase value is a word or two ("real estate"), where a description runs on in
    # small words ("mostly hotels", "luxury resorts in the Maldives").
    return len(words) <= 3 and not _NOT_A_VALUE.intersection(w.casefold() for w in words)


def _lists_another(
    value: Scalar, values: Sequence[Scalar], before: str, after: str, written: str, asked: str
) -> bool:
    """The reference is an item of a list whose next or previous item names another value
    of its kind: another number, another date, or another name. The reference must be an
    item by itself ("X, Y", not "retail X, Y"); a bare comma before it counts only in a
    sentence that is nothing but the list ("Y, X"), since "Wolfsburg, Germany", an address
    or "Throughout the year, X" put a comma before a value without listing another."""
    number, value_dates = _as_number(value), dates(str(value))
    # Another member of a set reference is no other value ("3 and 5" for {3, 5}).
    ref_numbers = {n for n in map(_as_number, values) if n is not None}
    ref_dates = {day for v in values for day in dates(str(v))}
    refs = [r for r in (normalize(str(v)) for v in values) if r]
    initial = not re.sub(r"[\W_]", "", before)  # the reference opens its sentence

    join_after, join_before = _JOIN_AFTER.match(after), _JOIN_BEFORE.search(before)
    # A list that punctuation shows ("X, Y and Z"), not only "and".
    listed = any(join and re.search("[,;/]", join[0]) for join in (join_after, join_before))

    def names_another(item: str, at_end: bool) -> bool:
        if number is not None:
            numbers_in = _number_spans(item)
            if not numbers_in:
                return False
            start, end, n = numbers_in[-1] if at_end else numbers_in[0]
            bare = not item[end:].strip() if at_end else bool(_LEAD_NUMBER.match(item[:start]))
            return bare and n not in ref_numbers
        if value_dates:
            spans = sorted(_date_spans(item))
            if not spans:
                return False
            start, end, day = spans[-1] if at_end else spans[0]
            bare = not item[end:].strip() if at_end else bool(_LEAD_DATE.match(item[:start]))
            return bare and day not in ref_dates
        if not listed and not item.lstrip(" \"'\u201c\u2018([")[:1].isupper():
            # Lowercase words joined by "and" alone are one phrase ("the banking and
            # financial services industry"); a lowercase list has commas ("hospitality,
            # real estate and healthcare").
            return False
        return _names_text(item, written, str(value), refs, asked, initial)

    if join_after:
        # The reference is an item by itself: nothing but an introduction before it.
        lead = _PREAMBLE.sub("", _ITEM_END.split(before)[-1])
        bare = not re.sub(r"\b(?:the|an|a|either|maybe|perhaps|possibly)\b", " ", lead).strip(
            " \t\"'\u201c\u201d\u2018\u2019[]*-$\u20ac\u00a3\u00a5"
        )
        rest = after[join_after.end() :]
        item = rest if number is not None or value_dates else _ITEM_END.split(rest, maxsplit=1)[0]
        if bare and names_another(item, at_end=False):
            return True
    if join_before:
        head = before[: join_before.start()].rstrip()
        if re.search(r"(?:&|\b(?:and|plus))\s*$", join_before[0], re.IGNORECASE):
            item = head if number is not None or value_dates else _ITEM_END.split(head)[-1]
            return names_another(_PREAMBLE.sub("", item), at_end=True)
        return all(names_another(part, at_end=True) for part in re.split(r"[,;/]", head))
    return False


def _declined(values: Sequence[Scalar], response: str, question: str | None) -> str | None:
    """Why a response that holds the reference does not give it as the answer, read from
    the words next to each occurrence: :data:`DENIES` ("not X", "X is wrong") or
    :data:`NAMES_ANOTHER` (a choice or a list with another value of its kind); None when
    no occurrence shows either."""
    sentences = _sentences(response)
    refs = [r for r in (normalize(str(v)) for v in values) if r]
    asked = normalize(question) if question else ""
    seen = False
    named_another = False
    for i, sentence in enumerate(sentences):
        found_here = False
        for value in values:
            for start, end in _spans(value, sentence):
                seen = found_here = True
                before, after = sentence[:start], sentence[end:]
                if _denied(before) or _DENIED_AFTER.match(after):
                    return DENIES
                named_another = named_another or (
                    _offers_choice(before, after)
                    or _ranged(sentence, start, end)
                    or _lists_another(value, values, before, after, sentence[start:end], asked)
                )
        if found_here:
            after = sentences[i + 1] if i + 1 < len(sentences) else ""
            if sentence.rstrip().endswith("?") and _NO_OPENS.match(after):
                return DENIES
            hedges = sum(w in _HEDGES for w in _words(sentence))
            named_another = named_another or hedges >= 2 or bool(_CHOICE_OPENS.match(after))
    if named_another:
        return NAMES_ANOTHER
    if not seen:
        # Found by the matchers but not placed in a sentence: a choice word anywhere is
        # enough to leave it to the judge.
        rest = normalize(response)
        for r in refs:
            rest = rest.replace(r, " ")
        if _CHOICE.union(_HEDGES).intersection(rest.split()):
            return NAMES_ANOTHER
    return None


def match(reference: Reference, response: str | None, *, question: str | None = None) -> Decision:
    """Decide Correct (reference found), Incorrect (refusal while an answer exists; with
    the ``question``, a response that says nothing beyond it), or leave it to the LLM
    judge: with the reason (``why``) where the response holds the reference but names
    another value beside it or denies it, since such a response may not give it."""
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
    values = [v for v in reference.values if v is not None]
    if found:
        rule = rules[0] if len(rules) == 1 else "set"
        why = None if rule == "exact" else _declined(values, response, question)
        if why is not None:  # it holds the reference, and says more that may undo it
            return Decision(False, None, "undecided", why)
        return Decision(True, True, rule or "contains")
    if _no_date_given(reference, response):
        return Decision(True, False, "no-date")
    if question is not None and _question_only(question, reference, response):
        return Decision(True, False, "question-only")
    if _declined(values, response, question) == DENIES:  # "not X": the judge is told so
        return Decision(False, None, "undecided", DENIES)
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
    if any(isinstance(v, bool) for v in reference.values):
        return False  # a yes-or-no question: "Yes." may well be its answer
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
