"""The app's renderer of a ``Report``: the same sections, columns and notes the command line prints.

``report_renderable`` turns a report into Rich renderables (pure Rich: a test prints it on a Rich
console and compares it with ``ragtui.cli.output.render_report``); ``ReportView`` is the widget
that draws it with its tones taken from component classes, so the theme decides the colours.
Every string from the report is shown through ``visible``: a chunk id or a question never sends a
control character to the terminal, and nothing is read as markup.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import ClassVar

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.widget import Widget

from ragtui.core.report import Report, Section, Tone
from ragtui.core.text import visible, visible_line

#: The component class of each tone, and of the parts that are not rows or notes.
TONE_CLASSES: dict[Tone | str, str] = {
    "title": "report-view--title",
    "heading": "report-view--heading",
    "header": "report-view--header",
    "strong": "report-view--strong",
    "dim": "report-view--dim",
    "good": "report-view--good",
    "bad": "report-view--bad",
    "warning": "report-view--warning",
}

#: The width the plain-text form of a view is rendered at (wide enough that nothing wraps).
PLAIN_WIDTH = 1000


#: A column of single words (chunk ids) is shortened in the middle, but never below this width.
MIN_SHORTENED = 10


class _FittedTable:
    """A section's table that fits the width it is drawn at: when the columns are too wide, the
    widest columns of single words (chunk ids, document names) are shortened in the middle, keeping
    their ends (``emergency-…dures.md#2``), so numbers and headings stay whole and no row wraps."""

    def __init__(self, section: Section, styles: Mapping[str, Style]) -> None:
        self.section = section
        self.styles = styles

    def _widths(self, width: int) -> list[int]:
        """Each column's width: its widest cell, the shortenable ones cut down until they fit."""
        section = self.section
        rows = [[visible_line(c) for c in row.cells] for row in section.rows]
        titles = [visible_line(c.title) for c in section.columns]
        widths = [
            max([cell_len(titles[i]), *(cell_len(r[i]) for r in rows)]) for i in range(len(titles))
        ]
        shortenable = [
            i
            for i, column in enumerate(section.columns)
            if column.align == "left" and all(" " not in r[i] for r in rows)
        ]
        excess = sum(widths) + len(widths) - 1 - width  # one space between columns
        while excess > 0:
            candidates = [
                i for i in shortenable if widths[i] > max(MIN_SHORTENED, cell_len(titles[i]))
            ]
            if not candidates:
                break
            widest = max(candidates, key=lambda i: widths[i])
            floor = max(MIN_SHORTENED, cell_len(titles[widest]))
            cut = min(excess, widths[widest] - floor)
            widths[widest] -= cut
            excess -= cut
        return widths

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """A Rich table with the fitted widths; a shortened cell keeps both its ends."""
        from ragtui.tui.widgets.row_list import shorten_middle

        section = self.section
        widths = self._widths(options.max_width)
        grid = Table(
            box=None,
            show_edge=False,
            pad_edge=False,
            padding=(0, 1, 0, 0),
            header_style=self.styles.get("header", ""),
            expand=False,
        )
        for i, column in enumerate(section.columns):
            # Each column as wide as fitted; when there is still too little room, text columns
            # wrap at spaces and a long word folds: nothing is ever cut off.
            grid.add_column(
                Text(visible_line(column.title)),
                justify=column.align,
                overflow="fold",
                width=widths[i],
            )
        for row in section.rows:
            cells = []
            for i, cell in enumerate(row.cells):
                shown = visible_line(cell)
                if cell_len(shown) > widths[i] and " " not in shown:
                    shown = shorten_middle(shown, widths[i])
                cells.append(Text(shown))
            grid.add_row(*cells, style=self.styles.get(row.tone, ""))
        yield grid


def _section(section: Section, styles: Mapping[str, Style]) -> RenderableType:
    """One section: heading, table (indented under a heading, as the command line does), notes."""
    parts: list[RenderableType] = []
    if section.heading:
        parts.append(Text(visible_line(section.heading), styles.get("heading", "")))
    if section.has_table:
        grid = _FittedTable(section, styles)
        parts.append(Padding(grid, (0, 0, 0, 2)) if section.heading else grid)
    parts.extend(Text(visible(n.text), styles.get(n.tone, "")) for n in section.notes)
    return Group(*parts)


def report_renderable(
    report: Report, styles: Mapping[str, Style] | None = None, *, title: bool = True
) -> RenderableType:
    """A report as Rich renderables: the title, then each section, a blank line between sections.

    ``styles`` maps a tone (and ``title``, ``heading``, ``header``) to a Rich style; missing ones
    are plain.
    """
    styles = styles or {}
    parts: list[RenderableType] = []
    if title and report.title:
        parts.append(Text(visible_line(report.title), styles.get("title", "")))
    for i, section in enumerate(report.sections):
        if i:
            parts.append(Text(""))
        parts.append(_section(section, styles))
    return Group(*parts)


def report_plain(report: Report, *, title: bool = True, width: int = PLAIN_WIDTH) -> str:
    """The text a Rich console shows of a report (no styles), lines stripped at the right."""
    console = Console(width=width, color_system=None, file=io.StringIO())
    with console.capture() as capture:
        console.print(report_renderable(report, title=title))
    return "\n".join(line.rstrip() for line in capture.get().splitlines())


class ReportView(Widget):
    """Draws a ``Report``; tones come from the component classes below (theme variables, no colours)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = set(TONE_CLASSES.values())

    DEFAULT_CSS = """
    ReportView {
        height: auto;
    }
    ReportView > .report-view--title {
        text-style: bold;
    }
    ReportView > .report-view--heading {
        text-style: bold;
    }
    ReportView > .report-view--header {
        text-style: bold;
        color: $text-muted;
    }
    ReportView > .report-view--strong {
        text-style: bold;
    }
    ReportView > .report-view--dim {
        color: $text-muted;
    }
    ReportView > .report-view--good {
        color: $text-success;
    }
    ReportView > .report-view--bad {
        color: $text-error;
    }
    ReportView > .report-view--warning {
        color: $text-warning;
    }
    """

    def __init__(
        self,
        report: Report | None = None,
        *,
        show_title: bool = False,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """A view of ``report`` (the screen's frame usually shows its title, so the view does not)."""
        super().__init__(id=id, classes=classes)
        #: The report drawn (None: nothing yet).
        self.report = report
        #: Whether the view draws the report's title itself.
        self.show_title = show_title

    def show(self, report: Report) -> None:
        """Draw another report."""
        self.report = report
        self.refresh(layout=True)

    def render(self) -> RenderableType:
        """The report, styled by the component classes."""
        if self.report is None:
            return Text("")
        styles = {
            tone: self.get_component_rich_style(name, partial=True)
            for tone, name in TONE_CLASSES.items()
        }
        return report_renderable(self.report, styles, title=self.show_title)

    @property
    def plain(self) -> str:
        """What the view shows, without styles and unwrapped (what tests read)."""
        if self.report is None:
            return ""
        return report_plain(self.report, title=self.show_title)
