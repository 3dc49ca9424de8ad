"""Hybrid attribution of one question: where each fused chunk came from, and the pool ceiling."""

from __future__ import annotations

from rich.text import Text

from ragtui.core.analysis.attribution import HybridExplanation, explain_hybrid, pool_ceilings
from ragtui.core.errors import InputError
from ragtui.core.workspace import Workspace
from ragtui.tui.screens.report import ReportScreen
from ragtui.tui.widgets.text import fmt, one_line


def _rank(rank: int | None) -> str:
    """A 1-based rank, or – when the list did not have the chunk."""
    return "–" if rank is None else str(rank)


def explanation_text(
    ws: Workspace, explanation: HybridExplanation, mean_ceiling: tuple[float, float] | None
) -> Text:
    """The attribution table, the chunks only one list found, and the pool ceiling beside hybrid recall."""
    e = explanation
    out = Text()
    out.append(
        f"RRF: score = 1/({e.rrf_k} + bm25 rank) + 1/({e.rrf_k} + vector rank), top {e.depth} of each\n\n",
        "dim",
    )
    chunk_width = max([len(r.chunk) for r in e.results] + [5])
    out.append(
        f"{'#':>3}  {'chunk':<{chunk_width}}  {'bm25':>4}  {'vec':>4}  {'bm25 term':>9}  {'vec term':>9}  {'score':>7}  tie  grade\n",
        "bold",
    )
    for r in e.results:
        style = "bold" if r.relevant else ""
        line = Text(style=style)
        line.append(f"{r.rank:>3}  ")
        line.append(r.chunk.ljust(chunk_width))
        line.append(
            f"  {_rank(r.bm25_rank):>4}  {_rank(r.vector_rank):>4}  {r.bm25_term:>9.5f}  {r.vector_term:>9.5f}"
            f"  {r.score:>7.5f}  {'=' if r.tied else ' ':^3}  {'' if r.grade is None else r.grade}"
        )
        if r.relevant:
            line.append("  relevant")
        out.append_text(line)
        out.append("\n")
    for title, sole in (("only bm25 found", e.only_bm25), ("only vector found", e.only_vector)):
        out.append(f"\n{title} ({len(sole)}):\n", "bold")
        if not sole:
            out.append("  none\n", "dim")
        for s in sole:
            where = (
                f"hybrid #{s.hybrid_rank}" if s.hybrid_rank is not None else "fused out of the top"
            )
            mark = " relevant" if s.relevant else ""
            out.append(f"  {s.chunk} (#{s.rank} in {s.retriever}, {where}){mark}\n")
    if e.missed:
        out.append(f"\nrelevant chunks neither list found: {', '.join(e.missed)}\n", "italic")
    out.append(
        f"\npool ceiling R@{e.k} {fmt(e.pool_ceiling)} · hybrid R@{e.k} {fmt(e.hybrid_recall)}"
        f" · {e.relevant_in_pool}/{e.relevant} relevant chunks in the pool\n",
        "bold",
    )
    if mean_ceiling is not None:
        out.append(
            f"over every evaluated question: pool ceiling {fmt(mean_ceiling[0])} · hybrid {fmt(mean_ceiling[1])}\n",
            "dim",
        )
    return out


class ExplainScreen(ReportScreen):
    """Why hybrid ranked the current question's chunks where it did."""

    def __init__(self, ws: Workspace, qid: str) -> None:
        """The attribution of question ``qid``."""
        super().__init__(id="explain")
        self.ws = ws
        self.qid = qid
        question = ws.question_by_id[qid]
        self.report_title = f"hybrid attribution · {qid}: {one_line(question.text, 70)}"

    def on_mount(self) -> None:
        """Compute the attribution (cheap: two lists of depth entries) and show it."""
        try:
            explanation = explain_hybrid(self.ws, self.qid)
            ceiling = pool_ceilings(self.ws)
        except InputError as exc:
            self.set_body(Text(exc.message))
            return
        self.set_body(
            explanation_text(self.ws, explanation, (ceiling.pool_ceiling, ceiling.hybrid_recall))
        )
