"""A modal report screen: a titled, scrolling stack of text blocks (corpus text always as ``rich.text.Text``)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static


class ReportScreen(ModalScreen[None]):
    """A read-only report; subclasses fill ``body`` (a Static) with a ``Text``; escape closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape,q", "dismiss", "Close", tooltip="Back to the main screen.", id="report.close"
        ),
    ]

    #: The frame title.
    report_title = "report"

    def compose(self) -> ComposeResult:
        """The report body in a scrolling frame, and the footer."""
        with VerticalScroll(classes="report-box") as box:
            box.border_title = self.report_title
            yield from self.compose_body()
        yield Footer()

    def compose_body(self) -> ComposeResult:
        """The widgets inside the frame (default: one text body)."""
        yield Static(Text("working…"), classes="report-body", markup=False)

    @property
    def body(self) -> Static:
        """The main text block."""
        return self.query_one(".report-body", Static)

    def set_body(self, text: Text) -> None:
        """Replace the report text."""
        self.body.update(text)

    @property
    def plain(self) -> str:
        """Every text block of the report, without styles (what tests read)."""
        parts = []
        for static in self.query(Static):
            content = static.content
            parts.append(content.plain if isinstance(content, Text) else str(content))
        return "\n".join(parts)
