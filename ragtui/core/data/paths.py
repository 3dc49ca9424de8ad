"""Where the bundled corpus, golden set and the embedding cache live."""

from __future__ import annotations

import os
from pathlib import Path

#: The installed ``ragtui`` package folder.
_PACKAGE_DIR = Path(__file__).resolve().parents[2]


def _bundled(name: str) -> Path:
    """The bundled data folder: the source checkout's top level, else the copy inside the wheel."""
    checkout = _PACKAGE_DIR.parent / name
    if checkout.is_dir():
        return checkout
    return _PACKAGE_DIR / "_bundled" / name


def bundled_corpus() -> Path:
    """The bundled corpus folder."""
    return _bundled("corpus")


def bundled_golden() -> Path:
    """The bundled golden-set folder."""
    return _bundled("golden")


def cache_dir() -> Path:
    """The embedding cache: ``$RAGTUI_CACHE_DIR``, else ``$XDG_CACHE_HOME/ragtui``, else ``~/.cache/ragtui``."""
    explicit = os.environ.get("RAGTUI_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "ragtui"


def safe_filename(name: str, suffix: str = "") -> str:
    """A file name made from data (a run or retriever name): no folders, no dot-files, only safe characters.

    Anything but letters, digits, ``-``, ``_`` and ``.`` becomes ``_``, leading dots are dropped, so
    a name such as ``../../etc/passwd`` cannot leave the folder it is written to.
    """
    import re

    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".")[:120]
    if not cleaned or set(cleaned) <= {"_", "."}:
        raise ValueError(f"{name!r} cannot be made into a file name")
    return cleaned + suffix
