"""Small screens: a load error, the problems ``ragtui check`` finds, and a one-line prompt."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Input, Label, Static

from ragtui.core.report_model import Report
from ragtui.tui.screens.report import ReportScreen
from ragtui.tui.widgets.text import set_frame_text
from ragtui.tui.widgets.text_box import TextBox


class LoadErrorScreen(Screen[None]):
    """Loading the corpus or golden set failed: the message, and how to leave."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "q,escape", "app.quit", "Quit", show=False, tooltip="Quit ragtui.", id="error.quit"
        ),
    ]

    def __init__(self, message: str) -> None:
        """A screen showing ``message``."""
        super().__init__(id="load-error")
        #: The one-line error message.
        self.message = message

    def compose(self) -> ComposeResult:
        """The message in a frame, and the footer."""
        with Vertical(id="error-box") as box:
            box.border_title = "ragtui cannot start"
            yield Static(Text(self.message), id="error-message")
            yield Static(
                Text("Fix the file named above, then run ragtui again. Press q to quit."),
                id="error-hint",
            )
        yield Footer()


class ProblemsScreen(ReportScreen):
    """The problems ``ragtui check`` reports, one a line, and the counts (``reports.check_screen``)."""

    def __init__(self, report: Report) -> None:
        """A screen showing check's ``report``."""
        super().__init__(report, id="problems")


class PromptScreen(ModalScreen[str | None]):
    """Asks for one line of text (a folder); enter accepts, escape cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "cancel",
            "Cancel",
            tooltip="Close without doing anything.",
            id="prompt.cancel",
        ),
    ]

    def __init__(self, title: str, value: str) -> None:
        """A prompt titled ``title`` with ``value`` filled in."""
        super().__init__(id="prompt")
        #: What is asked.
        self.title_text = title
        #: The value filled in.
        self.value = value

    def compose(self) -> ComposeResult:
        """The question and an input."""
        with Vertical(id="prompt-box") as box:
            set_frame_text(box, self.title_text)
            yield TextBox(self.value, id="prompt-input")
            yield Label("enter: accept · escape: cancel", id="prompt-hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Accept the value."""
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        """Close without a value."""
        self.dismiss(None)
