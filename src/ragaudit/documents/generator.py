"""The document generator: question-answer pairs written from contexts with the LLM, each
checked (support by the context, near-duplicates, the reading of a ``simple`` reference,
the unanswerable reading, critiques, the label), until the requested number is accepted;
then the accepted questions worded in every style, each wording checked to ask the same
thing.

Contexts are visited in a seeded order, round after round, until ``size`` pairs are
accepted; each requested label has its quota of the size (largest remainders), so the mix
asked for is the mix accepted whenever the model can write it. Every candidate is recorded
with its ratings and, when dropped, the check it failed. Choices are seeded and outcomes
recorded in job order, so a rerun from the LLM cache decides the same.

The engine reads no configuration and writes no file. What it needs from the layers above
it comes in as plain parameters: the question embedder (dense vectors where the ``dense``
extra is installed), the corpus search of the unanswerable check (BM25), and the checks a
wording of a style must pass. :mod:`ragaudit.steps.documents` wires them from the
configuration and writes the run's files.
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
from ragaudit.documents import checks
from ragaudit.documents import generation as gen
from ragaudit.documents.labels import Rater, label_one
from ragaudit.documents.options import DocumentOptions
from ragaudit.errors import FATAL_LLM_ERRORS, LLMError
from ragaudit.llm.client import LLMClient
from ragaudit.llm.types import GenerationParams
from ragaudit.llm.usage import tally
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

T = TypeVar("T")

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
    # What its document is about ("click.Path"): a question must name it or something as
    # rare (:func:`~ragaudit.documents.checks.names_no_subject`); empty, the document id.
    title: str = ""


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


# (question, n) -> the ``n`` passages of the corpus that rank highest for the question, as
# (document id, text): where the unanswerable check looks for an answer besides the context.
PassageSearch = Callable[[str, int], list[tuple[str, str]]]
# (style, generated question, wording) -> why the wording is not kept before it is read
# (it does not fit its style, it is the question again), or None.
WordingProblem = Callable[[str, str, str], str | None]


@dataclass
class Embedder:
    """Unit vectors of questions, to find near-duplicates: ``encode`` (the dense encoder,
    given where the ``dense`` extra loads), else word counts; ``method`` says which."""

    method: str = "words"
    encode: Callable[[list[str]], np.ndarray] | None = None

    def __call__(self, text: str) -> np.ndarray:
        if self.encode is not None:
            return np.asarray(self.encode([text])[0], dtype=np.float32)
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
    accepted or the rounds are spent, then words the accepted ones in ``styles`` (style ->
    the instruction the model is given).

    ``search`` finds the corpus's passages that might answer a question meant to be
    unanswerable (None: only its own context is read); ``wording_problem`` rejects a
    wording before it is read (None: only the engine's own checks); ``on_candidate``
    hears every candidate as it is recorded."""

    def __init__(
        self,
        llm: LLMClient,
        options: DocumentOptions,
        contexts: list[Context],
        *,
        embedder: Embedder,
        styles: dict[str, str],
        search: PassageSearch | None = None,
        wording_problem: WordingProblem | None = None,
        on_candidate: Callable[[CandidateRecord], None] | None = None,
    ) -> None:
        self.llm = llm
        self.options = options
        self.contexts = contexts
        self.embed = embedder
        self.styles = styles
        self.search = search
        self.wording_problem = wording_problem
        self.on_candidate = on_candidate
        self.records: list[CandidateRecord] = []
        # Requests of a candidate that was never written (its context had nothing left):
        # carried to the next record, so that every request of the generation is some
        # record's and the records' calls add up to what the generation cost.
        self._carried = (0, 0)  # calls, tokens
        self.accepted_vectors = np.zeros((0, 0), dtype=np.float32)
        self.accepted_ids: list[str] = []
        self.wanted: dict[QuestionLabel | None, int] = {None: options.size}
        if options.strategy == "statements":
            self.wanted = {k: v for k, v in quotas(options.shares(), options.size).items()}
        self.taken: Counter[QuestionLabel | None] = Counter()  # accepted or in flight
        self.asked: Counter[QuestionLabel | None] = Counter()  # claims, per label
        self.accepted: Counter[QuestionLabel | None] = Counter()
        self._memo: dict[tuple[str, ...], asyncio.Future[Any]] = {}
        self._reads: dict[tuple[str, str], str | None] = {}  # (context, question): answer
        self._failed_contexts: set[str] = set()
        self._reported: set[tuple[str, str]] = set()
        self._used: dict[tuple[str, str], set[str]] = {}
        self.rater = Rater(str(getattr(llm.backend, "model", "llm")), options.label_phrasing)
        self.corpus_words = checks.CorpusWords((c.doc_id, c.text) for c in contexts)

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
        """A label with a free slot, taken: ``(True, label)``; ``(False, None)`` when every
        slot is accepted or in flight. Of the labels with a free slot, the one asked least
        for its share (ties at random): the requests follow the mix, so a label whose
        candidates keep failing (unanswerable questions that their context answers) gets
        its share of the contexts and no more, where "the label furthest below its quota"
        gave it every context once the others had one pair each."""
        free = {label: n - self.taken[label] for label, n in self.wanted.items()}
        open_ = [label for label, n in free.items() if n > 0]
        if not open_:
            return False, None

        def asked(lab: QuestionLabel | None) -> float:
            return self.asked[lab] / max(1, self.wanted[lab])

        least = min(asked(label) for label in open_)
        label = rng.choice([lab for lab in open_ if asked(lab) == least])
        self.taken[label] += 1
        self.asked[label] += 1
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
            calls=outcome.calls + self._carried[0],
            tokens=outcome.tokens + self._carried[1],
        )
        self._carried = (0, 0)
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
                gen.FACTS_REPLY,
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
                gen.STATEMENTS_REPLY,
                self.params(300),
            ),
        )

    def _corpus_passages(self, context: Context, question: str) -> list[str]:
        """The corpus passages of other documents that rank highest for ``question``."""
        n = self.options.corpus_check
        if not n or self.search is None:
            return []
        hits = self.search(question, n + 1)
        return [text for doc_id, text in hits if doc_id != context.doc_id][:n]

    # -- one candidate ---------------------------------------------------------------------

    async def _check(self, pending: _Pending) -> str | None:
        """Why the pending pair is dropped, or None when it passes every check. Fills in
        what each check found."""
        f = pending.fields
        context = pending.context
        question, answer = f["question"], f.get("answer")
        simple = self.options.strategy == "simple" and answer is not None
        # A simple answer is the asked value alone, so none of its words may be the
        # question's; a statement names its subject as its question does, and must add
        # more than the kind of thing it is about.
        circular = checks.answer_in_question if simple else checks.restates_question
        problem = (
            gen.question_problem(question)
            or (circular(question, answer) if answer else None)
            # A simple answer is one thing: a question written from a sentence about several
            # of its kind gets one of them (a statement is read back within its own words).
            or (checks.one_of_several(context.text, question) if simple else None)
            or checks.names_no_subject(
                question, context.doc_id, context.title or context.doc_id, self.corpus_words
            )
        )
        if problem:
            return f"question: {problem}"
        decided: checks.Support | None = None
        if answer is not None:
            decided, why = checks.answer_support(context.text, answer)
            f["support"] = f"words: {why}"
            if decided == "unsupported":
                return f"support: {why}"
            ambiguous = checks.case_ambiguous(context.text, answer) if simple else None
            if ambiguous:
                return f"support: {ambiguous}"
            # The simple prompt asks for the fact "as the context states it": an answer
            # written as a sentence is held to a statement's rule ("The 'import' statement
            # is used to import modules ..." from a page that never says so: 42%).
            sentence = len(checks.content_words(answer)) > checks.SHORT_ANSWER_WORDS
            if decided is None and (sentence or not simple):
                what = "answer" if simple else "statement"
                unstated = checks.statement_not_stated(context.text, answer, what)
                if unstated:
                    return f"support: {unstated}"
        vector = f["vector"] = self.embed(question)
        dup = self._duplicate(vector)
        if dup:
            return dup
        read_agrees = False
        if answer is not None:
            # A reference is free text written with its question: simple's words can all
            # be in the context in another order and say the opposite ("both evaluate the
            # left side first"); a statement can be one of several things the question
            # asks for ("What does echo do?": one of its five behaviours). The model reads
            # the question in the context alone, as the wording check reads a wording, and
            # that answer must be the reference's (for a statement: within it).
            read = await self._read(context.text, question)
            if read is None or not checks.reading_agrees(question, answer, read):
                got = "nothing" if read is None else repr(read[:60])
                return f"reading: the context gives {got}, the reference says {answer[:60]!r}"
            read_agrees = True
            f["support"] = f"{f['support']}; reading: the context gives it ({read[:60]!r})"
        if pending.label == "unanswerable":  # the check most such questions fail, first
            passages = [context.text, *self._corpus_passages(context, question)]
            reading = await self.llm.acomplete_parsed(
                checks.reading_prompt(passages, question),
                checks.parse_reading,
                checks.READING_REPLY,
                self.params(READING_TOKENS),
            )
            if reading.answer is not None:
                where = "its context" if reading.passage in (None, 1) else "another passage"
                return f"unanswerable check: {where} answers it ({reading.answer[:80]!r})"
            f["support"] = (
                f"unanswerable: none of {len(passages)} passages answers it "
                f"(a near miss: {f.get('miss', 'any')})"
            )
        critiques = await self.llm.acomplete_parsed(
            checks.critique_prompt(context.text, question, answer),
            checks.parse_critiques,
            checks.CRITIQUE_REPLY,
            self.params(CRITIQUE_TOKENS),
        )
        f["critiques"] = {
            k: CritiqueRating(rating=v.rating, reason=v.reason) for k, v in critiques.items()
        }
        thresholds = dict(self.options.thresholds)
        if answer is None:  # a question meant to be unanswered: only the question is rated
            thresholds = {k: thresholds[k] for k in ("stand_alone", "specificity")}
        failed = checks.failed_critiques(critiques, thresholds)
        if answer is not None and decided is None and not read_agrees:
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
        when the context had nothing left to write it from (what it asked is carried to
        the next record)."""
        with tally() as cost:
            try:
                await write()
                dropped = await self._check(pending)
            except _NothingLeft:
                self._carry(cost.calls, cost.tokens)
                return None
            except _StatementsFailed as failed:
                if failed.key in self._reported:  # recorded once, at the first candidate
                    self._carry(cost.calls, cost.tokens)
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

    def _carry(self, calls: int, tokens: int) -> None:
        """Keep the cost of a candidate that was not written, for the next record."""
        self._carried = (self._carried[0] + calls, self._carried[1] + tokens)

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
                # A near miss of a kind this context has not had yet (each kind once per
                # context), drawn with the candidate's seeded choice.
                had = self._used.setdefault((context.id, "unanswerable"), set())
                kinds = [k for k in gen.UNANSWERABLE_KINDS if k not in had]
                if not kinds:
                    raise _NothingLeft("unanswerable")
                miss = rng.choice(kinds)
                had.add(miss)
                pending.fields["miss"] = miss
                pending.fields["question"] = await self.llm.acomplete_parsed(
                    gen.unanswerable_prompt(facts, miss),
                    gen.parse_question,
                    gen.QUESTION_REPLY,
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
                gen.QUESTION_REPLY,
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
                    gen.SIMPLE_REPLY,
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
        else:
            self._carry(cost.calls, cost.tokens)
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
                    self.asked[label] -= 1
                for i, outcome in enumerate(outcomes):
                    self._record(outcome, holds_slot=i == 0)
        if self.records and self._carried != (0, 0):  # asked after the last record: its
            last = self.records[-1]
            self.records[-1] = last.model_copy(
                update={
                    "calls": last.calls + self._carried[0],
                    "tokens": last.tokens + self._carried[1],
                }
            )
            self._carried = (0, 0)
        return self.records

    # -- wordings ----------------------------------------------------------------------------

    async def _read(self, context: str, question: str) -> str | None:
        """The answer the model reads for ``question`` in ``context`` alone (None: unknown),
        read once: the reference's check and the wording check read the same question, and
        a pair's cost counts the read once. Raises ``LLMError`` when the reply stays
        malformed."""
        key = (context, question)
        if key not in self._reads:
            reading = await self.llm.acomplete_parsed(
                checks.reading_prompt([context], question),
                checks.parse_reading,
                checks.READING_REPLY,
                self.params(READING_TOKENS),
            )
            self._reads[key] = reading.answer
        return self._reads[key]

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

    async def wording_verdict(
        self, context: str, question: str, answer: str | None, wording: str
    ) -> tuple[bool, str | None]:
        """Whether ``wording`` may stand for ``question`` (answered by ``answer`` in
        ``context``), and why not: the checks that need no model first (it leans on a text,
        gives the answer away, asks for another kind of fact or leaves out a name, number
        or piece of code: :func:`~ragaudit.documents.checks.wording_drift`), then the
        reading (:meth:`same_answer`). Everything :meth:`word` checks but its style's
        length; docs/documents.md states the rates. Raises ``LLMError`` when a reply stays
        malformed."""
        problem = gen.question_problem(wording) or gen.answer_leak(question, wording, answer)
        if problem:
            return False, problem
        drift = checks.wording_drift(question, wording)
        if drift is None:
            same, drift = await self.same_answer(context, question, answer, wording)
            if same:
                return True, None
        return False, f"asks something else: {drift}"

    async def worded(self, record: CandidateRecord) -> CandidateRecord:
        """An accepted candidate with its wordings (:meth:`word`), whose requests are added
        to its cost: a pair's cost is its writing, its checks and its wordings."""
        with tally() as cost:
            wordings = await self.word(record)
        return record.model_copy(
            update={
                "wordings": wordings,
                "calls": record.calls + cost.calls,
                "tokens": record.tokens + cost.tokens,
            }
        )

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
                    gen.WORDING_REPLY,
                    self.params(120),
                )
                given = self.wording_problem
                problem = given(style, question, text) if given else None
                if problem and problem.startswith("length: "):
                    # Too long or too short by a few words: asked once more, told so.
                    text = await self.llm.acomplete_parsed(
                        gen.wording_again(
                            question, instruction, text, problem.removeprefix("length: ")
                        ),
                        gen.parse_wording,
                        gen.WORDING_REPLY,
                        self.params(120),
                    )
                    problem = given(style, question, text) if given else None
                if problem:
                    out.append(WordingCheck(style=style, text=text, kept=False, reason=problem))
                    continue
                same, why = await self.wording_verdict(context, question, record.answer, text)
            except FATAL_LLM_ERRORS:
                raise
            except LLMError as exc:
                reason = f"llm: {_short(exc)}"
                out.append(WordingCheck(style=style, text=text, kept=False, reason=reason))
                continue
            out.append(WordingCheck(style=style, text=text, kept=same, reason=why))
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
