"""Text templates (wordings) written by an LLM, per SQL template and style. The LLM writes
wording, never facts: every wording must carry exactly its SQL template's placeholders and
fit its style before it is kept.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ragaudit.generate.sql.templates import (
    SqlTemplate,
)
from ragaudit.generate.text.templates import Verdict, fill, near_duplicate_key
from ragaudit.generate.text.verify import asks_why
from ragaudit.llm.client import LLMClient
from ragaudit.llm.parsing import parse_lines
from ragaudit.llm.types import Messages, assistant, system, user

STYLE_INSTRUCTIONS = {
    "short": "Short, fragmentary queries of a few words, like search-box input: no articles, "
    "no conjunctions, no full sentences.",
    "long": "A long request of about 50 words, in the first person. Start with a sentence "
    "saying what you need the information for (a report, a meeting, a client call), then ask "
    "for it.",
}
# Styles worded one question per ask: asked for several long questions at once, a small
# model writes short ones (measured: 11 to 20 words where 30 were asked; one at a time, 17
# to 48).
ONE_PER_ASK = frozenset({"long"})
# A one-per-ask question short of its style's minimum by at most this many words gets a
# sentence of context put before it rather than being thrown away.
MAX_LENGTHENING = 20


# Length rules of the built-in styles (the paper's Table 6): checked, not only asked for.
STYLE_WORDS = {"short": (1, 12), "long": (30, 400)}


# What a length problem begins with: the drop reasons' tallies count them as one kind.
LENGTH = "length"


def style_problem(style: str, text: str) -> str | None:
    """Why ``text`` does not fit a built-in style's length (``length: 14 words; ...``),
    or None."""
    bounds = STYLE_WORDS.get(style)
    if bounds is None:
        return None
    n = len(text.split())
    low, high = bounds
    if n < low:
        return f"{LENGTH}: {n} words; the {style} style needs at least {low}"
    if n > high:
        return f"{LENGTH}: {n} words; the {style} style allows at most {high}"
    return None


def rewrite_prompt(
    example: str, meaning: str, instruction: str, n: int, names: list[str]
) -> Messages:
    """Ask for ``n`` rewordings (one when ``n`` is 1) of a filled example question in one
    style. A small model rewrites a real sentence far more reliably than it writes around
    placeholder tokens; the names are turned back into placeholders afterwards.

    The style's fixed instructions come first and the example last, so that every template
    asked in one style shares the prompt's prefix and a local model's prompt cache reads it
    once (docs/benchmarks.md, issue 12)."""
    keep = " and ".join(repr(name) for name in names)
    if n == 1:
        task = (
            "Rewrite the question below in this style. It must still ask for exactly the same "
            "thing, and keep every quoted name exactly as written. Reply with the rewritten "
            "question only."
        )
        again = ""
    else:
        task = (
            f"Write {n} different questions in this style that ask for exactly the same thing "
            "as the question below. Every question must keep the quoted names exactly as "
            "written. Reply with one question per line and nothing else."
        )
        again = f"\nWrite {n} questions, one per line."
    return [
        system("You reword questions. You keep every quoted name exactly as it is written."),
        user(
            f"Style: {instruction}\n{task}\n\n"
            f"Question: {example}\nIt asks for {meaning}. Keep {keep} exactly as written."
            f"{again}"
        ),
    ]


def context_prompt(question: str, words: int) -> Messages:
    """Ask for a sentence of context to put before a question that is too short for its
    style: why the asker needs the information, without asking or answering anything. The
    fixed instructions come first (a shared, cached prefix), the question last."""
    return [
        system("You write one sentence of context for a question."),
        user(
            "Write one sentence, in the first person, saying why you need the information "
            "the question below asks for (for a report, a meeting, a client call...). Do not "
            "ask anything and do not answer the question. Reply with the sentence only.\n\n"
            f"Question: {question}\nLength: about {words} words."
        ),
    ]


_FIRST_PERSON = re.compile(r"\b(I|[Mm]e|[Mm]y|[Ww]e|[Uu]s|[Oo]ur)\b")


def context_problem(sentence: str, question: str) -> str | None:
    """Why a sentence of context may not go before its question, or None. Asked why it
    needs a simple fact, a small model sometimes states one instead ("X operates in the
    automotive industry.", "Y worked there from 2005 to 2015."): a claim the question
    would carry, true or not. So the sentence must speak of the asker (first person), ask
    nothing, and bring no number the question does not have."""
    if "?" in sentence:
        return "it asks something"
    if not _FIRST_PERSON.search(sentence):
        return "it is not about the asker (no I, my, we, our)"
    extra = sorted(set(re.findall(r"\d+", sentence)) - set(re.findall(r"\d+", question)))
    if extra:
        return f"it brings a number the question does not have ({extra[0]})"
    return None


def _too_short_by(style: str, text: str) -> int:
    """How many words ``text`` lacks for its style's minimum (0 when it has enough)."""
    low = STYLE_WORDS.get(style, (0, 0))[0]
    return max(0, low - len(text.split()))


def _one_question(reply: str, names: list[str]) -> list[str]:
    """The question of a one-per-ask reply: the whole reply on one line, or, when the model
    wrapped it ("Here is the request:"), its longest line that names every value."""
    lines = [line.strip().strip('"') for line in reply.splitlines() if line.strip()]
    naming = [line for line in lines if all(name.casefold() in line.casefold() for name in names)]
    if len(lines) > 1 and naming:
        return [max(naming, key=len)]
    return [" ".join(reply.split()).strip('"')] if reply.strip() else []


def _value_pattern(value: str) -> re.Pattern[str]:
    """The value as written in a question: case-insensitive, not inside a longer word."""
    left = r"(?<!\w)" if value[:1].isalnum() else ""
    right = r"(?!\w)" if value[-1:].isalnum() else ""
    return re.compile(left + re.escape(value) + right, re.IGNORECASE)


def to_template(line: str, bindings: dict[str, object]) -> str:
    """A question written with the example's values, turned back into a text template:
    each value becomes its ``[Table.Column]``. Raises ``ValueError`` when a value is
    missing (the question no longer names what it asks about)."""
    text = line.strip()
    for key, value in sorted(bindings.items(), key=lambda kv: -len(str(kv[1]))):
        pattern = _value_pattern(str(value))
        if not pattern.search(text):
            raise ValueError(f"'{value}' is missing")

        def bracketed(_match: re.Match[str], key: str = key) -> str:
            return f"[{key}]"

        text = pattern.sub(bracketed, text)
    return text


@dataclass
class LLMTextResult:
    """Wordings kept per style, the verdicts given on the way, what was rejected before
    verification (format) and where the verbalizer had to fill in."""

    texts: dict[str, list[str]] = field(default_factory=dict)
    rejected: list[tuple[str, str, str]] = field(default_factory=list)  # style, text, reason
    verdicts: dict[tuple[str, str], Verdict] = field(default_factory=dict)  # (style, text)
    fallbacks: dict[str, str] = field(default_factory=dict)  # style -> note
    calls: int = 0


Verify = Callable[[SqlTemplate, str, list[str]], Awaitable[dict[str, Verdict]]]


@dataclass(frozen=True)
class StyleRequest:
    """One style to word: its instruction and the filled example sentence to reword (the
    verbalizer's, for a built-in style)."""

    instruction: str
    example: str
    fallback: list[str] = field(default_factory=list)  # verbalizer wordings, templates


async def llm_text_templates(
    llm: LLMClient,
    template: SqlTemplate,
    styles: dict[str, StyleRequest],
    n: int,
    *,
    meaning: str,
    bindings: dict[str, object],
    verify: Verify | None = None,
    precheck: Callable[[str], str | None] | None = None,
    attempts: int = 3,
) -> LLMTextResult:
    """``n`` wordings per style, reworded by the LLM from a filled example.

    Each line must name the example's values (they become placeholders again) and fit the
    style's length; then ``verify`` judges it, one at a time until ``n`` are kept. While
    fewer are kept, the model is asked again, told what was wrong (too short by N words, a
    name missing, what the verifier found), up to ``attempts`` asks per style. A long style
    is asked one question per ask, ``n + attempts - 1`` asks at most, each wording from
    the next of ``StyleRequest.fallback``'s sentences in a conversation of its own; after a
    line the verifier rejected, or a repeat, the next ask starts afresh rather than being
    told why, and a question that is merely too short gets a sentence of context before
    it. What is still missing then comes from ``StyleRequest.fallback`` (verified too),
    with a note. ``precheck`` (the verifier's checks that need no call) is asked first
    about a line that would get a sentence of context: a line it rejects would be
    rejected with any sentence in front of it, so that sentence is not paid for.
    """
    result = LLMTextResult()
    names = [str(v) for v in bindings.values()]
    filled_meaning = meaning
    for key, value in bindings.items():
        filled_meaning = filled_meaning.replace(f"[{key}]", str(value))

    async def judge(style: str, text: str) -> Verdict | None:
        verdict = (await verify(template, style, [text])).get(text) if verify else None
        if verdict is not None:
            result.verdicts[(style, text)] = verdict
        return verdict

    def fresh(style: str, request: StyleRequest, index: int) -> Messages:
        """The first ask for a wording. A one-per-ask style rewords the ``index``-th of
        the verbalizer's sentences, so that each wording starts from another sentence:
        asked for "another version" of the same one, a small model repeated itself."""
        if style not in ONE_PER_ASK:
            return rewrite_prompt(request.example, filled_meaning, request.instruction, n, names)
        example = request.example
        if request.fallback:
            example = fill(request.fallback[index % len(request.fallback)], bindings)
        return rewrite_prompt(example, filled_meaning, request.instruction, 1, names)

    async def one(style: str, request: StyleRequest) -> None:
        single = style in ONE_PER_ASK
        conversation = list(fresh(style, request, 0))
        started = 1  # fresh conversations so far
        sampled = False  # whether this ask continues a conversation (and samples)
        kept: list[str] = []
        seen: set[str] = set()
        asks = n + attempts - 1 if single else attempts
        for attempt in range(asks):
            # Asks again in a conversation sample: at temperature 0 a model repeats itself.
            params = None
            if sampled:
                base = llm.default_params
                params = base.model_copy(
                    update={"temperature": 0.7, "seed": (base.seed or 0) + attempt}
                )
            reply = (await llm.acomplete(conversation, params)).text
            result.calls += 1
            problems: list[tuple[str, str]] = []  # (line, what was wrong with it)
            # A line the verifier rejected, or a repeat, is not mended by telling a small
            # model why: it wrote the same line again (measured on Spider's employment join).
            restart = False
            lines = _one_question(reply, names) if single else parse_lines(reply)
            for line in lines:
                if len(kept) >= n:
                    break
                try:
                    text = to_template(line, bindings)
                except ValueError as exc:
                    result.rejected.append((style, line, str(exc)))
                    problems.append((line, str(exc)))
                    continue
                if asks_why(text):  # before a sentence of context is paid for
                    asks_why_problem = "it asks why instead of asking for the information"
                    result.rejected.append((style, text, asks_why_problem))
                    problems.append((line, asks_why_problem))
                    continue
                short_by = _too_short_by(style, text)
                lengthen = single and 0 < short_by <= MAX_LENGTHENING
                unfit_line = precheck(text) if precheck and lengthen else None
                if unfit_line:
                    result.rejected.append((style, text, unfit_line))
                    problems.append((line, unfit_line))
                    restart = True  # as after a verdict: a fresh ask, not the reason
                    continue
                if lengthen:
                    # A good question that is merely short gets a sentence of context
                    # before it (one short call) rather than being thrown away.
                    context = await llm.acomplete(context_prompt(line, short_by + 10))
                    result.calls += 1
                    sentence = " ".join(context.text.split()).strip('"')
                    unfit = context_problem(sentence, line)
                    if unfit:
                        result.rejected.append((style, sentence, f"context: {unfit}"))
                    else:
                        with contextlib.suppress(ValueError):
                            text = to_template(f"{sentence} {line}", bindings)
                problem = style_problem(style, text)
                if problem:
                    result.rejected.append((style, text, problem))
                    problems.append((line, as_feedback(problem, style)))
                    continue
                if near_duplicate_key(text) in seen:
                    result.rejected.append((style, text, "near-duplicate"))
                    problems.append((line, "the same as an earlier one"))
                    restart = True
                    continue
                seen.add(near_duplicate_key(text))
                # One at a time: no call is spent on a candidate once enough are kept.
                verdict = await judge(style, text)
                if verdict is None or verdict.verified:
                    kept.append(text)
                else:
                    problems.append((fill(text, bindings), verdict.reason or "rejected"))
                    restart = True
            if len(kept) >= n:
                break
            if single and (restart or not problems):
                # The next wording starts afresh from another sentence; once every sentence
                # has been asked, a fresh ask samples, or it would be an earlier one again.
                conversation = list(fresh(style, request, started))
                sampled = started >= max(len(request.fallback), 1)
                started += 1
                continue
            if single:  # the one line is the reply just above: only what was wrong
                again = (
                    f"That one was not usable: {problems[0][1]}. Write another version, "
                    f"different from the earlier ones. {request.instruction}"
                )
            else:
                told = "; ".join(f"{line!r}: {why}" for line, why in problems[:3]) or "none"
                again = (
                    f"{len(kept)} usable so far. Rejected: {told}. "
                    f"Write {n - len(kept)} more that ask for {filled_meaning}, different from "
                    "the usable ones, one per line."
                )
            conversation += [assistant(reply), user(again)]
            sampled = True
        if len(kept) < n and request.fallback:
            added = 0
            for text in request.fallback:
                if len(kept) >= n:
                    break
                if near_duplicate_key(text) in seen:
                    continue
                seen.add(near_duplicate_key(text))
                verdict = await judge(style, text)
                if verdict is None or verdict.verified:
                    kept.append(text)
                    added += 1
            if added:
                result.fallbacks[style] = (
                    f"{added} of {n} worded by the verbalizer: the LLM gave "
                    f"{len(kept) - added} usable in {asks} asks"
                )
        result.texts[style] = kept[:n]

    # Style after style: one conversation at a time keeps a local model's prompt cache warm;
    # an HTTP backend's parallelism comes from wording many templates at once.
    for style, request in styles.items():
        await one(style, request)
    return result


def as_feedback(problem: str, style: str) -> str:
    """A length problem said as what to change: 'too short by 12 words'."""
    problem = problem.removeprefix(f"{LENGTH}: ")
    found = re.match(r"(\d+) words; the \w+ style needs at least (\d+)", problem)
    if found:
        return f"too short by {int(found[2]) - int(found[1])} words"
    found = re.match(r"(\d+) words; the \w+ style allows at most (\d+)", problem)
    if found:
        return f"too long by {int(found[1]) - int(found[2])} words"
    return problem
