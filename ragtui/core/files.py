"""Safe file access: one atomic-write helper, one lock helper, and one reader that refuses what is no file.

``atomic_writer`` writes a temporary file with a unique name in the target's folder, fsyncs it,
renames it over the target and fsyncs the folder, so a reader sees the old file or the new one,
never half of either, and the new name survives a crash. ``locked`` holds an exclusive ``flock``
on a file and makes sure that the file locked is still the one the path names: another process
may have renamed a new file over it (an atomic write) while this one waited for the lock.
``read_regular`` reads a file only when it is a regular file: a FIFO would block the reader
forever, a device never ends. ``check_writable`` refuses a folder that must not be written, counting the
mode bits too, as root ignores them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from ragtui.core.errors import InputError

__all__ = [
    "NOT_WRITABLE",
    "NotRegularFileError",
    "ReadOnlyFolderError",
    "atomic_writer",
    "check_regular",
    "check_writable",
    "fsync_folder",
    "locked",
    "read_regular",
    "write_all",
    "write_atomic",
    "write_new",
]


def content_hash(*parts: str | bytes) -> str:
    """The one content hash of every cache key and fingerprint: SHA-1 (hex) of ``parts`` joined by
    NUL bytes, text as UTF-8 (a lone surrogate kept, as a file name may hold one)."""
    digest = hashlib.sha1()
    for i, part in enumerate(parts):
        if i:
            digest.update(b"\0")
        digest.update(part if isinstance(part, bytes) else part.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


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


def write_new(path: str | Path, data: bytes, mode: int = 0o644) -> None:
    """Create ``path`` holding ``data``, whole or not at all; FileExistsError if it exists (it is never replaced).

    The data is written and fsynced under a temporary name, then hard-linked to ``path``: a link,
    unlike a rename, fails when the name is taken, so a backup can never overwrite another.
    """
    target = Path(path)
    fd, tmp = _create_temporary(target)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        try:
            os.link(tmp, target)
        except OSError as exc:
            if exc.errno not in _NO_LINKS:
                raise
            _write_exclusive(target, data, mode)  # a file system without hard links
    finally:
        tmp.unlink(missing_ok=True)
    fsync_folder(target.parent)


#: The errors of ``os.link`` on a file system that has no hard links.
_NO_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK})


def _write_exclusive(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` (FileExistsError if it exists) and write ``data`` to it, fsynced."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def locked(path: str | Path, shared: bool = False) -> Iterator[int]:
    """Open ``path`` (created if missing) read-write and hold an exclusive lock on it (``shared``: a shared one); yields the descriptor.

    A process that opened the file just before another one renamed a new file over it would lock
    (and write to) the old, unlinked inode: so after taking the lock the open file must still be the
    one ``path`` names, else the lock is dropped and taken again on the new file. Errors opening the
    file are the ``OSError`` of ``os.open``.
    """
    target = Path(path)
    while True:
        fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
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


#: How a file that is not a regular one is named in messages, by its ``stat`` type.
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class NotRegularFileError(InputError):
    """A path that should name a file names a FIFO, a device, a socket or a folder."""


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, words in _KINDS:
        if test(mode):
            return words
    return "not a regular file"  # pragma: no cover - every type is listed above


def _refuse(path: str | Path, mode: int) -> NotRegularFileError:
    return NotRegularFileError(path, f"{file_kind(mode)}, not a regular file")


def check_regular(path: str | Path) -> None:
    """Raise ``NotRegularFileError`` unless ``path`` (links followed) is a regular file; ``OSError`` if it cannot be looked at.

    For a path handed to a library that opens it itself; reading it here is better (``read_regular``).
    """
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise _refuse(path, mode)


def read_regular(
    path: str | Path,
    check: Callable[[os.stat_result], None] | None = None,
    limit: int | None = None,
) -> bytes:
    """The bytes of ``path`` if it is a regular file, else ``NotRegularFileError``; never blocks on a
    FIFO, and with ``limit`` never holds more than that many bytes (``TooLargeError`` for a bigger
    file, or one that grows past it while it is read).

    The file is opened non-blocking (opening a FIFO for reading then returns at once) and checked
    with ``fstat`` on the descriptor read, so it cannot be swapped between the check and the read;
    ``check``, when given, is called with that status before anything is read (it raises to refuse).
    Errors opening or reading it are the ``OSError`` of ``os.open`` (FileNotFoundError and so on).
    """
    mode = os.stat(path).st_mode  # not opened at all when it is no file (a tape, a terminal)
    if not stat.S_ISREG(mode):
        raise _refuse(path, mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise _refuse(path, status.st_mode)
        if check is not None:
            check(status)
        if limit is not None and status.st_size > limit:
            raise TooLargeError(path, _over(limit))
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            raw = handle.read() if limit is None else handle.read(limit + 1)
        if limit is not None and len(raw) > limit:
            raise TooLargeError(path, _over(limit))
        return raw
    finally:
        os.close(fd)


class TooLargeError(InputError):
    """A file over the size ragtui reads of its kind (``read_regular``'s ``limit``)."""


def _over(limit: int) -> str:
    size = f"{limit // 1048576} MB" if limit >= 1048576 else f"{limit // 1024} KB"
    return f"over {size}, more than a file of this kind holds: not read"


class ReadOnlyFolderError(InputError):
    """A folder that must not be written: read-only by its mode bits, its permissions or its mount."""


def check_writable(folder: str | Path, what: str = "folder") -> None:
    """Raise ``ReadOnlyFolderError`` (``FOLDER: the WHAT is read-only; nothing was written``) unless files may be written into ``folder``.

    The mode bits count as well as ``os.access``: a folder made read-only on purpose (``chmod
    555``) is respected even by root, for whom ``os.access`` always says yes. A folder that does not
    exist yet is judged by the first parent that does (it would be made there).
    """
    target = Path(folder)
    while not target.exists() and target != target.parent:
        target = target.parent
    try:
        mode = target.stat().st_mode
    except OSError as exc:
        raise ReadOnlyFolderError(
            target, f"the {what} cannot be looked at ({exc.strerror}); nothing was written"
        ) from None
    if not stat.S_ISDIR(mode):
        raise ReadOnlyFolderError(target, f"the {what} is not a folder; nothing was written")
    if not os.access(target, os.W_OK) or not mode & 0o222:
        raise ReadOnlyFolderError(target, f"the {what} is read-only; nothing was written")


@contextlib.contextmanager
def folder_lock(folder: Path, shared: bool) -> Iterator[None]:
    """A cache folder's lock (its ``.lock`` file): exclusive to write, creating the folder; shared
    to read, and none to read a folder that cannot hold one (read-only, or not there yet: a cache
    nobody can write has no writer to wait for)."""
    with contextlib.ExitStack() as stack:
        if not shared:
            folder.mkdir(parents=True, exist_ok=True)
            stack.enter_context(locked(folder / ".lock"))
        elif folder.is_dir():
            with contextlib.suppress(OSError):
                stack.enter_context(locked(folder / ".lock", shared=True))
        yield
