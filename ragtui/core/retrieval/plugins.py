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
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Sequence
from typing import Any

from ragtui.core.errors import InputError
from ragtui.core.retrieval.base import Hit, normalize_hits
from ragtui.core.retrieval.live import ENTRY_POINT_GROUP, LiveError, LiveSpec, one_line

__all__ = ["PluginRetriever", "entry_point_names", "load_plugin"]


def entry_point_names() -> list[str]:
    """The names registered under the ``ragtui.retrievers`` entry-point group, sorted."""
    return sorted({ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)})


def _factory(spec: LiveSpec) -> tuple[Callable[..., Any], str | None]:
    """The factory a spec names, and the version of the distribution that ships it (when known)."""
    where = f"{spec.source}: {spec.target}"
    if spec.kind == "entry-point":
        found = [
            ep
            for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
            if ep.name == spec.target
        ]
        if not found:
            known = ", ".join(entry_point_names()) or "none installed"
            raise InputError(
                None,
                f"{where}: no entry point of that name in group {ENTRY_POINT_GROUP} ({known})",
            )
        ep = found[0]
        version = ep.dist.version if ep.dist is not None else None
        try:
            return ep.load(), version
        except Exception as exc:  # a plugin's import may raise anything
            raise InputError(
                None, f"{where}: cannot load {ep.value}: {one_line(str(exc))}"
            ) from None
    module_name, _, attr = spec.target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise InputError(
            None,
            f"{where}: cannot import {module_name} ({type(exc).__name__}: {one_line(str(exc))})",
        ) from None
    value: Any = module
    for part in attr.split("."):
        if not hasattr(value, part):
            raise InputError(None, f"{where}: {module_name} has no {attr}")
        value = getattr(value, part)
    if not callable(value):
        raise InputError(None, f"{where}: {attr} is not callable")
    top = module_name.split(".")[0]
    try:
        version = importlib.metadata.version(top)
    except importlib.metadata.PackageNotFoundError:
        version = None
    return value, version


class PluginRetriever:
    """A plugin's search object (or function) behind the live retriever interface."""

    def __init__(self, spec: LiveSpec, target: Any, version: str | None) -> None:
        self.name = spec.name
        self.spec = spec
        self.target = target
        self.version = version
        search = getattr(target, "search", None)
        if search is None and callable(target):
            search = target
        if not callable(search):
            raise InputError(
                None,
                f"{spec.source}: {spec.target} returned {type(target).__name__}, which has no search(question, depth)",
            )
        self._search: Callable[[str, int], Any] = search
        self._batch: Callable[[Sequence[str], int], Any] | None = getattr(
            target, "search_batch", None
        )
        self.concurrency = _whole(getattr(target, "concurrency", 1), 1)
        self.batch_size = _whole(getattr(target, "batch_size", 1), 1) if self._batch else 1
        self.cacheable = bool(getattr(target, "cache", True))

    def identity(self) -> dict[str, Any]:
        """The spec, its options, the plugin's version and its own ``settings`` (when it has them)."""
        settings = getattr(self.target, "settings", None)
        if callable(settings):
            settings = settings()
        return {
            "kind": self.spec.kind,
            "target": self.spec.target,
            "options": _plain(dict(self.spec.options)),
            "version": getattr(self.target, "version", None) or self.version,
            "settings": _plain(settings),
        }

    def describe(self) -> dict[str, Any]:
        """What a saved run's manifest records."""
        return {
            "kind": self.spec.kind,
            "target": self.spec.target,
            "version": getattr(self.target, "version", None) or self.version,
        }

    def search(self, question: str, depth: int) -> list[Hit]:
        """The plugin's results, read as hits."""
        return normalize_hits(self._search(question, depth), depth)

    def search_batch(self, questions: Sequence[str], depth: int) -> list[list[Hit]]:
        """The plugin's ``search_batch`` (or one ``search`` per question)."""
        if self._batch is None:
            return [self.search(q, depth) for q in questions]
        answers = list(self._batch(list(questions), depth))
        if len(answers) != len(questions):
            raise LiveError(
                f"search_batch returned {len(answers)} answers for {len(questions)} questions"
            )
        return [normalize_hits(a, depth) for a in answers]


def _whole(value: Any, minimum: int) -> int:
    return (
        value
        if isinstance(value, int) and not isinstance(value, bool) and value >= minimum
        else minimum
    )


def _plain(value: Any) -> Any:
    """A value made JSON-safe for the cache key (anything unknown becomes its repr)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return repr(value)


def load_plugin(spec: LiveSpec) -> PluginRetriever:
    """Import the factory, call it with the spec's options, and wrap what it returns; InputError when any step fails."""
    factory, version = _factory(spec)
    try:
        target = factory(**dict(spec.options))
    except InputError:
        raise
    except Exception as exc:
        what = "the factory" if spec.target in spec.source else f"{spec.target}(...)"
        raise InputError(
            None,
            f"{spec.source}: {what} failed: {type(exc).__name__}: {one_line(str(exc))}",
        ) from None
    return PluginRetriever(spec, target, version)
