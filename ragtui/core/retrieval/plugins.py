"""Python plugins: a team's own retriever, as ``package.module:factory`` or an entry point.

The factory is called with the keyword arguments of the project file's ``options`` table (none on
the command line) and returns either an object with ``search(question, depth)`` or that function
itself. ``search`` returns the results best first: :class:`ragtui.core.retrieval.base.Hit` objects,
``(id, score)`` or ``(id, score, text)`` tuples, or dicts with ``id``, ``score`` and optionally
``text`` and ``doc``. The object may also set ``concurrency`` (questions asked at once, default 1),
``cache = False`` (answers are not kept on disk), ``version`` or ``settings`` (part of the cache key:
change them and cached answers are not used), and ``search_batch(questions, depth)`` with
``batch_size`` (several questions in one call). docs/retrievers.md has a complete example.

A package makes its factory known under the ``ragtui.retrievers`` entry-point group::

    [project.entry-points."ragtui.retrievers"]
    mysearch = "mypackage.ragtui:make_retriever"

and ``--retrievers bm25,mysearch`` (or ``--retriever NAME=mysearch``) then uses it.

Nothing of a plugin runs until its answers are needed: :func:`load_plugin` checks what it can
without running code (the module or entry point exists), and the module is imported and the
factory called when the retriever is first asked (``cacheable``, ``identity``, ``search``). Every
call into plugin code is guarded: whatever it raises, ``SystemExit`` and ``KeyboardInterrupt``
included, and whatever odd thing it returns, is that retriever's failure (a :class:`LiveError`
with one line), never the end of ragtui. Only a real Ctrl-C stops ragtui: a ``KeyboardInterrupt``
from a worker thread cannot be one (Python delivers SIGINT to the main thread), and in the main
thread a SIGINT handler wrapped around the call records whether one arrived.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, cast

from ragtui.core.errors import InputError
from ragtui.core.retrieval.base import Hit, HitError, normalize_hits
from ragtui.core.retrieval.live_base import ENTRY_POINT_GROUP, LiveError, LiveSpec, one_line

__all__ = ["PluginRetriever", "entry_point_names", "load_plugin"]

T = TypeVar("T")


def entry_point_names() -> list[str]:
    """The names registered under the ``ragtui.retrievers`` entry-point group, sorted."""
    return sorted({ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)})


# ---- guarding calls into plugin code ------------------------------------------------------------


class _Watch:
    """Whether a real SIGINT arrived while plugin code ran in the main thread."""

    received = False


@contextlib.contextmanager
def _sigint_watch() -> Iterator[_Watch]:
    """Record a SIGINT that arrives during the block, then let the handler in force act on it.

    Only the main thread receives signals, and only it may set a handler; elsewhere nothing is
    installed and ``received`` stays False (a KeyboardInterrupt there was raised by plugin code).
    """
    watch = _Watch()
    if threading.current_thread() is not threading.main_thread():
        yield watch
        return
    try:
        previous = signal.getsignal(signal.SIGINT)
    except ValueError:  # pragma: no cover - not the main interpreter
        yield watch
        return

    def handler(signum: int, frame: Any) -> None:
        watch.received = True
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGINT, handler)
    except ValueError:  # pragma: no cover - not the main interpreter
        yield watch
        return
    try:
        yield watch
    finally:
        # Put back what was there, even if the plugin installed a handler of its own.
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


def describe_exception(exc: BaseException) -> str:
    """``ExceptionType: message`` on one line; never raises, whatever the exception's methods do."""
    kind = type(exc)
    if issubclass(kind, SystemExit):
        try:
            code = one_line(repr(cast(SystemExit, exc).code), 60)
        except BaseException:  # plugin objects may do anything
            code = "..."
        return f"SystemExit: the plugin called sys.exit({code})"
    if issubclass(kind, KeyboardInterrupt):
        return "KeyboardInterrupt: raised by the plugin (no Ctrl-C was pressed)"
    try:
        name = str.__str__(kind.__name__)
    except BaseException:
        name = "exception"
    try:
        text = one_line(str(exc))
    except BaseException:
        text = ""
    return f"{name}: {text}" if text else name


