"""The status line: above the footer, always visible, never over the content.

It replaces toasts: what a grade did, why a key saved nothing, what went wrong. An error stays
until the next key; other messages stay until a newer one replaces them. A message is shown
whole: it wraps onto a second and third row when it needs them (the line grows, the content above
gives way); a message longer still ends its third row with ``… (all of it: ctrl+p messages)``, and
the messages log has it whole. The line shrinks back only after ``SHRINK_DELAY`` seconds of
shorter messages, so that grading pair after pair (messages of one and two rows in turn) does not
make the content above jump, nor lay the screen out again, at every key.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

from rich.console import Console
from rich.text import Text
from textual.events import Resize
from textual.timer import Timer
from textual.widgets import Static

from ragtui.core.text import visible_line
from ragtui.tui.widgets.text import covered

#: The most rows the status line grows to.
MAX_ROWS = 3
#: Ends the last row of a message too long for ``MAX_ROWS`` rows.
MORE = "… (all of it: ctrl+p messages)"
#: Seconds the line keeps rows it no longer needs.
SHRINK_DELAY = 4.0


@dataclass(frozen=True)
class Status:
    """A status message: its text and whether it is an error."""

    text: str = ""
    error: bool = False
    #: When it was said (HH:MM:SS), for the log of recent messages.
    when: str = field(default="", compare=False)
    #: Whether it describes the questions shown (cleared when the list changes).
    about_shown: bool = field(default=False, compare=False)


#: Wraps messages (no output: only its measuring is used).
_CONSOLE = Console(width=1000, color_system=None, file=io.StringIO(), legacy_windows=False)


def wrap_status(text: str, width: int, max_rows: int = MAX_ROWS) -> list[str]:
    """The rows a status message takes at ``width`` columns: wrapped at spaces (a longer word is
    folded), at most ``max_rows``; when more are needed the last row ends with ``MORE``. A row
    keeps the space it was wrapped at, so the rows joined are the message."""
    width = max(len(MORE) + 1, width)
    line = Text(visible_line(text))
    rows = [row.plain for row in line.wrap(_CONSOLE, width, overflow="fold")] or [""]
    if len(rows) <= max_rows:
        return rows
    kept = rows[:max_rows]
    last = Text(kept[-1].rstrip())
    last.truncate(width - len(MORE))
    kept[-1] = last.plain.rstrip() + MORE
    return kept


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

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        """An empty status line."""
        super().__init__("", id=id, classes=classes, markup=False)
        #: The message shown (shown again, wrapped anew, when the width changes).
        self.status = Status()
        self._rows = 1
        self._shown = ""
        #: Seconds the line keeps rows it no longer needs (tests make it short).
        self.shrink_delay = SHRINK_DELAY
        self._shrink_timer: Timer | None = None

    def show(self, status: Status) -> None:
        """Show a status message (control characters made visible), on as many rows as it needs
        (at most ``MAX_ROWS``). Under another screen nothing is drawn: a change there makes the
        screen on top repaint the region (the judging view redrew 44 lines a key for the main
        screen's status line); its screen shows the latest message when it is shown again."""
        self.status = status
        if self.is_attached and covered(self.screen):
            return
        rows = wrap_status(status.text, self._width())
        # A new layout (tens of ms for the whole screen) only when the line grows, or when it has
        # needed fewer rows for a while.
        if self._shrink_timer is not None:
            self._shrink_timer.stop()
            self._shrink_timer = None
        if len(rows) > self._rows:
            self._set_rows(len(rows))
        elif len(rows) < self._rows and self.is_attached:
            self._shrink_timer = self.set_timer(self.shrink_delay, self._shrink)
        self._shown = "".join(rows)
        shown = "\n".join(row.rstrip() for row in rows)
        self.update(Text(shown, no_wrap=True, overflow="ellipsis"), layout=False)
        if self.has_class("-error") != status.error:
            self.set_class(status.error, "-error")

    def _set_rows(self, rows: int) -> None:
        """Make the line ``rows`` rows high."""
        self._rows = rows
        self.styles.height = rows

    def _shrink(self) -> None:
        """As many rows as the message shown needs."""
        self._shrink_timer = None
        rows = len(wrap_status(self.status.text, self._width()))
        if rows < self._rows and not (self.is_attached and covered(self.screen)):
            self._set_rows(rows)

    def _width(self) -> int:
        """The columns a row of text has (the app's width before the first layout)."""
        width = self.content_region.width if self.size.width else 0
        if width <= 0 and self.is_attached:
            width = self.app.size.width - 2
        return max(1, width)

    def on_resize(self, event: Resize) -> None:
        """Wrap the message again for the new width."""
        self.show(self.status)

    @property
    def plain(self) -> str:
        """The text shown, its rows joined (the message as it was said, unless it was cut)."""
        return self._shown

    @property
    def rows(self) -> list[str]:
        """The rows shown."""
        content = self.content
        text = content.plain if isinstance(content, Text) else str(content)
        return text.split("\n")
