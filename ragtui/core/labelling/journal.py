"""The hand-label journal ``labels.jsonl``: append-only, each line flushed and fsynced under a lock."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import getpass
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ragtui.core.data.paths import is_bundled, user_golden
from ragtui.core.errors import InputError

#: Hand grades are whole numbers in this range (the digit keys of the app).
MIN_GRADE = 0
MAX_GRADE = 9


class ReadOnlyError(OSError):
    """The journal cannot be written: the edit is refused, not dropped."""


@dataclass(frozen=True, slots=True)
class Label:
    """One journal line: the grade a person gave a chunk for a question (None removes it)."""

    question: str
    chunk: str
    grade: int | None
    chunk_sha1: str
    at: str
    annotator: str = ""
    line: int = 0

    def to_json(self) -> bytes:
        """The journal line, without the trailing newline."""
        obj: dict[str, object] = {
            "question": self.question,
            "chunk": self.chunk,
            "grade": self.grade,
            "chunk_sha1": self.chunk_sha1,
            "at": self.at,
        }
        if self.annotator:
            obj["annotator"] = self.annotator
        return orjson.dumps(obj)


def default_annotator() -> str:
    """The login name, used when no ``--annotator`` is given."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def now_iso() -> str:
    """The current time in ISO 8601, UTC, to the millisecond."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def parse_label(obj: dict[str, Any], path: Path, line: int) -> Label:
    """Validate one journal object."""
    for key in ("question", "chunk"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            raise InputError(path, f"'{key}' must be a non-empty string", line)
    if "grade" not in obj:
        raise InputError(path, "missing field 'grade'", line)
    grade = obj["grade"]
    if grade is not None and (isinstance(grade, bool) or not isinstance(grade, int)):
        raise InputError(path, f"'grade' must be a whole number or null, got {grade!r}", line)
    if grade is not None and not MIN_GRADE <= grade <= MAX_GRADE:
        raise InputError(path, f"grade {grade} out of range {MIN_GRADE}..{MAX_GRADE}", line)
    sha1 = obj.get("chunk_sha1", "")
    at = obj.get("at", "")
    annotator = obj.get("annotator", "")
    if not isinstance(sha1, str) or not isinstance(at, str) or not isinstance(annotator, str):
        raise InputError(path, "'chunk_sha1', 'at' and 'annotator' must be strings", line)
    return Label(obj["question"], obj["chunk"], grade, sha1, at, annotator, line)


class LabelJournal:
    """The journal on disk and its current state: the last line for each (question, chunk) wins."""

    def __init__(self, path: str | Path, annotator: str | None = None) -> None:
        self.path = Path(path)
        self.annotator = annotator if annotator is not None else default_annotator()
        #: Current hand grades, (question, chunk) -> the last label line for that pair.
        self.current: dict[tuple[str, str], Label] = {}
        #: The same labels by question: question -> chunk -> label.
        self.by_question: dict[str, dict[str, Label]] = {}
        #: Every line read or written, in journal order.
        self.history: list[Label] = []
        #: Problems that did not stop loading (a torn last line).
        self.warnings: list[str] = []
        self._undo: list[tuple[str, str, int | None, str]] = []
        self._read_offset = 0
        self._lines_seen = 0
        # The journal file last read, kept open: while we hold it its inode number cannot be reused,
        # so "the path still names the file we read" is a reliable test (a bare (dev, inode) pair is
        # not: after two compactions a new file can get the old file's inode number).
        self._file: BinaryIO | None = None
        # The last line read had no newline yet; the newline a writer adds later is not a new line.
        self._pending_newline = False
        self.load()

    @property
    def read_only(self) -> bool:
        """True when the journal or its folder cannot be written or has no write bits (see ``read_only_reason``)."""
        return self.read_only_reason is not None

    @property
    def read_only_reason(self) -> str | None:
        """Why edits are refused (the journal or its folder is read-only), or None when they are allowed.

        The mode bits count too, so a file or folder made read-only on purpose is respected even by
        root, for whom ``os.access`` always says yes.
        """
        journal = self.path
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

    def move_to(self, path: str | Path) -> None:
        """Read and write the journal at ``path`` from now on (a copy of this one); the undo stack is kept."""
        self.path = Path(path)
        self.load()

    def load(self) -> None:
        """Read the whole journal from the start."""
        self._close_file()
        self._reset()
        self._read_new()

    def close(self) -> None:
        """Let go of the journal file kept open for reading (reading again reopens it)."""
        self._close_file()

    def __del__(self) -> None:
        self._close_file()

    def _close_file(self) -> None:
        file, self._file = getattr(self, "_file", None), None
        if file is not None:
            file.close()

    def _replaced(self) -> bool:
        """Whether the path no longer names the file we read (replaced by a compaction, or removed)."""
        if self._file is None:
            return True
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            return True
        held = os.fstat(self._file.fileno())
        return (held.st_dev, held.st_ino) != (now.st_dev, now.st_ino)

    def _read_new(self) -> list[Label]:
        """Read lines appended since the last read; a torn last line is left for later with a warning.

        If the file was replaced (compacted by another process) or cut shorter since the last read,
        it is read again from the start.
        """
        if self._replaced():
            try:
                file = open(self.path, "rb", buffering=0)  # noqa: SIM115 (kept open: see _file)
            except FileNotFoundError:
                if self._file is not None:
                    self._close_file()
                    self._reset()
                return []
            if self._file is not None:
                self._close_file()
                self._reset()
            self._file = file
        assert self._file is not None
        fd = self._file.fileno()
        size = os.fstat(fd).st_size
        if size < self._read_offset:
            self._reset()
        data = _pread_all(fd, size - self._read_offset, self._read_offset)
        if self._pending_newline and data:
            if data.startswith(b"\n"):
                data = data[1:]
                self._read_offset += 1
            self._pending_newline = False
        if not data:
            return []
        complete_end = data.rfind(b"\n") + 1
        tail = data[complete_end:]
        first_line = self._lines_seen + 1
        # Parse everything first, apply after: a bad line raises with nothing applied, so a later
        # read (once the line is fixed) does not apply the lines before it twice.
        added = [
            label
            for i, raw in enumerate(data[:complete_end].split(b"\n")[:-1])
            if (label := self._parse_line(raw, first_line + i)) is not None
        ]
        lines_read = data.count(b"\n", 0, complete_end)
        torn_line = self._lines_seen + lines_read + 1
        whole_tail = bool(tail.strip()) and _is_json_object(tail)
        if whole_tail:
            # A whole last line without its newline (an editor did it): valid, kept.
            label = self._parse_line(tail, torn_line)
            if label is not None:
                added.append(label)
        for label in added:
            self._apply(label)
        self._read_offset += complete_end
        self._lines_seen += lines_read
        if whole_tail:
            self._read_offset += len(tail)
            self._lines_seen += 1
            self._pending_newline = True
        elif tail.strip():
            warning = (
                f"{self.path}:{torn_line}: torn last line (partial write) ignored; "
                "it is repaired on the next write"
            )
            if warning not in self.warnings:
                self.warnings.append(warning)
        return added

    def _reset(self) -> None:
        """Forget what was read, keeping the undo stack (the file is read again from the start)."""
        self.current.clear()
        self.by_question.clear()
        self.history.clear()
        self.warnings.clear()
        self._read_offset = 0
        self._lines_seen = 0
        self._pending_newline = False

    def _parse_line(self, raw: bytes, number: int) -> Label | None:
        """One journal line as a label (None for a blank line), or InputError naming the line."""
        if not raw.strip():
            return None
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise InputError(
                self.path, f"malformed JSON ({exc.args[0].split(':')[0]})", number
            ) from None
        if not isinstance(obj, dict):
            raise InputError(self.path, "expected a JSON object", number)
        return parse_label(obj, self.path, number)

    def _apply(self, label: Label) -> None:
        self.history.append(label)
        key = (label.question, label.chunk)
        if label.grade is None:
            self.current.pop(key, None)
            self.by_question.get(label.question, {}).pop(label.chunk, None)
        else:
            self.current[key] = label
            self.by_question.setdefault(label.question, {})[label.chunk] = label

    def refresh(self) -> list[Label]:
        """Pick up lines another process appended (or the whole file if it was replaced); returns them.

        Cheap when nothing changed (two ``stat`` calls), so an app may call it on a timer or on focus;
        for the questions whose numbers changed, use ``Workspace.refresh_labels``.
        """
        if self._replaced():
            if self._file is None:
                return self._read_new()  # nothing read yet (no file before): every line is new
            before = dict(self.current)
            self._read_new()
            # Read again from the start: report the pairs whose grade changed or that are new.
            return [
                lab
                for key, lab in self.current.items()
                if _same_grade(before.get(key), lab) is not True
            ]
        assert self._file is not None
        if os.fstat(self._file.fileno()).st_size == self._read_offset:
            return []
        return self._read_new()

    def grade_of(self, question: str, chunk: str) -> int | None:
        """The current hand grade of a pair, or None."""
        label = self.current.get((question, chunk))
        return label.grade if label else None

    def set_grade(self, question: str, chunk: str, grade: int | None, chunk_sha1: str) -> Label:
        """Write a grade (None removes it) to disk, fsynced, then apply it; the change can be undone."""
        previous = self.current.get((question, chunk))
        label = self._append(question, chunk, grade, chunk_sha1)
        self._undo.append(
            (
                question,
                chunk,
                previous.grade if previous else None,
                previous.chunk_sha1 if previous else chunk_sha1,
            )
        )
        return label

    def undo(self) -> Label | None:
        """Restore the pair changed last to its previous grade (written as a new line); None if nothing to undo."""
        if not self._undo:
            return None
        question, chunk, grade, sha1 = self._undo[-1]
        label = self._append(question, chunk, grade, sha1)
        self._undo.pop()
        return label

    @property
    def can_undo(self) -> bool:
        """Whether there is a change to undo."""
        return bool(self._undo)

    def _append(self, question: str, chunk: str, grade: int | None, chunk_sha1: str) -> Label:
        _refuse_bundled(self.path)
        reason = self.read_only_reason
        if reason is not None:
            raise ReadOnlyError(f"{reason}; the change was not made")
        label = Label(question, chunk, grade, chunk_sha1, now_iso(), self.annotator)
        line = label.to_json()
        # Never write a line that the loader would refuse: it would make the whole journal unreadable.
        try:
            parse_label(orjson.loads(line), self.path, 0)
        except InputError as exc:
            raise ValueError(exc.problem) from None
        created = not self.path.exists()
        if created:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        with _open_locked(self.path) as fd:
            _repair_tail(fd, self.path)
            os.lseek(fd, 0, os.SEEK_END)
            _write_all(fd, line + b"\n")
            os.fsync(fd)
        if created:
            _fsync_dir(self.path.parent)  # the new file's name must survive a crash too
        # Pick up whatever others appended before our line, then our own.
        self.refresh()
        return label

    def compact(self, backup_suffix: str = ".bak") -> Path:
        """Rewrite the journal to its current state atomically (temp file, fsync, rename), keeping a backup.

        Runs under the journal's lock, so no append is lost: a writer that opened the old file waits,
        then sees it was replaced and writes to the new one. Stale labels are kept (only lines that a
        later line for the same pair overrides, and removals, are dropped). Returns the backup's path.
        """
        if not self.path.is_file():
            raise InputError(self.path, "file not found")
        _refuse_bundled(self.path)
        reason = self.read_only_reason
        if reason is not None:
            raise ReadOnlyError(f"{reason}; the journal was not compacted")
        backup = self.path.with_name(self.path.name + backup_suffix)
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        with _open_locked(self.path) as fd:
            self.load()
            mode = os.fstat(fd).st_mode & 0o7777
            _replace_synced(backup, _read_fd(fd), mode)
            lines = [
                lab.to_json() + b"\n" for lab in sorted(self.current.values(), key=lambda x: x.line)
            ]
            try:
                _write_synced(tmp, b"".join(lines), mode)
                os.replace(tmp, self.path)
            finally:
                tmp.unlink(missing_ok=True)
            _fsync_dir(self.path.parent)
        self.load()
        return backup


def _refuse_bundled(path: Path) -> None:
    """Never write into the bundled golden set: a caller must first move to the user's copy."""
    if is_bundled(path.parent):
        raise ReadOnlyError(
            f"{path.parent}: the bundled golden set is never written "
            "(Workspace.writable_golden gives the user's copy); the change was not made"
        )


