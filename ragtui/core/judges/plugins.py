"""Python plugins: a team's own judge, as ``package.module:factory`` or an entry point of the
``ragtui.judges`` group.

The factory is called with the keyword arguments of the ``[judges.NAME]`` table's ``options``
(none on the command line) and returns an object with ``grade(pairs)``, or that function itself.
``grade`` gets a list of :class:`ragtui.core.judges.base.JudgePair` (``question``, ``chunk``,
their ids, the chunk text's hash) and returns one item per pair, in order: ``(grade, reason)``,
a bare grade, or a :class:`ragtui.core.judges.base.Verdict`; a grade of ``None`` is that pair's
failure (the reason says why). The object may also have ``model_id`` (what the journal records;
default the factory's name), ``prompt_sha1``, ``version`` or ``settings`` (part of the cache
key), ``batch_size`` (pairs per call, default 16), ``concurrency`` (calls at once, default 1),
``prepare(scale, graded)`` (returns a note) and ``close()``: a full ``Judge`` is one such object.

A package makes its factory known under the entry-point group::

    [project.entry-points."ragtui.judges"]
    myjudge = "mypackage.judging:make_judge"

Nothing of a plugin runs until ``ragtui judge`` uses it: building checks, without running its code,
that the module or entry point exists. Every call into plugin code runs in a thread of its own with
a deadline (``timeout``, :data:`DEFAULT_TIMEOUT` seconds by default): whatever it raises
(``SystemExit`` and ``KeyboardInterrupt`` included), whatever odd thing it returns, and a call that
does not return in time, is that judge's failure, never the end of ragtui. A batch it cannot grade
(it raised, returned the wrong number of items) is one failure per pair, asked again on the next
run; an item that is not a grade on the scale is that pair's failure; a factory, a ``prepare`` that
fails or a call past its deadline stops the judge (``JudgeError``), the thread that hangs left
behind (Python cannot stop a thread; a plugin that ends the process itself, ``os._exit``, ends it).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import itertools
import operator
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import orjson

from ragtui.core.data.grades import GradeScale
from ragtui.core.errors import InputError
from ragtui.core.judge_spec import JudgeSpec, judge_where
from ragtui.core.judges.base import (
    JUDGE_ENTRY_POINT_GROUP,
    JudgeError,
    JudgePair,
    Verdict,
)
from ragtui.core.retrieval.live_base import one_line
from ragtui.core.retrieval.plugins import (
    describe_exception,
    entry_points_named,
    module_version,
    plain_value,
)

__all__ = ["DEFAULT_TIMEOUT", "PluginJudge", "judge_entry_point_names", "load_judge_plugin"]

T = TypeVar("T")

#: Seconds a call into plugin code may take (the ``timeout`` key of ``[judges.NAME]``).
DEFAULT_TIMEOUT = 300.0
#: Pairs per ``grade`` call unless the plugin says (``batch_size``).
DEFAULT_BATCH = 16


def judge_entry_point_names() -> list[str]:
    """The names registered under the ``ragtui.judges`` entry-point group, sorted."""
    return sorted(
        {ep.name for ep in importlib.metadata.entry_points(group=JUDGE_ENTRY_POINT_GROUP)}
    )


class _Timeout(Exception):
    """Plugin code did not return within its deadline."""


def _within(call: Callable[[], T], seconds: float, what: str) -> T:
    """``call()`` in a daemon thread, waited for at most ``seconds``; anything it raises (any
    BaseException) becomes a JudgeError ``what`` + the exception on one line, a call past the
    deadline a ``_Timeout`` (saying so, for the caller to name the call). A Ctrl-C while waiting stops ragtui as usual (only the main thread gets
    it; the plugin's thread is left behind)."""
    done = threading.Event()
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # plugin code may raise anything, SystemExit included
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="ragtui-judge-plugin", daemon=True).start()
    if not done.wait(seconds):
        raise _Timeout(f"did not return within {seconds:g} s (its thread is left running)")
    if "error" in box:
        error = box["error"]
        if type(error) is JudgeError:  # ragtui's own, its message made already
            raise JudgeError(what + one_line(str(error))) from None
        raise JudgeError(what + describe_exception(error)) from None
    result: T = box["value"]
    return result


def _plain_text(value: Any) -> str:
    """A plain ``str`` (a subclass's methods are plugin code); TypeError for anything else."""
    if type(value) is str:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    raise TypeError(f"{type(value).__name__}, not text")


def _grade_of(value: Any) -> int:
    """A whole-number grade (an int, a NumPy integer); TypeError for anything else (True, 2.0)."""
    if isinstance(value, bool):
        raise TypeError("a bool, not a grade")
    try:
        return int(operator.index(value))
    except TypeError:
        raise TypeError(f"{type(value).__name__}, not a whole-number grade") from None


