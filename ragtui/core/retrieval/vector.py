"""Exact cosine search over unit-length chunk embeddings, or over window embeddings pooled per chunk."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ragtui.core.data.chunking import Chunk
from ragtui.core.retrieval.base import Ranking, top_indices

#: How the window scores of one chunk become its score.
POOLINGS = ("max", "mean")


class VectorRetriever:
    """Exact cosine search: unit-length embeddings times the question embedding.

    With ``first_rows`` the matrix holds several rows (windows) per chunk, chunk after chunk, and
    ``first_rows[i]`` is chunk ``i``'s first row; a chunk scores the best (``max``) or the mean of
    its windows' cosines.
    """

    name = "vector"

    def __init__(
        self,
        chunks: Sequence[Chunk],
        matrix: np.ndarray,
        embed_query: Callable[[str], np.ndarray],
        first_rows: np.ndarray | None = None,
        pooling: str = "max",
    ):
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}")
        self.ids = [c.id for c in chunks]
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.pooling = pooling
        self._embed_query = embed_query
        self._all = np.arange(len(self.ids), dtype=np.int64)
        self._first_rows: np.ndarray | None = None
        if first_rows is None or len(first_rows) == self.matrix.shape[0]:
            if self.matrix.shape[0] != len(chunks):
                raise ValueError("one embedding per chunk is needed")
            return
        rows = np.asarray(first_rows, dtype=np.int64)
        if len(rows) != len(chunks) or (len(rows) and rows[0] != 0):
            raise ValueError("first_rows needs one entry per chunk, starting at row 0")
        if np.any(np.diff(np.append(rows, self.matrix.shape[0])) < 1):
            raise ValueError("every chunk needs at least one row, in order")
        if pooling == "mean":
            # The mean of a chunk's window cosines is the cosine with the mean of its windows.
            counts = np.diff(np.append(rows, self.matrix.shape[0])).astype(np.float32)
            pooled = np.add.reduceat(self.matrix, rows, axis=0) / counts[:, None]
            self.matrix = np.ascontiguousarray(pooled, dtype=np.float32)
        else:
            self._first_rows = rows

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Every chunk's score for an embedded question (its best window's cosine with windows)."""
        row_scores = self.matrix @ np.asarray(query, dtype=np.float32)
        if self._first_rows is None:
            return row_scores
        return np.maximum.reduceat(row_scores, self._first_rows)

    def search(self, question: str, depth: int) -> Ranking:
        """The ``depth`` chunks nearest the question."""
        return self.search_vector(self._embed_query(question), depth)

    def search_vector(self, query: np.ndarray, depth: int) -> Ranking:
        """The ``depth`` chunks nearest an embedded question."""
        scores = self.scores(query)
        return [(self.ids[i], float(scores[i])) for i in top_indices(scores, self._all, depth)]

    def search_vectors(self, queries: np.ndarray, depth: int, batch: int = 256) -> list[Ranking]:
        """``search_vector`` for many embedded questions, one matrix product per batch.

        Every product has ``batch`` columns (the last batch is padded with zeros): BLAS sums a
        column in an order that depends on how many columns the product has, so a question's
        float32 scores would otherwise depend on which questions were ranked with it, and a ranking
        read from the results cache could differ in the last bit from one computed now.
        """
        out: list[Ranking] = []
        queries = np.asarray(queries, dtype=np.float32)
        for start in range(0, len(queries), batch):
            part = queries[start : start + batch]
            if len(part) < batch:
                part = np.vstack([part, np.zeros((batch - len(part), part.shape[1]), np.float32)])
            block = self.matrix @ part.T
            if self._first_rows is not None:
                block = np.maximum.reduceat(block, self._first_rows, axis=0)
            for j in range(min(batch, len(queries) - start)):
                scores = np.ascontiguousarray(block[:, j])
                out.append(
                    [(self.ids[i], float(scores[i])) for i in top_indices(scores, self._all, depth)]
                )
        return out
