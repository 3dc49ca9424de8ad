"""The result side of the main screen: the question bar, the compact layout's tabs, and one framed
result list per retriever with its note.

The screen tells it what to show (the workspace, the question, each retriever's readiness, the
layout). It keeps which list is active: the one the compact layout shows and the chunk view follows.
A list focused with the mouse or a tab clicked makes that list the active one; when the active
list or the chunk it highlights changes that way, it says so (``Highlighted``) for the chunk view
to follow. A chunk chosen (``RowList.Chosen``) bubbles up as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.events import DescendantFocus
from textual.geometry import Size
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from ragtui.core.report_model import fmt
from ragtui.core.text import visible_line
from ragtui.core.workspace import Workspace
from ragtui.core.workspace.judging import PoolEntry
from ragtui.tui.ids import widget_id
from ragtui.tui.widgets.chunk_view import ChunkView
from ragtui.tui.widgets.paragraphs import rules
from ragtui.tui.widgets.result_list import ResultList, ResultPane, ResultView
from ragtui.tui.widgets.row_list import RowList
from ragtui.tui.widgets.tab_strip import TabLabel, TabStrip
from ragtui.tui.widgets.text import (
    MISS_MARK,
    PENDING_MARK,
    UNAVAILABLE_MARK,
    set_frame_text,
)


def is_ready(ws: Workspace | None, name: str) -> bool:
    """Whether a retriever's rankings are in the evaluation."""
    return ws is not None and ws.evaluation is not None and name in ws.evaluation.per_question


def _has_relevant(ws: Workspace, qid: str) -> bool:
    """Whether the question has a relevant chunk (its grades as the metrics read them)."""
    evaluation = ws.evaluation
    assert evaluation is not None
    return any(
        values[qid].num_relevant for values in evaluation.per_question.values() if qid in values
    )


class QuestionBar(Static):
    """A question's id, text and slices above what is shown of it (the result lists, the
    judging view's pair), as tall as the tallest question shown so far at its width: a question
    that wraps to fewer rows than the one before lays nothing out again (a layout of the screen
    cost about 12 ms at 120x40, on 4 Downs in 10 and 6 judging digits in 30 when the bar followed
    each question's height), and what is below stays where it is while the cursor moves."""

    def __init__(self, *, id: str) -> None:
        super().__init__("", id=id, markup=False)
        #: The width the rows were counted at, and the most rows a text needed at it.
        self._tallest = (0, 0)

    def show(self, line: Text) -> None:
        """Show ``line`` (nothing to repaint when it is the one shown)."""
        old = self.content
        if isinstance(old, Text) and old == line:
            return
        width = self.content_region.width
        if width <= 0:  # not laid out yet
            self.update(line)
            return
        rows = Content.from_rich_text(line, self.app.console).get_height(rules(self), width)
        tallest = self._tallest[1] if self._tallest[0] == width else 0
        grow = rows > tallest
        if grow:
            self._tallest = (width, rows)
            self.styles.height = rows + self.styles.gutter.height
        self.update(line, layout=grow)

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        """A layout pass gave the bar its new height (another question's text wraps to another
        number of rows); Textual would then ask for a second pass to set its virtual size, a
        second frame for the key. The bar does not scroll: nothing to lay out again."""
        return super()._size_updated(size, virtual_size, container_size, layout=False)


