"""The app's commands: what the command palette and the app's own keys ask for besides grading —
k, depth and chunking, a baseline, the project's experiment and its variants, export, check, help
and the recent messages.

``AppCommands`` is a part of ``RagtuiApp`` (a mixin): each command either asks the ``Controller``
for a change and publishes it, starts a reload, or starts a worker (``ragtui.tui.tasks``) whose
result comes back as a message handled here. ``Owner`` names what the commands use of the app.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from rich.errors import MarkupError
from rich.text import Text
from textual.message import Message
from textual.screen import Screen

from ragtui.core.errors import InputError
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from ragtui.tui import tasks
from ragtui.tui.controller import Controller, Refused
from ragtui.tui.messages import BaselineLoaded, Changed, ExperimentDone, SampleRequested
from ragtui.tui.widgets.status_line import Status

#: Status messages kept for "messages: recent".
STATUS_LOG_SIZE = 50


class Owner(Protocol):
    """What the commands use of the app (``RagtuiApp``)."""

    @property
    def controller(self) -> Controller:
        """The state and the rules for changing it."""
        ...

    @property
    def workspace(self) -> Workspace | None:
        """The loaded workspace (None while loading)."""
        ...

    @property
    def screen(self) -> Screen[object]:
        """The screen on top."""
        ...

    @property
    def status_log(self) -> Sequence[Status]:
        """The latest status messages, oldest first."""
        ...

    def say(self, text: str, error: bool = False) -> None:
        """Show a message in the status line."""
        ...

    def publish(self, change: Changed) -> None:
        """Tell every screen what changed."""
        ...

    def start_load(self, settings: Settings, workspace: Workspace | None = None) -> None:
        """Load (or reload) in a worker."""
        ...

    def in_thread(self, group: str, work: Callable[[], None], exclusive: bool = True) -> None:
        """Run ``work`` in a thread worker of ``group``."""
        ...

    def post_message(self, message: Message) -> bool:
        """Post a message to the app (from any thread)."""
        ...

    def push_screen(
        self, screen: Screen[Any], callback: Callable[[Any], None] | None = None
    ) -> object:
        """Show a screen on top; ``callback`` hears what it is dismissed with."""
        ...

    # The commands themselves, called from one another.
    def runs_folder(self) -> Path | None: ...
    def set_k(self, k: int) -> None: ...
    def set_chunking(self, chunk_size: int | None, overlap: int) -> None: ...


class AppCommands:
    """The app's commands (see the module's note)."""

    def notify(
        self: Owner,
        message: str,
        *,
        title: str = "",
        severity: str = "information",
        markup: bool = True,
        **_: object,
    ) -> None:
        """Textual's own notices (ctrl+c: "press ctrl+q to quit") go to the status line, as all of
        ragtui's do: the app composes no toast rack (hidden, its first hiding laid the first screen
        out once more: 12-18 ms)."""
        joint = " " if title.endswith(("?", "!", ".", ":")) else ": "
        text = f"{title}{joint}{message}" if title else message
        if markup:
            with contextlib.suppress(MarkupError):  # else shown as written
                text = Text.from_markup(text).plain
        self.say(text, error=severity == "error")

    def show_messages(self: Owner) -> None:
        """The recent status messages, newest first (the palette's "messages: recent")."""
        from ragtui.core.report_model import Column, Report, Row, Section
        from ragtui.tui.screens.report import ReportScreen

        rows = tuple(
            Row((s.when, "error" if s.error else "", s.text), "bad" if s.error else "")
            for s in reversed(self.status_log)
        )
        section = (
            Section("", (Column("time"), Column("kind"), Column("message")), rows)
            if rows
            else Section("no message yet")
        )
        title = f"recent messages ({len(rows)}, the last {STATUS_LOG_SIZE} are kept)"
        self.push_screen(ReportScreen(Report(title, (section,)), id="messages"))

    def sample_requested(self: Owner, message: SampleRequested) -> None:
        """The judging view's sample order asks for the random sample for the estimate: read the
        recorded one, or draw and record it (the bundled set is copied to the user's folder first)."""
        try:
            change = self.controller.draw_sample(message.size, message.seed)
        except Refused as exc:
            self.say(exc.message, error=True)
            return
        self.publish(change)
        recorded = self.controller.estimate_sample
        if recorded is not None:
            self.say(recorded.describe())
        for notice in self.controller.take_notices():
            self.say(notice)

    # ---- experiments ------------------------------------------------------------------------------

    def run_experiment(self: Owner) -> None:
        """Evaluate every variant of the project file in a worker and show the table."""
        settings = self.controller.settings
        if not settings.variants:
            self.say(
                "The project file declares no [variants.NAME]: nothing to compare.", error=True
            )
            return
        self.say(f"running {len(settings.variants)} variants…")
        post = self.post_message
        self.in_thread("experiment", lambda: tasks.experiment(settings, post))

    def on_experiment_done(self: Owner, message: ExperimentDone) -> None:
        """Show the experiment table."""
        from ragtui.tui.screens.report import ReportScreen

        self.say(
            "experiment done; ctrl+p, experiment: show variant NAME switches the screen to one"
        )
        self.push_screen(ReportScreen(message.result.report(), id="experiment"))

    def show_variant(self: Owner, name: str) -> None:
        """Switch the whole screen to a variant of the project file (a reload)."""
        from ragtui.core.variants import variant_settings

        try:
            settings = variant_settings(self.controller.settings, name)
        except (InputError, ValueError, KeyError) as exc:
            self.say(f"variant {name}: {exc}", error=True)
            return
        self.say(f"Loading variant {name}…")
        self.start_load(settings)

    # ---- settings (keys and the command palette) ------------------------------------------------------

    def action_help(self: Owner) -> None:
        """Show the help screen."""
        from ragtui.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def set_k(self: Owner, k: int) -> None:
        """Change k and refresh every number."""
        try:
            self.publish(self.controller.set_k(k))
        except Refused as exc:
            self.say(exc.message, error=True)

    def action_change_k(self: Owner, step: int) -> None:
        """Raise or lower k by one."""
        ws = self.workspace
        if ws is not None:
            self.set_k(ws.settings.k + step)

    def set_depth(self: Owner, depth: int) -> None:
        """Re-run every search at another depth (a reload in the worker; the screen keeps working)."""
        ws = self.workspace
        if ws is None or depth == ws.settings.depth:
            return
        self.say(f"Re-running every search at depth {depth}…")
        self.start_load(replace(ws.settings, depth=depth))

    def set_chunking(self: Owner, chunk_size: int | None, overlap: int) -> None:
        """Re-chunk with another size and overlap (a reload in the worker; hand labels of vanished
        chunks stay, stale)."""
        ws = self.workspace
        if ws is None:
            return
        if (
            (chunk_size is not None and chunk_size < 1)
            or overlap < 0
            or (chunk_size is not None and overlap >= chunk_size)
        ):
            self.say("Chunk size must be at least 1 and the overlap smaller than it.", error=True)
            return
        self.say(f"Re-chunking at size {chunk_size or 'whole documents'}, overlap {overlap}…")
        self.start_load(replace(ws.settings, chunk_size=chunk_size, overlap=overlap))

    def action_chunking_prompt(self: Owner) -> None:
        """Ask for ``SIZE OVERLAP`` (or ``whole``) and re-chunk."""
        ws = self.workspace
        if ws is None:
            return

        def apply(value: str | None) -> None:
            if value is None:
                return
            parts = value.replace(",", " ").split()
            if parts and parts[0].lower() in ("whole", "none", "0"):
                self.set_chunking(None, 0)
                return
            try:
                size = int(parts[0])
                overlap = int(parts[1]) if len(parts) > 1 else 0
            except (ValueError, IndexError):
                self.say("Give the chunk size and overlap as two numbers, e.g. 256 32.", error=True)
                return
            self.set_chunking(size, overlap)

        from ragtui.tui.screens.dialogs import PromptScreen

        size = ws.settings.chunk_size
        current = f"{size} {ws.settings.overlap}" if size is not None else "whole"
        self.push_screen(
            PromptScreen("chunking: size and overlap in tokens (e.g. 256 32), or whole", current),
            apply,
        )

    # ---- baseline ---------------------------------------------------------------------------------

    def runs_folder(self: Owner) -> Path | None:
        """Where saved runs live (``<golden>/runs``), or None."""
        from ragtui.core.analysis.runs import runs_folder

        ws = self.workspace
        if ws is None:
            return None
        try:
            return runs_folder(ws)
        except InputError:
            return None

    def set_baseline(self: Owner, name: str, retriever: str | None = None) -> None:
        """Compare every question against saved run ``name`` (read in a worker)."""
        folder = self.runs_folder()
        ws = self.workspace
        if folder is None or ws is None:
            return
        self.say(f"reading saved run {name}…")
        k, post = ws.settings.k, self.post_message
        self.in_thread(
            "baseline",
            lambda: tasks.read_baseline(folder, name, retriever, k, post),
            exclusive=False,
        )

    def on_baseline_loaded(self: Owner, message: BaselineLoaded) -> None:
        """Show the Δ column against the baseline."""
        baseline = message.baseline
        try:
            self.publish(self.controller.set_baseline(baseline))
        except Refused as exc:
            self.say(exc.message, error=True)
            return
        self.say(f"Baseline: {baseline.name} ({baseline.retriever}); Δ = nDCG@k now minus then.")

    def clear_baseline(self: Owner) -> None:
        """Remove the Δ column."""
        self.publish(self.controller.set_baseline(None))
        self.say("Baseline cleared.")

    # ---- export and check ---------------------------------------------------------------------------

    def action_export(self: Owner) -> None:
        """Ask for a folder, then write TREC qrels and runs there."""
        if self.workspace is None:
            return

        def write(folder: str | None) -> None:
            ws = self.workspace
            if folder is None or ws is None:
                return
            from ragtui.core.analysis.export import export_trec

            try:
                written = export_trec(ws, Path(folder).expanduser())
            except OSError as exc:
                self.say(f"Export failed: {exc}", error=True)
                return
            names = ", ".join(p.name for p in written)
            self.say(f"Wrote {names} to {Path(folder).expanduser().resolve()}")

        from ragtui.tui.screens.dialogs import PromptScreen

        default = str(Path.cwd() / "ragtui-trec")
        self.push_screen(PromptScreen("export: folder for the TREC files", default), write)

    def action_check(self: Owner) -> None:
        """Validate the golden set against the chunked corpus and list the problems."""
        ws = self.workspace
        if ws is None:
            return
        from ragtui.tui.screens.reports import check_screen

        self.push_screen(check_screen(ws))
