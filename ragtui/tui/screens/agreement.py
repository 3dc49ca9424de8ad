"""The agreement report: the evidence rule against the hand grades, and the annotators against each
other (``reports.agreement_screen`` builds it)."""

from __future__ import annotations

from ragtui.core.report_model import Report
from ragtui.tui.screens.report import ReportScreen


class AgreementScreen(ReportScreen):
    """The agreement report (``reports.agreement_screen`` builds it)."""

    def __init__(self, report: Report) -> None:
        """A screen showing the agreement ``report``."""
        super().__init__(report, id="agreement")
