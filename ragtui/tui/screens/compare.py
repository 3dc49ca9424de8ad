"""Compare two retrievers (win/tie/loss, randomisation test, bootstrap interval), the recall@k curves,
and the per-slice report (issue 7)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message

from ragtui.core.analysis.reports import comparison_report, curve_report
from ragtui.core.metrics.measures import Measure, System
from ragtui.core.metrics.significance import Comparison, compare_systems
from ragtui.core.report import Report
from ragtui.tui.screens.report import ReportScreen, message_report
from ragtui.tui.widgets.curve import CurvePlot
from ragtui.tui.widgets.report_view import ReportView


class CompareScreen(ReportScreen):
    """Two retrievers compared in a worker; ``a`` and ``b`` cycle through the retrievers.

    The systems (each retriever's rankings and grades) are captured when the screen is made, so
    the worker never reads the workspace the app changes meanwhile.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "a", "cycle('a')", "Change A", tooltip="Compare another retriever as A.", id="compare.a"
        ),
        Binding(
            "b", "cycle('b')", "Change B", tooltip="Compare another retriever as B.", id="compare.b"
        ),
    ]

    @dataclass
    class Ready(Message):
        """A comparison is computed (``report`` set), or failed (``error`` set)."""

        generation: int
        comparison: Comparison | None
        report: Report | None
        error: str = ""

    def __init__(
        self, systems: Mapping[str, System], a: str, b: str, measures: Sequence[Measure]
    ) -> None:
        """Compare ``b`` against ``a``, two of ``systems``, on ``measures``."""
        super().__init__(message_report(self._title(a, b), ""), id="compare")
        self.systems = dict(systems)
        self.measures = list(measures)
        self.a = a
        self.b = b
        self.generation = 0
        #: The last comparison shown (None while computing or after a failure).
        self.comparison: Comparison | None = None

    @staticmethod
    def _title(a: str, b: str) -> str:
        """The frame title of a pair."""
        return f"compare {b} against {a}"

    def on_mount(self) -> None:
        """Start computing."""
        self._start()

    def _start(self) -> None:
        """Compute the current pair in a worker (10,000 permutations per measure)."""
        self.generation += 1
        self.comparison = None
        self.show_report(
            message_report(self._title(self.a, self.b), f"comparing {self.b} against {self.a}…")
        )
        a, b = self.systems[self.a], self.systems[self.b]
        self._compute(a, b, tuple(self.measures), self.generation)

    @work(thread=True, exclusive=True, exit_on_error=False, group="compare")
    def _compute(self, a: System, b: System, measures: Sequence[Measure], generation: int) -> None:
        """compare_systems off the UI thread; post the result or the error."""
        try:
            comparison = compare_systems(a, b, measures)
            report = comparison_report(comparison)
        except Exception as exc:  # shown on the screen instead of "comparing…" forever
            self.post_message(self.Ready(generation, None, None, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.Ready(generation, comparison, report))

    def on_compare_screen_ready(self, message: Ready) -> None:
        """Show the comparison (or why it failed) unless a newer pair was asked for."""
        if message.generation != self.generation:
            return
        self.comparison = message.comparison
        if message.report is None:
            self.show_message(f"comparison failed: {message.error}", "bad")
        else:
            self.show_report(message.report)

    def action_cycle(self, side: str) -> None:
        """Pick the next retriever for side A or B (never the same as the other side)."""
        names = list(self.systems)
        if len(names) < 2:
            return
        current, other = (self.a, self.b) if side == "a" else (self.b, self.a)
        index = names.index(current) if current in names else -1
        for step in range(1, len(names) + 1):
            candidate = names[(index + step) % len(names)]
            if candidate != other:
                break
        if side == "a":
            self.a = candidate
        else:
            self.b = candidate
        self._start()


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


class SlicesScreen(ReportScreen):
    """The per-slice report (``reports.slices_screen`` builds it)."""

    def __init__(self, report: Report) -> None:
        """A screen showing the per-slice ``report``."""
        super().__init__(report, id="slices")
