"""The embedding progress row: what is being embedded, and a bar (hidden when nothing is)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, ProgressBar


class ProgressRow(Horizontal):
    """A label and a progress bar on one row; hidden until ``show``.

    The bar is made on the first ``show``: a warm start never embeds, and composing the bar's
    parts (bar, percentage) cost 10-20 ms of the first screen.
    """

    def compose(self) -> ComposeResult:
        """The label (the bar comes with the first ``show``)."""
        yield Label("embedding", id="progress-label")

    def _bar(self) -> ProgressBar:
        """The bar, mounted now if this is the first time it is shown."""
        found = self.query("#progress")
        if found:
            return found.first(ProgressBar)
        bar = ProgressBar(id="progress", show_eta=False)
        self.mount(bar)
        return bar

    def show(self, done: int, total: int, rate: str = "") -> None:
        """Show embedding progress (total 0: the model is still loading)."""
        self.display = True
        bar = self._bar()
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
