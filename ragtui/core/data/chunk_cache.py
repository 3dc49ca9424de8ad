"""Chunking from a binary cache keyed by the corpus content, the chunk settings and the tokenizer.

Chunking counts every document's tokens with the model's tokenizer, the slow part of loading a
large corpus. The spans it finds depend only on the documents (each one's path, title and text),
the chunk size and overlap, and the tokenizer (its JSON); so the spans, token counts and heading
paths are kept in ``cache_dir()/chunks/<key>`` (a :class:`~ragtui.core.data.binary_cache.ArrayStore`)
and the chunks are rebuilt from them and the documents' text. A cache that does not match is
reported, computed again and rewritten, never used.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragtui.core.data.binary_cache import ArrayStore, CacheMismatch, digest
from ragtui.core.data.chunking import Chunk, chunk_documents
from ragtui.core.data.corpus import Document
from ragtui.core.data.paths import cache_dir
from ragtui.core.data.tokenizer import TokenCounter

#: Bump when chunking changes what it makes of the same input: older caches are then not read.
CHUNK_CACHE_VERSION = 1


def chunking_key(
    documents: Sequence[Document], counter: TokenCounter, size: int, overlap: int
) -> str:
    """What decides the chunks: every document's path, title and text, the settings and the tokenizer."""
    return digest(
        "chunks",
        CHUNK_CACHE_VERSION,
        size,
        overlap,
        counter.fingerprint,
        [[d.path, d.title, d.text] for d in documents],
    )


def cached_chunks(
    documents: Sequence[Document],
    counter: TokenCounter,
    size: int | None,
    overlap: int = 0,
    root: Path | None = None,
) -> tuple[list[Chunk], list[str]]:
    """``chunk_documents`` read from the cache when it holds this corpus and setting, else computed
    and cached; with the warnings about a cache that could not be used (or written)."""
    if size is None:  # whole documents: nothing is counted, nothing to keep
        return chunk_documents(documents, counter, size, overlap), []
    key = chunking_key(documents, counter, size, overlap)
    store = ArrayStore((root or cache_dir()) / "chunks" / key[:40])
    warnings: list[str] = []
    try:
        found = store.read({"key": key})
        if found is not None:
            return _rebuild(documents, *found), warnings
    except CacheMismatch as exc:
        warnings.append(f"{store.folder}: chunk cache ignored and rebuilt ({exc})")
    chunks = chunk_documents(documents, counter, size, overlap)
    try:
        _write(store, key, documents, chunks)
    except OSError as exc:
        warnings.append(f"{store.folder}: chunk cache not written ({exc.strerror or exc})")
    return chunks, warnings


def _write(store: ArrayStore, key: str, documents: Sequence[Document], chunks: list[Chunk]) -> None:
    position = {d.path: i for i, d in enumerate(documents)}
    paths: dict[tuple[str, ...], int] = {}
    headings = [paths.setdefault(c.heading_path, len(paths)) for c in chunks]
    store.write(
        {"key": key, "documents": len(documents), "headings": [list(p) for p in paths]},
        {
            "doc": np.asarray([position[c.doc] for c in chunks], dtype=np.int32),
            "start": np.asarray([c.start for c in chunks], dtype=np.int64),
            "end": np.asarray([c.end for c in chunks], dtype=np.int64),
            "tokens": np.asarray([c.token_count for c in chunks], dtype=np.int64),
            "heading": np.asarray(headings, dtype=np.int32),
        },
    )


def _rebuild(
    documents: Sequence[Document], meta: dict[str, object], arrays: dict[str, np.ndarray]
) -> list[Chunk]:
    """The chunks the arrays describe, each checked against its document (else CacheMismatch)."""
    headings = meta.get("headings")
    if meta.get("documents") != len(documents) or not isinstance(headings, list):
        raise CacheMismatch("the manifest does not describe these documents")
    if not all(isinstance(h, list) and all(isinstance(t, str) for t in h) for h in headings):
        raise CacheMismatch("the manifest's heading paths are not lists of strings")
    try:
        doc, start, end, tokens, heading = (
            arrays[n] for n in ("doc", "start", "end", "tokens", "heading")
        )
    except KeyError as exc:
        raise CacheMismatch(f"array {exc.args[0]} is missing") from None
    n = len(doc)
    if any(len(a) != n or a.ndim != 1 for a in (start, end, tokens, heading)):
        raise CacheMismatch("the arrays do not have one entry per chunk")
    lengths = np.asarray([len(d.text) for d in documents], dtype=np.int64)
    if n and (
        doc.min() < 0
        or doc.max() >= len(documents)
        or np.any(np.diff(doc) < 0)
        or heading.min() < 0
        or heading.max() >= len(headings)
        or np.any(start < 0)
        or np.any(end <= start)
        or np.any(end > lengths[doc])
    ):
        raise CacheMismatch("a chunk's document, span or heading is out of range")
    paths = [tuple(h) for h in headings]
    chunks: list[Chunk] = []
    previous, number = -1, 0
    for d, a, b, t, h in zip(
        doc.tolist(), start.tolist(), end.tolist(), tokens.tolist(), heading.tolist(), strict=True
    ):
        number = number + 1 if d == previous else 0
        previous = d
        document = documents[d]
        chunks.append(
            Chunk(
                id=f"{document.path}#{number}",
                doc=document.path,
                index=number,
                start=a,
                end=b,
                text=document.text[a:b],
                heading_path=paths[h],
                token_count=t,
            )
        )
    return chunks


def chunks_digest(chunks: Sequence[Chunk]) -> str:
    """The content digest of a chunk list (every id, document and text, in order): what the BM25
    index and the results caches are keyed by."""
    return digest("chunk-list", [[c.id, c.doc, c.text] for c in chunks])
