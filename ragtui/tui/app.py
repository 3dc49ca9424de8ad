"""The ragtui app: the one owner of every change, and the screens.

Threading model (as harlequin's): loading and embedding run in thread workers
(``ragtui.tui.loading``, ``ragtui.tui.tasks``) that read inputs captured on the UI thread and only
post messages; the handlers here, on the UI thread, hand the results to the ``Controller``, which
changes the workspace. Every change ends in ``changed.publish(...)``, so each screen redraws what
it touched. Results carry a generation number, so a late result of an older load is dropped.
Screens ask for changes with request messages (``GradeRequested`` and the like) that carry their
whole target; they never change the workspace themselves. Requests form one ordered stream with the
keys: each is applied right after the key that made it, before the next key is read (``request``).
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NoReturn

from textual import events, on
from textual.actions import ActionParseResult
from textual.app import App
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.message import Message
from textual.screen import Screen
from textual.signal import Signal
from textual.worker import get_current_worker

from ragtui.core.errors import InputError
from ragtui.core.retrieval.embeddings import TextEncoder
from ragtui.core.settings import Settings
from ragtui.core.text import visible_line
from ragtui.core.workspace import Workspace
from ragtui.core.workspace.first_load import FirstLoad
from ragtui.tui import loading, tasks
from ragtui.tui.app_commands import STATUS_LOG_SIZE, AppCommands
from ragtui.tui.commands import RagtuiCommands
from ragtui.tui.controller import Controller, Refused
from ragtui.tui.exit_signals import ExitWatchdog, end_process, on_exit_signals
from ragtui.tui.heap import Heap
from ragtui.tui.messages import (
    AddQuestionRequested,
    Changed,
    EmbeddingProgress,
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
    SampleRequested,
    UndoRequested,
    VectorsFailed,
    VectorsReady,
    WorkFailed,
    WorkspaceLoaded,
)
from ragtui.tui.rankers import Rankers
from ragtui.tui.screens.main import MainScreen
from ragtui.tui.theme import ANSI_THEME, theme_for
from ragtui.tui.typing_keys import typed_into
from ragtui.tui.widgets.formatting import format_seconds
from ragtui.tui.widgets.status_line import Status
from ragtui.tui.widgets.text_box import TextBox

#: Seconds between two looks at the label journal for another session's labels (two ``stat`` calls).
LABEL_POLL_INTERVAL = 1.0


def _cancelled() -> Callable[[], bool]:
    """Called in a worker's thread: whether that worker was cancelled (a newer one replaced it),
    for any thread to ask (a live retriever's own threads ask too)."""
    worker = get_current_worker()
    return lambda: worker.is_cancelled


class RagtuiApp(AppCommands, App[int]):
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
        embedder: TextEncoder | None = None,
        workspace: Workspace | None = None,
        first_load: FirstLoad | None = None,
    ) -> None:
        """The app for ``settings``; tests may inject an embedder (``encode``) or a loaded workspace."""
        super().__init__()
        self._disable_notifications = True  # no toast rack: see ``AppCommands.notify``
        self.register_theme(ANSI_THEME)
        #: The state and the rules for changing it.
        self.controller = Controller(settings)
        #: The embedder tests inject (used for every model), else None: the settings'
        #: sentence-transformers model, loaded on first need.
        self.embedder = embedder
        #: Loaded models by name, so that a reload does not load one again (a variant may name another).
        self.models: dict[str, TextEncoder] = {}
        self._given_workspace = workspace
        self._first_load = first_load  # ``ragtui``'s load of ``settings``, for the first load
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
        self._exit_watchdog = ExitWatchdog()
        #: Set once the first full screen is painted (a worker with more to do waits for it).
        self._first_paint = threading.Event()
        #: Keeps the garbage collector off the loaded workspace (frozen once the screen is drawn).
        self._heap = Heap()
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
        #: The loaded chunks' texts indexed for the add-question worker (a new one per load).

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

    def say(self, text: str, error: bool = False, about_shown: bool = False) -> None:
        """Show a message in the status line (an error stays until the next key; ``about_shown``:
        it describes the questions shown, and goes when the list changes)."""
        self.status = Status(visible_line(text), error, time.strftime("%H:%M:%S"), about_shown)
        if text:
            self.status_log.append(self.status)
        self.status_changed.publish(self.status)

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
            elif isinstance(message, SampleRequested):
                self.sample_requested(message)

    # ---- start and stop -----------------------------------------------------------------------------

    def on_mount(self) -> None:
        """Start loading at once; the screen shows loading notes meanwhile."""
        theme = None if self.is_headless else theme_for(self.console.color_system)
        if theme is not None:
            self.theme = theme
        if not self.is_headless:  # tests: the test runner owns the process's signals
            on_exit_signals(self._exit_on_signal)
        self.start_load(self.controller.settings, self._given_workspace)
        self.set_interval(LABEL_POLL_INTERVAL, self.poll_labels, name="label-poll")
        refreeze = self._heap.refreeze  # a screen's parts, once it is drawn (the judging view's)
        self.screen_change_signal.subscribe(self, lambda _: self.call_after_refresh(refreeze))

    def _exit_on_signal(self, signum: int) -> None:
        """Quit cleanly (SIGHUP, SIGTERM), with the shell's exit code for that signal (128 + its
        number); every label is already fsynced, so nothing is pending."""
        self.exit(return_code=128 + signum)

    def exit(self, result: int | None = None, return_code: int = 0, message: Any = None) -> None:
        """Quit (ctrl+q, a signal); the process ends whatever its workers are doing: every label
        is already fsynced, so a watchdog ends it if it still runs a moment later (also when the
        terminal is gone and Textual's shutdown blocks on writing to it)."""
        super().exit(result, return_code, message)
        if not self.is_headless:  # tests: the test runner owns the process
            self._exit_watchdog.start(return_code)

    def in_thread(self, group: str, work: Callable[[], None], exclusive: bool = True) -> None:
        """Run ``work`` in a thread worker of ``group`` (exclusive: it cancels the group's others)."""
        self.run_worker(work, thread=True, exclusive=exclusive, exit_on_error=False, group=group)

    # ---- loading ------------------------------------------------------------------------------------

    def start_load(self, settings: Settings, workspace: Workspace | None = None) -> None:
        """Load (or reload) in a worker; a newer load replaces an older one."""
        self.generation += 1
        first, self._first_load = self._first_load, None
        job = loading.LoadJob(
            settings,
            self.generation,
            workspace,
            self.embedder,
            dict(self.models),
            self._first_paint.wait,
            first=first,
        )
        post = self.post_message
        self.in_thread("load", lambda: loading.load(job, post, _cancelled()))

    def on_workspace_loaded(self, message: WorkspaceLoaded) -> None:
        """Show the workspace: BM25 works now; vector and hybrid follow."""
        if message.generation != self.generation:
            return
        ws = message.workspace
        reload = self.workspace is not None
        self.publish(self.controller.loaded(ws, message.vectors))
        # Drawn: the workspace is long-lived (and collection, off while the app started, resumes).
        self.call_after_refresh(self._heap.settle, reload)
        warning = loading.load_warning(ws, message.vectors)
        if warning:
            self.say(warning, error=True)
        if ws.live.retrievers:
            self._ask_live(ws, refresh=ws.settings.refresh)
        if message.vectors is not None or not ws.vectors_needed:
            self._start_rerank(ws)
        self._check_ready()

    def _start_rerank(self, ws: Workspace) -> None:
        """Run the reranking stage in a worker, once its first stage is ranked (once per load)."""
        if (
            ws.ranked.reranker is not None
            and ws.ranked.reranker.over in ws.ranked.rankings
            and self._rerank_generation != self.generation
        ):
            self._rerank_generation = self.generation
            job, post = loading.RerankJob.capture(ws, self.generation), self.post_message
            self.in_thread("rerank", lambda: loading.rerank(job, post))

    def on_rerank_ready(self, message: RerankReady) -> None:
        """Show the reranked list."""
        if message.generation != self.generation or self.workspace is None:
            return
        self.publish(self.controller.rerank_ready(message.result))
        self.say(f"{message.result.name} is ready: {message.result.latency.describe()}")
        self._check_ready()

    def _ask_live(self, ws: Workspace, refresh: bool) -> None:
        """Ask every live retriever the golden questions in a worker (cache first unless ``refresh``)."""
        job, post = loading.LiveJob.capture(ws, self.generation, refresh), self.post_message
        self.in_thread("live", lambda: loading.ask_live(job, post, _cancelled()))

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
            for name, status in self.workspace.live.status.items()
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
        if ws is None or not ws.live.retrievers:
            self.say("No live retriever is shown (--retriever NAME=SPEC, --milvus).")
            return
        self.publish(self.controller.live_pending())
        self._ask_live(ws, refresh=True)

    def on_embedding_progress(self, message: EmbeddingProgress) -> None:
        """Move the progress bar."""
        if message.generation != self.generation:
            return
        self.progress_rate = self._rate(message.done, message.total)
        self.publish(self.controller.embedding(message.done, message.total))

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
            self.call_after_refresh(self._heap.settle)
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
        self._heap.settle()
        if self.workspace is None:  # (the dialogs are imported when one is shown)
            from ragtui.tui.screens.dialogs import LoadErrorScreen

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
        self._heap.settle()

    # ---- labels ---------------------------------------------------------------------------------------

    def _grade_requested(self, message: GradeRequested) -> None:
        """Save a grade for exactly the pair the request names."""
        try:
            change = self.controller.grade(
                message.question,
                message.chunk,
                message.grade,
                message.adjudicate,
                message.independent,
            )
        except Refused as exc:
            self.say(exc.message, error=True)
            return
        self.publish(change)
        if message.then and not change.warnings:
            self.say(f"{change.said} · {message.then}", about_shown=True)
        elif not change.warnings:
            self._say_change(change)
        self._say_notices()

    def _say_change(self, change: Changed) -> None:
        """What a grade change or its undo saved (the controller's words), or what an undone
        retirement left."""
        ws = self.workspace
        if ws is not None and change.kind == "retired" and change.questions:
            qid = next(iter(change.questions))
            state = "retired" if ws.questions.by_id[qid].retired else "back in the metrics"
            self.say(f"undone: {visible_line(qid)} is {state}.")
        elif change.said:
            self.say(change.said)

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
        lines_before = len(ws.grades.labels.history)
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
        count = max(len(ws.grades.labels.history) - lines_before, len(change.questions or ()))
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
        self.say(message.text, error=message.error, about_shown=message.about_shown)

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
        # Live retrievers that answered the golden set are asked too (a failed one is not).
        live = [name for name in ws.live.retrievers if name in ws.ranked.rankings]
        new = tasks.NewQuestion(
            golden,
            self.generation,
            message.text,
            message.evidence,
            message.slices,
            ws.data.chunks,
            ws.data.corpus.documents,
            Rankers.capture(ws, live),
        )
        post = self.post_message
        self.in_thread("add-question", lambda: tasks.add_question(new, post), exclusive=False)

    def on_question_appended(self, message: QuestionAppended) -> None:
        """Evaluate the appended question and show it (a reload meanwhile reads it from the file)."""
        if message.generation != self.generation:
            return
        question = message.question
        for name, hits in message.passages.items():
            kept = self.controller.keep_foreign(hits, name)
            if kept is not None:
                self.publish(kept)
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


def run_app(settings: Settings, mouse: bool = True, first: FirstLoad | None = None) -> NoReturn:
    """Run the app until the user quits, then end the process with its exit code (2 when the data
    could not be loaded).

    Quitting never waits for a worker: ``asyncio.run`` would wait for every worker thread (a model
    still loading, a live retriever's request) and Python's exit would join them again, then tear
    down torch (a second or more). The app runs on a loop of its own instead, and once the terminal
    is restored (every label was fsynced when it was made) the process ends at once.
    """
    app = RagtuiApp(settings, first_load=first)
    app.run(mouse=mouse, loop=asyncio.new_event_loop())
    code = app.return_code or 0
    if app.load_error:
        print(f"ragtui: error: {app.load_error}", file=sys.stderr)
        code = 2
    end_process(code)
