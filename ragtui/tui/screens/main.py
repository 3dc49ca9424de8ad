"""The main screen: question list, the ranked lists, the chunk view and the metric panel.

The screen owns only what it shows (the filter, the order, the current question, the focused
list); it never changes the workspace. A grade or an undo is a request message to the app, which
applies it and publishes ``Changed``; the screen then redraws what depends on it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar, cast

from rich.cells import cell_len
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.events import Click, DescendantFocus, Resize
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Footer, Header, Input, Label, ProgressBar, Static

from ragtui.core.analysis.question_filter import (
    FILTER_SYNTAX,
    QuestionFilter,
    filter_questions,
    worst_first,
)
from ragtui.core.analysis.why import WhyIndex
from ragtui.core.labelling.judging import PoolOrder
from ragtui.core.text import visible_line
from ragtui.core.workspace import Workspace
from ragtui.tui.controller import Controller
from ragtui.tui.ids import widget_id
from ragtui.tui.judging_session import JudgingWalk
from ragtui.tui.messages import Changed, Notice, RetireRequested, UndoRequested
from ragtui.tui.widgets.chunk_view import ChunkView
from ragtui.tui.widgets.metrics_panel import MetricsPanel
from ragtui.tui.widgets.question_list import QuestionList, QuestionView, RankLegend
from ragtui.tui.widgets.result_list import ResultList, ResultPane, ResultView
from ragtui.tui.widgets.row_list import RowList
from ragtui.tui.widgets.status_line import StatusLine
from ragtui.tui.widgets.text import (
    MISS_MARK,
    PENDING_MARK,
    UNAVAILABLE_MARK,
    covered,
    fmt,
    set_frame_text,
)
from ragtui.tui.widgets.text_box import TextBox

if TYPE_CHECKING:
    from ragtui.tui.app import RagtuiApp

#: Below this width or height the screen uses its compact layout (one result list at a time).
COMPACT_WIDTH = 110
COMPACT_HEIGHT = 30
#: Below this height the wide layout gives the stacked result lists 4 rows of the bottom row.
SHORT_HEIGHT = 34
#: Below this size even the compact layout does not fit: a line says so (the app keeps working).
MIN_WIDTH = 80
MIN_HEIGHT = 24
#: How long the line saying how a grade moved nDCG stays in the metric panel, in seconds.
CHANGE_NOTE_SECONDS = 8.0
#: Seconds of no typing before the filter is applied.
FILTER_DELAY = 0.2
#: Marks the tab of the list shown in the compact layout.
ACTIVE_TAB_MARK = "▸"
#: The + and - keys share one footer entry.
K_GROUP = Binding.Group("k", compact=True)
#: Below this width the footer leaves out the keys of ``WIDE_FOOTER_ONLY`` (k and the next
#: unjudged chunk; the help lists every key), so that it fits: at 80 columns the result list's
#: keys, the filter's escape, undo, judge, quit and help take the room left by the palette's.
FULL_FOOTER_WIDTH = 100
WIDE_FOOTER_ONLY = frozenset({"metrics.k_up", "metrics.k_down", "labels.next_unjudged"})


def format_seconds(seconds: float) -> str:
    """A duration for people: ``42 s``, ``3 min 05 s``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    return f"{seconds // 60} min {seconds % 60:02d} s"


def ndcg_moves(moves: dict[str, tuple[float, float]], k: int) -> str:
    """How nDCG@k moved per retriever, e.g. ``nDCG@3 bm25 1.000→0.000`` (unchanged ones left out)."""
    moved = [(name, old, new) for name, (old, new) in moves.items() if old != new]
    if not moved:
        return f"nDCG@{k} unchanged"
    return f"nDCG@{k} " + " ".join(f"{name} {fmt(old)}→{fmt(new)}" for name, old, new in moved)


class TabLabel(Static):
    """One retriever's tab in the compact layout; clicking it focuses that list."""

    def __init__(self, retriever: str) -> None:
        """The tab of ``retriever``."""
        super().__init__(
            retriever, id=widget_id("tab", retriever), classes="tab-label", markup=False
        )
        #: The retriever this tab stands for.
        self.retriever = retriever
        #: The first relevant rank it shows, and whether it is the active tab.
        self.rank = ""
        self.active = False

    def show(
        self, rank: str | None = None, active: bool | None = None, layout: bool = True
    ) -> bool:
        """`` bm25 #1 ``, or ``▸bm25 #1 `` for the active tab (the mark says which list is shown
        where colours do not); True when the text changed."""
        self.rank = self.rank if rank is None else rank
        self.active = self.active if active is None else active
        self.set_class(self.active, "-active")
        label = f"{ACTIVE_TAB_MARK if self.active else ' '}{self.retriever} {self.rank} "
        if str(self.content) == label:
            return False
        self.update(label, layout=layout)
        return True

    def on_click(self, event: Click) -> None:
        """Focus this retriever's list."""
        event.stop()
        screen = self.screen
        if isinstance(screen, MainScreen):
            screen.focus_retriever(self.retriever)


