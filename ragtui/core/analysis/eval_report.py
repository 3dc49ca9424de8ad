"""The evaluation report: the ``ragtui eval --json`` object (every key in docs/json.md), and its rows for a table."""

from __future__ import annotations

from typing import Any

from ragtui.core.analysis.attribution import pool_ceilings
from ragtui.core.analysis.slices import slices_json
from ragtui.core.labelling.judging import judged_summaries
from ragtui.core.workspace import Workspace


def eval_report(ws: Workspace) -> dict[str, Any]:
    """The JSON object of ``ragtui eval --json``."""
    ev = ws.evaluation
    assert ev is not None
    retrievers: dict[str, Any] = {}
    judged = judged_summaries(ws)
    for name in ws.retrievers:
        summary = ev.summary(name)
        per_question = {}
        for qid in ev.question_ids:
            if qid not in ev.evaluated:
                continue
            m = ev.per_question[name][qid]
            per_question[qid] = {
                "first_relevant_rank": m.first_relevant_rank,
                "recall": m.recall,
                "precision": m.precision,
                "rr": m.rr,
                "ndcg": m.ndcg,
                "ranked": [cid for cid, _ in ws.ranking(name, qid)],
                "judged": judged[name].per_question[qid],
            }
        retrievers[name] = {
            **summary.as_dict(),
            "per_question": per_question,
            "judged": judged[name].mean,
            "thinly_judged": judged[name].thin,
        }
    if "hybrid" in retrievers and "bm25" in ws.rankings and "vector" in ws.rankings:
        # The best recall@k any fusion of the two top-depth lists could reach, beside hybrid's recall.
        retrievers["hybrid"]["pool_ceiling"] = pool_ceilings(ws).pool_ceiling
    if ws.rerank is not None and ws.rerank.name in retrievers:
        retrievers[ws.rerank.name]["rerank"] = rerank_json(ws)
    return {
        "k": ws.settings.k,
        "depth": ws.settings.depth,
        "questions": len(ev.evaluated),
        "skipped": ev.skipped,
        "chunks": len(ws.chunks),
        "retrievers": retrievers,
        "slices": slices_json(ws),
    }


def rerank_json(ws: Workspace) -> dict[str, Any]:
    """What the reranking stage did: the model, the list it re-scored, and its time per question."""
    assert ws.rerank is not None and ws.reranker is not None
    return {
        "model": ws.reranker.model.name,
        "over": ws.reranker.over,
        "depth": ws.settings.depth,
        "latency": ws.rerank.latency.as_dict(),
    }


def rerank_line(ws: Workspace) -> str | None:
    """``hybrid+rerank: MODEL re-scored the top 10 of hybrid; median ... per question``, or None."""
    if ws.rerank is None or ws.reranker is None:
        return None
    return (
        f"{ws.rerank.name}: {ws.reranker.model.name} re-scored the top {ws.settings.depth} of "
        f"{ws.reranker.over}; latency {ws.rerank.latency.describe()}"
    )


def table_rows(ws: Workspace) -> list[tuple[str, str, str, str, str]]:
    """One row per retriever: name, recall@k, 'precision@k (ceiling)', MRR, nDCG@k, as printed."""
    ev = ws.evaluation
    assert ev is not None
    rows = []
    for name in ws.retrievers:
        s = ev.summary(name)
        rows.append(
            (
                name,
                f"{s.recall:.3f}",
                f"{s.precision:.3f} ({s.precision_ceiling:.3f})",
                f"{s.mrr:.3f}",
                f"{s.ndcg:.3f}",
            )
        )
    return rows


def format_table(ws: Workspace, judged: bool = False) -> str:
    """The plain-text metric table that ``ragtui eval`` prints; ``judged`` adds a Judged@k column ("thin" below 0.5)."""
    k = ws.settings.k
    header: tuple[str, ...] = (
        "retriever",
        f"recall@{k}",
        f"precision@{k} (ceiling)",
        "MRR",
        f"nDCG@{k}",
    )
    rows: list[tuple[str, ...]] = [header, *table_rows(ws)]
    if judged:
        summaries = judged_summaries(ws)
        rows = [(*header, f"judged@{k}")] + [
            (*row, f"{summaries[row[0]].mean:.3f}" + (" thin" if summaries[row[0]].thin else ""))
            for row in rows[1:]
        ]
        header = rows[0]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
