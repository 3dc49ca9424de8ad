"""The hand-label journal ``labels.jsonl``: append-only, each line flushed and fsynced under a lock.

Several people may grade the same pair. The journal keeps, per (question, chunk), each annotator's
latest label and the latest adjudicated label (a line with ``"adjudicated": true``); the grade that
counts is the adjudicated one, else the only annotator's, else the latest annotator's, and the pair
is *disputed* when the annotators' latest grades differ and nobody adjudicated (see ``PairLabels``).
A line that cannot be read (another writer's bad line) is skipped and reported once, never applied.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ragtui.core.data.paths import is_bundled, user_golden
from ragtui.core.errors import InputError
from ragtui.core.files import (
    NOT_WRITABLE,
    file_kind,
    fsync_folder,
    locked,
    write_all,
    write_atomic,
    write_new,
)

#: Hand grades are whole numbers in this range (the digit keys of the app).
MIN_GRADE = 0
MAX_GRADE = 9


class ReadOnlyError(OSError):
    """The journal cannot be written: the edit is refused, not dropped."""


class WriteFailedError(OSError):
    """Writing a line failed (a full disk, an I/O error): the journal was cut back to what it held
    before, so no partial line is left, and the change was not made."""


#: A UTF-8 byte-order mark, which some editors put before a file's first line: read past, not a line.
UTF8_BOM = b"\xef\xbb\xbf"


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
    #: An adjudicated grade: it wins over every annotator's grade of the pair.
    adjudicated: bool = False

    def to_json(self) -> bytes:
        """The journal line, without the trailing newline.

        A name that was not UTF-8 (a file name or login name, kept by Python as lone surrogates)
        is written with JSON's ``\\udcXX`` escapes, which read back to the very same string.
        """
        obj: dict[str, object] = {
            "question": self.question,
            "chunk": self.chunk,
            "grade": self.grade,
            "chunk_sha1": self.chunk_sha1,
            "at": self.at,
        }
        if self.annotator:
            obj["annotator"] = self.annotator
        if self.adjudicated:
            obj["adjudicated"] = True
        try:
            return orjson.dumps(obj)
        except TypeError:  # orjson refuses lone surrogates; the standard library escapes them
            text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
            # Only a lone surrogate cannot be encoded, and "backslashreplace" writes it as \udcXX:
            # inside a JSON string that is exactly its escape.
            return text.encode("utf-8", "backslashreplace")


@dataclass(frozen=True, slots=True)
class BadLine:
    """A journal line that could not be read: skipped, never applied, left in the file."""

    path: str
    line: int
    problem: str

    @property
    def message(self) -> str:
        """The one-line warning ``file:line: problem (line skipped)``."""
        return InputError(self.path, f"{self.problem} (line skipped)", self.line).message


@dataclass(slots=True)
class PairLabels:
    """The current labels of one (question, chunk): each annotator's latest grade and the adjudicated one.

    A removal (``"grade": null``) by an annotator withdraws that annotator's grade only; an
    adjudicated removal withdraws the adjudication. ``applies`` (optional everywhere) leaves out
    labels that do not apply, such as labels on another chunk text.
    """

    annotators: dict[str, Label] = field(default_factory=dict)
    adjudicated: Label | None = None

    def labels(self) -> list[Label]:
        """Every current label of the pair, in journal order."""
        out = list(self.annotators.values())
        if self.adjudicated is not None:
            out.append(self.adjudicated)
        return sorted(out, key=lambda lab: lab.line)

    def _graders(self, applies: Callable[[Label], bool] | None) -> list[Label]:
        return [lab for lab in self.annotators.values() if applies is None or applies(lab)]

    def effective(self, applies: Callable[[Label], bool] | None = None) -> Label | None:
        """The label that counts: the adjudicated one, else the only annotator's, else the latest annotator's."""
        adjudicated = self.adjudicated
        if adjudicated is not None and (applies is None or applies(adjudicated)):
            return adjudicated
        graders = self._graders(applies)
        return max(graders, key=lambda lab: lab.line) if graders else None

    def grades(self, applies: Callable[[Label], bool] | None = None) -> dict[str, int]:
        """Each annotator's current grade of the pair (adjudication aside), by name."""
        return {lab.annotator: lab.grade for lab in self._graders(applies) if lab.grade is not None}

    def disputed(self, applies: Callable[[Label], bool] | None = None) -> bool:
        """Whether the annotators' current grades differ and no adjudicated grade settles it."""
        adjudicated = self.adjudicated
        if adjudicated is not None and (applies is None or applies(adjudicated)):
            return False
        return len(set(self.grades(applies).values())) > 1

    def state(self) -> tuple[object, ...]:
        """What numbers and dispute marks rest on (line numbers aside, which a compaction changes)."""
        adjudicated = self.adjudicated
        latest = self.effective()
        return (
            None if adjudicated is None else (adjudicated.grade, adjudicated.chunk_sha1),
            tuple(
                sorted(
                    (lab.annotator, lab.grade, lab.chunk_sha1) for lab in self.annotators.values()
                )
            ),
            latest.annotator if latest is not None else "",
        )


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
    """Validate one journal object; InputError names the line and the problem."""
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
    adjudicated = obj.get("adjudicated", False)
    if not isinstance(adjudicated, bool):
        raise InputError(path, f"'adjudicated' must be true or false, got {adjudicated!r}", line)
    return Label(obj["question"], obj["chunk"], grade, sha1, at, annotator, line, adjudicated)


