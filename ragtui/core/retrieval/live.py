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
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

import orjson

from ragtui.core.data.paths import cache_dir, safe_filename
from ragtui.core.errors import InputError
from ragtui.core.retrieval.base import RETRIEVER_NAMES, Hit, HitError, normalize_hit, normalize_hits
from ragtui.core.text import mask_urls

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
    "parse_retriever_section",
    "parse_retriever_spec",
    "prune_cache",
    "run_live",
]

#: The entry-point group a package registers its retriever factories under.
ENTRY_POINT_GROUP = "ragtui.retrievers"

#: The retrievers ``--milvus URI --collection NAME`` offers.
MILVUS_RETRIEVERS = ("milvus-bm25", "milvus-vector", "milvus-hybrid")

#: After this many failed questions in a row, a retriever's remaining questions are not asked.
CONSECUTIVE_FAILURES = 3

#: How many examples a message names.
EXAMPLES = 5

#: The live answer cache's default size bound, in MB (``RAGTUI_LIVE_CACHE_MB`` sets another; 0: no bound).
LIVE_CACHE_MB = 200
#: The environment variable that sets the live answer cache's size bound, in MB.
LIVE_CACHE_ENV = "RAGTUI_LIVE_CACHE_MB"

#: How often a waiting thread looks whether it was cancelled (seconds).
_POLL_SECONDS = 0.05

#: Called as ``progress(retriever name, questions done, questions in all)`` while live retrievers run.
LiveProgress = Callable[[str, int, int], None]

#: What a live spec stands for.
LiveKind = Literal["http", "plugin", "entry-point", "milvus"]

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_FACTORY = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*")
_ENTRY_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


class LiveError(Exception):
    """A live retriever could not answer a question; the message is one line saying why."""


@dataclass(frozen=True)
class LiveSpec:
    """How to build one live retriever: its name, kind, target and options, and where it was given."""

    name: str
    kind: LiveKind
    target: str
    """The URL template, ``package.module:factory``, the entry-point name, or the Milvus search (bm25, vector, hybrid)."""
    options: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    """Kind-specific settings: the HTTP mapping, the plugin factory's keyword arguments."""
    source: str = "--retriever"
    """Where the spec was given, for messages (``--retriever``, ``ragtui.toml [retrievers.es]``)."""
    from_project: bool = False
    """Defined in the project file: used only when the retrievers in force are the default or name it."""

    def __str__(self) -> str:
        """``NAME=TARGET``, as ``--retriever`` takes it (for ``ragtui config``)."""
        return f"{self.name}={self.target}"


class LiveRetriever(Protocol):
    """What ``run_live`` asks: a name, how many questions at a time, a cache identity, and search."""

    name: str

    # Read-only, so that a plugin may read them from its object when it is first used.
    @property
    def concurrency(self) -> int:
        """Questions asked at once."""
        ...

    @property
    def batch_size(self) -> int:
        """Questions per ``search_batch`` call (1: one ``search`` each)."""
        ...

    @property
    def cacheable(self) -> bool:
        """Whether answers are kept on disk."""
        ...

    def identity(self) -> dict[str, Any]:
        """What the answers depend on (the cache key is its hash); may contact the retriever."""
        ...

    def describe(self) -> dict[str, Any]:
        """What a saved run's manifest records about the retriever (no secrets, no contact)."""
        ...

    def search(self, question: str, depth: int) -> list[Hit]:
        """The top ``depth`` results for ``question``, best first; raises LiveError when it cannot answer."""
        ...

    def search_batch(self, questions: Sequence[str], depth: int) -> list[list[Hit]]:
        """``search`` for several questions in one call (used when ``batch_size`` > 1)."""
        ...


# ---- specs ------------------------------------------------------------------------------------