class TabStrip(Horizontal):
    """The tabs of the compact layout on one line. When they do not all fit, the tabs before the
    active one that do not fit are left out and ``‹N`` says how many: the active tab is always
    whole in view."""

    def __init__(self, *, id: str | None = None) -> None:
        """An empty strip; the screen composes the tabs into it."""
        super().__init__(id=id)
        #: The retriever whose tab has to be in view.
        self.active = ""

    def compose(self) -> ComposeResult:
        """The count of tabs left out, before the tabs."""
        yield Static("", id="tab-more", classes="tab-label", markup=False)

    def on_mount(self) -> None:
        """The count goes first; nothing is left out yet."""
        more = self.query_one("#tab-more")
        more.display = False
        self.move_child(more, before=0)

    def on_resize(self) -> None:
        """Another width: another number of tabs fits."""
        self.show_tab(self.active)

    def show_tab(self, retriever: str) -> None:
        """Show as many tabs before ``retriever``'s as fit with it, and it."""
        self.active = retriever
        width = self.size.width
        tabs = list(self.query(TabLabel))
        names = [t.retriever for t in tabs]
        if not width or retriever not in names:
            return
        active = names.index(retriever)
        sizes = [cell_len(str(t.content)) + t.styles.margin.right for t in tabs]

        def room(first: int) -> int:
            more = cell_len(f"‹{first}") + 1 if first else 0
            return more + sum(sizes[first : active + 1])

        start = active
        while start > 0 and room(start - 1) <= width:
            start -= 1
        for index, tab in enumerate(tabs):
            tab.display = index >= start
        more = self.query_one("#tab-more", Static)
        more.update(f"‹{start}")
        more.display = start > 0


def _has_relevant(ws: Workspace, qid: str) -> bool:
    """Whether the question has a relevant chunk (its grades as the metrics read them)."""
    evaluation = ws.evaluation
    assert evaluation is not None
    return any(
        values[qid].num_relevant for values in evaluation.per_question.values() if qid in values
    )


