"""The ragtui app: the one owner of every change, the loading workers, and the screens.

Threading model (as harlequin's): loading and embedding run in thread workers that only post
messages; the handlers here, on the UI thread, hand the results to the ``Controller``, which
changes the workspace. Every change ends in ``changed.publish(...)``, so each screen redraws what
it touched. Results carry a generation number, so a late result of an older load is dropped.
Screens ask for changes with request messages (``GradeRequested`` and the like) that carry their
whole target; they never change the workspace themselves. Requests form one ordered stream with the
keys: each is applied right after the key that made it, before the next key is read (``request``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, NoReturn

import numpy as np
from textual import events, on, work
from textual.actions import ActionParseResult
from textual.app import App
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.message import Message
from textual.screen import Screen
from textual.signal import Signal
from textual.theme import BUILTIN_THEMES
from textual.worker import get_current_worker

from ragtui.core.analysis.runs import load_baseline, runs_folder
from ragtui.core.data.golden import Question
from ragtui.core.errors import InputError
from ragtui.core.labelling.authoring import append_question
from ragtui.core.retrieval.base import Ranking
from ragtui.core.retrieval.embeddings import Embedder, Progress
from ragtui.core.settings import Settings
from ragtui.core.text import visible_line
from ragtui.core.workspace import VectorResult, Workspace
from ragtui.tui.commands import RagtuiCommands
from ragtui.tui.controller import Controller, Refused
from ragtui.tui.messages import (
    AddQuestionRequested,
    BaselineLoaded,
    Changed,
    EmbeddingProgress,
    ExperimentDone,
    ForeignChunks,
    GradeRequested,
    LiveProgress,
    LiveReady,
    LoadFailed,
    Notice,
    QuestionAppended,
    Request,
    RerankReady,
    RetireRequested,
    UndoRequested,
    VectorsFailed,
    VectorsReady,
    WorkFailed,
    WorkspaceLoaded,
)
from ragtui.tui.screens.dialogs import LoadErrorScreen, PromptScreen
from ragtui.tui.screens.help import HelpScreen
from ragtui.tui.screens.main import MainScreen, format_seconds, ndcg_moves
from ragtui.tui.typing_keys import typed_into
from ragtui.tui.widgets.status_line import Status
from ragtui.tui.widgets.text_box import TextBox

#: Seconds between two progress messages (a newer one replaces a queued one anyway).
PROGRESS_INTERVAL = 0.25
#: The longest a loading worker waits for the first screen before building the vector retriever.
FIRST_PAINT_WAIT_S = 5.0
#: Seconds between two looks at the label journal for another session's labels (two ``stat`` calls).
LABEL_POLL_INTERVAL = 1.0
#: Signals that end the app cleanly: SIGHUP (the terminal or SSH link went away) and SIGTERM.
EXIT_SIGNALS = (signal.SIGHUP, signal.SIGTERM)
#: Seconds a signalled app may take to exit cleanly before the watchdog ends the process.
EXIT_GRACE_S = 2.0
#: Status messages kept for "messages: recent".
STATUS_LOG_SIZE = 50

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
    def cache_name(self) -> str:
        """The wrapped model's cache: wrapping changes no vector."""
        return str(self.inner.cache_name)

    @property
    def max_seq_length(self) -> int:
        """The wrapped model's longest input."""
        return int(self.inner.max_seq_length)

    def encode(self, texts: Any, progress: Progress | None = None) -> np.ndarray:
        """Report the start, then encode with the wrapped embedder."""
        self.on_start(len(texts))
        rows: np.ndarray = self.inner.encode(texts, progress)
        return rows


