"""One report model: an analysis is computed once, as plain data, and drawn by two thin renderers.

A ``Report`` is a title and sections; a section is an optional heading, an optional table (columns
and rows of already formatted cells, so both renderers print the same digits) and notes. The
command line prints it as aligned plain text (``ragtui.cli.output``); the app draws it with Rich
(``ragtui.tui.widgets.report_view``). Nothing here knows about either.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

#: How a cell sits in its column.
Align = Literal["left", "right"]
#: What a row or note stands for, so a renderer can style it (plain text ignores it).
Tone = Literal["", "strong", "dim", "good", "bad", "warning"]


@dataclass(frozen=True)
class Column:
    """A table column: its heading and alignment (numbers right)."""

    title: str
    align: Align = "left"


@dataclass(frozen=True)
class Row:
    """A table row: formatted cells, one per column, and a tone (a significant result, a miss)."""

    cells: tuple[str, ...]
    tone: Tone = ""


@dataclass(frozen=True)
class Note:
    """A line of text under a table (or alone in a section)."""

    text: str
    tone: Tone = ""


@dataclass(frozen=True)
class Section:
    """A heading, a table and notes; each part may be empty."""

    heading: str = ""
    columns: tuple[Column, ...] = ()
    rows: tuple[Row, ...] = ()
    notes: tuple[Note, ...] = ()

    @property
    def has_table(self) -> bool:
        """Whether the section has columns to draw."""
        return bool(self.columns)


@dataclass(frozen=True)
class Report:
    """A titled analysis: sections in order."""

    title: str
    sections: tuple[Section, ...] = field(default_factory=tuple)

    def words(self) -> list[str]:
        """Every heading, column title, cell and note, in order (what a renderer must show)."""
        out = [self.title]
        for section in self.sections:
            if section.heading:
                out.append(section.heading)
            out.extend(c.title for c in section.columns)
            for row in section.rows:
                out.extend(row.cells)
            out.extend(n.text for n in section.notes)
        return [w for w in out if w]


def table(
    columns: Sequence[str | Column],
    rows: Iterable[Sequence[str] | Row],
    *,
    heading: str = "",
    notes: Iterable[str | Note] = (),
    right: Iterable[int] = (),
) -> Section:
    """A section from plain values: column titles (``right`` lists the right-aligned ones), rows of
    cells, and notes."""
    right_set = set(right)
    cols = tuple(
        c if isinstance(c, Column) else Column(c, "right" if i in right_set else "left")
        for i, c in enumerate(columns)
    )
    body = tuple(r if isinstance(r, Row) else Row(tuple(r)) for r in rows)
    for row in body:
        if len(row.cells) != len(cols):
            raise ValueError(f"a row has {len(row.cells)} cells for {len(cols)} columns")
    return Section(heading, cols, body, tuple(note(n) for n in notes))


def note(value: str | Note, tone: Tone = "") -> Note:
    """A note from a string (or the note itself)."""
    return value if isinstance(value, Note) else Note(value, tone)


def text_section(*lines: str | Note, heading: str = "") -> Section:
    """A section of notes only."""
    return Section(heading, notes=tuple(note(line) for line in lines))


def fmt(value: float) -> str:
    """A metric value with three decimals, as every table prints it."""
    return f"{value:.3f}"


def signed(value: float) -> str:
    """A difference with its sign and three decimals."""
    return f"{value:+.3f}"
