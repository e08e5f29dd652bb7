"""Document generation measured where the truth is known, as docs/documents.md reports it:

* **grounded precision** on a generated company (``ragaudit world``): every report's facts
  are in its fact map (document_facts.jsonl), so an accepted ``fact_single`` pair whose
  question asks for one of them must have the database's value in its reference;
* **balance** on the SQuAD 2.0 subset's paragraphs: the labeller's labels of the pairs
  each strategy accepts.

Shared by scripts/measure_documents.py (which runs the embedded model and records its
replies) and tests/test_document_rates.py (which replays them), so both run the same code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ragaudit.config import LLMConfig, load_config
from ragaudit.documents.generator import Context, DocumentGenerator, Embedder
from ragaudit.documents.options import DocumentOptions
from ragaudit.generate.facts import states
from ragaudit.llm.client import LLMClient
from ragaudit.llm.types import GenerationParams
from ragaudit.records.models import CandidateRecord
from ragaudit.steps.documents import corpus_contexts, corpus_search, question_embedder

SQUAD_FILE = "dev-v2.0-subset.json"
WORLD_SIZE = 120
WORLD_SEED = 7


def default_params() -> GenerationParams:
    """The parameters ``make_llm`` gives a client of the embedded model (the replay must
    ask exactly what the recording asked)."""
    config = LLMConfig(model="local")
    return GenerationParams(
        temperature=config.temperature, max_tokens=config.max_tokens, seed=config.seed
    )


def generate(
    llm: LLMClient, options: DocumentOptions, contexts: list[Context], corpus: list[Context]
) -> list[CandidateRecord]:
    """Every candidate the generator writes from ``contexts`` (no wordings: the figures
    here are of the pairs)."""
    generator = DocumentGenerator(
        llm,
        options,
        contexts,
        embedder=question_embedder(),
        styles={},
        search=corpus_search(corpus),
    )
    return asyncio.run(generator.generate())


# -- grounded precision on a generated company ------------------------------------------------

# The fact a question asks for, by its words (first match wins): (pattern, table, column).
# A question that matches none asks for nothing the fact map holds and is not counted.
# People and the client come first: "the name of the project manager" asks for a person.
ASKED: tuple[tuple[str, str, str], ...] = (
    (r"\b(industry|sector|business)\b", "Client", "Industry"),
    (r"\bdirector\b|\bdirect(s|ed|ing)\b", "Project", "ProjectDirector"),
    (r"\bmanager\b|\bmanag(es|ed|ing)\b", "Project", "ProjectManager"),
    (r"\b(client|commission\w*|customer)\b", "Project", "Client"),
    (r"\bname of the (construction )?project\b", "Project", "Name"),
    (r"\b(where|located|location)\b", "Project", "Location"),
    (r"\b(start\w*|began|begin\w*|commenc\w*)\b", "Project", "StartDate"),
    (
        r"\b(end|ends|ended|finish\w*|complet\w*|handover|handed|due|conclud\w*)\b",
        "Project",
        "EndDate",
    ),
)


def asked_column(question: str) -> tuple[str, str] | None:
    """The (table, column) a question about a project asks for, by keywords; None when it
    asks for nothing the fact map holds."""
    text = question.lower()
    for pattern, table, column in ASKED:
        if re.search(pattern, text):
            return table, column
    return None


@dataclass(frozen=True)
class Checked:
    """One accepted fact_single pair checked against the database: the fact it asks for
    and whether its reference states the database's value."""

    question: str
    reference: str
    column: str
    value: str
    correct: bool


def fact_map(world: Path) -> dict[str, dict[tuple[str, str], str]]:
    """Report id -> (table, column) -> the database's value of each fact the report
    states (read from the company's database, not from the report's wording: a date
    stored as 2024-08-07 is stated as "7 August 2024" or "August 7, 2024" alike)."""
    out: dict[str, dict[tuple[str, str], str]] = {}
    with contextlib.closing(sqlite3.connect(world / "company.sqlite")) as db:
        for line in (world / "document_facts.jsonl").read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            facts = out[row["id"]] = {}
            for f in row["facts"]:
                table, column = f["table"], f["column"]
                found = db.execute(
                    f'SELECT "{column}" FROM "{table}" WHERE "Name" = ?', (f["row_key"],)
                ).fetchone()
                if found is not None and found[0] is not None:
                    facts[(table, column)] = str(found[0])
    return out


