"""A team's own chunks (``--chunks FILE.jsonl``): their ids and texts, used as they are.

One JSON object a line: ``id`` (the chunk id every label, export and live retriever uses), ``text``,
``doc`` (the document the chunk comes from: BEIR qrels and document-level evaluation use it), and
optionally ``heading`` (a string or a list of strings, the heading path) and ``meta`` (an object,
kept and shown as it is). ragtui's chunker is not run. Each document's text is its chunks' texts
joined by a blank line, in file order, so every chunk is an exact span of its document as ragtui's
own chunks are.

The file is held to the size limit of a corpus file (``--max-file-mb``, default 20 MB): a larger
one is refused, naming the file and the limit, before it is read, and one that grows past the limit
while it is read is refused at the line where it does.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.corpus import MAX_FILE_BYTES, Corpus, Document, read_jsonl
from ragtui.core.errors import InputError
from ragtui.core.files import file_kind

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


#: Bytes read at a time.
_BLOCK = 1 << 20


def _size(size: int) -> str:
    """A size as people read it: ``1024 MB``, ``1.5 MB``; below 1 MB in bytes, ``2,041 bytes``."""
    if size < 1048576:
        return f"{size:,} bytes"
    return f"{size / 1048576:.3f}".rstrip("0").rstrip(".") + " MB"


def _over(path: Path, max_file_bytes: int, what: str, line: int | None = None) -> InputError:
    return InputError(
        path,
        f"{what}, over the limit of {_size(max_file_bytes)} for a chunks file "
        "(split it, or raise --max-file-mb)",
        line,
    )


def read_limited(path: Path, max_file_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_file_bytes``; InputError (one line, naming the
    file and the limit) for a larger one before any of it is read, and at the line where a file
    growing while read passes the limit. A FIFO or a device is refused without blocking."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except OSError as exc:
        raise InputError(path, f"cannot read the file ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(path, "is a folder; --chunks takes a JSON-lines file")
        if not stat.S_ISREG(info.st_mode):
            raise InputError(path, f"{file_kind(info.st_mode)}, not a regular file")
        if info.st_size > max_file_bytes:
            raise _over(path, max_file_bytes, f"file is {_size(info.st_size)}")
        os.set_blocking(fd, True)
        blocks: list[bytes] = []
        total = lines = 0
        while True:
            try:
                block = os.read(fd, min(_BLOCK, max_file_bytes + 1 - total))
            except OSError as exc:
                raise InputError(path, f"cannot read the file ({exc.strerror})") from None
            if not block:
                break
            if total + len(block) > max_file_bytes:
                # Grown since it was looked at: the line that passes the limit is named.
                line = lines + block.count(b"\n", 0, max_file_bytes - total) + 1
                raise _over(path, max_file_bytes, "the file grew while read", line)
            lines += block.count(b"\n")
            total += len(block)
            blocks.append(block)
        return b"".join(blocks)
    finally:
        os.close(fd)


def load_chunks_file(path: str | Path, max_file_bytes: int = MAX_FILE_BYTES) -> ChunksFile:
    """Read and validate a chunks file of at most ``max_file_bytes`` (``--max-file-mb``); InputError
    names the file, the line and the problem."""
    path = Path(path)
    rows = read_jsonl(path, read_limited(path, max_file_bytes))
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
