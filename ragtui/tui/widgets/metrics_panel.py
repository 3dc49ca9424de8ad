"""The metric panel: recall, precision with its ceiling, MRR and nDCG per retriever, for the whole set,
the filtered questions and the current question."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual.geometry import Region, Size
from textual.selection import Selection
from textual.strip import Strip
from textual.widget import Widget

from ragtui.core.metrics.evaluation import Summary
from ragtui.core.metrics.formulas import QuestionMetrics
from ragtui.core.report_model import fmt
from ragtui.core.text import visible_line
from ragtui.core.workspace import Workspace
from ragtui.tui.widgets.paragraphs import Paragraphs
from ragtui.tui.widgets.text import set_frame_text

if TYPE_CHECKING:  # the estimates are imported when ``--estimate`` asks for them
    from ragtui.core.judges.estimates import Estimates

#: Width of the retriever name column and of the scope column ("all", "filter", a question id).
NAME_WIDTH = 7
SCOPE_WIDTH = 6
#: Width of a value column (a space and "0.389").
VALUE_WIDTH = 6


def _values(summary: Summary | QuestionMetrics) -> list[str]:
    """recall, precision, ceiling, MRR (or RR) and nDCG, formatted."""
    rr = summary.mrr if isinstance(summary, Summary) else summary.rr
    return [
        fmt(v)
        for v in (summary.recall, summary.precision, summary.precision_ceiling, rr, summary.ndcg)
    ]


def metrics_text(
    ws: Workspace,
    qid: str | None,
    filtered: Sequence[str] | None,
    status: Mapping[str, str],
    retrievers: Sequence[str],
    notes: Sequence[str] = (),
    legend: bool = False,
    estimate: Estimates | None = None,
) -> Text:
    """The panel's lines: a header, then per retriever the whole set, the filter (if any) and the
    question; with ``estimate`` (``--estimate``) a line under the whole set: nDCG@k's range over
    unjudged pairs and its prediction-powered estimate."""
    evaluation = ws.evaluation
    assert evaluation is not None
    k = evaluation.k
    widths = [VALUE_WIDTH] * 4 + [max(VALUE_WIDTH, len(f"nDCG@{k}") + 1)]
    out = Text()
    recall = "eR" if evaluation.units is not None else "R"  # evidence recall: every row's
    heads = [f"{recall}@{k}", f"P@{k}", "ceil", "MRR", f"nDCG@{k}"]
    out.append(
        " " * (NAME_WIDTH + SCOPE_WIDTH)
        + "".join(h.rjust(w) for h, w in zip(heads, widths, strict=True)),
        "bold",
    )
    scope_id = (qid or "")[:SCOPE_WIDTH]
    for name in retrievers:
        state = status.get(name, "ready")
        if name not in evaluation.per_question:
            note = "unavailable" if state == "failed" else "embedding…"
            sep = " " if len(name) >= NAME_WIDTH else ""
            out.append("\n" + name.ljust(NAME_WIDTH) + sep + note, "dim")
            continue
        rows: list[tuple[str, list[str] | str]] = [("all", _values(evaluation.summary(name)))]
        if estimate is not None and name in estimate.retrievers:
            rows.append(("est", " " + estimate_line(estimate, name)))
        if filtered is not None:
            part = evaluation.summary(name, filtered)
            rows.append(("filter", _values(part) if part.questions else " no evaluated question"))
        if qid is not None and qid in evaluation.per_question[name]:
            # A skipped question (no relevant chunk) still shows its values: all 0.
            rows.append((scope_id, _values(evaluation.per_question[name][qid])))
        elif qid is not None:
            rows.append((scope_id, "retired: left out of every mean"))
        if len(name) >= NAME_WIDTH:  # a long name ("hybrid+rerank") takes a line of its own
            out.append("\n" + name, "bold")
        for i, (scope, values) in enumerate(rows):
            label = name if i == 0 and len(name) < NAME_WIDTH else ""
            out.append("\n" + label.ljust(NAME_WIDTH), "bold")
            out.append(scope.ljust(SCOPE_WIDTH))
            if isinstance(values, str):
                out.append(values, "dim")
            else:
                out.append("".join(v.rjust(w) for v, w in zip(values, widths, strict=True)))
    out.append_text(judged_text(ws, retrievers))
    if estimate is not None:
        out.append("\n" + visible_line(estimate_note(estimate)), "dim")
    for note in notes:
        out.append("\n" + note, "italic")
    if legend:
        out.append(
            f"\n\n{'eR evidence recall (evidence level, every row)' if evaluation.units is not None else 'R recall'}"
            f", P precision at k={k}; ceil: the best P@{k} reachable, "
            f"min({k}, relevant)/{k}; MRR over the whole run (depth {ws.settings.depth}). "
            "Press ? for what each metric means.",
            "dim",
        )
    return out


def estimate_line(estimate: Estimates, name: str) -> str:
    """``0.290–0.702 · PPI 0.306±0.036``: nDCG@k's range over unjudged pairs and its estimate."""
    m = estimate.retrievers[name].metrics["ndcg"]
    low, high = m.unjudged if m.unjudged is not None else (m.value, m.value)
    ppi = f"PPI {fmt(m.ppi.estimate)}±{fmt(m.ppi.half_width)}" if m.ppi is not None else "PPI —"
    widens = " wider than people alone" if m.narrows is False else ""
    return f"{fmt(low)}–{fmt(high)} · {ppi}{widens}" + (
        " ‡" if estimate.retrievers[name].shares_model else ""
    )


