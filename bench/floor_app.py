"""The start-up floor: the smallest Textual app with a screen like ragtui's first one.

``python -m bench.floor_app``: a Header, a list of 68 one-line rows and a Footer, nothing else (no
data read, no workers). The list is ragtui's own ``RowList``, the Line-API list its question list
and result lists use, so the floor draws its rows the way ragtui does. ``bench.startup`` launches
it in the same tmux harness as ragtui and reads the pane until the last visible row and the footer
are on screen: no Textual app with that screen starts faster on the machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Header

from ragtui.tui.widgets.row_list import Cell, ColumnSpec, RowList

#: Rows in the list (the bundled golden set's questions).
ROWS = 68
#: The text every row starts with (``floor row 07``): the harness looks for the last visible one.
ROW_TEXT = "floor row"


class FloorList(RowList):
    """68 rows of three columns, made on demand as ragtui's lists make theirs; a digit rewrites the
    highlighted row's last cell (the smallest change of one row), ``r`` rewrites every row (a
    repaint of the whole list, as much of the screen as ragtui's Down repaints): ``bench.keys``
    times both."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(str(d), f"mark({d})", show=False) for d in range(10)),
        Binding("r", "rewrite", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.marks: dict[int, int] = {}
        self.generation = 0

    def action_rewrite(self) -> None:
        self.generation += 1
        self.refresh_rows()

    def action_mark(self, digit: int) -> None:
        index = self.cursor
        self.marks[index] = digit
        self.refresh_row(index)

    def on_mount(self) -> None:
        self.set_columns(
            [ColumnSpec("id", 14), ColumnSpec("question", 80), ColumnSpec("#", 4, "right")]
        )
        self.set_row_count(ROWS)

    def row_cells(self, index: int) -> Sequence[Cell]:
        return (
            Cell(f"{ROW_TEXT} {index + 1:02d}"),
            Cell(f"what does question {index + 1} of the floor app ask? ({self.generation})"),
            Cell(str(self.marks.get(index, index % 4))),
        )


class FloorApp(App[None]):
    """Header, list, footer."""

    TITLE = "floor"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+q", "quit", "Quit", priority=True)]

    def compose(self) -> ComposeResult:
        yield Header()
        yield FloorList()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(FloorList).focus()


if __name__ == "__main__":
    FloorApp().run()
