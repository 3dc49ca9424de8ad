"""The question side of the main screen: the filter box, the question list and the legend of its
rank headings, in a frame whose title counts the questions shown and whose subtitle is the judging
progress over them.

The pane keeps which questions are shown: the filter, the order, the ids in list order, why each
was missed (the rows' cause column and ``why:`` filters), and the judging walk over them (``n`` and
the progress line), built again whenever they change. The screen tells it when to fill the list and
the retrievers' state the rows show, and hears back through messages: ``FilterChanged`` when typing in the filter box pauses or enter submits it, and the
list's own (``RowList.CursorMoved``, ``RowList.Chosen``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input
from textual.widgets.input import Selection

from ragtui.core.analysis.question_filter import (
    FILTER_SYNTAX,
    QuestionFilter,
    filter_questions,
    worst_first,
)
from ragtui.core.analysis.why import WhyIndex
from ragtui.core.text import visible_line
from ragtui.core.workspace import Workspace
from ragtui.core.workspace.judging import PoolEntry, PoolOrder
from ragtui.tui.judging_session import JudgingWalk
from ragtui.tui.messages import Notice
from ragtui.tui.widgets.question_list import QuestionList, QuestionView, RankLegend
from ragtui.tui.widgets.results_pane import is_ready
from ragtui.tui.widgets.text import set_frame_text
from ragtui.tui.widgets.text_box import TextBox

#: Seconds of no typing before the filter is applied.
FILTER_DELAY = 0.2


class QuestionPane(Vertical):
    """The filter box (shown while filtering), the question list and its legend, framed."""

    @dataclass
    class FilterChanged(Message):
        """The filter box holds ``text``: typing paused (``submitted`` False: apply it if the box
        still holds it) or enter submitted it (apply it and go back to the list)."""

        pane: QuestionPane
        text: str
        submitted: bool

        @property
        def control(self) -> QuestionPane:
            """The pane whose filter box it is."""
            return self.pane

    def __init__(self, *, id: str | None = None) -> None:
        """An empty pane; the screen fills the list."""
        super().__init__(id=id)
        #: The filter ("" for none) and its parsed form; whether the list is sorted worst-first.
        self.filter_text = ""
        self.filter = QuestionFilter()
        self.worst_first = False
        self._visible_ids: list[str] = []
        self._typing_timer: Timer | None = None
        #: Why each question was missed (computed per question when first asked for; None: not yet).
        self._why: WhyIndex | None = None
        #: Pool order of the judging walk (``n``), the walk, and the last pair it went to.
        self.queue_order: PoolOrder = "rank"
        self._walk: JudgingWalk | None = None
        self._walk_position: tuple[str, str] | None = None

    def compose(self) -> ComposeResult:
        """The filter box, the list, the legend."""
        # The text is selected when the box opens (``open_filter``), not on its Focus event: that
        # event waits in the box's queue behind nothing the app typed into it, so in a burst it
        # came after the first characters and selected them.
        yield TextBox(
            placeholder=f"{FILTER_SYNTAX}; enter applies", id="filter", select_on_focus=False
        )
        yield QuestionList(id="question-list")
        yield RankLegend(id="rank-legend")

    @property
    def question_list(self) -> QuestionList:
        """The question list."""
        return self.query_one(QuestionList)

    @property
    def filter_box(self) -> TextBox:
        """The filter box."""
        return self.query_one("#filter", TextBox)

    @property
    def visible_ids(self) -> list[str]:
        """The question ids the list shows, in list order."""
        return self._visible_ids

    @visible_ids.setter
    def visible_ids(self, qids: list[str]) -> None:
        self._visible_ids = qids
        self._walk = None

    # ---- which questions, in which order ----------------------------------------------------------

    def set_filter(self, text: str, retrievers: Sequence[str], quiet: bool = False) -> bool | None:
        """Take the filter ``text`` (white space collapsed; "" for none): True when it changed,
        None when it is the filter in use, False when it is not understood (the filter in use stays
        and, unless ``quiet``, the status line says why)."""
        text = " ".join(text.split())
        if text == self.filter_text:
            return None
        try:
            parsed = QuestionFilter.parse(text, retrievers)
        except ValueError as exc:
            if not quiet:
                self.post_message(Notice(str(exc), error=True))
            return False
        self.filter = parsed
        self.filter_text = text
        return True

    def forget_filter(self) -> None:
        """No filter, the filter box emptied (the screen fills the list again)."""
        self.filter_box.value = ""
        self.filter_text = ""
        self.filter = QuestionFilter()

    def fill(
        self,
        ws: Workspace,
        view: Callable[[], QuestionView],
        keep: str | None,
        baseline: str | None,
    ) -> str | None:
        """Fill the list from the filter and the order (``view`` says what the rows show), the
        cursor on ``keep`` when it is listed, else on the row where ``keep`` was (the filter let it
        out after a grade), else on the first row; the question under the cursor (None: no
        question matches)."""
        why = self.why(ws) if self.filter.causes else None
        qids = filter_questions(ws, self.filter, why=why)
        if self.worst_first:
            qids = worst_first(ws, qids)
        before = self._visible_ids
        self.visible_ids = qids  # a new judging walk
        target = qids[0] if qids else None
        if keep is not None and keep in qids:
            target = keep
        elif keep is not None and qids and keep in before:
            target = qids[min(before.index(keep), len(qids) - 1)]
        self.question_list.show(view(), target)
        self.show_title(len(ws.questions), baseline)
        return target

    def let_in_or_out(self, ws: Workspace, qids: Collection[str] | None) -> bool:
        """Whether grades of ``qids`` (None: any question's) changed which questions the filter
        lets through: only a filter that depends on grades (``QuestionFilter.by_grades``), and only
        ``qids`` are looked at."""
        flt = self.filter
        if not flt.by_grades:
            return False
        if qids is None:
            return True
        why = self.why(ws) if flt.causes else None
        passing = set(filter_questions(ws, flt, why=why, among=qids))
        shown = set(self._visible_ids)
        return any((q in passing) != (q in shown) for q in qids)

    def view(
        self,
        ws: Workspace,
        status: Mapping[str, str],
        retrievers: Sequence[str],
        deltas: Mapping[str, float] | None,
    ) -> QuestionView:
        """What the rows show: the ranks of ``retrievers`` (their ``status``), the change against a
        baseline, and the first cause of a miss by hybrid (else vector, bm25, the first ready)."""
        shown = [n for n in retrievers if is_ready(ws, n)]
        cause_of: str | None = next((n for n in ("hybrid", "vector", "bm25") if n in shown), None)
        if cause_of is None and shown:
            cause_of = shown[0]
        return QuestionView(
            ws,
            self._visible_ids,
            status,
            retrievers,
            deltas,
            frozenset(ws.grades.disputed_questions()),
            self.why(ws) if cause_of is not None else None,
            cause_of,
        )

    def why(self, ws: Workspace) -> WhyIndex:
        """Why each question was missed, by every shown retriever (each question computed when
        first asked for)."""
        why = self._why
        if why is None or why.ws is not ws or why.k != ws.settings.k or why.stale:
            why = self._why = WhyIndex(ws, lazy=True)
        return why

    def forget_why(self, regraded: Iterable[str] | None = None) -> None:
        """Grades of the ``regraded`` questions changed: their causes are computed again; None
        (anything else changed): every question's."""
        if regraded is None:
            self._why = None
        elif self._why is not None:
            for qid in regraded:
                self._why.update(qid)

    # ---- the filter box -------------------------------------------------------------------------

    @property
    def filtering(self) -> bool:
        """Whether the filter box is open."""
        return self.has_class("-filtering")

    def open_filter(self, text: str) -> TextBox:
        """Open the filter box holding ``text``, all of it selected (what is typed first replaces
        it); the box, for the screen to focus."""
        self.add_class("-filtering")
        box = self.filter_box
        box.value = text
        box.selection = Selection(0, len(text))
        return box

    def close_filter(self) -> None:
        """Hide the filter box (the title keeps showing an active filter)."""
        self.remove_class("-filtering")

    def holds(self, text: str) -> bool:
        """Whether the filter box is open and holds ``text`` (else a pause in typing is old news)."""
        return self.filtering and self.filter_box.value == text

    def cancel_typing(self) -> None:
        """Forget a pause in typing not reported yet (the filter is applied or cleared now)."""
        if self._typing_timer is not None:
            self._typing_timer.stop()
            self._typing_timer = None

    @on(Input.Changed, "#filter")
    def _typed(self, event: Input.Changed) -> None:
        """Report the filter once typing pauses (a change that arrives after the filter was applied
        or closed, as in a burst, is old news: nothing)."""
        event.stop()
        self.cancel_typing()
        if not self.holds(event.value):
            return

        def paused() -> None:
            # A term half typed (``why:fu``) leaves the list as it is; enter says why.
            if self.holds(event.value):
                self.post_message(self.FilterChanged(self, event.value, submitted=False))

        self._typing_timer = self.set_timer(FILTER_DELAY, paused)

    @on(Input.Submitted, "#filter")
    def _submitted(self, event: Input.Submitted) -> None:
        """Report the filter submitted."""
        event.stop()
        self.post_message(self.FilterChanged(self, event.value, submitted=True))

    @on(QuestionList.LegendChanged)
    def _legend_changed(self, event: QuestionList.LegendChanged) -> None:
        """Show the line naming the rank headings that do not name their retriever."""
        event.stop()
        self.query_one(RankLegend).show(event.legend)

    # ---- the frame ---------------------------------------------------------------------------------

    def show_title(self, total: int, baseline: str | None) -> None:
        """``questions 12/68 · miss:hybrid · worst first · Δ vs NAME``."""
        count = len(self._visible_ids)
        filtered = self.filter_text
        title = f"questions {count}" if not filtered else f"questions {count}/{total}"
        if filtered:
            title += f" · {filtered}"
        if self.worst_first:
            title += " · worst first"
        if baseline is not None:
            title += f" · Δ vs {baseline}"
        set_frame_text(self, title)

    def show_progress(self, ws: Workspace, qid: str | None, compact: bool) -> None:
        """``judged 12/351 · this question 3/6`` under the list (hand grades over the pooled top k
        of the questions shown)."""
        walk = self.walk(ws)
        totals = walk.totals()
        text = f"judged {totals}"
        if walk.queue.person is not None:  # several people grade: this annotator's own queue
            text += f" by {visible_line(walk.queue.person)}"
        if qid is not None:
            count = walk.count(qid)
            this = f" · this {count}" if compact else f" · this question {count}"
            # Whose queue it is comes first: in a narrow frame the question's count gives way.
            room = self.size.width - 6 if compact else 0
            if room <= 0 or len(text + this) <= room:
                text += this
        if self.queue_order == "random":
            text += " · random order"
        set_frame_text(self, subtitle=text)

    # ---- the judging walk (n) -------------------------------------------------------------------------

    def walk(self, ws: Workspace) -> JudgingWalk:
        """The judging walk over the questions shown, in their order (built when needed)."""
        # Built again whenever the list changes (``visible_ids``, ``forget_walk`` after a
        # retirement or a reload), so no key compares the whole list.
        if self._walk is None or self._walk.ws is not ws:
            retired = ws.questions.retired_ids
            qids = self._visible_ids
            self._walk = JudgingWalk(
                ws, [q for q in qids if q not in retired] if retired else qids, self.queue_order
            )
        return self._walk

    def forget_walk(self) -> None:
        """The questions, their grades or k changed: the walk is built again when next needed."""
        self._walk = None

    def set_queue_order(self, order: PoolOrder) -> None:
        """Rank order or the seeded random order for ``n``, from the start (the status line says
        which)."""
        self.queue_order = order
        self._walk = None
        self._walk_position = None
        self.post_message(
            Notice(
                "Judging queue: random order (seeded), so position does not bias the judge."
                if order == "random"
                else "Judging queue: highest-ranked first."
            )
        )

    def next_unjudged(self, ws: Workspace, qid: str | None) -> PoolEntry | None:
        """The next unjudged pooled pair after the last one ``n`` went to (from question ``qid``'s
        start when the cursor left that question); None when every pair has a hand grade."""
        position = self._walk_position
        if position is None or position[0] != qid:
            position = (qid, "\0") if qid is not None else None
        entry = self.walk(ws).next_unjudged(position)
        if entry is not None:
            self._walk_position = entry.key
        return entry
