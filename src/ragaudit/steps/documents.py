"""``ragaudit generate --documents``: question-answer pairs written from the corpus, checked,
worded in every style, into the document half of dataset.jsonl.

The corpus is chunked as the built-in systems chunk it, so a pair's gold id (its chunk's
document) is what a retriever returns. Contexts are visited in a seeded order, round after
round, until ``size`` pairs are accepted; each requested label has its quota of the size
(largest remainders), so the mix asked for is the mix accepted whenever the model can
write it. Every candidate goes into ``candidates.jsonl`` with its ratings and, when
dropped, the check it failed; an accepted one becomes a semantic group: the generated
question and its verified wordings.

Resumable: every LLM call is cached and every choice is seeded, so a killed generation
asks again only what had not been answered.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from ragaudit.aio import gather_all
from ragaudit.analysis.documents import drop_kind
from ragaudit.config import Config
from ragaudit.documents import checks
from ragaudit.documents import generation as gen
from ragaudit.documents.labels import Rater, label_one
from ragaudit.documents.options import DocumentOptions
from ragaudit.errors import FATAL_LLM_ERRORS, LLMError, UserError
from ragaudit.generate.text.llm import STYLE_INSTRUCTIONS, style_problem
from ragaudit.generate.text.templates import near_duplicate_key
from ragaudit.llm.client import LLMClient
from ragaudit.llm.types import GenerationParams
from ragaudit.llm.usage import tally
from ragaudit.records.io import atomic_write_json, write_jsonl_atomic
from ragaudit.records.models import (
    CandidateRecord,
    CritiqueRating,
    LabelPair,
    QueryRecord,
    QuestionLabel,
    Reference,
    WordingCheck,
    stable_id,
)
from ragaudit.steps.generate import other_half
from ragaudit.steps.session import Session
from ragaudit.systems.corpus import chunk, load_corpus

T = TypeVar("T")

# Contexts shorter than this hold too little to write a question from.
MIN_CONTEXT_WORDS = 12
# A later round asks again at this temperature (its own cache entries), so that it can
# bring a different pair rather than the cached one.
RESAMPLE_TEMPERATURE = 0.7
CRITIQUE_TOKENS = 200
# A reading's reply is a short answer and a passage number.
READING_TOKENS = 80
# Variant name of the question as generated (its wordings are named by their style).
GENERATED = "generated"


@dataclass(frozen=True)
class Context:
    """One chunk of the corpus that questions are written from."""

    id: str
    doc_id: str
    text: str


def corpus_contexts(config: Config) -> tuple[list[Context], int]:
    """The corpus's chunks, as the built-in systems chunk it, and how many were too short
    to write a question from."""
    if config.corpus.path is None:
        raise UserError(
            "generating from documents needs a corpus: set corpus.path in the configuration"
        )
    docs = load_corpus(config.corpus.path)
    pieces = chunk(
        docs,
        config.corpus.chunking,
        size=config.corpus.chunk_size,
        overlap=config.corpus.chunk_overlap,
    )
    out = [
        Context(f"{c.doc_id}#{c.index}", c.doc_id, c.text)
        for c in pieces
        if len(c.text.split()) >= MIN_CONTEXT_WORDS
    ]
    return out, len(pieces) - len(out)


def quotas(shares: dict[QuestionLabel, float], size: int) -> dict[QuestionLabel, int]:
    """``size`` split by ``shares`` into whole counts (largest remainders, ties in label
    order), so that e.g. 10 uniform over four labels is 3, 3, 2, 2."""
    exact = {label: share * size for label, share in shares.items()}
    out = {label: int(value) for label, value in exact.items()}
    left = size - sum(out.values())
    order = sorted(exact, key=lambda label: -(exact[label] - out[label]))
    for label in order[:left]:
        out[label] += 1
    return out


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:300]


@dataclass
class Embedder:
    """Unit vectors of questions, to find near-duplicates: the dense encoder when the
    ``dense`` extra is installed, else word counts (``method`` says which)."""

    method: str = "dense"
    _encode: Callable[[list[str]], np.ndarray] | None = None

    @classmethod
    def best(cls) -> Embedder:
        """The dense encoder if it loads, else the word-count fallback."""
        try:
            from ragaudit.systems.retrievers import dense_model, embed

            dense_model()
        except (ImportError, UserError):
            return cls(method="words")
        return cls(method="dense", _encode=embed)

    def __call__(self, text: str) -> np.ndarray:
        if self._encode is not None:
            return np.asarray(self._encode([text])[0], dtype=np.float32)
        counts = Counter(checks.content_words(text))
        vector = np.zeros(4096, dtype=np.float32)
        for word, n in counts.items():
            vector[int(stable_id(word, length=8), 16) % 4096] += n
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector


@dataclass
class _Pending:
    """A candidate being checked: its fields so far and the label it holds a slot of."""

    context: Context
    label: QuestionLabel | None
    fields: dict[str, Any] = field(default_factory=dict)


class DocumentGenerator:
    """Writes and checks pairs from ``contexts`` with ``llm`` until ``options.size`` are
    accepted or the rounds are spent. ``corpus`` is every context, searched (BM25) for
    passages that might answer a question meant to be unanswerable."""

    def __init__(
        self,
        llm: LLMClient,
        options: DocumentOptions,
        contexts: list[Context],
        corpus: list[Context],
        *,
        embedder: Embedder,
        styles: dict[str, str],
        on_candidate: Callable[[CandidateRecord], None] | None = None,
    ) -> None:
        self.llm = llm
        self.options = options
        self.contexts = contexts
        self.corpus = corpus
        self.embed = embedder
        self.styles = styles
        self.on_candidate = on_candidate
        self.records: list[CandidateRecord] = []
        self.accepted_vectors = np.zeros((0, 0), dtype=np.float32)
        self.accepted_ids: list[str] = []
        self.wanted: dict[QuestionLabel | None, int] = {None: options.size}
        if options.strategy == "statements":
            self.wanted = {k: v for k, v in quotas(options.shares(), options.size).items()}
        self.taken: Counter[QuestionLabel | None] = Counter()  # accepted or in flight
        self.accepted: Counter[QuestionLabel | None] = Counter()
        self._memo: dict[tuple[str, ...], asyncio.Future[Any]] = {}
        self._failed_contexts: set[str] = set()
        self._reported: set[tuple[str, str]] = set()
        self._used: dict[tuple[str, str], set[str]] = {}
        self._bm25: Any = None
        self.rater = Rater(str(getattr(llm.backend, "model", "llm")), options.label_phrasing)

    # -- small helpers -------------------------------------------------------------------

    def params(self, max_tokens: int, round_: int = 0) -> GenerationParams:
        """The generation parameters of one ask; a later round samples anew."""
        base = self.llm.default_params
        update: dict[str, Any] = {"max_tokens": max_tokens}
        if round_:
            update |= {
                "temperature": RESAMPLE_TEMPERATURE,
                "sample_index": round_,
                "seed": (base.seed or 0) + round_,
            }
        return base.model_copy(update=update)

    async def _once(self, key: tuple[str, ...], make: Callable[[], Awaitable[T]]) -> T:
        """``make()`` once per key, shared by every candidate that needs it."""
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = asyncio.ensure_future(make())
        return await asyncio.shield(found)

    @property
    def done(self) -> bool:
        """Whether every quota is filled."""
        return all(self.accepted[label] >= n for label, n in self.wanted.items())

    def _claim(self, rng: random.Random) -> tuple[bool, QuestionLabel | None]:
        """A label with a free slot, the one furthest below its quota (ties at random),
        taken: ``(True, label)``; ``(False, None)`` when every slot is accepted or in
        flight."""
        free = {label: n - self.taken[label] for label, n in self.wanted.items()}
        open_ = [label for label, n in free.items() if n > 0]
        if not open_:
            return False, None
        most = max(free[label] / max(1, self.wanted[label]) for label in open_)
        label = rng.choice([lab for lab in open_ if free[lab] / max(1, self.wanted[lab]) == most])
        self.taken[label] += 1
        return True, label

    def _record(self, outcome: _Outcome, *, holds_slot: bool = True) -> None:
        """Record a finished candidate, in job order: the near-duplicate and size checks
        against what was accepted before it are made here, so that the outcome does not
        depend on which concurrent ask finished first. ``holds_slot``: the candidate took
        a slot of its label's quota when it was started."""
        pending, dropped = outcome.pending, outcome.dropped
        f = pending.fields
        if dropped is None:
            dropped = self._duplicate(f["vector"])
        if dropped is None and self.accepted[pending.label] >= self.wanted[pending.label]:
            dropped = "size: the requested count was reached"
        record = CandidateRecord(
            candidate_id=stable_id(
                pending.context.id,
                self.options.strategy,
                pending.label,
                f.get("question"),
                f.get("statement"),
                f.get("round"),
            ),
            context_id=pending.context.id,
            gold_ids=[pending.context.doc_id],
            strategy=self.options.strategy,
            requested_label=pending.label,
            theme=f.get("theme"),
            statement_kind=f.get("statement_kind"),
            statement=f.get("statement"),
            question=f.get("question"),
            answer=f.get("answer"),
            support=f.get("support"),
            critiques=f.get("critiques"),
            observed_label=f.get("observed_label"),
            accepted=dropped is None,
            dropped=dropped,
            round=f.get("round", 0),
            calls=outcome.calls,
            tokens=outcome.tokens,
        )
        if not holds_slot:
            self.taken[pending.label] += 1
        if dropped is None:
            self.accepted[pending.label] += 1
            vector = f["vector"]
            if self.accepted_vectors.size == 0:
                self.accepted_vectors = vector[None, :]
            else:
                self.accepted_vectors = np.vstack([self.accepted_vectors, vector])
            self.accepted_ids.append(record.candidate_id)
        else:
            self.taken[pending.label] -= 1
        self.records.append(record)
        if self.on_candidate is not None:
            self.on_candidate(record)

    # -- the LLM asks ---------------------------------------------------------------------

    async def _facts(self, context: Context) -> gen.Facts:
        return await self._once(
            ("facts", context.id),
            lambda: self.llm.acomplete_parsed(
                gen.facts_prompt(context.text),
                gen.parse_facts_reply,
                "a first line 'Theme - <theme>', then one statement per line starting with '> '",
                self.params(400),
            ),
        )

    async def _statements(self, context: Context, kind: gen.StatementKind) -> list[str]:
        facts = await self._facts(context)
        if kind == "fact":
            return list(facts.facts)
        return await self._once(
            (kind, context.id),
            lambda: self.llm.acomplete_parsed(
                gen.combined_prompt(kind, facts),
                gen.parse_statements,
                "three statements, one per line, each starting with '> '",
                self.params(300),
            ),
        )

    def _corpus_passages(self, context: Context, question: str) -> list[str]:
        """The corpus passages of other documents that rank highest for ``question``."""
        n = self.options.corpus_check
        if not n or len(self.corpus) < 2:
            return []
        if self._bm25 is None:
            from ragaudit.systems.corpus import Chunk
            from ragaudit.systems.retrievers import BM25Retriever

            self._bm25 = BM25Retriever([Chunk(c.doc_id, 0, c.text) for c in self.corpus])
        hits = self._bm25.retrieve(question, n + 1)
        return [h.text for h in hits if h.doc_id != context.doc_id][:n]

    # -- one candidate ---------------------------------------------------------------------

    async def _check(self, pending: _Pending) -> str | None:
        """Why the pending pair is dropped, or None when it passes every check. Fills in
        what each check found."""
        f = pending.fields
        context = pending.context
        question, answer = f["question"], f.get("answer")
        problem = gen.question_problem(question)
        if problem:
            return f"question: {problem}"
        decided: checks.Support | None = None
        if answer is not None:
            decided, why = checks.answer_support(context.text, answer)
            f["support"] = f"words: {why}"
            if decided == "unsupported":
                return f"support: {why}"
        vector = f["vector"] = self.embed(question)
        dup = self._duplicate(vector)
        if dup:
            return dup
        if pending.label == "unanswerable":  # the check most such questions fail, first
            passages = [context.text, *self._corpus_passages(context, question)]
            reading = await self.llm.acomplete_parsed(
                checks.reading_prompt(passages, question),
                checks.parse_reading,
                'JSON: {"answer": ..., "passage": ...}',
                self.params(READING_TOKENS),
            )
            if reading.answer is not None:
                where = "its context" if reading.passage in (None, 1) else "another passage"
                return f"unanswerable check: {where} answers it ({reading.answer[:80]!r})"
            f["support"] = f"unanswerable: none of {len(passages)} passages answers it"
        critiques = await self.llm.acomplete_parsed(
            checks.critique_prompt(context.text, question, answer),
            checks.parse_critiques,
            "JSON with the four ratings",
            self.params(CRITIQUE_TOKENS),
        )
        f["critiques"] = {
            k: CritiqueRating(rating=v.rating, reason=v.reason) for k, v in critiques.items()
        }
        thresholds = dict(self.options.thresholds)
        if answer is None:  # a question meant to be unanswered: only the question is rated
            thresholds = {k: thresholds[k] for k in ("stand_alone", "specificity")}
        failed = checks.failed_critiques(critiques, thresholds)
        if answer is not None and decided is None:
            grounded = critiques["answer_grounding"].rating
            f["support"] = f"critique: answer_grounding {grounded}"
        if failed:
            return "critique: " + "; ".join(failed)
        if self.options.check_label:
            pair = LabelPair(
                pair_id=stable_id(context.id, question),
                gold_ids=[context.doc_id],
                question=question,
                answer=answer,
            )
            labelled = await label_one(self.llm, self.rater, pair, context.text)
            if labelled.label is None:
                return f"label: {labelled.reason}"
            f["observed_label"] = labelled.label
            if pending.label != "unanswerable" and labelled.label == "unanswerable":
                return "label: the labeller finds that the context does not answer it"
        return None

    def _duplicate(self, vector: np.ndarray) -> str | None:
        found = checks.near_duplicate(vector, self.accepted_vectors, self.options.near_duplicate)
        if found is None:
            return None
        row, cosine = found
        return f"near-duplicate: of {self.accepted_ids[row]} (cosine {cosine:.2f})"

    async def _candidate(
        self, pending: _Pending, write: Callable[[], Awaitable[None]]
    ) -> _Outcome | None:
        """Write (``write``) and check one candidate: its outcome, with what it cost; None
        when the context had nothing left to write it from."""
        with tally() as cost:
            try:
                await write()
                dropped = await self._check(pending)
            except _NothingLeft:
                return None
            except _StatementsFailed as failed:
                if failed.key in self._reported:  # recorded once, at the first candidate
                    return None
                self._reported.add(failed.key)
                if failed.key[1] == "facts":
                    self._failed_contexts.add(pending.context.id)
                dropped = f"llm: {failed.key[1]} statements: {_short(failed.error)}"
            except FATAL_LLM_ERRORS:
                raise
            except LLMError as exc:
                stage = "question" if "question" not in pending.fields else "check"
                dropped = f"llm: {stage}: {_short(exc)}"
        return _Outcome(pending, dropped, cost.calls, cost.tokens)

    async def _visit_statements(
        self, context: Context, round_: int, rng: random.Random, label: QuestionLabel | None
    ) -> list[_Outcome]:
        assert label is not None
        pending = _Pending(context, label, {"round": round_})
        kind = gen.STATEMENT_KIND[label]

        async def write() -> None:
            stage = "facts"
            try:
                facts = await self._facts(context)
                stage = kind or "facts"
                statements = await self._statements(context, kind) if kind else []
            except FATAL_LLM_ERRORS:
                raise
            except LLMError as exc:
                raise _StatementsFailed((context.id, stage), exc) from None
            pending.fields["theme"] = facts.theme
            if kind is None:
                pending.fields["question"] = await self.llm.acomplete_parsed(
                    gen.unanswerable_prompt(facts),
                    gen.parse_question,
                    "one question ending with '?'",
                    self.params(80, round_),
                )
                return
            used = self._used.setdefault((context.id, kind), set())
            left = [s for s in statements if s not in used]
            if not left:
                raise _NothingLeft(kind)
            statement = rng.choice(left)
            used.add(statement)
            pending.fields |= {"statement_kind": kind, "statement": statement, "answer": statement}
            pending.fields["question"] = await self.llm.acomplete_parsed(
                gen.question_prompt(facts.theme, statement),
                gen.parse_question,
                "one question ending with '?'",
                self.params(80),
            )

        outcome = await self._candidate(pending, write)
        return [outcome] if outcome is not None else []

    async def _visit_simple(
        self, context: Context, round_: int, rng: random.Random, label: QuestionLabel | None
    ) -> list[_Outcome]:
        n = self.options.per_context
        with tally() as cost:
            try:
                pairs = await self.llm.acomplete_parsed(
                    gen.simple_prompt(context.text, n),
                    lambda reply: gen.parse_simple_reply(reply, n),
                    '{"pairs": [{"question": "...", "answer": "..."}]}',
                    self.params(150 * n, round_),
                )
            except FATAL_LLM_ERRORS:
                raise
            except LLMError as exc:
                failed = _Pending(context, None, {"round": round_})
                return [_Outcome(failed, f"llm: question: {_short(exc)}", cost.calls, cost.tokens)]
        out = []
        for pair in pairs:
            fields = {"round": round_, "question": pair.question, "answer": pair.answer}
            pending = _Pending(context, None, fields)

            async def write() -> None:
                return None

            outcome = await self._candidate(pending, write)
            assert outcome is not None
            out.append(outcome)
        if out:  # the ask that wrote every pair is counted with the first
            out[0].calls += cost.calls
            out[0].tokens += cost.tokens
        return out

    # -- the whole generation ----------------------------------------------------------------

    async def generate(self) -> list[CandidateRecord]:
        """Every candidate, in job order. Jobs (round by round, contexts in a seeded order)
        run in batches of as many as the backend takes at once; labels are claimed and
        outcomes recorded in job order, so that a rerun from the cache decides the same."""
        order = list(self.contexts)
        random.Random(self.options.seed).shuffle(order)
        jobs = [(r, c) for r in range(self.options.rounds) for c in order]
        visit = (
            self._visit_statements if self.options.strategy == "statements" else self._visit_simple
        )
        width = max(1, int(getattr(self.llm.backend, "max_concurrency", 1)))
        at = 0
        while at < len(jobs) and not self.done:
            batch: list[tuple[int, Context, random.Random, QuestionLabel | None]] = []
            while at < len(jobs) and len(batch) < width:
                round_, context = jobs[at]
                if context.id in self._failed_contexts:
                    at += 1
                    continue
                if any(c.id == context.id for _, c, _, _ in batch):
                    break  # one context at a time: its statements are chosen in order
                rng = random.Random(stable_id(self.options.seed, context.id, round_))
                claimed, label = self._claim(rng)
                if not claimed:
                    break  # every slot is in this batch
                batch.append((round_, context, rng, label))
                at += 1
            if not batch:
                break
            results = await gather_all(
                *(visit(context, round_, rng, label) for round_, context, rng, label in batch)
            )
            for (_, _, _, label), outcomes in zip(batch, results, strict=True):
                if not outcomes:  # nothing to write from: the slot is free again
                    self.taken[label] -= 1
                for i, outcome in enumerate(outcomes):
                    self._record(outcome, holds_slot=i == 0)
        return self.records

    # -- wordings ----------------------------------------------------------------------------

    async def _read(self, context: str, question: str) -> str | None:
        """The answer the model reads for ``question`` in ``context`` alone (None: unknown).
        Raises ``LLMError`` when the reply stays malformed."""
        reading = await self.llm.acomplete_parsed(
            checks.reading_prompt([context], question),
            checks.parse_reading,
            'JSON: {"answer": ..., "passage": ...}',
            self.params(READING_TOKENS),
        )
        return reading.answer

    async def same_answer(
        self, context: str, question: str, answer: str | None, wording: str
    ) -> tuple[bool, str | None]:
        """Whether ``wording`` asks what ``question`` asks (whose answer from ``context`` is
        ``answer``; None for a question the context does not answer), and why not: the
        answer read for the wording must be ``answer``, or else the answer read for the
        question itself (one more ask, once per question). docs/documents.md states the
        check's rates. Raises ``LLMError`` when a reply stays malformed."""
        found = await self._read(context, wording)
        if answer is not None and checks.answers_agree(answer, found):
            return True, None
        read = await self._read(context, question)
        if checks.answers_agree(read, found):
            return True, None
        got = "nothing" if found is None else repr(found[:60])
        was = "nothing" if read is None else repr(read[:60])
        return False, f"the context gives it {got}, the question {was}"

    async def word(self, record: CandidateRecord) -> list[WordingCheck]:
        """The candidate's question in every style, each checked to ask the same thing."""
        out = []
        question = record.question or ""
        context = next(c for c in self.contexts if c.id == record.context_id).text
        for style, instruction in self.styles.items():
            text: str | None = None
            try:
                text = await self.llm.acomplete_parsed(
                    gen.wording_prompt(question, instruction),
                    gen.parse_wording,
                    "the reworded question only",
                    self.params(120),
                )
                problem = (
                    style_problem(style, text)
                    or gen.question_problem(text)
                    or gen.answer_leak(question, text, record.answer)
                )
                if near_duplicate_key(text) == near_duplicate_key(question):
                    problem = "the same as the generated question"
                if problem:
                    out.append(WordingCheck(style=style, text=text, kept=False, reason=problem))
                    continue
                same, why = await self.same_answer(context, question, record.answer, text)
            except FATAL_LLM_ERRORS:
                raise
            except LLMError as exc:
                reason = f"llm: {_short(exc)}"
                out.append(WordingCheck(style=style, text=text, kept=False, reason=reason))
                continue
            dropped = None if same else f"asks something else: {why}"
            out.append(WordingCheck(style=style, text=text, kept=same, reason=dropped))
        return out


