"""Okapi BM25 over the chunks: rank-bm25's BM25Okapi (the reference) or bm25s (sparse matrices, fast).

With rank-bm25, the index (each term's postings with their term frequencies, rank-bm25's IDF of
every term, the chunk lengths) is built by ``BM25Okapi`` itself and then kept as arrays, which a
binary cache keyed by the chunks' content can hold (``cache_root``): a warm start reads it instead
of tokenizing every chunk. Scores are computed from the postings with rank-bm25's own formula and
the same floating-point operations in the same order as ``BM25Okapi.get_scores``, so they are
equal to its scores (``tests/test_retrievers.py`` checks it on random corpora) while a question
costs the length of its terms' postings instead of a pass over every chunk in Python.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragtui.core.data.binary_cache import ArrayStore, CacheMismatch, digest
from ragtui.core.data.chunking import Chunk
from ragtui.core.data.paths import cache_dir
from ragtui.core.retrieval.base import Ranking, top_indices

#: The BM25 implementations on offer.
BM25_BACKENDS = ("rank-bm25", "bm25s")

#: rank-bm25's default floor of negative IDFs (a share of the mean IDF).
EPSILON = 0.25

#: Bump when the tokens or the cached index change meaning: older caches are then not read.
BM25_CACHE_VERSION = 1

_WORD = re.compile(r"\w+")


def bm25_tokens(text: str) -> list[str]:
    """BM25's tokens: lower-case runs of word characters (no stemming, no stop words)."""
    return _WORD.findall(text.lower())


def bm25_text(chunk: Chunk) -> str:
    """The text BM25 indexes for a chunk."""
    return chunk.text


