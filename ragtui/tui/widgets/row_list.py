"""A list of one-line rows drawn through Textual's Line API: only the visible rows are rendered.

A ``RowList`` knows how many rows it has and asks its subclass for the cells of a row only when
that row is on screen (``row_cells``). Rendered rows are cached by row index and width; changing
one row (``refresh_row``) re-renders that row alone, and nothing ever measures every row. This is
how toolong shows a million log lines at the cost of a screenful.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from math import ceil
from typing import ClassVar, Literal, Self

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip
from textual.widget import Widget

Justify = Literal["left", "right"]


@dataclass(frozen=True, slots=True)
class Cell:
    """One cell of a row: its text (already made visible) and a style name (a component class
    suffix of the list, "" for none)."""

    text: str
    style: str = ""


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """A column: its heading, width in cells, alignment, and a key naming it (default: the title)."""

    title: str
    width: int
    justify: Justify = "left"
    key: str = ""

    @property
    def name(self) -> str:
        """The column's key, or its title when it has none."""
        return self.key or self.title


def fit(text: str, width: int, justify: Justify = "left") -> str:
    """``text`` cut (ending in an ellipsis) or padded to exactly ``width`` cells."""
    if width <= 0:
        return ""
    length = cell_len(text)
    if length > width:
        return set_cell_size(text, width - 1) + "…" if width > 1 else "…"
    if justify == "right":
        return " " * (width - length) + text
    return text + " " * (width - length)


