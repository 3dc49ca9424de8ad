"""Small text helpers shared by the widgets: numbers, snippets, grade labels (corpus text stays data)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import JustifyMethod
from rich.style import Style
from rich.text import Text
from textual.app import ScreenStackError
from textual.content import Content
from textual.geometry import Region
from textual.screen import Screen
from textual.widget import Widget

from ragtui.core.text import has_control, visible, visible_line

#: Shown for a retriever whose rankings are not ready yet (embedding still running).
PENDING_MARK = "…"
#: Shown where a question has no relevant chunk in a retriever's run.
MISS_MARK = "·"
#: Shown for a question with no relevant chunk at all: skipped in every mean when it has no
#: judgement, 0 in every mean when every grade is below the threshold (as trec_eval counts it).
SKIPPED_MARK = "∅"
#: Marks a pair whose annotators disagree (no adjudicated grade yet), and a question that has one.
DISPUTED_MARK = "!"
#: Shown for a question retired from the app (kept in the file, left out of every mean).
RETIRED_MARK = "⊘"
#: Shown for a retriever that is unavailable (the model failed to load).
UNAVAILABLE_MARK = "×"
#: Marks a relevant chunk (grade >= threshold) in the result lists.
RELEVANT_MARK = "●"
#: Marks a chunk judged not relevant (a grade below the threshold).
JUDGED_MARK = "○"
#: Marks a question that some ready retriever misses in its top k.
FAILURE_MARK = "✗"

#: Short column headings of the retrievers in the question list.
SHORT_NAMES = {"bm25": "bm", "vector": "vec", "hybrid": "hyb"}
#: The suffix of a reranked list's name (``hybrid+rerank``).
RERANK_SUFFIX = "+rerank"


def short_names(names: Sequence[str], width: int) -> dict[str, str]:
    """A heading of at most ``width`` characters for each retriever, no two alike: bm, vec, hyb for
    the built-in ones, h+r for hybrid+rerank, the start of any other name (a live retriever)."""
    out: dict[str, str] = {}
    for name in names:
        base = name.removesuffix(RERANK_SUFFIX)
        short = SHORT_NAMES.get(base, visible_line(base))
        candidates = [short[: width - 2] + "+r" if width >= 3 else "r"] if base != name else []
        candidates += [short[:width], visible_line(name)[:width]]
        if width > 1:  # milvus-a, milvus-b: mil, m-b
            candidates.append(short[:1] + visible_line(name)[1 - width :])
        candidates += [c for c in visible_line(name) if c.isalnum()]  # one letter of the name
        candidates += [f"{short[: width - 1]}{i}"[-width:] for i in range(1, 100)]
        out[name] = next(c for c in candidates if c and c not in out.values())
    return out


def fmt_score(score: float) -> str:
    """A retriever score with three significant digits (BM25 ``12.3``, cosine ``0.812``, RRF
    ``0.0328``), so a narrow column still tells scores apart."""
    return f"{score:.3g}"


def one_line(text: str, limit: int = 160) -> str:
    """The text on one line (white space collapsed), cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def cell(text: str, style: str | Style = "", *, justify: JustifyMethod = "left") -> Text:
    """A one-line table cell that never reads its text as markup and ends in an ellipsis when cut."""
    return Text(text, style=style, no_wrap=True, overflow="ellipsis", justify=justify)


def data_text(raw: str, styled: Iterable[tuple[int, int, Style | str]] = ()) -> Text:
    """Text from a file as a ``Text`` with styled character spans of ``raw``; control characters
    are shown as escapes (the spans move with them), so nothing in the data reaches the terminal raw."""
    spans = list(styled)
    if not has_control(raw):
        out = Text(raw)
        for start, end, style in spans:
            out.stylize(style, start, end)
        return out
    pieces: list[str] = []
    offsets = [0] * (len(raw) + 1)
    position = 0
    for i, char in enumerate(raw):
        offsets[i] = position
        shown = visible(char) if has_control(char) else char
        pieces.append(shown)
        position += len(shown)
    offsets[len(raw)] = position
    out = Text("".join(pieces))
    for start, end, style in spans:
        out.stylize(style, offsets[start], offsets[end])
    return out


def set_frame_text(widget: Widget, title: str | None = None, subtitle: str | None = None) -> None:
    """Set a widget's border title and/or subtitle to data text, only when it changes, repainting
    only the border line that holds it.

    Textual reads a plain string given as a border title as markup (a file named ``a[b]c.md``
    showed as ``ac.md``, a name holding a closing tag raised an error, ``[@click=app.quit]`` made
    a title that quits when clicked), and its setter repaints the whole widget, even for the same
    text: the judging view's 40-line chunk frame was drawn again for every pair, the question
    list's frame for every grade."""
    for attr, value, bottom in (
        ("border_title", title, False),
        ("border_subtitle", subtitle, True),
    ):
        if value is None:
            continue
        text = visible_line(value)
        current: Content | None = getattr(widget, f"_{attr}", None)
        if current is not None and current.plain == text:
            continue
        size = widget.outer_size
        if not size:  # not laid out yet: the whole widget is drawn anyway
            setattr(widget, attr, Text(text))
            continue
        setattr(widget, f"_{attr}", Content(text))
        # The border line only (refresh regions are relative to the content, inside the border).
        left, top = widget.content_offset
        line = size.height - 1 if bottom else 0
        widget.refresh(Region(-left, line - top, size.width, 1))


def covered(screen: Screen[Any]) -> bool:
    """Whether another, opaque screen is on top of ``screen`` (the judging view over the main
    screen). Textual's ``is_current`` is True for the screen just below the top one too, and a
    change drawn there makes the top screen repaint the same region: a screen that is covered
    keeps its changes until it is shown again."""
    try:
        top = screen.app.screen
    except ScreenStackError:  # no screen stack yet (starting, or shutting down)
        return False
    return top is not screen and top.styles.background.a == 1