def check_name(name: str, source: str) -> str:
    """A live retriever name: letters, digits, ``_ . -`` (not first), and not a built-in retriever's."""
    if not _NAME.fullmatch(name) or safe_filename(name) != name:
        raise InputError(
            None,
            f"{source}: retriever name {name!r} may hold only letters, digits, '_', '.' and '-' (not first)",
        )
    if name in RETRIEVER_NAMES:
        raise InputError(
            None, f"{source}: {name!r} is a built-in retriever; give yours another name"
        )
    return name


def parse_retriever_spec(text: str) -> LiveSpec:
    """``NAME=SPEC`` from ``--retriever``: SPEC is an http(s) URL template, ``package.module:factory`` or an entry-point name."""
    name, sep, spec = text.partition("=")
    source = f"--retriever {mask_urls(text)!r}"
    if not sep or not name.strip() or not spec.strip():
        raise InputError(
            None,
            f"{source}: expected NAME=SPEC (SPEC: http(s)://…{{query}}…, package.module:factory or an entry-point name)",
        )
    name, spec = name.strip(), spec.strip()
    check_name(name, source)
    return spec_from_target(name, spec, source, {})


def spec_from_target(name: str, target: str, source: str, options: Mapping[str, Any]) -> LiveSpec:
    """A spec from its target text: a URL, ``package.module:factory`` or an entry-point name."""
    lowered = target.lower()
    if lowered.startswith(("http://", "https://")):
        from ragtui.core.retrieval.http import parse_http_options

        config = parse_http_options(target, dict(options), source)
        return LiveSpec(name, "http", target, {"http": config}, source)
    if "://" in target:
        raise InputError(None, f"{source}: only http:// and https:// URLs are supported")
    if _FACTORY.fullmatch(target):
        return LiveSpec(name, "plugin", target, dict(options), source)
    if _ENTRY_NAME.fullmatch(target):
        return LiveSpec(name, "entry-point", target, dict(options), source)
    raise InputError(
        None,
        f"{source}: {target!r} is neither an http(s) URL, nor package.module:factory, nor an entry-point name",
    )


def parse_retriever_section(name: str, table: dict[str, Any]) -> LiveSpec:
    """The project file's ``[retrievers.NAME]`` table as a spec; InputError (naming the key) when it is wrong.

    Exactly one of ``url`` (an HTTP search API, with the response mapping beside it: see
    :func:`ragtui.core.retrieval.http.parse_http_options`), ``factory`` (``package.module:factory``)
    or ``entry-point`` (a name in the ``ragtui.retrievers`` group). A plugin's ``options`` table is
    passed to its factory as keyword arguments.
    """
    source = f"[retrievers.{name}]"
    check_name(name, source)
    if not isinstance(table, dict):
        raise InputError(None, f"{source}: expected a table")
    given = [key for key in ("url", "factory", "entry-point") if key in table]
    if len(given) != 1:
        raise InputError(
            None,
            f"{source}: give exactly one of url, factory or entry-point (found {', '.join(given) or 'none'})",
        )
    key = given[0]
    target = table[key]
    if not isinstance(target, str) or not target.strip():
        raise InputError(None, f"{source}: {key} must be a non-empty string")
    target = target.strip()
    rest = {k: v for k, v in table.items() if k != key}
    if key == "url":
        if not target.lower().startswith(("http://", "https://")):
            raise InputError(None, f"{source}: url must start with http:// or https://")
        return spec_from_target(name, target, source, rest)
    unknown = sorted(set(rest) - {"options"})
    if unknown:
        raise InputError(
            None, f"{source}: unknown key {unknown[0]!r} for a plugin (only 'options' may follow)"
        )
    options = rest.get("options", {})
    if not isinstance(options, dict):
        raise InputError(None, f"{source}: options must be a table")
    if key == "factory" and not _FACTORY.fullmatch(target):
        raise InputError(None, f"{source}: factory must be package.module:function, got {target!r}")
    if key == "entry-point" and not _ENTRY_NAME.fullmatch(target):
        raise InputError(None, f"{source}: entry-point {target!r} is not a valid name")
    return LiveSpec(name, "plugin" if key == "factory" else "entry-point", target, options, source)


# ---- the cache ----------------------------------------------------------------------------------


