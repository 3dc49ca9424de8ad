"""A chunk full screen: all of its text, highlighted, for chunks longer than the chunk view."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from ragtui.core.workspace import Workspace
from ragtui.tui.widgets.chunk_view import chunk_header, highlighted_text
from ragtui.tui.widgets.text import set_frame_text


class ChunkScreen(ModalScreen[None]):
    """One chunk, its origin and grade, the evidence and question terms highlighted; scroll with the arrows."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape,q,enter",
            "dismiss",
            "Close",
            tooltip="Back to the result lists.",
            id="chunk.close",
        ),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {"chunk-screen--evidence", "chunk-screen--term"}
    """Styles of an evidence string and of a question term."""

    def __init__(self, workspace: Workspace, qid: str | None, cid: str) -> None:
        """The chunk ``cid`` seen for question ``qid``."""
        super().__init__(id="chunk-screen")
        #: The workspace the chunk belongs to.
        self.workspace = workspace
        #: The question (for the highlights and the grade).
        self.qid = qid
        #: The chunk shown.
        self.cid = cid

    def compose(self) -> ComposeResult:
        """The header and the text in a focused scroll area."""
        with VerticalScroll(id="chunk-box") as box:
            set_frame_text(box, f"chunk {self.cid}")
            yield Static(id="chunk-screen-header")
            yield Static(id="chunk-screen-text")
        yield Footer()

    def on_mount(self) -> None:
        """Fill in the text once styles are known, and focus the scroll area."""
        ws = self.workspace
        chunk = ws.passages.by_id[self.cid]
        question = ws.questions.by_id.get(self.qid) if self.qid else None
        self.query_one("#chunk-screen-header", Static).update(chunk_header(ws, self.qid, self.cid))
        self.query_one("#chunk-screen-text", Static).update(
            highlighted_text(
                chunk.text,
                question.evidence if question else (),
                question.text if question else "",
                self.get_component_rich_style("chunk-screen--evidence"),
                self.get_component_rich_style("chunk-screen--term"),
            )
        )
        self.query_one("#chunk-box").focus()
