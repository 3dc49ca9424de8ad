"""The chunking diagnostics, computed in a worker from inputs captured when the screen was made."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual import work
from textual.message import Message

from ragtui.core.analysis.diagnostics import diagnose_chunks
from ragtui.core.analysis.reports import diagnostics_report
from ragtui.core.data.chunking import Chunk
from ragtui.core.data.corpus import Document
from ragtui.core.data.golden import Question
from ragtui.core.report_model import Report
from ragtui.tui.screens.report import ReportScreen, message_report


@dataclass(frozen=True)
class DiagnosticsInputs:
    """What the diagnostics read, captured on the UI thread: the worker never reads the live workspace."""

    model: str
    chunk_size: int | None
    overlap: int
    questions_file: Path
    chunks: tuple[Chunk, ...]
    questions: tuple[Question, ...]
    documents: tuple[Document, ...]
    windows: str = "off"
    window_stride: int | None = None

    def report(self) -> Report:
        """Diagnose (token counting loads a tokenizer: slow) and make the report."""
        diagnostics = diagnose_chunks(
            self.model,
            self.chunks,
            self.questions,
            self.documents,
            self.windows,
            self.window_stride,
        )
        return diagnostics_report(
            diagnostics,
            chunk_size=self.chunk_size,
            overlap=self.overlap,
            questions_file=self.questions_file,
            windows=self.windows,
        )


class DiagnosticsScreen(ReportScreen):
    """The chunking diagnostics, computed in a worker."""

    TITLE = "chunking diagnostics"

    @dataclass
    class Ready(Message):
        """The report is computed, or ``error`` says why not."""

        report: Report | None
        error: str = ""

    def __init__(self, inputs: DiagnosticsInputs) -> None:
        """The diagnostics of ``inputs``."""
        super().__init__(message_report(self.TITLE, "diagnosing…"), id="diagnostics")
        self.inputs = inputs
        #: The report once computed (None while computing or after a failure).
        self.result: Report | None = None

    def on_mount(self) -> None:
        """Start the worker."""
        self._compute(self.inputs)

    @work(thread=True, exclusive=True, exit_on_error=False, group="diagnostics")
    def _compute(self, inputs: DiagnosticsInputs) -> None:
        """Diagnose off the UI thread; post the report or the error."""
        try:
            report = inputs.report()
        except Exception as exc:  # shown on the screen instead of "diagnosing…" forever
            self.post_message(self.Ready(None, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.Ready(report))

    def on_diagnostics_screen_ready(self, message: Ready) -> None:
        """Show the report, or why there is none."""
        self.result = message.report
        if message.report is None:
            self.show_message(f"diagnostics failed: {message.error}", "bad")
        else:
            self.show_report(message.report)
