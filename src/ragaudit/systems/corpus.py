"""The document corpus a RAG system retrieves from: loading and chunking.

Documents come from a JSON object ``{id: text}`` (as the GRAMMAR reference corpora), a JSON
list or JSON Lines of ``{"id": ..., "text": ...}``, or a folder of ``.txt`` / ``.md`` files
(the id is the path relative to the folder, without the suffix). A chunk keeps its
document id: retrieval is judged at document level.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from ragaudit.errors import UserError
from ragaudit.options import StrictOptions
from ragaudit.records.io import iter_jsonl_dicts


class CorpusConfig(StrictOptions):
    """The documents the built-in systems retrieve from."""

    path: Path | None = Field(
        None, description="JSON {id: text}, JSON list / JSONL of {id, text}, or a folder."
    )
    chunking: Literal["document", "paragraph", "window"] = "document"
    chunk_size: int = Field(200, ge=1, description="Words per window (chunking: window).")
    chunk_overlap: int = Field(50, ge=0, description="Words shared by neighbouring windows.")


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


def _from_objects(items: list[object], source: str) -> list[Document]:
    docs = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "id" not in item or "text" not in item:
            raise CorpusError(f'{source}: item {i + 1}: expected {{"id": ..., "text": ...}}')
        docs.append(Document(str(item["id"]), str(item["text"])))
    return docs


def load_corpus(path: Path) -> list[Document]:
    """Documents from a JSON file, a JSON Lines file or a folder of text files."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix.lower() in {".txt", ".md"})
        if not files:
            raise CorpusError(f"{path}: no .txt or .md files")
        return [
            Document(str(p.relative_to(path).with_suffix("")), p.read_text(encoding="utf-8"))
            for p in files
        ]
    if not path.is_file():
        raise CorpusError(f"{path}: no such corpus file or folder")
    if path.suffix.lower() == ".jsonl":
        return _from_objects([row for _, row in iter_jsonl_dicts(path)], str(path))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    if isinstance(data, dict):
        return [Document(str(k), str(v)) for k, v in data.items()]
    if isinstance(data, list):
        return _from_objects(data, str(path))
    raise CorpusError(f"{path}: expected {{id: text}} or a list of {{id, text}}")


def chunk(
    documents: list[Document],
    mode: Literal["document", "paragraph", "window"] = "document",
    *,
    size: int = 200,
    overlap: int = 50,
) -> list[Chunk]:
    """Split documents: whole (``document``), at blank lines (``paragraph``), or into windows
    of ``size`` words overlapping by ``overlap`` words (``window``)."""
    if mode == "window" and not 0 <= overlap < size:
        raise UserError(f"chunking: overlap ({overlap}) must be smaller than size ({size})")
    out: list[Chunk] = []
    for doc in documents:
        if mode == "document":
            pieces = [doc.text]
        elif mode == "paragraph":
            pieces = [p.strip() for p in re.split(r"\n\s*\n", doc.text) if p.strip()]
        else:
            words = doc.text.split()
            step = size - overlap
            pieces = [
                " ".join(words[i : i + size]) for i in range(0, max(1, len(words) - overlap), step)
            ]
        out.extend(Chunk(doc.id, i, text) for i, text in enumerate(pieces or [""]))
    return out