@dataclass
class _Outcome:
    """A checked candidate waiting to be recorded: why it is dropped (None: it passed
    every check so far) and what it cost."""

    pending: _Pending
    dropped: str | None
    calls: int
    tokens: int


class _NothingLeft(Exception):
    """The context has no unused statement of the kind a label needs."""


class _StatementsFailed(Exception):
    """A context's statements (``key``: context id and stage) could not be had."""

    def __init__(self, key: tuple[str, str], error: LLMError) -> None:
        super().__init__(str(error))
        self.key = key
        self.error = error


def style_instructions(config: Config, styles: list[str]) -> dict[str, str]:
    """The instruction of each style (built-in or from ``templates.style_instructions``)."""
    out = {}
    for style in styles:
        instruction = config.templates.style_instructions.get(style) or STYLE_INSTRUCTIONS.get(
            style
        )
        if instruction is None:
            raise UserError(
                f"style {style!r} has no instruction: add it under templates.style_instructions"
            )
        out[style] = instruction
    return out


def queries_of(record: CandidateRecord, wordings: list[WordingCheck]) -> list[QueryRecord]:
    """The semantic group of an accepted candidate: its question and its kept wordings."""
    assert record.question is not None
    unanswerable = record.requested_label == "unanswerable"
    reference = (
        Reference(values=[], display="(no answer)")
        if unanswerable or record.answer is None
        else Reference(values=[record.answer], display=record.answer)
    )
    label = record.requested_label or record.observed_label
    texts = [(GENERATED, record.question)] + [
        (w.style, w.text) for w in wordings if w.kept and w.text
    ]
    return [
        QueryRecord(
            query_id=stable_id("document", record.candidate_id, variant, text),
            group_id=f"doc-{record.candidate_id}",
            template_id=f"document:{record.strategy}:{label or 'unlabelled'}",
            variant=variant,
            query=text,
            reference=reference,
            gold_ids=[] if unanswerable else list(record.gold_ids),
            gold_kind="states",
            label=label,
            source="document",
        )
        for variant, text in texts
    ]


