"""Hybrid attribution: why RRF ranked a chunk where it did, and the best any fusion of the two lists could do.

For every fused result: its bm25 rank and vector rank (1-based, within the top ``depth`` each list
contributes), its two RRF terms 1 / (rrf_k + rank) (0 when the list does not hold it), and whether
its fused score ties a neighbour's (ties are then broken by chunk order).  Also the chunks only one
of the two lists found, and the relevant chunks neither found.

Pool ceiling: the two top-``depth`` lists form the pool every fusion of them draws from, and no
fusion can put more than ``min(k, |relevant ∩ pool|)`` relevant chunks in its top k, so
``min(k, |relevant ∩ pool|) / |relevant|`` is the best recall@k any fusion could reach.  Its mean
over the evaluated questions is shown beside hybrid's recall@k: the gap is what a better fusion could
gain, the rest of the way to 1.0 only better first-stage retrievers can.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragtui.core.errors import InputError
from ragtui.core.metrics.formulas import recall_at_k
from ragtui.core.metrics.measures import relevant_set
from ragtui.core.retrieval.base import Ranking
from ragtui.core.retrieval.hybrid import RRF_K, TIE_TOLERANCE, rrf_fuse
from ragtui.core.workspace import Workspace

__all__ = [
    "FusedResult",
    "HybridExplanation",
    "PoolCeiling",
    "RerankExplanation",
    "RerankedResult",
    "SoleResult",
    "explain_hybrid",
    "explain_rerank",
    "pool_ceilings",
]


@dataclass(frozen=True, slots=True)
class FusedResult:
    """One hybrid result and where its score came from."""

    rank: int
    chunk: str
    score: float
    bm25_rank: int | None
    vector_rank: int | None
    bm25_term: float
    vector_term: float
    tied: bool
    grade: int | None
    relevant: bool
    known: bool


@dataclass(frozen=True, slots=True)
class SoleResult:
    """A chunk that only one of the two lists found: its rank there and its hybrid rank (None if fused out)."""

    chunk: str
    retriever: str
    rank: int
    hybrid_rank: int | None
    grade: int | None
    relevant: bool


@dataclass(frozen=True)
class HybridExplanation:
    """The attribution of one question's hybrid ranking."""

    question: str
    k: int
    depth: int
    rrf_k: int
    results: list[FusedResult]
    only_bm25: list[SoleResult]
    only_vector: list[SoleResult]
    missed: list[str]
    relevant: int
    relevant_in_pool: int
    pool_ceiling: float
    hybrid_recall: float


@dataclass(frozen=True)
class PoolCeiling:
    """Mean pool ceiling and mean hybrid recall@k over the evaluated questions, and each question's pair."""

    k: int
    questions: int
    pool_ceiling: float
    hybrid_recall: float
    per_question: dict[str, tuple[float, float]]


def _lists(ws: Workspace, qid: str) -> tuple[Ranking, Ranking, int]:
    """The bm25 and vector top-depth lists of a question, and the RRF k."""
    missing = [n for n in ("bm25", "vector") if n not in ws.ranked.rankings]
    if missing:
        raise InputError(
            None,
            f"hybrid attribution needs the bm25 and vector rankings; {' and '.join(missing)} not loaded",
        )
    if qid not in ws.questions.by_id:
        raise InputError(None, f"unknown question {qid!r}")
    depth = ws.settings.depth
    rrf_k = ws.ranked.hybrid.k if ws.ranked.hybrid is not None else RRF_K
    return ws.ranking("bm25", qid)[:depth], ws.ranking("vector", qid)[:depth], rrf_k


def _ceiling(relevant: frozenset[str], pool: set[str], k: int) -> float:
    if not relevant:
        return 0.0
    return min(k, len(relevant & pool)) / len(relevant)