def _same_grade(before: Label | None, after: Label) -> bool | None:
    """Whether a pair's label kept its grade and chunk hash (None when the pair is new)."""
    if before is None:
        return None
    return (before.grade, before.chunk_sha1) == (after.grade, after.chunk_sha1)


def _is_json_object(raw: bytes) -> bool:
    try:
        return isinstance(orjson.loads(raw), dict)
    except orjson.JSONDecodeError:
        return False


@contextlib.contextmanager
def _open_locked(path: Path) -> Iterator[int]:
    """Open ``path`` and hold an exclusive lock on it, retrying if it was replaced (compacted) meanwhile.

    A writer that opened the file just before a compaction renamed a new one over it would otherwise
    append to the old, unlinked inode: after taking the lock, the open file must still be ``path``.
    """
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise ReadOnlyError(
                    f"{path}: cannot write the label journal ({exc.strerror}); the change was not made"
                ) from None
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            st = os.fstat(fd)
            try:
                now = os.stat(path)
            except FileNotFoundError:
                now = None
        except BaseException:
            os.close(fd)
            raise
        if now is not None and (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino):
            break
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    try:
        yield fd
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _pread_all(fd: int, length: int, offset: int) -> bytes:
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


def _read_fd(fd: int) -> bytes:
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


def _write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written (a short write would leave a torn line)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


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
    if _is_json_object(tail):
        os.lseek(fd, 0, os.SEEK_END)
        _write_all(fd, b"\n")
        return
    torn = path.with_name(path.name + ".torn")
    with open(torn, "ab") as out:
        out.write(tail + b"\n")
        out.flush()
        os.fsync(out.fileno())
    os.ftruncate(fd, cut)


def _write_synced(path: Path, data: bytes, mode: int = 0o644) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(fd, mode)
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace_synced(path: Path, data: bytes, mode: int) -> None:
    """Write ``path`` atomically: a temporary file, fsynced, renamed over it."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        _write_synced(tmp, data, mode)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
