"""Live retrievers: a team's own search, asked question by question (plugins, HTTP search APIs, Milvus).

A live retriever is built from a :class:`LiveSpec` (``--retriever NAME=SPEC`` on the command line,
``[retrievers.NAME]`` in the project file, an entry point named in ``--retrievers``, or a Milvus
retriever with ``--milvus``). :func:`run_live` asks it every question, a bounded number at a time,
and keeps each answer on disk per (retriever settings, question text) under the cache folder, so a
second run asks nothing unless told to refresh. A question the retriever could not answer is
recorded with a one-line reason and is asked again next time (failures are never cached); after
:data:`CONSECUTIVE_FAILURES` failures in a row the remaining questions are not asked at all, so a
server that is down costs seconds, not minutes.

Nothing here changes a workspace: ``run_live`` only reads, so it may run in a worker thread, and
``Workspace.apply_live`` adds what it found on the UI thread.

The runner is here; what every live retriever shares (its interface, ``LiveError``, the spec and
its parsing) is in ``live_base``, the answer cache and its size bound in ``live_cache``. Their
names are importable from here too.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ragtui.core.retrieval.base import Hit, HitError, normalize_hits
from ragtui.core.retrieval.live_base import (
    ENTRY_POINT_GROUP,
    MILVUS_RETRIEVERS,
    LiveError,
    LiveProgress,
    LiveRetriever,
    LiveSpec,
    check_name,
    one_line,
    parse_retriever_section,
    parse_retriever_spec,
    spec_from_target,
)
from ragtui.core.retrieval.live_cache import LiveCache, prune_cache

__all__ = [
    "CONSECUTIVE_FAILURES",
    "ENTRY_POINT_GROUP",
    "MILVUS_RETRIEVERS",
    "LiveCache",
    "LiveError",
    "LiveProgress",
    "LiveRetriever",
    "LiveRun",
    "LiveSpec",
    "LiveStatus",
    "check_name",
    "examples",
    "one_line",
    "parse_retriever_section",
    "parse_retriever_spec",
    "prune_cache",
    "run_live",
    "spec_from_target",
]

#: After this many failed questions in a row, a retriever's remaining questions are not asked.
CONSECUTIVE_FAILURES = 3

#: How many examples a message names.
EXAMPLES = 5

#: How often a waiting thread looks whether it was cancelled (seconds).
_POLL_SECONDS = 0.05


@dataclass(frozen=True)
class LiveStatus:
    """Where a live retriever stands, for a list header: waiting, ready, partial (some questions failed) or failed."""

    name: str
    state: Literal["waiting", "ready", "partial", "failed"]
    message: str = ""
    """One line: why it failed, or how many questions it could not answer and why."""
    failed: Mapping[str, str] = field(default_factory=dict)
    """Question id -> why that question could not be answered."""
    from_cache: int = 0
    queried: int = 0


@dataclass
class LiveRun:
    """One retriever's answers to a set of questions: hits per question, failures with reasons, counts."""

    name: str
    hits: dict[str, list[Hit]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    from_cache: int = 0
    queried: int = 0
    error: str = ""
    """A failure before any question was asked (the retriever could not be reached or set up)."""

    @property
    def status(self) -> LiveStatus:
        """The run as a status line."""
        total = len(self.hits) + len(self.failed)
        if self.error and not self.hits:
            return LiveStatus(self.name, "failed", self.error, dict(self.failed))
        if self.failed and not self.hits:
            reason = next(iter(self.failed.values()))
            return LiveStatus(
                self.name,
                "failed",
                f"no question answered: {reason}",
                dict(self.failed),
                self.from_cache,
                self.queried,
            )
        if self.failed:
            return LiveStatus(
                self.name,
                "partial",
                f"{len(self.failed)} of {total} questions not answered "
                f"({examples(list(self.failed))}): {_common_reason(self.failed)}",
                dict(self.failed),
                self.from_cache,
                self.queried,
            )
        return LiveStatus(self.name, "ready", "", {}, self.from_cache, self.queried)


def examples(ids: Sequence[str], limit: int = EXAMPLES) -> str:
    """The first few ids, comma-separated, with '…' when there are more."""
    shown = ", ".join(ids[:limit])
    return shown + (", ..." if len(ids) > limit else "")


def _common_reason(failed: Mapping[str, str]) -> str:
    """The most frequent failure reason (the first one given on a tie)."""
    counts: dict[str, int] = {}
    for reason in failed.values():
        counts[reason] = counts.get(reason, 0) + 1
    return max(counts, key=lambda r: counts[r])


def _answer(retriever: LiveRetriever, questions: Sequence[str], depth: int) -> list[list[Hit]]:
    """Ask one question (or one batch) and normalise the results; any failure becomes a LiveError."""
    try:
        if len(questions) == 1 and retriever.batch_size <= 1:
            raw = [retriever.search(questions[0], depth)]
        else:
            raw = list(retriever.search_batch(questions, depth))
            if len(raw) != len(questions):
                raise LiveError(f"asked {len(questions)} questions at once, got {len(raw)} answers")
        return [normalize_hits(r, depth) for r in raw]
    except LiveError:
        raise
    except HitError as exc:
        raise LiveError(f"unusable result: {exc}") from None
    except Exception as exc:  # a plugin or a client library may raise anything
        raise LiveError(one_line(f"{type(exc).__name__}: {exc}")) from None


class _Cancelled(Exception):
    """The caller stopped waiting for the retriever."""


def _call_in_thread(call: Callable[[], Any], cancelled: Callable[[], bool] | None) -> Any:
    """``call()`` in a daemon thread while this thread waits, looking every moment whether it was
    cancelled (then _Cancelled). Anything ``call`` raises is raised here; a BaseException that is
    not an Exception (a plugin's SystemExit or KeyboardInterrupt) as a LiveError, so only a real
    Ctrl-C, which reaches the waiting thread, stops the command."""
    box: dict[str, Any] = {}
    ended = threading.Event()

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the waiting thread
            box["error"] = exc
        finally:
            ended.set()

    threading.Thread(target=target, name="ragtui-live-setup", daemon=True).start()
    while not ended.wait(_POLL_SECONDS):
        if cancelled is not None and cancelled():
            raise _Cancelled
    error = box.get("error")
    if isinstance(error, Exception):
        raise error
    if error is not None:
        raise LiveError(one_line(f"{type(error).__name__}: {error}"))
    return box["value"]


def run_live(
    retriever: LiveRetriever,
    questions: Sequence[tuple[str, str]],
    depth: int,
    *,
    refresh: bool = False,
    root: Path | None = None,
    progress: LiveProgress | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> LiveRun:
    """Answer every (question id, text) with one retriever: from the cache, else by asking it.

    Reads nothing but the retriever and the cache, so it may run in a worker thread. Cached
    answers are used unless ``refresh``; fresh answers are cached; failures are recorded per
    question and never cached.
    """
    run = LiveRun(retriever.name)
    total = len(questions)
    try:
        # In a thread of its own, like every call into the retriever: the caller only waits, so
        # Ctrl-C (raised in the main thread) and a cancelled worker stop it within a moment.
        cacheable, identity = _call_in_thread(
            lambda: (retriever.cacheable, retriever.identity() if retriever.cacheable else None),
            cancelled,
        )
        cache = (
            LiveCache(retriever.name, identity, root)
            if cacheable and identity is not None
            else None
        )
    except _Cancelled:
        run.failed = {qid: "cancelled" for qid, _ in questions}
        return run
    except LiveError as exc:
        run.error = one_line(str(exc))
        run.failed = {qid: run.error for qid, _ in questions}
        return run
    except Exception as exc:
        run.error = one_line(f"{type(exc).__name__}: {exc}")
        run.failed = {qid: run.error for qid, _ in questions}
        return run
    todo: list[tuple[str, str]] = []
    for qid, text in questions:
        cached = None if refresh or cache is None else cache.get(text, depth)
        if cached is None:
            todo.append((qid, text))
        else:
            run.hits[qid] = cached
            run.from_cache += 1
    done = run.from_cache
    if progress:
        progress(retriever.name, done, total)
    if not todo:
        return run

    try:
        size, concurrency = _call_in_thread(
            lambda: (max(1, retriever.batch_size), retriever.concurrency), cancelled
        )
    except _Cancelled:
        run.failed.update({qid: "cancelled" for qid, _ in todo})
        return run
    except Exception as exc:
        reason = one_line(f"{type(exc).__name__}: {exc}")
        run.failed.update({qid: reason for qid, _ in todo})
        return run
    batches = [todo[i : i + size] for i in range(0, len(todo), size)]
    cond = threading.Condition()
    failures_in_a_row = 0
    last_reason = ""
    next_batch = 0
    in_flight = 0
    running = 0
    closed = False  # the caller stopped waiting (cancelled, Ctrl-C): late answers are dropped
    finished = threading.Event()

    def skip_rest(reason: str) -> None:
        """Every batch not started yet fails with ``reason`` (called holding ``cond``)."""
        nonlocal next_batch, done
        for batch in batches[next_batch:]:
            for qid, _ in batch:
                run.failed[qid] = reason
            done += len(batch)
        next_batch = len(batches)

    def take() -> list[tuple[str, str]] | None:
        """The next batch to ask, or None when there is nothing more to ask."""
        nonlocal next_batch, in_flight
        with cond:
            while True:
                if closed or next_batch >= len(batches):
                    return None
                if cancelled is not None and cancelled():
                    skip_rest("cancelled")
                    return None
                if failures_in_a_row >= CONSECUTIVE_FAILURES:
                    skip_rest(
                        f"not asked after {CONSECUTIVE_FAILURES} failures in a row ({last_reason})"
                    )
                    if progress:
                        progress(retriever.name, done, total)
                    return None
                # After a failure, one question at a time until one is answered: a server that
                # is down costs about one deadline, not one per worker and round.
                if failures_in_a_row == 0 or in_flight == 0:
                    batch = batches[next_batch]
                    next_batch += 1
                    in_flight += 1
                    return batch
                cond.wait(_POLL_SECONDS)

    def ask(batch: list[tuple[str, str]]) -> None:
        nonlocal done, failures_in_a_row, last_reason, in_flight
        answers: list[list[Hit]] | None = None
        reason = ""
        try:
            answers = _answer(retriever, [text for _, text in batch], depth)
        except LiveError as exc:
            reason = one_line(str(exc))
        except BaseException as exc:  # in this thread, anything is the retriever's failure
            reason = one_line(f"{type(exc).__name__}: {exc}")
        if answers is not None and cache is not None and not closed:
            for (_, text), hits in zip(batch, answers, strict=True):
                # A cache that cannot be written costs a query next time, nothing else.
                with contextlib.suppress(OSError):
                    cache.put(text, depth, hits)
        with cond:
            in_flight -= 1
            cond.notify_all()
            if closed:
                return
            if answers is None:
                failures_in_a_row += 1
                last_reason = reason
                for qid, _ in batch:
                    run.failed[qid] = reason
            else:
                failures_in_a_row = 0
                for (qid, _), hits in zip(batch, answers, strict=True):
                    run.hits[qid] = hits
                    run.queried += 1
            done += len(batch)
            if progress:
                progress(retriever.name, done, total)

    def worker() -> None:
        nonlocal running
        try:
            while (batch := take()) is not None:
                ask(batch)
        finally:
            with cond:
                running -= 1
                if running == 0:
                    finished.set()

    workers = max(1, min(concurrency, len(batches)))
    running = workers
    for i in range(workers):
        # Daemon threads: one stuck in a request never keeps ragtui from exiting.
        threading.Thread(target=worker, name=f"ragtui-live-{i}", daemon=True).start()
    try:
        while not finished.wait(_POLL_SECONDS):
            if cancelled is not None and cancelled():
                break
    finally:  # cancelled, or Ctrl-C in the waiting thread: stop at once, whatever is in flight
        with cond:
            if not finished.is_set():
                closed = True
                for qid, _ in todo:
                    if qid not in run.hits and qid not in run.failed:
                        run.failed[qid] = "cancelled"
                cond.notify_all()
    if cache is not None and run.queried:
        with contextlib.suppress(OSError):
            prune_cache(cache.folder.parent)
    # Keep the golden-set order, whatever order the answers came in.
    order = {qid: i for i, (qid, _) in enumerate(questions)}
    run.hits = dict(sorted(run.hits.items(), key=lambda kv: order[kv[0]]))
    run.failed = dict(sorted(run.failed.items(), key=lambda kv: order[kv[0]]))
    return run
