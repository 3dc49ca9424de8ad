"""A retriever's ranked chunks for the current question, with grades and where they came from, drawn
only when visible (Line API)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.geometry import Size
from textual.strip import Strip
from textual.widgets import Static

from ragtui.core.data.golden import passage_start
from ragtui.core.retrieval.base import Ranking
from ragtui.core.text import visible_line
from ragtui.core.workspace import SOURCE_HAND, Workspace
from ragtui.tui.ids import widget_id
from ragtui.tui.messages import GradeRequested, Notice
from ragtui.tui.widgets.row_list import Cell, ColumnSpec, RowList, shorten_middle
from ragtui.tui.widgets.text import (
    DISPUTED_MARK,
    JUDGED_MARK,
    RELEVANT_MARK,
    fmt_score,
    set_frame_text,
)

#: Below this width the grade column is three characters (``●2e``) and the score goes.
NARROW = 64
#: The widest chunk id column (longer ids are shortened in the middle, keeping ``#n``).
MAX_CHUNK_WIDTH = 28
#: Characters of a chunk's text kept for its snippet (the passage that matched).
SNIPPET_CHARS = 240


def _grade_bindings() -> list[Binding]:
    """0-9 give a grade; only 0 shows in the footer, as "0-9". At priority, so the app runs each as
    it arrives, after the keys before it (see ``MainScreen``)."""
    bindings = [
        Binding(
            "0",
            "grade(0)",
            "Grade",
            key_display="0-9",
            tooltip="Give the highlighted chunk this grade for the current question (saved at once).",
            id="grade.0",
            priority=True,
        )
    ]
    bindings += [
        Binding(
            str(grade),
            f"grade({grade})",
            f"Grade {grade}",
            show=False,
            tooltip=f"Give the highlighted chunk grade {grade} for the current question.",
            id=f"grade.{grade}",
            priority=True,
        )
        for grade in range(1, 10)
    ]
    return bindings


@dataclass(frozen=True)
class ResultView:
    """What a list shows: the workspace, the question and its ranking by this retriever."""

    ws: Workspace
    qid: str
    ranking: Ranking


def snippet(ws: Workspace, qid: str, cid: str) -> str:
    """The passage of a chunk that matched the question (its evidence, else the densest question
    terms), on one line, control characters made visible."""
    chunk = ws.passages.by_id.get(cid)
    if chunk is None:
        return ""
    question = ws.questions.by_id.get(qid)
    start, _ = (
        passage_start(chunk.text, question.evidence, question.text) if question else (0, "start")
    )
    text = chunk.text[start : start + SNIPPET_CHARS]
    return visible_line(" ".join(text.split()))


class ResultList(RowList):
    """One retriever's ranking: rank, grade and its source, chunk id, score, and the matching passage."""

    STYLE_PREFIX = "result-list"
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "result-list--relevant",
        "result-list--judged",
        "result-list--hand",
        "result-list--beyond-k",
    }
    """Styles of a relevant row, a judged-not-relevant grade, a hand grade and a rank beyond k."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *_grade_bindings(),
        Binding(
            "backspace",
            "ungrade",
            "Ungrade",
            tooltip="Remove the hand grade of the highlighted chunk (the evidence rule applies again).",
            id="grade.remove",
            priority=True,
        ),
        Binding(
            "enter",
            "choose",
            "Chunk",
            show=False,
            tooltip="Show the highlighted chunk full screen.",
            id="results.chunk",
        ),
    ]

    def __init__(self, retriever: str, *, id: str | None = None) -> None:
        """An empty list for ``retriever``."""
        super().__init__(id=id)
        #: The retriever whose ranking this list shows.
        self.retriever = retriever
        self.view: ResultView | None = None
        self._narrow = False
        #: Rows drawn ahead by ``prepare``: (question, ranking, columns, width and style, rows).
        self._prepared: tuple[str, Ranking, tuple[ColumnSpec, ...], object, dict[int, Strip]] | None
        self._prepared = None

    @property
    def qid(self) -> str | None:
        """The question whose ranking is shown."""
        return self.view.qid if self.view is not None else None

    def show(self, view: ResultView | None) -> None:
        """Show a ranking (None: empty), the cursor on the first chunk (its rows as drawn ahead
        by ``prepare``, when they were for this ranking, at these columns, width and style)."""
        self.view = view
        self._configure()
        self.set_row_count(len(view.ranking) if view else 0, 0)
        prepared, self._prepared = self._prepared, None
        if view is not None and prepared is not None:
            qid, ranking, columns, drawn, rows = prepared
            same = (qid, columns, drawn) == (view.qid, self.columns, self._drawn_with)
            if same and ranking == view.ranking:
                self._cache.update(rows)

    def update_view(self, view: ResultView) -> None:
        """The same ranking with new grades or k: redraw every row, keep the cursor."""
        same = self.view is not None and self.view.ranking == view.ranking
        self.view = view
        if same:
            self.refresh_rows()
        else:
            self._configure()
            self.set_row_count(len(view.ranking))

    @property
    def highlighted_chunk(self) -> str | None:
        """The id of the chunk under the cursor, or None when the list is empty."""
        if self.view is None or not self.row_count:
            return None
        return self.view.ranking[self.cursor][0]

    def cell(self, cid: str, column: str) -> str:
        """What a chunk's row shows in a column (``rank``, ``grade``, ``chunk``, ``score``, ``passage``)."""
        assert self.view is not None
        index = [c for c, _ in self.view.ranking].index(cid)
        return self.cell_text(index, column)

    def refresh_chunk(self, cid: str) -> None:
        """A chunk's grade changed: redraw its row only."""
        if self.view is None:
            return
        for index, (chunk, _) in enumerate(self.view.ranking):
            if chunk == cid:
                self.refresh_row(index)

    def select_chunk(self, cid: str) -> bool:
        """Put the cursor on a chunk; False when this list does not have it."""
        if self.view is None:
            return False
        for index, (chunk, _) in enumerate(self.view.ranking):
            if chunk == cid:
                self.move_cursor(index)
                return True
        return False

    # ---- columns and rows ---------------------------------------------------------------------------

    def _configure(self) -> None:
        self.set_columns(self._columns_for(self.view))

    def _columns_for(self, view: ResultView | None) -> list[ColumnSpec]:
        """The columns at this width for ``view``'s ranking (the chunk column fits its ids)."""
        width = self.scrollable_content_region.width or self.size.width or 60
        self._narrow = width < NARROW
        ids = [cid for cid, _ in view.ranking] if view else []
        chunk_width = min(
            MAX_CHUNK_WIDTH, max((len(c) for c in ids), default=5), max(8, width // 3)
        )
        rank_width = max(2, len(str(len(ids))))
        grade = ColumnSpec("grd", 4, key="grade") if self._narrow else ColumnSpec("grade", 15)
        columns = [
            ColumnSpec("#", rank_width, "right", "rank"),
            grade,
            ColumnSpec("chunk", chunk_width),
        ]
        if not self._narrow:
            columns.append(ColumnSpec("score", 6, "right"))
        used = sum(c.width + 1 for c in columns)
        columns.append(ColumnSpec("passage", max(4, width - used)))
        return columns

    def row_cells(self, index: int) -> list[Cell]:
        """The cells of one ranked chunk."""
        assert self.view is not None
        return self._cells(self.view, index, self.columns)

    def _cells(self, view: ResultView, index: int, columns: Sequence[ColumnSpec]) -> list[Cell]:
        ws = view.ws
        cid, score = view.ranking[index]
        rank = index + 1
        grade, source = ws.grades.grade_source(view.qid, cid)
        relevant = grade is not None and grade >= ws.settings.threshold
        row_style = "relevant" if relevant else ""
        if grade is None:
            grade_cell = Cell(" –" if self._narrow else "  –")
        else:
            mark = RELEVANT_MARK if relevant else JUDGED_MARK
            style = "hand" if source == SOURCE_HAND else ("relevant" if relevant else "judged")
            text = (
                f"{mark}{grade}{(source or '')[:1]}" if self._narrow else f"{mark} {grade} {source}"
            )
            if ws.grades.disputed(view.qid, cid):  # annotators disagree and nobody adjudicated yet
                text += DISPUTED_MARK if self._narrow else f" {DISPUTED_MARK}"
            grade_cell = Cell(text, style)
        rank_style = "beyond-k" if rank > ws.settings.k else row_style
        cells = [
            Cell(str(rank), rank_style),
            grade_cell,
            Cell(shorten_middle(visible_line(cid), columns[2].width), row_style),
        ]
        if not self._narrow:
            cells.append(Cell(fmt_score(score), row_style))
        cells.append(Cell(snippet(ws, view.qid, cid), row_style))
        return cells

    def prepare(self, view: ResultView) -> None:
        """Draw ahead the rows ``show(view)`` shows first (of the question the next key is likely
        to show): ``show`` then takes them instead of drawing them (``forget_prepared``: a change
        came meanwhile)."""
        drawn, height = self._drawn_with, self.size.height - self.header_height
        if drawn is None or height <= 0:
            return
        columns = self._columns_for(view)
        rows = {
            i: self._cells_strip(self._cells(view, i, columns), *drawn, columns=columns)
            for i in range(min(height, len(view.ranking)))
        }
        self._prepared = (view.qid, view.ranking, tuple(columns), drawn, rows)

    def forget_prepared(self) -> None:
        """Drop the rows drawn ahead (grades, k or the labels changed)."""
        self._prepared = None

    def notify_style_update(self) -> None:
        """A theme may recolour the cells and not the list's background: the rows drawn ahead
        go too."""
        super().notify_style_update()
        self._prepared = None

    # ---- keys -----------------------------------------------------------------------------------------

    def action_grade(self, grade: int) -> None:
        """Ask the app to give the highlighted chunk ``grade`` for the question shown now."""
        self._request(grade)

    def action_ungrade(self) -> None:
        """Ask the app to remove the highlighted chunk's hand grade."""
        self._request(None)

    def _request(self, grade: int | None) -> None:
        chunk = self.highlighted_chunk
        if self.view is None or chunk is None:
            self.post_message(Notice("This list is empty: nothing to grade."))
            return
        # Straight to the app's queue: requests from the three lists are applied in key order.
        self.app.post_message(GradeRequested(self.view.qid, chunk, grade))


class ResultPane(Vertical):
    """A titled frame around one retriever's list, with a note while it is loading or unavailable."""

    def __init__(self, retriever: str) -> None:
        """The pane of ``retriever``."""
        super().__init__(id=widget_id("pane", retriever), classes="result-pane")
        #: The retriever shown.
        self.retriever = retriever
        set_frame_text(self, retriever)

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        """Resized by a layout pass (the question bar above took a row more or less): the pane
        does not scroll, so no second pass (a second frame for the key) follows to set its
        virtual size."""
        return super()._size_updated(size, virtual_size, container_size, layout=False)

    def compose(self) -> ComposeResult:
        """A note line (hidden unless set) above the list."""
        yield Static("", classes="pane-note", markup=False)
        yield ResultList(self.retriever, id=widget_id("results", self.retriever))

    @property
    def results(self) -> ResultList:
        """This pane's list."""
        return self.query_one(ResultList)

    def set_note(self, note: str | None) -> None:
        """Show a note (loading, unavailable) in place of the list, or the list when None."""
        static = self.query_one(".pane-note", Static)
        static.update(visible_line(note or ""))
        # Shown or hidden by its own display: a class on the pane restyled the pane and all it
        # holds (24 ms under cProfile for the three panes when the first load ends at 100,000
        # questions).
        static.display = note is not None
