"""The judging view: one pair at a time, a digit grades it and moves to the next (one key a pair).

It walks the pooled pairs (every shown retriever's top k) of the questions the main screen shows,
in their order, each question's unjudged pairs first (when several people grade: unjudged by the
current annotator). The question is shown in full, the chunk at full width scrolled to the
evidence (else to the passage densest in question terms), with where it comes from and, unless
blind, which retrievers ranked it where. Grades go to the app as requests carrying their pair; the
view moves on at once.

Every line but the chunk keeps its row at any size: the chunk id and heading path are shortened to
one row, the ranks and grade to another, the annotators (when several graded) to a third; the
chunk scrolls in what remains.

``v`` switches to verifying a model judge's grades (the pairs a judge graded that no person has,
the judge's grade and reason in three rows of their own; enter takes the grade as yours), ``o``
cycles the queue's order (as shown, judge and evidence rule disagreeing first, the random sample
for the estimate); the title says which.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Static

from ragtui.core.judges.verify import QUEUE_ORDERS, SAMPLE_SEED, SAMPLE_SIZE, judges
from ragtui.core.text import visible_line
from ragtui.core.workspace import Workspace
from ragtui.tui.judging_session import (
    JudgingSession,
    JudgingWalk,
    Queue,
    verdict_rows,
)
from ragtui.tui.messages import Changed, GradeRequested, Notice, SampleRequested, UndoRequested
from ragtui.tui.screens.host import ControllerView, host
from ragtui.tui.widgets.chunk_view import ChunkView
from ragtui.tui.widgets.formatting import format_seconds
from ragtui.tui.widgets.pair_lines import PairLines
from ragtui.tui.widgets.results_pane import QuestionBar
from ragtui.tui.widgets.status_line import StatusLine
from ragtui.tui.widgets.text import set_frame_text

#: The longest question text shown (a question of a megabyte would take seconds to lay out).
MAX_QUESTION_CHARS = 2000
#: What each order of the queue is called in the status line.
ORDER_NAMES = {
    "shown": "the questions shown, in their order",
    "disagree": "judge and evidence rule disagreeing first, most first",
    "sample": "the random sample of questions for the estimate",
}


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
            tooltip="Judge blind: hide which retrievers ranked the chunk, the evidence rule's grade "
            "and its highlight (stays on until b again).",
            id="judge.blind",
        ),
        Binding(
            "enter",
            "accept",
            "Accept",
            show=False,
            priority=True,
            tooltip="Verifying: take the judge's grade as your own and move to the next pair.",
            id="judge.accept",
        ),
        Binding(
            "v",
            "verify",
            "Verify",
            show=False,
            priority=True,
            tooltip="Verify a judge's grades: the pairs a judge graded that no person has, with "
            "its grade and reason (v again: the people's queue).",
            id="judge.verify",
        ),
        Binding(
            "o",
            "order",
            "Order",
            show=False,
            priority=True,
            tooltip="The queue's order: as shown, judge and evidence rule disagreeing first, or "
            "the random sample of questions for the estimate.",
            id="judge.order",
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
        controller: ControllerView,
        qids: list[str],
        retrievers: list[str],
        start: tuple[str, str | None] | None = None,
        adjudicate: bool = False,
        queue: Queue | None = None,
    ) -> None:
        """Judge the pools of ``qids`` (in this order) over ``retrievers``' top k, starting at
        ``start`` when it is pooled; with ``adjudicate``, settle their disputed pairs instead;
        with ``queue``, verify a judge's grades or walk in another order (``v``, ``o``).
        Blind or not is the app's (the ``blind`` setting, toggled with ``b`` for the session), read
        from ``controller`` with the grade scale and the latest change."""
        super().__init__(id="judging")
        self.ws = ws
        self.controller = controller
        self.retrievers = retrievers
        #: The adjudication pass: digits record adjudicated grades, which win.
        self.adjudicate = adjudicate
        self.session = JudgingSession(JudgingWalk(ws, qids), start, adjudicate, queue)
        #: The judge's grade on screen when verifying, with its pair (what enter accepts).
        self._shown_verdict: tuple[tuple[str, str], int] | None = None
        #: Show the neighbouring chunks.
        self.context = False
        self._graded_here = 0
        self._first_grade_at: float | None = None
        #: The progress line shown in the question's frame (pair, judged, rate, time left).
        self.progress = ""

    @property
    def blind(self) -> bool:
        """Judging blind: the retrievers' ranks, the evidence rule's grade and its highlight hidden
        (the ``blind`` setting until ``b`` toggles it; the toggle lasts the session)."""
        controller = self.controller
        if controller.judging_blind is not None:
            return controller.judging_blind
        return controller.settings.blind

    @property
    def person(self) -> str | None:
        """Whose queue this is when several people grade (None: one person, any hand grade counts)."""
        return self.session.walk.queue.person

    @property
    def pair_lines(self) -> PairLines:
        """The pair's origin rows as this view shows them now (blind or not, others' grades)."""
        settings = self.controller.settings
        return PairLines(self.session, self.retrievers, self.blind, settings.show_others)

    def compose(self) -> ComposeResult:
        """The pair: question, where the chunk is from, the chunk; then the scale, status, keys."""
        yield QuestionBar(id="judge-question")
        yield Static("", id="judge-meta")
        yield Static("", id="judge-verdict")
        yield ChunkView(id="judge-chunk", header=False)
        yield Static("", id="judge-scale")
        yield StatusLine(id="judge-status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        """Follow the app's changes and status line, and show the first pair."""
        app = host(self)
        app.changed.subscribe(self, self._changed, immediate=True)
        app.status_changed.subscribe(self, self.query_one(StatusLine).show, immediate=True)
        self._draw_scale()
        self.query_one("#judge-verdict", Static).display = self.session.queue.verify
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

    @property
    def line_width(self) -> int:
        """The cells of one line of the view (the screen less the padding)."""
        return max(10, (self.size.width or self.app.size.width) - 2)

    def on_resize(self) -> None:
        """Fit the one-row lines to the new width."""
        self._draw_scale()
        entry = self.session.current
        if entry is not None:
            self._draw_meta(entry.question, entry.chunk)
            self._draw_verdict()

    def _draw_scale(self) -> None:
        """The grade scale in its own words, on one row (closer together, then cut, when narrow)."""
        scale = self.controller.grade_scale
        words = [visible_line(f"{g} {label}") for g, label in scale]
        legend = "  ·  ".join(words)
        if cell_len(legend) > self.line_width:
            legend = " · ".join(words)
        self.query_one("#judge-scale", Static).update(
            Text(legend, no_wrap=True, overflow="ellipsis")
        )

    def _draw_meta(self, qid: str, cid: str) -> None:
        """The origin lines: two rows, three when the annotators' grades are shown (a new layout
        only when that changes)."""
        meta = self.query_one("#judge-meta", Static)
        origin = self.pair_lines.text(qid, cid, self.line_width)
        meta.set_class(origin.plain.count("\n") >= 2, "-annotators")
        meta.update(origin, layout=False)

    def show_pair(self) -> None:
        """Draw the pair on screen (question, origin, ranks, grade, chunk)."""
        entry = self.session.current
        question_bar = self.query_one("#judge-question", QuestionBar)
        meta = self.query_one("#judge-meta", Static)
        view = self.query_one(ChunkView)
        if entry is None:
            question_bar.update("")
            meta.update("")
            view.show(None, None, None)
            self._draw_verdict()
            self._update_title()
            return
        ws = self.ws
        question = ws.questions.by_id[entry.question]
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
        question_bar.show(line)  # the next pair is often the same question's: nothing to draw
        self._draw_meta(entry.question, entry.chunk)
        self._draw_verdict()
        view.show(ws, entry.question, entry.chunk, context=self.context, evidence=not self.blind)
        self._update_title()
        view.look_ahead(self._prepare_ahead)

    def _prepare_ahead(self) -> None:
        """Lay out ahead the chunk a grade of the pair on screen moves to."""
        ahead = self.session.ahead()
        if ahead is not None and self.is_current:
            view = self.query_one(ChunkView)
            view.prepare(self.ws, *ahead.key, context=self.context, evidence=not self.blind)

    def _draw_verdict(self) -> None:
        """Verifying: the judge's grade and its reason (three rows, drawn without a new layout),
        or why they are hidden; remembers the grade shown, which is what enter accepts."""
        self._shown_verdict = None
        if not self.session.queue.verify:
            return
        rows, grade = verdict_rows(
            self.session, self.line_width, self.blind, self.controller.grade_scale
        )
        entry = self.session.current
        if entry is not None and grade is not None:
            self._shown_verdict = (entry.key, grade)
        self.query_one("#judge-verdict", Static).update(rows, layout=False)

    def _update_title(self) -> None:
        """``pair 3 of 351 · judged 40/351 · 12/min · 26 min left`` (``judged 40/351 by bob`` in a
        person's own queue); ``verify llm · disagree first · pair 3 of 40 · verified 5/40`` when
        verifying; ``… · judged 40/351 · sample 12/40 judged fully`` in the sample order."""
        session = self.session
        queue = session.queue
        total = len(session.pairs)
        judged = session.judged_count()
        person = None if self.adjudicate or queue.verify or queue.order == "sample" else self.person
        verb = "verified" if queue.suggests else "judged"
        parts = [
            *queue.title(),
            f"pair {session.position + 1 if total else 0} of {total}",
            f"{verb} {judged}/{total}" + (f" by {visible_line(person)}" if person else ""),
        ]
        if queue.order == "sample":  # after the judged count, which an 80-column frame keeps
            parts.append(session.sample_progress(self.controller.estimate_sample))
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
        """A grade was saved (or labels arrived): redraw the pair's grade and the counts; the
        sample for the estimate arrived: walk it."""
        if change.kind == "sample":
            if self.session.queue.order == "sample":
                self._set_queue(self.session.queue)
            return
        entry = self.session.current
        if (
            entry is not None
            and (change.questions is None or entry.question in change.questions)
            and (change.chunk is None or change.chunk == entry.chunk)
        ):
            # The annotators' line may come or go (the view stays on a pair just graded); a grade
            # of another pair (the one a digit left) changes nothing the pair's lines show.
            self._draw_meta(entry.question, entry.chunk)
            self._draw_verdict()
        self.session.sample_changed(change.questions)
        self._update_title()

    def _set_queue(self, queue: Queue) -> None:
        """Walk another queue (verify or not, another order), staying on the pair on screen when
        the new walk holds it, else on its question's first unjudged pair; a new order that is
        not the shown one starts at its first unjudged pair (the largest disagreement, the
        sample's first question)."""
        before = self.session
        entry = before.current
        recorded = self.controller.estimate_sample
        fresh = queue.order != before.queue.order and queue.order != "shown"
        self.session = JudgingSession(
            before.walk,
            (entry.question, entry.chunk) if entry is not None and not fresh else None,
            queue=queue,
            sample=recorded.sample if recorded is not None else None,
        )
        self.session.keep_graded(before)
        self.query_one("#judge-verdict", Static).display = queue.verify
        self.show_pair()

    def verify(self, judge: str | None) -> None:
        """Verify ``judge``'s grades (None: every judge's), from the command palette."""
        if self.adjudicate:
            self.post_message(
                Notice("The adjudication pass settles people's disputes: verify from j.")
            )
            return
        self._set_queue(replace(self.session.queue, verify=True, judge=judge))
        self._say_queue()

    def _say_queue(self) -> None:
        """What the view walks now, in the status line."""
        queue = self.session.queue
        who = f"{visible_line(queue.judge)}'s" if queue.judge else "the judges'"
        if queue.verify and not self.session.pairs:
            text = f"No pair of the questions shown has {who} grade (v: back)."
        elif queue.verify:
            text = f"Verifying {who} grades: ⏎ accepts, 0-9 overrides (v: back)."
        else:
            text = "The people's queue: every pooled pair (v: verify a judge's grades)."
        self.post_message(Notice(text))

    # ---- keys ---------------------------------------------------------------------------------------

    def action_grade(self, grade: int) -> None:
        """Grade the pair on screen and move to the next unjudged pair (a key outside the scale
        saves nothing and says so)."""
        entry = self.session.current
        if entry is None:
            return
        self._grade(entry.question, entry.chunk, grade)

    def action_accept(self) -> None:
        """Verifying: take the judge's grade on screen as your own (a person's journal line, as a
        digit writes) and move on; blind, in the sample, or without a verdict: say why not."""
        entry = self.session.current
        if entry is None:
            return
        shown = self._shown_verdict
        if shown is not None and shown[0] == entry.key:
            self._grade(entry.question, entry.chunk, shown[1])
            return
        queue = self.session.queue
        if not queue.verify:
            why = "Enter accepts a judge's grade when verifying (v)."
        elif not queue.suggests:
            why = "In the sample for the estimate you give the grade yourself (0-9)."
        elif self.blind:
            why = "Blind: the judge's grade is hidden, so you give the grade yourself (0-9)."
        else:
            why = "No judge's grade on this pair: give yours (0-9)."
        self.post_message(Notice(why))

    def _grade(self, qid: str, cid: str, grade: int) -> None:
        """Ask the app to save ``grade`` for the pair and move to the next unjudged pair."""
        scale = dict(self.controller.grade_scale)
        if grade not in scale:
            words = " · ".join(f"{g} {label}" for g, label in scale.items())
            self.post_message(
                Notice(f"{grade} is not on the grade scale ({words}): nothing saved.", error=True)
            )
            return
        # The next pair first: the status says so with the grade when none is left.
        done = self.session.graded_current() is None
        self.app.post_message(
            GradeRequested(
                qid,
                cid,
                grade,
                adjudicate=self.adjudicate,
                independent=self.pair_lines.independent(qid, cid),
                then="every pair of the questions shown is judged" if done else "",
            )
        )
        if self._first_grade_at is None:
            self._first_grade_at = time.monotonic()
        self._graded_here += 1
        self.show_pair()

    def action_clear(self) -> None:
        """Remove the pair's hand grade (the evidence rule applies again); stay on it. (The app
        refuses, and says so, when there is no grade of yours to remove.)"""
        entry = self.session.current
        if entry is not None:
            self.app.post_message(
                GradeRequested(entry.question, entry.chunk, None, adjudicate=self.adjudicate)
            )

    def action_undo(self) -> None:
        """Undo the last label change and go back to that pair (the request names the change
        that was the latest as this key was pressed)."""
        self.app.post_message(UndoRequested(self.controller.latest_change))
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
        """Judge blind or not, for the rest of the session (every judging view opened after too)."""
        blind = not self.blind
        self.controller.set_judging_blind(blind)
        self.show_pair()
        self.post_message(
            Notice(
                "Blind: ranks, evidence grade and highlight hidden (b shows them)."
                if blind
                else "Not blind: ranks, every grade and the evidence shown (b hides them)."
            )
        )

    def action_verify(self) -> None:
        """Between the people's queue and verifying the judges' grades."""
        if self.adjudicate:
            self.post_message(Notice("The adjudication pass settles people's disputes: no v here."))
            return
        queue = self.session.queue
        if not queue.verify and not judges(self.ws.grades.labels):
            self.post_message(
                Notice(
                    "No judge has graded a pair yet (ragtui judge grades the pool): none to verify."
                )
            )
            return
        self._set_queue(replace(queue, verify=not queue.verify))
        self._say_queue()

    def action_order(self) -> None:
        """The queue's next order: as shown, disagreeing first, the sample for the estimate."""
        if self.adjudicate:
            self.post_message(Notice("The adjudication pass walks the disputed pairs: no o here."))
            return
        queue = self.session.queue
        order = QUEUE_ORDERS[(QUEUE_ORDERS.index(queue.order) + 1) % len(QUEUE_ORDERS)]
        if order == "sample":
            # Read (or draw and record) the sample: the app applies it before the next key.
            self.app.post_message(SampleRequested(SAMPLE_SIZE, SAMPLE_SEED))
        else:
            self.post_message(Notice(f"Order: {ORDER_NAMES[order]} (o: next order)."))
        self._set_queue(replace(queue, order=order))

    def action_keys(self) -> None:
        """Say every key in the status line."""
        self.post_message(
            Notice(
                "0-9 grade & next · ⌫ clear · u undo · ←/→ move · ␣/PgDn scroll · c context · "
                "b blind · v verify · ⏎ accept · o order · esc back"
            )
        )

    def action_close(self) -> None:
        """Back to where the view was opened."""
        self.dismiss(None)
