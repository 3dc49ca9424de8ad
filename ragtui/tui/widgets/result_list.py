"""A retriever's ranked chunks for the current question, with grades and where they came from."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Static

from ragtui.core.workspace import Workspace
from ragtui.tui.widgets.table import RowCachedTable
from ragtui.tui.widgets.text import (
    JUDGED_MARK,
    RELEVANT_MARK,
    cell,
    fmt_score,
    foreground,
    one_line,
)

#: Width of the grade column: mark, grade, source ("● 2 evidence").
GRADE_WIDTH = 12


def _grade_bindings() -> list[Binding]:
    """0-9 give a grade; only 0 shows in the footer, as "0-9"."""
    bindings = [
        Binding(
            "0",
            "grade(0)",
            "Grade",
            key_display="0-9",
            tooltip="Give the highlighted chunk this grade for the current question (saved at once).",
            id="grade.0",
        )
    ]
    for grade in range(1, 10):
        bindings.append(
            Binding(
                str(grade),
                f"grade({grade})",
                f"Grade {grade}",
                show=False,
                tooltip=f"Give the highlighted chunk grade {grade} for the current question.",
                id=f"grade.{grade}",
            )
        )
    return bindings


class ResultList(RowCachedTable[Text]):
    """One retriever's ranking: rank, grade and source, chunk id, score, one-line snippet."""

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
        ),
        Binding(
            "enter",
            "open_chunk",
            "Chunk",
            show=False,
            tooltip="Show the highlighted chunk full screen.",
            id="results.chunk",
        ),
    ]

    class GradeRequested(Message):
        """The user asked to give a chunk a grade (None removes the hand grade)."""

        def __init__(self, retriever: str, chunk: str | None, grade: int | None) -> None:
            """Which list, which chunk (None when the list is empty) and which grade."""
            super().__init__()
            self.retriever = retriever
            self.chunk = chunk
            self.grade = grade

    class ChunkRequested(Message):
        """The user asked to see a chunk full screen."""

        def __init__(self, chunk: str) -> None:
            """Which chunk."""
            super().__init__()
            self.chunk = chunk

    def __init__(
        self, retriever: str, *, id: str | None = None, classes: str | None = None
    ) -> None:
        """An empty list for ``retriever``; ``configure`` adds the columns."""
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=False)
        #: The retriever whose ranking this list shows.
        self.retriever = retriever
        #: The question whose ranking is shown.
        self.qid: str | None = None

    def configure(self, chunk_width: int) -> None:
        """Set the columns; the chunk id column is ``chunk_width`` wide."""
        self.clear(columns=True)
        self.add_column(Text("#", justify="right"), width=2, key="rank")
        self.add_column(Text("grade"), width=GRADE_WIDTH, key="grade")
        self.add_column(Text("chunk"), width=chunk_width, key="chunk")
        self.add_column(Text("score", justify="right"), width=6, key="score")
        self.add_column(Text("text"), width=120, key="snippet")

    def _style(self, name: str) -> Style:
        """The rich style of one of this widget's component classes."""
        return foreground(self.get_component_rich_style(f"result-list--{name}"))

    def _cells(self, ws: Workspace, qid: str, rank: int, cid: str, score: float) -> list[Text]:
        """The cells of one ranked chunk."""
        grade, source = ws.grade_source(qid, cid)
        relevant = grade is not None and grade >= ws.settings.threshold
        row_style = self._style("relevant") if relevant else Style()
        if grade is None:
            grade_text = cell("  –")
        else:
            mark = RELEVANT_MARK if relevant else JUDGED_MARK
            grade_text = cell(f"{mark} {grade} {source}", row_style)
            if not relevant:
                grade_text.stylize(self._style("judged"))
            if source == "hand":
                grade_text.stylize(self._style("hand"), 4)
        rank_style = self._style("beyond-k") if rank > ws.settings.k else row_style
        chunk = ws.chunk_by_id.get(cid)
        return [
            cell(str(rank), rank_style, justify="right"),
            grade_text,
            cell(cid, row_style),
            cell(fmt_score(self.retriever, score), row_style, justify="right"),
            cell(one_line(chunk.text) if chunk else "", row_style),
        ]

    def show(self, ws: Workspace, qid: str) -> None:
        """Show this retriever's ranking of a question, the cursor on the first chunk."""
        self.qid = qid
        self.clear()
        for rank, (cid, score) in enumerate(ws.ranking(self.retriever, qid), start=1):
            self.add_row(*self._cells(ws, qid, rank, cid, score), key=cid)
        if self.row_count:
            self.move_cursor(row=0, scroll=True)

    def update_grades(self, ws: Workspace) -> None:
        """Rewrite every row's cells in place by row key (a grade or k changed)."""
        if self.qid is None:
            return
        keys = ("rank", "grade", "chunk", "score", "snippet")
        for rank, (cid, score) in enumerate(ws.ranking(self.retriever, self.qid), start=1):
            if cid not in self.rows:
                continue
            for key, value in zip(keys, self._cells(ws, self.qid, rank, cid, score), strict=True):
                # Only changed cells: every update_cell makes the table re-render all its rows.
                old = self.get_cell(cid, key)
                if old != value or old.style != value.style:  # Text equality ignores the base style
                    self.update_cell(cid, key, value)

    @property
    def highlighted_chunk(self) -> str | None:
        """The id of the chunk under the cursor, or None when the list is empty."""
        if not self.row_count:
            return None
        row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        return row_key.value

    def action_grade(self, grade: int) -> None:
        """Ask for the highlighted chunk to get ``grade``."""
        self.post_message(self.GradeRequested(self.retriever, self.highlighted_chunk, grade))

    def action_ungrade(self) -> None:
        """Ask for the highlighted chunk's hand grade to be removed."""
        self.post_message(self.GradeRequested(self.retriever, self.highlighted_chunk, None))

    def action_open_chunk(self) -> None:
        """Ask for the highlighted chunk full screen."""
        chunk = self.highlighted_chunk
        if chunk is not None:
            self.post_message(self.ChunkRequested(chunk))


class ResultPane(Vertical):
    """A titled frame around one retriever's list, with a note while it is loading or unavailable."""

    def __init__(self, retriever: str) -> None:
        """The pane of ``retriever``."""
        super().__init__(id=f"pane-{retriever}", classes="result-pane")
        #: The retriever shown.
        self.retriever = retriever
        self.border_title = retriever

    def compose(self) -> ComposeResult:
        """A note line (hidden unless set) above the list."""
        yield Static("", classes="pane-note", markup=False)
        yield ResultList(self.retriever, id=f"results-{self.retriever}")

    @property
    def results(self) -> ResultList:
        """This pane's list."""
        return self.query_one(ResultList)

    def set_note(self, note: str | None) -> None:
        """Show a note (loading, unavailable) in place of the list, or the list when None."""
        static = self.query_one(".pane-note", Static)
        static.update(note or "")
        self.set_class(note is not None, "-note")
