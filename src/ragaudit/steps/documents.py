"""``ragaudit generate --documents``: question-answer pairs written from the corpus, checked,
worded in every style, into the document half of dataset.jsonl.

The corpus is chunked as the built-in systems chunk it, so a pair's gold id (its chunk's
document) is what a retriever returns. The pairs are written and checked by
:class:`~ragaudit.documents.generator.DocumentGenerator`; this step gives it what the
configuration and the layers above the documents hold (the styles' instructions and
checks, the dense question encoder, BM25 over the corpus), then writes every candidate
into ``candidates.jsonl`` with its ratings and, when dropped, the check it failed; an
accepted one becomes a semantic group: the generated question and its verified wordings.
While it runs, each candidate is appended to ``candidates.jsonl.partial`` as it is
decided, so that a user can watch the drops; ``candidates.jsonl`` itself is written whole
at the end, so that it is never a part presented as the whole.

Resumable: every LLM call is cached and every choice is seeded, so a killed generation
asks again only what had not been answered (it decides again, from the cache, the
candidates its partial file held, and writes that file anew).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ragaudit.analysis.documents import GenerationCost, drop_kind, generation_cost
from ragaudit.config import Config
from ragaudit.documents.generator import (
    Context,
    DocumentGenerator,
    Embedder,
    PassageSearch,
    queries_of,
)
from ragaudit.documents.markup import render_markup
from ragaudit.documents.options import DocumentOptions
from ragaudit.errors import UserError
from ragaudit.generate.text.llm import STYLE_INSTRUCTIONS, style_problem
from ragaudit.generate.text.templates import near_duplicate_key
from ragaudit.progress import SILENT, Progress, show_counts
from ragaudit.records.io import JsonlAppender, atomic_write_json, write_jsonl_atomic
from ragaudit.records.models import CandidateRecord
from ragaudit.steps.generate import other_half
from ragaudit.steps.session import Session
from ragaudit.systems.corpus import Chunk, Document, chunk, load_corpus

# Contexts shorter than this hold too little to write a question from.
MIN_CONTEXT_WORDS = 12


def corpus_contexts(config: Config) -> tuple[list[Context], int]:
    """The corpus's chunks, as the built-in systems chunk it, and how many were too short
    to write a question from. A chunk is written from as its page reads: reST markup
    rendered (``.. versionadded:: 3.0`` as "New in version 3.0."), past the first chunk
    of its document with the document's title."""
    if config.corpus.path is None:
        raise UserError(
            "generating from documents needs a corpus: set corpus.path in the configuration"
        )
    # Rendered before it is cut, since a directive, a field list or a section title is
    # known by its lines; and a window keeps the page's lines (the systems' window is its
    # words on one line), so that a title, a list item or a table row reads as one. The
    # windows can then fall a few words from the systems' (a directive's words are not
    # its rendering's); a pair's gold id is its document, which is the same.
    docs = [Document(d.id, render_markup(d.text)) for d in load_corpus(config.corpus.path)]
    windows = config.corpus.chunking == "window"
    pieces = [
        Chunk(c.doc_id, c.index, _tidy(c.text) if windows else c.text)
        for c in chunk(
            docs,
            config.corpus.chunking,
            size=config.corpus.chunk_size,
            overlap=config.corpus.chunk_overlap,
            layout=True,
        )
    ]
    titles = {d.id: document_title(d) for d in docs}
    out = [
        Context(
            f"{c.doc_id}#{c.index}",
            c.doc_id,
            with_title(
                from_sentence(c.text, config.corpus.chunk_overlap)
                if windows and c.index
                else c.text,
                titles[c.doc_id],
                c.index,
            ),
            titles[c.doc_id],
        )
        for c in pieces
        if len(c.text.split()) >= MIN_CONTEXT_WORDS
    ]
    return out, len(pieces) - len(out)


