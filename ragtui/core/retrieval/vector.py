"""Exact cosine search over unit-length chunk embeddings."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ragtui.core.data.chunking import Chunk
from ragtui.core.retrieval.base import Ranking, top_indices


class VectorRetriever:
    """Exact cosine search: unit-length chunk embeddings times the question embedding."""

    name = "vector"

    def __init__(
        self, chunks: Sequence[Chunk], matrix: np.ndarray, embed_query: Callable[[str], np.ndarray]
    ):
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
        return [(self.ids[i], float(scores[i])) for i in top_indices(scores, self._all, depth)]

    def search_vectors(self, queries: np.ndarray, depth: int, batch: int = 256) -> list[Ranking]:
        """``search_vector`` for many embedded questions, one matrix product per batch."""
        out: list[Ranking] = []
        queries = np.asarray(queries, dtype=np.float32)
        for start in range(0, len(queries), batch):
            block = self.matrix @ queries[start : start + batch].T
            for j in range(block.shape[1]):
                scores = np.ascontiguousarray(block[:, j])
                out.append(
                    [(self.ids[i], float(scores[i])) for i in top_indices(scores, self._all, depth)]
                )
        return out
