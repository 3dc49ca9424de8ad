"""The status line: one line above the footer, always visible, never over the content.

It replaces toasts: what a grade did, why a key saved nothing, what went wrong. An error stays
until the next key; other messages stay until a newer one replaces them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text
from textual.widgets import Static

from ragtui.core.text import visible_line
from ragtui.tui.widgets.text import covered


@dataclass(frozen=True)
class Status:
    """A status message: its text and whether it is an error."""

    text: str = ""
    error: bool = False
    #: When it was said (HH:MM:SS), for the log of recent messages.
    when: str = field(default="", compare=False)


class StatusLine(Static):
    """Shows a status message; its screen feeds it the app's messages."""

    DEFAULT_CSS = """
    StatusLine {
        height: 1;
        padding: 0 1;
        background: $boost;
        color: $text-muted;
    }
    StatusLine.-error {
        background: $error-muted;
        color: $text;
        text-style: bold;
    }
    """

    def show(self, status: Status) -> None:
        """Show a status message (control characters made visible). Under another screen nothing
        is drawn: a change there makes the screen on top repaint the region (the judging view
        redrew 44 lines a key for the main screen's status line); its screen shows the latest
        message when it is shown again."""
        if self.is_attached and covered(self.screen):
            return
        # One line, always: no new layout (a layout pass of the whole screen costs tens of ms).
        self.update(
            Text(visible_line(status.text), no_wrap=True, overflow="ellipsis"), layout=False
        )
        if self.has_class("-error") != status.error:
            self.set_class(status.error, "-error")

    @property
    def plain(self) -> str:
        """The text shown."""
        content = self.content
        return content.plain if isinstance(content, Text) else str(content)