@dataclass
class DocumentStats:
    """What a generation from documents did and cost."""

    strategy: str
    size: int
    contexts: int
    short_contexts: int
    candidates: int = 0
    accepted: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    requested: dict[str, int] = field(default_factory=dict)
    accepted_by_label: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    tokens: int = 0
    wordings: dict[str, dict[str, int]] = field(default_factory=dict)
    queries: int = 0
    near_duplicates_by: str = "dense"
    warnings: list[str] = field(default_factory=list)

    @property
    def calls_per_pair(self) -> float | None:
        """LLM requests per accepted pair (None when none was accepted)."""
        return self.calls / self.accepted if self.accepted else None

    @property
    def tokens_per_pair(self) -> float | None:
        """Tokens per accepted pair (None when none was accepted)."""
        return self.tokens / self.accepted if self.accepted else None

    def shortfall(self) -> str | None:
        """Why fewer pairs than asked were accepted, in one line; None when none is short."""
        if self.accepted >= self.size:
            return None
        reasons = ", ".join(
            f"{n} {why}" for why, n in sorted(self.dropped.items(), key=lambda x: -x[1])
        )
        short = [
            f"{label} {self.accepted_by_label.get(label, 0)}/{n}"
            for label, n in self.requested.items()
            if self.accepted_by_label.get(label, 0) < n
        ]
        return (
            f"{self.accepted} of {self.size} pairs accepted after {self.candidates} candidates "
            f"from {self.contexts} contexts"
            + (f" (short: {', '.join(short)})" if short and self.requested else "")
            + (f"; dropped: {reasons}" if reasons else "")
        )