def grounded(
    world: Path, candidates: list[CandidateRecord]
) -> tuple[list[Checked], dict[str, list[str]]]:
    """The accepted fact_single pairs whose question asks for a fact of their report's
    map, each checked; and the questions of the accepted ones not counted, by why."""
    facts = fact_map(world)
    checked: list[Checked] = []
    skipped: dict[str, list[str]] = {}
    for c in candidates:
        if not c.accepted or c.requested_label != "fact_single":
            continue
        assert c.question is not None and c.answer is not None
        asked = asked_column(c.question)
        known = facts.get(c.gold_ids[0], {})
        if asked is None:
            skipped.setdefault("asks for no fact of the map", []).append(c.question)
            continue
        if asked not in known:
            skipped.setdefault("the report does not state the fact asked", []).append(c.question)
            continue
        value = known[asked]
        checked.append(Checked(c.question, c.answer, asked[1], value, states(c.answer, value)))
    return checked, skipped


def world_contexts(world: Path) -> list[Context]:
    """The generated company's reports, chunked as its systems chunk them."""
    contexts, _ = corpus_contexts(load_config(world / "ragaudit.yaml"))
    return contexts


def precision_options(size: int = 40) -> DocumentOptions:
    """Only fact_single pairs, checked as by default, over two passes of the reports."""
    return DocumentOptions(strategy="statements", size=size, mix={"fact_single": 1.0}, rounds=2)


# -- balance on SQuAD -------------------------------------------------------------------------


def squad_contexts(squad_dir: Path) -> list[Context]:
    """The subset's paragraphs, one context each (``<title>#<i>``)."""
    data = json.loads((squad_dir / SQUAD_FILE).read_text(encoding="utf-8"))
    return [
        Context(
            f"{article['title']}#{i}", f"{article['title']}#{i}", p["context"], article["title"]
        )
        for article in data["data"]
        for i, p in enumerate(article["paragraphs"])
    ]


def balance_options(strategy: str, size: int) -> DocumentOptions:
    """``statements`` with a uniform mix (``mix: uniform``; the default is answerable
    only), or ``simple`` with two pairs a paragraph, over one pass of the paragraphs."""
    if strategy == "statements":
        return DocumentOptions.model_validate(
            {"strategy": "statements", "size": size, "rounds": 1, "mix": "uniform"}
        )
    return DocumentOptions(strategy="simple", size=size, per_context=2, rounds=1)


def observed(candidates: list[CandidateRecord]) -> list[str]:
    """The labeller's label of every candidate that reached it (accepted, or dropped for
    the label): the composition of what the strategy writes, once the cheaper checks and
    the critiques have passed it."""
    return [str(c.observed_label) for c in candidates if c.observed_label is not None]


__all__ = [
    "ASKED",
    "WH_SWAPS",
    "Checked",
    "ReadingCase",
    "SupportCase",
    "WordingCase",
    "asked_column",
    "balance_options",
    "check_wordings",
    "default_params",
    "fact_map",
    "generate",
    "grounded",
    "label_answerable",
    "observed",
    "own_wording_cases",
    "precision_options",
    "read_all",
    "reading_cases",
    "relabel",
    "squad_contexts",
    "support_cases",
    "wh_swap",
    "wording_cases",
    "world_contexts",
]


# -- the support lookup on SQuAD's answers ----------------------------------------------------


@dataclass(frozen=True)
class SupportCase:
    """An answer looked up in a paragraph: its own (good), or another paragraph's answer
    that the paragraph does not contain (bad)."""

    context: str
    answer: str
    good: bool


