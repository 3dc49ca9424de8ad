"""The retriever interface: ``search(question, depth) -> [(chunk id, score), ...]``, best first.

Ties in score are always broken by chunk order (the position of the chunk in the corpus), so every
run is deterministic.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ragtui.core.metrics.evaluation import Ranking

__all__ = ["RETRIEVER_NAMES", "Ranking", "Retriever", "top_indices"]

#: The built-in retrievers, in display order.
RETRIEVER_NAMES = ("bm25", "vector", "hybrid")


class Retriever(Protocol):
    """Anything that ranks chunks for a question."""

    name: str

    def search(self, question: str, depth: int) -> Ranking:
        """The top ``depth`` chunks for ``question``, best first, with their scores."""
        ...


def top_indices(scores: np.ndarray, candidates: np.ndarray, depth: int) -> list[int]:
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
