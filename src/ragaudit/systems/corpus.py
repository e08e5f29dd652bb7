"""The document corpus a RAG system retrieves from: loading and chunking.

Documents come from a JSON object ``{id: text}`` (as the GRAMMAR reference corpora), a JSON
list or JSON Lines (``.jsonl``, ``.ndjson``) of ``{"id": ..., "text": ...}``, or a folder of
``.txt`` / ``.md`` files (the id is the path relative to the folder, without the suffix),
all UTF-8. A chunk keeps its document id: retrieval is judged at document level, so ids are
unique.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from ragaudit.errors import UserError
from ragaudit.options import StrictOptions
from ragaudit.records.io import (
    RecordFileError,
    check_unicode_text,
    iter_jsonl_dicts,
    parse_json,
    read_utf8_text,
)


class CorpusConfig(StrictOptions):
    """The documents the built-in systems retrieve from."""

    path: Path | None = Field(
        None, description="JSON {id: text}, JSON list / JSONL of {id, text}, or a folder."
    )
    chunking: Literal["document", "paragraph", "window"] = "document"
    # A hundred thousand words: a whole book in one window, beyond any model's context.
    chunk_size: int = Field(
        200, ge=1, le=100_000, description="Words per window (chunking: window)."
    )
    chunk_overlap: int = Field(
        50, ge=0, le=100_000, description="Words shared by neighbouring windows."
    )


class CorpusError(UserError):
    """The corpus cannot be read or is malformed."""


@dataclass(frozen=True, slots=True)
class Document:
    """One document of the corpus."""

    id: str
    text: str


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a document: what retrievers index."""

    doc_id: str
    index: int
    text: str


def _text_of(value: object, where: str) -> str:
    if not isinstance(value, str):
        shown = json.dumps(value, default=str)[:40]
        raise CorpusError(f"{where}: text: expected a string, not {shown}")
    return value


