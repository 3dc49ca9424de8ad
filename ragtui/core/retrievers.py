"""The retrievers behind one interface: ``search(question, depth) -> [(chunk id, score), ...]``.

Ties in score are always broken by chunk order (the position of the chunk in the corpus), so every
run is deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from ragtui.core.chunking import Chunk

RRF_K = 60
RETRIEVER_NAMES = ("bm25", "vector", "hybrid")
BM25_BACKENDS = ("rank-bm25", "bm25s")

Ranking = list[tuple[str, float]]

_WORD = re.compile(r"\w+")


def bm25_tokens(text: str) -> list[str]:
    """BM25's tokens: lower-case runs of word characters (no stemming, no stop words)."""
    return _WORD.findall(text.lower())


def bm25_text(chunk: Chunk) -> str:
    """The text BM25 indexes for a chunk."""
    return chunk.text


class Retriever(Protocol):
    """Anything that ranks chunks for a question."""

    name: str

    def search(self, question: str, depth: int) -> Ranking:
        """The top ``depth`` chunks for ``question``, best first, with their scores."""
        ...


def _top(scores: np.ndarray, candidates: np.ndarray, depth: int) -> list[int]:
    """Indices of the ``depth`` best candidates by score, ties broken by index (ascending)."""
    if len(candidates) == 0 or depth <= 0:
        return []
    cand_scores = scores[candidates]
    if len(candidates) > depth:
        # Everything tied with the depth-th score stays in, so the tie-break is exact.
        kth = np.partition(cand_scores, len(cand_scores) - depth)[len(cand_scores) - depth]
        keep = cand_scores >= kth
        candidates, cand_scores = candidates[keep], cand_scores[keep]
    order = np.lexsort((candidates, -cand_scores))
    return [int(i) for i in candidates[order][:depth]]


class BM25Retriever:
    """Okapi BM25 (rank-bm25's BM25Okapi by default, or bm25s); chunks sharing no query term are not returned."""

    name = "bm25"

    def __init__(self, chunks: Sequence[Chunk], backend: str = "rank-bm25", k1: float = 1.5, b: float = 0.75):
        if backend not in BM25_BACKENDS:
            raise ValueError(f"unknown BM25 backend {backend!r}; choose from {', '.join(BM25_BACKENDS)}")
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
            self._bm25s.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)

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
        return [(self.ids[i], float(scores[i])) for i in _top(scores, candidates, depth)]


class VectorRetriever:
    """Exact cosine search: unit-length chunk embeddings times the question embedding."""

    name = "vector"

    def __init__(self, chunks: Sequence[Chunk], matrix: np.ndarray, embed_query: Callable[[str], np.ndarray]):
        if matrix.shape[0] != len(chunks):
            raise ValueError("one embedding per chunk is needed")
        self.ids = [c.id for c in chunks]
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self._embed_query = embed_query
        self._all = np.arange(len(self.ids), dtype=np.int64)

    def search(self, question: str, depth: int) -> Ranking:
        """The ``depth`` chunks nearest the question."""
        return self.search_vector(self._embed_query(question), depth)

    def search_vector(self, query: np.ndarray, depth: int) -> Ranking:
        """The ``depth`` chunks nearest an embedded question."""
        scores = self.matrix @ np.asarray(query, dtype=np.float32)
        return [(self.ids[i], float(scores[i])) for i in _top(scores, self._all, depth)]

    def search_vectors(self, queries: np.ndarray, depth: int, batch: int = 256) -> list[Ranking]:
        """``search_vector`` for many embedded questions, one matrix product per batch."""
        out: list[Ranking] = []
        queries = np.asarray(queries, dtype=np.float32)
        for start in range(0, len(queries), batch):
            block = self.matrix @ queries[start : start + batch].T
            for j in range(block.shape[1]):
                scores = np.ascontiguousarray(block[:, j])
                out.append([(self.ids[i], float(scores[i])) for i in _top(scores, self._all, depth)])
        return out


def rrf_fuse(rankings: Sequence[Ranking], order: dict[str, int], depth: int, k: int = RRF_K) -> Ranking:
    """Reciprocal Rank Fusion: score = sum over lists of 1 / (k + rank), rank from 1; ties by chunk order."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, (cid, _) in enumerate(ranking, start=1):
            fused[cid] = fused.get(cid, 0.0) + 1.0 / (k + rank)
    best = sorted(fused.items(), key=lambda item: (-item[1], order[item[0]]))
    return best[:depth]


class HybridRetriever:
    """RRF (k = 60) over the top ``depth`` of two retrievers."""

    name = "hybrid"

    def __init__(self, first: Retriever, second: Retriever, chunk_order: dict[str, int], k: int = RRF_K):
        self.first, self.second = first, second
        self.order = chunk_order
        self.k = k

    def search(self, question: str, depth: int) -> Ranking:
        """The fused top ``depth``."""
        return self.fuse(self.first.search(question, depth), self.second.search(question, depth), depth)

    def fuse(self, first: Ranking, second: Ranking, depth: int) -> Ranking:
        """Fuse two rankings already computed (each cut to ``depth``)."""
        return rrf_fuse([first[:depth], second[:depth]], self.order, depth, self.k)
