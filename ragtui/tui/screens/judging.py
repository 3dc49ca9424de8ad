"""The judging view: one pair at a time, a digit grades it and moves to the next (one key a pair).

It walks the pooled pairs (every shown retriever's top k) of the questions the main screen shows,
in their order, each question's unjudged pairs first. The question is shown in full, the chunk at
full width scrolled to the evidence (else to the passage densest in question terms), with where it
comes from and, unless blind, which retrievers ranked it where. Grades go to the app as requests
carrying their pair; the view moves on at once.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Static

from ragtui.core.text import visible_line
from ragtui.core.workspace import Workspace
from ragtui.tui.judging import JudgingSession, JudgingWalk
from ragtui.tui.messages import Changed, GradeRequested, Notice, UndoRequested
from ragtui.tui.screens.main import format_seconds, ndcg_moves
from ragtui.tui.widgets.chunk_view import ChunkView
from ragtui.tui.widgets.status_line import StatusLine
from ragtui.tui.widgets.text import DISPUTED_MARK, set_frame_text

if TYPE_CHECKING:
    from ragtui.tui.app import RagtuiApp

#: The longest question text shown (a question of a megabyte would take seconds to lay out).
MAX_QUESTION_CHARS = 2000


def _digits() -> list[Binding]:
    """0-9: grade the pair and go to the next; only 0 shows in the footer, as 0-9."""
    out = [
        Binding(
            "0",
            "grade(0)",
            "Grade, next",
            key_display="0-9",
            priority=True,
            tooltip="Grade the pair on screen and move to the next one.",
            id="judge.grade",
        )
    ]
    out += [Binding(str(g), f"grade({g})", show=False, priority=True) for g in range(1, 10)]
    return out


class JudgingScreen(Screen[None]):
    """Grade pooled (question, chunk) pairs one key each."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *_digits(),
        Binding(
            "backspace",
            "clear",
            "Clear",
            priority=True,
            tooltip="Remove the hand grade of the pair on screen.",
            id="judge.clear",
        ),
        Binding(
            "u",
            "undo",
            "Undo",
            priority=True,
            tooltip="Undo the last grade and go back to that pair.",
            id="judge.undo",
        ),
        Binding(
            "left",
            "move(-1)",
            "Move",
            key_display="←→",
            priority=True,
            tooltip="The previous pair, without grading.",
            id="judge.previous",
        ),
        Binding(
            "right",
            "move(1)",
            "Next",
            show=False,
            priority=True,
            tooltip="The next pair, without grading.",
            id="judge.next",
        ),
        Binding(
            "space,pagedown",
            "scroll(1)",
            "Scroll",
            show=False,
            priority=True,
            tooltip="Scroll the chunk down.",
            id="judge.scroll_down",
        ),
        Binding(
            "pageup,shift+space",
            "scroll(-1)",
            "Scroll up",
            show=False,
            priority=True,
            id="judge.scroll_up",
        ),
        Binding("down", "scroll_line(1)", show=False, priority=True),
        Binding("up", "scroll_line(-1)", show=False, priority=True),
        Binding(
            "c",
            "context",
            "Context",
            show=False,
            priority=True,
            tooltip="Show the chunks before and after this one in its document.",
            id="judge.context",
        ),
        Binding(
            "b",
            "blind",
            "Blind",
            show=False,
            priority=True,
            tooltip="Hide which retrievers ranked the chunk (judge without knowing the system).",
            id="judge.blind",
        ),
        Binding(
            "question_mark",
            "keys",
            "Keys",
            priority=True,
            tooltip="Every key of the judging view.",
            id="judge.keys",
        ),
        Binding(
            "escape",
            "close",
            "Back",
            priority=True,
            tooltip="Back to where you were.",
            id="judge.close",
        ),
    ]

    def __init__(
        self,
        ws: Workspace,
        qids: list[str],
        retrievers: list[str],
        start: tuple[str, str | None] | None = None,
        blind: bool = False,
        adjudicate: bool = False,
    ) -> None:
        """Judge the pools of ``qids`` (in this order) over ``retrievers``' top k, starting at
        ``start`` when it is pooled; with ``adjudicate``, settle their disputed pairs instead."""
        super().__init__(id="judging")
        self.ws = ws
        self.retrievers = retrievers
        #: The adjudication pass: digits record adjudicated grades, which win.
        self.adjudicate = adjudicate
        self.session = JudgingSession(JudgingWalk(ws, qids), start, adjudicate=adjudicate)
        #: Hide which retrievers ranked the chunk.
        self.blind = blind
        #: Show the neighbouring chunks.
        self.context = False
        self._started = time.monotonic()
        self._graded_here = 0
        self._first_grade_at: float | None = None
        self._last_note = ""
        #: The progress line shown in the question's frame (pair, judged, rate, time left).
        self.progress = ""

    @property
    def ragtui(self) -> RagtuiApp:
        """The app, typed."""
        return cast("RagtuiApp", self.app)

    def compose(self) -> ComposeResult:
        """The pair: question, where the chunk is from, the chunk; then the scale, status, keys."""
        yield Static("", id="judge-question")
        yield Static("", id="judge-meta")
        yield ChunkView(id="judge-chunk", header=False)
        yield Static("", id="judge-scale")
        yield StatusLine(id="judge-status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        """Follow the app's changes and status line, and show the first pair."""
        self.ragtui.changed.subscribe(self, self._changed, immediate=True)
        self.ragtui.status_changed.subscribe(self, self.query_one(StatusLine).show, immediate=True)
        scale = self.ragtui.controller.grade_scale
        self.query_one("#judge-scale", Static).update(
            Text(visible_line("  ·  ".join(f"{g} {label}" for g, label in scale)))
        )
        if self.session.current is None:
            self.post_message(
                Notice(
                    "No pair is disputed among the questions shown."
                    if self.adjudicate
                    else "The questions shown pool no chunk: nothing to judge."
                )
            )
        self.show_pair()

    # ---- drawing ------------------------------------------------------------------------------

    def show_pair(self) -> None:
        """Draw the pair on screen (question, origin, ranks, grade, chunk)."""
        entry = self.session.current
        question_bar = self.query_one("#judge-question", Static)
        meta = self.query_one("#judge-meta", Static)
        view = self.query_one(ChunkView)
        if entry is None:
            question_bar.update("")
            meta.update("")
            view.show(None, None, None)
            self._update_title()
            return
        ws = self.ws
        question = ws.question_by_id[entry.question]
        text = " ".join(question.text.split())
        if len(text) > MAX_QUESTION_CHARS:
            text = (
                text[:MAX_QUESTION_CHARS] + f"… ({len(text) - MAX_QUESTION_CHARS} more characters)"
            )
        line = Text()
        line.append(visible_line(entry.question), "bold")
        line.append("  " + visible_line(text))
        if question.slices:
            line.append("  [" + visible_line(", ".join(question.slices)) + "]", "dim")
        old = question_bar.content
        if not (
            isinstance(old, Text) and old == line
        ):  # the next pair is often the same question's
            question_bar.update(line)
        # The origin lines have a fixed height (one more when annotators' grades are shown): a new
        # layout only when that changes.
        origin = self._meta(entry.question, entry.chunk)
        meta.set_class(origin.plain.count("\n") >= 2, "-annotators")
        meta.update(origin, layout=False)
        view.show(ws, entry.question, entry.chunk, context=self.context)
        self._update_title()

    def _meta(self, qid: str, cid: str) -> Text:
        """``doc › heading · bm25 #2 · vector – · hybrid #3 · grade 2 (hand)``."""
        ws = self.ws
        chunk = ws.chunk_by_id[cid]
        place = " › ".join((chunk.doc, *chunk.heading_path))
        out = Text()
        out.append(visible_line(cid), "bold")
        out.append("  " + visible_line(place), "dim")
        if not self.blind:
            ranks = []
            for name in self.retrievers:
                ranked = [c for c, _ in ws.ranking(name, qid)]
                ranks.append(f"{name} #{ranked.index(cid) + 1}" if cid in ranked else f"{name} –")
            out.append("\n" + visible_line(" · ".join(ranks)))
        else:
            out.append("\nblind: the retrievers are hidden", "dim")
        grade, source = ws.grade_source(qid, cid)
        out.append("  ·  ")
        out.append(
            "not graded" if grade is None else f"grade {grade} ({source})",
            "bold" if source == "hand" else "",
        )
        by_annotator = ws.annotator_grades(qid, cid)
        if len(by_annotator) > 1 and (self.adjudicate or not self.blind):
            # Several people graded the pair: each one's grade (what an adjudicator settles).
            grades = " · ".join(f"{visible_line(a)} {g}" for a, g in sorted(by_annotator.items()))
            disputed = ws.disputed(qid, cid)
            out.append(f"\n{DISPUTED_MARK if disputed else ' '} annotators: {grades}")
            if disputed:
                out.append("  disputed: a digit settles it", "bold")
        return out

    def _update_title(self) -> None:
        """``pair 3 of 351 · judged 40 · 12/min · 26 min left``."""
        session = self.session
        total = len(session.pairs)
        judged = session.judged_count()
        parts = [
            f"pair {session.position + 1 if total else 0} of {total}",
            f"judged {judged}/{total}",
        ]
        if self._first_grade_at is not None and self._graded_here >= 2:
            minutes = max(time.monotonic() - self._first_grade_at, 1e-6) / 60
            rate = (self._graded_here - 1) / minutes
            if rate > 0:
                parts.append(f"{rate:.0f}/min")
                parts.append(f"{format_seconds((total - judged) / rate * 60)} left")
        if self.blind:
            parts.append("blind")
        if self.adjudicate:
            parts.insert(0, "adjudicating")
        # The question's frame, not the screen's sub_title: a screen's sub_title repaints the whole
        # screen (every line of the chunk twice a key), and this screen has no header to show it.
        self.progress = " · ".join(parts)
        set_frame_text(self.query_one("#judge-question", Static), self.progress)

    # ---- what the app changed --------------------------------------------------------------------

    def _changed(self, change: Changed) -> None:
        """A grade was saved (or labels arrived): redraw the pair's grade and the counts."""
        entry = self.session.current
        if change.kind == "grades" and change.moves:
            self._last_note = ndcg_moves(change.moves, self.ws.settings.k)
        if entry is not None and (change.questions is None or entry.question in change.questions):
            self.query_one("#judge-meta", Static).update(
                self._meta(entry.question, entry.chunk), layout=False
            )
        self._update_title()

    # ---- keys ---------------------------------------------------------------------------------------

    def action_grade(self, grade: int) -> None:
        """Grade the pair on screen and move to the next unjudged pair (a key outside the scale
        saves nothing and says so)."""
        entry = self.session.current
        if entry is None:
            return
        scale = dict(self.ragtui.controller.grade_scale)
        if grade not in scale:
            words = " · ".join(f"{g} {label}" for g, label in scale.items())
            self.post_message(
                Notice(f"{grade} is not on the grade scale ({words}): nothing saved.", error=True)
            )
            return
        self.app.post_message(
            GradeRequested(entry.question, entry.chunk, grade, adjudicate=self.adjudicate)
        )
        if self._first_grade_at is None:
            self._first_grade_at = time.monotonic()
        self._graded_here += 1
        if self.session.graded_current() is None:
            self.post_message(Notice("Every pair of the questions shown is judged."))
        self.show_pair()

    def action_clear(self) -> None:
        """Remove the pair's hand grade (the evidence rule applies again); stay on it."""
        entry = self.session.current
        if entry is not None:
            self.app.post_message(
                GradeRequested(entry.question, entry.chunk, None, adjudicate=self.adjudicate)
            )

    def action_undo(self) -> None:
        """Undo the last label change and go back to that pair."""
        self.post_message(UndoRequested())
        if self.session.back_to_last_graded():
            self._graded_here = max(0, self._graded_here - 1)
            self.show_pair()

    def action_move(self, step: int) -> None:
        """The next or previous pair, without grading."""
        self.session.move(step)
        self.show_pair()

    def action_scroll(self, step: int) -> None:
        """A page of the chunk down or up."""
        view = self.query_one(ChunkView)
        if step > 0:
            view.scroll_page_down(animate=False)
        else:
            view.scroll_page_up(animate=False)

    def action_scroll_line(self, step: int) -> None:
        """A line of the chunk down or up."""
        view = self.query_one(ChunkView)
        view.scroll_relative(y=step, animate=False)

    def action_context(self) -> None:
        """Show or hide the neighbouring chunks of the same document."""
        self.context = not self.context
        self.show_pair()

    def action_blind(self) -> None:
        """Hide or show which retrievers ranked the chunk."""
        self.blind = not self.blind
        self.show_pair()

    def action_keys(self) -> None:
        """Say every key in the status line."""
        self.post_message(
            Notice(
                "0-9 grade & next · ⌫ clear · u undo · ←/→ move · ␣/PgDn scroll · c context · "
                "b blind · esc back"
            )
        )

    def action_close(self) -> None:
        """Back to where the view was opened."""
        self.dismiss(None)