def _id_of(value: object, where: str) -> str:
    """A document id: text, or a whole number (ids are often numbered), as an imported
    question's id is read. Any other JSON value (null, true, a list, a fraction) or an empty
    id is refused: turned into text it would name a document "None", "True" or "", and
    retrieval would be judged against that."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        shown = json.dumps(value, default=str)[:40]
        raise CorpusError(f"{where}: id: expected text or a whole number, not {shown}")
    if not value.strip():
        raise CorpusError(f"{where}: id: empty (every document needs an id)")
    return value


def _from_objects(items: Sequence[tuple[str, object]], source: str) -> list[Document]:
    """Documents of ``{"id", "text"}`` objects, each with where it is (``item 3``,
    ``line 3``) for the errors."""
    docs = []
    places = []
    for where, item in items:
        if not isinstance(item, dict) or "id" not in item or "text" not in item:
            raise CorpusError(f'{source}: {where}: expected {{"id": ..., "text": ...}}')
        place = f"{source}: {where}"
        docs.append(Document(_id_of(item["id"], place), _text_of(item["text"], place)))
        places.append(where)
    return _unique(docs, places, source)


def _unique(docs: list[Document], places: list[str], source: str) -> list[Document]:
    """``docs`` when their ids are unique. Two documents under one id would make one
    chunk id name two texts (a question checked against the other's text, a retrieved id
    that is right or wrong by chance): an error naming both places."""
    first: dict[str, str] = {}
    for doc, place in zip(docs, places, strict=True):
        if doc.id in first:
            raise CorpusError(
                f"{source}: document id {doc.id!r} is given twice, at {first[doc.id]} and "
                f"{place}: every document needs its own id"
            )
        first[doc.id] = place
    if not docs:
        raise CorpusError(f"{source}: the corpus holds no documents")
    return docs


class _Keys(dict[str, object]):
    """A JSON object that remembers a key it saw twice (``json`` keeps the last value of
    a repeated key silently, which would lose a document)."""

    repeated: str | None = None


def _object(pairs: list[tuple[str, object]]) -> _Keys:
    out = _Keys()
    for key, value in pairs:
        if key in out and out.repeated is None:
            out.repeated = key
        out[key] = value
    return out


def _read_file(path: Path) -> str:
    try:
        return read_utf8_text(path)
    except RecordFileError as exc:  # not UTF-8: the file and line, one line
        raise CorpusError(str(exc)) from None


def load_corpus(path: Path) -> list[Document]:
    """Documents from a JSON file, a JSON Lines file or a folder of text files, read as
    UTF-8. Every document needs its own id and the corpus at least one document: a
    repeated id (a folder's ``a.txt`` and ``a.md`` too), a file that is not UTF-8, a
    string that is not Unicode text (a lone surrogate escape) or a bad line (the last one
    included) is a :class:`CorpusError` that names where. An id is text or a whole number;
    any other value, or an empty id, is an error too."""
    if path.is_dir():
        files = sorted(
            p for p in path.rglob("*") if p.suffix.lower() in {".txt", ".md"} and p.is_file()
        )
        if not files:
            raise CorpusError(f"{path}: no .txt or .md files")
        docs = [Document(str(p.relative_to(path).with_suffix("")), _read_file(p)) for p in files]
        return _unique(docs, [str(p.relative_to(path)) for p in files], str(path))
    if not path.is_file():
        raise CorpusError(f"{path}: no such corpus file or folder")
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        try:  # the user's file: a bad last line is an error, not a torn append
            rows = [
                (f"line {n}", row)
                for n, row in iter_jsonl_dicts(path, skip_torn_tail=False, unique_keys=True)
            ]
        except RecordFileError as exc:
            raise CorpusError(str(exc)) from None
        return _from_objects(rows, str(path))
    text = _read_file(path)
    try:
        data = parse_json(text, object_pairs_hook=_object)
        check_unicode_text(path, data, text)  # a lone "\\ud800" escape: where it is
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except RecordFileError as exc:
        raise CorpusError(str(exc)) from None
    if isinstance(data, dict):
        if isinstance(data, _Keys) and data.repeated is not None:
            raise CorpusError(
                f"{path}: document id {data.repeated!r} appears twice: every document needs "
                "its own id (JSON keeps only the last)"
            )
        docs = [
            Document(_id_of(k, f"{path}: {k!r}"), _text_of(v, f"{path}: {k!r}"))
            for k, v in data.items()
        ]
        return _unique(docs, [repr(k) for k in data], str(path))
    if isinstance(data, list):
        return _from_objects([(f"item {i}", item) for i, item in enumerate(data, 1)], str(path))
    raise CorpusError(f"{path}: expected {{id: text}} or a list of {{id, text}}")


def chunk(
    documents: list[Document],
    mode: Literal["document", "paragraph", "window"] = "document",
    *,
    size: int = 200,
    overlap: int = 50,
    layout: bool = False,
) -> list[Chunk]:
    """Split documents: whole (``document``), at blank lines (``paragraph``), or into windows
    of ``size`` words overlapping by ``overlap`` words (``window``). A window joins its
    words on one line, as the built-in systems index it; with ``layout`` it keeps the
    document's own lines between its first and last word instead (the same words), so
    that a heading, a list or a table reads as one where a question is written from it."""
    if mode == "window" and not 0 <= overlap < size:
        raise UserError(f"chunking: overlap ({overlap}) must be smaller than size ({size})")
    out: list[Chunk] = []
    for doc in documents:
        if mode == "document":
            pieces = [doc.text]
        elif mode == "paragraph":
            pieces = [p.strip() for p in re.split(r"\n\s*\n", doc.text) if p.strip()]
        else:
            spans = [found.span() for found in re.finditer(r"\S+", doc.text)]
            starts = range(0, max(1, len(spans) - overlap), size - overlap)
            if not spans:
                pieces = [""]
            elif layout:
                pieces = [
                    doc.text[spans[i][0] : spans[min(i + size, len(spans)) - 1][1]] for i in starts
                ]
            else:
                pieces = [" ".join(doc.text[a:b] for a, b in spans[i : i + size]) for i in starts]
        out.extend(Chunk(doc.id, i, text) for i, text in enumerate(pieces or [""]))
    return out
