"""The label journal's file: opening it for reading (a regular file only), whether it may be written,
its lock, appending one line durably (a torn last line repaired first, a failed write cut back), and
the byte-level reads and backups a compaction needs.
"""

from __future__ import annotations

import contextlib
import os
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from ragtui.core.data.paths import is_bundled, user_golden
from ragtui.core.errors import InputError
from ragtui.core.files import NOT_WRITABLE, file_kind, fsync_folder, locked, write_all, write_new
from ragtui.core.labelling.labels import is_json_object

__all__ = [
    "UTF8_BOM",
    "ReadOnlyError",
    "WriteFailedError",
    "append_line",
    "check_regular",
    "lock_journal",
    "open_regular",
    "pread_all",
    "read_fd",
    "read_only_reason",
    "refuse_bundled",
    "write_backup",
]


class ReadOnlyError(OSError):
    """The journal cannot be written: the edit is refused, not dropped."""


class WriteFailedError(OSError):
    """Writing a line failed (a full disk, an I/O error): the journal was cut back to what it held
    before, so no partial line is left, and the change was not made."""


#: A UTF-8 byte-order mark, which some editors put before a file's first line: read past, not a line.
UTF8_BOM = b"\xef\xbb\xbf"


def check_regular(path: Path, what: str = "the label journal") -> bool:
    """Whether ``path`` exists; InputError when it is not a regular file (a FIFO would block every read)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise InputError(path, f"cannot read {what} ({exc.strerror})") from None
    if not stat.S_ISREG(mode):
        raise InputError(path, f"{what} is {file_kind(mode)}, not a regular file")
    return True


def open_regular(path: Path) -> BinaryIO | None:
    """``path`` opened for reading (None when missing), refused with an InputError unless it is a regular file.

    Opened without blocking: opening a FIFO for reading would otherwise wait for a writer forever.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(path, f"cannot read the label journal ({exc.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise InputError(path, f"the label journal is {file_kind(mode)}, not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb", buffering=0)


def read_only_reason(path: Path) -> str | None:
    """Why edits of the journal at ``path`` are refused (it or its folder is read-only), or None.

    The mode bits count too, so a file or folder made read-only on purpose is respected even by
    root, for whom ``os.access`` always says yes.
    """
    journal = path
    if is_bundled(journal.parent):
        # The bundled set's journal is never written: the first change moves it to the user's
        # copy (Workspace.writable_golden), so that is where writing must be possible.
        journal = user_golden() / journal.name
    folder = journal.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # a journal in a folder not made yet: the first one that exists
    for target, what in (
        (journal, "the label journal"),
        (folder, "the label journal's folder"),
    ):
        if target is journal and not target.exists():
            continue
        try:
            mode = target.stat().st_mode
        except OSError as exc:
            return f"{target}: {what} cannot be read ({exc.strerror})"
        if not os.access(target, os.W_OK) or not mode & 0o222:
            return f"{target}: {what} is read-only"
    return None


def refuse_bundled(path: Path) -> None:
    """Never write into the bundled golden set: a caller must first move to the user's copy."""
    if is_bundled(path.parent):
        raise ReadOnlyError(
            f"{path.parent}: the bundled golden set is never written "
            "(Workspace.writable_golden gives the user's copy); the change was not made"
        )


def lock_journal(stack: contextlib.ExitStack[bool | None], path: Path, refused: str) -> int:
    """Take the journal's lock for the rest of ``stack``; a file or folder that may not be written
    is a ReadOnlyError (``refused`` says what was not done)."""
    try:
        fd = stack.enter_context(locked(path))
    except OSError as exc:
        if exc.errno in NOT_WRITABLE:
            raise ReadOnlyError(
                f"{path}: cannot write the label journal ({exc.strerror}); {refused}"
            ) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # made a FIFO since it was checked: never write or read it
        raise ReadOnlyError(
            f"{path}: the label journal is {file_kind(mode)}, not a regular file; {refused}"
        )
    return fd


def append_line(path: Path, line: bytes) -> None:
    """Append ``line`` and a newline under the journal's lock, fsynced before this returns (the
    folder too when the journal is new). A torn last line is repaired first; a write that fails
    is cut back (WriteFailedError), so the journal holds what it held before."""
    created = not path.exists()
    if created:
        path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        fd = lock_journal(stack, path, "the change was not made")
        size = os.fstat(fd).st_size
        keep = size
        try:
            _repair_tail(fd, path)
            # A torn line the repair cut stays cut (it is in the .torn file); a newline it
            # added to a whole last line is taken back with ours.
            keep = min(size, os.fstat(fd).st_size)
            os.lseek(fd, 0, os.SEEK_END)
            write_all(fd, line + b"\n")
            os.fsync(fd)
        except OSError as exc:
            raise _write_failed(path, fd, keep, exc, created) from None
    if created:
        fsync_folder(path.parent)  # the new file's name must survive a crash too


def _write_failed(path: Path, fd: int, size: int, exc: OSError, created: bool) -> WriteFailedError:
    """Cut the journal back to ``size`` bytes (what it held before the failed write) and fsync
    it; a journal this write created is removed again. The error to raise: one line."""
    why = exc.strerror or str(exc)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
        if created and size == 0:
            path.unlink(missing_ok=True)
    except OSError as again:
        return WriteFailedError(
            f"{path}: cannot write the label journal ({why}), and cutting the partial "
            f"line back failed too ({again.strerror or again}); the change was not made"
        )
    return WriteFailedError(
        f"{path}: cannot write the label journal ({why}); the journal was left as it "
        "was and the change was not made"
    )


def write_backup(path: Path, data: bytes, mode: int) -> Path:
    """``data`` in a new file ``<journal>.<UTC time>.bak`` beside the journal, never replacing an existing file."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    for n in range(1, 1000):
        backup = path.with_name(f"{path.name}.{stamp}{'' if n == 1 else f'-{n}'}.bak")
        try:
            write_new(backup, data, mode)
        except FileExistsError:
            continue
        return backup
    raise InputError(path, "cannot name a new backup (999 exist for this instant)")


def pread_all(fd: int, length: int, offset: int) -> bytes:
    """``length`` bytes from ``offset`` (fewer if the file is shorter)."""
    chunks = []
    while length > 0:
        chunk = os.pread(fd, min(length, 1 << 20), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
        length -= len(chunk)
    return b"".join(chunks)


def read_fd(fd: int) -> bytes:
    """The whole content of an open file."""
    size = os.fstat(fd).st_size
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while size > 0:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _last_newline_end(fd: int, size: int) -> int:
    """The offset just past the file's last newline (0 if there is none), reading backwards."""
    end = size
    while end > 0:
        start = max(0, end - 65536)
        os.lseek(fd, start, os.SEEK_SET)
        block = os.read(fd, end - start)
        at = block.rfind(b"\n")
        if at >= 0:
            return start + at + 1
        end = start
    return 0


def _repair_tail(fd: int, path: Path) -> None:
    """Cut a torn last line (a killed writer's partial line); end a whole unterminated line with a newline.

    The cut bytes are appended to ``<journal>.torn`` first, so even a hand-edited last line that lost
    its end is never silently thrown away.
    """
    size = os.fstat(fd).st_size
    if not size:
        return
    os.lseek(fd, size - 1, os.SEEK_SET)
    if os.read(fd, 1) == b"\n":
        return
    cut = _last_newline_end(fd, size)
    os.lseek(fd, cut, os.SEEK_SET)
    tail = os.read(fd, size - cut)
    if is_json_object(tail[len(UTF8_BOM) :] if cut == 0 and tail.startswith(UTF8_BOM) else tail):
        os.lseek(fd, 0, os.SEEK_END)
        write_all(fd, b"\n")
        return
    torn = path.with_name(path.name + ".torn")
    with open(torn, "ab") as out:
        out.write(tail + b"\n")
        out.flush()
        os.fsync(out.fileno())
    os.ftruncate(fd, cut)
