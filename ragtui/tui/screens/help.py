"""The help screen: every key, what each metric means and its ceiling, and the marks the lists use."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from ragtui.core.analysis.question_filter import FILTER_SYNTAX
from ragtui.core.analysis.why import CAUSE_MARKS
from ragtui.tui.widgets.text import (
    DISPUTED_MARK,
    FAILURE_MARK,
    JUDGED_MARK,
    MISS_MARK,
    PENDING_MARK,
    RELEVANT_MARK,
    RETIRED_MARK,
    SKIPPED_MARK,
    UNAVAILABLE_MARK,
)

#: Every key of the app, with what it does (the defaults; the key tables of README.md and docs/app.md).
KEYS: list[tuple[str, str]] = [
    ("up / down, page up / page down", "move in the focused list"),
    (
        "tab / shift+tab",
        "cycle focus: question list, then the bm25, vector and hybrid result lists",
    ),
    ("enter", "question list: go to the result lists · result list: the chunk full screen"),
    ("0-9", "give the highlighted chunk that grade for the current question (saved at once)"),
    (
        "backspace",
        "remove the hand grade of the highlighted chunk (the evidence rule applies again)",
    ),
    ("u", "undo the last change: a grade (itself saved as a journal line) or a retirement"),
    ("/", f"filter the question list: {FILTER_SYNTAX} (words match the id or the text)"),
    ("escape", "clear the filter"),
    ("s", "question list: sort worst-first (by hybrid nDCG@k), again for golden-set order"),
    ("Home / End", "the first or last row of the focused list"),
    (
        "j",
        (
            "the judging view over the questions shown: a digit grades the pair and moves on; "
            "backspace clears, u undoes, ←/→ move, space scrolls, c context, b blind, v verifies "
            "a model judge's grades (enter accepts), o orders the queue, esc back"
        ),
    ),
    ("x", "retire the question (left out of every mean, kept in the file), or bring it back"),
    ("+ / -  (or ] / [)", "change k, the cut-off of recall, precision and nDCG"),
    ("n", "next unjudged pooled chunk (every retriever's top k), highlighted for a digit"),
    ("a", "ad-hoc query: any question, every retriever's list, add it to the golden set"),
    ("e", "explain hybrid for this question: ranks, RRF terms, pool ceiling"),
    ("c", "compare two retrievers: win/tie/loss, p-value, 95% interval"),
    ("r", "recall@k curve, k = 1..depth"),
    ("g / d", "agreement (rule vs hand grades, annotators, model judges) / chunking diagnostics"),
    ("?", "this help"),
    ("ctrl+p", "command palette: change k or depth, export TREC files, run check, sort, filter"),
    ("ctrl+q", "quit"),
]

#: One line per metric: what it means and the best value it can reach.
METRICS: list[tuple[str, str, str]] = [
    (
        "recall@k",
        "share of the question's relevant chunks that are in the top k",
        "ceiling 1, or k / relevant when a question has more than k relevant chunks",
    ),
    (
        "precision@k",
        "relevant chunks in the top k divided by k (always by k, as trec_eval's P_k)",
        "ceiling min(k, relevant) / k: one relevant chunk at k=3 can give at most 0.333 (column ceil)",
    ),
    (
        "MRR",
        "mean of 1 / rank of the first relevant chunk over the whole run (depth); 0 when none",
        "ceiling 1 (a relevant chunk at rank 1)",
    ),
    (
        "nDCG@k",
        "DCG of the top k (gain = grade, discount log2(rank + 1)) over the DCG of the ideal order",
        "ceiling 1 (the best chunks first)",
    ),
]

#: The marks of the question and result lists.
MARKS: list[tuple[str, str]] = [
    (
        "1, 2, …",
        "question list: rank of the first relevant chunk per retriever (beyond k: warning colour)",
    ),
    (MISS_MARK, "no relevant chunk in that retriever's run"),
    (FAILURE_MARK, "some retriever misses a relevant chunk in its top k (recall@k below 1)"),
    (
        SKIPPED_MARK,
        (
            "the question has no relevant chunk: skipped when it has no judgement, 0 in every "
            "mean when all its grades are below the threshold"
        ),
    ),
    (DISPUTED_MARK, "annotators graded a pair differently and nobody adjudicated it yet"),
    (RETIRED_MARK, "retired: left out of every mean, kept in the file (x brings it back)"),
    (
        "why column",
        "the first cause of the miss: "
        + ", ".join(f"{mark} {cause}" for cause, mark in CAUSE_MARKS.items())
        + " (ragtui why explains each)",
    ),
    (PENDING_MARK, "vector or hybrid still embedding"),
    (UNAVAILABLE_MARK, "retriever unavailable (the embedding model failed to load)"),
    (RELEVANT_MARK, "result list: a relevant chunk (grade >= threshold); the row stands out"),
    (JUDGED_MARK, "judged, not relevant (grade below the threshold)"),
    ("–", "result list: no grade (neither a label nor the evidence rule)"),
    (
        "hand / evidence / qrels",
        "where the grade comes from: your label, the evidence rule, BEIR qrels",
    ),
]


def help_table(rows: Sequence[Sequence[str]], headers: tuple[str, ...]) -> Table:
    """A borderless table of plain text (never markup)."""
    table = Table(box=None, show_edge=False, pad_edge=False, expand=True, header_style="bold")
    for i, header in enumerate(headers):
        table.add_column(header, no_wrap=i == 0, ratio=None if i == 0 else 1)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


class HelpScreen(ModalScreen[None]):
    """Every key and what each metric means; escape, q or ? closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape,q,question_mark",
            "dismiss",
            "Close",
            tooltip="Back to the main screen.",
            id="help.close",
        ),
    ]

    def compose(self) -> ComposeResult:
        """Keys, metrics and marks in a scrolling frame."""
        with VerticalScroll(id="help-box") as box:
            box.border_title = "ragtui help"
            yield Static(help_table(KEYS, ("key", "what it does")), classes="help-section")
            yield Static(
                help_table(
                    [(n, m, c) for n, m, c in METRICS], ("metric", "what it means", "ceiling")
                ),
                classes="help-section",
            )
            yield Static(
                Text(
                    "Means are over the questions with at least one judgement, as trec_eval counts "
                    "them: a question whose grades are all below the threshold counts 0, one with "
                    "no judgement at all is skipped, a retired one is left out; a question whose "
                    "run is empty counts as 0. Numbers agree with trec_eval."
                ),
                classes="help-section",
            )
            yield Static(help_table(MARKS, ("mark", "meaning")), classes="help-section")
        yield Footer()