def support_cases(squad_dir: Path) -> list[SupportCase]:
    """Each answerable question's first answer in its own paragraph, and, in the same
    paragraph, the answer of the next paragraph's question at the same position where
    that answer's text is not in the paragraph (the lookup must not call it supported)."""
    data = json.loads((squad_dir / SQUAD_FILE).read_text(encoding="utf-8"))
    paragraphs = [p for article in data["data"] for p in article["paragraphs"]]
    answers = [
        [
            qa["answers"][0]["text"]
            for qa in p["qas"]
            if not qa.get("is_impossible") and qa["answers"]
        ]
        for p in paragraphs
    ]
    cases: list[SupportCase] = []
    for i, p in enumerate(paragraphs):
        context = p["context"]
        cases += [SupportCase(context, a, True) for a in answers[i]]
        others = answers[(i + 1) % len(paragraphs)]
        cases += [
            SupportCase(context, a, False) for a in others if a.lower() not in context.lower()
        ]
    return cases


# -- the unanswerable reading on SQuAD's questions --------------------------------------------


@dataclass(frozen=True)
class ReadingCase:
    """A SQuAD question read against its paragraph and the corpus passages most like it:
    ``answerable`` by the set's flag (the reading must answer it, or an answerable
    question would pass as unanswerable)."""

    context: Context
    question: str
    answerable: bool


def reading_cases(squad_dir: Path, per_kind: int) -> list[ReadingCase]:
    """The first ``per_kind`` unanswerable and answerable questions of the subset, taken
    one paragraph at a time so that both kinds spread over the paragraphs."""
    data = json.loads((squad_dir / SQUAD_FILE).read_text(encoding="utf-8"))
    contexts = squad_contexts(squad_dir)
    by_kind: dict[bool, list[ReadingCase]] = {True: [], False: []}
    paragraphs = [p for article in data["data"] for p in article["paragraphs"]]
    for context, p in zip(contexts, paragraphs, strict=True):
        taken: set[bool] = set()
        for qa in p["qas"]:
            answerable = not qa.get("is_impossible")
            if answerable in taken or len(by_kind[answerable]) >= per_kind:
                continue
            taken.add(answerable)
            by_kind[answerable].append(ReadingCase(context, qa["question"], answerable))
    return by_kind[False] + by_kind[True]


def read_all(llm: LLMClient, cases: list[ReadingCase], corpus: list[Context]) -> list[bool | None]:
    """Per case, whether the reading the generator runs on an unanswerable candidate
    found an answer (None: its reply stayed malformed)."""
    from ragaudit.documents import checks
    from ragaudit.errors import LLMError

    generator = DocumentGenerator(
        llm,
        DocumentOptions(),
        corpus,
        embedder=Embedder(method="words"),
        styles={},
        search=corpus_search(corpus),
    )

    async def one(case: ReadingCase) -> bool | None:
        passages = [case.context.text, *generator._corpus_passages(case.context, case.question)]
        try:
            reading = await llm.acomplete_parsed(
                checks.reading_prompt(passages, case.question),
                checks.parse_reading,
                'JSON: {"answer": ..., "passage": ...}',
                generator.params(80),
            )
        except LLMError:
            return None
        return reading.answer is not None

    async def every() -> list[bool | None]:
        return [await one(case) for case in cases]

    return asyncio.run(every())


# -- the wording check on SQuAD's questions ---------------------------------------------------


@dataclass(frozen=True)
class WordingCase:
    """A wording checked against a question of a SQuAD paragraph and that question's
    answer: ``same`` when SQuAD's annotators gave both questions the same answer, else
    ``kind`` says why it asks something else."""

    context: str
    question: str
    answer: str
    wording: str
    same: bool
    kind: str  # same-answer | other-question | unanswerable-edit | wh-swap


# A question word swapped for one that asks for another kind of fact: every content word
# stays, so only the question's sense tells the wording apart (first match wins).
WH_SWAPS: tuple[tuple[str, str], ...] = (
    (r"^(in )?(what|which) year\b", "Where"),
    (r"^how (many|much)\b", "When"),
    (r"^when\b", "Where"),
    (r"^where\b", "When"),
    (r"^who\b", "When"),
)


