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
from rich.constrain import Constrain
from rich.padding import Padding
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.widget import Widget

from ragtui.core.report_model import Report, Section, Tone
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


#: A column of single words (chunk ids) is folded onto more rows, but never below this width.
MIN_FOLDED = 10

#: A column of text wraps at spaces, but never below this width (nor below its longest word).
MIN_WRAPPED = 10
#: How far a table is indented under its section's heading.
INDENT = 2


def _longest_word(text: str) -> int:
    """The width of the longest space-separated word of ``text`` (1 for an empty text)."""
    return max((cell_len(word) for word in text.split()), default=1)


def fitted_widths(section: Section, width: int) -> list[int]:
    """Each column's width for a table drawn in ``width`` cells: its widest cell, made narrower in
    three steps until the table fits, each step taken only as far as needed:

    1. headings wrap at their spaces (``judged like`` over ``baseline``);
    2. columns of text wrap at spaces, never below ``MIN_WRAPPED`` nor their longest word;
    3. columns of single words (chunk ids, document names, ``adjudicated``) fold whole onto a
       second row (``emergency-proce`` over ``dures.md#2``), never below ``MIN_FOLDED``: an id is
       never cut (at 80 columns the agreement view read ``com…s.md#2``).

    Numbers are never cut or wrapped and no text word is ever broken: a table that still does not
    fit is wider than ``width`` (the report view then scrolls sideways)."""
    rows = [[visible_line(c) for c in row.cells] for row in section.rows]
    titles = [visible_line(c.title) for c in section.columns]
    count = len(titles)
    cells = [max((cell_len(r[i]) for r in rows), default=0) for i in range(count)]
    widths = [max(cell_len(titles[i]), cells[i], 1) for i in range(count)]
    heading_word = [_longest_word(t) for t in titles]
    words = [all(" " not in r[i] for r in rows) for i in range(count)]
    left = [c.align == "left" for c in section.columns]
    floors = (
        [max(cells[i], heading_word[i]) for i in range(count)],
        [
            max(
                [heading_word[i], min(MIN_WRAPPED, widths[i]), *(_longest_word(r[i]) for r in rows)]
            )
            if left[i] and not words[i]
            else widths[i]
            for i in range(count)
        ],
        [
            max(min(MIN_FOLDED, widths[i]), heading_word[i]) if left[i] and words[i] else widths[i]
            for i in range(count)
        ],
    )
    excess = sum(widths) + count - 1 - width  # one space between columns
    for floor in floors:
        while excess > 0:
            candidates = [i for i in range(count) if widths[i] > floor[i]]
            if not candidates:
                break
            # The widest column gives way, down to the next widest: wide columns end up alike.
            widest = max(candidates, key=lambda i: widths[i])
            others = [widths[i] for i in candidates if i != widest]
            level = max(floor[widest], max(others, default=0))
            cut = min(excess, max(1, widths[widest] - level), widths[widest] - floor[widest])
            widths[widest] -= cut
            excess -= cut
    return widths


def table_width(section: Section, width: int) -> int:
    """The width a section's table takes when fitted to ``width`` (more when it cannot fit)."""
    widths = fitted_widths(section, width)
    return sum(widths) + max(0, len(widths) - 1)


class _FittedTable:
    """A section's table that fits the width it is drawn at (see ``fitted_widths``): numbers and
    words stay whole (an id too wide folds onto the next row), and no column is ever squeezed to a
    letter per line."""

    def __init__(
        self, section: Section, styles: Mapping[str, Style], fit_width: int | None = None
    ) -> None:
        self.section = section
        self.styles = styles
        #: The width to fit (the visible width); None: the width the table is drawn at.
        self.fit_width = fit_width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """A Rich table with the fitted widths; a cell wider than its column folds."""
        section = self.section
        width = options.max_width if self.fit_width is None else self.fit_width
        widths = fitted_widths(section, width)
        grid = Table(
            box=None,
            show_edge=False,
            pad_edge=False,
            padding=(0, 1, 0, 0),
            header_style=self.styles.get("header", ""),
            expand=False,
        )
        for i, column in enumerate(section.columns):
            # Each column as wide as fitted: headings and text wrap at spaces.
            grid.add_column(
                Text(visible_line(column.title)),
                justify=column.align,
                overflow="fold",
                width=widths[i],
            )
        for row in section.rows:
            cells = [Text(visible_line(cell)) for cell in row.cells]
            grid.add_row(*cells, style=self.styles.get(row.tone, ""))
        yield grid


