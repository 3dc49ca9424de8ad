"""The ``ragtui eval --json`` object (every key in docs/json.md); the table ``ragtui eval`` prints is ``reports.eval_table_report``."""

from __future__ import annotations

from typing import Any

from ragtui.core.analysis.attribution import pool_ceilings
from ragtui.core.analysis.slices import slices_json
from ragtui.core.analysis.why import CAUSES, WhyIndex
from ragtui.core.metrics.evaluation import definitions
from ragtui.core.workspace import Workspace
from ragtui.core.workspace.judging import judged_summaries


def eval_report(ws: Workspace, why: WhyIndex | None = None) -> dict[str, Any]:
    """The JSON object of ``ragtui eval --json`` (``why``: the causes, when already computed)."""
    ev = ws.evaluation
    assert ev is not None
    retrievers: dict[str, Any] = {}
    judged = judged_summaries(ws)
    why = why if why is not None else WhyIndex(ws)
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
                # The ids the metrics judged: chunks, or documents at document level.
                "ranked": [cid for cid, _ in ev.rankings[name].get(qid, ())],
                "judged": judged[name].per_question[qid],
                "causes": list(why.causes(qid, name)),
            }
        retrievers[name] = {
            **summary.as_dict(),
            "per_question": per_question,
            "judged": judged[name].mean,
            "thinly_judged": judged[name].thin,
        }
        # Which recall the row holds: the table's unit, "chunks" or "evidence" (every row alike).
        retrievers[name]["recall_definition"] = ev.unit
        counts = ws.live.counts.get(name)
        if counts is not None:
            # What a live retriever returned: ragtui's chunks by id or by text, its own passages.
            retrievers[name]["passages"] = counts.as_dict()
        status = ws.live.status.get(name)
        if status is not None:
            # Questions a live retriever could not answer (they count as empty runs), with reasons.
            retrievers[name]["failed"] = dict(status.failed)
    if (
        ws.data.level == "chunk"
        and "hybrid" in retrievers
        and "bm25" in ws.ranked.rankings
        and "vector" in ws.ranked.rankings
    ):
        # The best recall@k any fusion of the two top-depth lists could reach, beside hybrid's recall.
        retrievers["hybrid"]["pool_ceiling"] = pool_ceilings(ws).pool_ceiling
    if ws.ranked.rerank is not None and ws.ranked.rerank.name in retrievers:
        retrievers[ws.ranked.rerank.name]["rerank"] = rerank_json(ws)
    return {
        "k": ws.settings.k,
        "depth": ws.settings.depth,
        "questions": len(ev.evaluated),
        "skipped": ev.skipped,
        # Questions retired from the app: kept in questions.jsonl, left out of every mean.
        "retired": ws.questions.retired,
        "chunks": len(ws.data.chunks),
        # What the metrics rank and judge: "chunk", or "document" (each at its best chunk's rank).
        "level": ws.data.level,
        # The unit of every row's measures ("chunks" or "evidence") and what each figure is.
        "unit": ev.unit,
        # Hand grades that do not apply to the chunking in use (ragtui check lists them).
        "grades_not_applying": ws.grades.count_stale(),
        "definitions": definitions(ev.unit, ws.settings.k),
        # Which grades count: "human", or "human+model" (a model judge's where no person graded).
        "grades": ws.settings.counted_grades,
        "retrievers": retrievers,
        "slices": slices_json(ws),
        # Questions skipped because their evidence is in no chunk: the same causes for every retriever.
        "skipped_causes": {
            qid: sorted({c for r in ws.retrievers for c in why.causes(qid, r)}, key=CAUSES.index)
            for qid in ev.skipped
            if any(why.causes(qid, r) for r in ws.retrievers)
        },
    }


def passage_notes(ws: Workspace) -> list[str]:
    """The unit line of an evidence-level table (why every row is evidence-level and what that
    is), then per live retriever how many returned passages were ragtui's chunks (by id or by
    text) and how many its own."""
    ev = ws.evaluation
    assert ev is not None
    notes = []
    if ev.units is not None:
        own = [name for name in ws.retrievers if name in ev.own]
        why = (
            f"{', '.join(own)} return{'s' if len(own) == 1 else ''} passages of {'its' if len(own) == 1 else 'their'} own"
            if own
            else "--unit evidence"
        )
        notes.append(
            f"evidence level, every row ({why}): {definitions(ev.unit, ws.settings.k)['recall']}; "
            "nDCG's ideal and the precision ceiling are over what each retriever could return "
            "(docs/metrics.md#units)"
        )
    for name in ws.retrievers:
        counts = ws.live.counts.get(name)
        if counts is not None:
            notes.append(counts.describe(name))
    return notes


def rerank_json(ws: Workspace) -> dict[str, Any]:
    """What the reranking stage did: the model, the list it re-scored, and its time per question."""
    assert ws.ranked.rerank is not None and ws.ranked.reranker is not None
    return {
        "model": ws.ranked.reranker.model.name,
        "over": ws.ranked.reranker.over,
        "depth": ws.settings.depth,
        "latency": ws.ranked.rerank.latency.as_dict(),
    }


def rerank_line(ws: Workspace) -> str | None:
    """``hybrid+rerank: MODEL re-scored the top 10 of hybrid; median ... per question``, or None."""
    if ws.ranked.rerank is None or ws.ranked.reranker is None:
        return None
    return (
        f"{ws.ranked.rerank.name}: {ws.ranked.reranker.model.name} re-scored the top {ws.settings.depth} of "
        f"{ws.ranked.reranker.over}; latency {ws.ranked.rerank.latency.describe()}"
    )
