"""A team's own chunks (``--chunks FILE.jsonl``): their ids and texts, used as they are.

One JSON object a line: ``id`` (the chunk id every label, export and live retriever uses), ``text``,
``doc`` (the document the chunk comes from: BEIR qrels and document-level evaluation use it), and
optionally ``heading`` (a string or a list of strings, the heading path) and ``meta`` (an object,
kept and shown as it is). ragtui's chunker is not run. Each document's text is its chunks' texts
joined by a blank line, in file order, so every chunk is an exact span of its document as ragtui's
own chunks are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.corpus import Corpus, Document, read_jsonl
from ragtui.core.errors import InputError

__all__ = ["CHUNK_KEYS", "ChunksFile", "load_chunks_file"]

#: The keys a chunk line may have; others are passed over with a warning.
CHUNK_KEYS = ("id", "text", "doc", "heading", "meta")

#: What joins a document's chunks into the document text.
JOIN = "\n\n"


@dataclass(frozen=True)
class ChunksFile:
    """The chunks as given, and the documents they make up."""

    corpus: Corpus
    chunks: list[Chunk]


def _id(value: Any, key: str, path: Path, line: int) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
        raise InputError(path, f"'{key}' must be a non-empty string (or a whole number)", line)
    return str(value)


def _heading(value: Any, path: Path, line: int) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise InputError(path, "'heading' must be a string or a list of strings", line)


def load_chunks_file(path: str | Path) -> ChunksFile:
    """Read and validate a chunks file; InputError names the file, the line and the problem."""
    path = Path(path)
    if path.is_dir():
        raise InputError(path, "is a folder; --chunks takes a JSON-lines file")
    rows = read_jsonl(path)
    first_line: dict[str, int] = {}
    parsed: list[tuple[int, str, str, str, tuple[str, ...], Any]] = []
    ignored: dict[str, int] = {}
    for line, obj in rows:
        for key in ("id", "text", "doc"):
            if key not in obj:
                raise InputError(path, f"missing field '{key}'", line)
        cid = _id(obj["id"], "id", path, line)
        if any(ch.isspace() for ch in cid):
            raise InputError(
                path, f"chunk id {cid!r} holds white space (TREC files split on it)", line
            )
        if cid in first_line:
            raise InputError(
                path, f"duplicate chunk id {cid!r} (first on line {first_line[cid]})", line
            )
        first_line[cid] = line
        text = obj["text"]
        if not isinstance(text, str):
            raise InputError(path, "'text' must be a string", line)
        if not text.strip():
            raise InputError(path, f"chunk {cid!r} has an empty text", line)
        doc = _id(obj["doc"], "doc", path, line)
        heading = _heading(obj.get("heading"), path, line)
        meta = obj.get("meta")
        if meta is not None and not isinstance(meta, dict):
            raise InputError(path, "'meta' must be a JSON object", line)
        for key in obj:
            if key not in CHUNK_KEYS:
                ignored.setdefault(key, line)
        parsed.append((line, cid, text, doc, heading, meta))
    if not parsed:
        raise InputError(path, "the chunks file holds no chunks")
    by_doc: dict[str, list[tuple[int, str, str, str, tuple[str, ...], Any]]] = {}
    for row in parsed:
        by_doc.setdefault(row[3], []).append(row)
    documents: list[Document] = []
    chunk_of: dict[str, Chunk] = {}
    for doc, items in by_doc.items():
        offset = 0
        parts: list[str] = []
        for index, (_, cid, text, _, heading, meta) in enumerate(items):
            if parts:
                offset += len(JOIN)
            chunk_of[cid] = Chunk(
                id=cid,
                doc=doc,
                index=index,
                start=offset,
                end=offset + len(text),
                text=text,
                heading_path=heading,
                token_count=-1,
                meta=meta,
            )
            parts.append(text)
            offset += len(text)
        documents.append(Document(path=doc, text=JOIN.join(parts)))
    warnings = [
        f"{path}:{line}: key {key!r} is not a chunk field ({', '.join(CHUNK_KEYS)}); ignored"
        for key, line in ignored.items()
    ]
    corpus = Corpus(documents=documents, source=str(path), warnings=warnings)
    # Chunks keep the file's order, so ties and the chunk list read as the team wrote them.
    return ChunksFile(corpus, [chunk_of[row[1]] for row in parsed])
