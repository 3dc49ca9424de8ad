"""The ragtui app: loads the workspace in a worker, owns every state change, and hosts the screens.

Threading model (as harlequin's): ``Workspace.load`` and embedding run in one thread worker that
only posts messages; the handlers here, on the UI thread, swap the results in. Results carry a
generation number, so a late result of an older load (before a depth change) is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.theme import BUILTIN_THEMES
from textual.worker import Worker, get_current_worker

from ragtui.core.errors import InputError
from ragtui.core.retrieval.base import RETRIEVER_NAMES
from ragtui.core.retrieval.embeddings import Embedder, Progress
from ragtui.core.settings import Settings
from ragtui.core.workspace import VectorResult, Workspace
from ragtui.tui.messages import (
    EmbeddingProgress,
    LoadFailed,
    VectorsFailed,
    VectorsReady,
    WorkspaceLoaded,
)
from ragtui.tui.palette import RagtuiCommands
from ragtui.tui.screens.dialogs import LoadErrorScreen, PromptScreen
from ragtui.tui.screens.help import HelpScreen
from ragtui.tui.screens.main import MainScreen
from ragtui.tui.workflows import WorkflowCommands, WorkflowMixin

#: Seconds between two progress messages (a newer one replaces a queued one anyway).
PROGRESS_INTERVAL = 0.25
#: The retrievers that need embeddings.
VECTOR_RETRIEVERS = ("vector", "hybrid")
#: Seconds between two looks at the label journal for another session's labels (two ``stat`` calls).
LABEL_POLL_INTERVAL = 1.0
#: Signals that end the app cleanly: SIGHUP (the terminal or SSH link went away) and SIGTERM.
EXIT_SIGNALS = (signal.SIGHUP, signal.SIGTERM)

#: Seconds a signalled app may take to exit cleanly before the watchdog ends the process.
EXIT_GRACE_S = 2.0


#: The theme for 16-colour terminals: Textual's ANSI theme with borders that show on a black background.
ANSI_THEME = replace(
    BUILTIN_THEMES["ansi-dark"],
    name="ragtui-ansi",
    accent="ansi_magenta",
    variables={
        **BUILTIN_THEMES["ansi-dark"].variables,
        "border": "ansi_bright_blue",
        "border-blurred": "ansi_bright_black",
        "block-cursor-blurred-foreground": "ansi_default",
        "block-cursor-blurred-background": "ansi_bright_black",
        "footer-key-foreground": "ansi_bright_yellow",
    },
)


class _Cancelled(Exception):
    """Raised inside the embedding callback when the worker was cancelled (a newer load started)."""


class _ReportingEmbedder:
    """Wraps an embedder to say when encoding starts (the slow path: model load, then batches)."""

    def __init__(self, inner: Any, on_start: Any) -> None:
        """Wrap ``inner``; ``on_start(count)`` is called before texts are encoded."""
        self.inner = inner
        self.on_start = on_start

    @property
    def max_seq_length(self) -> int:
        """The wrapped model's longest input."""
        return int(self.inner.max_seq_length)

    def encode(self, texts: Any, progress: Progress | None = None) -> np.ndarray:
        """Report the start, then encode with the wrapped embedder."""
        self.on_start(len(texts))
        rows: np.ndarray = self.inner.encode(texts, progress)
        return rows


