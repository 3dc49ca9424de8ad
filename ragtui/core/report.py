"""The evaluation report: the ``ragtui eval --json`` object of DESIGN.md, and its rows for a table."""

from __future__ import annotations

from typing import Any

from ragtui.core.workspace import Workspace


def eval_report(ws: Workspace) -> dict[str, Any]:
    """The JSON object of ``ragtui eval --json``."""
    ev = ws.evaluation
    assert ev is not None
    retrievers: dict[str, Any] = {}
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
            }
        retrievers[name] = {**summary.as_dict(), "per_question": per_question}
    return {
        "k": ws.settings.k,
        "depth": ws.settings.depth,
        "questions": len(ev.evaluated),
        "skipped": ev.skipped,
        "chunks": len(ws.chunks),
        "retrievers": retrievers,
    }


def table_rows(ws: Workspace) -> list[tuple[str, str, str, str, str]]:
    """One row per retriever: name, recall@k, 'precision@k (ceiling)', MRR, nDCG@k, as printed."""
    ev = ws.evaluation
    assert ev is not None
    rows = []
    for name in ws.retrievers:
        s = ev.summary(name)
        rows.append(
            (name, f"{s.recall:.3f}", f"{s.precision:.3f} ({s.precision_ceiling:.3f})", f"{s.mrr:.3f}", f"{s.ndcg:.3f}")
        )
    return rows


def format_table(ws: Workspace) -> str:
    """The plain-text metric table that ``ragtui eval`` prints."""
    k = ws.settings.k
    header = ("retriever", f"recall@{k}", f"precision@{k} (ceiling)", "MRR", f"nDCG@{k}")
    rows = [header, *table_rows(ws)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows
    )