def estimate_note(estimate: Estimates) -> str:
    """What the ``est`` lines say, and why there is no estimate when there is none."""
    k = estimate.k
    line = f"est: nDCG@{k} over unjudged pairs · prediction-powered estimate, 95 %"
    m = next((r.metrics["ndcg"] for r in estimate.retrievers.values()), None)
    if m is not None and m.ppi is not None:
        line += f" (n={m.ppi.n} of {m.ppi.population})"
    elif m is not None and m.reason:
        line += f"; none: {m.reason}"
    if estimate.shares:
        line += "; ‡ shares the judge's model"
    reversed_pairs = [(a, b) for metric, a, b in estimate.reversals() if metric == "ndcg"]
    if reversed_pairs:
        pairs = ", ".join(f"{a}/{b}" for a, b in reversed_pairs)
        line += f"; the judge's model-filled nDCG@{k} reverses {pairs}"
    return line


def judged_text(ws: Workspace, retrievers: Sequence[str]) -> Text:
    """``Judged@3 bm25 0.83 · vector 0.41 thin · ...``: the share of each top k that carries a grade; thin is flagged."""
    from ragtui.core.workspace.judging import judged_summaries

    if ws.evaluation is None:
        return Text()
    summaries = judged_summaries(ws)
    out = Text("\n")
    out.append(f"Judged@{ws.evaluation.k}", "bold")
    shown = [n for n in retrievers if n in summaries]
    for i, name in enumerate(shown):
        summary = summaries[name]
        out.append(f"{' · ' if i else ' '}{name} {fmt(summary.mean)}")
        if summary.thin:
            out.append(" thin!", "bold reverse")
    return out


def metrics_title(ws: Workspace) -> str:
    """The panel title: k and how many questions are evaluated and skipped (the filter's size is in
    the question list's title)."""
    evaluation = ws.evaluation
    assert evaluation is not None
    title = f"metrics k={evaluation.k} · {len(evaluation.evaluated)} questions"
    if evaluation.skipped:
        title += f", {len(evaluation.skipped)} skipped"
    return title


class MetricsPanel(Widget):
    """The metric table of every retriever; its text is the source of truth tests read.

    Drawn through the Line API a row at a time (``Paragraphs``): a new text repaints only the rows
    that changed (another question: its rows, not the whole set's), each rendered as a Static
    renders it."""

    DEFAULT_CSS = """
    MetricsPanel {
        height: auto;
    }
    """

    def __init__(self, content: str = "", *, id: str | None = None) -> None:
        """A panel showing ``content`` until the first ``show``."""
        super().__init__(id=id)
        self._text = Text(content)
        self._paragraphs: Paragraphs | None = None

    #: ``--estimate``'s figures and what they were computed from (they are computed again only
    #: when a grade, the rankings or the recorded sample changed).
    _estimate: tuple[tuple[object, ...], Estimates] | None = None

    def _estimates(self, ws: Workspace) -> Estimates | None:
        """The estimates when the app was started with ``--estimate`` (else None)."""
        ev = ws.evaluation
        if not ws.settings.estimate or ev is None:
            return None
        from ragtui.core.judges.estimates import estimates
        from ragtui.core.judges.sample import SAMPLE_FILE

        try:
            sample = (Path(ws.grades.labels.path).parent / SAMPLE_FILE).stat().st_mtime_ns
        except OSError:
            sample = None
        key = (
            id(ev),
            ev.k,
            len(ev.question_ids),
            len(ws.grades.labels.history),
            tuple((name, id(ranked)) for name, ranked in ev.rankings.items()),
            sample,
        )
        if self._estimate is None or self._estimate[0] != key:
            self._estimate = (key, estimates(ws))
        return self._estimate[1]

    def show(
        self,
        ws: Workspace,
        qid: str | None,
        filtered: Sequence[str] | None,
        status: Mapping[str, str],
        retrievers: Sequence[str],
        notes: Sequence[str] = (),
        legend: bool = False,
    ) -> None:
        """Redraw the panel from the workspace's evaluation (``legend`` adds what the columns mean)."""
        title = metrics_title(ws)
        if filtered is not None and ws.evaluation is not None:
            evaluated = sum(1 for q in filtered if q in ws.evaluation.evaluated)
            title += f" · filter {evaluated}"
        set_frame_text(self, title)
        estimate = self._estimates(ws)
        text = metrics_text(ws, qid, filtered, status, retrievers, notes, legend, estimate)
        self.update(text)

    @property
    def content(self) -> Text:
        """The panel's text."""
        return self._text

    @property
    def plain(self) -> str:
        """The panel's text without styles."""
        return self._text.plain

    def update(self, text: Text) -> None:
        """Show ``text``: repaint the rows that changed (a new layout, about 40 ms on a full
        screen, only when the panel's height follows its text and that changed)."""
        before = self._paragraphs
        self._text = text
        width = self.size.width
        if before is None or not self.is_mounted or width <= 0:
            self._paragraphs = None
            self.refresh(layout=True)
            return
        fresh = self._paragraphs = Paragraphs(text, self, before)
        if fresh.lines(self, width) != before.lines(self, width) and self._auto_height:
            self.refresh(layout=True)
            return
        for first, count in fresh.changed(self, width, before):
            self.refresh(Region(0, first, width, count))

    @property
    def _auto_height(self) -> bool:
        height = self.styles.height
        return height is None or height.is_auto

    def _lines(self) -> Paragraphs:
        if self._paragraphs is None:
            self._paragraphs = Paragraphs(self._text, self)
        return self._paragraphs

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """The lines the text wraps to."""
        return self._lines().lines(self, width)

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The text under a mouse selection."""
        return selection.extract(self.plain), "\n"

    def render_line(self, y: int) -> Strip:
        """Row ``y`` of the panel (blank below the text, as a Static's)."""
        width = self.size.width
        style = self.visual_style
        line = self._lines().line(self, width, style, y) if width > 0 else None
        return line if line is not None else Strip.blank(width, style.rich_style)