def _guarded(call: Callable[[], T], what: str = "", after: str = "") -> T:
    """``call()``, with anything plugin code raises turned into a LiveError; a real Ctrl-C still stops ragtui.

    ``what`` and ``after`` go around the error in the message (``[retrievers.p]: cannot import
    x (`` ... ``)``). A SIGINT that arrived
    during the call is passed on: the exception it raised is re-raised, and if the plugin
    swallowed it, KeyboardInterrupt is raised once the call returns.
    """
    with _sigint_watch() as watch:
        try:
            result = call()
        except BaseException as exc:  # SystemExit and KeyboardInterrupt from plugin code too
            if watch.received:
                raise
            if type(exc) is LiveError:  # ragtui's own, with its message made already
                raise
            if type(exc) is HitError:
                raise LiveError(f"{what}unusable result: {one_line(str(exc))}{after}") from None
            raise LiveError(what + describe_exception(exc) + after) from None
        if watch.received:
            raise KeyboardInterrupt
        return result


def _plain_text(value: str | None) -> str | None:
    """A ``str`` (not a subclass whose methods are plugin code)."""
    if value is None or type(value) is str:
        return value
    return str.__str__(value)


def _plain_hits(hits: Sequence[Hit]) -> list[Hit]:
    """Hits made only of built-in types, so no plugin object reaches the rest of ragtui."""
    out = []
    for hit in hits:
        hit_id = _plain_text(hit.id)
        assert hit_id is not None
        out.append(Hit(hit_id, float(hit.score), _plain_text(hit.text), _plain_text(hit.doc)))
    return out


# ---- finding the factory -------------------------------------------------------------------------


def entry_points_named(group: str, name: str) -> list[importlib.metadata.EntryPoint]:
    """The installed entry points of ``group`` called ``name`` (loading none of them)."""
    return [ep for ep in importlib.metadata.entry_points(group=group) if ep.name == name]


def _where(spec: LiveSpec) -> str:
    return f"{spec.source}: {spec.target}"


def _check_findable(spec: LiveSpec) -> str | None:
    """Refuse a plugin that cannot exist, without running any of its code; the version of the
    distribution that ships it (when known)."""
    where = _where(spec)
    if spec.kind == "entry-point":
        found = entry_points_named(ENTRY_POINT_GROUP, spec.target)
        if not found:
            known = ", ".join(entry_point_names()) or "none installed"
            raise InputError(
                None,
                f"{where}: no entry point of that name in group {ENTRY_POINT_GROUP} ({known})",
            )
        return found[0].dist.version if found[0].dist is not None else None
    return module_version(spec.target, where)


def module_version(target: str, where: str) -> str | None:
    """Refuse (InputError) a ``module:factory`` whose top-level module cannot be found, without
    running any of its code; the version of the distribution that ships it (when known)."""
    module_name = target.partition(":")[0]
    top = module_name.split(".")[0]
    # find_spec of a top-level name searches sys.path and runs nothing of the module (a dotted
    # name would import its parent packages, so only the top level is looked for here).
    try:
        findable = importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        findable = False
    if not findable:
        raise InputError(
            None,
            f"{where}: cannot import {module_name} (ModuleNotFoundError: No module named {top!r})",
        )
    try:
        return importlib.metadata.version(top)
    except importlib.metadata.PackageNotFoundError:
        return None
    except Exception:  # broken metadata of someone else's package
        return None


def _import_factory(spec: LiveSpec) -> Callable[..., Any]:
    """The factory a spec names, imported (plugin code runs here); LiveError when it cannot be.

    Messages are shown after the retriever's name (``kw: cannot import mymodule (...)``).
    """
    where = spec.target
    if spec.kind == "entry-point":
        found = entry_points_named(ENTRY_POINT_GROUP, spec.target)
        if not found:
            raise LiveError(f"no entry point {where} in group {ENTRY_POINT_GROUP}")
        ep = found[0]
        value = _guarded(ep.load, f"cannot load {ep.value} (", ")")
    else:
        module_name, _, attr = spec.target.partition(":")
        module = _guarded(
            lambda: importlib.import_module(module_name),
            f"cannot import {module_name} (",
            ")",
        )
        value = module

        def walk() -> Any:
            found: Any = module
            for part in attr.split("."):
                if not hasattr(found, part):
                    raise LiveError(f"{module_name} has no {attr}")
                found = getattr(found, part)
            return found

        value = _guarded(walk, f"{where}: ")
    if not _guarded(lambda: callable(value), f"{where}: "):
        raise LiveError(f"{where} is not callable")
    factory: Callable[..., Any] = value
    return factory


def _whole(value: Any, minimum: int) -> int:
    return (
        value
        if isinstance(value, int) and not isinstance(value, bool) and value >= minimum
        else minimum
    )