class ResultsPane(Vertical):
    """The question bar, the tab strip (compact layout only) and every retriever's result pane."""

    @dataclass
    class Highlighted(Message):
        """Another list became the active one (focused with the mouse, or its tab clicked), or the
        active list's cursor moved with the mouse: the chunk view follows."""

        pane: ResultsPane

        @property
        def control(self) -> ResultsPane:
            """The pane whose active list it is."""
            return self.pane

    def __init__(self, retrievers: Sequence[str], *, id: str | None = None) -> None:
        """The panes of ``retrievers``, the first one active."""
        super().__init__(id=id)
        self.retrievers = list(retrievers)
        #: The retriever whose list the compact layout shows and the chunk view follows.
        self.active = self.retrievers[0] if self.retrievers else ""
        #: Whether the screen is in its compact layout (one list at a time, with tabs).
        self.compact = False

    def compose(self) -> ComposeResult:
        """The question bar, the tabs, then one pane per retriever."""
        yield QuestionBar(id="question-bar")
        with TabStrip(id="tab-strip"):
            for name in self.retrievers:
                yield TabLabel(name)
        for name in self.retrievers:
            yield ResultPane(name)

    # ---- parts ------------------------------------------------------------------------------------

    def result_list(self, name: str) -> ResultList:
        """The result list of one retriever."""
        return self.query_one("#" + widget_id("results", name), ResultList)

    def pane(self, name: str) -> ResultPane:
        """The pane of one retriever."""
        return self.query_one("#" + widget_id("pane", name), ResultPane)

    def tab(self, name: str) -> TabLabel:
        """The compact layout's tab of one retriever."""
        return self.query_one("#" + widget_id("tab", name), TabLabel)

    @property
    def highlighted_chunk(self) -> str | None:
        """The chunk under the cursor of the active list (None: no list, or an empty one)."""
        if not self.retrievers:
            return None
        return self.result_list(self.active).highlighted_chunk

    def list_for(self, entry: PoolEntry, focused: Widget | None) -> str | None:
        """The list to highlight a pooled pair in: the focused one when it ranked the chunk, else
        the one that ranked it best (the first of them on a tie)."""
        if isinstance(focused, ResultList) and focused.retriever in entry.retrievers:
            return focused.retriever
        names = self.retrievers
        ranked = [(rank, names.index(n), n) for n, rank in entry.ranks if n in names]
        return min(ranked)[2] if ranked else None

    # ---- the active list and the layout -------------------------------------------------------------

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        """A result list got the focus (tab or a click): it becomes the active one."""
        widget = event.widget
        if isinstance(widget, ResultList) and widget.retriever != self.active:
            self.set_active(widget.retriever)
            self.post_message(self.Highlighted(self))

    @on(TabLabel.Selected)
    def _tab_selected(self, event: TabLabel.Selected) -> None:
        """A tab was clicked: show and focus its list."""
        event.stop()
        self.set_active(event.retriever)
        # At once (``Widget.focus`` is deferred): a key typed right after goes to this list.
        self.screen.set_focus(self.result_list(event.retriever))
        self.post_message(self.Highlighted(self))

    @on(RowList.CursorMoved, "ResultList")
    def _cursor_moved(self, event: RowList.CursorMoved) -> None:
        """The cursor moved in a result list (the mouse, or a key the list took itself): the chunk
        view follows the active list."""
        row_list = event.row_list
        if isinstance(row_list, ResultList) and row_list.retriever == self.active:
            self.post_message(self.Highlighted(self))

    def set_active(self, name: str) -> None:
        """Make one retriever's list the one shown (compact layout) and followed by the chunk view."""
        self.active = name
        for other in self.retrievers:
            self.pane(other).set_class(other == name, "-active")
            self.tab(other).show(active=other == name, shown=self.compact)
        if self.compact:
            self.scroll_tab_into_view()

    def set_compact(self, compact: bool) -> None:
        """The screen switched between its compact and its wide layout."""
        self.compact = compact
        if compact:
            for name in self.retrievers:  # the tabs' text, kept while they were hidden
                self.tab(name).show()
            self.scroll_tab_into_view()

    def scroll_tab_into_view(self) -> None:
        """Keep the active tab in view in the tab strip."""
        if self.active:
            self.query_one(TabStrip).show_tab(self.active)

    # ---- the question and its lists -----------------------------------------------------------------

    def show_question(self, ws: Workspace, qid: str, status: Mapping[str, str]) -> None:
        """Show a question: its bar, every retriever's list (the cursor on the first chunk), the
        titles and tabs."""
        self.show_bar(ws, qid)
        self.show_lists(ws, qid)
        self.update_titles(ws, qid, status)

    def prepare(self, ws: Workspace, qid: str, chunk_view: ChunkView) -> None:
        """Lay out ahead what showing a question would (the question the next key is likely to
        show): the rows each list shows first, and in ``chunk_view`` the active list's first
        chunk. Showing it then costs little."""
        for name in self.retrievers:
            if is_ready(ws, name) and (ranking := ws.ranking(name, qid)):
                self.result_list(name).prepare(ResultView(ws, qid, ranking))
                if name == self.active:
                    chunk_view.prepare(ws, qid, ranking[0][0])

    def forget_prepared(self) -> None:
        """Something changed: what was laid out ahead may show it wrong."""
        for name in self.retrievers:
            self.result_list(name).forget_prepared()

    def refresh_question(
        self, ws: Workspace, qid: str, status: Mapping[str, str], chunk: str | None = None
    ) -> None:
        """The question's numbers changed (one chunk's grade, when ``chunk`` is given): the lists
        that show it, the titles and tabs, the bar."""
        self.refresh_lists(ws, qid, chunk)
        self.update_titles(ws, qid, status)
        self.show_bar(ws, qid)

    def clear(self, ws: Workspace | None) -> None:
        """No question shown: the bar says why (once loaded) and every list is empty."""
        bar = self.query_one("#question-bar", Static)
        bar.update("no question matches the filter" if ws is not None else "")
        for name in self.retrievers:
            self.result_list(name).show(None)

    def show_bar(self, ws: Workspace, qid: str) -> None:
        """The question's id, full text and slices, and whether it is skipped."""
        bar = self.query_one(QuestionBar)
        question = ws.questions.by_id[qid]
        line = Text()
        line.append(visible_line(qid), "bold")
        line.append("  " + visible_line(" ".join(question.text.split())))
        if question.slices:
            line.append("  [" + visible_line(", ".join(question.slices)) + "]", "dim")
        if question.retired:
            line.append("  retired: left out of every mean (x brings it back)", "italic")
        elif ws.evaluation is not None and qid not in ws.evaluation.evaluated:
            line.append("  no judgement: skipped in every mean", "italic")
        elif ws.evaluation is not None and not _has_relevant(ws, qid):
            line.append("  nothing relevant among its judgements: 0 in every mean", "italic")
        bar.show(line)

    def show_list(
        self, ws: Workspace | None, qid: str | None, name: str, keep_cursor: bool = False
    ) -> None:
        """Fill one result list with the question's ranking (empty while not ready); with
        ``keep_cursor``, a list already showing the question keeps its cursor."""
        results = self.result_list(name)
        if ws is None or qid is None or not is_ready(ws, name):
            results.show(None)
            return
        view = ResultView(ws, qid, ws.ranking(name, qid))
        if keep_cursor and results.qid == qid:
            results.update_view(view)
        else:
            results.show(view)

    def show_lists(self, ws: Workspace | None, qid: str | None, keep_cursor: bool = False) -> None:
        """Every retriever's list of the question."""
        for name in self.retrievers:
            self.show_list(ws, qid, name, keep_cursor)

    def refresh_lists(self, ws: Workspace, qid: str, chunk: str | None = None) -> None:
        """The question's grades changed (one chunk's, when ``chunk`` is given): redraw the lists
        that show it (one row each for one chunk: the others' cells did not change)."""
        for name in self.retrievers:
            results = self.result_list(name)
            if results.qid != qid or not is_ready(ws, name):
                continue
            if chunk is not None:
                results.refresh_chunk(chunk)
            else:
                results.update_view(ResultView(ws, qid, ws.ranking(name, qid)))

    # ---- titles, tabs and notes ----------------------------------------------------------------------

    @staticmethod
    def first_rank_text(
        ws: Workspace | None, qid: str | None, status: Mapping[str, str], name: str
    ) -> str:
        """The first relevant rank of a retriever for the question, as shown in titles."""
        if status.get(name) == "failed":
            return UNAVAILABLE_MARK
        if ws is None or ws.evaluation is None or not is_ready(ws, name) or qid is None:
            return PENDING_MARK
        if qid not in ws.evaluation.evaluated:
            return "–"
        rank = ws.evaluation.per_question[name][qid].first_relevant_rank
        return MISS_MARK if rank is None else f"#{rank}"

    def update_titles(
        self, ws: Workspace | None, qid: str | None, status: Mapping[str, str]
    ) -> None:
        """Pane titles and compact tabs: first relevant rank and nDCG@k of the question."""
        moved = False
        evaluation = ws.evaluation if ws is not None else None
        for name in self.retrievers:
            rank = self.first_rank_text(ws, qid, status, name)
            title = f"{name} · first relevant {rank}"
            if (
                evaluation is not None
                and qid is not None
                and is_ready(ws, name)
                and qid in evaluation.evaluated
            ):
                value = evaluation.per_question[name][qid].ndcg
                title += f" · nDCG@{evaluation.k} {fmt(value)}"
            set_frame_text(self.pane(name), title)
            # The tabs show only in the compact layout: elsewhere their text waits.
            moved |= self.tab(name).show(rank, shown=self.compact)
        if moved and self.compact:
            self.scroll_tab_into_view()  # the tabs changed width: keep the active one in view

    def update_notes(
        self, ws: Workspace | None, status: Mapping[str, str], errors: Mapping[str, str]
    ) -> None:
        """The note of each pane: loading, embedding progress, or why it is unavailable."""
        for name in self.retrievers:
            state = status.get(name, "ready")
            if state == "failed":
                self.pane(name).set_note(f"{name} unavailable: {errors.get(name, '')}")
            elif not is_ready(ws, name):
                doing = (
                    "asking it"
                    if ws is not None and name in ws.live.retrievers
                    else "embedding chunks"
                )
                self.pane(name).set_note(f"{name}: {doing}… the list fills in when ready")
            else:
                self.pane(name).set_note(_own_note(ws, name))

    def set_notes(self, note: str) -> None:
        """The same note in every pane (``loading…``)."""
        for pane in self.query(ResultPane):
            pane.set_note(note)


def _own_note(ws: Workspace | None, name: str) -> str | None:
    """A live retriever's note when it returned passages of its own: they count for it alone."""
    counts = ws.live.counts.get(name) if ws is not None else None
    if ws is None or ws.evaluation is None or counts is None or not counts.own:
        return None
    recall = "every row's recall counts the evidence found (evidence level)"
    plural = "s" if counts.own != 1 else ""
    return f"{name}: {counts.own} passage{plural} of its own, judged for {name} alone; {recall}"