def _tidy(text: str) -> str:
    """A chunk's lines without trailing spaces or runs of blank lines: layout that says
    nothing costs tokens."""
    lines = [line.rstrip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


# Where a sentence ends: its stop (and a closing quote or bracket), then a word that can
# open one (a capital, a digit, a quote, markup).
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+(?=[\"'(*`#\-]*[A-Z0-9])")


def from_sentence(text: str, overlap: int) -> str:
    """A window past the first of its document as a question is written from it: from its
    first whole sentence. A window is cut at a word count, so it opens mid-sentence
    ('type) is up to the "__getitem__()" method. If *key* is ...'), and the model wrote
    that fragment as a statement ("The special method names in Python are up to the
    __getitem__() method."). The words before the first sentence end are left out where
    they are fewer than ``overlap``, the words the previous window shares, so that
    nothing is lost; a window that opens with a capital is taken to open a sentence.

    >>> from_sentence('type) is up to the method. If *key* is wrong, raise.', 50)
    'If *key* is wrong, raise.'
    >>> from_sentence('Arguments are split. Then they run.', 50)
    'Arguments are split. Then they run.'
    >>> from_sentence('and then it ends', 50)
    'and then it ends'
    """
    if not text or text[0].isupper():
        return text
    found = _SENTENCE_END.search(text)
    if found is None or len(text[: found.start()].split()) >= overlap:
        return text
    return text[found.end() :]


# Up to this many words, a document's first line is its title ("click.Choice",
# "Alder Bridge: project report"); a longer one is prose.
TITLE_WORDS = 12


def document_title(document: Document) -> str:
    """What a document is about, in a few words: its first line where that is short (a
    title), else its id (a folder's file name without its extension)."""
    first = next((line.strip() for line in document.text.splitlines() if line.strip()), "")
    if first and len(first.split()) <= TITLE_WORDS:
        return first.lstrip("#").strip()
    return document.id


def with_title(text: str, title: str, index: int) -> str:
    r"""A chunk as a question is written from it: a chunk past the first of its document
    gets the document's title as a first line, since a window or paragraph cut from a
    reference page names no subject ("the `case_sensitive` parameter" of what?) and a
    question written from it would not either.

    >>> with_title("Defaults to True.", "click.Choice", 2)
    'click.Choice (continued)\n\nDefaults to True.'
    >>> with_title("click.Choice\n\nThe choice type.", "click.Choice", 0)
    'click.Choice\n\nThe choice type.'
    """
    if index == 0 or not title:
        return text
    return f"{title} (continued)\n\n{text}"


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


def wording_problem(style: str, question: str, wording: str) -> str | None:
    """Why a wording of a generated question is not kept before it is read: it is the
    question again (up to case, punctuation and spacing), or it does not fit its style's
    length, as the wordings of SQL templates must fit it; None when neither."""
    if near_duplicate_key(wording) == near_duplicate_key(question):
        return "the same as the generated question"
    return style_problem(style, wording)


def question_embedder() -> Embedder:
    """The dense encoder for near-duplicate questions where the ``dense`` extra loads, else
    word counts."""
    try:
        from ragaudit.systems.retrievers import dense_model, embed

        dense_model()
    except (ImportError, UserError):
        return Embedder(method="words")
    return Embedder(method="dense", encode=embed)


def corpus_search(corpus: list[Context]) -> PassageSearch | None:
    """BM25 over ``corpus`` for the unanswerable check, its index built on the first search;
    None for a corpus of one context (there is no other passage to read)."""
    if len(corpus) < 2:
        return None
    index: Any = None

    def search(question: str, n: int) -> list[tuple[str, str]]:
        nonlocal index
        if index is None:
            from ragaudit.systems.retrievers import BM25Retriever

            index = BM25Retriever([Chunk(c.doc_id, 0, c.text) for c in corpus])
        return [(hit.doc_id, hit.text) for hit in index.retrieve(question, n)]

    return search


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
        """LLM requests per accepted pair (None when none was accepted), as
        :class:`~ragaudit.analysis.documents.GenerationCost` defines it."""
        return GenerationCost(self.calls, self.tokens, self.accepted).calls_per_pair

    @property
    def tokens_per_pair(self) -> float | None:
        """Tokens per accepted pair (None when none was accepted)."""
        return GenerationCost(self.calls, self.tokens, self.accepted).tokens_per_pair

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
    progress: Progress = SILENT,
) -> DocumentStats:
    """Generate, check and word pairs from the corpus; write candidates.jsonl, the document
    half of dataset.jsonl (the SQL half is kept) and documents.stats.json. Nothing accepted
    is a :class:`UserError` that says why (candidates.jsonl is still written, so the reasons
    can be read), and the dataset is left as it was. ``progress`` shows the pairs accepted
    (``pairs accepted``, with the candidates dropped so far), then the
    accepted questions worded in every style (``wording pairs``). Each candidate is
    appended to candidates.jsonl.partial as it is decided, and that file is removed when
    candidates.jsonl is written."""
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
    embedder = question_embedder()
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
    accepting = progress.task("pairs accepted", options.size)
    decided: Counter[str] = Counter()
    run.candidates_partial.unlink(missing_ok=True)  # a killed run's: decided again below
    partial = JsonlAppender(run.candidates_partial)

    def on_candidate(record: CandidateRecord) -> None:
        partial.append(record)  # durable: a user can read the drops as they come
        # The count is the pairs accepted; the tally beside it the candidates dropped, so
        # that a line written at either call reads the same state (an accepted candidate
        # leaves the tally as it was).
        if record.accepted:
            accepting.advance()
        else:
            decided["dropped"] += 1
            show_counts(accepting, dropped=decided["dropped"])

    with session.llm("generate-documents") as llm, partial:
        assert llm is not None
        generator = DocumentGenerator(
            llm,
            options,
            used,
            embedder=embedder,
            styles=instructions,
            search=corpus_search(contexts),
            wording_problem=wording_problem,
            on_candidate=on_candidate,
        )
        stats.requested = {str(k): v for k, v in generator.wanted.items() if k is not None}
        written = session.run(generator.generate())
        # Each accepted pair worded, its wordings' requests added to its cost.
        to_word = sum(1 for r in written if r.accepted)
        wording = progress.task("wording pairs", to_word) if to_word else None
        records = []
        for r in written:
            if r.accepted:
                r = session.run(generator.worded(r))
                if wording is not None:
                    wording.advance()
            records.append(r)
    accepted = [r for r in records if r.accepted]
    wordings = {r.candidate_id: r.wordings for r in accepted}
    write_jsonl_atomic(run.candidates, records)
    run.candidates_partial.unlink(missing_ok=True)
    stats.candidates = len(records)
    stats.accepted = len(accepted)
    stats.dropped = dict(Counter(drop_kind(r.dropped) for r in records if r.dropped))
    stats.accepted_by_label = dict(
        Counter(str(r.requested_label or r.observed_label or "unlabelled") for r in accepted)
    )
    cost = generation_cost(records)  # what summary.json and the report show, too
    stats.calls, stats.tokens = cost.calls, cost.tokens
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
