"""Compare two retrievers: win/tie/loss, randomisation test, bootstrap interval (issue 7)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from textual import work
from textual.binding import Binding, BindingType
from textual.message import Message

from ragtui.core.analysis.reports import comparison_report
from ragtui.core.metrics.measures import Measure, System
from ragtui.core.metrics.significance import Comparison, compare_systems
from ragtui.core.report_model import Report
from ragtui.tui.screens.report import ReportScreen, message_report


class CompareScreen(ReportScreen):
    """Two retrievers compared in a worker; ``a`` and ``b`` cycle through the retrievers.

    The systems (each retriever's rankings and grades) are captured on the UI thread, so the
    worker never reads the workspace the app changes meanwhile: ``a`` and ``b`` when the screen is
    made, another one (through ``capture``) when a key cycles to it. The screen shows
    ``comparing B against A…`` at once and starts the worker after that first frame; every key
    keeps working while it computes, and a result for a pair no longer asked for is dropped.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "a", "cycle('a')", "Change A", tooltip="Compare another retriever as A.", id="compare.a"
        ),
        Binding(
            "b", "cycle('b')", "Change B", tooltip="Compare another retriever as B.", id="compare.b"
        ),
    ]

    @dataclass
    class Ready(Message):
        """A comparison is computed (``report`` set), or failed (``error`` set)."""

        generation: int
        comparison: Comparison | None
        report: Report | None
        error: str = ""

    def __init__(
        self,
        systems: Mapping[str, System],
        a: str,
        b: str,
        measures: Sequence[Measure],
        *,
        names: Sequence[str] | None = None,
        capture: Callable[[str], System] | None = None,
    ) -> None:
        """Compare ``b`` against ``a`` on ``measures``; ``systems`` holds at least those two. The
        keys cycle through ``names`` (default: the systems given); ``capture(name)`` makes the
        system of a name not captured yet (called on the UI thread)."""
        super().__init__(message_report(self._title(a, b), self._comparing(a, b)), id="compare")
        self.systems = dict(systems)
        self.names = list(names) if names is not None else list(self.systems)
        self.capture = capture
        self.measures = list(measures)
        self.a = a
        self.b = b
        self.generation = 0
        #: Whether a worker is computing (its result is dropped if the pair changed meanwhile).
        self._computing = False
        #: The last comparison shown (None while computing or after a failure).
        self.comparison: Comparison | None = None

    @staticmethod
    def _title(a: str, b: str) -> str:
        """The frame title of a pair."""
        return f"compare {b} against {a}"

    @staticmethod
    def _comparing(a: str, b: str) -> str:
        """What the screen says while a pair is computed."""
        return f"comparing {b} against {a}…"

    def on_mount(self) -> None:
        """Start computing once ``comparing…`` is on screen (the worker never delays that frame)."""
        self.call_after_refresh(self._first_compute)

    def _first_compute(self) -> None:
        """The first pair's worker (unless a key already asked for another pair)."""
        if self.generation == 0:
            self.generation = 1
            self._compute_current()

    def _start(self) -> None:
        """Show ``comparing…`` for the current pair, then compute it."""
        self.generation += 1
        self.comparison = None
        self.show_report(
            message_report(self._title(self.a, self.b), self._comparing(self.a, self.b))
        )
        self._compute_current()

    def _system(self, name: str) -> System:
        """The captured system of ``name`` (captured now when it was not yet)."""
        system = self.systems.get(name)
        if system is None:
            if self.capture is None:
                raise KeyError(name)
            system = self.systems[name] = self.capture(name)
        return system

    def _compute_current(self) -> None:
        """Compute the current pair in a worker (10,000 permutations per measure); one worker at
        a time: keys pressed meanwhile only change the pair, computed when the running one ends."""
        if self._computing:
            return
        try:
            a, b = self._system(self.a), self._system(self.b)
        except Exception as exc:  # a retriever that cannot be read: said, not raised
            self.show_message(f"comparison failed: {type(exc).__name__}: {exc}", "bad")
            return
        self._computing = True
        self._compute(a, b, tuple(self.measures), self.generation)

    @work(thread=True, exclusive=True, exit_on_error=False, group="compare")
    def _compute(self, a: System, b: System, measures: Sequence[Measure], generation: int) -> None:
        """compare_systems off the UI thread; post the result or the error."""
        try:
            comparison = compare_systems(a, b, measures)
            report = comparison_report(comparison)
        except Exception as exc:  # shown on the screen instead of "comparing…" forever
            self.post_message(self.Ready(generation, None, None, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.Ready(generation, comparison, report))

    def on_compare_screen_ready(self, message: Ready) -> None:
        """Show the comparison (or why it failed), or compute the pair asked for meanwhile."""
        self._computing = False
        if message.generation != self.generation:
            self._compute_current()
            return
        self.comparison = message.comparison
        if message.report is None:
            self.show_message(f"comparison failed: {message.error}", "bad")
        else:
            self.show_report(message.report)

    def action_cycle(self, side: str) -> None:
        """Pick the next retriever for side A or B (never the same as the other side)."""
        names = self.names
        if len(names) < 2:
            return
        current, other = (self.a, self.b) if side == "a" else (self.b, self.a)
        index = names.index(current) if current in names else -1
        for step in range(1, len(names) + 1):
            candidate = names[(index + step) % len(names)]
            if candidate != other:
                break
        if side == "a":
            self.a = candidate
        else:
            self.b = candidate
        self._start()