class RagtuiApp(WorkflowMixin, App[int]):
    """See, for each golden question, what bm25, vector and hybrid retrieval found, and grade it."""

    CSS_PATH = "app.tcss"
    TITLE = "ragtui"
    COMMANDS = App.COMMANDS | {RagtuiCommands, WorkflowCommands}

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+q",
            "quit",
            "Quit",
            tooltip="Quit ragtui (labels are already saved).",
            priority=True,
            id="app.quit",
        ),
        Binding(
            "question_mark",
            "help",
            "Help",
            tooltip="Every key and what each metric means.",
            id="app.help",
        ),
    ]

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Any | None = None,
        workspace: Workspace | None = None,
    ) -> None:
        """The app for ``settings``; tests may inject an embedder (``encode``) or a loaded workspace."""
        super().__init__()
        self.register_theme(ANSI_THEME)
        #: What to load.
        self.settings = settings
        #: Used to embed (None: the settings' sentence-transformers model, loaded on first need).
        self.embedder = embedder
        #: The loaded workspace, None until the load worker reports.
        self.workspace: Workspace | None = None
        self._given_workspace = workspace
        #: The current load; messages of older loads are dropped.
        self.generation = 0
        #: Readiness of each chosen retriever: ready, pending or failed.
        self.retriever_status: dict[str, str] = {}
        #: The last embedding progress (done, total) while embedding runs, else None.
        self.embedding_progress: tuple[int, int] | None = None
        #: Why vector and hybrid are unavailable, when they are.
        self.vector_error = ""
        #: The load error shown on the error screen (run_app prints it on exit too).
        self.load_error: str | None = None
        #: The last error reading another session's labels (notified once until it changes).
        self._label_poll_error = ""
        #: When the app started (for the first-full-screen timing).
        self.started = time.monotonic()
        #: Seconds from start to every chosen retriever ready (or failed), None until then.
        self.ready_after: float | None = None
        #: Seconds from start to the first full screen painted (every list and the metrics drawn
        #: after ``ready_after``): the start-up benchmark and tests wait on it. None until then.
        self.full_screen_after: float | None = None

    @property
    def retrievers(self) -> list[str]:
        """The chosen retrievers, in the standard order, then the external runs (``--run NAME=path``)."""
        builtin = [n for n in RETRIEVER_NAMES if n in self.settings.retrievers]
        return builtin + [n for n, _ in self.settings.runs if n not in builtin]

    def get_default_screen(self) -> Screen[None]:
        """The main screen is the first screen."""
        return MainScreen(self.retrievers)

    @property
    def main_screen(self) -> MainScreen:
        """The main screen, wherever the screen stack is."""
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    @property
    def is_ready(self) -> bool:
        """True when the workspace is shown and every chosen retriever is ready or failed."""
        return self.workspace is not None and all(
            s != "pending" for s in self.retriever_status.values()
        )

    def on_mount(self) -> None:
        """Start loading at once; the screen shows loading notes meanwhile."""
        if not self.is_headless and self.console.color_system in ("standard", "windows"):
            # 16 colours (TERM=screen, many SSH sessions): the terminal's own palette stays legible.
            self.theme = ANSI_THEME.name
        self._install_signal_handlers()
        self.start_load(self.settings, self._given_workspace)
        self.set_interval(LABEL_POLL_INTERVAL, self.poll_labels, name="label-poll")

    def _install_signal_handlers(self) -> None:
        """SIGHUP and SIGTERM end the app through ``exit``, so the terminal is restored; every label
        is already fsynced by ``set_grade``, so nothing is pending."""
        if self.is_headless:
            return  # tests: the test runner owns the process's signals
        loop = asyncio.get_running_loop()
        for signum in EXIT_SIGNALS:
            # Not the main thread, or Windows: no signal handlers.
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, self._exit_on_signal, signum)

    def _exit_on_signal(self, signum: int) -> None:
        """Quit cleanly, with the shell's exit code for that signal (128 + its number).

        When the terminal is gone (SIGHUP from a dropped SSH link or a closed pane), Textual's
        shutdown can block for ever on output that can no longer be written (its writer thread's
        queue fills). Every label is already fsynced, so a watchdog ends the process if the clean
        exit has not happened within ``EXIT_GRACE_S``.
        """
        self.exit(return_code=128 + signum)
        watchdog = threading.Timer(EXIT_GRACE_S, os._exit, args=(128 + signum,))
        watchdog.daemon = True
        watchdog.start()

    def poll_labels(self) -> None:
        """Apply labels another session appended to the journal (cheap when nothing changed)."""
        ws = self.workspace
        if ws is None or ws.evaluation is None or not self.main_screen.composed:
            return
        lines_before = len(ws.labels.history)
        try:
            changed = ws.refresh_labels()
        except (InputError, OSError) as exc:
            message = exc.message if isinstance(exc, InputError) else str(exc)
            if message != self._label_poll_error:
                self._label_poll_error = message
                self.notify(
                    f"Cannot read labels from another session: {message}",
                    severity="error",
                    timeout=8,
                    markup=False,
                )
            return
        self._label_poll_error = ""
        if not changed:
            return
        count = max(len(ws.labels.history) - lines_before, len(changed))
        self.main_screen.labels_changed(changed)
        self.notify(
            f"{count} label(s) from another session: {len(changed)} question(s) changed.",
            timeout=5,
            markup=False,
        )

    # ---- loading ------------------------------------------------------------------------------

    def start_load(self, settings: Settings, workspace: Workspace | None = None) -> None:
        """Load (or reload) in a worker; a newer load replaces an older one."""
        self.generation += 1
        self._load(settings, self.generation, workspace)

    @work(thread=True, exclusive=True, exit_on_error=False, group="load")
    def _load(self, settings: Settings, generation: int, workspace: Workspace | None) -> None:
        """Read and chunk the data and build BM25, report it, then prepare vector and hybrid."""
        worker = get_current_worker()
        try:
            ws = workspace if workspace is not None else Workspace.load(settings)
        except InputError as exc:
            self.post_message(LoadFailed(exc.message, generation))
            return
        except Exception as exc:
            self.post_message(
                LoadFailed(f"cannot load the data: {type(exc).__name__}: {exc}", generation)
            )
            return
        if worker.is_cancelled:
            return
        if not ws.vectors_needed or ws.vector is not None:
            self.post_message(WorkspaceLoaded(ws, generation))
            return
        announced = [False]

        def announce() -> None:
            """Show BM25 now: embedding has to encode texts (slow), or it failed."""
            if not announced[0]:
                announced[0] = True
                self.post_message(WorkspaceLoaded(ws, generation))

        vectors = self._prepare_vectors(ws, generation, worker, announce)
        if vectors is not None and not announced[0]:
            # Warm cache: one message, so the lists fill once with all three retrievers.
            self.post_message(WorkspaceLoaded(ws, generation, vectors))
        elif vectors is not None:
            self.post_message(vectors)

    def _prepare_vectors(
        self, ws: Workspace, generation: int, worker: Worker[None], announce: Callable[[], None]
    ) -> VectorsReady | None:
        """Embed (cache first) and rank on a shallow copy, so the UI's workspace is never touched here;
        returns the result, or None after posting why it failed (or when cancelled)."""
        last_report = [0.0]

        def progress(done: int, total: int) -> None:
            """Report progress about every quarter second; stop when a newer load took over."""
            if worker.is_cancelled:
                raise _Cancelled
            now = time.monotonic()
            if now - last_report[0] >= PROGRESS_INTERVAL or done >= total:
                last_report[0] = now
                self.post_message(EmbeddingProgress(generation, done, total))

        loading = [True]

        def on_start(count: int) -> None:
            """Encoding starts (slow): show BM25 now and the progress row."""
            if not loading[0]:
                return  # a later query (ad-hoc search, a new question) embeds through the same wrapper
            announce()
            self.post_message(EmbeddingProgress(generation, 0, count))

        try:
            embedder = self.embedder if self.embedder is not None else Embedder(ws.settings.model)
            result = ws.compute_vectors(progress, _ReportingEmbedder(embedder, on_start))  # type: ignore[arg-type]
            loading[0] = False
        except _Cancelled:
            return None
        except InputError as exc:
            announce()
            self.post_message(VectorsFailed(generation, exc.message))
            return None
        except Exception as exc:
            announce()
            self.post_message(VectorsFailed(generation, f"{type(exc).__name__}: {exc}"))
            return None
        if result is None:
            return None
        return VectorsReady(
            generation,
            result.rankings,
            result.vector,
            result.hybrid,
            result.question_vectors,
            embedder,
            list(result.warnings),
        )

    def on_workspace_loaded(self, message: WorkspaceLoaded) -> None:
        """Show the workspace: BM25 works now; vector and hybrid follow."""
        if message.generation != self.generation:
            return
        ws = message.workspace
        reloaded = self.workspace is not None
        self.workspace = ws
        if reloaded:
            ws.refresh_labels()  # labels saved while the reload ran
        if message.vectors is not None:
            self._apply_vectors(ws, message.vectors)
        self.retriever_status = {
            n: ("pending" if n in VECTOR_RETRIEVERS and ws.vector is None else "ready")
            for n in self.retrievers
        }
        if self.main_screen.composed:
            self.main_screen.show_workspace(ws)
        if message.vectors is not None:
            self._vector_warnings(message.vectors)
        for warning in ws.warnings:
            self.notify(warning, severity="warning", timeout=8, markup=False)
        stale = ws.stale_labels()
        if stale:
            self.notify(
                f"{len(stale)} hand label(s) no longer match the chunked corpus and are not applied; "
                "ctrl+p, check: validate the golden set lists them.",
                severity="warning",
                timeout=8,
                markup=False,
            )
        if ws.labels.read_only:
            self.notify(
                f"{ws.labels.read_only_reason or f'{ws.labels.path} is read-only'}: you can look, but grades cannot be saved.",
                title="read-only",
                severity="warning",
                timeout=8,
                markup=False,
            )
        self._check_ready()

    def on_embedding_progress(self, message: EmbeddingProgress) -> None:
        """Move the progress bar."""
        if message.generation != self.generation:
            return
        self.embedding_progress = (message.done, message.total)
        if self.main_screen.composed:
            self.main_screen.show_progress(message.done, message.total)

    def on_vectors_ready(self, message: VectorsReady) -> None:
        """Add the vector and hybrid rankings to the workspace and refresh every view."""
        ws = self.workspace
        if message.generation != self.generation or ws is None or ws.evaluation is None:
            return
        self._apply_vectors(ws, message)
        self.embedding_progress = None
        for name in VECTOR_RETRIEVERS:
            if name in self.retriever_status:
                self.retriever_status[name] = "ready"
        if self.main_screen.composed:
            self.main_screen.vectors_changed()
        self._vector_warnings(message)
        self._check_ready()

    def _apply_vectors(self, ws: Workspace, vectors: VectorsReady) -> None:
        """Put the vector and hybrid rankings into the workspace and its evaluation (UI thread)."""
        assert vectors.vector is not None
        ws.apply_vectors(
            VectorResult(
                vectors.vector,
                vectors.hybrid,
                vectors.question_vectors,
                vectors.rankings,
                vectors.warnings,
            )
        )
        if vectors.embedder is not None:
            self.embedder = vectors.embedder

    def _vector_warnings(self, vectors: VectorsReady) -> None:
        """Say what went wrong without stopping embedding (a rebuilt cache)."""
        for warning in vectors.warnings:
            self.notify(warning, severity="warning", timeout=8, markup=False)

    def on_vectors_failed(self, message: VectorsFailed) -> None:
        """Vector and hybrid are unavailable: say so; BM25 keeps working."""
        if message.generation != self.generation:
            return
        self.vector_error = message.message
        self.embedding_progress = None
        for name in VECTOR_RETRIEVERS:
            if name in self.retriever_status:
                self.retriever_status[name] = "failed"
        if self.main_screen.composed:
            self.main_screen.vectors_changed()
        self.notify(
            f"Vector search is unavailable: {message.message}. BM25 still works.",
            title="embedding model",
            severity="error",
            timeout=12,
            markup=False,
        )
        self._check_ready()

    def on_load_failed(self, message: LoadFailed) -> None:
        """The first load failed: an error screen; a reload failed: a notification, the old data stays."""
        if message.generation != self.generation:
            return
        if self.workspace is None:
            self.load_error = message.message
            self.push_screen(LoadErrorScreen(message.message))
        else:
            self.notify(
                f"Reload failed: {message.message}", severity="error", timeout=10, markup=False
            )

    def _check_ready(self) -> None:
        """Record when the first full screen (every retriever ready or failed) was reached."""
        if self.ready_after is None and self.is_ready:
            self.ready_after = time.monotonic() - self.started
            self.call_after_refresh(self._full_screen_painted)

    def _full_screen_painted(self) -> None:
        """The screen with every list and the metrics filled has been painted."""
        if self.full_screen_after is None:
            self.full_screen_after = time.monotonic() - self.started

    # ---- actions (keys and the command palette) ------------------------------------------------

    def action_help(self) -> None:
        """Show the help screen."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def set_k(self, k: int) -> None:
        """Change k and refresh every number."""
        ws = self.workspace
        if ws is None:
            return
        if k < 1:
            self.notify("k is at least 1.", timeout=3)
            return
        ws.set_k(k)
        self.main_screen.refresh_all()

    def set_depth(self, depth: int) -> None:
        """Re-run every search at another depth (a reload in the worker; the screen keeps working)."""
        ws = self.workspace
        if ws is None or depth == ws.settings.depth:
            return
        self.settings = replace(ws.settings, depth=depth)
        self.notify(f"Re-running every search at depth {depth}…", timeout=4)
        self.start_load(self.settings)

    def set_sort(self, worst_first: bool) -> None:
        """Sort the question list worst-first, or back to golden-set order."""
        self.main_screen.set_sort(worst_first)

    def action_filter(self) -> None:
        """Open the question filter."""
        self.main_screen.action_filter()

    def action_clear_filter(self) -> None:
        """Show every question."""
        self.main_screen.action_clear_filter()

    def action_undo(self) -> None:
        """Undo the last label change."""
        self.main_screen.action_undo()

    def action_reload_labels(self) -> None:
        """Apply labels another process appended to the journal."""
        ws = self.workspace
        if ws is None:
            return
        changed = ws.refresh_labels()
        self.main_screen.refresh_all()
        self.notify(f"Labels reloaded: {len(changed)} question(s) changed.", timeout=4)

    def action_export(self) -> None:
        """Ask for a folder, then write TREC qrels and runs there."""
        if self.workspace is None:
            return

        def write(folder: str | None) -> None:
            """Export to the folder the user accepted (None: cancelled)."""
            ws = self.workspace
            if folder is None or ws is None:
                return
            from ragtui.core.analysis.export import export_trec

            try:
                written = export_trec(ws, Path(folder).expanduser())
            except OSError as exc:
                self.notify(f"Export failed: {exc}", severity="error", timeout=8, markup=False)
                return
            names = ", ".join(p.name for p in written)
            self.notify(
                f"Wrote {names} to {Path(folder).expanduser().resolve()}", timeout=8, markup=False
            )

        default = str(Path.cwd() / "ragtui-trec")
        self.push_screen(PromptScreen("export: folder for the TREC files", default), write)

    def action_check(self) -> None:
        """Validate the golden set against the chunked corpus and list the problems."""
        ws = self.workspace
        if ws is None:
            return
        from ragtui.tui.screens.reports import check_screen

        self.push_screen(check_screen(ws))


def run_app(settings: Settings, mouse: bool = True) -> int:
    """Run the app until the user quits; returns the exit code (2 when the data could not be loaded)."""
    app = RagtuiApp(settings)
    app.run(mouse=mouse)
    if app.load_error:
        print(f"ragtui: error: {app.load_error}", file=sys.stderr)
        return 2
    return app.return_code or 0