def wh_swap(question: str) -> str | None:
    """``question`` asking for another kind of fact (a time for a place, a place for a
    time or a number, a time for a person), or None when it starts with no such word."""
    for pattern, word in WH_SWAPS:
        found = re.match(pattern, question, re.IGNORECASE)
        if found:
            return word + question[found.end() :]
    return None


def _answers(qa: dict) -> set[str]:
    """An answerable question's annotated answers, compared without case or punctuation."""
    return {" ".join(re.sub(r"[^a-z0-9 ]", " ", a["text"].lower()).split()) for a in qa["answers"]}


def _overlap(a: str, b: str) -> float:
    """Jaccard overlap of two questions' stemmed content words."""
    from ragaudit.documents.checks import content_words, stem

    x, y = {stem(w) for w in content_words(a)}, {stem(w) for w in content_words(b)}
    return len(x & y) / len(x | y) if x | y else 0.0


def wording_cases(squad_dir: Path, per_kind: int) -> list[WordingCase]:
    """Labelled wordings from the subset's own questions, up to ``per_kind`` of each kind:

    * ``same-answer`` (same): two answerable questions of one paragraph that share an
      annotated answer and a third of their content words (people's paraphrases; not
      the same text);
    * ``other-question``: the paragraph's answerable question most like the first one
      whose answers share nothing with it (asks for something else in the same text);
    * ``unanswerable-edit``: the paragraph's unanswerable question most like the first
      one (SQuAD 2.0 wrote these to look answerable; the first one's answer does not
      answer it);
    * ``wh-swap``: the paragraph's first answerable question that :func:`wh_swap` turns
      into one asking for another kind of fact with the same words.
    """
    data = json.loads((squad_dir / SQUAD_FILE).read_text(encoding="utf-8"))
    by_kind: dict[str, list[WordingCase]] = {
        "same-answer": [],
        "other-question": [],
        "unanswerable-edit": [],
        "wh-swap": [],
    }
    for p in (p for article in data["data"] for p in article["paragraphs"]):
        context = p["context"]
        answerable = [qa for qa in p["qas"] if not qa.get("is_impossible") and qa["answers"]]
        for i, qa in enumerate(answerable):
            for earlier in answerable[:i]:
                a, b = earlier["question"].strip(), qa["question"].strip()
                if (
                    _answers(qa) & _answers(earlier)
                    and a.casefold() != b.casefold()
                    and _overlap(a, b) >= 0.3
                ):
                    answer = earlier["answers"][0]["text"]
                    by_kind["same-answer"].append(
                        WordingCase(context, a, answer, b, True, "same-answer")
                    )
        if not answerable:
            continue
        swappable = [(qa, wh_swap(qa["question"].strip())) for qa in answerable]
        for qa, swapped in swappable:
            if swapped:
                by_kind["wh-swap"].append(
                    WordingCase(
                        context,
                        qa["question"].strip(),
                        qa["answers"][0]["text"],
                        swapped,
                        False,
                        "wh-swap",
                    )
                )
                break
        first = answerable[0]
        question, answer = first["question"].strip(), first["answers"][0]["text"]
        mine = _answers(first)

        def apart(qa: dict, mine: set[str] = mine) -> bool:
            return not any(x in y or y in x for x in mine for y in _answers(qa))

        others = [qa for qa in answerable[1:] if apart(qa)]
        impossible = [qa for qa in p["qas"] if qa.get("is_impossible")]
        for kind, pool in (("other-question", others), ("unanswerable-edit", impossible)):
            if pool:
                nearest = max(pool, key=lambda qa: _overlap(question, qa["question"]))
                by_kind[kind].append(
                    WordingCase(context, question, answer, nearest["question"].strip(), False, kind)
                )
    return [c for cases in by_kind.values() for c in cases[:per_kind]]


