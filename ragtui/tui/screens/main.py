"""The main screen: question list, the three ranked lists, the chunk view and the metric panel."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.events import Click, DescendantFocus, Resize
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import DataTable, Footer, Header, Input, Label, ProgressBar, Static

from ragtui.core.labelling.journal import ReadOnlyError
from ragtui.core.metrics.formulas import QuestionMetrics
from ragtui.core.workspace import GradeChange, Workspace
from ragtui.tui.screens.chunk import ChunkScreen
from ragtui.tui.screens.labelling import LABELLING_BINDINGS, LabellingMixin
from ragtui.tui.widgets.chunk_view import ChunkView
from ragtui.tui.widgets.metrics_panel import MetricsPanel
from ragtui.tui.widgets.question_list import QuestionList
from ragtui.tui.widgets.result_list import ResultList, ResultPane
from ragtui.tui.widgets.text import MISS_MARK, PENDING_MARK, UNAVAILABLE_MARK, fmt

if TYPE_CHECKING:
    from ragtui.tui.app import RagtuiApp

#: Below this width or height the screen uses its compact layout (one result list at a time).
COMPACT_WIDTH = 110
COMPACT_HEIGHT = 30
#: Below this size even the compact layout does not fit: a line says so (the app keeps working).
MIN_WIDTH = 80
MIN_HEIGHT = 24
#: How long the line saying how a grade moved nDCG stays in the metric panel, in seconds.
CHANGE_NOTE_SECONDS = 8.0
#: Seconds of no typing before the filter is applied.
FILTER_DELAY = 0.2
#: Widest chunk id column in the result lists (longer ids end in an ellipsis).
MAX_CHUNK_WIDTH = 24
#: Widest question id column in the question list.
MAX_ID_WIDTH = 10
#: The + and - keys share one footer entry.
K_GROUP = Binding.Group("k", compact=True)


def format_seconds(seconds: float) -> str:
    """A duration for people: ``42 s``, ``3 min 05 s``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    return f"{seconds // 60} min {seconds % 60:02d} s"


def parse_filter(text: str) -> tuple[list[str], list[str]]:
    """Split a filter into slice names (``slice:NAME``) and words, both lower-cased."""
    slices: list[str] = []
    words: list[str] = []
    for token in text.lower().split():
        if token.startswith("slice:"):
            if token[6:]:
                slices.append(token[6:])
        else:
            words.append(token)
    return slices, words


def filter_questions(ws: Workspace, text: str) -> list[str]:
    """The ids of the questions matching a filter: every slice named and every word (in id or text)."""
    slices, words = parse_filter(text)
    out = []
    for q in ws.questions:
        have = {s.lower() for s in q.slices}
        if any(s not in have for s in slices):
            continue
        haystack = f"{q.id} {q.text}".lower()
        if any(w not in haystack for w in words):
            continue
        out.append(q.id)
    return out


def worst_first(ws: Workspace, qids: list[str]) -> list[str]:
    """Questions sorted worst-first: lowest nDCG@k of the best-informed retriever (hybrid, else vector,
    else bm25), then a missing first relevant rank, then the latest rank; skipped questions last."""
    evaluation = ws.evaluation
    assert evaluation is not None
    name = next((n for n in ("hybrid", "vector", "bm25") if n in evaluation.per_question), None)
    position = {q.id: i for i, q in enumerate(ws.questions)}
    if name is None:
        return list(qids)
    values = evaluation.per_question[name]

    def key(qid: str) -> tuple[int, float, int, int, int]:
        """Skipped last; then nDCG, a miss before a hit, the later first hit first, golden order."""
        if qid not in evaluation.evaluated:
            return (1, 0.0, 0, 0, position[qid])
        m = values[qid]
        rank = m.first_relevant_rank
        return (0, m.ndcg, 0 if rank is None else 1, -(rank or 0), position[qid])

    return sorted(qids, key=key)


class TabLabel(Static):
    """One retriever's tab in the compact layout; clicking it focuses that list."""

    def __init__(self, retriever: str) -> None:
        """The tab of ``retriever``."""
        super().__init__(retriever, id=f"tab-{retriever}", classes="tab-label", markup=False)
        #: The retriever this tab stands for.
        self.retriever = retriever

    def on_click(self, event: Click) -> None:
        """Focus this retriever's list."""
        event.stop()
        screen = self.screen
        if isinstance(screen, MainScreen):
            screen.focus_retriever(self.retriever)


