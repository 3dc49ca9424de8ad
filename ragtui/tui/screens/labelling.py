"""The main screen's labelling and comparison workflow: the judging queue (issue 8) and a saved-run
baseline (issue 7), kept apart from ``main.py`` as a mixin so that file stays small.

The queue is ``ragtui.core.labelling.judging.JudgingQueue`` over every shown retriever's top k; the screen
rebuilds it lazily whenever what it pools from changes (k, rankings, questions, order).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.binding import Binding

from ragtui.core.labelling.judging import JudgingQueue, PoolEntry, PoolOrder, QueueProgress

if TYPE_CHECKING:
    from ragtui.core.workspace import Workspace
    from ragtui.tui.screens.main import MainScreen

#: The seed of the random pool order (fixed, so a session can be resumed in the same order).
RANDOM_SEED = 0

LABELLING_BINDINGS = [
    Binding(
        "n",
        "next_unjudged",
        "Unjudged",
        tooltip="Jump to the next pooled chunk without a hand grade (any question), then 0-9 grades it.",
        id="labels.next_unjudged",
    ),
    Binding(
        "a",
        "adhoc",
        "Ad-hoc",
        show=False,
        tooltip="Type any question, see every retriever's list for it, and add it to the golden set.",
        id="questions.adhoc",
    ),
    Binding(
        "e",
        "explain",
        "Explain",
        show=False,
        tooltip="Hybrid attribution of the current question: bm25 and vector ranks, RRF terms, pool ceiling.",
        id="results.explain",
    ),
    Binding(
        "c",
        "compare",
        "Compare",
        show=False,
        tooltip="Compare two retrievers: win/tie/loss, randomisation p-value, bootstrap 95% interval.",
        id="metrics.compare",
    ),
    Binding(
        "r",
        "curve",
        "Recall curve",
        show=False,
        tooltip="Recall@k for k = 1..depth per retriever, as a plot.",
        id="metrics.curve",
    ),
    Binding(
        "g",
        "agreement",
        "Agreement",
        show=False,
        tooltip="The evidence rule against the hand grades: confusion table, kappa, disagreements.",
        id="labels.agreement",
    ),
    Binding(
        "d",
        "diagnostics",
        "Diagnostics",
        show=False,
        tooltip="Chunking diagnostics: straddling and multi-match evidence, truncated chunks, token histogram.",
        id="corpus.diagnostics",
    ),
]


class LabellingMixin:
    """The judging queue and the baseline deltas of the main screen (mixed into ``MainScreen``)."""

    #: The pool order used by ``n``: rank order, or the seeded shuffle.
    queue_order: PoolOrder = "rank"
    _queue: JudgingQueue | None = None
    _queue_key: tuple[Any, ...] | None = None
    _queue_counts: dict[str, tuple[int, int]] | None = None
    #: The last pooled pair ``n`` jumped to (the next ``n`` continues after it).
    _queue_position: tuple[str, str] | None = None

    # ---- the judging queue -----------------------------------------------------------------------

    def judging_queue(self: MainScreen) -> JudgingQueue | None:  # type: ignore[misc]
        """The queue for the workspace as it is now (rebuilt when k, rankings or questions changed)."""
        ws = self.ws
        if ws is None or ws.evaluation is None:
            return None
        key = (
            id(ws),
            ws.settings.k,
            tuple((n, id(ws.rankings.get(n))) for n in ws.retrievers),
            len(ws.questions),
            self.queue_order,
        )
        if self._queue is None or self._queue_key != key:
            self._queue = JudgingQueue(ws, order=self.queue_order, seed=RANDOM_SEED)
            self._queue_key = key
            self._queue_counts = None
        return self._queue

    def queue_progress(self: MainScreen) -> QueueProgress | None:  # type: ignore[misc]
        """Judged / pooled overall and per question (hand grades that apply)."""
        queue = self.judging_queue()
        return queue.progress() if queue is not None else None

    def _counts(self: MainScreen, queue: JudgingQueue) -> dict[str, tuple[int, int]]:  # type: ignore[misc]
        """Judged and pooled per question, cached between grade changes."""
        if self._queue_counts is None:
            progress = queue.progress()
            self._queue_counts = {q: (c.judged, c.pooled) for q, c in progress.per_question.items()}
        return self._queue_counts

    def judging_changed(self: MainScreen, qid: str | None = None) -> None:  # type: ignore[misc]
        """A grade changed (``qid``) or everything may have (None): update the progress line."""
        queue = self.judging_queue()
        if queue is not None and self._queue_counts is not None:
            if qid is None:
                self._queue_counts = None
            elif qid in self._queue_counts:
                count = queue.count(qid)
                self._queue_counts[qid] = (count.judged, count.pooled)
        self._refresh_deltas(qid)
        self.update_progress_line()

    def progress_text(self: MainScreen) -> str:  # type: ignore[misc]
        """``judged 12/351 · this question 3/6`` (hand grades over the pooled top k)."""
        queue = self.judging_queue()
        if queue is None:
            return ""
        counts = self._counts(queue)
        judged = sum(j for j, _ in counts.values())
        pooled = sum(p for _, p in counts.values())
        text = f"judged {judged}/{pooled}"
        if self.current_qid in counts:
            j, p = counts[self.current_qid]
            text += (
                f" · this {j}/{p}" if self.has_class("-compact") else f" · this question {j}/{p}"
            )
        if self.queue_order == "random":
            text += " · random order"
        return text

    def update_progress_line(self: MainScreen) -> None:  # type: ignore[misc]
        """Show the queue progress under the question list."""
        if not self.composed:
            return
        self.query_one("#questions").border_subtitle = Text(self.progress_text())

    def set_queue_order(self: MainScreen, order: PoolOrder) -> None:  # type: ignore[misc]
        """Rank order or the seeded random order for ``n``."""
        self.queue_order = order
        self._queue_position = None
        self.update_progress_line()
        self.notify(
            "Judging queue: random order (seeded), so position does not bias the judge."
            if order == "random"
            else "Judging queue: highest-ranked first.",
            timeout=4,
        )

    def next_unjudged_entry(self: MainScreen) -> PoolEntry | None:  # type: ignore[misc]
        """The pooled pair ``n`` goes to: after the last one visited on this question, else from its start."""
        queue = self.judging_queue()
        if queue is None or self.current_qid is None:
            return None
        position = self._queue_position
        if position is None or position[0] != self.current_qid:
            # Start at the current question's first pooled chunk (an id no pool holds).
            position = (self.current_qid, "\0")
        return queue.next_unjudged(after=position)

    def _queue_list(self: MainScreen, entry: PoolEntry) -> str | None:  # type: ignore[misc]
        """The list to grade a pooled chunk in: the focused one if it shows the chunk (the eye stays put),
        else the one that ranked it best."""
        focused = self.focused
        retriever = getattr(focused, "retriever", None)
        if (
            retriever in self.retrievers
            and self._ready(retriever)
            and any(
                cid == entry.chunk
                for cid, _ in self.ws.ranking(retriever, entry.question)  # type: ignore[union-attr]
            )
        ):
            return str(retriever)
        ranked = [
            (rank, self.retrievers.index(n), n) for n, rank in entry.ranks if n in self.retrievers
        ]
        return min(ranked)[2] if ranked else None

    def action_next_unjudged(self: MainScreen) -> None:  # type: ignore[misc]
        """Jump to the next unjudged pooled chunk and highlight it in the list that ranked it best."""
        ws = self.ws
        if ws is None or ws.evaluation is None:
            return
        entry = self.next_unjudged_entry()
        if entry is None:
            self.notify("Every pooled chunk has a hand grade: the pool is judged.", timeout=5)
            return
        self._queue_position = entry.key
        if entry.question not in self.visible_ids:
            self.set_filter("")
            self.query_one("#filter").value = ""  # type: ignore[attr-defined]
        if entry.question != self.current_qid:
            self.question_list.select_qid(entry.question)
            self.select_question(entry.question)
        name = self._queue_list(entry)
        if name is None:
            return
        if self.focused is not self.result_list(name):
            self.focus_retriever(name)
        results = self.result_list(name)
        if entry.chunk in results.rows:
            results.move_cursor(row=results.get_row_index(entry.chunk), scroll=True)
        self._update_chunk_view()
        self.update_progress_line()

    # ---- a saved run as baseline -----------------------------------------------------------------

    def baseline_deltas(self: MainScreen, ws: Workspace) -> dict[str, float] | None:  # type: ignore[misc]
        """Each evaluated question's nDCG@k now minus in the baseline run (same retriever), or None."""
        baseline = getattr(self.app, "baseline", None)
        if baseline is None or ws.evaluation is None:
            return None
        return baseline.deltas(ws)

    def apply_baseline(self: MainScreen) -> None:  # type: ignore[misc]
        """Show (or remove) the Δ column of the question list."""
        ws = self.ws
        if ws is None:
            return
        self.question_list.deltas = self.baseline_deltas(ws)
        self.show_workspace(ws)
        baseline = getattr(self.app, "baseline", None)
        if baseline is not None:
            self.query_one(
                "#questions"
            ).border_title = f"{self.query_one('#questions').border_title} · Δ vs {baseline.name}"

    def _refresh_deltas(self: MainScreen, qid: str | None) -> None:  # type: ignore[misc]
        """Grades or k changed: recompute the Δ column (one question, or all)."""
        ws = self.ws
        questions = self.question_list
        if ws is None or questions.deltas is None:
            return
        deltas = self.baseline_deltas(ws)
        if deltas is None:
            return
        questions.deltas = deltas
        if qid is not None:
            questions.update_question(ws, qid, self.status)
        else:
            questions.update_all(ws, self.status)

    # ---- views -------------------------------------------------------------------------------------

    def question_added(self: MainScreen, qid: str) -> None:  # type: ignore[misc]
        """A question was appended and evaluated: show it in the list and select it."""
        ws = self.ws
        if ws is None:
            return
        self._queue = None
        self.query_one("#filter").value = ""  # type: ignore[attr-defined]
        self.filter_text = ""
        self.set_class(False, "-filtered")
        self.question_list.deltas = (
            self.baseline_deltas(ws) if self.question_list.deltas is not None else None
        )
        self._fill_questions(keep=qid, refill=True)
        self.judging_changed()
        self.update_header()

    def action_adhoc(self: MainScreen) -> None:  # type: ignore[misc]
        """The ad-hoc query screen."""
        from ragtui.tui.screens.adhoc import AdhocScreen

        if self.ws is not None:
            self.app.push_screen(
                AdhocScreen(self.ws, [n for n in self.retrievers if self._ready(n)])
            )

    def action_explain(self: MainScreen) -> None:  # type: ignore[misc]
        """Hybrid attribution of the current question."""
        from ragtui.tui.screens.reports import explain_screen

        ws = self.ws
        if ws is None or self.current_qid is None:
            return
        if "vector" not in ws.rankings or "bm25" not in ws.rankings:
            self.notify(
                "Hybrid attribution needs bm25 and vector rankings (still embedding?).", timeout=5
            )
            return
        self.app.push_screen(explain_screen(ws, self.current_qid))

    def action_compare(self: MainScreen, a: str | None = None, b: str | None = None) -> None:  # type: ignore[misc]
        """Compare two retrievers (default: bm25 against hybrid, or the first two shown)."""
        from ragtui.tui.screens.reports import compare_screen

        ws = self.ws
        if ws is None or ws.evaluation is None:
            return
        names = ws.retrievers
        if len(names) < 2:
            self.notify("Comparing needs two retrievers with rankings.", timeout=5)
            return
        if a is None or b is None:
            a, b = ("bm25", "hybrid") if {"bm25", "hybrid"} <= set(names) else (names[0], names[1])
        self.app.push_screen(compare_screen(ws, a, b))

    def action_curve(self: MainScreen) -> None:  # type: ignore[misc]
        """Recall@k curves (over the filtered questions when a filter is on)."""
        from ragtui.tui.screens.reports import curve_screen

        ws = self.ws
        if ws is not None and ws.evaluation is not None:
            self.app.push_screen(
                curve_screen(ws, list(self.visible_ids) if self.filter_text else None)
            )

    def action_slices(self: MainScreen) -> None:  # type: ignore[misc]
        """Every metric per slice."""
        from ragtui.tui.screens.reports import slices_screen

        ws = self.ws
        if ws is not None and ws.evaluation is not None:
            self.app.push_screen(slices_screen(ws))

    def action_agreement(self: MainScreen) -> None:  # type: ignore[misc]
        """The agreement report."""
        from ragtui.tui.screens.reports import agreement_screen

        if self.ws is not None:
            self.app.push_screen(agreement_screen(self.ws))

    def action_diagnostics(self: MainScreen) -> None:  # type: ignore[misc]
        """The chunking diagnostics."""
        from ragtui.tui.screens.reports import diagnostics_screen

        if self.ws is not None:
            self.app.push_screen(diagnostics_screen(self.ws))
