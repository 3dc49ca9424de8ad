"""The question list: one virtualised table row per golden question, updated in place by row key."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar

from rich.console import JustifyMethod
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import CellKey, Column, RowKey

from ragtui.core.workspace import Workspace
from ragtui.tui.widgets.table import RowCachedTable
from ragtui.tui.widgets.text import (
    MISS_MARK,
    PENDING_MARK,
    SHORT_NAMES,
    SKIPPED_MARK,
    UNAVAILABLE_MARK,
    cell,
    foreground,
)

#: Readiness of a retriever's rankings: ``ready``, ``pending`` (embedding) or ``failed``.
RetrieverStatus = Mapping[str, str]

#: Above this many changed cells, ``update_all`` refills the table instead of updating cell by cell.
REFILL_THRESHOLD = 2000

#: Marks a question that some ready retriever misses in its top k.
FAILURE_MARK = "✗"


class QuestionList(RowCachedTable[Text]):
    """Every golden question: a failure mark, its id, the first relevant rank per retriever, text and slices."""

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
            "show_results",
            "Results",
            tooltip="Move the focus to the ranked lists of this question.",
            id="questions.results",
        ),
        Binding(
            "s",
            "screen.sort",
            "Sort",
            tooltip="Worst questions first (hybrid nDCG@k), or golden-set order.",
            id="questions.sort",
        ),
        Binding(
            "0,1,2,3,4,5,6,7,8,9,backspace",
            "screen.grade_hint",
            "Grade",
            show=False,
            tooltip="Grades apply to a chunk: tab to a result list first.",
            id="questions.grade_hint",
        ),
    ]

    _ordered_columns: list[Column] | None = None

    class ShowResults(Message):
        """Asks the screen to move the focus to the result lists of the current question."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        """A row-cursor table with no rows yet; ``configure`` adds the columns."""
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=False)
        #: The retrievers shown as rank columns, in order.
        self.retrievers: list[str] = []
        self._styles: dict[str, Style] = {}
        self._short_cells: dict[tuple[str, str, JustifyMethod], Text] = {}
        #: Each question's change against a baseline run (nDCG@k now minus then), or None: no Δ column.
        self.deltas: dict[str, float] | None = None

    def configure(self, retrievers: Iterable[str], id_width: int) -> None:
        """Set the columns: mark, id, one rank column per retriever, question, slices (rows are cleared)."""
        self.clear(columns=True)
        self._ordered_columns = None
        self.retrievers = list(retrievers)
        self.add_column(Text(" "), width=1, key="mark")
        self.add_column(Text("id"), width=id_width, key="id")
        for name in self.retrievers:
            self.add_column(Text(SHORT_NAMES.get(name, name), justify="right"), width=3, key=name)
        if self.deltas is not None:
            self.add_column(Text("Δ", justify="right"), width=6, key="delta")
        self.add_column(Text("question"), width=48, key="question")
        self.add_column(Text("slices"), width=24, key="slices")

    @property
    def ordered_columns(self) -> list[Column]:
        """The columns in display order, cached: DataTable recomputes them twice per added row,
        a third of the time it takes to fill 10,000 rows. Only ``configure`` changes the columns."""
        cached = self._ordered_columns
        if cached is None or len(cached) != len(self.columns):
            cached = self._ordered_columns = DataTable.ordered_columns.fget(self)  # type: ignore[attr-defined]
        return cached

    @property
    def _fixed_widths(self) -> bool:
        """Whether every column has an explicit width (``configure`` sets them all)."""
        return bool(self.columns) and not any(c.auto_width for c in self.columns.values())

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """DataTable measures every cell of every new row (about 1 s for 10,000 questions) to size
        auto-width columns; ours all have explicit widths and one-line rows, so only the virtual size
        changes."""
        if not self._fixed_widths:
            super()._update_dimensions(new_rows)
            return
        width = sum(c.get_render_width(self) for c in self.columns.values())
        header = self.header_height if self.show_header else 0
        self.virtual_size = Size(
            width + self._row_label_column_width, self._total_row_height + header
        )

    def _update_column_widths(self, updated_cells: set[CellKey]) -> None:
        """Skip DataTable's re-measuring after ``update_cell`` (a narrower cell re-measures the whole
        column: 10,000 cells per grade change): explicit widths never change with the content."""
        if not self._fixed_widths:
            super()._update_column_widths(updated_cells)

    def _short(self, text: str, style_name: str, justify: JustifyMethod = "right") -> Text:
        """A shared cell for a mark or a rank: the same few values repeat on every row."""
        key = (text, style_name, justify)
        found = self._short_cells.get(key)
        if found is None:
            style = self._styles[style_name] if style_name else ""
            found = self._short_cells[key] = cell(text, style, justify=justify)
        return found

    def _load_styles(self) -> None:
        """Read the component styles once per batch of rows (reading them per cell is slow at 10,000 rows)."""
        self._styles = {
            name: foreground(self.get_component_rich_style(f"question-list--{name}"))
            for name in ("hit", "late", "miss", "skipped")
        }
        self._short_cells = {}

    def _style(self, name: str) -> Style:
        """The rich style of one of this widget's component classes (as last loaded)."""
        return self._styles[name]

    def _rank_cell(self, ws: Workspace, qid: str, name: str, status: RetrieverStatus) -> Text:
        """The first relevant rank of one retriever, or a miss, pending or unavailable mark."""
        state = status.get(name, "ready")
        evaluation = ws.evaluation
        if state == "failed":
            return self._short(UNAVAILABLE_MARK, "skipped")
        if evaluation is None or name not in evaluation.per_question:
            return self._short(PENDING_MARK, "skipped")
        if qid not in evaluation.evaluated:
            return self._short("–", "skipped")
        rank = evaluation.per_question[name][qid].first_relevant_rank
        if rank is None:
            return self._short(MISS_MARK, "miss")
        return self._short(str(rank), "hit" if rank <= evaluation.k else "late")

    def _mark_cell(self, ws: Workspace, qid: str) -> Text:
        """∅ for a question with no relevant chunk, ✗ when a ready retriever misses it in the top k."""
        evaluation = ws.evaluation
        if evaluation is None:
            return self._short(" ", "", "left")
        if qid not in evaluation.evaluated:
            return self._short(SKIPPED_MARK, "skipped", "left")
        for name in self.retrievers:
            values = evaluation.per_question.get(name)
            if values is None:
                continue
            rank = values[qid].first_relevant_rank
            if rank is None or rank > evaluation.k:
                return self._short(FAILURE_MARK, "miss", "left")
        return self._short(" ", "", "left")

    def _delta_cell(self, qid: str) -> list[Text]:
        """The baseline change of a question (empty list without a baseline; blank when not in both runs)."""
        if self.deltas is None:
            return []
        change = self.deltas.get(qid)
        if change is None:
            return [self._short("", "skipped")]
        if abs(change) < 1e-9:
            return [self._short("=", "skipped")]
        return [self._short(f"{change:+.2f}", "hit" if change > 0 else "miss")]

    def row_cells(self, ws: Workspace, qid: str, status: RetrieverStatus) -> list[Text]:
        """The cells of one question's row, in column order."""
        question = ws.question_by_id[qid]
        skipped = ws.evaluation is not None and qid not in ws.evaluation.evaluated
        text_style = self._style("skipped") if skipped else ""
        return [
            self._mark_cell(ws, qid),
            cell(qid, text_style),
            *(self._rank_cell(ws, qid, name, status) for name in self.retrievers),
            *self._delta_cell(qid),
            cell(" ".join(question.text.split()), text_style),
            cell(", ".join(question.slices), text_style),
        ]

    def fill(self, ws: Workspace, qids: Iterable[str], status: RetrieverStatus) -> None:
        """Replace the rows with these questions, in this order (a filter or sort changed)."""
        self._load_styles()
        self.clear()
        for qid in qids:
            self.add_row(*self.row_cells(ws, qid, status), key=qid)

    def reorder(self, qids: list[str]) -> None:
        """Put the same rows in another order, in place (sorting; cheaper than refilling)."""
        position = {qid: i for i, qid in enumerate(qids)}
        self.sort("id", key=lambda cell: position[cell.plain])

    def _changed_cells(
        self, ws: Workspace, qid: str, status: RetrieverStatus
    ) -> list[tuple[str, Text]]:
        """The (column, new cell) pairs of one row whose content differs from what is shown."""
        keys = ["mark", "id", *self.retrievers, *(["delta"] if self.deltas is not None else [])]
        changed = []
        # The text and slice cells never change: only the first len(keys) cells are compared.
        for key, value in zip(keys, self.row_cells(ws, qid, status), strict=False):
            old = self.get_cell(qid, key)
            # Text equality ignores the base style: a rank that moves beyond k keeps its digits.
            if old != value or old.style != value.style:
                changed.append((key, value))
        return changed

    def update_question(self, ws: Workspace, qid: str, status: RetrieverStatus) -> None:
        """Rewrite one question's changed cells in place, by row key (after a grade change)."""
        if qid not in self.rows:
            return
        self._load_styles()
        for key, value in self._changed_cells(ws, qid, status):
            self.update_cell(qid, key, value)

    def update_all(self, ws: Workspace, status: RetrieverStatus, *, refill: bool = False) -> None:
        """Rewrite every changed cell in place (k changed, labels reloaded); when most rows change
        (or ``refill``: vector rankings arrived) refill the table instead, faster at 10,000 rows."""
        self._load_styles()
        qids = [key.value for key in self.rows if key.value is not None]
        changes = [] if refill else [(qid, self._changed_cells(ws, qid, status)) for qid in qids]
        if refill or sum(len(c) for _, c in changes) > REFILL_THRESHOLD:
            current = self.current_qid
            self.fill(ws, qids, status)
            if current is not None:
                self.select_qid(current)
            return
        for qid, changed in changes:
            for key, value in changed:
                self.update_cell(qid, key, value)

    @property
    def current_qid(self) -> str | None:
        """The id of the question under the cursor, or None when the list is empty."""
        if not self.row_count:
            return None
        row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        return row_key.value

    def select_qid(self, qid: str) -> bool:
        """Move the cursor to a question's row; False when it is not in the list."""
        if qid not in self.rows:
            return False
        self.move_cursor(row=self.get_row_index(qid))
        return True

    def action_show_results(self) -> None:
        """Ask the screen to move the focus to this question's ranked lists."""
        if self.row_count:
            self.post_message(self.ShowResults())
