"""Okapi BM25 over the chunks: rank-bm25's BM25Okapi (the reference) or bm25s (sparse matrices, fast)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ragtui.core.data.chunking import Chunk
from ragtui.core.retrieval.base import Ranking, top_indices

#: The BM25 implementations on offer.
BM25_BACKENDS = ("rank-bm25", "bm25s")

_WORD = re.compile(r"\w+")


def bm25_tokens(text: str) -> list[str]:
    """BM25's tokens: lower-case runs of word characters (no stemming, no stop words)."""
    return _WORD.findall(text.lower())


def bm25_text(chunk: Chunk) -> str:
    """The text BM25 indexes for a chunk."""
    return chunk.text


class BM25Retriever:
    """Okapi BM25 (rank-bm25's BM25Okapi by default, or bm25s); chunks sharing no query term are not returned."""

    name = "bm25"

    def __init__(
        self, chunks: Sequence[Chunk], backend: str = "rank-bm25", k1: float = 1.5, b: float = 0.75
    ):
        if backend not in BM25_BACKENDS:
            raise ValueError(
                f"unknown BM25 backend {backend!r}; choose from {', '.join(BM25_BACKENDS)}"
            )
        self.ids = [c.id for c in chunks]
        self.backend = backend
        self.k1, self.b = k1, b
        tokenized = [bm25_tokens(bm25_text(c)) for c in chunks]
        self._postings: dict[str, list[int]] = {}
        if backend == "rank-bm25":
            # Okapi's floored IDF can be zero or negative, so a score says nothing about a match:
            # keep postings to know which chunks share a term with the question.
            for i, toks in enumerate(tokenized):
                for tok in set(toks):
                    self._postings.setdefault(tok, []).append(i)
            from rank_bm25 import BM25Okapi

            # Pre-tokenized: rank-bm25's own tokenizer= opens a process pool it never closes.
            self._okapi = BM25Okapi(tokenized, k1=k1, b=b)
        else:
            import bm25s

            self._bm25s = bm25s.BM25(k1=k1, b=b, method="lucene")
            vocab: dict[str, int] = {}
            ids = [[vocab.setdefault(t, len(vocab)) for t in toks] for toks in tokenized]
            self._vocab = vocab
            self._bm25s.index(
                bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False
            )

    @property
    def variant(self) -> str:
        """The BM25 variant and parameters, for manifests."""
        name = "BM25Okapi (rank-bm25)" if self.backend == "rank-bm25" else "BM25 lucene (bm25s)"
        return f"{name} k1={self.k1} b={self.b}"

    def candidates(self, terms: Sequence[str]) -> np.ndarray:
        """Chunks containing at least one of ``terms``, in chunk order."""
        found: set[int] = set()
        for term in set(terms):
            found.update(self._postings.get(term, ()))
        return np.array(sorted(found), dtype=np.int64)

    def scores(self, terms: Sequence[str]) -> np.ndarray:
        """BM25 score of every chunk for the query terms."""
        if self.backend == "rank-bm25":
            return np.asarray(self._okapi.get_scores(list(terms)), dtype=np.float64)
        ids = [self._vocab[t] for t in terms if t in self._vocab]
        if not ids:
            return np.zeros(len(self.ids))
        return np.asarray(self._bm25s.get_scores(ids), dtype=np.float64)

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