# Wordings of document pairs written for the project (issue 41, item 10): twelve short
# passages of a programming language's reference, a question and its answer from each, and
# six wordings of each question, three asking the same (paraphrases, one in the short
# style) and three that drift (another fact of the passage, the same ask about another
# operand or subject, another kind of ask, the subject dropped).
OWN_WORDINGS = Path(__file__).resolve().parents[1] / "data" / "document_wording_set.json"


def own_wording_cases(path: Path = OWN_WORDINGS) -> list[WordingCase]:
    """The labelled wordings of :data:`OWN_WORDINGS`, paraphrases first within a pair."""
    cases = []
    for pair in json.loads(path.read_text(encoding="utf-8")):
        for w in pair["wordings"]:
            cases.append(
                WordingCase(
                    pair["context"],
                    pair["question"],
                    pair["answer"],
                    w["text"],
                    w["same"],
                    w["kind"],
                )
            )
    return cases


def check_wordings(
    llm: LLMClient, cases: list[WordingCase], corpus: list[Context], *, drift: bool = True
) -> list[bool | None]:
    """Per case, the generator's wording check's verdict, as it decides a wording but for
    its style's length (None: a reply stayed malformed). ``drift=False``: without the
    drift checks before the reading (the reading alone, as before issue 41)."""
    from ragaudit.documents.generation import answer_leak, question_problem
    from ragaudit.errors import LLMError

    generator = DocumentGenerator(
        llm,
        DocumentOptions(),
        corpus,
        embedder=Embedder(method="words"),
        styles={},
        search=corpus_search(corpus),
    )

    async def every() -> list[bool | None]:
        found: list[bool | None] = []
        for case in cases:
            try:
                if drift:
                    same, _ = await generator.wording_verdict(
                        case.context, case.question, case.answer, case.wording
                    )
                elif question_problem(case.wording) or answer_leak(
                    case.question, case.wording, case.answer
                ):
                    same = False
                else:
                    same, _ = await generator.same_answer(
                        case.context, case.question, case.answer, case.wording
                    )
            except LLMError:
                found.append(None)
                continue
            found.append(same)
        return found

    return asyncio.run(every())


def relabel(
    llm: LLMClient, candidates: list[CandidateRecord], contexts: list[Context], phrasing: str
) -> list[str | None]:
    """The labeller's label, asked in ``phrasing``, of every candidate that reached the
    generator's labeller (in :func:`observed`'s order; None where it stayed undecided):
    the same pairs seen through the other way of asking."""
    from ragaudit.documents.labels import Rater, label_one
    from ragaudit.records.models import LabelPair

    text = {c.id: c for c in contexts}
    rater = Rater(str(getattr(llm.backend, "model", "llm")), phrasing)

    async def every() -> list[str | None]:
        out: list[str | None] = []
        for c in candidates:
            if c.observed_label is None:
                continue
            context = text[c.context_id]
            pair = LabelPair(
                pair_id=c.candidate_id,
                gold_ids=[context.doc_id],
                question=str(c.question),
                answer=c.answer,
            )
            out.append((await label_one(llm, rater, pair, context.text)).label)
        return out

    return asyncio.run(every())


# -- the labeller's two phrasings on SQuAD's answerable questions -----------------------------


def label_answerable(llm: LLMClient, squad_dir: Path, n: int, phrasing: str) -> list[str | None]:
    """The labeller's label, asked once in ``phrasing`` as the generator asks, of each of
    the subset's first ``n`` answerable questions (None: undecided)."""
    from ragaudit.documents.labels import Rater, label_one
    from ragaudit.documents.pairs import read_input

    pairs = read_input(squad_dir / SQUAD_FILE)
    answerable = [p for p in pairs.pairs if p.impossible is False][:n]
    rater = Rater(str(getattr(llm.backend, "model", "llm")), phrasing)

    async def every() -> list[str | None]:
        return [(await label_one(llm, rater, p, pairs.context_of(p))).label for p in answerable]

    return asyncio.run(every())
