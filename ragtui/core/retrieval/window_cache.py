"""The windows of long chunks from a binary cache keyed by each chunk's text, the tokenizer and the plan.

Cutting a long chunk into windows needs its token offsets: tokenizing every document of a BEIR set
(whose documents are never counted when they are read) took most of a warm ``ragtui eval``. A
chunk's windows depend only on its text, the tokenizer and the window length and stride, so the
spans are kept in ``cache_dir()/windows/<key>`` (an :class:`~ragtui.core.data.binary_cache.ArrayStore`
per tokenizer and plan), one entry per text, looked up by the text's BLAKE2b digest. Only the texts
the cache lacks are tokenized (an edited document costs its own tokens, not the corpus's), and the
store is rewritten with them. A store that cannot be read, or whose spans do not fit the texts they
are filed under, is reported, and every window is cut again and rewritten, never used.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragtui.core.data.binary_cache import ArrayStore, CacheMismatch, digest
from ragtui.core.data.chunking import Chunk
from ragtui.core.data.paths import cache_dir
from ragtui.core.data.tokenizer import TokenCounter
from ragtui.core.retrieval.windows import ChunkWindows, WindowPlan, chunk_windows, needs_tokens

__all__ = ["WINDOW_CACHE_VERSION", "cached_chunk_windows", "text_digest", "window_store"]

#: Bump when cutting windows changes what it makes of the same text: older stores are then not read.
WINDOW_CACHE_VERSION = 1
#: The most texts a store keeps: past it, only the texts of the chunks just cut are kept.
MAX_ENTRIES = 500_000

_Spans = list[tuple[int, int]]


def text_digest(text: str) -> bytes:
    """The 20-byte digest a text's windows are filed under."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest()


def window_store(counter: TokenCounter, plan: WindowPlan, root: Path | None = None) -> ArrayStore:
    """The store of one tokenizer's windows under one plan's length and stride (pooling is not in
    the key: it does not change where windows lie)."""
    key = digest("windows", WINDOW_CACHE_VERSION, counter.fingerprint, plan.length, plan.stride)
    return ArrayStore((root or cache_dir()) / "windows" / key[:40])


class _Stored:
    """A store's entries: sorted digests, each one's windows (``first``: where its spans start)."""

    def __init__(
        self, keys: np.ndarray, counts: np.ndarray, starts: np.ndarray, ends: np.ndarray
    ) -> None:
        self.keys, self.counts, self.starts, self.ends = keys, counts, starts, ends
        self.first = np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))

    @classmethod
    def empty(cls) -> _Stored:
        none = np.zeros(0, dtype=np.int64)
        return cls(np.zeros(0, dtype="S20"), np.zeros(0, dtype=np.int32), none, none)

    @classmethod
    def read(cls, store: ArrayStore, key: str) -> _Stored:
        found = store.read({"key": key})
        if found is None:
            return cls.empty()
        _, arrays = found
        try:
            keys, counts, starts, ends = (arrays[n] for n in ("text", "windows", "start", "end"))
        except KeyError as exc:
            raise CacheMismatch(f"array {exc.args[0]} is missing") from None
        if keys.dtype.str != "|S20" or any(a.ndim != 1 for a in (keys, counts, starts, ends)):
            raise CacheMismatch("the arrays are not of this cache's shape")
        if len(counts) != len(keys) or len(starts) != len(ends):
            raise CacheMismatch("the arrays do not have one entry per text")
        if len(counts) and (counts.min() < 1 or int(counts.sum()) != len(starts)):
            raise CacheMismatch("the window counts do not add up to the spans")
        if len(keys) > 1 and not np.all(keys[1:] > keys[:-1]):
            raise CacheMismatch("the texts are not in order")
        return cls(keys, counts.astype(np.int64), starts, ends)

    def lookup(self, wanted: Sequence[bytes]) -> list[int]:
        """Each wanted digest's entry, or -1."""
        if not len(self.keys) or not wanted:
            return [-1] * len(wanted)
        asked = np.asarray(wanted, dtype="S20")
        at = np.minimum(np.searchsorted(self.keys, asked), len(self.keys) - 1)
        found: list[int] = np.where(self.keys[at] == asked, at, -1).tolist()
        return found

    def spans(self, entry: int, length: int) -> _Spans:
        """One entry's spans, checked against the length of the text asking for them."""
        a, b = int(self.first[entry]), int(self.first[entry + 1])
        spans = list(zip(self.starts[a:b].tolist(), self.ends[a:b].tolist(), strict=True))
        previous = -1
        for start, end in spans:
            if not previous < start <= end <= length:
                raise CacheMismatch("a window's span does not lie in its text")
            previous = start
        return spans


def cached_chunk_windows(
    chunks: Sequence[Chunk],
    counter: TokenCounter,
    plan: WindowPlan | None,
    root: Path | None = None,
) -> tuple[ChunkWindows, list[str]]:
    """``chunk_windows`` with the spans of the texts the cache holds read from it, the others cut
    and added to it; with the warnings about a store that could not be used (or written)."""
    if plan is None:
        return chunk_windows(chunks, counter, None), []
    asking = [i for i, c in enumerate(chunks) if needs_tokens(c, plan)]
    if not asking:  # every chunk fits by its stored count: nothing to tokenize, nothing to keep
        return chunk_windows(chunks, counter, plan), []
    store = window_store(counter, plan, root)
    key = digest("windows", WINDOW_CACHE_VERSION, counter.fingerprint, plan.length, plan.stride)
    digests = [text_digest(chunks[i].text) for i in asking]
    warnings: list[str] = []
    known: dict[int, _Spans] = {}
    try:
        stored = _Stored.read(store, key)
        for i, entry in zip(asking, stored.lookup(digests), strict=True):
            if entry >= 0:
                known[i] = stored.spans(entry, len(chunks[i].text))
    except CacheMismatch as exc:
        warnings.append(f"{store.folder}: window cache ignored and rebuilt ({exc})")
        stored, known = _Stored.empty(), {}
    windows = chunk_windows(chunks, counter, plan, known)
    if len(known) < len(asking):
        try:
            _write(store, key, stored, asking, digests, windows)
        except OSError as exc:
            warnings.append(f"{store.folder}: window cache not written ({exc.strerror or exc})")
    return windows, warnings


def _write(
    store: ArrayStore,
    key: str,
    stored: _Stored,
    asking: Sequence[int],
    digests: Sequence[bytes],
    windows: ChunkWindows,
) -> None:
    """The store with the texts just cut added (the stored ones kept while they fit the bound)."""
    entries: dict[bytes, _Spans] = {
        d: windows.spans[i] for i, d in zip(asking, digests, strict=True)
    }
    if len(entries) + len(stored.keys) <= MAX_ENTRIES:
        for entry, stripped in enumerate(stored.keys.tolist()):
            old = stripped.ljust(20, b"\0")  # numpy drops a bytes string's trailing zero bytes
            if old not in entries:
                a, b = int(stored.first[entry]), int(stored.first[entry + 1])
                entries[old] = list(
                    zip(stored.starts[a:b].tolist(), stored.ends[a:b].tolist(), strict=True)
                )
    order = sorted(entries)
    spans = [s for d in order for s in entries[d]]
    store.write(
        {"key": key, "entries": len(order)},
        {
            "text": np.asarray(order, dtype="S20"),
            "windows": np.asarray([len(entries[d]) for d in order], dtype=np.int32),
            "start": np.asarray([a for a, _ in spans], dtype=np.int64),
            "end": np.asarray([b for _, b in spans], dtype=np.int64),
        },
    )
