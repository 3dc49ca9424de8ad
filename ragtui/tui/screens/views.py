"""The screens the main screen opens, one function each (the report screens' factories are in
``reports``): called on the UI thread when the key is pressed, with what the main screen shows then
(``Shown``); each returns the screen to push, the line saying why there is none, or None when there
is nothing to say."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.screen import Screen

from ragtui.core.judges.verify import judges
from ragtui.core.workspace import Workspace
from ragtui.tui.judging_session import Queue
from ragtui.tui.screens.host import ControllerView

if TYPE_CHECKING:
    from ragtui.core.analysis.why import WhyIndex
    from ragtui.tui.screens.chunk import ChunkScreen

# Each function imports its screen when the key is pressed: the first screen draws none of them,
# and importing them all (the judging view, the ad-hoc query, the reports and the analyses they
# run) took a quarter of the app's import time.

#: A screen to push, why there is none, or None (nothing to say).
View = Screen[Any] | str | None


@dataclass(frozen=True)
class Shown:
    """What the main screen shows as a key opens a view."""

    ws: Workspace
    controller: ControllerView
    question: str | None
    """The question the result lists show (None: no question matches the filter)."""
    chunk: str | None
    """The highlighted chunk of the focused result list (None: the focus is elsewhere)."""
    listed: Sequence[str]
    """The questions the list shows, in its order."""
    filtered: bool
    """Whether a filter is on."""
    disputed: bool
    """Whether the filter asks for disputed questions (the judging view then adjudicates)."""
    disagree: bool
    """Whether the filter asks for ``judge:disagree`` (the judging view then walks the pooled
    pairs with the judge and the rule disagreeing first)."""
    ready: list[str]
    """The retrievers whose rankings are ready, in order."""
    why: Callable[[], WhyIndex]
    """Why each question was missed (built when first asked for)."""

    def unretired(self) -> list[str]:
        """The questions listed, retired ones left out."""
        retired = self.ws.questions.retired_ids  # not each question built to read its flag
        return [q for q in self.listed if q not in retired]


def judging(shown: Shown) -> View:
    """The judging view over the questions shown, in their order, starting at the question shown
    (and the focused list's chunk); with the ``disputed`` filter, the adjudication pass; with
    ``judge:disagree``, the pooled pairs with the judge and the rule disagreeing first."""
    from ragtui.tui.screens.judging import JudgingScreen

    if shown.question is None:
        return "No question is shown: nothing to judge."
    if shown.disagree and not shown.disputed:
        queue = Queue(order="disagree")
        return JudgingScreen(
            shown.ws, shown.controller, shown.unretired(), shown.ready, None, queue=queue
        )
    start = (shown.question, shown.chunk)
    return JudgingScreen(
        shown.ws, shown.controller, shown.unretired(), shown.ready, start, shown.disputed
    )


def adjudication(shown: Shown) -> View:
    """The adjudication pass: the judging view over the disputed pairs of the questions shown."""
    from ragtui.tui.screens.judging import JudgingScreen

    if not shown.ws.grades.disputed_pairs():
        return "No pair is disputed: the annotators agree everywhere."
    return JudgingScreen(shown.ws, shown.controller, shown.unretired(), shown.ready, None, True)


def verifying(shown: Shown, judge: str | None = None) -> View:
    """The judging view verifying a judge's grades (None: every judge's) over the questions shown,
    starting at the question shown."""
    from ragtui.tui.screens.judging import JudgingScreen

    if shown.question is None:
        return "No question is shown: nothing to verify."
    if not judges(shown.ws.grades.labels):
        return "No judge has graded a pair yet (ragtui judge grades the pool): none to verify."
    queue = Queue(verify=True, judge=judge)
    start = (shown.question, None)
    return JudgingScreen(
        shown.ws, shown.controller, shown.unretired(), shown.ready, start, queue=queue
    )


def adhoc(shown: Shown) -> View:
    """The ad-hoc query screen, with the retrievers that are ready."""
    from ragtui.tui.screens.adhoc import AdhocScreen

    return AdhocScreen(shown.ws, shown.ready)


def chunk(ws: Workspace, qid: str | None, cid: str | None) -> ChunkScreen | None:
    """A chunk full screen (None: the list is empty)."""
    from ragtui.tui.screens.chunk import ChunkScreen

    return ChunkScreen(ws, qid, cid) if cid is not None else None


def explain(shown: Shown) -> View:
    """Hybrid attribution of the question shown, and why it was missed."""
    from ragtui.tui.screens.reports import explain_screen

    if shown.question is None:
        return None
    if "vector" not in shown.ws.ranked.rankings or "bm25" not in shown.ws.ranked.rankings:
        return "Hybrid attribution needs bm25 and vector rankings (still embedding?)."
    return explain_screen(shown.ws, shown.question, shown.why())


def compare(shown: Shown, a: str | None = None, b: str | None = None) -> View:
    """Two retrievers compared (default: bm25 against hybrid, or the first two)."""
    from ragtui.tui.screens.reports import compare_screen

    names = shown.ws.retrievers
    if len(names) < 2:
        return "Comparing needs two retrievers with rankings."
    if a is None or b is None:
        a, b = ("bm25", "hybrid") if {"bm25", "hybrid"} <= set(names) else (names[0], names[1])
    return compare_screen(shown.ws, a, b)


def curve(shown: Shown) -> View:
    """Recall@k curves (over the questions listed when a filter is on)."""
    from ragtui.tui.screens.reports import curve_screen

    return curve_screen(shown.ws, list(shown.listed) if shown.filtered else None)


def slices(shown: Shown) -> View:
    """Every metric per slice."""
    from ragtui.tui.screens.reports import slices_screen

    return slices_screen(shown.ws)


def agreement(shown: Shown) -> View:
    """The evidence rule against the hand grades, and the annotators against each other."""
    from ragtui.tui.screens.reports import agreement_screen

    return agreement_screen(shown.ws)


def diagnostics(shown: Shown) -> View:
    """The chunking diagnostics."""
    from ragtui.tui.screens.reports import diagnostics_screen

    return diagnostics_screen(shown.ws)
