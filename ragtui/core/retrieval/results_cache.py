"""The results cache: each built-in retriever's rankings and each evidence string's matching chunks, on disk.

Ranking 100,000 questions with BM25, the vector index and RRF, and matching their evidence against
every chunk, takes seconds each time the app starts, for results that only change when the chunks,
the settings or a question change. So they are kept next to the embedding cache, in
``cache_dir()/results/<kind>-<key>/`` (a :class:`~ragtui.core.data.binary_cache.ArrayStore`):

* a :class:`RankingCache` per retriever holds, per question TEXT (its SHA-1), the top-``depth``
  chunk indices (int32, ``-1`` after the last) and the retriever's own scores (float64, the same
  numbers a fresh run gives); its key is everything that decides the results: the chunks' content
  digest, the depth and the retriever's settings (BM25 backend and parameters; the embedding
  model's name and file fingerprint, the tokenizer and the window plan; what hybrid fuses).
* the :class:`EvidenceCache` holds, per evidence string (white space collapsed), the chunks that
  contain it, and per question's list of evidence strings their union, keyed by the chunks' content.

Rows never move: a text seen for the first time gets a new row at the end. The cache also remembers
the last few question lists it was asked for (their digest and each question's row), so a start
with one of those golden sets reads its rows without hashing each text. Any other list is looked up
text by text, and only the texts not found are computed (one question added or edited costs one
question), then the list is remembered. What is read is checked (shapes, ranges, ``-1`` only at
the end, no chunk twice in a row, scores best first) and a cache that fails a check is reported and
rebuilt, never used. Live retrievers (HTTP, plugins, Milvus) are not cached
here: their answers are someone else's system's (they have their own cache, ``retrieval.live``).
Writers hold the folder's lock; two processes writing at once may drop each other's new rows,
which are then computed again: nothing wrong is ever read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ragtui.core.data.binary_cache import ArrayStore, CacheMismatch, digest, list_digest
from ragtui.core.data.golden import normalize_ws
from ragtui.core.data.paths import cache_dir
from ragtui.core.files import content_hash
from ragtui.core.metrics.batch import duplicate_rows
from ragtui.core.metrics.tables import gather_rows, in_order

#: Bump when what the cache holds changes meaning: older caches are then not read.
RESULTS_VERSION = 1

__all__ = ["EvidenceCache", "Found", "RankingCache", "TextKeys"]


def _key_of(text: str) -> bytes:
    return bytes.fromhex(content_hash(text))


class TextKeys:
    """A list of texts with its digest (one hash of the whole list) and, when needed, each text's key."""

    def __init__(self, texts: Sequence[str], digest: str | None = None) -> None:
        #: The texts (kept as given: the questions cache's cuts each one when it is read).
        self.texts = texts
        self._digest = digest

    @property
    def digest(self) -> str:
        """The SHA-256 of the whole list, in order (``list_digest``; given when already known)."""
        if self._digest is None:
            self._digest = list_digest(self.texts)
        return self._digest

    @cached_property
    def keys(self) -> list[bytes]:
        """Each text's SHA-1, in order."""
        return [_key_of(t) for t in self.texts]


@dataclass
class Found:
    """What a cache held for a list: one row per text (``-1`` rows where ``missing``)."""

    index: np.ndarray
    scores: np.ndarray
    missing: list[int]
    #: Whether the list was one the cache remembers (else it is worth saving, even with nothing missing).
    remembered: bool = False


def _folder(root: Path | None, kind: str, key: str) -> Path:
    return (root or cache_dir()) / "results" / f"{re.sub(r'[^a-z0-9-]', '_', kind)}-{key[:32]}"


def _first_rows(keys: np.ndarray) -> dict[bytes, int]:
    """Key -> the first row holding it."""
    table: dict[bytes, int] = {}
    for i, k in enumerate(keys.tolist()):
        table.setdefault(k, i)
    return table


#: How many question lists a cache remembers the rows of (a start with any of them reads its rows
#: without hashing each text): a few golden sets over one corpus each start at once.
REMEMBERED_LISTS = 4


