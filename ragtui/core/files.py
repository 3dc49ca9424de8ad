"""Safe file writes: one atomic-write helper and one lock helper, used by everything that writes.

``atomic_writer`` writes a temporary file with a unique name in the target's folder, fsyncs it,
renames it over the target and fsyncs the folder, so a reader sees the old file or the new one,
never half of either, and the new name survives a crash. ``locked`` holds an exclusive ``flock``
on a file and makes sure that the file locked is still the one the path names: another process
may have renamed a new file over it (an atomic write) while this one waited for the lock.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["NOT_WRITABLE", "atomic_writer", "fsync_folder", "locked", "write_all", "write_atomic"]


def fsync_folder(folder: str | Path) -> None:
    """Flush a folder's entries to disk, so a file created or renamed in it survives a crash."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written (a short write would leave a torn line)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _create_temporary(path: Path) -> tuple[int, Path]:
    """A new, empty file beside ``path`` with a name no other writer (process or thread) uses."""
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
        try:
            # 0o666 less the umask, as a plain open() would create it.
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:  # pragma: no cover - 64 random bits
            continue


@contextlib.contextmanager
def atomic_writer(path: str | Path, mode: int | None = None) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new content into; on a normal exit it replaces ``path`` atomically.

    The file mode is ``mode`` if given, else the mode of the file replaced, else the default a new
    file gets. On an exception nothing is replaced and the temporary file is removed.
    """
    target = Path(path)
    fd, tmp = _create_temporary(target)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            keep = mode
            if keep is None:
                with contextlib.suppress(FileNotFoundError):
                    keep = target.stat().st_mode & 0o7777
            if keep is not None:
                os.fchmod(out.fileno(), keep)
            os.fsync(out.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_folder(target.parent)


def write_atomic(path: str | Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically (see ``atomic_writer``)."""
    with atomic_writer(path, mode) as out:
        out.write(data)


@contextlib.contextmanager
def locked(path: str | Path) -> Iterator[int]:
    """Open ``path`` (created if missing) read-write and hold an exclusive lock on it; yields the descriptor.

    A process that opened the file just before another one renamed a new file over it would lock
    (and write to) the old, unlinked inode: so after taking the lock the open file must still be the
    one ``path`` names, else the lock is dropped and taken again on the new file. Errors opening the
    file are the ``OSError`` of ``os.open``.
    """
    target = Path(path)
    while True:
        fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            try:
                now: os.stat_result | None = os.stat(target)
            except FileNotFoundError:
                now = None
        except BaseException:
            os.close(fd)
            raise
        if now is not None and (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino):
            break
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    try:
        yield fd
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


#: The errors of opening a file that mean "this file or folder may not be written".
NOT_WRITABLE = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