#: A JSON escape of a lone surrogate (``\udc80``..``\udfff``), which orjson refuses to read.
_LONE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _loads(raw: bytes) -> Any:
    """One JSON value; lines holding a surrogate escape (a non-UTF-8 name, see ``Label.to_json``) are read by the standard library."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        if not _LONE_SURROGATE.search(raw):
            raise
        try:
            return json.loads(raw)
        except ValueError:
            pass
        raise


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


def _open_regular(path: Path) -> BinaryIO | None:
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


class LabelJournal:
    """The journal on disk and its current state: per pair each annotator's latest label, the adjudicated one, and the one that counts."""

    def __init__(self, path: str | Path, annotator: str | None = None) -> None:
        self.path = Path(path)
        self.annotator = annotator if annotator is not None else default_annotator()
        #: The label that counts for each labelled pair, (question, chunk) -> label (``PairLabels.effective``).
        self.current: dict[tuple[str, str], Label] = {}
        #: The same labels by question: question -> chunk -> label.
        self.by_question: dict[str, dict[str, Label]] = {}
        #: Every current label of every pair: question -> chunk -> its annotators' and adjudicated labels.
        self.pairs: dict[str, dict[str, PairLabels]] = {}
        #: Every line read or written, in journal order.
        self.history: list[Label] = []
        #: Problems that did not stop loading (a torn last line, a line that could not be read).
        self.warnings: list[str] = []
        #: The lines that could not be read (skipped, never applied), in journal order.
        self.bad_lines: list[BadLine] = []
        # Warnings already handed out by take_warnings: each is reported once, even when the
        # journal is read again from the start.
        self._reported: set[str] = set()
        self._undo: list[tuple[str, str, int | None, str, bool]] = []
        # Questions whose labels changed since take_touched was last called.
        self._touched: set[str] = set()
        # While reading from the start: what was read before (per question) and what was touched.
        self._before_restart: tuple[dict[str, object], set[str]] | None = None
        self._read_offset = 0
        self._lines_seen = 0
        # The last bytes read: when they change, the file was rewritten in place (a hand edit) and
        # is read again from the start instead of from an offset that no longer starts a line.
        self._seen_tail = b""
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
        self._read_new(restart=True)

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

    def changed_on_disk(self) -> bool:
        """Whether the journal may hold lines not read yet (it grew, shrank or was replaced): two ``stat`` calls."""
        if self._replaced():
            return self._file is not None or self.path.exists()
        assert self._file is not None
        return os.fstat(self._file.fileno()).st_size != self._read_offset

    def _read_new(self, restart: bool = False) -> list[Label]:
        """Read lines appended since the last read (``restart``: the whole file); a torn last line is left for later with a warning.

        If the file was replaced (compacted by another process), cut shorter or rewritten in place
        since the last read, it is read again from the start; then only the questions whose labels
        differ from before count as touched (see ``take_touched``). A line that cannot be read is
        skipped with a warning (``bad_lines``); the lines after it are read as usual.
        """
        self._before_restart = None
        try:
            if restart:
                self._restart()
            return self._read_lines()
        finally:
            if self._before_restart is not None:
                old_state, old_touched = self._before_restart
                self._before_restart = None
                new_state = _state(self.pairs)
                self._touched = old_touched | {
                    q
                    for q in old_state.keys() | new_state.keys()
                    if old_state.get(q) != new_state.get(q)
                }

    def _restart(self) -> None:
        """Forget what was read before reading from the start, remembering what it was (for ``take_touched``)."""
        if self._before_restart is None:
            self._before_restart = (_state(self.pairs), set(self._touched))
        self._reset()

    def _read_lines(self) -> list[Label]:
        if self._replaced():
            file = _open_regular(self.path)
            if file is None:
                if self._file is not None:
                    self._close_file()
                    self._restart()
                return []
            if self._file is not None:
                self._close_file()
                self._restart()
            self._file = file
        assert self._file is not None
        fd = self._file.fileno()
        size = os.fstat(fd).st_size
        if size < self._read_offset or (
            self._seen_tail
            and _pread_all(fd, len(self._seen_tail), self._read_offset - len(self._seen_tail))
            != self._seen_tail
        ):
            self._restart()
        data = _pread_all(fd, size - self._read_offset, self._read_offset)
        if self._read_offset == 0 and data.startswith(UTF8_BOM):
            # An editor's byte-order mark before the first line: read past it, the line is kept.
            data = data[len(UTF8_BOM) :]
            self._read_offset = len(UTF8_BOM)
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
            self._warn(
                f"{self.path}:{torn_line}: torn last line (partial write) ignored; "
                "it is repaired on the next write"
            )
        keep = min(self._read_offset, 64)
        self._seen_tail = _pread_all(fd, keep, self._read_offset - keep)
        return added

    def _reset(self) -> None:
        """Forget what was read, keeping the undo stack (the file is read again from the start)."""
        self.current.clear()
        self.by_question.clear()
        self.pairs.clear()
        self.history.clear()
        self.warnings.clear()
        self.bad_lines.clear()
        self._read_offset = 0
        self._lines_seen = 0
        self._seen_tail = b""
        self._pending_newline = False

    def _warn(self, warning: str) -> None:
        if warning not in self.warnings:
            self.warnings.append(warning)

    def take_warnings(self) -> list[str]:
        """The warnings not handed out before (each bad or torn line is reported once); a front end shows them."""
        new = [w for w in self.warnings if w not in self._reported]
        self._reported.update(new)
        return new

    def _parse_line(self, raw: bytes, number: int) -> Label | None:
        """One journal line as a label; None for a blank line, and for a bad one (recorded in ``bad_lines``)."""
        if not raw.strip():
            return None
        try:
            try:
                obj = _loads(raw)
            except orjson.JSONDecodeError as exc:
                raise InputError(
                    self.path, f"malformed JSON ({exc.args[0].split(':')[0]})", number
                ) from None
            if not isinstance(obj, dict):
                raise InputError(self.path, "expected a JSON object", number)
            return parse_label(obj, self.path, number)
        except InputError as exc:
            bad = BadLine(str(self.path), number, exc.problem)
            self.bad_lines.append(bad)
            self._warn(bad.message)
            return None

    def take_touched(self) -> set[str]:
        """The questions whose labels (the grade that counts, or an annotator's) changed since the last call."""
        touched, self._touched = self._touched, set()
        return touched

    def _apply(self, label: Label) -> None:
        self.history.append(label)
        question, chunk = label.question, label.chunk
        by_chunk = self.pairs.setdefault(question, {})
        pair = by_chunk.get(chunk)
        if pair is None:
            pair = by_chunk[chunk] = PairLabels()
        before = pair.state()
        if label.adjudicated:
            pair.adjudicated = label if label.grade is not None else None
        elif label.grade is None:
            pair.annotators.pop(label.annotator, None)
        else:
            pair.annotators[label.annotator] = label
        if pair.state() != before:
            self._touched.add(question)
        effective = pair.effective()
        key = (question, chunk)
        if effective is None:
            del by_chunk[chunk]
            if not by_chunk:
                del self.pairs[question]
            self.current.pop(key, None)
            self.by_question.get(question, {}).pop(chunk, None)
        else:
            self.current[key] = effective
            self.by_question.setdefault(question, {})[chunk] = effective

    def refresh(self) -> list[Label]:
        """Pick up lines another process appended (or the whole file if it was replaced); returns them.

        Cheap when nothing changed (two ``stat`` calls), so an app may call it on a timer or on focus;
        for the questions whose numbers changed, use ``Workspace.refresh_labels``. A bad line is
        skipped and put in ``warnings`` (``take_warnings`` hands each out once); nothing raises for it.
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

    def pair(self, question: str, chunk: str) -> PairLabels | None:
        """Every current label of a pair (each annotator's and the adjudicated one), or None when it has none."""
        return self.pairs.get(question, {}).get(chunk)

    def iter_pairs(self) -> Iterator[tuple[str, str, PairLabels]]:
        """Every labelled pair as (question, chunk, its labels)."""
        for question, by_chunk in self.pairs.items():
            for chunk, pair in by_chunk.items():
                yield question, chunk, pair

    def grade_of(self, question: str, chunk: str) -> int | None:
        """The current hand grade of a pair (the one that counts), or None."""
        label = self.current.get((question, chunk))
        return label.grade if label else None

    def disputed(self, question: str, chunk: str) -> bool:
        """Whether the annotators' current grades of a pair differ and no adjudicated grade settles it."""
        pair = self.pair(question, chunk)
        return pair is not None and pair.disputed()

    def set_grade(
        self,
        question: str,
        chunk: str,
        grade: int | None,
        chunk_sha1: str,
        adjudicate: bool = False,
    ) -> Label:
        """Write this annotator's grade (None withdraws it), or with ``adjudicate`` the adjudicated grade (None withdraws the adjudication), fsynced, then apply it; the change can be undone."""
        pair = self.pair(question, chunk)
        if pair is None:
            previous = None
        else:
            previous = pair.adjudicated if adjudicate else pair.annotators.get(self.annotator)
        label = self._append(question, chunk, grade, chunk_sha1, adjudicate)
        self._undo.append(
            (
                question,
                chunk,
                previous.grade if previous else None,
                previous.chunk_sha1 if previous else chunk_sha1,
                adjudicate,
            )
        )
        return label

    def undo(self) -> Label | None:
        """Restore what the last change replaced (this annotator's grade, or the adjudicated one), written as a new line; None if nothing to undo."""
        if not self._undo:
            return None
        question, chunk, grade, sha1, adjudicated = self._undo[-1]
        label = self._append(question, chunk, grade, sha1, adjudicated)
        self._undo.pop()
        return label

    @property
    def can_undo(self) -> bool:
        """Whether there is a change to undo."""
        return bool(self._undo)

    def _append(
        self, question: str, chunk: str, grade: int | None, chunk_sha1: str, adjudicated: bool
    ) -> Label:
        _refuse_bundled(self.path)
        try:
            check_regular(self.path)
        except InputError as exc:
            raise ReadOnlyError(f"{exc.message}; the change was not made") from None
        reason = self.read_only_reason
        if reason is not None:
            raise ReadOnlyError(f"{reason}; the change was not made")
        label = Label(
            question,
            chunk,
            grade,
            chunk_sha1,
            now_iso(),
            self.annotator,
            adjudicated=adjudicated,
        )
        line = label.to_json()
        # Never write a line that the loader would refuse: it would be skipped on every read.
        try:
            parse_label(_loads(line), self.path, 0)
        except InputError as exc:
            raise ValueError(exc.problem) from None
        created = not self.path.exists()
        if created:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as stack:
            fd = self._lock(stack, "the change was not made")
            size = os.fstat(fd).st_size
            keep = size
            try:
                _repair_tail(fd, self.path)
                # A torn line the repair cut stays cut (it is in the .torn file); a newline it
                # added to a whole last line is taken back with ours.
                keep = min(size, os.fstat(fd).st_size)
                os.lseek(fd, 0, os.SEEK_END)
                write_all(fd, line + b"\n")
                os.fsync(fd)
            except OSError as exc:
                raise self._write_failed(fd, keep, exc, created) from None
        if created:
            fsync_folder(self.path.parent)  # the new file's name must survive a crash too
        # Pick up whatever others appended before our line, then our own (a bad line of theirs is
        # skipped with a warning: our line is on disk and must be applied).
        self.refresh()
        return label

    def _write_failed(self, fd: int, size: int, exc: OSError, created: bool) -> WriteFailedError:
        """Cut the journal back to ``size`` bytes (what it held before the failed write) and fsync
        it; a journal this write created is removed again. The error to raise: one line."""
        why = exc.strerror or str(exc)
        try:
            os.ftruncate(fd, size)
            os.fsync(fd)
            if created and size == 0:
                self.path.unlink(missing_ok=True)
        except OSError as again:
            return WriteFailedError(
                f"{self.path}: cannot write the label journal ({why}), and cutting the partial "
                f"line back failed too ({again.strerror or again}); the change was not made"
            )
        return WriteFailedError(
            f"{self.path}: cannot write the label journal ({why}); the journal was left as it "
            "was and the change was not made"
        )

    def compact(self) -> Path | None:
        """Rewrite the journal to its current state atomically (temp file, fsync, rename), keeping a backup.

        Kept: each annotator's current label of every pair and the adjudicated one, stale labels
        included; dropped: lines a later line of the same annotator (or adjudication) overrides,
        and removals. The old journal is first written to a new ``labels.jsonl.<time>.bak`` that
        never replaces an earlier backup. A journal that is compact already is left alone (None is
        returned, no backup made); one with a line that cannot be read is refused (compaction
        would drop that line), naming it. Runs under the journal's lock, so no append is lost: a
        writer that opened the old file waits, then sees it was replaced and writes to the new one.
        Returns the backup's path.
        """
        if not check_regular(self.path):
            raise InputError(self.path, "file not found")
        _refuse_bundled(self.path)
        reason = self.read_only_reason
        if reason is not None:
            raise ReadOnlyError(f"{reason}; the journal was not compacted")
        with contextlib.ExitStack() as stack:
            fd = self._lock(stack, "the journal was not compacted")
            self.load()
            if self.bad_lines:
                bad = self.bad_lines[0]
                raise InputError(
                    self.path,
                    f"{bad.problem}: fix or delete this line first (compaction would drop it); "
                    "the journal was not compacted",
                    bad.line,
                )
            old = _read_fd(fd)
            kept = sorted(
                (lab for _, _, pair in self.iter_pairs() for lab in pair.labels()),
                key=lambda lab: lab.line,
            )
            new = b"".join(lab.to_json() + b"\n" for lab in kept)
            if new == old:
                return None
            mode = os.fstat(fd).st_mode & 0o7777
            backup = _write_backup(self.path, old, mode)
            write_atomic(self.path, new, mode)
        self.load()
        return backup

    def _lock(self, stack: contextlib.ExitStack[bool | None], refused: str) -> int:
        """Take the journal's lock for the rest of ``stack``; a file or folder that may not be written is a ReadOnlyError."""
        try:
            fd = stack.enter_context(locked(self.path))
        except OSError as exc:
            if exc.errno in NOT_WRITABLE:
                raise ReadOnlyError(
                    f"{self.path}: cannot write the label journal ({exc.strerror}); {refused}"
                ) from None
            raise
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # made a FIFO since it was checked: never write or read it
            raise ReadOnlyError(
                f"{self.path}: the label journal is {file_kind(mode)}, not a regular file; {refused}"
            )
        return fd


def _write_backup(path: Path, data: bytes, mode: int) -> Path:
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


def _state(pairs: dict[str, dict[str, PairLabels]]) -> dict[str, object]:
    """Each labelled question's labels as ``PairLabels.state`` sees them, chunk by chunk."""
    return {
        question: sorted((chunk, pair.state()) for chunk, pair in by_chunk.items())
        for question, by_chunk in pairs.items()
    }


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
        return isinstance(_loads(raw), dict)
    except orjson.JSONDecodeError:
        return False


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
    if _is_json_object(tail[len(UTF8_BOM) :] if cut == 0 and tail.startswith(UTF8_BOM) else tail):
        os.lseek(fd, 0, os.SEEK_END)
        write_all(fd, b"\n")
        return
    torn = path.with_name(path.name + ".torn")
    with open(torn, "ab") as out:
        out.write(tail + b"\n")
        out.flush()
        os.fsync(out.fileno())
    os.ftruncate(fd, cut)
