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
  contain it, keyed by the chunks' content.

The rows of the last question list written come first, in its order, and the manifest records that
list's digest: a start with the same questions reads them without hashing each text. Any other
list is looked up text by text, and only the texts not found are computed (one question added or
edited costs one question), then the list is written again. What is read is checked (shapes,
ranges, ``-1`` only at the end, no chunk twice in a row, scores best first) and a cache that fails
a check is reported and rebuilt, never used. Live retrievers (HTTP, plugins, Milvus) are not cached
here: their answers are someone else's system's (they have their own cache, ``retrieval.live``).
Writers hold the folder's lock; two processes writing at once may drop each other's new rows,
which are then computed again: nothing wrong is ever read.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import orjson

from ragtui.core.data.binary_cache import ArrayStore, CacheMismatch, digest
from ragtui.core.data.golden import normalize_ws
from ragtui.core.data.paths import cache_dir
from ragtui.core.metrics.batch import duplicate_rows

#: Bump when what the cache holds changes meaning: older caches are then not read.
RESULTS_VERSION = 1

__all__ = ["EvidenceCache", "Found", "RankingCache", "TextKeys"]


def _key_of(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()


def _list_digest(items: Sequence[object]) -> str:
    """The SHA-256 of a list of texts (or of lists of texts), in order."""
    try:
        raw = orjson.dumps(list(items))
    except TypeError:  # orjson refuses a lone surrogate: spell every text as hex for the digest
        raw = orjson.dumps(
            [
                [t.encode("utf-8", "surrogatepass").hex() for t in item]
                if isinstance(item, list)
                else str(item).encode("utf-8", "surrogatepass").hex()
                for item in items
            ]
        )
    return hashlib.sha256(raw).hexdigest()


class TextKeys:
    """A list of texts with its digest (one hash of the whole list) and, when needed, each text's key."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)

    @cached_property
    def digest(self) -> str:
        """The SHA-256 of the whole list, in order."""
        return _list_digest(self.texts)

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


def _folder(root: Path | None, kind: str, key: str) -> Path:
    return (root or cache_dir()) / "results" / f"{re.sub(r'[^a-z0-9-]', '_', kind)}-{key[:32]}"


def _first_rows(keys: np.ndarray) -> dict[bytes, int]:
    """Key -> the first row holding it."""
    table: dict[bytes, int] = {}
    for i, k in enumerate(keys.tolist()):
        table.setdefault(k, i)
    return table


class RankingCache:
    """One retriever's top-``depth`` rankings of question texts, on disk (see the module docstring)."""

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
        self.depth = depth
        self.key = digest("rankings", RESULTS_VERSION, kind, dict(key), chunks, depth)
        self.store = ArrayStore(_folder(root, kind, self.key))
        #: Why a cache on disk was not used, for the user to see.
        self.warnings: list[str] = []
        self._held: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

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
        self._held = None
        try:
            found = self.store.read({"key": self.key})
            if found is not None:
                meta, arrays = found
                keys, index, scores = self._check(arrays)
                self._held = (keys, index, scores)
                if meta.get("last") == texts.digest and meta.get("last_count") == n <= len(keys):
                    return Found(index[:n], scores[:n], [])  # read-only views: nothing to fill
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
        """Write every text's ranking (this list's rows first, in order), keeping the rows of other
        texts the cache held; a failure to write is a warning, not an error."""
        keys = np.asarray(texts.keys, dtype="|S20").reshape(len(texts.texts))
        parts_keys, parts_index, parts_scores = [keys], [index], [scores]
        if self._held is not None:
            old_keys, old_index, old_scores = self._held
            current = set(texts.keys)
            keep = np.fromiter(
                (k not in current for k in old_keys.tolist()), dtype=bool, count=len(old_keys)
            )
            parts_keys.append(old_keys[keep])
            parts_index.append(old_index[keep])
            parts_scores.append(old_scores[keep])
        arrays = {
            "keys": np.concatenate(parts_keys).astype("|S20"),
            "index": np.concatenate(parts_index).astype(np.int32),
            "scores": np.concatenate(parts_scores).astype(np.float64),
        }
        meta = {
            "key": self.key,
            "kind": self.kind,
            "depth": self.depth,
            "chunks": self.chunks,
            "last": texts.digest,
            "last_count": len(texts.texts),
        }
        try:
            self.store.write(meta, arrays)
        except OSError as exc:
            self.warnings.append(
                f"{self.store.folder}: results cache not written ({exc.strerror or exc})"
            )
            return
        self._held = (arrays["keys"], arrays["index"], arrays["scores"])


class EvidenceCache:
    """Each evidence string's matching chunks and each question's (the union of its strings'), on disk."""

    def __init__(self, chunks_key: str, chunks: int, root: Path | None = None) -> None:
        self.chunks = chunks
        self.key = digest("evidence", RESULTS_VERSION, chunks_key, chunks)
        self.store = ArrayStore(_folder(root, "evidence", self.key))
        self.warnings: list[str] = []

    def _check_csr(self, offsets: np.ndarray, codes: np.ndarray, rows: int) -> None:
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
            # Within a row, chunk indices rise strictly (chunk order, none twice).
            rising = np.diff(codes.astype(np.int64)) > 0
            row_start = np.zeros(len(codes), dtype=bool)
            row_start[offsets[:-1][offsets[:-1] < len(codes)]] = True
            if codes.min() < 0 or codes.max() >= self.chunks or np.any(~rising & ~row_start[1:]):
                raise CacheMismatch("a row of matching chunks is out of range or out of order")

    def lookup(
        self,
        evidence: Sequence[Sequence[str]],
        match: Callable[[str], list[int]],
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every question's matching chunk indices (chunk order) as offsets and indices; ``match``
        finds one (white-space-collapsed) evidence string's chunks when the cache lacks it."""
        n = len(evidence)
        lists = [list(e) for e in evidence]
        last = _list_digest(lists)
        held: dict[str, np.ndarray] | None = None
        try:
            found = self.store.read({"key": self.key})
            if found is not None:
                meta, held = found
                names = ("keys", "offsets", "codes", "q_offsets", "q_codes")
                if any(name not in held for name in names):
                    raise CacheMismatch("an array is missing")
                if held["keys"].dtype.str != "|S20" or held["keys"].ndim != 1:
                    raise CacheMismatch("the evidence keys are not SHA-1 digests")
                self._check_csr(held["offsets"], held["codes"], len(held["keys"]))
                count = meta.get("last_count")
                if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                    raise CacheMismatch("the manifest's question count is not a number")
                self._check_csr(held["q_offsets"], held["q_codes"], count)
                if meta.get("last") == last and count == n:
                    return held["q_offsets"], held["q_codes"]
        except CacheMismatch as exc:
            self.warnings.append(f"{self.store.folder}: evidence cache ignored and rebuilt ({exc})")
            held = None
        # Text by text: each distinct evidence string found in the cache or matched now.
        known: dict[bytes, list[int]] = {}
        if held is not None:
            offsets, codes = held["offsets"].tolist(), held["codes"].tolist()
            for i, k in enumerate(held["keys"].tolist()):
                known.setdefault(k, codes[offsets[i] : offsets[i + 1]])
        q_offsets = np.zeros(n + 1, dtype=np.int64)
        q_codes: list[int] = []
        for i, strings in enumerate(lists):
            matched: set[int] = set()
            for text in strings:
                needle = normalize_ws(text)
                if not needle:
                    continue
                key = _key_of(needle)
                chunks = known.get(key)
                if chunks is None:
                    chunks = known[key] = match(needle)
                matched.update(chunks)
            q_codes.extend(sorted(matched))
            q_offsets[i + 1] = len(q_codes)
        codes_out = np.asarray(q_codes, dtype=np.int32)
        # Written again even when nothing was new: the next start with this list reads it at once.
        self._save(last, len(lists), known, q_offsets, codes_out)
        return q_offsets, codes_out

    def _save(
        self,
        last: str,
        count: int,
        known: dict[bytes, list[int]],
        q_offsets: np.ndarray,
        q_codes: np.ndarray,
    ) -> None:
        keys = list(known)
        offsets = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum([len(known[k]) for k in keys], out=offsets[1:])
        codes = np.asarray([c for k in keys for c in known[k]], dtype=np.int32)
        meta = {
            "key": self.key,
            "chunks": self.chunks,
            "last": last,
            "last_count": count,
        }
        try:
            self.store.write(
                meta,
                {
                    "keys": np.asarray(keys, dtype="|S20").reshape(len(keys)),
                    "offsets": offsets,
                    "codes": codes,
                    "q_offsets": q_offsets,
                    "q_codes": q_codes,
                },
            )
        except OSError as exc:
            self.warnings.append(
                f"{self.store.folder}: evidence cache not written ({exc.strerror or exc})"
            )
