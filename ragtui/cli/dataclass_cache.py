"""The code ``@dataclass`` generates, compiled once and kept in the cache folder between runs.

Python 3.11's ``dataclasses`` writes each class's methods (``__init__``, ``__repr__``, ``__eq__``,
and for a frozen class ``__setattr__``, ``__delattr__`` and ``__hash__``) as source text and
compiles each with ``exec``. The app's import defines 165 dataclasses, 117 of them ragtui's: 738
compiles, 90-130 ms of every start on a 2-core virtual machine (a third of what ragtui's imports
add to Textual's). A text always compiles to the same code, so :func:`install` has
``dataclasses`` run the code compiled from the same text by an earlier run, read from one file of
the cache folder, and compile only texts it has not seen; :func:`save` adds those to the file.
Nothing else changes: a class gets the methods it would have got, compiled from the same text with
the same flags. Only the classes of ragtui and of the libraries it draws with (Textual, Rich) are
kept; any other module's (a test's, a plugin's, a program that calls ``main``) compile as always.

The file holds code that is run, so it is read only from the cache folder that the environment
names (``ragtui.core.data.paths.cache_dir``: never one a project file or an option names), only
when that is an absolute path (a relative one would let the current folder choose the code), and
only when the file is a regular file owned by the user running ragtui that no one else may read or
write (as ragtui writes it; a checkout or an archive leaves files others may read); anything else
about it (missing, unreadable, corrupt, larger than any ragtui writes) is a cache miss. The
file's name carries what the compiled code depends on besides its text (Python's bytecode magic
number, the optimisation level, whether code keeps column positions), so each has its own.
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

#: The packages whose dataclasses' code is kept: ragtui's and those of the screen it draws.
KEPT_PACKAGES = frozenset({"ragtui", "textual", "rich"})
#: More entries than this and a save keeps only those this run used (texts of older versions go).
MAX_ENTRIES = 2000
#: A file larger than this is not one ragtui wrote (the app's table is about 0.5 MB): not read.
MAX_BYTES = 16 * 1024 * 1024

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NAME = "dataclass-code-{magic}-O{optimize}{positions}.marshal".format(
    magic=importlib.util.MAGIC_NUMBER.hex(),
    optimize=sys.flags.optimize,
    positions=(
        "-no-positions"
        if "no_debug_ranges" in sys._xoptions or os.environ.get("PYTHONNODEBUGRANGES")
        else ""
    ),
)

_code: dict[bytes, CodeType] = {}
#: The texts compiled since the last save (their code is in ``_code``).
_new: set[bytes] = set()
_used: set[bytes] = set()


def _path() -> Path | None:
    """The file in the environment's cache folder, or None when there is no absolute folder to
    keep it in."""
    try:
        folder = cache_dir()
    except (RuntimeError, KeyError, OSError):  # no home folder to find the cache folder in
        return None
    return folder / _NAME if folder.is_absolute() else None


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
            or info.st_mode & (stat.S_IRWXG | stat.S_IRWXO)
            or (getuid is not None and info.st_uid != getuid())
            or info.st_size > MAX_BYTES
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
    """``exec`` as ``dataclasses`` calls it: for a class of the kept packages, the text's compiled
    code taken from the table (what else a later Python passes goes to ``exec`` as it is)."""
    module = globals.get("__name__") if isinstance(globals, dict) else None
    if isinstance(source, str) and str(module).partition(".")[0] in KEPT_PACKAGES:
        key = hashlib.blake2b(source.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        code = _code.get(key)
        if code is None:
            # dont_inherit: the flags exec gives dataclasses' text (none), not this module's.
            code = _code[key] = compile(source, "<string>", "exec", dont_inherit=True)
            _new.add(key)
        _used.add(key)
        source = code
    builtins.exec(source, globals, locals, **more)


def install() -> None:
    """From now on, ``@dataclass`` runs code compiled by earlier runs (kept in the environment's
    cache folder) where its text is the same."""
    path = _path()
    if path is None:
        return
    _code.update(_read(path))
    # dataclasses looks exec up in its module's globals first: the builtin is left as it is.
    dataclasses.exec = _exec  # type: ignore[attr-defined]


def save() -> None:
    """Add what this run compiled to the file in the environment's cache folder (as it is now).
    Never fails: when the folder cannot be written, the next run compiles again."""
    if not _new:  # nothing compiled, or the cache is not installed
        return
    with contextlib.suppress(Exception):
        _write(_path())


def _write(path: Path | None) -> None:
    if path is None:
        return
    table = dict(_code)  # copies made at once: another thread may add a class meanwhile
    if len(table) > MAX_ENTRIES:
        table = {k: table[k] for k in set(_used) if k in table}
    _new.clear()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f"{path.name}.{os.urandom(6).hex()}.tmp")
    # A new file of its own (O_EXCL: never one planted there, nor a link's target).
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    written = False
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(marshal.dumps(table))
        os.replace(temporary, path)
        written = True
    finally:
        if not written:
            with contextlib.suppress(OSError):
                temporary.unlink()
