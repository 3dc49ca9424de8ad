"""The hand-label journal ``labels.jsonl``: append-only, each line flushed and fsynced under a lock."""

from __future__ import annotations

import contextlib
import fcntl
import getpass
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import orjson

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
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def parse_label(obj: dict, path: Path, line: int) -> Label:
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
        self._identity: tuple[int, int] | None = None
        self.load()

    @property
    def read_only(self) -> bool:
        """True when the journal (or its folder, for a new journal) cannot be written or has no write bits.

        The mode bits count too, so a file made read-only on purpose is respected even by root.
        """
        target = self.path if self.path.exists() else self.path.parent
        try:
            mode = target.stat().st_mode
        except OSError:
            return True
        return not os.access(target, os.W_OK) or not mode & 0o222

    def load(self) -> None:
        """Read the whole journal from the start."""
        self.current.clear()
        self.by_question.clear()
        self.history.clear()
        self.warnings.clear()
        self._read_offset = 0
        self._lines_seen = 0
        self._identity = None
        self._read_new()

    def _read_new(self) -> list[Label]:
        """Read lines appended since the last read; a torn last line is left for later with a warning."""
        if not self.path.exists():
            return []
        with open(self.path, "rb") as fh:
            st = os.fstat(fh.fileno())
            self._identity = (st.st_dev, st.st_ino)
            fh.seek(self._read_offset)
            data = fh.read()
        if not data:
            return []
        complete_end = data.rfind(b"\n") + 1
        tail = data[complete_end:]
        first_line = self._lines_seen + 1
        added: list[Label] = []
        for i, raw in enumerate(data[:complete_end].split(b"\n")[:-1]):
            added.extend(self._parse_line(raw, first_line + i))
        self._read_offset += complete_end
        self._lines_seen += data.count(b"\n", 0, complete_end)
        if tail.strip():
            torn_line = self._lines_seen + 1
            if _is_json_object(tail):
                # A whole last line without its newline (an editor did it): valid, kept.
                added.extend(self._parse_line(tail, torn_line))
                self._read_offset += len(tail)
                self._lines_seen += 1
            else:
                self.warnings.append(
                    f"{self.path}:{torn_line}: torn last line (partial write) ignored; "
                    "it is repaired on the next write"
                )
        return added

    def _parse_line(self, raw: bytes, number: int) -> list[Label]:
        if not raw.strip():
            return []
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise InputError(self.path, f"malformed JSON ({exc.args[0].split(':')[0]})", number) from None
        if not isinstance(obj, dict):
            raise InputError(self.path, "expected a JSON object", number)
        label = parse_label(obj, self.path, number)
        self._apply(label)
        return [label]

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
        """Pick up lines another process appended (or the whole file if it was replaced); returns them."""
        if not self.path.exists():
            if self.history:
                self.load()
            return []
        st = self.path.stat()
        if self._identity != (st.st_dev, st.st_ino) or st.st_size < self._read_offset:
            before = set(self.current.items())
            self.load()
            return [lab for key, lab in self.current.items() if (key, lab) not in before]
        if st.st_size == self._read_offset:
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
            (question, chunk, previous.grade if previous else None, previous.chunk_sha1 if previous else chunk_sha1)
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
        if self.read_only:
            raise ReadOnlyError(f"{self.path}: the label journal is read-only; the change was not made")
        if grade is not None and not MIN_GRADE <= grade <= MAX_GRADE:
            raise ValueError(f"grade {grade} out of range {MIN_GRADE}..{MAX_GRADE}")
        label = Label(question, chunk, grade, chunk_sha1, now_iso(), self.annotator)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _open_locked(self.path) as fd:
            _repair_tail(fd)
            os.lseek(fd, 0, os.SEEK_END)
            os.write(fd, label.to_json() + b"\n")
            os.fsync(fd)
        # Pick up whatever others appended before our line, then our own.
        self.refresh()
        return label

    def compact(self, backup_suffix: str = ".bak") -> Path:
        """Rewrite the journal to its current state atomically (temp file, fsync, rename), keeping a backup."""
        backup = self.path.with_name(self.path.name + backup_suffix)
        with _open_locked(self.path):
            self.load()
            _write_synced(backup, self.path.read_bytes())
            lines = [lab.to_json() + b"\n" for lab in sorted(self.current.values(), key=lambda x: x.line)]
            tmp = self.path.with_name(self.path.name + ".tmp")
            _write_synced(tmp, b"".join(lines))
            os.replace(tmp, self.path)
            _fsync_dir(self.path.parent)
        self.load()
        return backup


def _is_json_object(raw: bytes) -> bool:
    try:
        return isinstance(orjson.loads(raw), dict)
    except orjson.JSONDecodeError:
        return False


@contextlib.contextmanager
def _open_locked(path: Path) -> Iterator[int]:
    """Open ``path`` and hold an exclusive lock on it, retrying if it was replaced (compacted) meanwhile."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            st = os.fstat(fd)
            now = os.stat(path)
        except FileNotFoundError:
            now = None
        if now is not None and (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino):
            break
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    try:
        yield fd
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _repair_tail(fd: int) -> None:
    """Cut a torn last line (a killed writer's partial line); end a whole unterminated line with a newline."""
    size = os.fstat(fd).st_size
    if not size:
        return
    start = max(0, size - 65536)
    os.lseek(fd, start, os.SEEK_SET)
    tail = os.read(fd, size - start)
    if tail.endswith(b"\n"):
        return
    cut = tail.rfind(b"\n") + 1
    if cut == 0 and start > 0:
        return  # a single line longer than 64 KiB: leave it to the reader's error
    if _is_json_object(tail[cut:]):
        os.lseek(fd, 0, os.SEEK_END)
        os.write(fd, b"\n")
    else:
        os.ftruncate(fd, start + cut)


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