def _read_orders(
    meta: dict[str, Any], arrays: dict[str, np.ndarray], rows: int
) -> dict[str, np.ndarray]:
    """The remembered lists: digest -> each item's row (checked: in range, of the length recorded)."""
    listed = meta.get("orders")
    if not isinstance(listed, list) or len(listed) > REMEMBERED_LISTS:
        raise CacheMismatch("the manifest's remembered lists are not a short list")
    out: dict[str, np.ndarray] = {}
    for i, entry in enumerate(listed):
        order = arrays.get(f"order{i}")
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("digest"), str)
            or order is None
            or order.dtype.str != "<i4"
            or order.shape != (entry.get("count"),)
            or (len(order) and (order.min() < 0 or order.max() >= rows))
        ):
            raise CacheMismatch(f"remembered list {i} does not fit the rows")
        out[entry["digest"]] = order
    return out


def _write_orders(
    orders: dict[str, np.ndarray], digest_now: str, order_now: np.ndarray
) -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
    """The manifest entries and arrays of the remembered lists, this one first."""
    kept = [(digest_now, order_now)] + [(d, o) for d, o in orders.items() if d != digest_now]
    kept = kept[:REMEMBERED_LISTS]
    meta = [{"digest": d, "count": len(o)} for d, o in kept]
    return meta, {f"order{i}": np.asarray(o, dtype=np.int32) for i, (_, o) in enumerate(kept)}


