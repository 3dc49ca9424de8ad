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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

import orjson

from ragtui.core.data.paths import cache_dir, safe_filename
from ragtui.core.errors import InputError
from ragtui.core.retrieval.base import RETRIEVER_NAMES, Hit, HitError, normalize_hits

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
    source = f"--retriever {text!r}"
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
            hits = [Hit(str(h[0]), float(h[1]), h[2], h[3]) for h in obj["hits"]]
        except (OSError, ValueError, KeyError, TypeError, IndexError):
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
    """A message on one line, at most ``limit`` characters."""
    flat = " ".join(str(text).split())
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
        cache = (
            LiveCache(retriever.name, retriever.identity(), root) if retriever.cacheable else None
        )
    except LiveError as exc:
        run.error = str(exc)
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

    lock = threading.Lock()
    failures_in_a_row = 0
    last_reason = ""
    size = max(1, retriever.batch_size)
    batches = [todo[i : i + size] for i in range(0, len(todo), size)]

    def work(batch: list[tuple[str, str]]) -> None:
        nonlocal done, failures_in_a_row, last_reason
        with lock:
            if cancelled is not None and cancelled():
                for qid, _ in batch:
                    run.failed[qid] = "cancelled"
                return
            if failures_in_a_row >= CONSECUTIVE_FAILURES:
                for qid, _ in batch:
                    run.failed[qid] = (
                        f"not asked after {CONSECUTIVE_FAILURES} failures in a row ({last_reason})"
                    )
                done += len(batch)
                return
        try:
            answers = _answer(retriever, [text for _, text in batch], depth)
        except LiveError as exc:
            reason = one_line(str(exc))
            with lock:
                failures_in_a_row += 1
                last_reason = reason
                for qid, _ in batch:
                    run.failed[qid] = reason
                done += len(batch)
                if progress:
                    progress(retriever.name, done, total)
            return
        for (_, text), hits in zip(batch, answers, strict=True):
            if cache is not None:
                # A cache that cannot be written costs a query next time, nothing else.
                with contextlib.suppress(OSError):
                    cache.put(text, depth, hits)
        with lock:
            failures_in_a_row = 0
            for (qid, _), hits in zip(batch, answers, strict=True):
                run.hits[qid] = hits
                run.queried += 1
            done += len(batch)
            if progress:
                progress(retriever.name, done, total)

    workers = max(1, min(retriever.concurrency, len(batches)))
    if workers == 1:
        for batch in batches:
            work(batch)
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ragtui-live") as pool:
            list(pool.map(work, batches))
    # Keep the golden-set order, whatever order the answers came in.
    order = {qid: i for i, (qid, _) in enumerate(questions)}
    run.hits = dict(sorted(run.hits.items(), key=lambda kv: order[kv[0]]))
    run.failed = dict(sorted(run.failed.items(), key=lambda kv: order[kv[0]]))
    return run
