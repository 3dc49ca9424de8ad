"""A modal report screen: a ``Report`` drawn by ``ReportView`` in a titled, scrolling frame."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer

from ragtui.core.report_model import Note, Report, Tone, text_section
from ragtui.core.text import visible_line
from ragtui.tui.widgets.report_view import ReportView


def _title(report: Report) -> Text:
    """A report's title for a frame: a Text, because a plain string there would be read as markup."""
    return Text(visible_line(report.title))


def message_report(title: str, text: str, tone: Tone = "dim") -> Report:
    """A report of one line: ``comparing…`` while a worker computes, or why it failed."""
    return Report(title, (text_section(Note(text, tone)),))


class ReportScreen(ModalScreen[None]):
    """A read-only report; escape closes it. Shows ``report``, or a message until one is set."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape,q", "dismiss", "Close", tooltip="Back to the main screen.", id="report.close"
        ),
    ]

    def __init__(self, report: Report, *, id: str | None = None) -> None:
        """A screen showing ``report`` (its title goes in the frame)."""
        super().__init__(id=id)
        #: The report shown.
        self.report = report

    def compose(self) -> ComposeResult:
        """The report in a scrolling frame, and the footer."""
        with VerticalScroll(classes="report-box") as box:
            box.border_title = _title(self.report)
            yield from self.compose_body()
        yield Footer()

    def compose_body(self) -> ComposeResult:
        """The widgets inside the frame (default: the report view)."""
        yield ReportView(self.report, classes="report-body")

    @property
    def view(self) -> ReportView:
        """The report view."""
        return self.query_one(ReportView)

    def show_report(self, report: Report) -> None:
        """Show another report (a worker's result, or a message)."""
        self.report = report
        self.query_one(".report-box").border_title = _title(report)
        self.view.show(report)

    def show_message(self, text: str, tone: Tone = "dim") -> None:
        """Show one line under the current title: work in progress, or why it failed."""
        self.show_report(message_report(self.report.title, text, tone))

    @property
    def plain(self) -> str:
        """The report as the view shows it, without styles (what tests read)."""
        return self.view.plain
