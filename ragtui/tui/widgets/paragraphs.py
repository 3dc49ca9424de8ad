"""Text drawn through Textual's Line API, a paragraph at a time, as a Static would draw it.

A text is split into its paragraphs (the lines between newlines). Textual wraps each of them on
its own, so each is wrapped and rendered on its own here too, with Textual's own ``Content``:
the lines a paragraph wraps to are counted once per width (one, without wrapping, when it fits),
and a paragraph is rendered only when one of its lines is drawn, then kept. A widget drawing a
long text pays for the lines on screen; a text drawn again (the same words and styles) pays
nothing; and a text that changed in a few paragraphs (a metric panel's question rows) says which
lines moved, so only those are repainted.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate
from typing import cast

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual.content import Content
from textual.css.styles import RulesMap
from textual.geometry import Offset
from textual.selection import Selection
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, Visual
from textual.widget import Widget

#: Paragraph heights kept across texts (a paragraph's lines at a width); cleared when full.
KEPT_HEIGHTS = 20_000

#: A paragraph's wrapped lines at a width, by its text (shared by every widget).
_heights: dict[tuple[str, int], int] = {}


def rules(widget: Widget) -> RulesMap:
    """A widget's styles as the rules a Visual reads (text wrap and overflow, line padding), as
    Textual itself passes them."""
    return cast("RulesMap", widget.styles)


def paragraph_height(widget: Widget, paragraph: Content, width: int) -> int:
    """The lines one paragraph wraps to at ``width`` in ``widget`` (one when it fits)."""
    plain = paragraph.plain
    if "\t" not in plain and cell_len(plain) <= width:
        return 1
    key = (plain, width)
    height = _heights.get(key)
    if height is None:
        if len(_heights) >= KEPT_HEIGHTS:
            _heights.clear()
        height = _heights[key] = max(1, paragraph.get_height(rules(widget), width))
    return height


class Paragraphs:
    """A text split into its paragraphs: their line counts per width (counted once) and their
    rendered lines per width and style (rendered when first drawn)."""

    def __init__(self, text: Text, widget: Widget, before: Paragraphs | None = None) -> None:
        """The paragraphs of ``text`` as ``widget`` draws them; a paragraph the same as
        ``before``'s in the same place (same words and styles) keeps its rendered lines."""
        #: The text, as given.
        self.text = text
        #: The paragraphs as rich texts (compared with another text's) and as Textual content.
        self.texts: list[Text] = list(text.split("\n", allow_blank=True)) if text.plain else []
        if not self.texts:
            self.texts = [Text("")]
        console = widget.app.console
        #: Which paragraphs are ``before``'s, unchanged.
        self.same: list[bool] = [
            before is not None and i < len(before.texts) and before.texts[i] == line
            for i, line in enumerate(self.texts)
        ]
        self.paragraphs: list[Content] = [
            before.paragraphs[i] if before is not None and same else _content(line, console)
            for i, (line, same) in enumerate(zip(self.texts, self.same, strict=True))
        ]
        self._starts: dict[int, list[int]] = {}
        self._strips: dict[tuple[int, Style, int], dict[int, list[Strip]]] = {}
        if before is not None:
            for key, rendered in before._strips.items():
                kept = {i: s for i, s in rendered.items() if i < len(self.same) and self.same[i]}
                if kept:
                    self._strips[key] = kept

    def starts(self, widget: Widget, width: int) -> list[int]:
        """The first line of each paragraph at ``width``, then the number of lines."""
        starts = self._starts.get(width)
        if starts is None:
            heights = [paragraph_height(widget, p, width) for p in self.paragraphs]
            starts = self._starts[width] = [0, *accumulate(heights)]
        return starts

    def lines(self, widget: Widget, width: int) -> int:
        """How many lines the text wraps to at ``width``."""
        return self.starts(widget, width)[-1]

    def line(self, widget: Widget, width: int, style: Style, y: int, row: int = 0) -> Strip | None:
        """Line ``y`` of the text at ``width`` drawn in ``style`` (None past the end); ``row``:
        the widget's row (for a mouse selection) of the first paragraph, when other text is
        above it."""
        starts = self.starts(widget, width)
        if not 0 <= y < starts[-1]:
            return None
        index = bisect_right(starts, y) - 1
        selection = widget.text_selection
        strips: list[Strip]
        if selection is not None:  # drawn with the selection, as it changes (not kept)
            strips = _render(widget, self.paragraphs[index], width, style, row + index, selection)
        else:
            rendered = self._strips.setdefault((width, style, row), {})
            kept = rendered.get(index)
            if kept is None:
                kept = rendered[index] = _render(
                    widget, self.paragraphs[index], width, style, row + index
                )
            strips = kept
        offset = y - starts[index]
        return strips[offset] if offset < len(strips) else None

    def plain_rows(self) -> list[str]:
        """The paragraphs' text: the rows a mouse selection counts."""
        return [paragraph.plain for paragraph in self.paragraphs]

    def line_of(self, widget: Widget, width: int, offset: int) -> int:
        """The lines the text up to character ``offset`` wraps to, less one: the line holding it."""
        starts = self.starts(widget, width)
        position = 0
        for index, paragraph in enumerate(self.paragraphs):
            end = position + len(paragraph.plain)
            if offset <= end:
                head = Content(paragraph.plain[: offset - position])
                return starts[index] + paragraph_height(widget, head, width) - 1
            position = end + 1  # the newline
        return max(0, starts[-1] - 1)

    def changed(self, widget: Widget, width: int, before: Paragraphs) -> list[tuple[int, int]]:
        """The lines at ``width`` that differ from ``before`` (the text this one was made
        from), as (first line, count) ranges: the paragraphs that changed, and every line from
        the first one whose place moved."""
        new, old = self.starts(widget, width), before.starts(widget, width)
        out: list[tuple[int, int]] = []
        for i, same in enumerate(self.same):
            if new[i] != old[i] if i < len(old) else True:
                out.append((new[i], max(new[-1], old[-1]) - new[i]))
                return out
            if not same or new[i + 1] != (old[i + 1] if i + 1 < len(old) else -1):
                out.append((new[i], new[i + 1] - new[i]))
        if old[-1] > new[-1]:  # the text got shorter: the lines it left
            out.append((new[-1], old[-1] - new[-1]))
        return out


