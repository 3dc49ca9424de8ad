"""Recall@k curves: mean recall at every cut-off k = 1..depth, for every retriever."""

from __future__ import annotations

from collections.abc import Iterable

from ragtui.core.metrics.measures import system_from_workspace
from ragtui.core.workspace import Workspace

__all__ = ["curve_depth", "recall_curves"]


def curve_depth(ws: Workspace) -> int:
    """How deep the curve goes: ``--depth``, or the number of chunks (and of passages a live
    retriever brought of its own) when there are fewer, since no ranking holds more."""
    return max(0, min(ws.settings.depth, len(ws.data.chunks) + len(ws.passages.foreign)))


def recall_curves(
    ws: Workspace, depth: int | None = None, questions: Iterable[str] | None = None
) -> dict[str, list[float]]:
    """retriever -> [recall@1, ..., recall@depth], means over the evaluated questions (or those among ``questions``)."""
    ev = ws.evaluation
    assert ev is not None
    depth = curve_depth(ws) if depth is None else depth
    wanted = None if questions is None else set(questions)
    chosen = [q for q in ev.question_ids if q in ev.evaluated and (wanted is None or q in wanted)]
    return {
        name: system_from_workspace(ws, name).recall_curve(depth, chosen) for name in ws.retrievers
    }
