"""The question list: one row per golden question, drawn only when visible (Line API).

Each row: a mark (✗ some retriever misses a relevant chunk within k, ∅ no relevant chunk), the
id, the first relevant rank of each retriever (one column each, or one character each when the
list is narrow), the change against a baseline run, the question and, when there is room, its
slices.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Static

from ragtui.core.analysis.question_filter import misses_in_top_k
from ragtui.core.analysis.why import CAUSE_MARKS, WhyIndex
from ragtui.core.text import visible_line
from ragtui.core.workspace import Workspace
from ragtui.tui.ids import rank_marks, unclear_marks
from ragtui.tui.messages import Notice
from ragtui.tui.widgets.row_list import Cell, ColumnSpec, RowList, shorten_middle
from ragtui.tui.widgets.text import (
    DISPUTED_MARK,
    FAILURE_MARK,
    MISS_MARK,
    PENDING_MARK,
    RETIRED_MARK,
    SKIPPED_MARK,
    UNAVAILABLE_MARK,
    short_names,
)

#: Readiness of a retriever's rankings: ``ready``, ``pending`` (embedding) or ``failed``.
RetrieverStatus = Mapping[str, str]

#: The question text keeps at least this many characters; rank columns collapse to make room.
MIN_TEXT_WIDTH = 24
#: The widest id column (longer ids are shortened in the middle).
MAX_ID_WIDTH = 10
#: Slices show only when the text column still has this much room beside them.
SLICES_MIN_TEXT = 40
#: Width of the slices column.
SLICES_WIDTH = 20
#: Width of the column with the first cause of a miss (``cut``, ``lex``, ``fuse``...).
WHY_WIDTH = 5


@dataclass(frozen=True)
class QuestionView:
    """What the list shows: the workspace, the questions in list order, readiness, and deltas."""

    ws: Workspace
    qids: Sequence[str]
    status: RetrieverStatus
    retrievers: Sequence[str]
    deltas: Mapping[str, float] | None = None
    disputed: frozenset[str] = frozenset()
    """Questions with a pair the annotators disagree on."""
    why: WhyIndex | None = None
    """Why each question was missed (asked only for the rows drawn)."""
    cause_of: str | None = None
    """The retriever whose first cause of a miss the ``why`` column shows."""


class QuestionList(RowList):
    """Every golden question (filtered and sorted by the screen), with its ranks and marks."""

    STYLE_PREFIX = "question-list"
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "question-list--hit",
        "question-list--late",
        "question-list--miss",
        "question-list--skipped",
    }
    """Styles of a rank within k, beyond k, a miss, and a question with no relevant chunk."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "choose",
            "Results",
            tooltip="Move the focus to the ranked lists of this question.",
            id="questions.results",
        ),
        Binding(
            "0,1,2,3,4,5,6,7,8,9,backspace",
            "grade_hint",
            "Grade",
            show=False,
            tooltip="Grades apply to a chunk: tab to a result list first, or j to judge.",
            id="questions.grade_hint",
        ),
        Binding(
            "s",
            "screen.sort",
            "Sort",
            tooltip="Worst questions first (hybrid nDCG@k), or golden-set order.",
            id="questions.sort",
        ),
    ]

    @dataclass
    class LegendChanged(Message):
        """The rank headings that need a legend changed (another width, other retrievers)."""

        question_list: QuestionList
        legend: str

        @property
        def control(self) -> QuestionList:
            """The list that sent it."""
            return self.question_list

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        """An empty list; ``show`` fills it."""
        super().__init__(id=id, classes=classes)
        self.view: QuestionView | None = None
        self._collapsed = False
        self._show_slices = False
        self._show_why = False
        self._id_width = 2
        #: The rank headings a legend spells out (``m=milvus  5=milvus-e5``), "" when each says
        #: which retriever it stands for.
        self.legend = ""

    # ---- data -----------------------------------------------------------------------------------

    def show(self, view: QuestionView, cursor_qid: str | None = None) -> None:
        """Show these questions (in this order), the cursor on ``cursor_qid`` or the first row."""
        self.view = view
        self._configure()
        self.set_row_count(len(view.qids), self._row_of(cursor_qid) or 0)

    def _row_of(self, qid: str | None) -> int | None:
        """A question's row, or None when it is not listed (a scan in C: no index of 100,000 ids
        is built for the few rows a key touches)."""
        if self.view is None or qid is None:
            return None
        try:
            return self.view.qids.index(qid)
        except ValueError:
            return None

    def update_view(self, view: QuestionView, qids: set[str] | None = None) -> None:
        """The same rows with new numbers: redraw the rows of ``qids`` (None: every row)."""
        self.view = view
        self._configure()
        if qids is None:
            self.refresh_rows()
            return
        for qid in qids:
            index = self._row_of(qid)
            if index is not None:
                self.refresh_row(index)

    @property
    def current_qid(self) -> str | None:
        """The question under the cursor, or None when the list is empty."""
        return self.qid_at(self.cursor)

    def qid_at(self, row: int) -> str | None:
        """The question of a row, or None past either end."""
        if self.view is None or not 0 <= row < min(self.row_count, len(self.view.qids)):
            return None
        return self.view.qids[row]

    def cell(self, qid: str, column: str) -> str:
        """What a question's row shows in a column (``mark``, ``id``, a retriever, ``ranks``,
        ``delta``, ``question``, ``slices``)."""
        index = self._row_of(qid)
        if index is None:
            raise KeyError(qid)
        return self.cell_text(index, column)

    def select_qid(self, qid: str, announce: bool = True) -> bool:
        """Put the cursor on a question's row; False when it is not in the list."""
        index = self._row_of(qid)
        if index is None:
            return False
        self.move_cursor(index, announce=announce)
        return True

    def action_grade_hint(self) -> None:
        """A digit here grades nothing: say where grading happens."""
        self.post_message(Notice("Grades go to a chunk: tab to a result list, then 0-9."))

    # ---- columns ----------------------------------------------------------------------------------

    def _configure(self) -> None:
        """Columns for the width: rank columns collapse and slices go when the text needs room."""
        view = self.view
        if view is None:
            return
        width = self.scrollable_content_region.width or self.size.width or 40
        names = list(view.retrievers)
        id_width = min(MAX_ID_WIDTH, max((len(q) for q in view.qids[:5000]), default=2))
        id_width = max(2, id_width)
        delta = 6 if view.deltas is not None else 0
        full_ranks = 4 * len(names)
        fixed = 2 + id_width + 1 + (delta + 1 if delta else 0)
        collapsed = width - fixed - full_ranks < MIN_TEXT_WIDTH
        ranks = len(names) + 1 if collapsed else full_ranks
        spare = width - fixed - ranks - MIN_TEXT_WIDTH
        if spare < 0:  # very narrow: the id gives way too
            id_width = max(4, id_width + spare)
        text_width = max(8, width - 2 - id_width - 1 - ranks - (delta + 1 if delta else 0))
        self._show_why = view.why is not None and text_width - WHY_WIDTH - 1 >= MIN_TEXT_WIDTH
        if self._show_why:
            text_width -= WHY_WIDTH + 1
        self._show_slices = text_width - SLICES_WIDTH - 1 >= SLICES_MIN_TEXT
        if self._show_slices:
            text_width -= SLICES_WIDTH + 1
        self._collapsed = collapsed
        self._id_width = id_width
        columns = [ColumnSpec(" ", 1, key="mark"), ColumnSpec("id", id_width)]
        headings = rank_marks(names) if collapsed else short_names(names, 3)
        if collapsed:
            heading = "".join(headings.values())
            columns.append(ColumnSpec(heading, max(1, len(names)), key="ranks"))
        else:
            columns += [ColumnSpec(h, 3, "right", n) for n, h in headings.items()]
        self._set_legend(headings)
        if delta:
            columns.append(ColumnSpec("Δ", delta, "right", "delta"))
        if self._show_why:
            columns.append(ColumnSpec("why", WHY_WIDTH, key="why"))
        columns.append(ColumnSpec("question", text_width))
        if self._show_slices:
            columns.append(ColumnSpec("slices", SLICES_WIDTH))
        self.set_columns(columns)

    def _set_legend(self, headings: Mapping[str, str]) -> None:
        """Name the rank columns whose headings do not say it themselves: the list's tooltip gives
        every heading, ``LegendChanged`` the ones a legend line has to spell out (``m=milvus
        5=milvus-e5``)."""
        unclear = unclear_marks(headings)
        legend = "  ".join(f"{mark}={name}" for mark, name in unclear.items())
        tooltip = (
            Text(
                "rank columns: "
                + ", ".join(f"{h} {visible_line(n)}" for n, h in headings.items())
                + (" (a rank above 9 is +)" if self._collapsed else "")
            )
            if unclear
            else None
        )
        if tooltip != self.tooltip:
            self.tooltip = tooltip
        if legend != self.legend:
            self.legend = legend
            self.post_message(self.LegendChanged(self, legend))

    # ---- rows -----------------------------------------------------------------------------------------

    def row_cells(self, index: int) -> list[Cell]:
        """The cells of one question's row."""
        view = self.view
        assert view is not None
        ws = view.ws
        qid = view.qids[index]
        question = ws.questions.by_id[qid]
        evaluation = ws.evaluation
        skipped = evaluation is not None and qid not in evaluation.evaluated
        text_style = "skipped" if skipped else ""
        cells = [
            self._mark(view, qid),
            Cell(shorten_middle(visible_line(qid), self._id_width), text_style),
        ]
        ranks = [self._rank(view, qid, name) for name in view.retrievers]
        if self._collapsed:
            cells.append(_collapse(ranks))
        else:
            cells += ranks
        if view.deltas is not None:
            cells.append(self._delta(view.deltas.get(qid)))
        if self._show_why:
            cells.append(self._why(view, qid))
        cells.append(Cell(visible_line(" ".join(question.text.split())), text_style))
        if self._show_slices:
            cells.append(Cell(visible_line(", ".join(question.slices)), "skipped"))
        return cells

    @staticmethod
    def _rank(view: QuestionView, qid: str, name: str) -> Cell:
        """One retriever's first relevant rank, or a miss, pending or unavailable mark."""
        state = view.status.get(name, "ready")
        evaluation = view.ws.evaluation
        if state == "failed":
            return Cell(UNAVAILABLE_MARK, "skipped")
        if evaluation is None or name not in evaluation.per_question:
            return Cell(PENDING_MARK, "skipped")
        if qid not in evaluation.evaluated:
            return Cell("–", "skipped")
        rank = evaluation.per_question[name][qid].first_relevant_rank
        if rank is None:
            return Cell(MISS_MARK, "miss")
        return Cell(str(rank), "hit" if rank <= evaluation.k else "late")

    @staticmethod
    def _mark(view: QuestionView, qid: str) -> Cell:
        """∅ for a question with no relevant chunk (no judgement, or every grade below the threshold),
        ✗ when a ready retriever misses a relevant chunk in the top k (recall@k below 1: the rule
        of ``miss:``)."""
        evaluation = view.ws.evaluation
        if evaluation is None:
            return Cell(" ")
        if view.ws.questions.by_id[qid].retired:
            return Cell(RETIRED_MARK, "skipped")
        if qid not in evaluation.evaluated:
            return Cell(SKIPPED_MARK, "skipped")
        if qid in view.disputed:
            return Cell(DISPUTED_MARK, "late")
        ready = [v[qid] for name in view.retrievers if (v := evaluation.per_question.get(name))]
        if ready and not ready[0].num_relevant:
            return Cell(SKIPPED_MARK, "skipped")  # judged, but every grade is below the threshold
        if any(misses_in_top_k(values) for values in ready):
            return Cell(FAILURE_MARK, "miss")
        return Cell(" ")

    @staticmethod
    def _why(view: QuestionView, qid: str) -> Cell:
        """The first cause of the shown retriever's miss on this question (blank: no miss)."""
        if view.why is None or view.cause_of is None or view.ws.questions.by_id[qid].retired:
            return Cell("")
        cause = view.why.cause(qid, view.cause_of)
        return Cell(CAUSE_MARKS.get(cause, cause), "miss") if cause else Cell("")

    @staticmethod
    def _delta(change: float | None) -> Cell:
        """The baseline change of a question (blank when not in both runs)."""
        if change is None:
            return Cell("", "skipped")
        if abs(change) < 1e-9:
            return Cell("=", "skipped")
        return Cell(f"{change:+.2f}", "hit" if change > 0 else "miss")


class RankLegend(Static):
    """The line under the question list that names the rank headings which do not name their
    retriever themselves (hidden when every heading does)."""

    DEFAULT_CSS = """
    RankLegend {
        height: auto;
        color: $text-muted;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        """An empty, hidden legend."""
        super().__init__("", id=id, markup=False)
        self.display = False

    def show(self, legend: str) -> None:
        """Show ``legend`` (already made visible), or hide the line when it is empty."""
        self.update(legend)
        self.display = bool(legend)


def _collapse(ranks: list[Cell]) -> Cell:
    """The rank cells as one character each (a rank above 9 is ``+``); the worst style wins."""
    chars = []
    for cell in ranks:
        text = cell.text
        chars.append(text if len(text) == 1 else "+")
    styles = [c.style for c in ranks]
    style = next((s for s in ("miss", "late", "hit", "skipped") if s in styles), "")
    return Cell("".join(chars), style)