def _verdict_of(item: Any) -> Verdict:
    """One item of ``grade``'s answer as a Verdict of built-in values (run in the plugin's thread)."""
    try:
        if isinstance(item, Verdict):
            grade = None if item.grade is None else _grade_of(item.grade)
            reason = _plain_text(item.reason)
            failure = _plain_text(item.failure)
            tokens = _grade_of(item.tokens)
        elif isinstance(item, tuple | list):
            if len(item) != 2:
                raise TypeError(f"{len(item)} values, not (grade, reason)")
            grade = None if item[0] is None else _grade_of(item[0])
            reason = _plain_text(item[1]) if item[1] is not None else ""
            failure = ""
            tokens = 0
        else:
            grade = _grade_of(item)
            reason = failure = ""
            tokens = 0
    except TypeError as exc:
        return Verdict(None, failure=f"unusable answer: {one_line(str(exc))}")
    reason = one_line(reason, 1000)
    if grade is None:
        return Verdict(
            None, failure=one_line(failure or reason or "no grade given"), tokens=max(0, tokens)
        )
    return Verdict(grade, reason, "", max(0, tokens))


def _answers(result: Any, count: int) -> list[Verdict] | str:
    """``grade``'s answer read as ``count`` verdicts, or what is wrong with it as a whole."""
    if isinstance(result, str | bytes | Mapping) or not hasattr(result, "__iter__"):
        return f"grade returned {type(result).__name__}, not one answer per pair"
    items = list(itertools.islice(iter(result), count + 1))  # never more than one too many
    if len(items) > count:
        return f"grade returned more than {count} answers for {count} pairs"
    if len(items) < count:
        return f"grade returned {len(items)} answers for {count} pairs"
    return [_verdict_of(item) for item in items]


def _whole(value: Any, default: int) -> int:
    return value if type(value) is int and value >= 1 else default


class _Loaded:
    """What the factory built, read once (in the plugin's thread: every read is plugin code)."""

    def __init__(self, spec: JudgeSpec, target: Any) -> None:
        grade = getattr(target, "grade", None)
        if grade is None and callable(target):
            grade = target
        if not callable(grade):
            raise JudgeError(
                f"{spec.target} returned {type(target).__name__}, which has no grade(pairs)"
            )
        self.grade: Callable[[list[JudgePair]], Any] = grade
        prepare = getattr(target, "prepare", None)
        self.prepare: Callable[..., Any] | None = prepare if callable(prepare) else None
        close = getattr(target, "close", None)
        self.close: Callable[[], Any] | None = close if callable(close) else None
        model = getattr(target, "model_id", None) or getattr(target, "model", None)
        self.model_id = (
            _plain_text(model) if isinstance(model, str) and model.strip() else spec.target
        )
        sha = getattr(target, "prompt_sha1", "")
        self.prompt_sha1 = _plain_text(sha) if isinstance(sha, str) else ""
        self.batch_size = _whole(getattr(target, "batch_size", DEFAULT_BATCH), DEFAULT_BATCH)
        self.concurrency = _whole(getattr(target, "concurrency", 1), 1)
        settings = getattr(target, "settings", None)
        if callable(settings):
            settings = settings()
        self.identity = plain_value([getattr(target, "version", None), settings])