class RankingCache:
    """One retriever's top-``depth`` rankings of question texts, on disk (see the module docstring).

    Rows never move: a text seen for the first time gets a new row at the end, and each
    remembered question list is an array of row numbers.
    """

    def __init__(
        self,
        kind: str,
        key: Mapping[str, object],
        chunks: int,
        depth: int,
        root: Path | None = None,
    ) -> None:
        self.kind = kind
        self.chunks = chunks
        # No ranking holds more than every chunk: a depth beyond that is the number of chunks
        # (--depth 1000000000 on a small corpus allocates rows of its chunks, not of a thousand million).
        self.depth = depth = max(0, min(depth, chunks))
        self.key = digest("rankings", RESULTS_VERSION, kind, dict(key), chunks, depth)
        self.store = ArrayStore(_folder(root, kind, self.key))
        #: Why a cache on disk was not used, for the user to see.
        self.warnings: list[str] = []
        self._held: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._orders: dict[str, np.ndarray] = {}

    def _check(self, arrays: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        try:
            keys, index, scores = arrays["keys"], arrays["index"], arrays["scores"]
        except KeyError as exc:
            raise CacheMismatch(f"array {exc.args[0]} is missing") from None
        rows = len(keys)
        if (
            keys.dtype.str != "|S20"
            or index.dtype.str != "<i4"
            or scores.dtype.str != "<f8"
            or index.shape != (rows, self.depth)
            or scores.shape != (rows, self.depth)
        ):
            raise CacheMismatch("the arrays do not hold one ranking row per text")
        valid = index >= 0
        if (
            rows
            and self.depth
            and (
                index.min() < -1
                or index.max() >= self.chunks
                or np.any(valid[:, 1:] & ~valid[:, :-1])
                or not np.isfinite(scores[valid]).all()
                or np.any(valid[:, 1:] & (scores[:, 1:] > scores[:, :-1]))
                or duplicate_rows(index).any()
            )
        ):
            raise CacheMismatch("a ranking names a chunk out of range, twice, or out of order")
        return keys, index, scores

    def lookup(self, texts: TextKeys) -> Found:
        """The cached ranking of every text, and which texts have none."""
        n = len(texts.texts)
        self._held, self._orders = None, {}
        try:
            found = self.store.read({"key": self.key})
            if found is not None:
                meta, arrays = found
                keys, index, scores = self._check(arrays)
                orders = _read_orders(meta, arrays, len(keys))
                self._held, self._orders = (keys, index, scores), orders
                order = orders.get(texts.digest)
                if order is not None and len(order) == n:
                    # The rows as stored: no copy (arrays read from the cache are read-only).
                    if in_order(order, len(index)):
                        return Found(index, scores, [], remembered=True)
                    return Found(index[order], scores[order], [], remembered=True)
        except CacheMismatch as exc:
            self.warnings.append(f"{self.store.folder}: results cache ignored and rebuilt ({exc})")
        out_index = np.full((n, self.depth), -1, dtype=np.int32)
        out_scores = np.zeros((n, self.depth), dtype=np.float64)
        if self._held is None:
            return Found(out_index, out_scores, list(range(n)))
        keys, index, scores = self._held
        table = _first_rows(keys)
        rows = np.fromiter((table.get(k, -1) for k in texts.keys), dtype=np.int64, count=n)
        present = rows >= 0
        out_index[present] = index[rows[present]]
        out_scores[present] = scores[rows[present]]
        return Found(out_index, out_scores, np.flatnonzero(~present).tolist())

    def save(self, texts: TextKeys, index: np.ndarray, scores: np.ndarray) -> None:
        """Write every text's ranking: rows of texts not held yet are added at the end, and this
        list is remembered; a failure to write is a warning, not an error."""
        if self._held is not None:
            keys, old_index, old_scores = self._held
        else:
            keys = np.zeros(0, dtype="|S20")
            old_index = np.zeros((0, self.depth), dtype=np.int32)
            old_scores = np.zeros((0, self.depth), dtype=np.float64)
        table = _first_rows(keys)
        order = np.empty(len(texts.texts), dtype=np.int32)
        new: list[int] = []
        added: dict[bytes, int] = {}
        for i, k in enumerate(texts.keys):
            row = table.get(k)
            if row is None:
                row = added.get(k)
                if row is None:
                    row = added[k] = len(keys) + len(new)
                    new.append(i)
            order[i] = row
        orders_meta, order_arrays = _write_orders(self._orders, texts.digest, order)
        arrays = {
            "keys": np.concatenate([keys, np.asarray([texts.keys[i] for i in new], dtype="|S20")]),
            "index": np.concatenate([old_index, index[new]]).astype(np.int32),
            "scores": np.concatenate([old_scores, scores[new]]).astype(np.float64),
            **order_arrays,
        }
        meta = {
            "key": self.key,
            "kind": self.kind,
            "depth": self.depth,
            "chunks": self.chunks,
            "orders": orders_meta,
        }
        try:
            self.store.write(meta, arrays)
        except OSError as exc:
            self.warnings.append(
                f"{self.store.folder}: results cache not written ({exc.strerror or exc})"
            )
            return
        self._held = (arrays["keys"], arrays["index"], arrays["scores"])
        self._orders = {
            d: order_arrays[f"order{i}"] for i, d in enumerate(e["digest"] for e in orders_meta)
        }


def _check_csr(offsets: np.ndarray, codes: np.ndarray, rows: int, chunks: int) -> None:
    """Rows of rising chunk indices (chunk order, none twice), all below ``chunks``."""
    if (
        offsets.dtype.str != "<i8"
        or codes.dtype.str != "<i4"
        or offsets.shape != (rows + 1,)
        or offsets[0] != 0
        or offsets[-1] != len(codes)
        or np.any(np.diff(offsets) < 0)
    ):
        raise CacheMismatch("the rows of matching chunks do not fit together")
    if len(codes):
        rising = np.diff(codes.astype(np.int64)) > 0
        row_start = np.zeros(len(codes), dtype=bool)
        row_start[offsets[:-1][offsets[:-1] < len(codes)]] = True
        if codes.min() < 0 or codes.max() >= chunks or np.any(~rising & ~row_start[1:]):
            raise CacheMismatch("a row of matching chunks is out of range or out of order")


class EvidenceCache:
    """Each evidence string's matching chunks, and each question's evidence list's (the union of its
    strings'), on disk; rows keyed by content, a few question lists remembered as row numbers."""

    def __init__(self, chunks_key: str, chunks: int, root: Path | None = None) -> None:
        self.chunks = chunks
        self.key = digest("evidence", RESULTS_VERSION, chunks_key, chunks)
        self.store = ArrayStore(_folder(root, "evidence", self.key))
        self.warnings: list[str] = []

    def _read(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]] | None:
        found = self.store.read({"key": self.key})
        if found is None:
            return None
        meta, held = found
        names = ("s_keys", "s_offsets", "s_codes", "l_keys", "l_offsets", "l_codes")
        if any(name not in held for name in names):
            raise CacheMismatch("an array is missing")
        for table in ("s", "l"):
            keys = held[f"{table}_keys"]
            if keys.dtype.str != "|S20" or keys.ndim != 1:
                raise CacheMismatch("the evidence keys are not SHA-1 digests")
            _check_csr(held[f"{table}_offsets"], held[f"{table}_codes"], len(keys), self.chunks)
        return held, _read_orders(meta, held, len(held["l_keys"]))

    def lookup(
        self,
        evidence: Sequence[Sequence[str]],
        match: Callable[[str], list[int]],
        known_digest: str | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every question's matching chunk indices (chunk order) as offsets and indices; ``match``
        finds one (white-space-collapsed) evidence string's chunks when the cache lacks it.
        ``known_digest``: ``list_digest(evidence)`` when already known (the questions cache keeps
        it), so a list the cache remembers is not read at all."""
        lists = evidence
        last = known_digest if known_digest is not None else list_digest(lists)
        held: dict[str, np.ndarray] | None = None
        orders: dict[str, np.ndarray] = {}
        try:
            read = self._read()
            if read is not None:
                held, orders = read
                order = orders.get(last)
                if order is not None and len(order) == len(lists):
                    offsets, codes = gather_rows(held["l_offsets"], order, held["l_codes"])
                    return offsets, codes.astype(np.int32)
        except CacheMismatch as exc:
            self.warnings.append(f"{self.store.folder}: evidence cache ignored and rebuilt ({exc})")
            held, orders = None, {}
        strings = _Rows(held, "s")
        unions = _Rows(held, "l")
        order_now = np.empty(len(lists), dtype=np.int32)
        for i, items in enumerate(lists):
            needles = [n for n in (normalize_ws(t) for t in items) if n]
            list_key = _key_of("\n".join(needles))  # normalize_ws leaves no line break inside
            row = unions.row(list_key)
            if row is None:
                matched: set[int] = set()
                for needle in needles:
                    key = _key_of(needle)
                    found_row = strings.row(key)
                    if found_row is None:
                        found_row = strings.add(key, match(needle))
                    matched.update(strings.codes(found_row))
                row = unions.add(list_key, sorted(matched))
            order_now[i] = row
        if strings.added or unions.added or orders.get(last) is None:
            self._save(strings, unions, orders, last, order_now)
        offsets, codes = unions.gather(order_now)
        return offsets, codes

    def _save(
        self,
        strings: _Rows,
        unions: _Rows,
        orders: dict[str, np.ndarray],
        last: str,
        order_now: np.ndarray,
    ) -> None:
        orders_meta, order_arrays = _write_orders(orders, last, order_now)
        arrays = {**strings.arrays("s"), **unions.arrays("l"), **order_arrays}
        meta = {"key": self.key, "chunks": self.chunks, "orders": orders_meta}
        try:
            self.store.write(meta, arrays)
        except OSError as exc:
            self.warnings.append(
                f"{self.store.folder}: evidence cache not written ({exc.strerror or exc})"
            )


class _Rows:
    """A table of rows of chunk indices keyed by content (read from the cache, rows added at the end)."""

    def __init__(self, held: dict[str, np.ndarray] | None, table: str) -> None:
        if held is None:
            self.keys: list[bytes] = []
            self.offsets: list[int] = [0]
            self.codes_: list[int] = []
        else:
            self.keys = held[f"{table}_keys"].tolist()
            self.offsets = held[f"{table}_offsets"].tolist()
            self.codes_ = held[f"{table}_codes"].tolist()
        self.index: dict[bytes, int] = {}
        for i, k in enumerate(self.keys):
            self.index.setdefault(k, i)
        self.added = 0

    def row(self, key: bytes) -> int | None:
        return self.index.get(key)

    def codes(self, row: int) -> list[int]:
        return self.codes_[self.offsets[row] : self.offsets[row + 1]]

    def add(self, key: bytes, codes: list[int]) -> int:
        row = len(self.keys)
        self.keys.append(key)
        self.codes_.extend(codes)
        self.offsets.append(len(self.codes_))
        self.index[key] = row
        self.added += 1
        return row

    def arrays(self, table: str) -> dict[str, np.ndarray]:
        return {
            f"{table}_keys": np.asarray(self.keys, dtype="|S20").reshape(len(self.keys)),
            f"{table}_offsets": np.asarray(self.offsets, dtype=np.int64),
            f"{table}_codes": np.asarray(self.codes_, dtype=np.int32),
        }

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        offsets, codes = gather_rows(
            np.asarray(self.offsets, dtype=np.int64), rows, np.asarray(self.codes_, dtype=np.int32)
        )
        return offsets, codes.astype(np.int32)
