"""The main screen: the question pane, the result panes, the chunk view and the metric panel.

The screen owns only what it shows (the current question, the focused list, the layout); it never
changes the workspace. A grade or an undo is a request message to the app, which applies it and
publishes ``Changed``; the screen then redraws what depends on it. Two compound widgets draw their
side of it: ``QuestionPane`` (the filter box and the filter, the order, the question list, its
legend and the judging progress) and ``ResultsPane`` (the question bar, the tabs, the result lists
and their notes). The screen sets what they show and hears back through their messages; every key
is the screen's (``main_keys``), and what a key opens is built by ``views``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import ActiveBinding, BindingType
from textual.containers import Horizontal
from textual.events import Resize
from textual.geometry import Size
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Header, Static

from ragtui.core.workspace import Workspace
from ragtui.core.workspace.judging import PoolOrder
from ragtui.tui.judging_session import JudgingWalk
from ragtui.tui.messages import Changed, Notice, RetireRequested, UndoRequested
from ragtui.tui.screens import views
from ragtui.tui.screens.host import ControllerView, host
from ragtui.tui.screens.main_keys import FULL_FOOTER_WIDTH, MAIN_KEYS, footer_keys, key_applies
from ragtui.tui.screens.views import Shown, View
from ragtui.tui.widgets.chunk_view import ChunkView
from ragtui.tui.widgets.footer import Footer
from ragtui.tui.widgets.formatting import ndcg_moves, workspace_summary
from ragtui.tui.widgets.noted_metrics import NotedMetricsPanel
from ragtui.tui.widgets.progress_row import ProgressRow
from ragtui.tui.widgets.question_list import QuestionList, QuestionView
from ragtui.tui.widgets.question_pane import QuestionPane
from ragtui.tui.widgets.result_list import ResultList, ResultPane
from ragtui.tui.widgets.results_pane import ResultsPane, is_ready
from ragtui.tui.widgets.row_list import RowList
from ragtui.tui.widgets.status_line import StatusLine
from ragtui.tui.widgets.text import covered
from ragtui.tui.widgets.text_box import TextBox

#: Below this width or height the screen uses its compact layout (one result list at a time).
COMPACT_WIDTH = 110
COMPACT_HEIGHT = 30
#: Below this height the wide layout gives the stacked result lists 4 rows of the bottom row.
SHORT_HEIGHT = 34
#: Below this size even the compact layout does not fit: a line says so (the app keeps working).
MIN_WIDTH = 80
MIN_HEIGHT = 24


class MainScreen(Screen[None]):
    """Everything at once: pick a question, compare the rankings, read the chunk, grade it, watch the numbers.

    The focus moves with ``set_focus``, at once: ``Widget.focus`` is deferred, so keys typed right
    after tab (tmux, a fast typist) would still go to the previous list.
    """

    AUTO_FOCUS = "#question-list"

    # Every key is the screen's, at priority (see ``main_keys``).
    BINDINGS: ClassVar[list[BindingType]] = list(MAIN_KEYS)

    def __init__(self, controller: ControllerView) -> None:
        """The screen of the app whose state ``controller`` holds (read here, never changed)."""
        super().__init__(id="main")
        self.controller = controller
        self.retrievers = controller.retrievers
        #: The question shown in the result lists.
        self.current_qid: str | None = None
        #: True once the widgets exist.
        self.composed = False
        #: Changes made while another screen was on top, applied when this one is shown again.
        self._pending: list[Changed] = []
        #: The parts of the screen (made here, laid out in ``compose``).
        self.questions = QuestionPane(id="questions")
        self.results = ResultsPane(self.retrievers, id="results")
        self.metrics = NotedMetricsPanel("loading…", id="metrics")
        self.chunk_view = ChunkView(id="chunk")
        self.progress_row = ProgressRow(id="progress-row")
        self.status_line = StatusLine(id="status")

    # ---- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """Header; questions and result lists on top; metrics and the chunk view below; status; footer."""
        yield Header(icon="≡")
        with Horizontal(id="top"):
            yield self.questions
            yield self.results
        with Horizontal(id="bottom"):
            yield self.metrics
            yield self.chunk_view
        yield self.progress_row
        yield Static("", id="too-small", markup=False)
        yield self.status_line
        yield Footer(compact=True)

    def on_mount(self) -> None:
        """Follow the app's changes and status; start in the layout that fits."""
        self._apply_layout(self.app.size.width, self.app.size.height)
        self.results.set_active(self.results.active)
        app = host(self)
        app.changed.subscribe(self, self.on_changed, immediate=True)
        app.status_changed.subscribe(self, self.status_line.show, immediate=True)
        self.status_line.show(app.status)
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)
        self.composed = True
        if self.ws is not None:  # the first load reported before the screen was ready
            self.on_changed(Changed("loaded"))
            if self.controller.embedding_progress is not None:
                self.on_changed(Changed("progress"))
            return
        self.questions.border_title = "questions · loading…"
        self.metrics.border_title = "metrics"
        self.results.set_notes("loading…")

    def on_resize(self, event: Resize) -> None:
        """Switch between the compact and the wide layout."""
        self._apply_layout(event.size.width, event.size.height)

    def _screen_resized(self, size: Size) -> None:
        """Textual lays the screen out again at every Resize, also of the size it has (three at
        start, 19 ms of layouts); a change inside asks for its own layout, a new size here."""
        if size != self._compositor.size:
            super()._screen_resized(size)

    def _theme_changed(self, theme: object) -> None:
        """Cells carry styles from the theme: redraw them in the new one."""
        if self.ws is not None:
            self.refresh_all()

    def _apply_layout(self, width: int, height: int) -> None:
        """Compact below 110x30: one result list at a time, with tabs (short below 34 rows: a
        smaller bottom row); below 100 columns a shorter footer."""
        compact = width < COMPACT_WIDTH or height < COMPACT_HEIGHT
        if compact != self.has_class("-compact"):
            self.set_class(compact, "-compact")
            self.refresh_metrics()
            self.update_progress_line()
            self.results.set_compact(compact)
        self.set_class(not compact and height < SHORT_HEIGHT, "-short")
        if (width < FULL_FOOTER_WIDTH) != self.has_class("-narrow-footer"):
            self.set_class(width < FULL_FOOTER_WIDTH, "-narrow-footer")
            self.refresh_bindings()
        tiny = width < MIN_WIDTH or height < MIN_HEIGHT
        self.set_class(tiny, "-tiny")
        if tiny:
            self.query_one("#too-small", Static).update(
                f"terminal {width}x{height}: ragtui needs at least {MIN_WIDTH}x{MIN_HEIGHT}; "
                "enlarge it (keys still work)"
            )

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        """The keys the footer lists (fewer below ``FULL_FOOTER_WIDTH`` columns)."""
        return footer_keys(super().active_bindings, narrow=self.has_class("-narrow-footer"))

    # ---- access ------------------------------------------------------------------------------

    @property
    def ws(self) -> Workspace | None:
        """The loaded workspace, or None while loading."""
        ws = self.controller.workspace
        return ws if ws is not None and ws.evaluation is not None else None

    @property
    def status(self) -> Mapping[str, str]:
        """Readiness of each retriever: ready, pending or failed."""
        return self.controller.retriever_status

    @property
    def question_list(self) -> QuestionList:
        """The question list."""
        return self.questions.question_list

    @property
    def visible_ids(self) -> list[str]:
        """The question ids in the list, in list order."""
        return self.questions.visible_ids

    @property
    def filter_text(self) -> str:
        """The filter in use ("" for none)."""
        return self.questions.filter_text

    @property
    def active_retriever(self) -> str:
        """The retriever whose highlighted chunk the chunk view shows."""
        return self.results.active

    def result_list(self, name: str) -> ResultList:
        """The result list of one retriever."""
        return self.results.result_list(name)

    def pane(self, name: str) -> ResultPane:
        """The pane of one retriever."""
        return self.results.pane(name)

    def _question_view(self, ws: Workspace) -> QuestionView:
        """What the question list's rows show."""
        deltas = self.controller.baseline_deltas()
        return self.questions.view(ws, self.status, self.retrievers, deltas)

    # ---- what the app changed ----------------------------------------------------------------

    def on_changed(self, change: Changed) -> None:
        """Redraw what a change touched (the app calls this after every change it made). While
        another screen is on top (the judging view), the changes wait until this one is shown again."""
        if not self.composed or self.ws is None:
            return
        self.results.forget_prepared()
        if covered(self) and change.kind not in ("loaded", "progress"):
            self._pending.append(change)
            return
        self._apply_change(change)

    def on_screen_resume(self) -> None:
        """Shown again: apply what changed meanwhile (one full redraw when several did)."""
        self.status_line.show(host(self).status)
        pending, self._pending = self._pending, []
        ws = self.ws
        if not pending or ws is None:
            return
        self.questions.forget_why()
        if any(c.kind in ("questions", "retired", "k", "baseline", "retrievers") for c in pending):
            self.questions.forget_walk()
            keep = self.current_qid
            added = [c for c in pending if c.kind == "questions"]
            # A question added meanwhile (the ad-hoc screen) is shown, as when it was on top.
            if added:
                self._clear_filter_text()
                keep = next(iter(added[-1].questions or ()), None) or keep
            self._fill_questions(keep=keep, refill=True)
            self.refresh_all()
            self.update_notes()
        else:
            # Grades and labels only: each touched row once, then the current question's views.
            touched = {qid for change in pending for qid in change.questions or ()}
            self._rows_changed(ws, touched, self.current_qid in touched)

    def _rows_changed(
        self, ws: Workspace, qids: set[str] | None, current: bool, chunk: str | None = None
    ) -> None:
        """Grades, labels or retirements of ``qids`` (None: any) changed: their rows, the current
        question's views when ``current`` (``chunk``: the one whose grade changed), the metrics and
        the progress line; a filter that depends on grades is applied again when they let a
        question in or out (the cursor stays on its question, else on its row)."""
        if qids:
            self.question_list.update_view(self._question_view(ws), qids)
        if current:
            self._refresh_current(chunk)
        self.refresh_metrics()
        self.update_progress_line()
        if self.questions.let_in_or_out(ws, qids):
            self.questions.forget_walk()
            self._fill_questions(keep=self.current_qid)

    def _apply_change(self, change: Changed) -> None:
        """Redraw what one change touched."""
        ws = self.ws
        assert ws is not None
        kind = change.kind
        if kind == "grades":
            self.questions.forget_why(change.questions or ())
        elif kind != "progress":
            self.questions.forget_why()
        if kind in ("loaded", "retrievers", "questions", "retired", "k", "baseline"):
            self.questions.forget_walk()
        if kind == "loaded":
            self._fill_questions(keep=self.current_qid, refill=True)
            self.update_notes()
            self.update_header()
            if self.focused is None:
                self.set_focus(self.question_list)
        elif kind == "retrievers":
            self.update_notes()
            self.progress_row.hide()
            self.refresh_all()  # the header too
        elif kind == "grades":
            self._grades_changed(change)
        elif kind == "labels-reloaded":
            qids = set(change.questions) if change.questions is not None else None
            self._rows_changed(ws, qids, qids is None or self.current_qid in qids)
        elif kind == "questions":
            self._clear_filter_text()
            self._fill_questions(keep=next(iter(change.questions or ()), None))
            self.update_header()
        elif kind == "retired":
            self._rows_changed(ws, set(change.questions or ()), True)
        elif kind in ("k", "baseline"):
            self._fill_questions(keep=self.current_qid, refill=True)
            self.refresh_all()
        elif kind == "status":
            self.update_header()
        elif kind == "progress":
            progress = self.controller.embedding_progress
            if progress is None:
                self.progress_row.hide()
            else:
                self.progress_row.show(*progress, host(self).progress_rate)

    def _grades_changed(self, change: Changed) -> None:
        """A label was saved or undone: its question's row, the lists, titles, chunk view, metrics."""
        ws = self.ws
        assert ws is not None
        qids = set(change.questions or ())
        k = ws.settings.k
        self.metrics.note([f"Δ {qid} {ndcg_moves(change.moves, k)}" for qid in sorted(qids)])
        self._rows_changed(ws, qids, self.current_qid in qids, change.chunk)

    def _refresh_current(self, chunk: str | None = None) -> None:
        """The current question's numbers changed (one chunk's grade, when ``chunk`` is given): the
        lists, titles, chunk view and question bar."""
        ws = self.ws
        if ws is None or self.current_qid is None:
            return
        self.results.refresh_question(ws, self.current_qid, self.status, chunk)
        self._update_chunk_view()

    def refresh_all(self) -> None:
        """k, the retrievers or the theme changed: every number, mark and style on screen."""
        ws = self.ws
        if ws is None:
            return
        self.question_list.update_view(self._question_view(ws))
        if self.current_qid is not None:
            self.results.show_lists(ws, self.current_qid, keep_cursor=True)
        self.results.update_titles(ws, self.current_qid, self.status)
        self._update_chunk_view()
        self.refresh_metrics()
        self.update_header()
        self.update_progress_line()

    def update_notes(self) -> None:
        """The note of each pane: loading, embedding progress, or why it is unavailable."""
        self.results.update_notes(self.ws, self.status, self.controller.retriever_errors)

    def update_header(self) -> None:
        """The subtitle: data, sizes, k and depth, and read-only when labels cannot be saved."""
        if self.ws is not None:
            self.sub_title = workspace_summary(self.ws)

    # ---- the question list -------------------------------------------------------------------

    def _fill_questions(self, keep: str | None = None, refill: bool = False) -> None:
        """Fill the question list from the filter and the order, keeping ``keep`` if shown; after a
        new order the cursor goes to the first row."""
        ws = self.ws
        if ws is None:
            return
        baseline = self.controller.baseline
        name = baseline.name if baseline is not None else None
        target = self.questions.fill(ws, partial(self._question_view, ws), keep, name)
        if host(self).status.about_shown:
            self.post_message(Notice(""))  # it described the list as it was
        if target is not None and (target != self.current_qid or refill):
            self.select_question(target)
            return
        if target is None:
            self.select_question(None)
        # The same question in another list (or none): the judged count is of the list shown.
        self.update_progress_line()

    @on(RowList.CursorMoved, "#question-list")
    def _question_highlighted(self, event: RowList.CursorMoved) -> None:
        """Show the question under the cursor (read from the cursor, so stale events do nothing)."""
        qid = self.question_list.current_qid
        if qid is not None and qid != self.current_qid:
            self.select_question(qid)

    @on(RowList.Chosen, "#question-list")
    def _question_chosen(self, event: RowList.Chosen) -> None:
        """Enter on a question: focus the active result list."""
        self.focus_retriever(self.active_retriever)

    def select_question(self, qid: str | None) -> None:
        """Show a question: its text, the rankings, the chunk view and the metrics."""
        self.current_qid = qid
        self.metrics.notes = []
        ws = self.ws
        if ws is None or qid is None:
            self.results.clear(ws)
            self.chunk_view.show(ws, None, None)
            self.refresh_metrics()
            return
        self.results.show_question(ws, qid, self.status)
        self._update_chunk_view()
        self.refresh_metrics()
        self.update_progress_line()

    def _first_rank_text(self, name: str) -> str:
        """The first relevant rank of a retriever for the current question, as shown in titles."""
        return self.results.first_rank_text(self.ws, self.current_qid, self.status, name)

    # ---- result lists and the chunk view -------------------------------------------------------

    def focus_retriever(self, name: str) -> None:
        """Show and focus one retriever's list."""
        if name not in self.retrievers:
            return
        self.results.set_active(name)
        self.set_focus(self.result_list(name))
        self._update_chunk_view()

    @on(ResultsPane.Highlighted)
    def _result_highlighted(self, event: ResultsPane.Highlighted) -> None:
        """Another list is active, or its cursor moved: the chunk view follows."""
        self._update_chunk_view()

    @on(RowList.Chosen, "ResultList")
    def _result_chosen(self, event: RowList.Chosen) -> None:
        """A double click on a chunk: show it full screen."""
        if isinstance(event.row_list, ResultList):
            self._open_chunk(event.row_list)

    def _open_chunk(self, results: ResultList) -> None:
        """Show a list's highlighted chunk full screen."""
        ws = self.ws
        opened = views.chunk(ws, results.qid, results.highlighted_chunk) if ws is not None else None
        if opened is not None:
            self.app.push_screen(opened)

    def _update_chunk_view(self) -> None:
        """Show the active list's highlighted chunk."""
        if not self.retrievers:
            return
        name, chunk, ws = self.active_retriever, self.results.highlighted_chunk, self.ws
        causes: tuple[str, ...] = ()
        if ws is not None and chunk is not None and self.current_qid is not None:
            causes = self.questions.why(ws).chunk_causes(self.current_qid, name, chunk)
        note = f"why {name} misses it: {', '.join(causes)}" if causes else ""
        self.chunk_view.show(ws, self.current_qid, chunk, note=note)

    def action_cycle_focus(self, step: int) -> None:
        """Move the focus to the next (or previous) list, showing it in the compact layout."""
        order: list[Widget] = [self.question_list, *map(self.result_list, self.retrievers)]
        focused = self.focused
        index = order.index(focused) if focused in order else 0
        target = order[(index + step) % len(order)]
        if isinstance(target, ResultList):
            self.focus_retriever(target.retriever)
        else:
            self.questions.close_filter()
            self.set_focus(target)

    # ---- filter and sort ----------------------------------------------------------------------

    def action_filter(self) -> None:
        """Open the filter input."""
        self.set_focus(self.questions.open_filter(self.filter_text))

    @on(QuestionPane.FilterChanged)
    def _filter_changed(self, event: QuestionPane.FilterChanged) -> None:
        """Enter in the filter box: apply the filter and go back to the list. Typing paused: filter
        as typed (quietly), unless the filter was applied or closed meanwhile (as in a burst)."""
        if event.submitted:
            self.submit_filter(event.text)
        elif self.questions.holds(event.text):
            self.set_filter(event.text, quiet=True)

    def submit_filter(self, text: str) -> None:
        """Apply the filter and go back to the list (the input stays open when it is not
        understood: the status line says why)."""
        self.questions.cancel_typing()
        if self.set_filter(text):
            self.questions.close_filter()
            self.set_focus(self.question_list)

    def set_filter(self, text: str, quiet: bool = False) -> bool:
        """Filter the question list ("" shows every question); False when the filter is not
        understood (the list stays and, unless ``quiet``, the status line says why)."""
        changed = self.questions.set_filter(text, self.retrievers, quiet)
        if changed:
            self.set_class(bool(self.filter_text), "-filtered")
            self._fill_questions(keep=self.current_qid)
            self.refresh_metrics()
            self.refresh_bindings()
        return changed is not False

    def _clear_filter_text(self) -> None:
        """Forget the filter (the list is refilled by the caller)."""
        self.questions.forget_filter()
        self.set_class(False, "-filtered")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Whether a key applies now (``main_keys.key_applies``): escape only while filtering;
        while the filter input has the focus, every key but tab and enter is typed into it."""
        filtering = bool(self.filter_text) or self.questions.filtering
        return key_applies(action, self.focused, filtering)

    def action_clear_filter(self) -> None:
        """Show every question again and close the filter input."""
        self.questions.cancel_typing()
        self.questions.filter_box.value = ""
        self.set_filter("")
        self.questions.close_filter()
        self.set_focus(self.question_list)
        self.refresh_bindings()

    def action_sort(self) -> None:
        """Toggle worst-first order (a snapshot: grades do not reorder the list under the cursor)."""
        self.set_sort(not self.questions.worst_first)

    def set_sort(self, worst_first_order: bool) -> None:
        """Sort worst-first, or back to golden-set order; the cursor goes to the first row."""
        self.questions.worst_first = worst_first_order
        self._fill_questions(keep=None)

    # ---- keys that move (priority: one key finished before the next) ----------------------------

    def action_move(self, step: int) -> None:
        """Up or down in the focused list."""
        if isinstance(rows := self.focused, RowList):
            rows.move_cursor(rows.cursor + step, announce=False)
            self._cursor_moved(rows, step)

    def action_page(self, step: int) -> None:
        """Page up or down in the focused list."""
        if isinstance(rows := self.focused, RowList):
            before = rows.cursor
            rows.action_page(step, announce=False)
            self._cursor_moved(rows, rows.cursor - before)

    def action_move_to(self, where: str) -> None:
        """Home or End in the focused list."""
        if isinstance(rows := self.focused, RowList):
            rows.move_cursor(0 if where == "first" else rows.row_count - 1, announce=False)
            self._cursor_moved(rows)

    def _cursor_moved(self, row_list: RowList, step: int = 0) -> None:
        """Follow a list's cursor now (the key moved it without a message): a question shows its
        lists, a chunk the chunk view. Once drawn, the question ``step`` rows on (where the next
        key in the same direction goes) is laid out ahead."""
        if isinstance(row_list, QuestionList):
            qid, ahead = row_list.current_qid, row_list.qid_at(row_list.cursor + step)
            if qid is not None and qid != self.current_qid:
                self.select_question(qid)
                if step and ahead is not None and (ws := self.ws) is not None:
                    work = partial(self.results.prepare, ws, ahead, self.chunk_view)
                    self.chunk_view.look_ahead(work)
        elif isinstance(row_list, ResultList) and row_list.retriever == self.active_retriever:
            self._update_chunk_view()

    def action_choose(self) -> None:
        """Enter: apply the filter, show a question's lists, or a chunk full screen."""
        focused = self.focused
        if isinstance(focused, TextBox) and focused.id == "filter":
            self.submit_filter(focused.value)
        elif isinstance(focused, QuestionList):
            self.focus_retriever(self.active_retriever)
        elif isinstance(focused, ResultList):
            self._open_chunk(focused)

    def action_undo(self) -> None:
        """Undo the latest change (the app owns it): the one that was the latest as this key was
        pressed, posted to the app itself so it keeps its place among the keys."""
        self.app.post_message(UndoRequested(self.controller.latest_change))

    # ---- metrics and progress -------------------------------------------------------------------

    def refresh_metrics(self) -> None:
        """Redraw the metric panel."""
        ws = self.ws
        if ws is None or not self.composed:
            return
        filtered = self.visible_ids if self.filter_text else None
        notes, legend = self.metrics.notes, not self.has_class("-compact")
        self.metrics.show(
            ws, self.current_qid, filtered, self.status, self.retrievers, notes, legend=legend
        )

    @on(NotedMetricsPanel.NoteExpired)
    def _note_expired(self, event: NotedMetricsPanel.NoteExpired) -> None:
        """How the last grade moved nDCG has been shown long enough."""
        self.refresh_metrics()

    def update_progress_line(self) -> None:
        """Show the judging progress under the question list."""
        ws = self.ws
        if self.composed and ws is not None:
            self.questions.show_progress(ws, self.current_qid, self.has_class("-compact"))

    # ---- the judging walk (n) -------------------------------------------------------------------

    def walk(self) -> JudgingWalk | None:
        """The judging walk over the questions the list shows, in its order (built when needed)."""
        return self.questions.walk(ws) if (ws := self.ws) is not None else None

    def set_queue_order(self, order: PoolOrder) -> None:
        """Rank order or the seeded random order for ``n``."""
        self.questions.set_queue_order(order)
        self.update_progress_line()

    def action_next_unjudged(self) -> None:
        """Jump to the next unjudged pooled chunk (in the list's order) and highlight it in the list
        that ranked it best (the focused one when it has it)."""
        ws = self.ws
        if ws is None:
            return
        entry = self.questions.next_unjudged(ws, self.current_qid)
        if entry is None:
            done = "Every pooled chunk of the questions shown has a hand grade."
            self.post_message(Notice(done, about_shown=True))
            return
        if entry.question != self.current_qid:
            self.question_list.select_qid(entry.question)
            self.select_question(entry.question)
        name = self.results.list_for(entry, self.focused)
        if name is None:
            return
        if self.focused is not self.result_list(name):
            self.focus_retriever(name)
        self.result_list(name).select_chunk(entry.chunk)
        self._update_chunk_view()
        self.update_progress_line()

    # ---- views ------------------------------------------------------------------------------------

    def action_retire(self) -> None:
        """Ask the app to retire the current question, or to bring a retired one back."""
        ws = self.ws
        if ws is None or self.current_qid is None:
            return
        question = ws.questions.by_id[self.current_qid]
        self.app.post_message(RetireRequested(question.id, not question.retired))

    def _open(self, view: Callable[[Shown], View], loading: str = "") -> None:
        """Open a view of what the screen shows now, or say why there is none (``loading`` while
        the data loads)."""
        ws = self.ws
        opened: View = loading or None
        if ws is not None:
            focused = self.focused
            opened = view(
                Shown(
                    ws,
                    self.controller,
                    question=self.current_qid,
                    chunk=focused.highlighted_chunk if isinstance(focused, ResultList) else None,
                    listed=self.visible_ids,
                    filtered=bool(self.filter_text),
                    disputed=self.questions.filter.disputed,
                    disagree=self.questions.filter.judge_disagree,
                    ready=[n for n in self.retrievers if is_ready(ws, n)],
                    why=partial(self.questions.why, ws),
                )
            )
        if isinstance(opened, str):
            self.post_message(Notice(opened))
        elif opened is not None:
            self.app.push_screen(opened)

    def action_judge(self) -> None:
        """The judging view over the questions shown, in their order, starting here."""
        self._open(views.judging, loading="No question is shown: nothing to judge.")

    def action_verify(self, judge: str | None = None) -> None:
        """The judging view verifying a judge's grades (None: every judge's), starting here."""
        self._open(partial(views.verifying, judge=judge), loading="The data is still loading.")

    def action_adjudicate(self) -> None:
        """The adjudication pass: the judging view over the disputed pairs of the questions shown."""
        self._open(views.adjudication)

    def action_adhoc(self) -> None:
        """The ad-hoc query screen."""
        self._open(views.adhoc)

    def action_explain(self) -> None:
        """Hybrid attribution of the current question."""
        self._open(views.explain)

    def action_compare(self, a: str | None = None, b: str | None = None) -> None:
        """Compare two retrievers (default: bm25 against hybrid, or the first two shown)."""
        self._open(partial(views.compare, a=a, b=b))

    def action_curve(self) -> None:
        """Recall@k curves (over the filtered questions when a filter is on)."""
        self._open(views.curve)

    def action_slices(self) -> None:
        """Every metric per slice."""
        self._open(views.slices)

    def action_agreement(self) -> None:
        """The agreement report."""
        self._open(views.agreement)

    def action_diagnostics(self) -> None:
        """The chunking diagnostics."""
        self._open(views.diagnostics)
