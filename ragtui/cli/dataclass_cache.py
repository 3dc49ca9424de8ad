"""The code ``@dataclass`` generates, compiled once and kept in the cache folder between runs.

Python 3.11's ``dataclasses`` writes each class's methods (``__init__``, ``__repr__``, ``__eq__``,
and for a frozen class ``__setattr__``, ``__delattr__`` and ``__hash__``) as source text and
compiles each with ``exec``. The app's import defines 165 dataclasses, 117 of them ragtui's: 738
compiles, 90-130 ms of every start on a 2-core virtual machine (a third of what ragtui's imports
add to Textual's). A text always compiles to the same code, so :func:`install` has
``dataclasses`` run the code compiled from the same text by an earlier run, read from one file of
the cache folder, and compile only texts it has not seen; :func:`save` adds those to the file.
Nothing else changes: a class gets the methods it would have got, compiled from the same text with
the same flags.

The file holds code that is run, so it is read only from the cache folder that the environment
names (``ragtui.core.data.paths.cache_dir``: never one a project file or an option names), and only
when it is a regular file owned by the user running ragtui that nobody else may write; anything
else about it (missing, unreadable, corrupt, of another Python) is a cache miss. The file's name carries Python's bytecode
magic number and optimisation level, so each Python has its own.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import hashlib
import importlib.util
import marshal
import os
import stat
import sys
from pathlib import Path
from types import CodeType
from typing import Any

from ragtui.core.data.paths import cache_dir

__all__ = ["install", "save"]

#: More entries than this and a save keeps only those this run used (texts of older versions go).
MAX_ENTRIES = 4000

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

_code: dict[bytes, CodeType] = {}
_new: dict[bytes, CodeType] = {}
_used: set[bytes] = set()
_path: Path | None = None


def _file(folder: Path) -> Path:
    magic = importlib.util.MAGIC_NUMBER.hex()
    return folder / f"dataclass-code-{magic}-O{sys.flags.optimize}.marshal"


def _read(path: Path) -> dict[bytes, CodeType]:
    """The file's table, or nothing when it is missing, unsafe to run, or not a table of code."""
    try:
        # Not through a link, and never waiting on a pipe put in the file's place.
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return {}
    try:
        info = os.fstat(fd)
        getuid = getattr(os, "getuid", None)
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            or (getuid is not None and info.st_uid != getuid())
        ):
            return {}
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read()
        table = marshal.loads(data)
    except Exception:  # unreadable or corrupt: a miss (marshal raises ValueError, EOFError, ...)
        return {}
    finally:
        os.close(fd)
    if not isinstance(table, dict):
        return {}
    return {k: v for k, v in table.items() if isinstance(k, bytes) and isinstance(v, CodeType)}


def _exec(source: Any, globals: Any = None, locals: Any = None, /, **more: Any) -> None:
    """``exec`` as ``dataclasses`` calls it, a text's compiled code taken from the table (what
    else a later Python passes goes to ``exec`` as it is)."""
    if isinstance(source, str):
        key = hashlib.blake2b(source.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        code = _code.get(key)
        if code is None:
            # dont_inherit: the flags exec gives dataclasses' text (none), not this module's futures.
            code = _new[key] = _code[key] = compile(source, "<string>", "exec", dont_inherit=True)
        _used.add(key)
        source = code
    builtins.exec(source, globals, locals, **more)


def install(folder: Path | None = None) -> None:
    """From now on, ``@dataclass`` runs code compiled by earlier runs (kept in ``folder``, default
    ragtui's cache folder) where its text is the same."""
    global _path
    try:
        _path = _file(folder if folder is not None else cache_dir())
    except (RuntimeError, KeyError, OSError):  # no home folder to find the cache folder in
        return
    _code.update(_read(_path))
    # dataclasses looks exec up in its module's globals first: the builtin is left as it is.
    dataclasses.exec = _exec  # type: ignore[attr-defined]


def save() -> None:
    """Add what this run compiled to the file (nothing happens when it compiled nothing, or the
    cache folder cannot be written)."""
    if _path is None or not _new:
        return
    table = _code if len(_code) <= MAX_ENTRIES else {k: _code[k] for k in _used}
    _new.clear()
    temporary = _path.with_name(f"{_path.name}.{os.urandom(6).hex()}.tmp")
    try:
        _path.parent.mkdir(parents=True, exist_ok=True)
        # A new file of its own (O_EXCL: never one planted there, nor a link's target).
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(marshal.dumps(table))
        os.replace(temporary, _path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