def generate_from_documents(
    session: Session,
    options: DocumentOptions,
    *,
    on_start: Callable[[int], None] | None = None,
    on_candidate: Callable[[CandidateRecord], None] | None = None,
) -> DocumentStats:
    """Generate, check and word pairs from the corpus; write candidates.jsonl, the document
    half of dataset.jsonl (the SQL half is kept) and documents.stats.json. Nothing accepted
    is a :class:`UserError` that says why (candidates.jsonl is still written, so the reasons
    can be read), and the dataset is left as it was."""
    config = session.config
    run = session.run_dir
    contexts, short = corpus_contexts(config)
    if not contexts:
        raise UserError(
            f"no context to write questions from: the corpus's {short} chunks all have fewer "
            f"than {MIN_CONTEXT_WORDS} words"
        )
    used = contexts[: options.max_contexts] if options.max_contexts else contexts
    styles = config.templates.styles if options.styles is None else options.styles
    instructions = style_instructions(config, styles)
    embedder = Embedder.best()
    stats = DocumentStats(
        strategy=options.strategy,
        size=options.size,
        contexts=len(used),
        short_contexts=short,
        near_duplicates_by=embedder.method,
    )
    if embedder.method != "dense":
        stats.warnings.append(
            "near-duplicates found by word overlap: install the dense extra for embeddings"
        )
    if on_start is not None:
        on_start(options.size)
    with session.llm("generate-documents") as llm:
        assert llm is not None
        generator = DocumentGenerator(
            llm,
            options,
            used,
            contexts,
            embedder=embedder,
            styles=instructions,
            on_candidate=on_candidate,
        )
        stats.requested = {str(k): v for k, v in generator.wanted.items() if k is not None}
        with tally() as total:
            records = session.run(generator.generate())
            accepted = [r for r in records if r.accepted]
            wordings = {r.candidate_id: session.run(generator.word(r)) for r in accepted}
    records = [
        r.model_copy(update={"wordings": wordings.get(r.candidate_id, [])}) if r.accepted else r
        for r in records
    ]
    write_jsonl_atomic(run.candidates, records)
    stats.candidates = len(records)
    stats.accepted = len(accepted)
    stats.dropped = dict(Counter(drop_kind(r.dropped) for r in records if r.dropped))
    stats.accepted_by_label = dict(
        Counter(str(r.requested_label or r.observed_label or "unlabelled") for r in accepted)
    )
    stats.calls, stats.tokens = total.calls, total.tokens
    for checks_ in wordings.values():
        for w in checks_:
            counts = stats.wordings.setdefault(w.style, {"kept": 0})
            key = "kept" if w.kept else drop_kind(w.reason or "dropped")
            counts[key] = counts.get(key, 0) + 1
    if not accepted:
        raise UserError("no pair accepted: " + (stats.shortfall() or "nothing generated"))
    queries = [q for r in accepted for q in queries_of(r, wordings[r.candidate_id])]
    stats.queries = len(queries)
    kept = list(other_half(run.dataset, "document"))  # the other parts stay
    write_jsonl_atomic(run.dataset, [*kept, *queries])
    atomic_write_json(run.documents_stats, _stats_json(stats, options))
    return stats


def _stats_json(stats: DocumentStats, options: DocumentOptions) -> dict[str, Any]:
    data = {k: v for k, v in vars(stats).items()}
    data["calls_per_pair"] = stats.calls_per_pair
    data["tokens_per_pair"] = stats.tokens_per_pair
    data["shortfall"] = stats.shortfall()
    data["options"] = options.model_dump(mode="json")
    return data
