"""Small text helpers shared by the widgets: numbers, snippets, grade labels (corpus text stays data)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import JustifyMethod
from rich.style import Style
from rich.text import Text

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


def fmt(value: float) -> str:
    """A metric value with three decimals, as ``ragtui eval`` prints it."""
    return f"{value:.3f}"


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


def foreground(style: Style) -> Style:
    """A style's colour and attributes without its background, so a table's cursor row keeps its own."""
    return Style(
        color=style.color,
        bold=style.bold,
        dim=style.dim,
        italic=style.italic,
        underline=style.underline,
        strike=style.strike,
        reverse=style.reverse,
    )


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