def _section(
    section: Section, styles: Mapping[str, Style], fit_width: int | None = None
) -> RenderableType:
    """One section: heading, table (indented under a heading, as the command line does), notes.
    With ``fit_width``, the table is fitted to it and the heading and notes wrap at it, however wide
    the table turns out."""

    def wrapped(text: Text) -> RenderableType:
        return text if fit_width is None else Constrain(text, fit_width)

    parts: list[RenderableType] = []
    if section.heading:
        parts.append(wrapped(Text(visible_line(section.heading), styles.get("heading", ""))))
    if section.has_table:
        indent = INDENT if section.heading else 0
        grid = _FittedTable(section, styles, None if fit_width is None else fit_width - indent)
        parts.append(Padding(grid, (0, 0, 0, indent)) if indent else grid)
    parts.extend(wrapped(Text(visible(n.text), styles.get(n.tone, ""))) for n in section.notes)
    return Group(*parts)


def report_min_width(report: Report) -> int:
    """The narrowest a report's tables can be drawn with every heading and text wrapped as far as
    ``fitted_widths`` goes (0 without tables): narrower, the report view scrolls sideways."""
    return max(
        (
            (INDENT if section.heading else 0) + table_width(section, 0)
            for section in report.sections
            if section.has_table
        ),
        default=0,
    )


def report_renderable(
    report: Report,
    styles: Mapping[str, Style] | None = None,
    *,
    title: bool = True,
    fit_width: int | None = None,
) -> RenderableType:
    """A report as Rich renderables: the title, then each section, a blank line between sections.

    ``styles`` maps a tone (and ``title``, ``heading``, ``header``) to a Rich style; missing ones
    are plain. ``fit_width``: the width tables are fitted to and text wraps at (default: the width
    drawn at); a table that cannot fit is drawn wider (``report_width``).
    """
    styles = styles or {}
    parts: list[RenderableType] = []
    if title and report.title:
        heading = Text(visible_line(report.title), styles.get("title", ""))
        parts.append(heading if fit_width is None else Constrain(heading, fit_width))
    for i, section in enumerate(report.sections):
        if i:
            parts.append(Text(""))
        parts.append(_section(section, styles, fit_width))
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
        self._set_min_width()

    def _set_min_width(self) -> None:
        """Never narrower than the report's tables can be drawn: in a narrower container the view
        is wider than it and the container scrolls sideways (``.report-box`` does)."""
        self.styles.min_width = report_min_width(self.report) if self.report is not None else None

    def show(self, report: Report) -> None:
        """Draw another report."""
        self.report = report
        self._set_min_width()
        self.refresh(layout=True)

    def render(self) -> RenderableType:
        """The report, styled by the component classes."""
        if self.report is None:
            return Text("")
        styles = {
            tone: self.get_component_rich_style(name, partial=True)
            for tone, name in TONE_CLASSES.items()
        }
        # Fitted to the width drawn at; when the view is wider than its container (a table that
        # cannot fit), to what is visible of it, so that headings and notes wrap there.
        parent = self.parent
        fit: int | None = None
        if isinstance(parent, Widget):
            visible = parent.scrollable_content_region.width
            if 0 < visible < self.size.width:
                fit = visible
        return report_renderable(self.report, styles, title=self.show_title, fit_width=fit)

    @property
    def plain(self) -> str:
        """What the view shows, without styles and unwrapped (what tests read)."""
        if self.report is None:
            return ""
        return report_plain(self.report, title=self.show_title)
