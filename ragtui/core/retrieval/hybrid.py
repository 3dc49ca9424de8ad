"""Hybrid retrieval: Reciprocal Rank Fusion of two rankings."""

from __future__ import annotations

from collections.abc import Sequence

from ragtui.core.retrieval.base import Ranking, Retriever

#: RRF's rank constant (Cormack et al. 2009).
RRF_K = 60
#: Two fused scores this close are a tie (the sums of 1 / (k + rank) differ only by rounding).
TIE_TOLERANCE = 1e-12


def rrf_fuse(
    rankings: Sequence[Ranking], order: dict[str, int], depth: int, k: int = RRF_K
) -> Ranking:
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

    def __init__(
        self, first: Retriever, second: Retriever, chunk_order: dict[str, int], k: int = RRF_K
    ):
        self.first, self.second = first, second
        self.order = chunk_order
        self.k = k

    def search(self, question: str, depth: int) -> Ranking:
        """The fused top ``depth``."""
        return self.fuse(
            self.first.search(question, depth), self.second.search(question, depth), depth
        )

    def fuse(self, first: Ranking, second: Ranking, depth: int) -> Ranking:
        """Fuse two rankings already computed (each cut to ``depth``)."""
        return rrf_fuse([first[:depth], second[:depth]], self.order, depth, self.k)
