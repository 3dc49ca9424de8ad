"""The embedding progress row: what is being embedded, and a bar (hidden when nothing is)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, ProgressBar


class ProgressRow(Horizontal):
    """A label and a progress bar on one row; hidden until ``show``."""

    def compose(self) -> ComposeResult:
        """The label, then the bar."""
        yield Label("embedding", id="progress-label")
        yield ProgressBar(id="progress", show_eta=False)

    def show(self, done: int, total: int, rate: str = "") -> None:
        """Show embedding progress (total 0: the model is still loading)."""
        self.display = True
        bar = self.query_one("#progress", ProgressBar)
        label = self.query_one("#progress-label", Label)
        if total <= 0 or done <= 0:
            label.update(f"loading the embedding model ({total} texts to embed)…")
            bar.update(total=None)
        else:
            label.update(f"embedding {done}/{total} texts{rate}")
            bar.update(total=total, progress=done)

    def hide(self) -> None:
        """Hide the row."""
        self.display = False