class PluginJudge:
    """A plugin's judge behind the ``Judge`` interface, imported and built on first use."""

    def __init__(self, spec: JudgeSpec, version: str | None) -> None:
        self.name = spec.name
        self.spec = spec
        self.version = version
        """The version of the distribution that ships the plugin (from its metadata, when known)."""
        self.timeout = float(spec.options.get("timeout", DEFAULT_TIMEOUT))
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None
        self._failure: str | None = None
        self._grades: frozenset[int] | None = None

    # ---- building it -------------------------------------------------------------------------

    def _factory(self) -> Callable[..., Any]:
        """The factory the spec names, imported (plugin code runs here, in the caller's thread of ``_within``)."""
        spec = self.spec
        if spec.kind == "entry-point":
            found = entry_points_named(JUDGE_ENTRY_POINT_GROUP, spec.target)
            if not found:
                raise JudgeError(f"no entry point {spec.target} in group {JUDGE_ENTRY_POINT_GROUP}")
            value: Any = found[0].load()
        else:
            module_name, _, attr = spec.target.partition(":")
            value = importlib.import_module(module_name)
            for part in attr.split("."):
                if not hasattr(value, part):
                    raise JudgeError(f"{module_name} has no {attr}")
                value = getattr(value, part)
        if not callable(value):
            raise JudgeError(f"{spec.target} is not callable")
        factory: Callable[..., Any] = value
        return factory

    def _load(self) -> _Loaded:
        """Import the plugin and call its factory, once; the same JudgeError each time it failed."""
        with self._lock:
            if self._loaded is not None:
                return self._loaded
            if self._failure is not None:
                raise JudgeError(self._failure)
            options = dict(self.spec.options.get("options", {}))

            def build() -> _Loaded:
                return _Loaded(self.spec, self._factory()(**options))

            try:
                self._loaded = _within(build, self.timeout, f"{self.spec.target}: ")
            except JudgeError as exc:
                self._failure = one_line(f"{judge_where(self.spec)}: {exc}")
                raise JudgeError(self._failure) from None
            except _Timeout as exc:
                self._failure = one_line(f"{judge_where(self.spec)}: {self.spec.target}: {exc}")
                raise JudgeError(self._failure) from None
            return self._loaded

    def _read(self, attribute: str, default: T) -> T:
        """An attribute of the loaded plugin, or ``default`` when it cannot be loaded (``prepare``
        says why)."""
        try:
            value: T = getattr(self._load(), attribute)
        except JudgeError:
            return default
        return value

    @property
    def loaded(self) -> bool:
        """Whether the plugin was imported and its factory called (successfully)."""
        return self._loaded is not None

    @property
    def model_id(self) -> str:
        """The plugin's ``model_id`` (else ``model``), else its factory's name."""
        return self._read("model_id", self.spec.target)

    @property
    def prompt_sha1(self) -> str:
        """The plugin's ``prompt_sha1`` (empty without one)."""
        return self._read("prompt_sha1", "")

    @property
    def batch_size(self) -> int:
        """Pairs per ``grade`` call (the plugin's ``batch_size``, default 16)."""
        return self._read("batch_size", DEFAULT_BATCH)

    @property
    def concurrency(self) -> int:
        """``grade`` calls at once (the plugin's ``concurrency``, default 1)."""
        return self._read("concurrency", 1)

    @property
    def settings_key(self) -> str:
        """The kind, target and options, the distribution's version, the plugin's own ``version``
        and ``settings``, its model and prompt: what its grades depend on."""
        parts = [
            self.spec.kind,
            self.spec.target,
            plain_value(dict(self.spec.options.get("options", {}))),
            self.version,
            self._read("identity", None),
            self.model_id,
            self.prompt_sha1,
        ]
        return hashlib.sha256(orjson.dumps(parts)).hexdigest()[:32]

    # ---- the Judge interface -------------------------------------------------------------------

    def prepare(self, scale: GradeScale, graded: Sequence[tuple[JudgePair, int]]) -> str:
        """Load the plugin (JudgeError when it cannot be) and call its ``prepare``, if it has one."""
        loaded = self._load()
        self._grades = frozenset(g for g, _ in scale)
        if loaded.prepare is None:
            return ""
        hook = loaded.prepare
        given = (tuple(scale), list(graded))

        def ask() -> str:
            note = hook(*given)
            return one_line(_plain_text(note)) if note is not None else ""

        try:
            return _within(ask, self.timeout, f"{judge_where(self.spec)}: prepare: ")
        except _Timeout as exc:
            raise JudgeError(f"{judge_where(self.spec)}: prepare {exc}") from None

    def grade(self, pairs: Sequence[JudgePair]) -> list[Verdict]:
        """The plugin's verdicts; a batch it cannot grade is a failure per pair."""
        loaded = self._load()
        batch = list(pairs)
        if not batch:
            return []

        def ask() -> list[Verdict] | str:
            return _answers(loaded.grade(list(batch)), len(batch))

        try:
            answer = _within(ask, self.timeout, "")
        except _Timeout as exc:
            raise JudgeError(f"{judge_where(self.spec)}: grade {exc}") from None
        except JudgeError as exc:
            answer = one_line(str(exc))
        if isinstance(answer, str):
            return [Verdict(None, failure=answer) for _ in batch]
        return [self._on_scale(v) for v in answer]

    def _on_scale(self, verdict: Verdict) -> Verdict:
        grades = self._grades
        if verdict.grade is None or grades is None or verdict.grade in grades:
            return verdict
        return Verdict(
            None,
            failure=f"grade {verdict.grade} is not on the scale ({min(grades)}-{max(grades)})",
            tokens=verdict.tokens,
        )

    def close(self) -> None:
        """The plugin's ``close``, if it has one (what it raises is ignored: nothing is left to do)."""
        loaded = self._loaded
        if loaded is None or loaded.close is None:
            return
        hook = loaded.close
        try:
            _within(hook, min(self.timeout, 10.0), "")
        except (JudgeError, _Timeout):
            return


def _version(spec: JudgeSpec) -> str | None:
    """Refuse a plugin that cannot exist, without running any of its code (InputError); the version
    of the distribution that ships it (when known)."""
    where = judge_where(spec)
    if spec.kind == "entry-point":
        found = entry_points_named(JUDGE_ENTRY_POINT_GROUP, spec.target)
        if not found:
            known = ", ".join(judge_entry_point_names()) or "none installed"
            raise InputError(
                None,
                f"{where}: {spec.target!r} is no entry point of group {JUDGE_ENTRY_POINT_GROUP} "
                f"({known}), nor one of the judges (openai:MODEL@URL, cross-encoder:PATH, similarity)",
            )
        return found[0].dist.version if found[0].dist is not None else None
    return module_version(spec.target, where)


def load_judge_plugin(spec: JudgeSpec) -> PluginJudge:
    """The plugin judge a spec names, not yet imported: InputError at once when its module or entry
    point does not exist; anything else (the import, the factory) fails when it is first used."""
    return PluginJudge(spec, _version(spec))