def explain_hybrid(ws: Workspace, qid: str) -> HybridExplanation:
    """The hybrid ranking of question ``qid`` with each result's ranks, RRF terms and ties, sole finds and pool ceiling."""
    bm25, vector, rrf_k = _lists(ws, qid)
    k, depth = ws.settings.k, ws.settings.depth
    # Chunk grades, whatever the evaluation level: attribution is about the chunks the two lists hold.
    gains = ws.grades.effective_grades(qid)
    relevant = relevant_set(gains, ws.settings.threshold)
    bm25_rank = {cid: r for r, (cid, _) in enumerate(bm25, start=1)}
    vector_rank = {cid: r for r, (cid, _) in enumerate(vector, start=1)}
    fused = rrf_fuse([bm25, vector], ws.passages.order, depth, rrf_k)
    hybrid_rank = {cid: r for r, (cid, _) in enumerate(fused, start=1)}
    results = []
    for i, (cid, score) in enumerate(fused):
        tied = any(
            0 <= j < len(fused) and abs(fused[j][1] - score) <= TIE_TOLERANCE
            for j in (i - 1, i + 1)
        )
        br, vr = bm25_rank.get(cid), vector_rank.get(cid)
        results.append(
            FusedResult(
                rank=i + 1,
                chunk=cid,
                score=score,
                bm25_rank=br,
                vector_rank=vr,
                bm25_term=1.0 / (rrf_k + br) if br is not None else 0.0,
                vector_term=1.0 / (rrf_k + vr) if vr is not None else 0.0,
                tied=tied,
                grade=gains.get(cid),
                relevant=cid in relevant,
                known=cid in ws.passages.by_id,
            )
        )

    def sole(ranks: dict[str, int], other: dict[str, int], name: str) -> list[SoleResult]:
        return [
            SoleResult(cid, name, r, hybrid_rank.get(cid), gains.get(cid), cid in relevant)
            for cid, r in ranks.items()
            if cid not in other
        ]

    pool = set(bm25_rank) | set(vector_rank)
    missed = sorted(
        (c for c in relevant if c not in pool),
        key=lambda c: ws.passages.order.get(c, len(ws.passages.order)),
    )
    return HybridExplanation(
        question=qid,
        k=k,
        depth=depth,
        rrf_k=rrf_k,
        results=results,
        only_bm25=sole(bm25_rank, vector_rank, "bm25"),
        only_vector=sole(vector_rank, bm25_rank, "vector"),
        missed=missed,
        relevant=len(relevant),
        relevant_in_pool=len(relevant & pool),
        pool_ceiling=_ceiling(relevant, pool, k),
        hybrid_recall=_hybrid_recall(ws, qid, [cid for cid, _ in fused], relevant, k),
    )


def _hybrid_recall(
    ws: Workspace, qid: str, fused: list[str], relevant: frozenset[str] | set[str], k: int
) -> float:
    """hybrid's recall@k of a question as the evaluation holds it (every view shows that one);
    computed from the fused list only where the evaluation has no hybrid row."""
    ev = ws.evaluation
    if ev is not None and "hybrid" in ev.per_question and qid in ev.evaluated and k == ev.k:
        return ev.per_question["hybrid"][qid].recall
    return recall_at_k(fused, relevant, k) if relevant else 0.0


def pool_ceilings(ws: Workspace) -> PoolCeiling:
    """Mean pool ceiling (the best recall@k any fusion of the two top-depth lists could reach) and hybrid's recall@k."""
    ev = ws.evaluation
    assert ev is not None
    k, depth = ws.settings.k, ws.settings.depth
    per_question: dict[str, tuple[float, float]] = {}
    for qid in ev.question_ids:
        if qid not in ev.evaluated:
            continue
        bm25, vector, rrf_k = _lists(ws, qid)
        relevant = relevant_set(ws.grades.effective_grades(qid), ws.settings.threshold)
        pool = {cid for cid, _ in bm25} | {cid for cid, _ in vector}
        fused = [cid for cid, _ in rrf_fuse([bm25, vector], ws.passages.order, depth, rrf_k)]
        per_question[qid] = (
            _ceiling(relevant, pool, k),
            _hybrid_recall(ws, qid, fused, relevant, k),
        )
    n = len(per_question)
    if n == 0:
        return PoolCeiling(k, 0, 0.0, 0.0, per_question)
    return PoolCeiling(
        k,
        n,
        sum(c for c, _ in per_question.values()) / n,
        sum(r for _, r in per_question.values()) / n,
        per_question,
    )


@dataclass(frozen=True, slots=True)
class RerankedResult:
    """One result of the reranked list: the cross-encoder's score and where the first stage ranked it."""

    rank: int
    chunk: str
    score: float
    first_stage_rank: int
    grade: int | None
    relevant: bool


@dataclass(frozen=True)
class RerankExplanation:
    """How the cross-encoder reordered one question's first-stage list, and what it cost."""

    question: str
    retriever: str
    over: str
    model: str
    results: list[RerankedResult]
    seconds: float
    """The time the cross-encoder took on this question's pairs (measured when they were scored)."""


def explain_rerank(ws: Workspace, qid: str) -> RerankExplanation | None:
    """The reranked list of ``qid`` beside the first stage's ranks; None without a reranker."""
    if ws.ranked.rerank is None or ws.ranked.reranker is None:
        return None
    if qid not in ws.questions.by_id:
        raise InputError(None, f"unknown question {qid!r}")
    assert ws.evaluation is not None
    gains = ws.evaluation.gains(qid)
    relevant = relevant_set(gains, ws.settings.threshold)
    first = {cid: r for r, (cid, _) in enumerate(ws.ranking(ws.ranked.reranker.over, qid), start=1)}
    results = [
        RerankedResult(rank, cid, score, first.get(cid, 0), gains.get(cid), cid in relevant)
        for rank, (cid, score) in enumerate(ws.ranking(ws.ranked.rerank.name, qid), start=1)
    ]
    return RerankExplanation(
        qid,
        ws.ranked.rerank.name,
        ws.ranked.reranker.over,
        ws.ranked.reranker.model.name,
        results,
        ws.ranked.rerank.seconds.get(qid, 0.0),
    )
