"""The main screen's keys: which they are, when each applies, which the footer shows.

Every one is the screen's, at priority: the app runs them in the order they arrive, each to the end,
before it looks at the next key. Forwarded to the focused list instead, a burst (SSH, tmux, a paste)
could act where the previous key had left: "/unjudged" typed in one go would undo (u) and judge (j)
instead of filtering. While the filter input has the focus, every key but tab and enter is typed
into it (``key_applies``).

The digits and backspace are the result list's (``ResultList``), at priority too; on the question
list they only say where grading happens. The ids are Textual keymap ids.
"""

from __future__ import annotations

from dataclasses import replace

from textual.binding import ActiveBinding, Binding
from textual.widget import Widget
from textual.widgets import Input

from ragtui.core.analysis.question_filter import FILTER_SYNTAX

#: Below this width the footer leaves out the keys of ``WIDE_FOOTER_ONLY`` (k and the next
#: unjudged chunk; the help lists every key), so that it fits: at 80 columns the result list's
#: keys, the filter's escape, undo, judge, quit and help take the room left by the palette's.
FULL_FOOTER_WIDTH = 100
WIDE_FOOTER_ONLY = frozenset({"metrics.k_up", "metrics.k_down", "labels.next_unjudged"})
#: The + and - keys share one footer entry.
K_GROUP = Binding.Group("k", compact=True)

#: The main screen's ``BINDINGS``.
MAIN_KEYS: tuple[Binding, ...] = (
    *(
        Binding(key, action, show=False, priority=True)
        for key, action in (
            ("tab", "cycle_focus(1)"),
            ("shift+tab", "cycle_focus(-1)"),
            ("up", "move(-1)"),
            ("down", "move(1)"),
            ("pageup", "page(-1)"),
            ("pagedown", "page(1)"),
            ("home", "move_to('first')"),
            ("end", "move_to('last')"),
            ("enter", "choose"),
        )
    ),
    Binding(
        "slash",
        "filter",
        "Filter",
        tooltip=f"Filter the questions: {FILTER_SYNTAX}.",
        id="questions.filter",
        priority=True,
    ),
    Binding(
        "escape",
        "clear_filter",
        "Clear",
        tooltip="Show every question again.",
        id="questions.clear_filter",
        priority=True,
    ),
    Binding(
        "u",
        "undo",
        "Undo",
        tooltip="Undo the last label change (saved as a new journal line).",
        id="labels.undo",
        priority=True,
    ),
    Binding(
        "plus,right_square_bracket",
        "app.change_k(1)",
        "k+1",
        tooltip="Raise the cut-off k of recall, precision and nDCG.",
        id="metrics.k_up",
        group=K_GROUP,
        priority=True,
    ),
    Binding(
        "minus,left_square_bracket",
        "app.change_k(-1)",
        "k-1",
        tooltip="Lower the cut-off k of recall, precision and nDCG.",
        id="metrics.k_down",
        group=K_GROUP,
        priority=True,
    ),
    Binding(
        "n",
        "next_unjudged",
        "Unjudged",
        tooltip="Jump to the next pooled chunk without a hand grade (in the list's order), then 0-9 grades it.",
        id="labels.next_unjudged",
        priority=True,
    ),
    Binding(
        "j",
        "judge",
        "Judge",
        tooltip="The judging view: one key grades a pair and moves to the next (the questions shown, in their order).",
        id="labels.judge",
        priority=True,
    ),
    Binding(
        "x",
        "retire",
        "Retire",
        show=False,
        tooltip="Retire this question (left out of every mean, kept in the file; u undoes), or bring it back.",
        id="questions.retire",
        priority=True,
    ),
    Binding(
        "a",
        "adhoc",
        "Ad-hoc",
        show=False,
        tooltip="Type any question, see every retriever's list for it, and add it to the golden set.",
        id="questions.adhoc",
        priority=True,
    ),
    Binding(
        "e",
        "explain",
        "Explain",
        show=False,
        tooltip="Hybrid attribution of the current question: bm25 and vector ranks, RRF terms, pool ceiling.",
        id="results.explain",
        priority=True,
    ),
    Binding(
        "c",
        "compare",
        "Compare",
        show=False,
        tooltip="Compare two retrievers: win/tie/loss, randomisation p-value, bootstrap 95% interval.",
        id="metrics.compare",
        priority=True,
    ),
    Binding(
        "r",
        "curve",
        "Recall curve",
        show=False,
        tooltip="Recall@k for k = 1..depth per retriever, as a plot.",
        id="metrics.curve",
        priority=True,
    ),
    Binding(
        "g",
        "agreement",
        "Agreement",
        show=False,
        tooltip="The evidence rule against the hand grades, the annotators and the model judges: confusion tables, kappa, disagreements.",
        id="labels.agreement",
        priority=True,
    ),
    Binding(
        "d",
        "diagnostics",
        "Diagnostics",
        show=False,
        tooltip="Chunking diagnostics: straddling and multi-match evidence, truncated chunks, token histogram.",
        id="corpus.diagnostics",
        priority=True,
    ),
)


def footer_keys(bindings: dict[str, ActiveBinding], narrow: bool) -> dict[str, ActiveBinding]:
    """The keys the footer lists: when ``narrow`` (below ``FULL_FOOTER_WIDTH`` columns) not those of
    ``WIDE_FOOTER_ONLY`` (the help lists them; Textual's key panel too), so that the footer fits 80
    columns with a filter on and a result list focused."""
    if not narrow:
        return bindings
    return {
        key: active._replace(binding=replace(active.binding, show=False))
        if active.binding.id in WIDE_FOOTER_ONLY
        else active
        for key, active in bindings.items()
    }


def key_applies(action: str, focused: Widget | None, filtering: bool) -> bool:
    """Whether a key's ``action`` applies now: escape (clear the filter) only while ``filtering``
    (a filter on, or the filter box open); while an input has the focus, only tab and, in the
    filter box, enter (it applies the filter at once, so a key typed right after it in the same
    burst already goes to the list): every other key is typed into the input."""
    if action == "clear_filter":
        return filtering
    if isinstance(focused, Input):
        return action == "cycle_focus" or (action == "choose" and focused.id == "filter")
    return True