def _end_process(code: int) -> NoReturn:
    """End the process now (the exit watchdog): flush what can be flushed, then ``os._exit``."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


class RagtuiApp(App[int]):
    """See, for each golden question, what every retriever found, and grade it."""

    CSS_PATH = "app.tcss"
    TITLE = "ragtui"
    COMMANDS: ClassVar = App.COMMANDS | {RagtuiCommands}

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
        #: The state and the rules for changing it.
        self.controller = Controller(settings)
        #: Used to embed (None: the settings' sentence-transformers model, loaded on first need).
        #: The embedder tests inject (used for every model), else None.
        self.embedder = embedder
        #: Loaded models by name, so that a reload does not load one again (a variant may name another).
        self.models: dict[str, Any] = {}
        self._given_workspace = workspace
        #: Every change the app made; screens subscribe and redraw what it touched.
        self.changed: Signal[Changed] = Signal(self, "changed")
        #: The status line's message; screens with a status line subscribe.
        self.status = Status()
        self.status_changed: Signal[Status] = Signal(self, "status-changed")
        #: The latest status messages, oldest first (the palette's "messages: recent" shows them).
        self.status_log: deque[Status] = deque(maxlen=STATUS_LOG_SIZE)
        #: The current load; messages of older loads are dropped.
        self.generation = 0
        #: Ends the process if a quit does not finish in time (see ``exit``).
        self._exit_watchdog: threading.Timer | None = None
        #: Set once the first full screen is painted (a worker with more to do waits for it).
        self._first_paint = threading.Event()
        #: Whether ``settle_heap`` froze the heap (a later load unfreezes it first).
        self._heap_frozen = False
        #: The load whose reranking stage has started (vector and hybrid rankings read from the
        #: results cache start it before the retrievers are built: it is not started twice).
        self._rerank_generation = -1
        #: The load error shown on the error screen (run_app prints it on exit too).
        self.load_error: str | None = None
        #: The last error reading another session's labels (said once until it changes).
        self._label_poll_error = ""
        #: `` · 41 texts/s · 12 s left`` while embedding, measured from the first batch.
        self.progress_rate = ""
        self._progress_start: tuple[float, int] | None = None
        #: When the app started (for the first-full-screen timing).
        self.started = time.monotonic()
        #: Seconds from start to every chosen retriever ready (or failed), None until then.
        self.ready_after: float | None = None
        #: Seconds from start to the first full screen painted (every list and the metrics drawn
        #: after ``ready_after``): the start-up benchmark and tests wait on it.
        self.full_screen_after: float | None = None
        #: The key whose bindings are being tried (see ``run_action``), else None.
        self._key_in_flight: events.Key | None = None
        #: Requests not applied yet, oldest first (see ``request``).
        self._requests: deque[Request] = deque()

    # ---- state, for reading ---------------------------------------------------------------------

    @property
    def workspace(self) -> Workspace | None:
        """The loaded workspace (None while loading)."""
        return self.controller.workspace

    @property
    def settings(self) -> Settings:
        """What is loaded."""
        return self.controller.settings

    @property
    def retrievers(self) -> list[str]:
        """The retrievers shown, in order."""
        return self.controller.retrievers

    def get_default_screen(self) -> Screen[None]:
        """The main screen is the first screen."""
        return MainScreen(self.controller)

    @property
    def main_screen(self) -> MainScreen:
        """The main screen, wherever the screen stack is."""
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    @property
    def is_ready(self) -> bool:
        """True when the workspace is shown and every chosen retriever is ready or failed."""
        return self.controller.is_ready

    # ---- telling ------------------------------------------------------------------------------------

    def say(self, text: str, error: bool = False) -> None:
        """Show a message in the status line (an error stays until the next key)."""
        self.status = Status(visible_line(text), error, time.strftime("%H:%M:%S"))
        if text:
            self.status_log.append(self.status)
        self.status_changed.publish(self.status)

    def show_messages(self) -> None:
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

    def publish(self, change: Changed) -> None:
        """Tell every screen what changed (a warning the change met goes to the status line)."""
        self.changed.publish(change)
        for warning in change.warnings:
            self.say(f"warning: {warning}", error=True)

    def _say_notices(self) -> None:
        """What the workspace noticed while changing (the bundled golden set copied), said last."""
        for notice in self.controller.take_notices():
            self.say(notice)

    async def on_event(self, event: events.Event) -> None:
        """A key clears an error from the status line (it has been seen); every request made
        before it is applied first."""
        if isinstance(event, events.InputEvent):
            self._apply_requests()
        if isinstance(event, events.Key) and self.status.error:
            self.say("")
        if isinstance(event, events.Key) and not event.is_forwarded:
            # The key's bindings run inside this call (priority ones): ``run_action`` reads it.
            self._key_in_flight = event
            try:
                if not await self._type_into_text_box(event):
                    await super().on_event(event)
            finally:
                self._key_in_flight = None
            return
        await super().on_event(event)

    async def _type_into_text_box(self, event: events.Key) -> bool:
        """While a text box has the focus, apply a key to it now rather than through its queue:
        the screen's and the app's priority bindings first (escape, tab, enter in the filter,
        ctrl+q), then the box types the character or runs its own binding (backspace, ctrl+u...).
        Keys in one burst then act in the order typed, as when typed slowly. False: not handled."""
        box = self.screen.focused
        if not isinstance(box, TextBox):
            return False
        self.app_focus = True  # as Textual does for a key
        return await self._check_bindings(event.key, priority=True) or await box.take_key(event)

    async def run_action(
        self,
        action: str | ActionParseResult,
        default_namespace: DOMNode | None = None,
        namespaces: Mapping[str, DOMNode] | None = None,
    ) -> bool:
        """Run an action, unless a key's binding asks while a text box has the focus and the key
        types a character there: typing in a text box types, whatever the screen or the app binds
        to that key (``-`` and ``+`` change k elsewhere; Textual's own check misses them)."""
        key = self._key_in_flight
        if key is not None and typed_into(self.screen.focused, key.key, key.character):
            return False
        return await super().run_action(action, default_namespace, namespaces)

    # ---- requests: one ordered stream ------------------------------------------------------------

    def post_message(self, message: Message) -> bool:
        """Queue a message; a request (``GradeRequested``, ``UndoRequested``, ``RetireRequested``)
        joins the ordered stream of ``request`` instead of the message queue."""
        if isinstance(message, Request):
            return self.request(message)
        return super().post_message(message)

    def request(self, message: Request) -> bool:
        """Apply a change a screen asks for, in the order asked, before the next key is read.

        Keys reach the app in its message queue, and every key that changes something is a
        priority binding the app runs itself. A request posted to the message queue would wait
        behind the keys already there: in a burst (a paste, tmux, SSH coalescing keys) ``1 u 2``
        would save 1, save 2, then undo the 2. Here a request is queued apart and applied as soon
        as the message that made it (the key) is handled, so every key sees the state the keys
        before it left, as when typed slowly. From another thread it is handed to the UI thread.
        """
        if threading.get_ident() != self._thread_id:
            loop = self._loop
            if loop is None or loop.is_closed():
                return False
            loop.call_soon_threadsafe(self.request, message)
            return True
        self._requests.append(message)
        if len(self._requests) == 1:
            self.call_next(self._apply_requests)
        return True

    def _apply_requests(self) -> None:
        """Apply the queued requests, oldest first."""
        while self._requests:
            message = self._requests.popleft()
            if isinstance(message, GradeRequested):
                self._grade_requested(message)
            elif isinstance(message, UndoRequested):
                self._undo(message.target)
            elif isinstance(message, RetireRequested):
                self._retire_requested(message)

    # ---- start and stop -----------------------------------------------------------------------------

    def on_mount(self) -> None:
        """Start loading at once; the screen shows loading notes meanwhile."""
        if not self.is_headless and self.console.color_system in ("standard", "windows"):
            # 16 colours (TERM=screen, many SSH sessions): the terminal's own palette stays legible.
            self.theme = ANSI_THEME.name
        self._install_signal_handlers()
        self.start_load(self.controller.settings, self._given_workspace)
        self.set_interval(LABEL_POLL_INTERVAL, self.poll_labels, name="label-poll")

    def _install_signal_handlers(self) -> None:
        """SIGHUP and SIGTERM end the app through ``exit``, so the terminal is restored; every label
        is already fsynced, so nothing is pending."""
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

    def exit(self, result: int | None = None, return_code: int = 0, message: Any = None) -> None:
        """Quit (ctrl+q, a signal); the process ends whatever its workers are doing.

        A worker may be inside a call nothing can interrupt (a plugin's search, a request that has
        not reached its deadline); Python would wait for it after the terminal is restored. Every
        label is already fsynced, so a watchdog ends the process if it still runs ``EXIT_GRACE_S``
        later (also when the terminal is gone and Textual's shutdown blocks on writing to it).
        """
        super().exit(result, return_code, message)
        if self.is_headless or self._exit_watchdog is not None:
            return  # tests: the test runner owns the process
        self._exit_watchdog = threading.Timer(EXIT_GRACE_S, _end_process, args=(return_code,))
        self._exit_watchdog.daemon = True
        self._exit_watchdog.start()

    # ---- loading ------------------------------------------------------------------------------------

    def start_load(self, settings: Settings, workspace: Workspace | None = None) -> None:
        """Load (or reload) in a worker; a newer load replaces an older one."""
        self.generation += 1
        self._load(settings, self.generation, workspace)

    @work(thread=True, exclusive=True, exit_on_error=False, group="load")
    def _load(self, settings: Settings, generation: int, workspace: Workspace | None) -> None:
        """Read and chunk the data and build BM25, report it, then embed for vector and hybrid.

        The workspace is this worker's own until it is posted; after that only its rankings are
        computed here (``compute_vectors`` reads chunks and questions, never labels)."""
        worker = get_current_worker()
        try:
            ws = workspace if workspace is not None else Workspace.load(settings)
        except InputError as exc:
            self.post_message(LoadFailed(exc.message, generation))
            return
        except Exception as exc:
            self.post_message(
                LoadFailed(
                    visible_line(f"cannot load the data: {type(exc).__name__}: {exc}"), generation
                )
            )
            return
        if worker.is_cancelled:
            return
        if not ws.vectors_needed or ws.vector is not None:
            self.post_message(WorkspaceLoaded(ws, generation))
            return
        announced = [False]

        def announce(vectors: VectorResult | None = None) -> None:
            """Show BM25 now (and vector and hybrid, read from the results cache): embedding has to
            encode texts (slow) or read the embedding cache, or it failed."""
            if not announced[0]:
                announced[0] = True
                self.post_message(WorkspaceLoaded(ws, generation, vectors))

        name = ws.settings.model or ""
        try:
            model = self.embedder or self.models.get(name) or Embedder(ws.settings.model)
        except Exception as exc:  # a model that cannot be found: BM25 keeps working
            announce()
            message = exc.message if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
            self.post_message(VectorsFailed(generation, visible_line(message)))
            return
        try:
            # Every ranking in the results cache: the first screen needs no embedding at all; the
            # retrievers (for new questions and ad-hoc queries) are built after it is shown.
            early = ws.cached_vectors(model)
        except Exception:  # a cache that cannot be read is computed below
            early = None
        if early is not None:
            # Still this worker's workspace: evaluate the lists here, not on the UI thread.
            ws.apply_vectors(early)
            announce(early)
            # The retrievers (for new questions and ad-hoc queries) are built once the first
            # screen is painted: reading the embedding cache meanwhile would slow the paint down.
            waited = 0.0
            while not self._first_paint.wait(0.05) and waited < FIRST_PAINT_WAIT_S:
                if worker.is_cancelled:
                    return
                waited += 0.05
        result, embedder = self._compute_vectors(ws, generation, announce, model, early)
        if result is None:
            return
        if not announced[0]:
            # Warm cache: one message, so the lists fill once with every retriever.
            self.post_message(WorkspaceLoaded(ws, generation, result))
        else:
            self.post_message(VectorsReady(generation, result, embedder))

    def _compute_vectors(
        self,
        ws: Workspace,
        generation: int,
        announce: Any,
        model: Any,
        early: VectorResult | None,
    ) -> tuple[VectorResult | None, object | None]:
        """Embed (cache first) and rank; posts why it failed (None) or returns the result."""
        worker = get_current_worker()
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
                return  # a later query embeds through the same wrapper
            announce()
            self.post_message(EmbeddingProgress(generation, 0, count))

        try:
            result = ws.compute_vectors(progress, _ReportingEmbedder(model, on_start), early)  # type: ignore[arg-type]
            loading[0] = False
        except _Cancelled:
            return None, None
        except InputError as exc:
            announce()
            self.post_message(VectorsFailed(generation, exc.message))
            return None, None
        except Exception as exc:
            announce()
            self.post_message(
                VectorsFailed(generation, visible_line(f"{type(exc).__name__}: {exc}"))
            )
            return None, None
        return result, model

    def on_workspace_loaded(self, message: WorkspaceLoaded) -> None:
        """Show the workspace: BM25 works now; vector and hybrid follow."""
        if message.generation != self.generation:
            return
        ws = message.workspace
        reload = self.workspace is not None
        self.publish(self.controller.loaded(ws, message.vectors))
        if reload:
            self.call_after_refresh(self.settle_heap, True)
        self._say_load_warnings(ws, message.vectors)
        if ws.live:
            self._ask_live(ws, self.generation, ws.settings.refresh)
        if message.vectors is not None or not ws.vectors_needed:
            self._start_rerank(ws)
        self._check_ready()

    def _start_rerank(self, ws: Workspace) -> None:
        """Run the reranking stage in a worker, once its first stage is ranked (once per load)."""
        if (
            ws.reranker is not None
            and ws.reranker.over in ws.rankings
            and self._rerank_generation != self.generation
        ):
            self._rerank_generation = self.generation
            self._rerank(ws, self.generation)

    @work(thread=True, exclusive=True, exit_on_error=False, group="rerank")
    def _rerank(self, ws: Workspace, generation: int) -> None:
        """Re-score every question's first-stage list with the cross-encoder (cached scores are
        read): ``compute_rerank`` reads the rankings, which do not change once applied."""
        name = ws.settings.rerank_name or "rerank"
        last = [0.0]

        def progress(done: int, total: int) -> None:
            now = time.monotonic()
            if now - last[0] >= PROGRESS_INTERVAL or done >= total:
                last[0] = now
                self.post_message(Notice(f"reranking with {name}: {done}/{total} questions"))

        try:
            result = ws.compute_rerank(progress)
        except InputError as exc:
            self.post_message(WorkFailed(name, exc.message))
            return
        except Exception as exc:  # a model that cannot run must be a message, never a traceback
            self.post_message(WorkFailed(name, visible_line(f"{type(exc).__name__}: {exc}")))
            return
        if result is not None:
            self.post_message(RerankReady(generation, result))

    def on_rerank_ready(self, message: RerankReady) -> None:
        """Show the reranked list."""
        if message.generation != self.generation or self.workspace is None:
            return
        self.publish(self.controller.rerank_ready(message.result))
        self.say(f"{message.result.name} is ready: {message.result.latency.describe()}")
        self._check_ready()

    @work(thread=True, exclusive=True, exit_on_error=False, group="live")
    def _ask_live(self, ws: Workspace, generation: int, refresh: bool) -> None:
        """Every golden question's answer from each live retriever (cache first), off the UI thread:
        ``compute_live`` only reads the workspace."""
        worker = get_current_worker()
        last = [0.0]

        def progress(name: str, done: int, total: int) -> None:
            now = time.monotonic()
            if now - last[0] >= PROGRESS_INTERVAL or done >= total:
                last[0] = now
                self.post_message(LiveProgress(generation, name, done, total))

        try:
            result = ws.compute_live(
                refresh=refresh, progress=progress, cancelled=lambda: worker.is_cancelled
            )
        except Exception as exc:  # a broken plugin must be a message, never a traceback
            self.post_message(
                WorkFailed("Live retrievers", visible_line(f"{type(exc).__name__}: {exc}"))
            )
            return
        if not worker.is_cancelled:
            self.post_message(LiveReady(generation, result))

    def on_live_progress(self, message: LiveProgress) -> None:
        """Say how far a live retriever has come."""
        if message.generation == self.generation:
            self.say(f"asking {message.name}: {message.done}/{message.total} questions")

    def on_live_ready(self, message: LiveReady) -> None:
        """Show the live retrievers' lists (a failed one says why in its own list)."""
        if message.generation != self.generation or self.workspace is None:
            return
        self.publish(self.controller.live_ready(message.result))
        failed = [
            f"{name}: {status.message}"
            for name, status in self.workspace.live_status.items()
            if status.state in ("failed", "partial") and status.message
        ]
        if failed:
            self.say("; ".join(failed), error=True)
        else:
            self.say(f"{', '.join(message.result.runs)} answered.")
        self._check_ready()

    def refresh_live(self) -> None:
        """Ask the live retrievers again, ignoring their cached answers (the palette's refresh)."""
        ws = self.workspace
        if ws is None or not ws.live:
            self.say("No live retriever is shown (--retriever NAME=SPEC, --milvus).")
            return
        for name in ws.live:
            self.controller.retriever_status[name] = "pending"
        self.publish(Changed("retrievers"))
        self._ask_live(ws, self.generation, True)

    def _say_load_warnings(self, ws: Workspace, vectors: VectorResult | None) -> None:
        """The one most important thing the load found, in the status line."""
        warnings = list(ws.warnings) + (list(vectors.warnings) if vectors is not None else [])
        stale = ws.stale_labels()
        if ws.labels.read_only:
            reason = ws.labels.read_only_reason or f"{ws.labels.path} is read-only"
            self.say(f"{reason}: you can look, but grades cannot be saved.", error=True)
        elif stale:
            self.say(
                f"{len(stale)} hand label(s) no longer match the chunked corpus and are not applied;"
                " ctrl+p, check lists them.",
                error=True,
            )
        elif warnings:
            more = f" (+{len(warnings) - 1} more: ctrl+p, check)" if len(warnings) > 1 else ""
            self.say(f"warning: {warnings[0]}{more}", error=True)

    def on_embedding_progress(self, message: EmbeddingProgress) -> None:
        """Move the progress bar."""
        if message.generation != self.generation:
            return
        self.controller.embedding_progress = (message.done, message.total)
        self.progress_rate = self._rate(message.done, message.total)
        self.publish(Changed("progress"))

    def _rate(self, done: int, total: int) -> str:
        """`` · 41 texts/s · 12 s left``, measured from the first batch done (so the model load does
        not count); empty until two reports exist."""
        now = time.monotonic()
        if self._progress_start is None or done < self._progress_start[1] or done <= 0:
            self._progress_start = (now, done) if done > 0 else None
            return ""
        started, done_then = self._progress_start
        if now - started <= 0 or done == done_then:
            return ""
        rate = (done - done_then) / (now - started)
        return f" · {rate:.0f} texts/s · {format_seconds((total - done) / rate)} left"

    def on_vectors_ready(self, message: VectorsReady) -> None:
        """Add the vector and hybrid rankings and refresh every view."""
        if message.generation != self.generation or self.workspace is None:
            return
        if message.embedder is not None:
            self.models[self.workspace.settings.model or ""] = message.embedder
        change = self.controller.vectors_ready(message.result)
        if change is not None:
            self.publish(change)
        self.publish(Changed("progress"))
        self._start_rerank(self.workspace)
        if self._first_paint.is_set():
            # The retrievers and the embedding cache arrived after the first screen: long-lived too.
            self.call_after_refresh(self.settle_heap)
        if message.result.warnings:
            self.say(f"warning: {message.result.warnings[0]}", error=True)
        self._check_ready()

    def on_vectors_failed(self, message: VectorsFailed) -> None:
        """Vector and hybrid are unavailable: say so; BM25 keeps working."""
        if message.generation != self.generation:
            return
        self.publish(self.controller.vectors_failed(message.message))
        self.publish(Changed("progress"))
        self.say(f"Vector search is unavailable: {message.message}. BM25 still works.", error=True)
        self._check_ready()

    def on_load_failed(self, message: LoadFailed) -> None:
        """The first load failed: an error screen; a reload failed: the old data stays."""
        if message.generation != self.generation:
            return
        if self.workspace is None:
            self.load_error = message.message
            self.push_screen(LoadErrorScreen(message.message))
        else:
            self.say(f"Reload failed: {message.message}", error=True)

    def _check_ready(self) -> None:
        """Record when the first full screen (every retriever ready or failed) was reached."""
        if self.ready_after is None and self.is_ready:
            self.ready_after = time.monotonic() - self.started
            self.call_after_refresh(self._full_screen_painted)

    def _full_screen_painted(self) -> None:
        """The screen with every list and the metrics filled has been painted."""
        if self.full_screen_after is None:
            self.full_screen_after = time.monotonic() - self.started
        self._first_paint.set()
        self.settle_heap()

    def settle_heap(self, collect: bool = False) -> None:
        """Move every object alive now (the workspace, its questions, rankings and pools) out of
        the garbage collector's reach (``gc.freeze``).

        A full collection walks every tracked object: with 100,000 questions that took 90-130 ms
        once every eight keys or so, the whole tail of the key-to-screen times (bench.app traces
        each collection). The workspace lives until the next load, so nothing is lost by not
        walking it. ``collect`` (after a reload, whose old workspace is frozen) unfreezes the heap
        and collects it once, a single pause after the new screen is drawn, before freezing it."""
        if collect and self._heap_frozen:
            gc.unfreeze()
            gc.collect()
        gc.freeze()
        self._heap_frozen = True

    # ---- labels ---------------------------------------------------------------------------------------

    def _grade_requested(self, message: GradeRequested) -> None:
        """Save a grade for exactly the pair the request names."""
        try:
            change = self.controller.grade(
                message.question, message.chunk, message.grade, message.adjudicate
            )
        except Refused as exc:
            self.say(exc.message, error=True)
            return
        self.publish(change)
        if not change.warnings:
            self._say_change(change)
        self._say_notices()

    def _say_change(self, change: Changed) -> None:
        """``saved: q01 ferry.md#1 → grade 2 (hand) · nDCG@3 bm25 0.500→1.000``."""
        ws = self.workspace
        if ws is not None and change.kind == "retired" and change.questions:
            qid = next(iter(change.questions))
            state = "retired" if ws.question_by_id[qid].retired else "back in the metrics"
            self.say(f"undone: {qid} is {state}.")
            return
        if ws is None or change.chunk is None or not change.questions:
            return
        qid = next(iter(change.questions))
        grade, source = ws.grade_source(qid, change.chunk)
        now = f"grade {grade} ({source})" if grade is not None else "not graded"
        verb = "undone:" if change.undo else "saved:"
        self.say(f"{verb} {qid} {change.chunk} → {now} · {ndcg_moves(change.moves, ws.settings.k)}")

    def _retire_requested(self, message: RetireRequested) -> None:
        """Retire a question (or bring it back), as the request names."""
        try:
            change = self.controller.retire(message.question, message.retired)
        except Refused as exc:
            self.say(exc.message, error=True)
            return
        self.publish(change)
        self.say(
            f"Retired {message.question}: left out of every mean (u undoes, x brings it back)."
            if message.retired
            else f"{message.question} is back in the metrics."
        )
        self._say_notices()

    def action_undo(self) -> None:
        """Undo the latest change (the command palette's undo): a request like ``u``'s."""
        self.post_message(UndoRequested(self.controller.latest_change))

    def _undo(self, target: int | None) -> None:
        """Undo the change ``target`` names when it is still the latest (a label change is undone
        with a new journal line)."""
        try:
            change = self.controller.undo(target)
        except Refused as exc:
            self.say(exc.message, error=exc.message != "Nothing to undo.")
            return
        self.publish(change)
        self._say_change(change)

    def poll_labels(self) -> None:
        """Apply labels another session appended to the journal (cheap when nothing changed)."""
        ws = self.workspace
        if ws is None or ws.evaluation is None:
            return
        lines_before = len(ws.labels.history)
        try:
            change = self.controller.refresh_labels()
        except (InputError, OSError) as exc:
            message = exc.message if isinstance(exc, InputError) else str(exc)
            if message != self._label_poll_error:
                self._label_poll_error = message
                self.say(f"Cannot read labels from another session: {message}", error=True)
            return
        self._label_poll_error = ""
        if change is None:
            return
        count = max(len(ws.labels.history) - lines_before, len(change.questions or ()))
        # An error on screen (a grade that could not be saved) stays until the next key: what the
        # poll says goes to the recent messages only.
        held = self.status if self.status.error else None
        self.publish(change)
        self.say(
            f"{count} label(s) from another session: {len(change.questions or ())} question(s) changed."
        )
        if held is not None:
            self.status = held
            self.status_changed.publish(held)

    def action_reload_labels(self) -> None:
        """Apply labels another process appended to the journal."""
        self.poll_labels()

    @on(ForeignChunks)
    def _foreign_chunks(self, message: ForeignChunks) -> None:
        """Keep the chunks a live retriever brought, so the chunk view can show them."""
        message.stop()
        if self.workspace is None:
            return
        change = self.controller.keep_foreign(message.hits, message.origin)
        if change is not None:
            self.publish(change)

    @on(Notice)
    def _notice(self, message: Notice) -> None:
        """A screen or widget asks to tell the user something."""
        message.stop()
        self.say(message.text, error=message.error)

    # ---- questions ------------------------------------------------------------------------------------

    @on(AddQuestionRequested)
    def _add_question_requested(self, message: AddQuestionRequested) -> None:
        """Append and rank a new question in a worker (embedding the text may take a moment)."""
        message.stop()
        ws = self.workspace
        if ws is None:
            self.say("The data is still loading.", error=True)
            return
        if ws.settings.beir is not None or ws.settings.golden is None:
            self.say(
                "Questions can only be added to a --golden folder, not to a BEIR dataset.",
                error=True,
            )
            return
        try:
            golden = ws.writable_golden()  # the bundled set is copied to the user's folder first
        except (InputError, OSError) as exc:
            self.say(f"Not added: {exc}", error=True)
            return
        self.say(f"adding: {message.text}")
        self._say_notices()
        self._add_question(
            ws, golden, self.generation, message.text, message.evidence, message.slices
        )

    @work(thread=True, exit_on_error=False, group="add-question")
    def _add_question(
        self,
        ws: Workspace,
        golden: Path,
        generation: int,
        text: str,
        evidence: tuple[str, ...],
        slices: tuple[str, ...],
    ) -> None:
        """Validate and append the question (atomic, under the golden set's lock), then rank it.

        Reads only what does not change while the app runs: the chunks, the documents and the
        retrievers (their indexes and embeddings); the questions file is read under its lock.
        """
        try:
            question = append_question(
                golden,
                text,
                list(evidence),
                list(slices),
                chunks=ws.chunks,
                documents=ws.corpus.documents,
            )
            rankings: dict[str, Ranking] = ws.search_adhoc(question.text)
        except InputError as exc:
            self.post_message(WorkFailed("Not added", exc.message))
            return
        except Exception as exc:
            self.post_message(WorkFailed("Not added", f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(QuestionAppended(generation, question, rankings))

    def on_question_appended(self, message: QuestionAppended) -> None:
        """Evaluate the appended question and show it (a reload meanwhile reads it from the file)."""
        if message.generation != self.generation:
            return
        question: Question = message.question
        try:
            change = self.controller.question_added(question, message.rankings)
        except Refused as exc:
            self.say(exc.message, error=True)
            return
        self.publish(change)
        ws = self.workspace
        assert ws is not None and ws.evaluation is not None
        values = " · ".join(
            f"{n} nDCG {ws.evaluation.per_question[n][question.id].ndcg:.3f}" for n in ws.retrievers
        )
        self.say(f"Added {question.id}: {values}")

    def on_work_failed(self, message: WorkFailed) -> None:
        """A worker's change was refused: say why (a failed reranking stage marks its list)."""
        ws = self.workspace
        if ws is not None and message.what == ws.settings.rerank_name:
            self.publish(self.controller.rerank_failed(message.what, message.message))
            self._check_ready()
        self.say(f"{message.what}: {message.message}", error=True)

    # ---- experiments ------------------------------------------------------------------------------

    def run_experiment(self) -> None:
        """Evaluate every variant of the project file in a worker and show the table."""
        if not self.controller.settings.variants:
            self.say(
                "The project file declares no [variants.NAME]: nothing to compare.", error=True
            )
            return
        self.say(f"running {len(self.controller.settings.variants)} variants…")
        self._experiment(self.controller.settings)

    @work(thread=True, exclusive=True, exit_on_error=False, group="experiment")
    def _experiment(self, settings: Settings) -> None:
        """``ragtui experiment`` off the UI thread (it loads its own workspaces; saves no runs)."""
        from ragtui.core.analysis.experiment import run_experiment

        def status(line: str) -> None:
            self.post_message(Notice(f"experiment: {line}"))

        try:
            result = run_experiment(settings, save=False, status=status)
        except InputError as exc:
            self.post_message(WorkFailed("Experiment", exc.message))
            return
        except Exception as exc:  # a variant that cannot load must be a message
            self.post_message(
                WorkFailed("Experiment", visible_line(f"{type(exc).__name__}: {exc}"))
            )
            return
        self.post_message(ExperimentDone(result))

    def on_experiment_done(self, message: ExperimentDone) -> None:
        """Show the experiment table."""
        from ragtui.tui.screens.report import ReportScreen

        self.say(
            "experiment done; ctrl+p, experiment: show variant NAME switches the screen to one"
        )
        self.push_screen(ReportScreen(message.result.report(), id="experiment"))

    def show_variant(self, name: str) -> None:
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

    def action_help(self) -> None:
        """Show the help screen."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def set_k(self, k: int) -> None:
        """Change k and refresh every number."""
        try:
            self.publish(self.controller.set_k(k))
        except Refused as exc:
            self.say(exc.message, error=True)

    def action_change_k(self, step: int) -> None:
        """Raise or lower k by one."""
        ws = self.workspace
        if ws is not None:
            self.set_k(ws.settings.k + step)

    def set_depth(self, depth: int) -> None:
        """Re-run every search at another depth (a reload in the worker; the screen keeps working)."""
        ws = self.workspace
        if ws is None or depth == ws.settings.depth:
            return
        self.say(f"Re-running every search at depth {depth}…")
        self.start_load(replace(ws.settings, depth=depth))

    def set_chunking(self, chunk_size: int | None, overlap: int) -> None:
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

    def action_chunking_prompt(self) -> None:
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

        size = ws.settings.chunk_size
        current = f"{size} {ws.settings.overlap}" if size is not None else "whole"
        self.push_screen(
            PromptScreen("chunking: size and overlap in tokens (e.g. 256 32), or whole", current),
            apply,
        )

    # ---- baseline ---------------------------------------------------------------------------------

    def runs_folder(self) -> Path | None:
        """Where saved runs live (``<golden>/runs``), or None."""
        ws = self.workspace
        if ws is None:
            return None
        try:
            return runs_folder(ws)
        except InputError:
            return None

    def set_baseline(self, name: str, retriever: str | None = None) -> None:
        """Compare every question against saved run ``name`` (read in a worker)."""
        folder = self.runs_folder()
        ws = self.workspace
        if folder is None or ws is None:
            return
        self.say(f"reading saved run {name}…")
        self._load_baseline(folder, name, retriever, ws.settings.k)

    @work(thread=True, exit_on_error=False, group="baseline")
    def _load_baseline(self, folder: Path, name: str, retriever: str | None, k: int) -> None:
        """Read the saved run and compute its values off the UI thread."""
        try:
            baseline = load_baseline(folder, name, retriever, k)
        except InputError as exc:
            self.post_message(WorkFailed(f"Cannot use {name} as baseline", exc.message))
            return
        except (OSError, ValueError) as exc:
            self.post_message(WorkFailed(f"Cannot use {name} as baseline", str(exc)))
            return
        self.post_message(BaselineLoaded(baseline))

    def on_baseline_loaded(self, message: BaselineLoaded) -> None:
        """Show the Δ column against the baseline."""
        baseline = message.baseline
        try:
            self.publish(self.controller.set_baseline(baseline))
        except Refused as exc:
            self.say(exc.message, error=True)
            return
        self.say(f"Baseline: {baseline.name} ({baseline.retriever}); Δ = nDCG@k now minus then.")

    def clear_baseline(self) -> None:
        """Remove the Δ column."""
        self.publish(self.controller.set_baseline(None))
        self.say("Baseline cleared.")

    # ---- export and check ---------------------------------------------------------------------------

    def action_export(self) -> None:
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

        default = str(Path.cwd() / "ragtui-trec")
        self.push_screen(PromptScreen("export: folder for the TREC files", default), write)

    def action_check(self) -> None:
        """Validate the golden set against the chunked corpus and list the problems."""
        ws = self.workspace
        if ws is None:
            return
        from ragtui.tui.screens.reports import check_screen

        self.push_screen(check_screen(ws))


def run_app(settings: Settings, mouse: bool = True) -> NoReturn:
    """Run the app until the user quits, then end the process with its exit code (2 when the data
    could not be loaded).

    Quitting never waits for a worker: ``asyncio.run`` would wait for every worker thread (a model
    still loading, a live retriever's request) and Python's exit would join them again, then tear
    down torch (a second or more). The app runs on a loop of its own instead, and once the terminal
    is restored (every label was fsynced when it was made) the process ends at once.
    """
    app = RagtuiApp(settings)
    app.run(mouse=mouse, loop=asyncio.new_event_loop())
    code = app.return_code or 0
    if app.load_error:
        print(f"ragtui: error: {app.load_error}", file=sys.stderr)
        code = 2
    _end_process(code)
