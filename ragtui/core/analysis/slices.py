"""Per-slice reports: every mean of every retriever over the questions of each slice, with the counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragtui.core.metrics.evaluation import Summary
from ragtui.core.workspace import Workspace

__all__ = ["SliceReport", "slice_names", "slice_reports", "slices_json"]

#: The name of the pseudo-slice holding every question.
ALL = "all"


@dataclass(frozen=True)
class SliceReport:
    """One slice: its evaluated questions, its skipped ones (no judgement) and each retriever's means."""

    name: str
    questions: list[str]
    skipped: list[str]
    summaries: dict[str, Summary]


def slice_names(ws: Workspace) -> list[str]:
    """Every slice named in the golden set, sorted."""
    return sorted({s for q in ws.questions for s in q.slices})


def slice_reports(ws: Workspace, include_all: bool = False) -> list[SliceReport]:
    """One report per slice (sorted by name), optionally preceded by the whole set as slice ``all``."""
    ev = ws.evaluation
    assert ev is not None
    groups: list[tuple[str, list[str]]] = []
    if include_all:
        groups.append((ALL, [q.id for q in ws.questions]))
    for name in slice_names(ws):
        groups.append((name, [q.id for q in ws.questions if name in q.slices]))
    reports = []
    for name, ids in groups:
        evaluated = [q for q in ids if q in ev.evaluated]
        skipped = [q for q in ids if q not in ev.evaluated]
        summaries = {r: ev.summary(r, evaluated) for r in ws.retrievers}
        reports.append(SliceReport(name, evaluated, skipped, summaries))
    return reports


def slices_json(ws: Workspace) -> dict[str, dict[str, dict[str, Any]]]:
    """``{slice: {retriever: {recall, precision, precision_ceiling, mrr, ndcg, questions}}}`` for ``eval --json``."""
    return {
        report.name: {
            name: {**summary.as_dict(), "questions": summary.questions}
            for name, summary in report.summaries.items()
        }
        for report in slice_reports(ws)
    }
