"""Hybrid attribution of one question: where each fused chunk came from, and the pool ceiling."""

from __future__ import annotations

from ragtui.core.report_model import Report
from ragtui.tui.screens.report import ReportScreen


class ExplainScreen(ReportScreen):
    """Why hybrid ranked a question's chunks where it did (``reports.explain_screen`` builds it)."""

    def __init__(self, report: Report) -> None:
        """The attribution report of one question."""
        super().__init__(report, id="explain")
