"""The app's loading workers: read and chunk the data, embed, rerank, ask the live retrievers.

Each is a function that runs in a thread worker and only posts messages (``post``, the app's
``post_message``); ``cancelled`` says when a newer load took over. Its inputs are captured on the
UI thread (``LoadJob``), or are the workspace the worker built itself: until ``WorkspaceLoaded`` is
posted the workspace is the worker's own; after that only its rankings are computed here, which
read what does not change while the app runs (the chunks, the questions as loaded, the retrievers).
Reranking and the live retrievers read what the UI thread captured for them (``RerankJob``,
``LiveJob``). The app's handlers hand each result to the ``Controller`` on the UI thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from textual.message import Message

from ragtui.core.errors import InputError
from ragtui.core.retrieval.embeddings import Progress, TextEncoder
from ragtui.core.retrieval.encoder_process import BackgroundEmbedder, preload_at_start
from ragtui.core.settings import Settings
from ragtui.core.text import visible_line
from ragtui.core.workspace import VectorResult, Workspace
from ragtui.core.workspace.first_load import FirstLoad
from ragtui.core.workspace.live_answers import Live, compute_live
from ragtui.core.workspace.question_set import QuestionSet
from ragtui.core.workspace.vectors import Ranked, compute_rerank
from ragtui.tui.messages import (
    EmbeddingProgress,
    LiveProgress,
    LiveReady,
    LoadFailed,
    Notice,
    RerankReady,
    VectorsFailed,
    VectorsReady,
    WorkFailed,
    WorkspaceLoaded,
)

#: Posts a message to the app (its ``post_message``, safe from any thread).
Post = Callable[[Message], object]
#: True once a newer load (or the app's exit) cancelled the worker.
Cancelled = Callable[[], bool]

#: Seconds between two progress messages (a newer one replaces a queued one anyway).
PROGRESS_INTERVAL = 0.25
#: The longest a loading worker waits for the first screen before building the vector retriever.
FIRST_PAINT_WAIT_S = 5.0
#: How often a waiting worker looks whether it was cancelled, in seconds.
_POLL_S = 0.05


def _never(_timeout: float) -> bool:
    """A first paint that never comes (no app to paint it)."""
    return False


@dataclass(frozen=True)
class LoadJob:
    """What a load reads, captured on the UI thread when it starts."""

    settings: Settings
    generation: int
    """The load this is; its messages carry it, and the app drops those of older loads."""
    workspace: Workspace | None = None
    """A workspace loaded by the caller (tests), shown as it is."""
    embedder: TextEncoder | None = None
    """The embedder tests inject (used for every model), else None."""
    models: Mapping[str, TextEncoder] = field(default_factory=dict)
    """The models loaded by earlier loads, by name (a copy), so a reload does not load one again."""
    first_paint: Callable[[float], bool] = _never
    """Waits up to the seconds given for the first full screen; True once it is painted."""
    preload: bool = field(default_factory=preload_at_start)
    """Read the embedding model in a helper process once the first full screen is painted, when
    the model is not loaded by then and typed text could need it (``RAGTUI_PRELOAD_MODEL`` is 1:
    ``encoder_process.preload_at_start``)."""
    first: FirstLoad | None = None
    """The load the command line started before the app was imported: this load takes the
    workspace, the model and the cached rankings from it instead of computing them."""


class _Cancelled(Exception):
    """Raised inside the embedding callback when the worker was cancelled (a newer load started)."""


class ReportingEmbedder:
    """Wraps an embedder to say when encoding starts (the slow path: model load, then batches)."""

    def __init__(self, inner: TextEncoder, on_start: Callable[[int], None]) -> None:
        """Wrap ``inner``; ``on_start(count)`` is called before texts are encoded."""
        self.inner = inner
        self.on_start = on_start

    @property
    def cache_name(self) -> str:
        """The wrapped model's cache: wrapping changes no vector."""
        return self.inner.cache_name

    @property
    def backend(self) -> str | None:
        """The wrapped model's backend (torch or onnx), when it names one."""
        named = getattr(self.inner, "backend", None)
        return named if isinstance(named, str) else None

    def encode(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """Report the start, then encode with the wrapped embedder."""
        self.on_start(len(texts))
        return self.inner.encode(texts, progress)


def _failure(exc: Exception) -> str:
    """An exception as one line for the status line (an InputError says its own message)."""
    return visible_line(
        exc.message if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
    )


def load(job: LoadJob, post: Post, cancelled: Cancelled) -> None:
    """Read and chunk the data and build BM25, report it, then embed for vector and hybrid."""
    generation = job.generation
    first = job.first
    if first is not None and (first.settings is not job.settings or job.embedder is not None):
        first = None  # a load of other settings, or of another embedder's rankings
    try:
        if job.workspace is not None:
            ws = job.workspace
        else:
            ws = first.workspace() if first is not None else Workspace.load(job.settings)
    except InputError as exc:
        post(LoadFailed(exc.message, generation))
        return
    except Exception as exc:
        post(
            LoadFailed(
                visible_line(f"cannot load the data: {type(exc).__name__}: {exc}"), generation
            )
        )
        return
    if cancelled():
        return
    if not ws.vectors_needed or ws.ranked.vector is not None:
        post(WorkspaceLoaded(ws, generation))
        return
    announced = [False]

    def announce(vectors: VectorResult | None = None) -> None:
        """Show BM25 now (and vector and hybrid, read from the results cache): embedding has to
        encode texts (slow) or read the embedding cache, or it failed."""
        if not announced[0]:
            announced[0] = True
            post(WorkspaceLoaded(ws, generation, vectors))

    try:
        model = (
            job.embedder
            or job.models.get(ws.settings.model or "")
            or (first.model() if first is not None else None)
            or BackgroundEmbedder(
                ws.settings.model, ws.settings.embedding_backend, ws.settings.cache_dir
            )
        )
    except Exception as exc:  # a model that cannot be found: BM25 keeps working
        announce()
        post(VectorsFailed(generation, _failure(exc)))
        return
    try:
        # Every ranking in the results cache: the first screen needs no embedding at all; the
        # retrievers (for new questions and ad-hoc queries) are built after it is shown.
        early = first.cached() if first is not None else ws.cached_vectors(model)
    except Exception:  # a cache that cannot be read is computed below
        early = None
    if early is not None:
        # Still this worker's workspace: evaluate the lists here, not on the UI thread (the
        # first load has; applying the same rankings again changes nothing).
        ws.apply_vectors(early)
        announce(early)
        # The retrievers (for new questions and ad-hoc queries) are built once the first
        # screen is painted: reading the embedding cache meanwhile would slow the paint down.
        waited = 0.0
        while not job.first_paint(_POLL_S) and waited < FIRST_PAINT_WAIT_S:
            if cancelled():
                return
            waited += _POLL_S
    result = _compute_vectors(ws, generation, announce, model, early, post, cancelled)
    if result is None:
        return
    if not announced[0]:
        # Warm cache: one message, so the lists fill once with every retriever.
        post(WorkspaceLoaded(ws, generation, result))
    else:
        post(VectorsReady(generation, result, model))
    if job.preload and result.vector is not None and isinstance(model, BackgroundEmbedder):
        preload_after_paint(model, job.first_paint, cancelled)


def preload_after_paint(
    model: BackgroundEmbedder, first_paint: Callable[[float], bool], cancelled: Cancelled
) -> None:
    """Once the first full screen is painted, start reading the model in a helper process at
    low priority (unless it is loaded or this load was replaced): the first ad-hoc query then
    finds it ready, and no import ever holds the app's interpreter lock. The wait is a thread
    of its own, so the loading worker ends now."""

    def start_when_painted() -> None:
        while not first_paint(_POLL_S * 5):
            if cancelled():
                return
        if not cancelled():
            model.start()

    threading.Thread(target=start_when_painted, daemon=True, name="preload-model").start()


def _compute_vectors(
    ws: Workspace,
    generation: int,
    announce: Callable[[], None],
    model: TextEncoder,
    early: VectorResult | None,
    post: Post,
    cancelled: Cancelled,
) -> VectorResult | None:
    """Embed (cache first) and rank; posts why it failed (None) or returns the result."""
    last_report = [0.0]

    def progress(done: int, total: int) -> None:
        """Report progress about every quarter second; stop when a newer load took over."""
        if cancelled():
            raise _Cancelled
        now = time.monotonic()
        if now - last_report[0] >= PROGRESS_INTERVAL or done >= total:
            last_report[0] = now
            post(EmbeddingProgress(generation, done, total))

    loading = [True]

    def on_start(count: int) -> None:
        """Encoding starts (slow): show BM25 now and the progress row."""
        if not loading[0]:
            return  # a later query embeds through the same wrapper
        announce()
        post(EmbeddingProgress(generation, 0, count))

    try:
        result = ws.compute_vectors(progress, ReportingEmbedder(model, on_start), early)
        loading[0] = False
    except _Cancelled:
        return None
    except Exception as exc:
        announce()
        post(VectorsFailed(generation, _failure(exc)))
        return None
    return result


@dataclass(frozen=True)
class RerankJob:
    """What the reranking stage reads: the workspace's rankings and questions parts as they were
    captured on the UI thread (parts are replaced, never changed, so the worker reads them as is)."""

    name: str
    """The reranked list's name."""
    ranked: Ranked
    questions: QuestionSet
    generation: int

    @classmethod
    def capture(cls, ws: Workspace, generation: int) -> RerankJob:
        """What reranking ``ws`` reads, now."""
        return cls(ws.settings.rerank_name or "rerank", ws.ranked, ws.questions, generation)


@dataclass(frozen=True)
class LiveJob:
    """What asking the live retrievers reads: the settings and the live and questions parts as
    captured on the UI thread."""

    settings: Settings
    live: Live
    questions: QuestionSet
    generation: int
    refresh: bool
    """Ask again rather than read the cached answers."""

    @classmethod
    def capture(cls, ws: Workspace, generation: int, refresh: bool) -> LiveJob:
        """What asking ``ws``'s live retrievers reads, now."""
        return cls(ws.settings, ws.live, ws.questions, generation, refresh)


def rerank(job: RerankJob, post: Post) -> None:
    """Re-score every question's first-stage list with the cross-encoder (cached scores are read)."""
    name, generation = job.name, job.generation
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_INTERVAL or done >= total:
            last[0] = now
            post(Notice(f"reranking with {name}: {done}/{total} questions"))

    try:
        reranker = job.ranked.reranker
        first = job.ranked.rankings.get(reranker.over) if reranker is not None else None
        result = compute_rerank(reranker, first, job.questions, progress)
    except Exception as exc:  # a model that cannot run must be a message, never a traceback
        post(WorkFailed(name, _failure(exc)))
        return
    if result is not None:
        post(RerankReady(generation, result))


def ask_live(job: LiveJob, post: Post, cancelled: Cancelled) -> None:
    """Every golden question's answer from each live retriever (cache first unless ``refresh``)."""
    generation = job.generation
    last = [0.0]

    def progress(name: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_INTERVAL or done >= total:
            last[0] = now
            post(LiveProgress(generation, name, done, total))

    try:
        result = compute_live(
            job.settings,
            job.live.retrievers,
            job.questions,
            refresh=job.refresh,
            progress=progress,
            cancelled=cancelled,
        )
    except Exception as exc:  # a broken plugin must be a message, never a traceback
        post(WorkFailed("Live retrievers", visible_line(f"{type(exc).__name__}: {exc}")))
        return
    if not cancelled():
        post(LiveReady(generation, result))


def load_warning(ws: Workspace, vectors: VectorResult | None) -> str:
    """The one most important thing a load found, for the status line ("" when nothing)."""
    warnings = list(ws.warnings) + (list(vectors.warnings) if vectors is not None else [])
    stale = ws.grades.stale_labels()
    if ws.grades.labels.read_only:
        reason = ws.grades.labels.read_only_reason or f"{ws.grades.labels.path} is read-only"
        return f"{reason}: you can look, but grades cannot be saved."
    if stale:
        return (
            f"{len(stale)} hand label(s) no longer match the chunked corpus and are not applied;"
            " ctrl+p, check lists them."
        )
    if warnings:
        more = f" (+{len(warnings) - 1} more: ctrl+p, check)" if len(warnings) > 1 else ""
        return f"warning: {warnings[0]}{more}"
    return ""