def shorten_middle(text: str, width: int) -> str:
    """``text`` cut in the middle to ``width`` cells, keeping its end (``emergency…dures.md#2``)."""
    if cell_len(text) <= width or width <= 3:
        return text if cell_len(text) <= width else fit(text, width)
    tail_size = min(max(width // 2, len(text) - text.rfind("#") + 4), width - 2)
    head = set_cell_size(text, width - tail_size - 1).rstrip()
    tail = text[-tail_size:]
    while cell_len(tail) > tail_size:
        tail = tail[1:]
    return head + "…" + tail


class ListScrollBar(ScrollBar):
    """A list's scrollbar, resized by a layout pass without asking for a second one, and
    repainted only in the rows that a new scroll range or position changes
    (``repaint_changed_rows``)."""

    #: True while a new range is set: the repaints asked for wait for the rows that changed.
    _held = False

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        """Textual sets a resized widget's virtual size as a layout change, so a list that
        changed height (the question bar above it took a row) got its scrollbar laid out in a
        second pass, a second frame for the key; a scrollbar has nothing to lay out."""
        return super()._size_updated(size, virtual_size, container_size, layout=False)

    def refresh(
        self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False
    ) -> Self:
        if self._held and not (regions or layout or recompose):
            return self  # repainted where it changed, once the range is set
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def cells(self) -> list[Segment] | None:
        """The bar's cells, a row each, for its range and position now (None: not a vertical
        bar). Drawn in the renderer's own colours: what tells one range from another."""
        if not self.vertical:
            return None
        window = self.window_size if self.window_size < self.window_virtual_size else 0
        bar = self.renderer.render_bar(
            size=self.size.height,
            virtual_size=ceil(self.window_virtual_size),
            window_size=ceil(window),
            position=self.position,
            thickness=self.thickness,
        )
        return list(bar.segments)


@contextmanager
def repaint_changed_rows(widget: Widget) -> Iterator[None]:
    """Within: ``widget``'s vertical scrollbar (a ``ListScrollBar``) takes a new range and
    position without repainting; after: it repaints the rows whose cells changed.

    A chunk or a ranking of another length changes the range at every key, and Textual repainted
    every row of the bar (1.7 ms for the judging view's 32) where a few changed."""
    bar = widget._vertical_scrollbar
    if not isinstance(bar, ListScrollBar) or bar._held:
        yield
        return
    before = bar.cells()
    bar._held = True
    try:
        yield
    finally:
        bar._held = False
    after = bar.cells()
    if before is None or after is None or len(before) != len(after):
        bar.refresh()
        return
    changed = [y for y, (old, new) in enumerate(zip(before, after, strict=True)) if old != new]
    if changed:
        bar.refresh(Region(0, changed[0], bar.size.width, changed[-1] - changed[0] + 1))


def own_scrollbar(widget: Widget, kind: type[ScrollBar]) -> ScrollBar:
    """``widget``'s vertical scrollbar, of ``kind``: made when first asked for, as Textual
    makes its own."""
    if widget._vertical_scrollbar is None:
        bar = kind(vertical=True, name="vertical", thickness=widget.scrollbar_size_vertical)
        bar.display = False
        widget._vertical_scrollbar = bar
        widget.app._start_widget(widget, bar)
    return widget._vertical_scrollbar


def _thumb_start(bar: ScrollBar, position: float) -> int | None:
    """Where a vertical scrollbar's thumb starts, in eighths of a cell, as Textual's
    ``ScrollBarRender`` draws it at ``position`` (None: no thumb, or not Textual's renderer)."""
    if not bar.vertical or bar.renderer is not ScrollBarRender:
        return None
    size = bar.size.height
    virtual = ceil(bar.window_virtual_size)
    window = ceil(bar.window_size) if bar.window_size < bar.window_virtual_size else 0
    if not (window and size and virtual and size != virtual):
        return None
    thumb = max(1, window / (virtual / size))
    return int(
        (size - thumb) * (position / (virtual - window)) * len(ScrollBarRender.VERTICAL_BARS)
    )


class RowList(ScrollView, can_focus=True):
    """One-line rows with a cursor, a header line and per-row render caching (Line API)."""

    DEFAULT_CSS = """
    RowList {
        background: $surface;
        scrollbar-size-horizontal: 0;
    }
    RowList > .row-list--header {
        text-style: bold;
        color: $text-muted;
    }
    RowList > .row-list--cursor {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: bold;
    }
    RowList > .row-list--cursor-blurred {
        background: $block-cursor-blurred-background;
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "row-list--header",
        "row-list--cursor",
        "row-list--cursor-blurred",
    }
    """The header line, the cursor row when focused, and the cursor row when not focused."""

    #: The prefix of the subclass's component classes.
    STYLE_PREFIX: ClassVar[str] = "row-list"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
    ]

    @dataclass
    class CursorMoved(Message):
        """The cursor moved to another row (or the rows changed under it)."""

        row_list: RowList
        index: int

        @property
        def control(self) -> RowList:
            """The list that sent it (for ``@on`` selectors)."""
            return self.row_list

    @dataclass
    class Chosen(Message):
        """Enter on a row."""

        row_list: RowList
        index: int

        @property
        def control(self) -> RowList:
            """The list that sent it."""
            return self.row_list

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        """An empty list; subclasses set the columns and the row count."""
        super().__init__(id=id, classes=classes)
        #: The row under the cursor (0 when the list is empty).
        self.cursor = 0
        self._count = 0
        self._columns: tuple[ColumnSpec, ...] = ()
        #: Rows drawn (finished lines without the cursor), by index, and the header line, for
        #: the width and base style they were drawn with.
        self._cache: dict[int, Strip] = {}
        self._header: Strip | None = None
        self._drawn_with: tuple[int, Style] | None = None
        #: The width and base style of the paint under way (``render_lines``), else None.
        self._paint: tuple[int, Style] | None = None
        self._styles: dict[str, Style] = {}
        self._show_header = True
        #: (size, container size, virtual size) at the last size update (see ``_size_updated``).
        self._sized: tuple[Size, Size, Size] | None = None

    # ---- what subclasses provide -------------------------------------------------------------------

    def row_cells(self, index: int) -> Sequence[Cell]:
        """The cells of row ``index``, one per column."""
        raise NotImplementedError

    # ---- rows and columns --------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        """How many rows the list has."""
        return self._count

    @property
    def columns(self) -> tuple[ColumnSpec, ...]:
        """The columns, in order."""
        return self._columns

    def cell_text(self, index: int, column: str) -> str:
        """The text of row ``index`` in the column named ``column`` (as drawn, before fitting)."""
        names = [c.name for c in self._columns]
        return self.row_cells(index)[names.index(column)].text

    def set_columns(self, columns: Sequence[ColumnSpec], show_header: bool = True) -> None:
        """Set the columns (every row is drawn again)."""
        columns = tuple(columns)
        if columns == self._columns and show_header == self._show_header:
            return
        self._columns = columns
        self._show_header = show_header
        self._cache.clear()
        self._header = None
        self._update_virtual_size()
        self.refresh()

    def set_row_count(self, count: int, cursor: int | None = None) -> None:
        """Replace every row (there are ``count`` now); the cursor goes to ``cursor`` (default: kept,
        clamped)."""
        self._count = count
        self._cache.clear()
        self._update_virtual_size()
        target = self.cursor if cursor is None else cursor
        self.cursor = max(0, min(target, count - 1)) if count else 0
        self._scroll_to_cursor()
        self.refresh()

    def refresh_row(self, index: int) -> None:
        """Row ``index`` changed: draw it again (only it)."""
        if self._cache.pop(index, None) is not None or self._visible(index):
            self.refresh_line(index + self.header_height)

    def _repaint_row(self, index: int) -> None:
        """Draw row ``index``'s line again from the cache (the cursor moved onto or off it)."""
        self.refresh_line(index + self.header_height)

    def refresh_rows(self) -> None:
        """Every row may have changed (k, a theme, another session's labels): draw them again."""
        self._cache.clear()
        self.refresh()

    @property
    def header_height(self) -> int:
        """Lines above the first row (the header)."""
        return 1 if self._show_header and self._columns else 0

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        """Textual's ScrollView compares the layout's virtual size (never its own) with the one the
        list set, so every layout pass anywhere on the screen redrew every list's scrollbar in
        full (140 lines a key on the main screen). Nothing to do when the list's size, its
        container and its own virtual size are what they were at the last update."""
        key = (size, container_size, self.virtual_size)
        if key == self._sized:
            return False
        self._sized = key
        resized = size != self._size
        widened = size.width != self._size.width
        changed = super()._size_updated(size, virtual_size, container_size, layout)
        bar = self._vertical_scrollbar
        if resized and bar is not None:
            # The scrollbar was laid out anew by the pass that resized the list, so this frame
            # paints it (its cache was cleared): ScrollView's repaint request would only paint it
            # again a frame later, a second frame for the key.
            bar._repaint_required = False
        if widened and size.width > 0:
            # Now, so that the pass paints the columns of the new width: the Resize event comes
            # after the paint, and the first screen showed the columns of no width (40 cells
            # assumed) for a frame, then those of its width.
            self._configure()
        return changed

    def _configure(self) -> None:
        """Lay the columns out for the list's width, when they follow it: called when a layout
        pass changed the width, and on Resize (the scrollbar came or went: the width for the
        columns changed with the list's size the same)."""

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """The vertical scrollbar, of the kind that needs no second layout pass."""
        return own_scrollbar(self, ListScrollBar)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """As Textual's ScrollView, but the scrollbar is repainted only when its thumb moves: in a
        list of 100,000 rows a row or a page moves it by less than the eighth of a cell it is
        drawn in, and its 23 lines were drawn again at every row."""
        if self.show_vertical_scrollbar:
            bar = self.vertical_scrollbar
            position = bar.validate_position(new_value)
            if _thumb_start(bar, bar.position) == _thumb_start(bar, position) is not None:
                bar.set_reactive(ScrollBar.position, position)
            else:
                bar.position = new_value
        if round(old_value) != round(new_value):
            self.refresh(self.size.region)

    def _update_virtual_size(self) -> None:
        width = sum(c.width for c in self._columns) + max(0, len(self._columns) - 1)
        size = Size(width, self._count + self.header_height)
        if size == self.virtual_size:
            return
        height = self.styles.height
        if self._sized is None or height is None or height.is_auto:
            self.virtual_size = size  # laid out to its rows: the screen's layout follows
            return
        # A list of a set height (another question's ranking, of another length): the scroll
        # range changes, not the screen's layout (only a scrollbar coming or going asks for one).
        self.set_reactive(Widget.virtual_size, size)
        with repaint_changed_rows(self):
            self._scroll_update(size)
        self._sized = (self._sized[0], self._sized[1], size)

    def _visible(self, index: int) -> bool:
        top = int(self.scroll_y)
        return top <= index < top + self.size.height

    # ---- the cursor ---------------------------------------------------------------------------------

    def move_cursor(self, index: int, *, announce: bool = True) -> None:
        """Put the cursor on row ``index`` (clamped) and scroll it into view."""
        if not self._count:
            return
        index = max(0, min(index, self._count - 1))
        old = self.cursor
        self.cursor = index
        self._scroll_to_cursor()
        if old != index:
            self._repaint_row(old)
            self._repaint_row(index)
        if announce:
            self.post_message(self.CursorMoved(self, index))

    def _scroll_to_cursor(self) -> None:
        """Scroll the least amount that brings the cursor row into view."""
        height = self.scrollable_content_region.height - self.header_height
        if height <= 0:
            return
        top = int(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def action_cursor(self, step: int) -> None:
        """Move the cursor one row."""
        self.move_cursor(self.cursor + step)

    def action_page(self, step: int, announce: bool = True) -> None:
        """Move the cursor one page (the visible rows)."""
        page = max(1, self.scrollable_content_region.height - self.header_height)
        self.move_cursor(self.cursor + step * page, announce=announce)

    def action_first(self) -> None:
        """The first row."""
        self.move_cursor(0)

    def action_last(self) -> None:
        """The last row."""
        self.move_cursor(self._count - 1)

    def action_choose(self) -> None:
        """Enter: announce the row under the cursor."""
        if self._count:
            self.post_message(self.Chosen(self, self.cursor))

    async def _on_click(self, event: events.Click) -> None:
        """A click puts the cursor on the row clicked (a double click chooses it)."""
        y = event.y - self.header_height + int(self.scroll_y)
        if event.y >= self.header_height and 0 <= y < self._count:
            self.move_cursor(y)
            if event.chain >= 2:
                self.action_choose()

    def on_focus(self) -> None:
        """The cursor row changes colour with the focus."""
        self._repaint_row(self.cursor)

    def on_blur(self) -> None:
        """The cursor row changes colour with the focus."""
        self._repaint_row(self.cursor)

    def on_resize(self) -> None:
        """Lay the columns out again and keep the cursor in view."""
        self._configure()
        self._scroll_to_cursor()

    def notify_style_update(self) -> None:
        """A theme or CSS change: when the cells' styles really changed (not just the focus of an
        ancestor), they are read again and every row redrawn (the header always is: one line)."""
        super().notify_style_update()
        self._header = None
        if not self._styles:
            return
        fresh = {
            name: (
                self.get_component_rich_style(f"{self.STYLE_PREFIX}--{name}", partial=True)
                if name
                else Style()
            )
            for name in self._styles
        }
        if fresh != self._styles:
            self._styles = fresh
            self._cache.clear()

    # ---- drawing ------------------------------------------------------------------------------------

    def _style(self, name: str) -> Style:
        """The rich style of a cell style name (read once per theme)."""
        style = self._styles.get(name)
        if style is None:
            style = (
                self.get_component_rich_style(f"{self.STYLE_PREFIX}--{name}", partial=True)
                if name
                else Style()
            )
            self._styles[name] = style
        return style

    def _cells_strip(
        self,
        cells: Sequence[Cell],
        width: int,
        base: Style,
        line: Style | None = None,
        columns: Sequence[ColumnSpec] | None = None,
    ) -> Strip:
        """Cells as one finished line: each fitted to its column (the list's, or ``columns``)
        and styled over the list's base style (and ``line``'s, the header's), the line padded to
        ``width`` in the base style (one strip made, no crop or restyle pass after)."""
        segments: list[Segment] = []
        under = base + line if line is not None else base
        columns = self._columns if columns is None else columns
        last = len(columns) - 1
        used = 0
        for i, (column, cell) in enumerate(zip(columns, cells, strict=True)):
            text = fit(cell.text, column.width, column.justify)
            style = under + self._style(cell.style) if cell.style else under
            segments.append(Segment(text, style))
            used += column.width
            if i < last:
                segments.append(Segment(" ", under))
                used += 1
        if used < width:
            segments.append(Segment(" " * (width - used), base))
        return Strip(segments).crop(0, width) if used > width else Strip(segments, width)

    def _render_row(self, index: int, width: int, base: Style) -> Strip:
        """Row ``index`` as a finished line without the cursor (cached for this width and base
        style)."""
        strip = self._cache.get(index)
        if strip is None:
            strip = self._cache[index] = self._cells_strip(self.row_cells(index), width, base)
        return strip

    def _width_and_style(self) -> tuple[int, Style]:
        """The width rows are drawn at and the list's base style (a walk up the widget tree):
        rows drawn at another width or in another base style are dropped."""
        width, base = self.scrollable_content_region.width, self.rich_style
        if (width, base) != self._drawn_with:
            self._cache.clear()
            self._header = None
            self._drawn_with = (width, base)
        return width, base

    def render_lines(self, crop: Region) -> list[Strip]:
        """The lines of one paint, the width and base style read once for them all."""
        self._paint = self._width_and_style()
        try:
            return super().render_lines(crop)
        finally:
            self._paint = None

    def render_line(self, y: int) -> Strip:
        """Line ``y`` of the view: the header, a row, or blank."""
        width, base = self._paint or self._width_and_style()
        if y < self.header_height:
            if self._header is None:
                header = self.get_component_rich_style("row-list--header")
                titles = [Cell(column.title) for column in self._columns]
                self._header = self._cells_strip(titles, width, base, header)
            return self._header
        index = y - self.header_height + int(self.scroll_y)
        if not 0 <= index < self._count:
            return Strip.blank(width, base)
        strip = self._render_row(index, width, base)
        if index == self.cursor:
            name = "row-list--cursor" if self.has_focus else "row-list--cursor-blurred"
            cursor = self.get_component_rich_style(name)
            # The cursor's colours go on top of the cells' own.
            return Strip(Segment.apply_style(list(strip), None, cursor), width)
        return strip
