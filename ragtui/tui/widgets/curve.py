"""A small text plot of recall@k curves, one mark, colour and place per retriever (no plotting
dependency needed).

The values themselves are a report (``ragtui.core.analysis.reports.curve_report``) drawn below it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text
from textual.widgets import Static

from ragtui.core.text import visible_line

#: The marks of the series, in retriever order (a letter is legible without colour).
MARKS = "bvh123456789"
#: Styles of the series, cycled (rich standard colours: fine at 16 colours).
STYLES = ("cyan", "magenta", "green", "yellow", "blue", "red")


def series_marks(names: Sequence[str]) -> dict[str, str]:
    """One mark per series: the first letter of bm25, vector and hybrid, digits for the others."""
    marks: dict[str, str] = {}
    spare = iter("123456789")
    for name in names:
        first = name[:1]
        marks[name] = first if name in ("bm25", "vector", "hybrid") else next(spare, "*")
    return marks


def curve_text(curves: Mapping[str, Sequence[float]], height: int = 10) -> Text:
    """Recall (rows, 0..1) against k (columns, 1..depth). Each retriever has its own mark, colour and
    place inside every k column, so no point hides another; the values follow as a table."""
    names = list(curves)
    marks = series_marks(names)
    depth = max((len(v) for v in curves.values()), default=0)
    column = max(4, len(names) + 1)
    grid: list[list[tuple[str, str]]] = [[(" ", "")] * (depth * column) for _ in range(height + 1)]
    for index, name in enumerate(names):
        style = STYLES[index % len(STYLES)]
        for k, value in enumerate(curves[name]):
            row = height - round(value * height)
            grid[row][k * column + index] = (marks[name], style + " bold")
    out = Text()
    for row in range(height + 1):
        level = (height - row) / height
        out.append(f"{level:4.1f} ┤" if row % 2 == 0 else "     │", "dim")
        for mark, style in grid[row]:
            out.append(mark, style)
        out.append("\n")
    out.append("     └" + "─" * (column * depth) + "\n", "dim")
    out.append("   k  " + "".join(str(k).ljust(column) for k in range(1, depth + 1)) + "\n", "dim")
    out.append("\n")
    for index, name in enumerate(names):
        out.append(f" {marks[name]} ", STYLES[index % len(STYLES)] + " bold")
        out.append(f"{visible_line(name)}\n")
    return out


class CurvePlot(Static):
    """Recall@k curves as a text plot."""

    def show(self, curves: Mapping[str, Sequence[float]]) -> None:
        """Draw the curves."""
        self.update(curve_text(curves))
