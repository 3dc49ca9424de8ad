"""Compare two retrievers (win/tie/loss, randomisation test, bootstrap interval), the recall@k curves,
and the per-slice report (issue 7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message

from ragtui.core.analysis.curve import recall_curves
from ragtui.core.analysis.slices import slice_reports
from ragtui.core.metrics.measures import default_measures, system_from_workspace
from ragtui.core.metrics.significance import Comparison, compare_systems
from ragtui.core.workspace import Workspace
from ragtui.tui.screens.report import ReportScreen
from ragtui.tui.widgets.curve import CurvePlot
from ragtui.tui.widgets.text import fmt


def comparison_text(comparison: Comparison) -> Text:
    """One row per measure: both means, B - A, win/tie/loss, p-value, 95% interval."""
    c = comparison
    out = Text()
    out.append(
        f"B = {c.b} against A = {c.a} · {len(c.questions)} questions both evaluate\n", "bold"
    )
    out.append(
        f"paired randomisation test (two-sided, {c.n_permutations} permutations, seed {c.seed}); "
        f"bootstrap 95% interval of the mean difference ({c.n_resamples} resamples)\n\n",
        "dim",
    )
    out.append(
        f"{'measure':<9}{'A':>7}{'B':>7}{'B-A':>8}{'win/tie/loss':>14}{'p':>8}  95% CI\n", "bold"
    )
    for m in c.metrics:
        significant = m.p_value < 0.05
        line = Text(
            f"{m.measure:<9}{fmt(m.mean_a):>7}{fmt(m.mean_b):>7}{m.mean_difference:>+8.3f}"
            f"{f'{m.wins}/{m.ties}/{m.losses}':>14}{m.p_value:>8.4f}  [{m.ci_low:+.3f}, {m.ci_high:+.3f}]",
            style="bold" if significant else "",
        )
        if significant:
            line.append("  p < 0.05")
        out.append_text(line)
        out.append("\n")
    out.append(
        "\nwin: B better than A on that question. a: change A · b: change B · escape: close", "dim"
    )
    return out


class CompareScreen(ReportScreen):
    """Two retrievers compared, computed in a worker; ``a`` and ``b`` cycle through the retrievers."""

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
        """A comparison is computed."""

        generation: int
        comparison: Comparison

    def __init__(self, ws: Workspace, a: str, b: str) -> None:
        """Compare ``b`` against ``a``."""
        super().__init__(id="compare")
        self.ws = ws
        self.a = a
        self.b = b
        self.generation = 0
        #: The last comparison shown (None while computing).
        self.comparison: Comparison | None = None

    @property
    def report_title(self) -> str:  # type: ignore[override]
        """The frame title."""
        return f"compare {self.b} against {self.a}"

    def on_mount(self) -> None:
        """Start computing."""
        self._start()

    def _start(self) -> None:
        """Compute the current pair in a worker (10,000 permutations per measure)."""
        self.generation += 1
        self.comparison = None
        self.query_one(".report-box").border_title = self.report_title
        self.set_body(Text(f"comparing {self.b} against {self.a}…"))
        self._compute(self.a, self.b, self.generation)

    @work(thread=True, exclusive=True, exit_on_error=False, group="compare")
    def _compute(self, a: str, b: str, generation: int) -> None:
        """compare_systems off the UI thread."""
        ws = self.ws
        comparison = compare_systems(
            system_from_workspace(ws, a),
            system_from_workspace(ws, b),
            default_measures(ws.settings.k),
        )
        self.post_message(self.Ready(generation, comparison))

    def on_compare_screen_ready(self, message: Ready) -> None:
        """Show the comparison unless a newer pair was asked for."""
        if message.generation != self.generation:
            return
        self.comparison = message.comparison
        self.set_body(comparison_text(message.comparison))

    def action_cycle(self, side: str) -> None:
        """Pick the next retriever for side A or B (never the same as the other side)."""
        names = self.ws.retrievers
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
    """Recall@k for k = 1..depth of every retriever (over the filtered questions when a filter is on)."""

    def __init__(self, ws: Workspace, questions: list[str] | None = None) -> None:
        """The curves of ``ws``, over ``questions`` (None: every evaluated question)."""
        super().__init__(id="curve")
        self.ws = ws
        self.questions = questions
        scope = (
            f"{len(questions)} filtered questions"
            if questions is not None
            else "every evaluated question"
        )
        self.report_title = f"recall@k, k = 1..{ws.settings.depth} · {scope}"
        self.curves: dict[str, list[float]] = {}

    def compose_body(self) -> ComposeResult:
        """The plot."""
        yield CurvePlot(classes="report-body")

    def on_mount(self) -> None:
        """Compute (one pass over the rankings) and draw."""
        self.curves = recall_curves(self.ws, questions=self.questions)
        self.query_one(CurvePlot).show(self.curves)


def slices_text(ws: Workspace) -> Text:
    """Every metric of every retriever per slice, with the number of questions in each."""
    out = Text()
    k = ws.settings.k
    heads = [f"R@{k}", f"P@{k}", "ceil", "MRR", f"nDCG@{k}"]
    out.append(
        f"{'slice':<16}{'retriever':<10}{'n':>4}" + "".join(h.rjust(8) for h in heads) + "\n",
        "bold",
    )
    for report in slice_reports(ws, include_all=True):
        for i, (name, s) in enumerate(report.summaries.items()):
            label = report.name if i == 0 else ""
            values = (s.recall, s.precision, s.precision_ceiling, s.mrr, s.ndcg)
            out.append(
                f"{label[:15]:<16}{name[:9]:<10}{s.questions:>4}"
                + "".join(fmt(v).rjust(8) for v in values)
                + "\n"
            )
        if report.skipped:
            out.append(f"{'':<16}{len(report.skipped)} skipped (no relevant chunk)\n", "dim")
    return out


class SlicesScreen(ReportScreen):
    """The per-slice report."""

    report_title = "metrics per slice"

    def __init__(self, ws: Workspace) -> None:
        """The slices of ``ws``."""
        super().__init__(id="slices")
        self.ws = ws

    def on_mount(self) -> None:
        """Compute and show."""
        self.set_body(slices_text(self.ws))