def plain_value(value: Any) -> Any:
    """A value made JSON-safe for the cache key, of built-in types only (anything else becomes its repr)."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) is dict:
        return {_plain_text(str(k)): plain_value(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return [plain_value(v) for v in value]
    return _plain_text(repr(value))


class _Loaded:
    """What the factory built, read once (every read of it is plugin code, so it is guarded)."""

    def __init__(self, spec: LiveSpec, target: Any) -> None:
        search = getattr(target, "search", None)
        if search is None and callable(target):
            search = target
        if not callable(search):
            raise LiveError(
                f"{spec.target} returned {type(target).__name__}, "
                "which has no search(question, depth)"
            )
        self.target = target
        self.search: Callable[[str, int], Any] = search
        batch = getattr(target, "search_batch", None)
        self.batch: Callable[[Sequence[str], int], Any] | None = batch if callable(batch) else None
        self.concurrency = _whole(getattr(target, "concurrency", 1), 1)
        self.batch_size = _whole(getattr(target, "batch_size", 1), 1) if self.batch else 1
        self.cacheable = bool(getattr(target, "cache", True))
        self.version: Any = plain_value(getattr(target, "version", None))


class PluginRetriever:
    """A plugin's search object (or function) behind the live retriever interface, built on first use."""

    def __init__(self, spec: LiveSpec, version: str | None) -> None:
        self.name = spec.name
        self.spec = spec
        self.version = version
        """The version of the distribution that ships the plugin (from its metadata, when known)."""
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None
        self._failure: str | None = None

    @property
    def loaded(self) -> bool:
        """Whether the plugin was imported and its factory called (successfully)."""
        return self._loaded is not None

    def _load(self) -> _Loaded:
        """Import the plugin and call its factory, once; a LiveError (the same each time) when that fails."""
        with self._lock:
            if self._loaded is not None:
                return self._loaded
            if self._failure is not None:
                raise LiveError(self._failure)
            try:
                factory = _import_factory(self.spec)
                options = dict(self.spec.options)
                target = _guarded(
                    lambda: factory(**options), f"the factory {self.spec.target} failed: "
                )
                self._loaded = _guarded(lambda: _Loaded(self.spec, target), f"{self.spec.target}: ")
            except LiveError as exc:
                self._failure = one_line(str(exc))
                raise LiveError(self._failure) from None
            return self._loaded

    @property
    def concurrency(self) -> int:
        """Questions asked at once (the plugin's ``concurrency``, default 1)."""
        return self._load().concurrency

    @property
    def batch_size(self) -> int:
        """Questions per ``search_batch`` call (1 without one)."""
        return self._load().batch_size

    @property
    def cacheable(self) -> bool:
        """Whether answers are kept on disk (the plugin's ``cache``, default True)."""
        return self._load().cacheable

    def identity(self) -> dict[str, Any]:
        """The spec, its options, the plugin's version and its own ``settings`` (when it has them)."""
        loaded = self._load()

        def settings() -> Any:
            value = getattr(loaded.target, "settings", None)
            return plain_value(value() if callable(value) else value)

        return {
            "kind": self.spec.kind,
            "target": self.spec.target,
            "options": plain_value(dict(self.spec.options)),
            "version": loaded.version or self.version,
            "settings": _guarded(settings, "settings: "),
        }

    def describe(self) -> dict[str, Any]:
        """What a saved run's manifest records (runs no plugin code)."""
        own = self._loaded.version if self._loaded is not None else None
        return {"kind": self.spec.kind, "target": self.spec.target, "version": own or self.version}

    def search(self, question: str, depth: int) -> list[Hit]:
        """The plugin's results, read as hits."""
        loaded = self._load()
        return _guarded(lambda: _plain_hits(normalize_hits(loaded.search(question, depth), depth)))

    def search_batch(self, questions: Sequence[str], depth: int) -> list[list[Hit]]:
        """The plugin's ``search_batch`` (or one ``search`` per question)."""
        loaded = self._load()
        batch = loaded.batch
        if batch is None:
            return [self.search(q, depth) for q in questions]

        def ask() -> list[list[Hit]]:
            answers = batch(list(questions), depth)
            if isinstance(answers, str | bytes | dict) or not hasattr(answers, "__iter__"):
                raise LiveError(
                    f"search_batch returned {type(answers).__name__}, not one list per question"
                )
            answers = list(answers)
            if len(answers) != len(questions):
                raise LiveError(
                    f"search_batch returned {len(answers)} answers for {len(questions)} questions"
                )
            return [_plain_hits(normalize_hits(a, depth)) for a in answers]

        return _guarded(ask)


def load_plugin(spec: LiveSpec) -> PluginRetriever:
    """The plugin retriever a spec names, not yet imported: InputError at once when its module or
    entry point does not exist; anything else (the import, the factory) fails when it is first asked."""
    return PluginRetriever(spec, _check_findable(spec))
