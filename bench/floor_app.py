"""The floors: the smallest Textual apps against which ragtui's start and keys are measured.

``python -m bench.floor_app``: a Header, a list of 68 one-line rows and a Footer, nothing else (no
data read, no workers). The list is ragtui's own ``RowList``, the Line-API list its question list
and result lists use, so the floor draws its rows the way ragtui does. ``bench.startup`` launches
it in the same tmux harness as ragtui and reads the pane until the last visible row and the footer
are on screen: no Textual app with that screen starts faster on the machine.

``python -m bench.floor_app --screen``: the floor of ragtui's screen. ragtui's main screen at
120x40 as Textual draws it with the least work of its own: the same boxes, filled with made-up
texts made up front; its Down shows another question (its line, lists, titles, metrics and
chunk), the same screen change as ragtui's Down (``bench.keys`` counts the bytes each writes). What
that key costs here is what it costs in Textual alone.

``python -m bench.floor_app --judging``: the floor of ragtui's judging view, the same way: the
same boxes, and a digit that shows the next pair (``v`` then enter: the verify mode's enter).
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.geometry import Size
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Footer, Header, Static

from ragtui.tui.widgets.row_list import Cell, ColumnSpec, RowList
from ragtui.tui.widgets.text import set_frame_text

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


# ---- the floor of ragtui's main screen -------------------------------------------------------------

#: Words the screen floor's texts are made of.
_WORDS = [
    "pump",
    "station",
    "level",
    "water",
    "inlet",
    "outlet",
    "sample",
    "chloride",
    "permit",
    "diesel",
    "sensor",
    "valve",
    "polder",
    "target",
    "winter",
    "summer",
    "weekly",
    "duty",
    "officer",
    "radio",
    "form",
    "contract",
    "fuel",
    "hours",
    "capacity",
]


def _text(seed: int, words: int) -> list[str]:
    """``words`` words chosen by ``seed`` (the same every time)."""
    pick = random.Random(seed).choice
    return [pick(_WORDS) for _ in range(words)]


class ScreenFloorList(RowList):
    """A list of the screen floor: ``cells(question, index)`` gives its rows' cells."""

    DEFAULT_CSS = "ScreenFloorList > .row-list--hit { color: $success; text-style: bold; }"
    COMPONENT_CLASSES: ClassVar[set[str]] = {*RowList.COMPONENT_CLASSES, "row-list--hit"}

    def __init__(self, columns: Sequence[ColumnSpec], rows: int, cells: Cells, **kw: str) -> None:
        super().__init__(**kw)
        self.specs, self.rows, self.cells = columns, rows, cells
        self.question = 0
        #: Called with the new cursor when a key moves it (no message: one paint per key).
        self.moved: Callable[[int], None] | None = None

    def move_cursor(self, index: int, *, announce: bool = True) -> None:
        super().move_cursor(index, announce=self.moved is None and announce)
        if self.moved is not None:
            self.moved(self.cursor)

    def on_mount(self) -> None:
        self.set_columns(self.specs)
        self.set_row_count(self.rows)

    def row_cells(self, index: int) -> Sequence[Cell]:
        return self.cells(self.question, index)


class ScreenFloorLines(ScrollView):
    """Lines of text with their styles, scrolled (Line API): the metrics and the chunk."""

    DEFAULT_CSS = "ScreenFloorLines { background: $surface; scrollbar-size-horizontal: 0; }"

    def __init__(self, id: str, height: int) -> None:
        super().__init__(id=id)
        self.lines: list[list[Segment]] = []
        #: Lines kept: the virtual height, fixed, so that a new text lays nothing out.
        self.height = height

    def on_mount(self) -> None:
        self.virtual_size = Size(1, self.height)

    def show(self, lines: list[list[Segment]], title: str, top: int) -> None:
        """Show ``lines`` from line ``top``: the lines that changed are drawn again, and the title
        when it changed."""
        before, self.lines = self.lines, lines
        set_frame_text(self, title)
        if top != int(self.scroll_y):
            self.scroll_to(y=top, animate=False, immediate=True)
            self.refresh_lines(top, self.size.height)
            return
        for y in range(max(len(lines), len(before))):
            if y >= len(before) or y >= len(lines) or lines[y] != before[y]:
                self.refresh_lines(y)

    def render_line(self, y: int) -> Strip:
        width, base = self.scrollable_content_region.width, self.rich_style
        index = y + int(self.scroll_y)
        segments = self.lines[index] if index < len(self.lines) else []
        return Strip(Segment.apply_style(segments, base)).adjust_cell_length(width, base)


Cells = Callable[[int, int], Sequence[Cell]]


def _question_cells(_: int, index: int) -> Sequence[Cell]:
    ranks = [str(1 + (index * k) % 5) for k in (3, 5, 7)]
    return (Cell(f"q{index + 1:02d}"), *map(Cell, ranks), Cell(""), Cell(" ".join(_text(index, 9))))