class MainScreen(LabellingMixin, Screen[None]):
    """Everything at once: pick a question, compare the rankings, read the chunk, grade it, watch the numbers."""

    AUTO_FOCUS = "#question-list"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "tab",
            "cycle_focus(1)",
            "Next list",
            show=False,
            tooltip="Focus the next list.",
            id="focus.next",
        ),
        Binding(
            "shift+tab",
            "cycle_focus(-1)",
            "Previous list",
            show=False,
            tooltip="Focus the previous list.",
            id="focus.previous",
        ),
        Binding(
            "slash",
            "filter",
            "Filter",
            tooltip="Filter the questions: words, or slice:NAME.",
            id="questions.filter",
        ),
        Binding(
            "escape",
            "clear_filter",
            "Clear",
            tooltip="Show every question again.",
            id="questions.clear_filter",
        ),
        Binding(
            "u",
            "undo",
            "Undo",
            tooltip="Undo the last label change (saved as a new journal line).",
            id="labels.undo",
        ),
        Binding(
            "plus,right_square_bracket",
            "change_k(1)",
            "k+1",
            tooltip="Raise the cut-off k of recall, precision and nDCG.",
            id="metrics.k_up",
            group=K_GROUP,
        ),
        Binding(
            "minus,left_square_bracket",
            "change_k(-1)",
            "k-1",
            tooltip="Lower the cut-off k of recall, precision and nDCG.",
            id="metrics.k_down",
            group=K_GROUP,
        ),
        *LABELLING_BINDINGS,
    ]

    def __init__(self, retrievers: list[str]) -> None:
        """The screen for these retrievers (in display order)."""
        super().__init__(id="main")
        #: The retrievers with a result list, in order.
        self.retrievers = retrievers
        #: The question shown in the result lists.
        self.current_qid: str | None = None
        #: The retriever whose highlighted chunk the chunk view shows.
        self.active_retriever = retrievers[0] if retrievers else ""
        #: The filter text ("" for none).
        self.filter_text = ""
        #: Whether the question list is sorted worst-first.
        self.sorted_worst_first = False
        #: The question ids in the list, in list order.
        self.visible_ids: list[str] = []
        #: Lines shown under the metric table for a while (how the last grade moved nDCG).
        self.change_notes: list[str] = []
        self._note_token = 0
        self._shown_workspace: Workspace | None = None
        #: True once the widgets exist (the app's handlers wait for it).
        self.composed = False
        self._filter_timer: Timer | None = None
        #: When embedding progress started counting, and how many texts were done then (for the rate).
        self._progress_start: tuple[float, int] | None = None

    # ---- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """Header; questions and result lists on top; metrics and the chunk view below; progress; footer."""
        yield Header(icon="≡")
        with Horizontal(id="top"):
            with Vertical(id="questions"):
                yield Input(placeholder="words or slice:NAME, enter to apply", id="filter")
                yield QuestionList(id="question-list")
            with Vertical(id="results"):
                yield Static("", id="question-bar", markup=False)
                with Horizontal(id="tab-strip"):
                    for name in self.retrievers:
                        yield TabLabel(name)
                for name in self.retrievers:
                    yield ResultPane(name)
        with Horizontal(id="bottom"):
            yield MetricsPanel("loading…", id="metrics")
            yield ChunkView(id="chunk")
        with Horizontal(id="progress-row"):
            yield Label("embedding", id="progress-label")
            yield ProgressBar(id="progress", show_eta=False)
        yield Static("", id="too-small", markup=False)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        """Start in the layout that fits, with loading notes in place."""
        self._apply_layout(self.app.size.width, self.app.size.height)
        self._set_active(self.active_retriever)
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)
        self.composed = True
        if self.ws is not None:  # the load worker reported before the screen was ready
            self.show_workspace(self.ws)
            if self.ragtui.embedding_progress is not None:
                self.show_progress(*self.ragtui.embedding_progress)
            return
        self.query_one("#questions").border_title = "questions · loading…"
        self.query_one("#metrics").border_title = "metrics"
        for pane in self.query(ResultPane):
            pane.set_note("loading…")

    def on_resize(self, event: Resize) -> None:
        """Switch between the compact and the wide layout."""
        self._apply_layout(event.size.width, event.size.height)

    def _theme_changed(self, theme: object) -> None:
        """Cells carry styles from the theme: redraw them in the new one."""
        if self.ws is not None:
            self.question_list.update_all(self.ws, self.status)
            self.select_question(self.current_qid)

    def _apply_layout(self, width: int, height: int) -> None:
        """Compact below 110x30: one result list at a time, with tabs."""
        compact = width < COMPACT_WIDTH or height < COMPACT_HEIGHT
        if compact != self.has_class("-compact"):
            self.set_class(compact, "-compact")
            self.refresh_metrics()
            self.update_progress_line()
        tiny = width < MIN_WIDTH or height < MIN_HEIGHT
        self.set_class(tiny, "-tiny")
        if tiny:
            self.query_one("#too-small", Static).update(
                f"terminal {width}x{height}: ragtui needs at least {MIN_WIDTH}x{MIN_HEIGHT}; "
                "enlarge it (keys still work)"
            )

    # ---- access ------------------------------------------------------------------------------

    @property
    def ragtui(self) -> RagtuiApp:
        """The app, typed."""
        return self.app  # type: ignore[return-value]

    @property
    def ws(self) -> Workspace | None:
        """The loaded workspace, or None while loading."""
        return self.ragtui.workspace

    @property
    def status(self) -> dict[str, str]:
        """Readiness of each retriever: ready, pending or failed."""
        return self.ragtui.retriever_status

    @property
    def question_list(self) -> QuestionList:
        """The question list."""
        return self.query_one(QuestionList)

    def result_list(self, name: str) -> ResultList:
        """The result list of one retriever."""
        return self.query_one(f"#results-{name}", ResultList)

    def pane(self, name: str) -> ResultPane:
        """The pane of one retriever."""
        return self.query_one(f"#pane-{name}", ResultPane)

    @property
    def metrics(self) -> MetricsPanel:
        """The metric panel."""
        return self.query_one(MetricsPanel)

    @property
    def chunk_view(self) -> ChunkView:
        """The chunk view."""
        return self.query_one(ChunkView)

    def _ready(self, name: str) -> bool:
        """Whether a retriever's rankings are in the evaluation."""
        ws = self.ws
        return ws is not None and ws.evaluation is not None and name in ws.evaluation.per_question

    # ---- showing a workspace -----------------------------------------------------------------

    def show_workspace(self, ws: Workspace) -> None:
        """Show a freshly loaded workspace (first load or a reload at another depth)."""
        first = self._shown_workspace is None
        self._shown_workspace = ws
        id_width = min(MAX_ID_WIDTH, max((len(q.id) for q in ws.questions), default=2))
        chunk_width = min(MAX_CHUNK_WIDTH, max((len(c.id) for c in ws.chunks), default=5))
        self.question_list.configure(self.retrievers, max(2, id_width))
        for name in self.retrievers:
            self.result_list(name).configure(chunk_width)
        previous = self.current_qid
        self.current_qid = None
        self._fill_questions(keep=previous, refill=True)
        self.update_notes()
        self.update_header()
        self.judging_changed()
        if first:
            self._focus(self.question_list)

    def update_notes(self) -> None:
        """The note of each pane: loading, embedding progress, or why it is unavailable."""
        for name in self.retrievers:
            state = self.status.get(name, "ready")
            if state == "failed":
                self.pane(name).set_note(f"{name} unavailable: {self.ragtui.vector_error}")
            elif not self._ready(name):
                self.pane(name).set_note(f"{name}: embedding chunks… the list fills in when ready")
            else:
                self.pane(name).set_note(None)

    def update_header(self) -> None:
        """The subtitle: data, sizes, k and depth, and read-only when labels cannot be saved."""
        ws = self.ws
        if ws is None:
            return
        settings = ws.settings
        source = settings.beir or settings.corpus
        parts = [
            source.name if source is not None else "corpus",
            f"{len(ws.questions)} questions",
            f"{len(ws.chunks)} chunks",
            f"k={settings.k}",
            f"depth {settings.depth}",
        ]
        if ws.labels.read_only:
            parts.append("labels read-only")
        self.ragtui.sub_title = " · ".join(parts)

    def vectors_changed(self) -> None:
        """Vector and hybrid rankings arrived (or failed): refresh every dependent view."""
        self.update_notes()
        self.hide_progress()
        ws = self.ws
        if ws is None:
            return
        self.question_list.update_all(ws, self.status, refill=True)
        if self.current_qid is not None:
            for name in self.retrievers:
                if name in ("vector", "hybrid"):
                    self._show_list(name)
            self._update_titles()
            self._update_chunk_view()
        self.refresh_metrics()
        self.judging_changed()

    # ---- the question list -------------------------------------------------------------------

    def _fill_questions(self, keep: str | None = None, refill: bool = False) -> None:
        """Refill (or just reorder) the question list after the workspace, the filter or the order
        changed, keeping the current question if shown."""
        ws = self.ws
        if ws is None:
            return
        if self.filter_text:
            qids = filter_questions(ws, self.filter_text)
        else:
            qids = [q.id for q in ws.questions]
        if self.sorted_worst_first:
            qids = worst_first(ws, qids)
        questions = self.question_list
        if refill or set(qids) != set(self.visible_ids) or len(qids) != questions.row_count:
            questions.fill(ws, qids, self.status)
        else:
            questions.reorder(qids)
        self.visible_ids = qids
        title = (
            f"questions {len(qids)}"
            if not self.filter_text
            else f"questions {len(qids)}/{len(ws.questions)}"
        )
        if self.filter_text:
            title += f" · {self.filter_text}"
        if self.sorted_worst_first:
            title += " · worst first"
        self.query_one("#questions").border_title = title
        target = keep if keep in qids else (qids[0] if qids else None)
        if target is None:
            self.select_question(None)
            return
        questions.select_qid(target)
        self.select_question(target)

    @on(DataTable.RowHighlighted, "#question-list")
    def _question_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Show the question under the cursor (read from the cursor, so stale events do nothing)."""
        qid = self.question_list.current_qid
        if qid is not None and qid != self.current_qid:
            self.select_question(qid)

    def on_question_list_show_results(self, event: QuestionList.ShowResults) -> None:
        """Enter on a question: focus the active result list."""
        self.focus_retriever(self.active_retriever)

    def select_question(self, qid: str | None) -> None:
        """Show a question: its text, the three rankings, the chunk view and the metrics."""
        self.current_qid = qid
        self.change_notes = []
        ws = self.ws
        bar = self.query_one("#question-bar", Static)
        if ws is None or qid is None:
            bar.update("no question matches the filter" if ws is not None else "")
            for name in self.retrievers:
                self.result_list(name).clear()
            self.chunk_view.show(ws, None, None)
            self.refresh_metrics()
            return
        self.select_question_bar()
        for name in self.retrievers:
            self._show_list(name)
        self._update_titles()
        self._update_chunk_view()
        self.refresh_metrics()
        self.update_progress_line()

    def select_question_bar(self) -> None:
        """The current question's id, full text and slices, and whether it is skipped."""
        ws = self.ws
        qid = self.current_qid
        bar = self.query_one("#question-bar", Static)
        if ws is None or qid is None:
            return
        question = ws.question_by_id[qid]
        line = Text()
        line.append(qid, "bold")
        line.append("  " + " ".join(question.text.split()))
        if question.slices:
            line.append("  [" + ", ".join(question.slices) + "]", "dim")
        if ws.evaluation is not None and qid not in ws.evaluation.evaluated:
            line.append("  no relevant chunk: skipped in every mean", "italic")
        old = bar.content
        # The same text after a grade change: repaint without a new layout (about 40 ms).
        bar.update(line, layout=not (isinstance(old, Text) and old.plain == line.plain))

    def _show_list(self, name: str) -> None:
        """Fill one result list with the current question's ranking (empty while not ready)."""
        ws = self.ws
        results = self.result_list(name)
        if ws is None or self.current_qid is None or not self._ready(name):
            results.clear()
            results.qid = None
            return
        results.show(ws, self.current_qid)

    def _first_rank_text(self, name: str) -> str:
        """The first relevant rank of a retriever for the current question, as shown in titles."""
        ws = self.ws
        if self.status.get(name) == "failed":
            return UNAVAILABLE_MARK
        if ws is None or ws.evaluation is None or not self._ready(name) or self.current_qid is None:
            return PENDING_MARK
        if self.current_qid not in ws.evaluation.evaluated:
            return "–"
        rank = ws.evaluation.per_question[name][self.current_qid].first_relevant_rank
        return MISS_MARK if rank is None else f"#{rank}"

    def _update_titles(self) -> None:
        """Pane titles and compact tabs: first relevant rank and nDCG@k of the current question."""
        ws = self.ws
        for name in self.retrievers:
            rank = self._first_rank_text(name)
            title = f"{name} · first relevant {rank}"
            evaluation = ws.evaluation if ws is not None else None
            qid = self.current_qid
            if evaluation is not None and self._ready(name) and qid in evaluation.evaluated:
                value = evaluation.per_question[name][qid].ndcg
                title += f" · nDCG@{evaluation.k} {fmt(value)}"
            self.pane(name).border_title = title
            tab = self.query_one(f"#tab-{name}", TabLabel)
            label = f" {name} {rank} "
            if str(tab.content) != label:
                # The tabs show only in the compact layout: elsewhere no new layout (about 40 ms).
                tab.update(label, layout=self.has_class("-compact"))

    # ---- result lists and the chunk view -------------------------------------------------------

    def _set_active(self, name: str) -> None:
        """Make one retriever's list the one shown (compact layout) and followed by the chunk view."""
        self.active_retriever = name
        for other in self.retrievers:
            self.pane(other).set_class(other == name, "-active")
            self.query_one(f"#tab-{other}", TabLabel).set_class(other == name, "-active")

    def focus_retriever(self, name: str) -> None:
        """Show and focus one retriever's list."""
        if name not in self.retrievers:
            return
        self._set_active(name)
        self._focus(self.result_list(name))
        self._update_chunk_view()

    def _focus(self, widget: Widget) -> None:
        """Focus a widget now: ``Widget.focus`` is deferred, so keys typed right after tab (tmux,
        a fast typist) would still go to the previous list."""
        self.set_focus(widget)

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        """A result list got the focus (tab or a click): it becomes the active one."""
        widget = event.widget
        if isinstance(widget, ResultList) and widget.retriever != self.active_retriever:
            self._set_active(widget.retriever)
            self._update_chunk_view()

    @on(DataTable.RowHighlighted, "ResultList")
    def _result_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The cursor moved in a result list: the chunk view follows the active list."""
        if (
            isinstance(event.data_table, ResultList)
            and event.data_table.retriever == self.active_retriever
        ):
            self._update_chunk_view()

    def _update_chunk_view(self) -> None:
        """Show the active list's highlighted chunk."""
        if not self.retrievers:
            return
        chunk = self.result_list(self.active_retriever).highlighted_chunk
        self.chunk_view.show(self.ws, self.current_qid, chunk)

    def on_result_list_chunk_requested(self, event: ResultList.ChunkRequested) -> None:
        """Enter on a chunk: show it full screen."""
        if self.ws is not None:
            self.app.push_screen(ChunkScreen(self.ws, self.current_qid, event.chunk))

    # ---- focus --------------------------------------------------------------------------------

    def _focus_order(self) -> list[Widget]:
        """The tab order: question list, then the result lists."""
        return [self.question_list, *(self.result_list(n) for n in self.retrievers)]

    def action_cycle_focus(self, step: int) -> None:
        """Move the focus to the next (or previous) list, showing it in the compact layout."""
        order = self._focus_order()
        focused = self.focused
        index = order.index(focused) if focused in order else 0
        target = order[(index + step) % len(order)]
        if isinstance(target, ResultList):
            self.focus_retriever(target.retriever)
        else:
            self._hide_filter_if_empty()
            self._focus(target)

    # ---- filter and sort ----------------------------------------------------------------------

    def action_filter(self) -> None:
        """Open the filter input."""
        questions = self.query_one("#questions")
        questions.add_class("-filtering")
        filter_input = self.query_one("#filter", Input)
        filter_input.value = self.filter_text
        self._focus(filter_input)

    def _hide_filter_if_empty(self) -> None:
        """Hide the filter input (the list title keeps showing an active filter)."""
        self.query_one("#questions").remove_class("-filtering")

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        """Filter as the user types, once typing pauses (refilling 10,000 rows per key would lag)."""
        if self._filter_timer is not None:
            self._filter_timer.stop()
        value = event.value
        self._filter_timer = self.set_timer(FILTER_DELAY, lambda: self.set_filter(value))

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        """Apply the filter and go back to the list."""
        if self._filter_timer is not None:
            self._filter_timer.stop()
            self._filter_timer = None
        self.set_filter(event.value)
        self._hide_filter_if_empty()
        self._focus(self.question_list)

    def set_filter(self, text: str) -> None:
        """Filter the question list ("" shows every question)."""
        text = " ".join(text.split())
        if text == self.filter_text:
            return
        self.filter_text = text
        self.set_class(bool(text), "-filtered")
        self._fill_questions(keep=self.current_qid)
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Escape (clear filter) only applies while filtering."""
        if action == "clear_filter":
            return bool(self.filter_text) or self.query_one("#questions").has_class("-filtering")
        return True

    def action_clear_filter(self) -> None:
        """Show every question again and close the filter input."""
        if self._filter_timer is not None:
            self._filter_timer.stop()
            self._filter_timer = None
        self.query_one("#filter", Input).value = ""
        self.set_filter("")
        self._hide_filter_if_empty()
        self._focus(self.question_list)
        self.refresh_bindings()

    def action_sort(self) -> None:
        """Toggle worst-first order (a snapshot: grades do not reorder the list under the cursor)."""
        self.set_sort(not self.sorted_worst_first)

    def set_sort(self, worst_first_order: bool) -> None:
        """Sort worst-first, or back to golden-set order."""
        self.sorted_worst_first = worst_first_order
        self._fill_questions(keep=self.current_qid)

    # ---- metrics --------------------------------------------------------------------------------

    def refresh_metrics(self) -> None:
        """Redraw the metric panel."""
        ws = self.ws
        if ws is None or ws.evaluation is None:
            return
        filtered = self.visible_ids if self.filter_text else None
        self.metrics.show(
            ws,
            self.current_qid,
            filtered,
            self.status,
            self.retrievers,
            self.change_notes,
            legend=not self.has_class("-compact"),
        )

    def refresh_all(self) -> None:
        """k changed (or labels reloaded): every number, mark and style on screen."""
        ws = self.ws
        if ws is None:
            return
        self.question_list.update_all(ws, self.status)
        for name in self.retrievers:
            self.result_list(name).update_grades(ws)
        self._update_titles()
        self._update_chunk_view()
        self.refresh_metrics()
        self.update_header()
        self.judging_changed()

    def action_change_k(self, step: int) -> None:
        """Raise or lower k by one."""
        ws = self.ws
        if ws is not None:
            self.ragtui.set_k(ws.settings.k + step)

    # ---- labels ---------------------------------------------------------------------------------

    def on_result_list_grade_requested(self, event: ResultList.GradeRequested) -> None:
        """Save a grade (digit) or remove a hand grade (backspace) for the highlighted chunk."""
        ws = self.ws
        qid = self.current_qid
        if ws is None or qid is None:
            return
        if event.chunk is None:
            self.notify("This list is empty: nothing to grade.", severity="warning", timeout=3)
            return
        if ws.labels.read_only:
            self.notify(
                f"{ws.labels.read_only_reason or f'{ws.labels.path} is read-only'}: the grade was not saved.",
                severity="error",
                timeout=5,
                markup=False,
            )
            return
        try:
            change = ws.set_grade(qid, event.chunk, event.grade)
        except ReadOnlyError as exc:  # made read-only since the check above
            self.notify(f"{exc}", severity="error", timeout=8, markup=False)
            self.update_header()
            return
        except OSError as exc:
            self.notify(
                f"Could not save the label: {exc}", severity="error", timeout=8, markup=False
            )
            return
        self.apply_change(change)

    def action_grade_hint(self) -> None:
        """A digit on the question list: say where grading happens."""
        self.notify("Grades go to a chunk: press tab to reach a result list, then 0-9.", timeout=4)

    def action_undo(self) -> None:
        """Undo the last label change."""
        ws = self.ws
        if ws is None:
            return
        if not ws.labels.can_undo:
            self.notify("Nothing to undo.", timeout=3)
            return
        if ws.labels.read_only:
            self.notify(
                f"{ws.labels.read_only_reason or f'{ws.labels.path} is read-only'}: cannot undo.",
                severity="error",
                timeout=5,
                markup=False,
            )
            return
        try:
            change = ws.undo()
        except ReadOnlyError as exc:
            self.notify(f"{exc}", severity="error", timeout=8, markup=False)
            self.update_header()
            return
        except OSError as exc:
            self.notify(f"Could not save the undo: {exc}", severity="error", timeout=8)
            return
        if change is not None:
            self.apply_change(change, undo=True)

    def apply_change(self, change: GradeChange, undo: bool = False) -> None:
        """A label was saved: update every number that depends on it and say how nDCG moved."""
        ws = self.ws
        assert ws is not None and ws.evaluation is not None
        qid = change.question
        self.question_list.update_question(ws, qid, self.status)
        if qid == self.current_qid:
            for name in self.retrievers:
                results = self.result_list(name)
                if results.qid == qid:
                    results.update_grades(ws)
            self._update_titles()
            self._update_chunk_view()
        if qid == self.current_qid:
            self.select_question_bar()
        self.judging_changed(qid)
        grade, source = ws.grade_source(qid, change.chunk)
        now = f"grade {grade} ({source})" if grade is not None else "not graded"
        verb = "undone:" if undo else "saved:"
        summary = f"{verb} {qid} {change.chunk} → {now}"
        moves = self._ndcg_moves(change.changes, ws.evaluation.k)
        self._show_change_note([f"Δ {qid} {moves}"])
        self.notify(f"{summary}\n{moves}", timeout=4, markup=False)

    @staticmethod
    def _ndcg_moves(changes: dict[str, tuple[QuestionMetrics, QuestionMetrics]], k: int) -> str:
        """How nDCG@k moved per retriever, e.g. ``nDCG@3 bm25 1.000→0.000`` (unchanged ones left out)."""
        moved = [(name, old, new) for name, (old, new) in changes.items() if old.ndcg != new.ndcg]
        if not moved:
            return f"nDCG@{k} unchanged"
        return f"nDCG@{k} " + " ".join(
            f"{name} {fmt(old.ndcg)}→{fmt(new.ndcg)}" for name, old, new in moved
        )

    def _show_change_note(self, lines: list[str]) -> None:
        """Show lines under the metric table for a few seconds."""
        self.change_notes = lines
        self._note_token += 1
        token = self._note_token
        self.refresh_metrics()

        def clear() -> None:
            """Remove the lines unless a newer change replaced them."""
            if self._note_token == token:
                self.change_notes = []
                self.refresh_metrics()

        self.set_timer(CHANGE_NOTE_SECONDS, clear)

    # ---- progress -------------------------------------------------------------------------------

    def show_progress(self, done: int, total: int) -> None:
        """Show embedding progress (total 0: the model is still loading)."""
        row = self.query_one("#progress-row")
        row.display = True
        bar = self.query_one("#progress", ProgressBar)
        label = self.query_one("#progress-label", Label)
        if total <= 0 or done <= 0:
            self._progress_start = None
            label.update(f"loading the embedding model ({total} texts to embed)…")
            bar.update(total=None)
        else:
            label.update(f"embedding {done}/{total} texts{self._progress_rate(done, total)}")
            bar.update(total=total, progress=done)

    def _progress_rate(self, done: int, total: int) -> str:
        """`` · 41 texts/s · 12 s left``, measured from the first batch done (so the model load does
        not count); empty until two reports exist."""
        now = time.monotonic()
        if self._progress_start is None or done < self._progress_start[1]:
            self._progress_start = (now, done)
            return ""
        started, done_then = self._progress_start
        if now - started <= 0 or done == done_then:
            return ""
        rate = (done - done_then) / (now - started)
        left = (total - done) / rate
        return f" · {rate:.0f} texts/s · {format_seconds(left)} left"

    def hide_progress(self) -> None:
        """Hide the progress row."""
        self.query_one("#progress-row").display = False
        self._progress_start = None

    # ---- another session's labels ----------------------------------------------------------------

    def labels_changed(self, qids: set[str]) -> None:
        """Labels from another session changed these questions: their rows, the current lists, the
        titles, the chunk view and every metric panel."""
        ws = self.ws
        if ws is None or ws.evaluation is None:
            return
        for qid in qids:
            self.question_list.update_question(ws, qid, self.status)
        if self.current_qid in qids:
            for name in self.retrievers:
                results = self.result_list(name)
                if results.qid == self.current_qid:
                    results.update_grades(ws)
            self.select_question_bar()
            self._update_titles()
            self._update_chunk_view()
        self.refresh_metrics()
