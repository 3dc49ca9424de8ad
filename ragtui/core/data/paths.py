"""Where the bundled corpus and golden set, the user's copy of it, and the embedding cache live.

The bundled data is never written: it sits in the source checkout or inside the installed package,
where a write would be lost on the next upgrade (or end up in version control). The first write to
the bundled golden set (a label, an added question, a saved run) copies it to the user's data
folder, ``$XDG_DATA_HOME/ragtui/golden`` (else ``~/.local/share/ragtui/golden``), and every later
run reads that copy.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import stat
import tempfile
from pathlib import Path

#: The installed ``ragtui`` package folder.
_PACKAGE_DIR = Path(__file__).resolve().parents[2]


def _bundled(name: str) -> Path:
    """The bundled data folder: the source checkout's top level, else the copy inside the wheel."""
    checkout = _PACKAGE_DIR.parent / name
    # pyproject.toml beside the package marks a source checkout; in site-packages a folder of the
    # same name could belong to another distribution.
    if checkout.is_dir() and (_PACKAGE_DIR.parent / "pyproject.toml").is_file():
        return checkout
    return _PACKAGE_DIR / "_bundled" / name


def bundled_corpus() -> Path:
    """The bundled corpus folder."""
    return _bundled("corpus")


def bundled_golden() -> Path:
    """The bundled golden-set folder."""
    return _bundled("golden")


def data_home() -> Path:
    """The user's ragtui data folder: ``$XDG_DATA_HOME/ragtui``, else ``~/.local/share/ragtui``.

    A relative ``$XDG_DATA_HOME`` is ignored, as the XDG specification says.
    """
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "ragtui"


def user_golden() -> Path:
    """Where the copy of the bundled golden set lives (it may not exist yet)."""
    return data_home() / "golden"


@functools.cache
def _bundled_folders(package: Path) -> frozenset[Path]:
    """The bundled golden set and corpus beside or inside ``package``, resolved once (in the
    checkout and the installed package)."""
    folders = set()
    for candidate in (
        package.parent / "golden",
        package.parent / "corpus",
        package / "_bundled" / "golden",
        package / "_bundled" / "corpus",
    ):
        with contextlib.suppress(OSError):
            folders.add(candidate.resolve())
    return frozenset(folders)


def is_bundled(folder: str | Path) -> bool:
    """Whether ``folder`` is the bundled golden set or corpus (in the checkout or the installed package).

    One ``resolve`` of ``folder`` (a grade asks this several times, the journal for its folder)."""
    try:
        return Path(folder).resolve() in _bundled_folders(_PACKAGE_DIR)
    except OSError:
        return False


def golden_for_reading(golden: str | Path) -> Path:
    """The folder to read a golden set from: the user's copy in place of the bundled set once it exists."""
    path = Path(golden)
    if is_bundled(path) and (user_golden() / "questions.jsonl").is_file():
        return user_golden()
    return path


def writable_golden(golden: str | Path) -> tuple[Path, bool]:
    """The folder to write golden-set files into, and whether this call made it.

    For any folder but the bundled set that is the folder itself. For the bundled set it is the
    user's copy, made on the first call: copied beside it, write bits added, then renamed into
    place, so a second process never sees half a copy (if two race, the first rename wins and
    both use it).
    """
    path = Path(golden)
    if not is_bundled(path):
        return path, False
    target = user_golden()
    if (target / "questions.jsonl").is_file():
        return target, False
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".golden-", dir=target.parent))
    try:
        copy = staging / "golden"
        shutil.copytree(path, copy, symlinks=False)
        _make_writable(copy)
        try:
            os.rename(copy, target)
        except OSError:
            if not (target / "questions.jsonl").is_file():
                raise
            return target, False  # another process made it first
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target, True


def _make_writable(folder: Path) -> None:
    """Add the owner's write bit to a copied tree (the installed files may be read-only)."""
    for root, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            item = Path(root) / name
            item.chmod(item.stat().st_mode | stat.S_IWUSR)
    folder.chmod(folder.stat().st_mode | stat.S_IWUSR)


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