def _result_cells(retriever: int) -> Cells:
    def cells(question: int, index: int) -> Sequence[Cell]:
        seed = question * 31 + retriever * 7 + index
        hit = seed % 5 == 0
        return (
            Cell(str(index + 1)),
            Cell("● 2 evidence" if hit else "–", "hit" if hit else ""),
            Cell(f"{_text(seed, 1)[0]}-{_text(seed + 1, 1)[0]}.md#{seed % 4}"),
            Cell(f"{1 / (1 + index + seed % 3):.3f}"),
            Cell(" ".join(_text(seed, 12))),
        )

    return cells


#: The footer keys of ragtui's main screen (bar the quit key), by key and name.
_FOOTER = (
    ("s", "Sort"),
    ("slash", "Filter"),
    ("u", "Undo"),
    ("plus", "k"),
    ("n", "Unjudged"),
    ("j", "Judge"),
    ("question_mark", "Help"),
)


class ScreenFloorApp(App[None]):
    """ragtui's main screen at 120x40 as Textual draws it with the least work of its own: the same
    bordered boxes (the question list, the question's line, three result lists, the metrics, the
    chunk), each filled from texts made up front; Down in the question list shows the next
    question's lists, metrics and chunk (``bench.keys``: the same screen change as ragtui's Down, in
    Textual alone)."""

    TITLE = "floor screen"
    CSS = """
    #top { height: 1fr; }
    #bottom { height: 14; }
    #questions { width: 52; border: round $border; }
    #bar { height: 1; padding: 0 1; background: $boost; }
    .result { height: 1fr; border-top: solid $border-blurred; scrollbar-size-vertical: 1; }
    #metrics { width: 48; border: round $border-blurred; padding: 0 1; }
    #chunk { width: 1fr; border: round $border-blurred; padding: 0 1; overflow-y: scroll; }
    #status { height: 1; }
    """
    # The footer's keys, as many as ragtui's (the keys do nothing: the footer is drawn the same).
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", priority=True),
        *(Binding(key, f"nothing({i})", name) for i, (key, name) in enumerate(_FOOTER)),
    ]

    def action_nothing(self, _: int) -> None:
        """A footer key's action: nothing."""

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="top"):
            columns = [ColumnSpec(t, w) for t, w in (("id", 4), ("bm", 3), ("vec", 3), ("hyb", 3))]
            questions = [*columns, ColumnSpec("why", 5), ColumnSpec("question", 24)]
            with Vertical(id="questions"):  # the border is the box's, as ragtui's is
                yield ScreenFloorList(questions, ROWS, _question_cells, id="question-list")
            with Vertical():
                yield Static(id="bar")
                spec = [("#", 1), ("grade", 15), ("chunk", 22), ("score", 6), ("passage", 18)]
                for retriever in range(3):
                    cells = _result_cells(retriever)
                    yield ScreenFloorList(
                        [ColumnSpec(t, w) for t, w in spec], 10, cells, classes="result"
                    )
        with Horizontal(id="bottom"):
            yield ScreenFloorLines("metrics", 11)
            yield ScreenFloorLines("chunk", 40)
        yield Static(f"{ROW_TEXT} status", id="status")
        yield Footer()

    def on_mount(self) -> None:
        questions = self.query_one("#question-list", ScreenFloorList)
        questions.moved = self.show
        questions.focus()
        self.show(0)

    def show(self, question: int) -> None:
        """What ragtui's Down changes: the question's line, lists, metrics and chunk."""
        self.query_one("#bar", Static).update(" ".join(_text(question, 10)), layout=False)
        set_frame_text(self.query_one("#questions"), subtitle=f"this question 0/{question % 7}")
        for retriever, results in enumerate(self.query(".result").results(ScreenFloorList)):
            results.question = question
            set_frame_text(results, f"retriever {retriever} · first relevant #{question % 4}")
            results.set_row_count(10, cursor=0)
        plain, bold = Style(), Style(bold=True, color="yellow")
        # The metrics: a row per retriever for the question (the set's rows stay).
        metrics = [
            [Segment(" ".join(_text(question * 11 + i if i in (2, 4, 6) else i, 5)), plain)]
            for i in range(11)
        ]
        self.query_one("#metrics", ScreenFloorLines).show(metrics, "metrics k=3", 0)
        # The chunk: 40 lines of 10 words, the evidence (one span of 3 words) marked on one.
        lines = [" ".join(_text(question * 40 + i, 10)) for i in range(40)]
        chunk = [[Segment(line, plain)] for line in lines]
        mark = question % 12
        head, *evidence = lines[mark].split(" ", 3)
        chunk[mark] = [Segment(head + " ", plain), Segment(" ".join(evidence), bold)]
        self.query_one("#chunk", ScreenFloorLines).show(
            chunk, f"chunk {question // 2}", question % 5
        )


# ---- the floor of ragtui's judging view -----------------------------------------------------------

#: Pairs in the floor's judging queue (as many as the bundled golden set pools).
PAIRS = 342

#: The judging view's footer keys, bar the grade, verify and quit keys.
_JUDGING_FOOTER = (
    ("backspace", "Clear", None),
    ("u", "Undo", None),
    ("left", "Move", "←→"),
    ("question_mark", "Keys", None),
    ("escape", "Back", None),
)


