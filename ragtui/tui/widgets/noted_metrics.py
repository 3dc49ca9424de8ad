"""The metric panel with a passing note: how the last grade moved nDCG, under the table for a while."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from ragtui.tui.widgets.metrics_panel import MetricsPanel

#: How long a note stays under the metric table, in seconds.
NOTE_SECONDS = 8.0


class NotedMetricsPanel(MetricsPanel):
    """A ``MetricsPanel`` that keeps the lines of a passing note (the screen draws them with the
    table); when they expire it says so (``NoteExpired``), for the screen to draw it without them."""

    @dataclass
    class NoteExpired(Message):
        """The note's time is up: it is gone from ``notes``."""

        panel: NotedMetricsPanel

        @property
        def control(self) -> NotedMetricsPanel:
            """The panel whose note it was."""
            return self.panel

    def __init__(self, content: str = "", *, id: str | None = None) -> None:
        """A panel showing ``content`` until the first ``show``."""
        super().__init__(content, id=id)
        #: The note's lines (none when there is no note).
        self.notes: list[str] = []
        self._note_token = 0

    def note(self, lines: list[str]) -> None:
        """Keep ``lines`` as the note for ``NOTE_SECONDS`` (a newer note replaces it, and its time)."""
        self.notes = lines
        self._note_token += 1
        token = self._note_token

        def expire() -> None:
            if self._note_token == token:
                self.notes = []
                self.post_message(self.NoteExpired(self))

        self.set_timer(NOTE_SECONDS, expire)
