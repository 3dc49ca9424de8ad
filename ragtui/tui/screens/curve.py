"""Recall@k for k = 1..depth of every retriever: a plot, and the values as a table (issue 7)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from textual.app import ComposeResult

from ragtui.core.analysis.reports import curve_report
from ragtui.tui.screens.report import ReportScreen
from ragtui.tui.widgets.curve import CurvePlot
from ragtui.tui.widgets.report_view import ReportView


class CurveScreen(ReportScreen):
    """Recall@k for k = 1..depth of every retriever: a plot, and the values as a table."""

    def __init__(self, curves: Mapping[str, Sequence[float]], scope: str) -> None:
        """The ``curves`` (retriever -> recall@1..depth) over the questions ``scope`` names."""
        super().__init__(curve_report(curves, scope), id="curve")
        self.curves = {name: list(values) for name, values in curves.items()}

    def compose_body(self) -> ComposeResult:
        """The plot, then the values."""
        yield CurvePlot(classes="report-plot")
        yield ReportView(self.report, classes="report-body")

    def on_mount(self) -> None:
        """Draw the plot."""
        self.query_one(CurvePlot).show(self.curves)