class JudgingFloorScreen(Screen[None]):
    """The judging view's boxes and keys (a screen of its own, as ragtui's is)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("0", "grade", "Grade, next", key_display="0-9", priority=True),
        *(Binding(str(d), "grade", show=False, priority=True) for d in range(1, 10)),
        Binding("enter", "accept", "Accept", show=False, priority=True),
        Binding("v", "verify", "Verify", show=False, priority=True),
        *(
            Binding(key, f"nothing({i})", name, key_display=shown, priority=True)
            for i, (key, name, shown) in enumerate(_JUDGING_FOOTER)
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.pair = 0

    def action_nothing(self, _: int) -> None:
        """A footer key's action: nothing."""

    def compose(self) -> ComposeResult:
        yield Static(id="question")
        yield Static(id="meta")
        yield Static(id="verdict")
        yield ScreenFloorLines("chunk", 60)
        yield Static("0 not relevant  ·  1 partly  ·  2 answers fully", id="scale")
        yield Static(f"{ROW_TEXT} status", id="status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.show()

    def action_grade(self) -> None:
        """Grade the pair on screen and show the next."""
        self.pair = (self.pair + 1) % PAIRS
        self.show()

    def action_accept(self) -> None:
        """Verifying: take the judge's grade and move on, as a digit does."""
        if self.query_one("#verdict").has_class("-shown"):
            self.action_grade()

    def action_verify(self) -> None:
        self.query_one("#verdict").add_class("-shown")
        self.show()

    def show(self) -> None:
        """What ragtui's judging digit changes: the counts, the pair, the chunk, the saved line."""
        pair = self.pair
        question = pair // 5  # the pool of a question: five chunks in turn
        top = self.query_one("#question", Static)
        set_frame_text(top, f"pair {pair + 1} of {PAIRS} · judged {pair}/{PAIRS} by bench")
        line = f"q{question + 1:02d}  " + " ".join(_text(question, 8)) + "  [lookup, table]"
        if line != str(top.content):  # the next pair is often the same question's
            top.update(line, layout=False)
        chunk_id = f"{_text(pair, 1)[0]}-{_text(pair + 1, 1)[0]}.md#{pair % 5}"
        meta = f"{chunk_id}  {' '.join(_text(pair * 3, 3))}\n"
        meta += (
            f"bm25 #{1 + pair % 7} · vector #{1 + pair % 4} · hybrid #{1 + pair % 3} · not graded"
        )
        self.query_one("#meta", Static).update(meta, layout=False)
        verdict = self.query_one("#verdict", Static)
        if verdict.has_class("-shown"):
            reason = " ".join(_text(pair * 5, 18))
            verdict.update(f"judge bench: grade {pair % 3}\n{reason}\n", layout=False)
        # The chunk: paragraphs of lines wrapped at the view's width, as many as the pair's has
        # (the bundled chunks fill the view, as these do: 26-37 lines in a view of 32).
        plain, bold = Style(), Style(bold=True, color="yellow")
        lines: list[list[Segment]] = []
        for i in range(26 + pair * 7 % 12):
            text = " ".join(_text(pair * 40 + i, 20))[:112].rsplit(" ", 1)[0]
            lines.append([Segment(text, plain)] if i % 6 != 5 else [])
        evidence = 2 + pair % 8
        text = lines[evidence][0].text if lines[evidence] else ""
        head, _, rest = text.partition(" ")
        lines[evidence] = [Segment(head + " ", plain), Segment(rest, bold)]
        self.query_one("#chunk", ScreenFloorLines).show(lines, f"chunk {chunk_id}", 0)
        saved = f"saved: q{question + 1:02d} {chunk_id} → your {pair % 3} (u undoes)"
        self.query_one("#status", Static).update(saved, layout=False)


class JudgingFloorApp(App[None]):
    """ragtui's judging view at 120x40 as Textual draws it with the least work of its own: the
    question's line under the queue's title, the pair's two lines, the chunk (bordered, its
    scrollbar kept), the grade scale, the status line and the compact footer. A digit grades the
    pair and shows the next one: the title's counts, the pair's lines, another chunk from its top
    and the saved line, the same screen change as ragtui's judging digit. ``v`` shows the judge's
    verdict (three rows) as ragtui's verify mode does, and enter then moves on as a digit does."""

    TITLE = "floor judging"
    CSS = """
    #question { height: 2; padding: 0 1; border-top: solid $border; background: $boost; }
    #meta { height: 2; padding: 0 1; }
    #verdict { height: 3; padding: 0 1; display: none; }
    #verdict.-shown { display: block; }
    #chunk { height: 1fr; border-top: solid $border-blurred; padding: 0 1; overflow-y: scroll; }
    #scale { height: 1; padding: 0 1; color: $text-muted; }
    #status { height: 1; padding: 0 1; background: $boost; color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+q", "quit", "Quit", priority=True)]

    def on_mount(self) -> None:
        self.push_screen(JudgingFloorScreen())


if __name__ == "__main__":
    apps = {"--screen": ScreenFloorApp, "--judging": JudgingFloorApp}
    (apps.get(sys.argv[1], FloorApp) if sys.argv[1:] else FloorApp)().run()
