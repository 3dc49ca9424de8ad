"""Texts the app and its screens share: a duration for people, how a grade moved nDCG, what is
loaded."""

from __future__ import annotations

from collections.abc import Mapping

from ragtui.core.report_model import fmt
from ragtui.core.text import visible_line
from ragtui.core.workspace import Workspace


def format_seconds(seconds: float) -> str:
    """A duration for people: ``42 s``, ``3 min 05 s``."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    return f"{whole // 60} min {whole % 60:02d} s"


def ndcg_moves(moves: Mapping[str, tuple[float, float]], k: int) -> str:
    """How nDCG@k moved per retriever, e.g. ``nDCG@3 bm25 1.000→0.000`` (unchanged ones left out)."""
    moved = [(name, old, new) for name, (old, new) in moves.items() if old != new]
    if not moved:
        return f"nDCG@{k} unchanged"
    return f"nDCG@{k} " + " ".join(f"{name} {fmt(old)}→{fmt(new)}" for name, old, new in moved)


def workspace_summary(ws: Workspace) -> str:
    """The main screen's subtitle: the data, its sizes, k and depth, which grades count (human, or
    human+model), what each live retriever
    returned, and ``labels read-only`` when labels cannot be saved."""
    settings = ws.settings
    source = settings.beir or settings.corpus
    parts = [
        visible_line(source.name) if source is not None else "corpus",
        # Early, so that an 80-column terminal does not cut it: which grades the numbers rest on.
        f"grades {settings.counted_grades}",
        f"{len(ws.questions)} questions",
        f"{len(ws.data.chunks)} chunks",
        f"k={settings.k}",
        f"depth {settings.depth}",
    ]
    for name, counts in ws.live.counts.items():
        # What a live retriever returned: passages mapped onto ragtui's chunks, passages of its own.
        if counts.mapped or counts.own:
            parts.append(f"{visible_line(name)} {counts.mapped} mapped, {counts.own} own")
    if ws.grades.labels.read_only:
        parts.append("labels read-only")
    return " · ".join(parts)
