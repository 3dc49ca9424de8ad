"""Every metric per slice, with the question counts (issue 7)."""

from __future__ import annotations

from ragtui.core.report_model import Report
from ragtui.tui.screens.report import ReportScreen


class SlicesScreen(ReportScreen):
    """The per-slice report (``reports.slices_screen`` builds it)."""

    def __init__(self, report: Report) -> None:
        """A screen showing the per-slice ``report``."""
        super().__init__(report, id="slices")