class BM25Retriever:
    """Okapi BM25 (rank-bm25's BM25Okapi by default, or bm25s); chunks sharing no query term are not returned.

    ``cache_root`` with ``chunks_key`` (the chunks' content digest, ``chunk_cache.chunks_digest``)
    reads the rank-bm25 index from the binary cache, or builds and writes it there; ``warnings``
    says when a cache could not be used.
    """

    name = "bm25"

    def __init__(
        self,
        chunks: Sequence[Chunk],
        backend: str = "rank-bm25",
        k1: float = 1.5,
        b: float = 0.75,
        *,
        cache_root: Path | None = None,
        chunks_key: str | None = None,
    ):
        if backend not in BM25_BACKENDS:
            raise ValueError(
                f"unknown BM25 backend {backend!r}; choose from {', '.join(BM25_BACKENDS)}"
            )
        self.ids = [c.id for c in chunks]
        self.backend = backend
        self.k1, self.b = k1, b
        self.warnings: list[str] = []
        if backend == "rank-bm25":
            store = None
            if chunks_key is not None:
                key = digest("bm25-index", BM25_CACHE_VERSION, chunks_key, k1, b, EPSILON)
                store = ArrayStore((cache_root or cache_dir()) / "bm25" / key[:40])
                if self._read_index(store, key):
                    return
            tokenized = [bm25_tokens(bm25_text(c)) for c in chunks]
            if any(tokenized):
                self._build_index(tokenized)
            else:
                self._empty_index(tokenized)
            if store is not None:
                self._write_index(store, key)
        else:
            import bm25s

            tokenized = [bm25_tokens(bm25_text(c)) for c in chunks]
            self._bm25s = bm25s.BM25(k1=k1, b=b, method="lucene")
            vocab: dict[str, int] = {}
            ids = [[vocab.setdefault(t, len(vocab)) for t in toks] for toks in tokenized]
            self._vocab = vocab
            if vocab:  # no word in any chunk: nothing to index, and every question finds nothing
                self._bm25s.index(
                    bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False
                )

    # ---- the rank-bm25 index as arrays -------------------------------------------------------

    def _build_index(self, tokenized: list[list[str]]) -> None:
        """Build BM25Okapi (the reference: its IDF with the epsilon floor, its lengths) and keep its index as arrays."""
        from rank_bm25 import BM25Okapi

        # Pre-tokenized: rank-bm25's own tokenizer= opens a process pool it never closes.
        okapi = BM25Okapi(tokenized, k1=self.k1, b=self.b, epsilon=EPSILON)
        vocab = {term: i for i, term in enumerate(okapi.idf)}
        postings: list[list[int]] = [[] for _ in vocab]
        frequencies: list[list[int]] = [[] for _ in vocab]
        for doc, counts in enumerate(okapi.doc_freqs):
            for term, count in counts.items():
                t = vocab[term]
                postings[t].append(doc)
                frequencies[t].append(count)
        offsets = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in postings], out=offsets[1:])
        self._vocab = vocab
        self._offsets = offsets
        self._docs = np.asarray([d for p in postings for d in p], dtype=np.int32)
        self._tf = np.asarray([f for fs in frequencies for f in fs], dtype=np.int64)
        self._idf = np.asarray([okapi.idf[t] for t in vocab], dtype=np.float64)
        self._doc_len = np.asarray(okapi.doc_len, dtype=np.int64)
        self._avgdl = float(okapi.avgdl)

    def _empty_index(self, tokenized: list[list[str]]) -> None:
        """The index of chunks without a single word (or of no chunks), which rank-bm25 cannot
        build (it divides by the number of terms): no term, so every question finds nothing."""
        self._vocab = {}
        self._offsets = np.zeros(1, dtype=np.int64)
        self._docs = np.zeros(0, dtype=np.int32)
        self._tf = np.zeros(0, dtype=np.int64)
        self._idf = np.zeros(0, dtype=np.float64)
        self._doc_len = np.asarray([len(t) for t in tokenized], dtype=np.int64)
        self._avgdl = 0.0

    def _write_index(self, store: ArrayStore, key: str) -> None:
        try:
            store.write(
                {"key": key, "terms": list(self._vocab), "chunks": len(self.ids)},
                {
                    "offsets": self._offsets,
                    "docs": self._docs,
                    "tf": self._tf,
                    "idf": self._idf,
                    "doc_len": self._doc_len,
                    "avgdl": np.asarray([self._avgdl], dtype=np.float64),
                },
            )
        except OSError as exc:
            self.warnings.append(
                f"{store.folder}: BM25 index cache not written ({exc.strerror or exc})"
            )

    def _read_index(self, store: ArrayStore, key: str) -> bool:
        """Take the index from the cache; False (with a warning when it was unusable) to build it."""
        try:
            found = store.read({"key": key, "chunks": len(self.ids)})
            if found is None:
                return False
            meta, arrays = found
            terms = meta.get("terms")
            if not isinstance(terms, list) or not all(isinstance(t, str) for t in terms):
                raise CacheMismatch("the manifest's terms are not a list of strings")
            try:
                offsets, docs, tf, idf, doc_len, avgdl = (
                    arrays[n] for n in ("offsets", "docs", "tf", "idf", "doc_len", "avgdl")
                )
            except KeyError as exc:
                raise CacheMismatch(f"array {exc.args[0]} is missing") from None
            n = len(self.ids)
            if (
                len(offsets) != len(terms) + 1
                or len(idf) != len(terms)
                or len(doc_len) != n
                or len(avgdl) != 1
                or len(docs) != len(tf)
                or (len(offsets) and (offsets[0] != 0 or offsets[-1] != len(docs)))
                or np.any(np.diff(offsets) < 1)
                or (len(docs) and (docs.min() < 0 or docs.max() >= n or tf.min() < 1))
                or not np.isfinite(idf).all()
                or len(set(terms)) != len(terms)
            ):
                raise CacheMismatch("the arrays do not form a BM25 index of these chunks")
        except CacheMismatch as exc:
            self.warnings.append(f"{store.folder}: BM25 index cache ignored and rebuilt ({exc})")
            return False
        self._vocab = {t: i for i, t in enumerate(terms)}
        self._offsets = offsets
        self._docs = docs
        self._tf = tf
        self._idf = idf
        self._doc_len = doc_len
        self._avgdl = float(avgdl[0])
        return True

    @property
    def variant(self) -> str:
        """The BM25 variant and parameters, for manifests."""
        name = "BM25Okapi (rank-bm25)" if self.backend == "rank-bm25" else "BM25 lucene (bm25s)"
        return f"{name} k1={self.k1} b={self.b}"

    def candidates(self, terms: Sequence[str]) -> np.ndarray:
        """Chunks containing at least one of ``terms``, in chunk order."""
        parts = []
        for term in set(terms):
            t = self._vocab.get(term)
            if t is not None:
                parts.append(self._docs[self._offsets[t] : self._offsets[t + 1]])
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate(parts)).astype(np.int64)

    def scores(self, terms: Sequence[str]) -> np.ndarray:
        """BM25 score of every chunk for the query terms."""
        if self.backend == "rank-bm25":
            return self._okapi_scores(terms)
        ids = [self._vocab[t] for t in terms if t in self._vocab]
        if not ids:
            return np.zeros(len(self.ids))
        return np.asarray(self._bm25s.get_scores(ids), dtype=np.float64)

    def _okapi_scores(self, terms: Sequence[str]) -> np.ndarray:
        """``BM25Okapi.get_scores(terms)``, term by term over the chunks that hold the term.

        rank-bm25 adds every term's contribution to every chunk in query order (a repeated term
        counts again); a chunk without the term gets ``idf * 0 / (...)``, a zero that changes
        nothing. The same expression on the chunks that hold the term, added in the same order,
        gives the same numbers.
        """
        k1, b, avgdl = self.k1, self.b, self._avgdl
        score = np.zeros(len(self.ids))
        for term in terms:
            t = self._vocab.get(term)
            if t is None:
                continue
            idf = float(self._idf[t]) or 0  # rank-bm25 reads it as ``self.idf.get(q) or 0``
            if not idf:
                continue
            start, end = self._offsets[t], self._offsets[t + 1]
            docs = self._docs[start:end]
            q_freq = self._tf[start:end]
            doc_len = self._doc_len[docs]
            score[docs] += idf * (q_freq * (k1 + 1) / (q_freq + k1 * (1 - b + b * doc_len / avgdl)))
        return score

    def search(self, question: str, depth: int) -> Ranking:
        """The best ``depth`` chunks that share a term with the question."""
        terms = bm25_tokens(question)
        if self.backend == "bm25s":
            scores = self.scores(terms)
            # Lucene's IDF is always positive, so a chunk scores above 0 exactly when it matches.
            candidates = np.flatnonzero(scores > 0)
        else:
            candidates = self.candidates(terms)
            if len(candidates) == 0:
                return []
            scores = self.scores(terms)
        return [(self.ids[i], float(scores[i])) for i in top_indices(scores, candidates, depth)]