def _render(
    widget: Widget,
    paragraph: Content,
    width: int,
    style: Style,
    row: int,
    selection: Selection | None = None,
) -> list[Strip]:
    """One paragraph's lines, as a Static renders them; ``row`` is its row in the widget's text
    (each character's offset, which a mouse selection reads, names it; rendered alone, the
    paragraph would be row 0), ``selection`` the widget's selection, highlighted."""
    if selection is None:
        strips = Visual.to_strips(widget, paragraph, width, None, style, apply_selection=False)
    else:
        shifted = Selection(*(None if o is None else Offset(o.x, o.y - row) for o in selection))
        selected = Style.from_styles(widget.screen.get_component_styles("screen--selection"))
        options = RenderOptions(widget._get_style, rules(widget), shifted, selected)
        strips = paragraph.render_strips(width, None, style, options)
    return [_at_row(strip, row) for strip in strips] if row else strips


def _at_row(strip: Strip, row: int) -> Strip:
    """``strip`` with each character's offset on row ``row``."""
    segments = []
    for segment in strip:
        text, style, control = segment
        if style is not None and style._meta is not None:
            meta = style.meta
            offset = meta.get("offset")
            if offset is not None:
                style = style + RichStyle.from_meta({**meta, "offset": (offset[0], row)})
        segments.append(Segment(text, style, control))
    return Strip(segments, strip.cell_length)


def _content(line: Text, console: object) -> Content:
    """One paragraph as Textual content (as a Static makes it from a rich text)."""
    return Content.from_rich_text(line, console)  # type: ignore[arg-type]
