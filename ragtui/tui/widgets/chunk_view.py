"""The chunk view: a chunk's full text with the evidence and the question's terms highlighted."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.widgets import Static

from ragtui.core.data.golden import evidence_spans, passage_start, term_spans
from ragtui.core.text import visible_line
from ragtui.core.workspace import Workspace
from ragtui.tui.widgets.text import data_text, set_frame_text


def chunk_header(ws: Workspace, qid: str | None, cid: str) -> Text:
    """Where a chunk comes from (document, heading path, span, tokens) and its grade for the question."""
    chunk = ws.chunk_by_id[cid]
    place = " › ".join((chunk.doc, *chunk.heading_path))
    header = Text(
        visible_line(f"{place} · chars {chunk.start}–{chunk.end} · {chunk.token_count} tokens")
    )
    if qid is not None:
        grade, source = ws.grade_source(qid, cid)
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
    spans: list[tuple[int, int, Style]] = [
        (s, e, term_style) for s, e in term_spans(text, question)
    ]
    spans += [(s, e, evidence_style) for s, e in evidence_spans(text, evidence)]
    return data_text(text, spans)


def neighbours(ws: Workspace, cid: str) -> tuple[str | None, str | None]:
    """The chunks before and after ``cid`` in its document (None at either end)."""
    position = ws.chunk_order.get(cid)
    chunk = ws.chunk_by_id.get(cid)
    if position is None or chunk is None:
        return None, None
    before = ws.chunks[position - 1] if position > 0 else None
    after = ws.chunks[position + 1] if position + 1 < len(ws.chunks) else None
    return (
        before.id if before is not None and before.doc == chunk.doc else None,
        after.id if after is not None and after.doc == chunk.doc else None,
    )


class ChunkView(VerticalScroll, can_focus=False):
    """A chunk in full, scrolled to the passage that matched (its evidence, else the densest
    question terms), with a header saying where it is from; optionally with the chunks before and
    after it in its document, for context."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "chunk-view--evidence",
        "chunk-view--term",
        "chunk-view--context",
    }
    """Styles of an evidence string, of a question term, and of the neighbouring chunks' text."""

    def compose(self) -> ComposeResult:
        """The header line and the text."""
        yield Static("", id="chunk-header")
        yield Static("", id="chunk-text")

    def __init__(self, *, id: str | None = None, header: bool = True) -> None:
        """An empty view (``header`` False: the caller shows where the chunk is from)."""
        super().__init__(id=id)
        #: False while a scroll to the evidence waits for the layout (tests wait for True).
        self.scroll_settled = True
        self._with_header = header
        self._shown: tuple[str | None, str | None, bool, bool] = (None, None, False, True)
        self._scroll_token = 0
        self._scroll_target: tuple[int, str, int] | None = None

    def notify_style_update(self) -> None:
        """A theme change restyles the highlights: the next ``show`` draws the text again."""
        super().notify_style_update()
        self._shown = (None, None, False, True)

    def on_mount(self) -> None:
        """Hide the header when the caller shows it."""
        self.query_one("#chunk-header").display = self._with_header

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
        header = self.query_one("#chunk-header", Static)
        body = self.query_one("#chunk-text", Static)
        same = self._shown == (qid, cid, context, evidence)
        self._shown = (qid, cid, context, evidence)
        if ws is None or cid is None or cid not in ws.chunk_by_id:
            set_frame_text(self, "chunk")
            header.update(Text("no chunk highlighted"))
            body.update(Text(""))
            return
        chunk = ws.chunk_by_id[cid]
        question = ws.question_by_id.get(qid) if qid else None
        set_frame_text(self, f"chunk {cid}")
        new_header = chunk_header(ws, qid, cid)
        if note:
            new_header.append("\n" + visible_line(note), "bold")
        old_header = header.content
        # Skip the costly layout (a grade changed) when the size cannot change.
        header_same_size = isinstance(old_header, Text) and len(old_header.plain) == len(
            new_header.plain
        )
        if not (same and isinstance(old_header, Text) and old_header == new_header):
            header.update(new_header, layout=not (same and header_same_size))
        if same:
            return  # the text and its highlights are the same; keep the reader's scroll position
        spans = question.evidence if question and evidence else ()
        terms = question.text if question else ""
        text = highlighted_text(
            chunk.text,
            spans,
            terms,
            self.get_component_rich_style("chunk-view--evidence"),
            self.get_component_rich_style("chunk-view--term"),
        )
        lead = 0
        if context:
            before, after = neighbours(ws, cid)
            dim = self.get_component_rich_style("chunk-view--context")
            framed = Text()
            if before is not None:
                framed.append_text(
                    data_text(
                        ws.chunk_by_id[before].text, [(0, len(ws.chunk_by_id[before].text), dim)]
                    )
                )
                framed.append(f"\n── ↑ {visible_line(before)} · ↓ {visible_line(cid)} ──\n", dim)
            lead = len(framed.plain)
            framed.append_text(text)
            if after is not None:
                framed.append(f"\n── ↓ {visible_line(after)} ──\n", dim)
                framed.append_text(
                    data_text(
                        ws.chunk_by_id[after].text, [(0, len(ws.chunk_by_id[after].text), dim)]
                    )
                )
            text = framed
        body.update(text)
        offset, found = passage_start(chunk.text, spans, terms)
        self._scroll_token += 1
        self.scroll_settled = found == "start" and lead == 0
        if self.scroll_settled:
            self.scroll_home(animate=False)
            return
        offset = lead + _shown_length(chunk.text, offset)
        target = self._target_line(text.plain, offset)
        if target is None:  # not laid out yet (the first screen): once it is
            self.scroll_home(animate=False)
            self.call_after_refresh(self._scroll_to_offset, self._scroll_token, text.plain, offset)
            return
        # The same frame as the new text: the scroll range is the one the coming layout will give
        # (the lines counted here), so the view is drawn once, at the passage, not first at the top.
        line, total = target
        self.virtual_size = Size(self.virtual_size.width, total)
        self._scroll_target = (self._scroll_token, text.plain, offset)
        self._scroll_y_settle(self._scroll_token, line, None, 10)

    def _scroll_to_offset(self, token: int, text: str, offset: int, attempts: int = 10) -> None:
        """Scroll so that the line holding character ``offset`` of the text is in view (once the
        view has a size: until then, after each refresh)."""
        if token != self._scroll_token:
            return  # another chunk is shown now
        target = self._target_line(text, offset)
        if target is None:
            if attempts > 0:  # not laid out yet (the first screen): try after the next refresh
                self.call_after_refresh(self._scroll_to_offset, token, text, offset, attempts - 1)
            else:
                self.scroll_settled = True
            return
        self._scroll_target = (token, text, offset)
        self._scroll_y_settle(token, target[0], None, attempts)

    def _target_line(self, text: str, offset: int) -> tuple[int, int] | None:
        """The scroll position that shows the line holding character ``offset`` of the text (one
        line above it), and the number of lines of header and text; None while the view has no
        size. The lines are counted by wrapping the header and the text at the view's width, not
        read from the children's regions, which lag one layout behind a content change."""
        width = self.scrollable_content_region.width
        height = self.scrollable_content_region.height
        if width <= 0 or height <= 0:
            return None
        header = self.query_one("#chunk-header", Static)
        header_content = header.content
        margin = header.styles.margin.bottom if header.display else 0

        def lines(content: str | Text, at: int) -> int:
            text = content if isinstance(content, Text) else Text(content)
            return len(text.wrap(self.app.console, at))

        def header_lines(at: int) -> int:
            shown = isinstance(header_content, Text) and header.display
            return lines(header_content, at) if shown and isinstance(header_content, Text) else 0

        bar = self.styles.scrollbar_size_vertical
        above = header_lines(width) + margin
        total = above + lines(text, width)
        # The new text may not be laid out yet: if it is taller than the view, a scrollbar will
        # appear and narrow it, and the lines must be counted at that width.
        if not self.show_vertical_scrollbar and 0 < bar < width and total > height:
            width -= bar
            above = header_lines(width) + margin
            total = above + lines(text, width)
        line = above + lines(text[:offset], width) - 1
        return (max(0, line - 1) if line >= height else 0), total

    def _scroll_y_settle(self, token: int, y: int, limit: float | None, attempts: int) -> None:
        """Scroll to ``y``; the scroll range may still grow while the new text is laid out (``y``
        would be cut to the old range), so scroll again after each refresh until the range stays."""
        if token != self._scroll_token:
            return
        self.scroll_to(y=y, animate=False)
        if y <= self.max_scroll_y or (limit == self.max_scroll_y) or attempts <= 0:
            self.scroll_settled = True
            return
        self.call_after_refresh(self._scroll_y_settle, token, y, self.max_scroll_y, attempts - 1)

    def on_resize(self) -> None:
        """Keep the evidence in view when the view changes size (layout switch, terminal resize)."""
        if self._scroll_target is not None and self._scroll_target[0] == self._scroll_token:
            self.scroll_settled = False  # until the evidence is scrolled into view at the new size
            self.call_after_refresh(self._scroll_to_offset, *self._scroll_target)


def _shown_length(raw: str, offset: int) -> int:
    """Where character ``offset`` of ``raw`` lands once control characters are shown as escapes."""
    return len(data_text(raw[:offset]).plain)
