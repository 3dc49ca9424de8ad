"""The chunk view: a chunk's full text with the evidence and the question's terms highlighted.

Drawn through Textual's Line API: the header and the text are split into their paragraphs (the
lines between newlines, each wrapped on its own, as Textual wraps them), the lines each paragraph
wraps to are counted once per text and width (a paragraph that fits is one line without
wrapping), and only the paragraphs on screen are rendered. The rendered paragraphs of the last
texts shown are kept per text, highlights and width, so a chunk seen again is drawn from them; a
new chunk costs its visible lines, not its whole text, and no layout pass of the screen.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, ClassVar

from rich.segment import Segments
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.selection import Selection
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.timer import Timer
from textual.widget import Widget

from ragtui.core.data.golden import Question, evidence_spans, passage_start, term_spans
from ragtui.core.text import visible_line
from ragtui.core.workspace import Workspace
from ragtui.tui.widgets.paragraphs import Paragraphs
from ragtui.tui.widgets.row_list import ListScrollBar, own_scrollbar, repaint_changed_rows
from ragtui.tui.widgets.text import data_text, set_frame_text

#: Texts whose rendered paragraphs are kept (per highlights and width).
KEPT_TEXTS = 16


def chunk_header(ws: Workspace, qid: str | None, cid: str) -> Text:
    """Where a chunk comes from (document, heading path, span, tokens) and its grade for the question."""
    chunk = ws.passages.by_id[cid]
    place = " › ".join((chunk.doc, *chunk.heading_path))
    header = Text(
        visible_line(f"{place} · chars {chunk.start}–{chunk.end} · {chunk.token_count} tokens")
    )
    if qid is not None:
        grade, source = ws.grades.grade_source(qid, cid)
        header.append("\n")
        if grade is None:
            header.append(visible_line(f"not graded for {qid}"))
        else:
            header.append(visible_line(f"grade {grade} ({source}) for {qid}"))
    return header


def highlighted_text(
    text: str, evidence: tuple[str, ...], question: str, evidence_style: Style, term_style: Style
) -> Text:
    """The text as data (never markup), question terms then evidence spans styled on top."""
    return data_text(text, _highlights(text, evidence, question, evidence_style, term_style))


def _highlights(
    text: str, evidence: tuple[str, ...], question: str, evidence_style: Style, term_style: Style
) -> list[tuple[int, int, Style]]:
    """The styled spans of ``highlighted_text``: question terms, then evidence spans on top."""
    spans: list[tuple[int, int, Style]] = [
        (s, e, term_style) for s, e in term_spans(text, question)
    ]
    spans += [(s, e, evidence_style) for s, e in evidence_spans(text, evidence)]
    return spans


def neighbours(ws: Workspace, cid: str) -> tuple[str | None, str | None]:
    """The chunks before and after ``cid`` in its document (None at either end)."""
    position = ws.passages.order.get(cid)
    chunk = ws.passages.by_id.get(cid)
    if position is None or chunk is None:
        return None, None
    before = ws.data.chunks[position - 1] if position > 0 else None
    after = ws.data.chunks[position + 1] if position + 1 < len(ws.data.chunks) else None
    return (
        before.id if before is not None and before.doc == chunk.doc else None,
        after.id if after is not None and after.doc == chunk.doc else None,
    )


#: The styles a text is drawn in: the evidence's, a term's, the context's, the header's, the
#: view's, and the margin under the header.
_StyleKey = tuple[Style, Style, Style, VisualStyle, VisualStyle, int]


class _TrackRender(ScrollBarRender):
    """Textual's scrollbar, drawn as its track alone while the whole text is in view (Textual
    would fill the track with the thumb): the judging view keeps its chunk's scrollbar, so that
    a chunk that fits after one that did not lays nothing out again."""

    @classmethod
    def render_bar(cls, *args: Any, **kwargs: Any) -> Segments:
        if kwargs.get("window_size", 0) >= kwargs.get("virtual_size", 0):
            kwargs["window_size"] = 0
        return super().render_bar(*args, **kwargs)


class _ChunkScrollBar(ListScrollBar):
    renderer = _TrackRender


class ChunkView(ScrollView, can_focus=False):
    """A chunk in full, scrolled to the passage that matched (its evidence, else the densest
    question terms), with a header saying where it is from; optionally with the chunks before and
    after it in its document, for context."""

    DEFAULT_CSS = """
    ChunkView {
        overflow-x: hidden;
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "chunk-view--header",
        "chunk-view--evidence",
        "chunk-view--term",
        "chunk-view--context",
    }
    """Styles of the header (its colour and the margin under it), of an evidence string, of a
    question term, and of the neighbouring chunks' text."""

    def __init__(self, *, id: str | None = None, header: bool = True) -> None:
        """An empty view (``header`` False: the caller shows where the chunk is from)."""
        super().__init__(id=id)
        #: False while a scroll to the evidence waits for the view to have a size.
        self.scroll_settled = True
        self._with_header = header
        self._shown: tuple[str | None, str | None, bool, bool] = (None, None, False, True)
        self._header_text = Text("")
        self._header_paragraphs: Paragraphs | None = None
        self._body: Paragraphs | None = None
        #: The texts shown lately, by chunk, context and highlights.
        self._kept: OrderedDict[tuple[object, ...], Paragraphs] = OrderedDict()
        #: The character of the text to keep in view (None: the top), and the lines above it.
        self._target: int | None = None
        self._scroll_token = 0
        self._styles_seen: _StyleKey | None = None
        #: The width, lines of header and margin, and lines in all at the last layout.
        self._laid: tuple[int, int, int] = (0, 0, 0)
        #: (size, container size, virtual size) at the last size update (see ``_size_updated``).
        self._sized: tuple[Size, Size, Size] | None = None
        #: The look-ahead waiting to run (``look_ahead``), if any.
        self._preparing: Timer | None = None

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """The vertical scrollbar, with no thumb while the text fits."""
        return own_scrollbar(self, _ChunkScrollBar)

    # ---- what tests and screens read ----------------------------------------------------------

    @property
    def body_text(self) -> Text:
        """The chunk's text as shown, with its highlights (and the neighbours, with context)."""
        return self._body.text if self._body is not None else Text("")

    # ---- styles -------------------------------------------------------------------------------

    def _seen_styles(self) -> _StyleKey:
        """The styles as last read (read when first asked; a theme change reads them again:
        ``notify_style_update``)."""
        if self._styles_seen is None:
            self._styles_seen = self._style_key()
        return self._styles_seen

    def _style_key(self) -> _StyleKey:
        return (
            self.get_component_rich_style("chunk-view--evidence"),
            self.get_component_rich_style("chunk-view--term"),
            self.get_component_rich_style("chunk-view--context"),
            self.get_visual_style("chunk-view--header"),
            self.visual_style,
            self._margin(),
        )

    def notify_style_update(self) -> None:
        """A theme change restyles the highlights: the next ``show`` draws the text again (a
        style update that changed nothing, such as the hover of an ancestor, keeps it)."""
        super().notify_style_update()
        if self._styles_seen is None:
            return
        key = self._style_key()
        if key != self._styles_seen:
            self._styles_seen = key
            self._shown = (None, None, False, True)
            self._kept.clear()
            self._relayout()

    def _margin(self) -> int:
        """Blank lines under the header."""
        if not self._with_header:
            return 0
        return self.get_component_styles("chunk-view--header").margin.bottom

    # ---- showing a chunk ----------------------------------------------------------------------

    def show(
        self,
        ws: Workspace | None,
        qid: str | None,
        cid: str | None,
        context: bool = False,
        note: str = "",
        evidence: bool = True,
    ) -> None:
        """Show a chunk for a question, scrolled to the passage that matched; ``context`` adds the
        chunks before and after it in its document; ``evidence`` False neither highlights the
        evidence nor scrolls to it (blind judging: the question's words only)."""
        self._seen_styles()
        same = self._shown == (qid, cid, context, evidence)
        self._shown = (qid, cid, context, evidence)
        if ws is None or cid is None or cid not in ws.passages.by_id:
            set_frame_text(self, "chunk")
            self._set_header(Text("no chunk highlighted"))
            self._set_body(Paragraphs(Text(""), self), None)
            return
        question = ws.questions.by_id.get(qid) if qid else None
        set_frame_text(self, f"chunk {cid}")
        new_header = chunk_header(ws, qid, cid)
        if note:
            new_header.append("\n" + visible_line(note), "bold")
        if same:
            # A grade changed: the header only; the reader's scroll position stays.
            self._set_header(new_header, keep_scroll=True)
            return
        self._set_header(new_header, redraw=False)
        self._set_body(*self._body_for(ws, question, cid, context, evidence))

    def _body_for(
        self, ws: Workspace, question: Question | None, cid: str, context: bool, evidence: bool
    ) -> tuple[Paragraphs, int | None]:
        """A chunk's text as shown for ``question`` (kept: the texts shown lately are not laid
        out again) and the character to keep in view (None: the top)."""
        chunk = ws.passages.by_id[cid]
        spans = question.evidence if question and evidence else ()
        terms = question.text if question else ""
        evidence_style, term_style = self._seen_styles()[:2]
        highlights = _highlights(chunk.text, spans, terms, evidence_style, term_style)
        lead = 0
        before = after = None
        if context:
            before, after = neighbours(ws, cid)
            if before is not None:
                lead = len(data_text(ws.passages.by_id[before].text).plain) + len(
                    f"\n── ↑ {visible_line(before)} · ↓ {visible_line(cid)} ──\n"
                )
        key = (cid, chunk.text, context, before, after, tuple(highlights))
        body = self._kept.get(key)
        if body is None:
            body = Paragraphs(self._framed(ws, cid, highlights, before, after), self)
            self._kept[key] = body
            if len(self._kept) > KEPT_TEXTS:
                self._kept.popitem(last=False)
        else:
            self._kept.move_to_end(key)
        offset, found = passage_start(chunk.text, spans, terms)
        target = (
            None if found == "start" and lead == 0 else lead + _shown_length(chunk.text, offset)
        )
        return body, target

    #: How long after a key is drawn its look-ahead runs (never before the key's own paint,
    #: which it would delay): a key already waiting goes first.
    PREPARE_AFTER = 0.005

    def look_ahead(self, work: Callable[[], None]) -> None:
        """Run ``work`` (laying out what the next key is likely to show, here and in the lists)
        once this key's changes are applied and drawn, ``PREPARE_AFTER`` later; a newer
        look-ahead replaces one still waiting. Asked for after the app's pending requests (a
        digit's grade): asked for at once, it made the screen paint before the grade was applied,
        and the status line's "saved" came in a second paint 30 ms later."""
        self.app.call_next(self.call_after_refresh, self._look_ahead_soon, work)

    def _look_ahead_soon(self, work: Callable[[], None]) -> None:
        if self._preparing is not None:
            self._preparing.stop()
        self._preparing = self.set_timer(self.PREPARE_AFTER, work, name="look-ahead")

    def prepare(
        self, ws: Workspace, qid: str, cid: str, context: bool = False, evidence: bool = True
    ) -> None:
        """Lay out and draw ahead the lines ``show`` would show first for a chunk and question
        (the one the next key is likely to show), so that showing it costs little."""
        width, above, _ = self._laid
        height = self.content_region.height
        if width <= 0 or height <= 0 or cid not in ws.passages.by_id:
            return
        question = ws.questions.by_id.get(qid)
        body, target = self._body_for(ws, question, cid, context, evidence)
        found = above + body.line_of(self, width, target) if target is not None else 0
        top = max(0, found - 1) if found >= height else 0
        row = len(self._header_paragraphs.paragraphs) if self._header_paragraphs else 0
        for y in range(max(0, top - above), top - above + height):
            body.line(self, width, self.visual_style, y, row)

    def _framed(
        self,
        ws: Workspace,
        cid: str,
        highlights: list[tuple[int, int, Style]],
        before: str | None,
        after: str | None,
    ) -> Text:
        """The chunk's text with its highlights, and with context the neighbours around it."""
        text = data_text(ws.passages.by_id[cid].text, highlights)
        if before is None and after is None:
            return text
        dim = self.get_component_rich_style("chunk-view--context")
        framed = Text()
        if before is not None:
            neighbour = ws.passages.by_id[before].text
            framed.append_text(data_text(neighbour, [(0, len(neighbour), dim)]))
            framed.append(f"\n── ↑ {visible_line(before)} · ↓ {visible_line(cid)} ──\n", dim)
        framed.append_text(text)
        if after is not None:
            neighbour = ws.passages.by_id[after].text
            framed.append(f"\n── ↓ {visible_line(after)} ──\n", dim)
            framed.append_text(data_text(neighbour, [(0, len(neighbour), dim)]))
        return framed

    def _set_header(self, header: Text, redraw: bool = True, keep_scroll: bool = False) -> None:
        """Show ``header``; with ``redraw``, repaint what changed (its lines that changed, or
        every line when its height changed)."""
        before = self._header_paragraphs
        if before is not None and header == self._header_text:
            return
        old = self._laid
        self._header_text = header
        self._header_paragraphs = Paragraphs(header, self, before) if self._with_header else None
        if not redraw:
            return
        self._relayout(scroll=not keep_scroll)
        width, above, _ = self._laid
        fresh = self._header_paragraphs
        if width and (width, above) == old[:2] and fresh is not None and before is not None:
            # The same height: repaint the header's lines that changed.
            for first, count in fresh.changed(self, width, before):
                self.refresh_lines(first, count)
        else:
            self._refresh_content()

    def _set_body(self, body: Paragraphs, target: int | None) -> None:
        """Show ``body``, scrolled so that character ``target`` is in view (None: the top)."""
        self._body = body
        self._target = target
        self._scroll_token += 1
        self._relayout(scroll=True)
        self._refresh_content()

    def _refresh_content(self) -> None:
        """Repaint the lines inside the frame (the frame's title repaints itself)."""
        self.refresh(Region(0, 0, self.size.width, self.size.height))

    # ---- lines and scrolling ------------------------------------------------------------------

    def _relayout(self, scroll: bool = True) -> None:
        """Count the lines at the view's width, set the scroll range to them (drawing the
        scrollbar when it comes or goes) and, with ``scroll``, scroll to the passage. Without a
        size yet, once the view has one."""
        region = self.content_region
        width, height = region.width, region.height
        if width <= 0 or height <= 0 or self._body is None:
            if scroll and self._target is not None:
                self.scroll_settled = False
                self._retry(self._scroll_token, 10)
            return
        # The text goes beside the scrollbar: the whole time when it stays (``overflow-y:
        # scroll``; laid under its track, a chunk that fit lost two characters a line), else
        # when the text is longer than the view.
        bar = self.styles.scrollbar_size_vertical
        always = self.styles.overflow_y == "scroll"
        if 0 < bar < width and always:
            width -= bar
        above, total = self._count(width)
        if 0 < bar < width and not always and total > height:
            width -= bar
            above, total = self._count(width)
        self._laid = (width, above, total)
        size = Size(width, total)
        with repaint_changed_rows(self):  # the scrollbar, in the rows the range and place change
            if size != self.virtual_size:
                # The scroll range without a layout pass of the screen (the scrollbar's own
                # visibility, when it changes, asks for one); the next layout pass has nothing to
                # redo (it would repaint the scrollbar a frame later).
                self.set_reactive(Widget.virtual_size, size)
                self._scroll_update(size)
                if self._sized is not None:
                    self._sized = (self._sized[0], self._sized[1], size)
            if not scroll:
                return
            line = 0
            if self._target is not None and self._body is not None:
                found = above + self._body.line_of(self, width, self._target)
                line = max(0, found - 1) if found >= height else 0
            self.scroll_to(y=line, animate=False, immediate=True)
        self.scroll_settled = True

    def _count(self, width: int) -> tuple[int, int]:
        """Lines of header and margin, and lines in all, at ``width``."""
        above = 0
        if self._header_paragraphs is not None:
            above = self._header_paragraphs.lines(self, width) + self._margin()
        body = self._body.lines(self, width) if self._body is not None else 0
        return above, above + body

    def _retry(self, token: int, attempts: int) -> None:
        """Scroll once the view has a size (after each refresh, a few times)."""

        def again() -> None:
            if token != self._scroll_token or self.scroll_settled:
                return
            region = self.content_region
            if region.width > 0 and region.height > 0:
                self._relayout(scroll=True)
                self._refresh_content()
            elif attempts > 0:
                self._retry(token, attempts - 1)
            else:
                self.scroll_settled = True

        self.call_after_refresh(again)

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        """Textual's ScrollView compares the layout's virtual size (never its own), so every
        layout pass anywhere on the screen would redraw the scrollbar: nothing to do when the
        view's size, its container and its own virtual size are what they were."""
        key = (size, container_size, self.virtual_size)
        if key == self._sized:
            return False
        self._sized = key
        resized = size != self._size
        changed = super()._size_updated(size, virtual_size, container_size, layout)
        if resized:
            # Count the lines at the new size and keep the passage in view (the first screen, a
            # layout switch, a terminal resize) now, so that the pass paints the text: the Resize
            # event comes after the paint, and the first screen showed no chunk for a frame.
            self._relayout(scroll=self._target is not None)
            self._refresh_content()
        return changed

    def render_line(self, y: int) -> Strip:
        """Line ``y`` of the view: the header, the margin under it, or the text."""
        width, above, _ = self._laid
        y += int(self.scroll_y)
        # Blank lines are left empty: the frame pads them with its background, as it did the
        # space below a text.
        blank = Strip([])
        if width <= 0:
            return blank
        header = self._header_paragraphs
        if header is not None and y < above:
            line = header.line(self, width, self.get_visual_style("chunk-view--header"), y)
            return line if line is not None else blank
        if self._body is None:
            return blank
        row = len(header.paragraphs) if header is not None else 0
        line = self._body.line(self, width, self.visual_style, y - above, row)
        return line if line is not None else blank

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The text under a mouse selection: the header's rows, then the text's."""
        rows = self._header_paragraphs.plain_rows() if self._header_paragraphs else []
        rows += self._body.plain_rows() if self._body is not None else []
        return selection.extract("\n".join(rows)), "\n"


def _shown_length(raw: str, offset: int) -> int:
    """Where character ``offset`` of ``raw`` lands once control characters are shown as escapes."""
    return len(data_text(raw[:offset]).plain)