def identity_hash(identity: Mapping[str, Any]) -> str:
    """The SHA-256 of a retriever identity (sorted-key JSON)."""
    return hashlib.sha256(orjson.dumps(identity, option=orjson.OPT_SORT_KEYS)).hexdigest()


class LiveCache:
    """One retriever's answers on disk: one small JSON file per question text, each written atomically.

    A file is written to a temporary name and renamed, so a reader sees a whole answer or none; a
    file that does not parse (a crash mid-write on a filesystem without rename ordering) is ignored
    and the question asked again.
    """

    def __init__(self, name: str, identity: Mapping[str, Any], root: Path | None = None) -> None:
        digest = identity_hash(identity)
        self.folder = (root or cache_dir()) / "live" / f"{safe_filename(name)}-{digest[:16]}"
        self._lock = threading.Lock()

    def _path(self, question: str) -> Path:
        return self.folder / (hashlib.sha1(question.encode("utf-8")).hexdigest() + ".json")

    def get(self, question: str, depth: int) -> list[Hit] | None:
        """The cached answer cut to ``depth``, or None when there is none deep enough."""
        try:
            obj = orjson.loads(self._path(question).read_bytes())
            if obj["question"] != question:
                return None
            cached_depth = int(obj["depth"])
            # Checked as a fresh answer is: a file with a number for a text (edited, forged,
            # written by another version) is a miss, and the question is asked again.
            hits = [
                normalize_hit({"id": h[0], "score": h[1], "text": h[2], "doc": h[3]}, rank)
                for rank, h in enumerate(obj["hits"], start=1)
            ]
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
            return None
        if cached_depth < depth and len(hits) >= cached_depth:
            return None  # asked less deep than now, and there may be more
        return hits[:depth]

    def put(self, question: str, depth: int, hits: Sequence[Hit]) -> None:
        """Keep an answer (temporary file, then rename)."""
        body = {
            "question": question,
            "depth": depth,
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "hits": [[h.id, h.score, h.text, h.doc] for h in hits],
        }
        path = self._path(question)
        with self._lock:
            self.folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(orjson.dumps(body))
        os.replace(tmp, path)


# ---- running ------------------------------------------------------------------------------------


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


def one_line(text: str, limit: int = 300) -> str:
    """A message on one line, at most ``limit`` characters, any URL in it masked (user info, keys)."""
    flat = mask_urls(" ".join(str(text).split()))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


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


def cache_limit_bytes() -> int | None:
    """The live answer cache's size bound in bytes (``RAGTUI_LIVE_CACHE_MB``, default 200; 0: none)."""
    raw = os.environ.get(LIVE_CACHE_ENV, "").strip()
    try:
        mb = float(raw) if raw else float(LIVE_CACHE_MB)
    except ValueError:
        mb = float(LIVE_CACHE_MB)
    if not mb > 0 or mb != mb:
        return None
    return int(mb * 1024 * 1024)


def prune_cache(live_root: Path, limit: int | None = None) -> int:
    """Keep the live answer cache (``<cache>/live``, every retriever's folder) under its size bound:
    the oldest answers (by when they were written) are deleted first, until the rest fit. Returns
    how many files were deleted; ``limit`` defaults to :func:`cache_limit_bytes`."""
    limit = cache_limit_bytes() if limit is None else limit
    if limit is None:
        return 0
    files: list[tuple[float, int, Path]] = []
    total = 0
    for folder in live_root.iterdir():
        if not folder.is_dir() or folder.is_symlink():
            continue
        for path in folder.iterdir():
            if path.suffix != ".json" or path.name.startswith("."):
                continue
            try:
                info = path.stat()
            except OSError:
                continue
            files.append((info.st_mtime, info.st_size, path))
            total += info.st_size
    if total <= limit:
        return 0
    removed = 0
    for _, size, path in sorted(files, key=lambda f: (f[0], str(f[2]))):
        if total <= limit:
            break
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError:
            continue
        total -= size
        removed += 1
    return removed


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