class MainScreen(Screen[None]):
    """Everything at once: pick a question, compare the rankings, read the chunk, grade it, watch the numbers."""

    AUTO_FOCUS = "#question-list"

    BINDINGS: ClassVar[list[BindingType]] = [
        # Every key is the screen's, at priority: the app runs them in the order they arrive, each
        # to the end, before it looks at the next key. Forwarded to the focused list instead, a
        # burst (SSH, tmux, a paste) could act where the previous key had left: "/unjudged" typed
        # in one go would undo (u) and judge (j) instead of filtering. While the filter input has
        # the focus, check_action lets every key but tab through to it.
        *(
            Binding(key, action, show=False, priority=True)
            for key, action in (
                ("tab", "cycle_focus(1)"),
                ("shift+tab", "cycle_focus(-1)"),
                ("up", "move(-1)"),
                ("down", "move(1)"),
                ("pageup", "page(-1)"),
                ("pagedown", "page(1)"),
                ("home", "move_to('first')"),
                ("end", "move_to('last')"),
                ("enter", "choose"),
                ("backspace", "grade(-1)"),
                *((str(g), f"grade({g})") for g in range(10)),
            )
        ),
        Binding(
            "slash",
            "filter",
            "Filter",
            tooltip=f"Filter the questions: {FILTER_SYNTAX}.",
            id="questions.filter",
            priority=True,
        ),
        Binding(
            "escape",
            "clear_filter",
            "Clear",
            tooltip="Show every question again.",
            id="questions.clear_filter",
            priority=True,
        ),
        Binding(
            "u",
            "undo",
            "Undo",
            tooltip="Undo the last label change (saved as a new journal line).",
            id="labels.undo",
            priority=True,
        ),
        Binding(
            "plus,right_square_bracket",
            "app.change_k(1)",
            "k+1",
            tooltip="Raise the cut-off k of recall, precision and nDCG.",
            id="metrics.k_up",
            group=K_GROUP,
            priority=True,
        ),
        Binding(
            "minus,left_square_bracket",
            "app.change_k(-1)",
            "k-1",
            tooltip="Lower the cut-off k of recall, precision and nDCG.",
            id="metrics.k_down",
            group=K_GROUP,
            priority=True,
        ),
        Binding(
            "n",
            "next_unjudged",
            "Unjudged",
            tooltip="Jump to the next pooled chunk without a hand grade (in the list's order), then 0-9 grades it.",
            id="labels.next_unjudged",
            priority=True,
        ),
        Binding(
            "j",
            "judge",
            "Judge",
            tooltip="The judging view: one key grades a pair and moves to the next (the questions shown, in their order).",
            id="labels.judge",
            priority=True,
        ),
        Binding(
            "x",
            "retire",
            "Retire",
            show=False,
            tooltip="Retire this question (left out of every mean, kept in the file; u undoes), or bring it back.",
            id="questions.retire",
            priority=True,
        ),
        Binding(
            "a",
            "adhoc",
            "Ad-hoc",
            show=False,
            tooltip="Type any question, see every retriever's list for it, and add it to the golden set.",
            id="questions.adhoc",
            priority=True,
        ),
        Binding(
            "e",
            "explain",
            "Explain",
            show=False,
            tooltip="Hybrid attribution of the current question: bm25 and vector ranks, RRF terms, pool ceiling.",
            id="results.explain",
            priority=True,
        ),
        Binding(
            "c",
            "compare",
            "Compare",
            show=False,
            tooltip="Compare two retrievers: win/tie/loss, randomisation p-value, bootstrap 95% interval.",
            id="metrics.compare",
            priority=True,
        ),
        Binding(
            "r",
            "curve",
            "Recall curve",
            show=False,
            tooltip="Recall@k for k = 1..depth per retriever, as a plot.",
            id="metrics.curve",
            priority=True,
        ),
        Binding(
            "g",
            "agreement",
            "Agreement",
            show=False,
            tooltip="The evidence rule against the hand grades: confusion table, kappa, disagreements.",
            id="labels.agreement",
            priority=True,
        ),
        Binding(
            "d",
            "diagnostics",
            "Diagnostics",
            show=False,
            tooltip="Chunking diagnostics: straddling and multi-match evidence, truncated chunks, token histogram.",
            id="corpus.diagnostics",
            priority=True,
        ),
    ]

    def __init__(self, controller: Controller) -> None:
        """The screen of the app whose state ``controller`` holds (read here, never changed)."""
        super().__init__(id="main")
        self.controller = controller
        self.retrievers = controller.retrievers
        #: The question shown in the result lists.
        self.current_qid: str | None = None
        #: The retriever whose highlighted chunk the chunk view shows.
        self.active_retriever = self.retrievers[0] if self.retrievers else ""
        #: The filter text ("" for none) and its parsed form.
        self.filter_text = ""
        self._filter = QuestionFilter()
        #: Whether the question list is sorted worst-first.
        self.sorted_worst_first = False
        #: The question ids in the list, in list order.
        self.visible_ids: list[str] = []
        #: Lines shown under the metric table for a while (how the last grade moved nDCG).
        self.change_notes: list[str] = []
        self._note_token = 0
        #: True once the widgets exist.
        self.composed = False
        self._filter_timer: Timer | None = None
        #: Why each question was missed (computed per question when first shown; None: not yet).
        self._why: WhyIndex | None = None
        #: Changes made while another screen was on top, applied when this one is shown again.
        self._pending: list[Changed] = []
        #: Pool order of the judging walk (``n``), and the last pair it went to.
        self.queue_order: PoolOrder = "rank"
        self._walk: JudgingWalk | None = None
        self._walk_position: tuple[str, str] | None = None

    # ---- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """Header; questions and result lists on top; metrics and the chunk view below; status; footer."""
        yield Header(icon="≡")
        with Horizontal(id="top"):
            with Vertical(id="questions"):
                yield TextBox(
                    placeholder=f"{FILTER_SYNTAX}; enter applies",
                    id="filter",
                )
                yield QuestionList(id="question-list")
                yield RankLegend(id="rank-legend")
            with Vertical(id="results"):
                yield Static("", id="question-bar", markup=False)
                with TabStrip(id="tab-strip"):
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
        yield StatusLine(id="status")
        yield Footer(compact=True)

    @property
    def ragtui(self) -> RagtuiApp:
        """The app, typed."""
        return cast("RagtuiApp", self.app)

    def on_mount(self) -> None:
        """Follow the app's changes and status; start in the layout that fits."""
        self._apply_layout(self.app.size.width, self.app.size.height)
        self._set_active(self.active_retriever)
        self.ragtui.changed.subscribe(self, self.on_changed, immediate=True)
        self.ragtui.status_changed.subscribe(self, self.status_line.show, immediate=True)
        self.status_line.show(self.ragtui.status)
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)
        self.composed = True
        if self.ws is not None:  # the first load reported before the screen was ready
            self.on_changed(Changed("loaded"))
            if self.controller.embedding_progress is not None:
                self.on_changed(Changed("progress"))
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
            self.refresh_all()

    def _apply_layout(self, width: int, height: int) -> None:
        """Compact below 110x30: one result list at a time, with tabs (short below 34 rows: a
        smaller bottom row); below 100 columns a shorter footer."""
        compact = width < COMPACT_WIDTH or height < COMPACT_HEIGHT
        if compact != self.has_class("-compact"):
            self.set_class(compact, "-compact")
            self.refresh_metrics()
            self.update_progress_line()
            if compact:
                self._scroll_tab_into_view()
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
        """The keys the footer lists: below ``FULL_FOOTER_WIDTH`` columns not those of
        ``WIDE_FOOTER_ONLY`` (the help lists them; Textual's key panel too), so that the footer
        fits 80 columns with a filter on and a result list focused."""
        bindings = super().active_bindings
        if not self.has_class("-narrow-footer"):
            return bindings
        return {
            key: active._replace(binding=replace(active.binding, show=False))
            if active.binding.id in WIDE_FOOTER_ONLY
            else active
            for key, active in bindings.items()
        }

    # ---- access ------------------------------------------------------------------------------

    @property
    def ws(self) -> Workspace | None:
        """The loaded workspace, or None while loading."""
        ws = self.controller.workspace
        return ws if ws is not None and ws.evaluation is not None else None

    @property
    def status(self) -> dict[str, str]:
        """Readiness of each retriever: ready, pending or failed."""
        return self.controller.retriever_status

    @property
    def question_list(self) -> QuestionList:
        """The question list."""
        return self.query_one(QuestionList)

    def result_list(self, name: str) -> ResultList:
        """The result list of one retriever."""
        return self.query_one("#" + widget_id("results", name), ResultList)

    def pane(self, name: str) -> ResultPane:
        """The pane of one retriever."""
        return self.query_one("#" + widget_id("pane", name), ResultPane)

    @property
    def metrics(self) -> MetricsPanel:
        """The metric panel."""
        return self.query_one(MetricsPanel)

    @property
    def chunk_view(self) -> ChunkView:
        """The chunk view."""
        return self.query_one(ChunkView)

    @property
    def status_line(self) -> StatusLine:
        """The status line."""
        return self.query_one(StatusLine)

    def _ready(self, name: str) -> bool:
        """Whether a retriever's rankings are in the evaluation."""
        ws = self.ws
        return ws is not None and ws.evaluation is not None and name in ws.evaluation.per_question

    def why(self) -> WhyIndex:
        """Why each question was missed, by every shown retriever (each question computed when
        first asked for)."""
        ws = self.ws
        assert ws is not None
        if self._why is None or self._why.ws is not ws or self._why.k != ws.settings.k:
            self._why = WhyIndex(ws, lazy=True)
        return self._why

    def _question_view(self, ws: Workspace) -> QuestionView:
        shown = [n for n in self.retrievers if self._ready(n)]
        cause_of: str | None = next((n for n in ("hybrid", "vector", "bm25") if n in shown), None)
        if cause_of is None and shown:
            cause_of = shown[0]
        return QuestionView(
            ws,
            self.visible_ids,
            self.status,
            self.retrievers,
            self.controller.baseline_deltas(),
            frozenset(ws.disputed_questions()),
            self.why() if cause_of is not None else None,
            cause_of,
        )

    # ---- what the app changed ----------------------------------------------------------------

    def on_changed(self, change: Changed) -> None:
        """Redraw what a change touched (the app calls this after every change it made). While
        another screen is on top (the judging view), the changes wait until this one is shown again."""
        if not self.composed:
            return
        ws = self.ws
        if ws is None:
            return
        if covered(self) and change.kind not in ("loaded", "progress"):
            self._pending.append(change)
            return
        self._apply_change(change)

    def on_screen_resume(self) -> None:
        """Shown again: apply what changed meanwhile (one full redraw when several did)."""
        self.status_line.show(self.ragtui.status)
        pending, self._pending = self._pending, []
        if not pending or self.ws is None:
            return
        self._why = None
        if any(c.kind in ("questions", "retired", "k", "baseline", "retrievers") for c in pending):
            self._walk = None
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
            ws = self.ws
            touched: set[str] = set()
            for change in pending:
                touched |= set(change.questions or ())
            self.question_list.update_view(self._question_view(ws), touched)
            if self.current_qid in touched:
                self._refresh_current()
            self.refresh_metrics()
            self.update_progress_line()

    def _apply_change(self, change: Changed) -> None:
        """Redraw what one change touched."""
        ws = self.ws
        assert ws is not None
        kind = change.kind
        if kind == "grades" and self._why is not None:
            for qid in change.questions or ():
                self._why.update(qid)
        elif kind != "progress":
            self._why = None
        if kind == "loaded":
            self._walk = None
            self._fill_questions(keep=self.current_qid, refill=True)
            self.update_notes()
            self.update_header()
            if self.focused is None:
                self._focus(self.question_list)
        elif kind == "retrievers":
            self._walk = None
            self.update_notes()
            self.update_header()
            self.hide_progress()
            self.refresh_all()
        elif kind == "grades":
            self._grades_changed(change)
        elif kind == "labels-reloaded":
            for qid in change.questions or ():
                self.question_list.update_view(self._question_view(ws), {qid})
            if change.questions is None or self.current_qid in change.questions:
                self._refresh_current()
            self.refresh_metrics()
            self.update_progress_line()
        elif kind == "questions":
            self._walk = None
            self._clear_filter_text()
            added = next(iter(change.questions or ()), None)
            self._fill_questions(keep=added)
            self.update_header()
        elif kind == "retired":
            self._walk = None
            self.question_list.update_view(self._question_view(ws), set(change.questions or ()))
            self._refresh_current()
            self.refresh_metrics()
            self.update_progress_line()
        elif kind in ("k", "baseline"):
            self._walk = None
            self._fill_questions(keep=self.current_qid, refill=True)
            self.refresh_all()
        elif kind == "status":
            self.update_header()
        elif kind == "progress":
            progress = self.controller.embedding_progress
            if progress is None:
                self.hide_progress()
            else:
                self.show_progress(*progress, self.ragtui.progress_rate)

    def _grades_changed(self, change: Changed) -> None:
        """A label was saved or undone: its question's row, the lists, titles, chunk view, metrics."""
        ws = self.ws
        assert ws is not None
        qids = set(change.questions or ())
        self.question_list.update_view(self._question_view(ws), qids)
        if self.current_qid in qids:
            self._refresh_current(change.chunk)
        k = ws.settings.k
        lines = [f"Δ {qid} {ndcg_moves(change.moves, k)}" for qid in sorted(qids)]
        self._show_change_note(lines)
        self.update_progress_line()

    def _refresh_current(self, chunk: str | None = None) -> None:
        """The current question's numbers changed (one chunk's grade, when ``chunk`` is given): the
        lists, titles, chunk view and question bar."""
        ws = self.ws
        if ws is None or self.current_qid is None:
            return
        for name in self.retrievers:
            results = self.result_list(name)
            if results.qid != self.current_qid or not self._ready(name):
                continue
            if chunk is not None:
                results.refresh_chunk(chunk)  # one row: the others' cells did not change
            else:
                results.update_view(
                    ResultView(ws, self.current_qid, ws.ranking(name, self.current_qid))
                )
        self._update_titles()
        self._update_chunk_view()
        self.select_question_bar()

    def refresh_all(self) -> None:
        """k, the retrievers or the theme changed: every number, mark and style on screen."""
        ws = self.ws
        if ws is None:
            return
        self.question_list.update_view(self._question_view(ws))
        if self.current_qid is not None:
            for name in self.retrievers:
                self._show_list(name, keep_cursor=True)
        self._update_titles()
        self._update_chunk_view()
        self.refresh_metrics()
        self.update_header()
        self.update_progress_line()

    def update_notes(self) -> None:
        """The note of each pane: loading, embedding progress, or why it is unavailable."""
        for name in self.retrievers:
            state = self.status.get(name, "ready")
            if state == "failed":
                reason = self.controller.retriever_errors.get(name, "")
                self.pane(name).set_note(f"{name} unavailable: {reason}")
            elif not self._ready(name):
                ws = self.ws
                doing = "asking it" if ws is not None and name in ws.live else "embedding chunks"
                self.pane(name).set_note(f"{name}: {doing}… the list fills in when ready")
            else:
                self.pane(name).set_note(self._own_note(name))

    def _own_note(self, name: str) -> str | None:
        """A live retriever's note when it returned passages of its own: they count for it alone."""
        ws = self.ws
        counts = ws.passages.get(name) if ws is not None else None
        if ws is None or ws.evaluation is None or counts is None or not counts.own:
            return None
        definition = ws.evaluation.recall_definition(name)
        recall = (
            "recall counts the evidence strings found"
            if definition == "evidence"
            else "recall is over the judged passages"
        )
        plural = "s" if counts.own != 1 else ""
        return f"{name}: {counts.own} passage{plural} of its own, judged for {name} alone; {recall}"

    def update_header(self) -> None:
        """The subtitle: data, sizes, k and depth, and read-only when labels cannot be saved."""
        ws = self.ws
        if ws is None:
            return
        settings = ws.settings
        source = settings.beir or settings.corpus
        parts = [
            visible_line(source.name) if source is not None else "corpus",
            f"{len(ws.questions)} questions",
            f"{len(ws.chunks)} chunks",
            f"k={settings.k}",
            f"depth {settings.depth}",
        ]
        for name, counts in ws.passages.items():
            # What a live retriever returned: passages mapped onto ragtui's chunks, passages of its own.
            if counts.mapped or counts.own:
                parts.append(f"{visible_line(name)} {counts.mapped} mapped, {counts.own} own")
        if ws.labels.read_only:
            parts.append("labels read-only")
        self.sub_title = " · ".join(parts)

    # ---- the question list -------------------------------------------------------------------

    def _fill_questions(self, keep: str | None = None, refill: bool = False) -> None:
        """Fill the question list from the filter and the order, keeping ``keep`` if shown; after a
        new order the cursor goes to the first row."""
        ws = self.ws
        if ws is None:
            return
        qids = filter_questions(ws, self._filter, why=self.why() if self._filter.causes else None)
        if self.sorted_worst_first:
            qids = worst_first(ws, qids)
        self.visible_ids = qids
        self._walk = None
        target = keep if keep is not None and keep in qids else (qids[0] if qids else None)
        self.question_list.show(self._question_view(ws), target)
        self._update_list_title()
        if target is not None and (target != self.current_qid or refill):
            self.select_question(target)
            return
        if target is None:
            self.select_question(None)
        # The same question in another list (or none): the judged count is of the list shown.
        self.update_progress_line()

    def _update_list_title(self) -> None:
        """``questions 12/68 · miss:hybrid · worst first · Δ vs NAME``."""
        ws = self.ws
        if ws is None:
            return
        count = len(self.visible_ids)
        title = (
            f"questions {count}"
            if not self.filter_text
            else f"questions {count}/{len(ws.questions)}"
        )
        if self.filter_text:
            title += f" · {self.filter_text}"
        if self.sorted_worst_first:
            title += " · worst first"
        baseline = self.controller.baseline
        if baseline is not None:
            title += f" · Δ vs {baseline.name}"
        set_frame_text(self.query_one("#questions"), title)

    @on(QuestionList.LegendChanged)
    def _legend_changed(self, event: QuestionList.LegendChanged) -> None:
        """Show the line naming the rank headings that do not name their retriever."""
        self.query_one(RankLegend).show(event.legend)

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
        self.change_notes = []
        ws = self.ws
        bar = self.query_one("#question-bar", Static)
        if ws is None or qid is None:
            bar.update("no question matches the filter" if ws is not None else "")
            for name in self.retrievers:
                self.result_list(name).show(None)
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
        old = bar.content
        if isinstance(old, Text) and old == line:
            return  # a grade changed, the bar did not: no repaint
        # The same text with other styles: repaint without a new layout.
        bar.update(line, layout=not (isinstance(old, Text) and old.plain == line.plain))

    def _show_list(self, name: str, keep_cursor: bool = False) -> None:
        """Fill one result list with the current question's ranking (empty while not ready)."""
        ws = self.ws
        results = self.result_list(name)
        if ws is None or self.current_qid is None or not self._ready(name):
            results.show(None)
            return
        view = ResultView(ws, self.current_qid, ws.ranking(name, self.current_qid))
        if keep_cursor and results.qid == self.current_qid:
            results.update_view(view)
        else:
            results.show(view)

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
        moved = False
        for name in self.retrievers:
            rank = self._first_rank_text(name)
            title = f"{name} · first relevant {rank}"
            evaluation = ws.evaluation if ws is not None else None
            qid = self.current_qid
            if (
                evaluation is not None
                and qid is not None
                and self._ready(name)
                and qid in evaluation.evaluated
            ):
                value = evaluation.per_question[name][qid].ndcg
                title += f" · nDCG@{evaluation.k} {fmt(value)}"
            set_frame_text(self.pane(name), title)
            tab = self.query_one("#" + widget_id("tab", name), TabLabel)
            # The tabs show only in the compact layout: elsewhere no new layout.
            moved |= tab.show(rank, layout=self.has_class("-compact"))
        if moved and self.has_class("-compact"):
            self._scroll_tab_into_view()  # the tabs changed width: keep the active one in view

    # ---- result lists and the chunk view -------------------------------------------------------

    def _set_active(self, name: str) -> None:
        """Make one retriever's list the one shown (compact layout) and followed by the chunk view."""
        self.active_retriever = name
        for other in self.retrievers:
            self.pane(other).set_class(other == name, "-active")
            # The same width either way: no new layout.
            self.query_one("#" + widget_id("tab", other), TabLabel).show(
                active=other == name, layout=False
            )
        if self.has_class("-compact"):
            self._scroll_tab_into_view()

    def _scroll_tab_into_view(self) -> None:
        """Keep the active tab in view in the tab strip."""
        if self.active_retriever:
            self.query_one(TabStrip).show_tab(self.active_retriever)

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

    @on(RowList.CursorMoved, "ResultList")
    def _result_highlighted(self, event: RowList.CursorMoved) -> None:
        """The cursor moved in a result list: the chunk view follows the active list."""
        row_list = event.row_list
        if isinstance(row_list, ResultList) and row_list.retriever == self.active_retriever:
            self._update_chunk_view()

    @on(RowList.Chosen, "ResultList")
    def _result_chosen(self, event: RowList.Chosen) -> None:
        """A double click on a chunk: show it full screen."""
        if isinstance(event.row_list, ResultList):
            self._open_chunk(event.row_list)

    def _open_chunk(self, results: ResultList) -> None:
        """Show a list's highlighted chunk full screen."""
        ws = self.ws
        chunk = results.highlighted_chunk
        if ws is not None and chunk is not None:
            from ragtui.tui.screens.chunk import ChunkScreen

            self.app.push_screen(ChunkScreen(ws, results.qid, chunk))

    def _update_chunk_view(self) -> None:
        """Show the active list's highlighted chunk."""
        if not self.retrievers:
            return
        chunk = self.result_list(self.active_retriever).highlighted_chunk
        note = ""
        ws = self.ws
        if ws is not None and chunk is not None and self.current_qid is not None:
            causes = self.why().chunk_causes(self.current_qid, self.active_retriever, chunk)
            if causes:
                note = f"why {self.active_retriever} misses it: {', '.join(causes)}"
        self.chunk_view.show(ws, self.current_qid, chunk, note=note)

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
            self._hide_filter_input()
            self._focus(target)

    # ---- filter and sort ----------------------------------------------------------------------

    def action_filter(self) -> None:
        """Open the filter input."""
        self.query_one("#questions").add_class("-filtering")
        filter_input = self.query_one("#filter", Input)
        filter_input.value = self.filter_text
        self._focus(filter_input)

    def _hide_filter_input(self) -> None:
        """Hide the filter input (the list title keeps showing an active filter)."""
        self.query_one("#questions").remove_class("-filtering")

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        """Filter as the user types, once typing pauses (a change that arrives after the filter was
        applied or closed, as in a burst, is old news: nothing)."""
        if self._filter_timer is not None:
            self._filter_timer.stop()
            self._filter_timer = None
        box = self.query_one("#filter", Input)
        if event.value != box.value or not self.query_one("#questions").has_class("-filtering"):
            return

        def apply() -> None:
            # A term half typed (``why:fu``) leaves the list as it is; enter says why.
            if box.value == event.value and self.query_one("#questions").has_class("-filtering"):
                self.set_filter(event.value, quiet=True)

        self._filter_timer = self.set_timer(FILTER_DELAY, apply)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        """Apply the filter and go back to the list."""
        self.submit_filter(event.value)

    def submit_filter(self, text: str) -> None:
        """Apply the filter and go back to the list (the input stays open when it is not
        understood: the status line says why)."""
        if self._filter_timer is not None:
            self._filter_timer.stop()
            self._filter_timer = None
        if self.set_filter(text):
            self._hide_filter_input()
            self._focus(self.question_list)

    def set_filter(self, text: str, quiet: bool = False) -> bool:
        """Filter the question list ("" shows every question); False when the filter is not
        understood (the list stays and, unless ``quiet``, the status line says why)."""
        text = " ".join(text.split())
        if text == self.filter_text:
            return True
        try:
            parsed = QuestionFilter.parse(text, self.retrievers)
        except ValueError as exc:
            if not quiet:
                self.post_message(Notice(str(exc), error=True))
            return False
        self.filter_text = text
        self._filter = parsed
        self.set_class(bool(text), "-filtered")
        self._fill_questions(keep=self.current_qid)
        self.refresh_metrics()
        self.refresh_bindings()
        return True

    def _clear_filter_text(self) -> None:
        """Forget the filter (the list is refilled by the caller)."""
        self.query_one("#filter", Input).value = ""
        self.filter_text = ""
        self._filter = QuestionFilter()
        self.set_class(False, "-filtered")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Escape (clear filter) only applies while filtering; while the filter input has the focus,
        every other key is typed into it."""
        if action == "clear_filter":
            return bool(self.filter_text) or self.query_one("#questions").has_class("-filtering")
        if isinstance(self.focused, Input):
            # Enter in the filter applies it at once (``action_choose``): a key typed right after
            # it, in the same burst, already goes to the list.
            return action == "cycle_focus" or (action == "choose" and self.focused.id == "filter")
        return True

    # ---- keys that move and grade (priority: one key finished before the next) ----------------

    def action_move(self, step: int) -> None:
        """Up or down in the focused list."""
        focused = self.focused
        if isinstance(focused, RowList):
            focused.move_cursor(focused.cursor + step, announce=False)
            self._cursor_moved(focused)

    def action_page(self, step: int) -> None:
        """Page up or down in the focused list."""
        focused = self.focused
        if isinstance(focused, RowList):
            focused.action_page(step, announce=False)
            self._cursor_moved(focused)

    def action_move_to(self, where: str) -> None:
        """Home or End in the focused list."""
        focused = self.focused
        if isinstance(focused, RowList):
            focused.move_cursor(0 if where == "first" else focused.row_count - 1, announce=False)
            self._cursor_moved(focused)

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

    def _cursor_moved(self, row_list: RowList) -> None:
        """Follow a list's cursor now: a question shows its lists, a chunk the chunk view."""
        if isinstance(row_list, QuestionList):
            qid = row_list.current_qid
            if qid is not None and qid != self.current_qid:
                self.select_question(qid)
        elif isinstance(row_list, ResultList) and row_list.retriever == self.active_retriever:
            self._update_chunk_view()

    def action_clear_filter(self) -> None:
        """Show every question again and close the filter input."""
        if self._filter_timer is not None:
            self._filter_timer.stop()
            self._filter_timer = None
        self.query_one("#filter", Input).value = ""
        self.set_filter("")
        self._hide_filter_input()
        self._focus(self.question_list)
        self.refresh_bindings()

    def action_sort(self) -> None:
        """Toggle worst-first order (a snapshot: grades do not reorder the list under the cursor)."""
        self.set_sort(not self.sorted_worst_first)

    def set_sort(self, worst_first_order: bool) -> None:
        """Sort worst-first, or back to golden-set order; the cursor goes to the first row."""
        self.sorted_worst_first = worst_first_order
        self._fill_questions(keep=None)

    # ---- metrics --------------------------------------------------------------------------------

    def refresh_metrics(self) -> None:
        """Redraw the metric panel."""
        ws = self.ws
        if ws is None or not self.composed:
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

    def _show_change_note(self, lines: list[str]) -> None:
        """Show lines under the metric table for a few seconds."""
        self.change_notes = lines
        self._note_token += 1
        token = self._note_token
        self.refresh_metrics()

        def clear() -> None:
            if self._note_token == token:
                self.change_notes = []
                self.refresh_metrics()

        self.set_timer(CHANGE_NOTE_SECONDS, clear)

    # ---- the judging walk (n) -------------------------------------------------------------------

    def walk(self) -> JudgingWalk | None:
        """The judging walk over the questions the list shows, in its order (built when needed)."""
        ws = self.ws
        if ws is None:
            return None
        # Built again whenever the list changes (``_fill_questions``, a retirement, a reload set
        # ``_walk`` to None), so no key compares the whole list.
        if self._walk is None or self._walk.ws is not ws:
            retired = ws.retired_ids
            qids = (
                [q for q in self.visible_ids if q not in retired] if retired else self.visible_ids
            )
            self._walk = JudgingWalk(ws, qids, self.queue_order)
        return self._walk

    def set_queue_order(self, order: PoolOrder) -> None:
        """Rank order or the seeded random order for ``n``."""
        self.queue_order = order
        self._walk = None
        self._walk_position = None
        self.update_progress_line()
        self.post_message(
            Notice(
                "Judging queue: random order (seeded), so position does not bias the judge."
                if order == "random"
                else "Judging queue: highest-ranked first."
            )
        )

    def progress_text(self) -> str:
        """``judged 12/351 · this question 3/6`` (hand grades over the pooled top k of the list)."""
        walk = self.walk()
        if walk is None:
            return ""
        totals = walk.totals()
        text = f"judged {totals}"
        if walk.queue.person is not None:  # several people grade: this annotator's own queue
            text += f" by {visible_line(walk.queue.person)}"
        if self.current_qid is not None:
            count = walk.count(self.current_qid)
            compact = self.has_class("-compact")
            this = f" · this {count}" if compact else f" · this question {count}"
            # Whose queue it is comes first: in a narrow frame the question's count gives way.
            room = self.query_one("#questions").size.width - 6 if compact else 0
            if room <= 0 or len(text + this) <= room:
                text += this
        if self.queue_order == "random":
            text += " · random order"
        return text

    def update_progress_line(self) -> None:
        """Show the judging progress under the question list."""
        if self.composed and self.ws is not None:
            set_frame_text(self.query_one("#questions"), subtitle=self.progress_text())

    def action_next_unjudged(self) -> None:
        """Jump to the next unjudged pooled chunk (in the list's order) and highlight it in the list
        that ranked it best (the focused one when it has it)."""
        walk = self.walk()
        if walk is None:
            return
        position = self._walk_position
        if position is None or position[0] != self.current_qid:
            position = (self.current_qid, "\0") if self.current_qid is not None else None
        entry = walk.next_unjudged(position)
        if entry is None:
            self.post_message(Notice("Every pooled chunk of the questions shown has a hand grade."))
            return
        self._walk_position = entry.key
        if entry.question != self.current_qid:
            self.question_list.select_qid(entry.question)
            self.select_question(entry.question)
        focused = self.focused
        name: str | None = None
        if isinstance(focused, ResultList) and focused.retriever in entry.retrievers:
            name = focused.retriever
        else:
            ranked = [
                (rank, self.retrievers.index(n), n)
                for n, rank in entry.ranks
                if n in self.retrievers
            ]
            name = min(ranked)[2] if ranked else None
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
        question = ws.question_by_id[self.current_qid]
        self.app.post_message(RetireRequested(question.id, not question.retired))

    def action_judge(self) -> None:
        """The judging view over the questions shown, in their order, starting here."""
        from ragtui.tui.screens.judging import JudgingScreen

        ws = self.ws
        if ws is None or self.current_qid is None:
            self.post_message(Notice("No question is shown: nothing to judge."))
            return
        focused = self.focused
        chunk = focused.highlighted_chunk if isinstance(focused, ResultList) else None
        shown = [n for n in self.retrievers if self._ready(n)]
        qids = [q for q in self.visible_ids if not ws.question_by_id[q].retired]
        adjudicate = self._filter.disputed
        self.app.push_screen(
            JudgingScreen(ws, qids, shown, (self.current_qid, chunk), adjudicate=adjudicate)
        )

    def action_adjudicate(self) -> None:
        """The adjudication pass: the judging view over the disputed pairs of the questions shown."""
        from ragtui.tui.screens.judging import JudgingScreen

        ws = self.ws
        if ws is None:
            return
        qids = [q for q in self.visible_ids if not ws.question_by_id[q].retired]
        if not ws.disputed_pairs():
            self.post_message(Notice("No pair is disputed: the annotators agree everywhere."))
            return
        shown = [n for n in self.retrievers if self._ready(n)]
        self.app.push_screen(JudgingScreen(ws, qids, shown, None, adjudicate=True))

    def action_adhoc(self) -> None:
        """The ad-hoc query screen."""
        from ragtui.tui.screens.adhoc import AdhocScreen

        ws = self.ws
        if ws is not None:
            self.app.push_screen(AdhocScreen(ws, [n for n in self.retrievers if self._ready(n)]))

    def action_explain(self) -> None:
        """Hybrid attribution of the current question."""
        from ragtui.tui.screens.reports import explain_screen

        ws = self.ws
        if ws is None or self.current_qid is None:
            return
        if "vector" not in ws.rankings or "bm25" not in ws.rankings:
            self.post_message(
                Notice("Hybrid attribution needs bm25 and vector rankings (still embedding?).")
            )
            return
        self.app.push_screen(explain_screen(ws, self.current_qid, self.why()))

    def action_compare(self, a: str | None = None, b: str | None = None) -> None:
        """Compare two retrievers (default: bm25 against hybrid, or the first two shown)."""
        from ragtui.tui.screens.reports import compare_screen

        ws = self.ws
        if ws is None:
            return
        names = ws.retrievers
        if len(names) < 2:
            self.post_message(Notice("Comparing needs two retrievers with rankings."))
            return
        if a is None or b is None:
            a, b = ("bm25", "hybrid") if {"bm25", "hybrid"} <= set(names) else (names[0], names[1])
        self.app.push_screen(compare_screen(ws, a, b))

    def action_curve(self) -> None:
        """Recall@k curves (over the filtered questions when a filter is on)."""
        from ragtui.tui.screens.reports import curve_screen

        ws = self.ws
        if ws is not None:
            self.app.push_screen(
                curve_screen(ws, list(self.visible_ids) if self.filter_text else None)
            )

    def action_slices(self) -> None:
        """Every metric per slice."""
        from ragtui.tui.screens.reports import slices_screen

        ws = self.ws
        if ws is not None:
            self.app.push_screen(slices_screen(ws))

    def action_agreement(self) -> None:
        """The agreement report."""
        from ragtui.tui.screens.reports import agreement_screen

        ws = self.ws
        if ws is not None:
            self.app.push_screen(agreement_screen(ws))

    def action_diagnostics(self) -> None:
        """The chunking diagnostics."""
        from ragtui.tui.screens.reports import diagnostics_screen

        ws = self.ws
        if ws is not None:
            self.app.push_screen(diagnostics_screen(ws))

    # ---- embedding progress ----------------------------------------------------------------------

    def show_progress(self, done: int, total: int, rate: str = "") -> None:
        """Show embedding progress (total 0: the model is still loading)."""
        row = self.query_one("#progress-row")
        row.display = True
        bar = self.query_one("#progress", ProgressBar)
        label = self.query_one("#progress-label", Label)
        if total <= 0 or done <= 0:
            label.update(f"loading the embedding model ({total} texts to embed)…")
            bar.update(total=None)
        else:
            label.update(f"embedding {done}/{total} texts{rate}")
            bar.update(total=total, progress=done)

    def hide_progress(self) -> None:
        """Hide the progress row."""
        self.query_one("#progress-row").display = False
