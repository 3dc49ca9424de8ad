"""What every live retriever shares: the interface ``run_live`` asks, its one-line error, and the spec
it is built from, read from ``--retriever NAME=SPEC`` or the project file's ``[retrievers.NAME]``.

The HTTP, plugin and Milvus retrievers (``http``, ``plugins``, ``milvus``) import this module, and
the runner (``live``) too; it imports none of them, so none of them imports another in a circle.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ragtui.core.data.paths import safe_filename
from ragtui.core.errors import InputError
from ragtui.core.retrieval.base import RETRIEVER_NAMES, Hit
from ragtui.core.retrieval.http_config import parse_http_options
from ragtui.core.text import mask_urls

__all__ = [
    "ENTRY_POINT_GROUP",
    "MILVUS_RETRIEVERS",
    "LiveError",
    "LiveKind",
    "LiveProgress",
    "LiveRetriever",
    "LiveSpec",
    "check_name",
    "one_line",
    "parse_retriever_section",
    "parse_retriever_spec",
    "spec_from_target",
]

#: The entry-point group a package registers its retriever factories under.
ENTRY_POINT_GROUP = "ragtui.retrievers"

#: The retrievers ``--milvus URI --collection NAME`` offers.
MILVUS_RETRIEVERS = ("milvus-bm25", "milvus-vector", "milvus-hybrid")

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


def one_line(text: str, limit: int = 300) -> str:
    """A message on one line, at most ``limit`` characters, any URL in it masked (user info, keys)."""
    flat = mask_urls(" ".join(str(text).split()))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


# ---- specs: --retriever NAME=SPEC and [retrievers.NAME] ----------------------------------------


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
    :func:`ragtui.core.retrieval.http_config.parse_http_options`), ``factory`` (``package.module:factory``)
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
