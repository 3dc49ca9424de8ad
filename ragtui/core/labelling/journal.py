"""The hand-label journal ``labels.jsonl``: append-only, each line flushed and fsynced under a lock.

Several people may grade the same pair. The journal keeps, per (question, chunk), each annotator's
latest label and the latest adjudicated label (a line with ``"adjudicated": true``); the grade that
counts is the adjudicated one, else the only annotator's, else the latest annotator's, and the pair
is *disputed* when the annotators' latest grades differ and nobody adjudicated (see ``PairLabels``).
A line that cannot be read (another writer's bad line) is skipped and reported once, never applied.

The lines in memory (``Label``, ``PairLabels``, ``LabelSet``) are ``labels``'s; the file (its lock,
appending a line durably, repairing a torn tail, backups) is ``journal_files``'s; reading the file
incrementally, writing grades, undo and compaction are here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import operator
import os
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import orjson

from ragtui.core.errors import InputError
from ragtui.core.files import write_atomic
from ragtui.core.labelling.journal_files import (
    UTF8_BOM,
    ReadOnlyError,
    WriteFailedError,
    append_line,
    check_regular,
    lock_journal,
    open_regular,
    pread_all,
    read_fd,
    read_only_reason,
    refuse_bundled,
    write_backup,
)
from ragtui.core.labelling.labels import (
    MODEL_PREFIX,
    BadLine,
    Label,
    LabelSet,
    default_annotator,
    is_json_object,
    is_model_annotator,
    loads_line,
    now_iso,
    parse_label,
)

__all__ = [
    "Label",
    "LabelJournal",
    "ReadOnlyError",
    "WriteFailedError",
    "check_regular",
    "default_annotator",
]


class LabelJournal(LabelSet):
    """The journal on disk and its current state (a ``LabelSet``): per pair each annotator's latest label, the adjudicated one, and the one that counts."""

    def __init__(
        self, path: str | Path, annotator: str | None = None, models: bool = False
    ) -> None:
        super().__init__(models)
        self.path = Path(path)
        self.annotator = annotator if annotator is not None else default_annotator()
        if is_model_annotator(self.annotator):
            raise InputError(
                None,
                f"--annotator: {self.annotator!r} is a model judge's name "
                f"({MODEL_PREFIX}NAME is kept for `ragtui judge`); choose another",
            )
        #: Problems that did not stop loading (a torn last line, a line that could not be read).
        self.warnings: list[str] = []
        #: The lines that could not be read (skipped, never applied), in journal order.
        self.bad_lines: list[BadLine] = []
        # Warnings already handed out by take_warnings: each is reported once, even when the
        # journal is read again from the start.
        self._reported: set[str] = set()
        self._undo: list[tuple[str, str, int | None, str, bool]] = []
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
        # The CRC-32 of the bytes read (the first ``_read_offset`` of the file): a compaction that
        # finds the file as it was read does not read it again.
        self._read_crc = 0
        self.load()

    @property
    def read_only(self) -> bool:
        """True when the journal or its folder cannot be written or has no write bits (see ``read_only_reason``)."""
        return self.read_only_reason is not None

    @property
    def read_only_reason(self) -> str | None:
        """Why edits are refused (the journal or its folder is read-only), or None when they are allowed."""
        return read_only_reason(self.path)

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
                if not old_state:  # nothing before (the first read): every labelled question
                    self._touched = old_touched | self.pairs.keys()
                else:
                    new_state = self._state()
                    self._touched = old_touched | {
                        q
                        for q in old_state.keys() | new_state.keys()
                        if old_state.get(q) != new_state.get(q)
                    }

    def _restart(self) -> None:
        """Forget what was read before reading from the start, remembering what it was (for ``take_touched``)."""
        if self._before_restart is None:
            self._before_restart = (self._state(), set(self._touched))
        self._reset()

    def _read_lines(self) -> list[Label]:
        if self._replaced():
            file = open_regular(self.path)
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
            and pread_all(fd, len(self._seen_tail), self._read_offset - len(self._seen_tail))
            != self._seen_tail
        ):
            self._restart()
        start = self._read_offset
        data = pread_all(fd, size - start, start)
        try:
            with _no_collection(len(data) > _BULK_BYTES):
                return self._take(fd, data)
        finally:
            # The checksum of every byte read so far (``_holds``).
            self._read_crc = zlib.crc32(data[: self._read_offset - start], self._read_crc)

    def _take(self, fd: int, data: bytes) -> list[Label]:
        """Apply the lines of ``data``, the bytes from ``_read_offset`` to the end of the file."""
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
        whole_tail = bool(tail.strip()) and is_json_object(tail)
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
        self._seen_tail = pread_all(fd, keep, self._read_offset - keep)
        return added

    def _reset(self) -> None:
        """Forget what was read, keeping the undo stack (the file is read again from the start)."""
        self._clear()
        self.warnings.clear()
        self.bad_lines.clear()
        self._read_offset = 0
        self._lines_seen = 0
        self._seen_tail = b""
        self._pending_newline = False
        self._read_crc = 0

    def _holds(self, content: bytes) -> bool:
        """Whether what was read is exactly ``content`` (the file's bytes now): same length, same checksum."""
        return (
            not self._replaced()
            and len(content) == self._read_offset
            and zlib.crc32(content) == self._read_crc
        )

    def _warn(self, warning: str) -> None:
        if warning not in self.warnings:
            self.warnings.append(warning)

    def take_warnings(self) -> list[str]:
        """The warnings not handed out before (each bad or torn line is reported once); a front end shows them."""
        new = [w for w in self.warnings if w not in self._reported]
        self._reported.update(new)
        return new

    def _parse_line(self, raw: bytes, number: int) -> Label | None:
        """One journal line as a label; None for a blank line, and for a bad one (recorded in ``bad_lines``).

        A byte-order mark at the start of a line (not only the file's first: files joined with
        ``cat``, an editor's paste) is read past, and the line kept."""
        while raw.startswith(UTF8_BOM):
            raw = raw[len(UTF8_BOM) :]
        if not raw.strip():
            return None
        try:
            try:
                obj = loads_line(raw)
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

    def set_grade(
        self,
        question: str,
        chunk: str,
        grade: int | None,
        chunk_sha1: str,
        adjudicate: bool = False,
        independent: bool | None = None,
    ) -> Label:
        """Write this annotator's grade (None withdraws it), or with ``adjudicate`` the adjudicated grade (None withdraws the adjudication), fsynced, then apply it; the change can be undone. ``independent``: whether others' grades were hidden as it was given (``Label.independent``)."""
        pair = self.pair(question, chunk)
        if pair is None:
            previous = None
        else:
            previous = pair.adjudicated if adjudicate else pair.annotators.get(self.annotator)
        label = self._append(question, chunk, grade, chunk_sha1, adjudicate, independent)
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
        self,
        question: str,
        chunk: str,
        grade: int | None,
        chunk_sha1: str,
        adjudicated: bool,
        independent: bool | None = None,
    ) -> Label:
        refuse_bundled(self.path)
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
            independent=independent if grade is not None and not adjudicated else None,
        )
        line = label.to_json()
        # Never write a line that the loader would refuse: it would be skipped on every read.
        try:
            parse_label(loads_line(line), self.path, 0)
        except InputError as exc:
            raise ValueError(exc.problem) from None
        append_line(self.path, line)
        # Pick up whatever others appended before our line, then our own (a bad line of theirs is
        # skipped with a warning: our line is on disk and must be applied).
        self.refresh()
        return label

    def append_verdicts(self, verdicts: Sequence[Label]) -> None:
        """Append model judges' verdicts (annotator ``model:NAME``) in one write under the lock, fsynced, then apply them.

        Every line is checked as the loader reads it first, so a batch is written whole or not at
        all; a verdict is never undone by ``undo`` (that is for the person's own changes).
        """
        if not verdicts:
            return
        refuse_bundled(self.path)
        try:
            check_regular(self.path)
        except InputError as exc:
            raise ReadOnlyError(f"{exc.message}; the verdicts were not written") from None
        reason = self.read_only_reason
        if reason is not None:
            raise ReadOnlyError(f"{reason}; the verdicts were not written")
        lines = []
        for verdict in verdicts:
            if not verdict.is_model or verdict.adjudicated:
                raise ValueError(f"not a model verdict: annotator {verdict.annotator!r}")
            line = verdict.to_json()
            try:
                parse_label(loads_line(line), self.path, 0)
            except InputError as exc:
                raise ValueError(exc.problem) from None
            lines.append(line)
        append_line(self.path, b"\n".join(lines))
        self.refresh()

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
        refuse_bundled(self.path)
        reason = self.read_only_reason
        if reason is not None:
            raise ReadOnlyError(f"{reason}; the journal was not compacted")
        with contextlib.ExitStack() as stack:
            fd = lock_journal(stack, self.path, "the journal was not compacted")
            old = read_fd(fd)
            if not self._holds(old):  # changed since it was read: read it again, whole
                self.load()
            if self.bad_lines:
                bad = self.bad_lines[0]
                raise InputError(
                    self.path,
                    f"{bad.problem}: fix or delete this line first (compaction would drop it); "
                    "the journal was not compacted",
                    bad.line,
                )
            kept = sorted(
                (lab for _, _, pair in self.iter_pairs() for lab in pair.labels()),
                key=lambda lab: lab.line,
            )
            new = b"".join(lab.to_json() + b"\n" for lab in kept)
            if new == old:
                return None
            mode = os.fstat(fd).st_mode & 0o7777
            try:
                backup = write_backup(self.path, old, mode)
            except OSError as exc:
                raise WriteFailedError(
                    f"{self.path}: cannot write its backup beside it ({exc.strerror or exc}); "
                    "the journal was not compacted"
                ) from None
            try:
                write_atomic(self.path, new, mode)
            except OSError as exc:
                # The journal is as it was: its copy is of no use, and the disk may be full.
                backup.unlink(missing_ok=True)
                raise WriteFailedError(
                    f"{self.path}: cannot write the compacted journal ({exc.strerror or exc}); "
                    "the journal was left as it was"
                ) from None
            self._adopt(kept, new)
        return backup

    def _adopt(self, kept: Sequence[Label], content: bytes) -> None:
        """Take the compacted journal just written (``content``: ``kept``, one a line) as read,
        without parsing it again: its labels are the same, each at its new line. Called under the
        journal's lock, so the file at the path is the one written."""
        file = open_regular(self.path)
        if file is None:  # pragma: no cover - removed under our lock
            self.load()
            return
        touched = set(self._touched)  # a compaction changes no pair's labels
        self._close_file()
        self._reset()
        self._file = file
        with _no_collection(len(content) > _BULK_BYTES):
            for number, label in enumerate(kept, start=1):
                self._apply(_renumbered(label, number))
        self._touched = touched
        self._read_offset = len(content)
        self._lines_seen = len(kept)
        self._seen_tail = content[-64:]
        self._read_crc = zlib.crc32(content)


_LABEL_FIELDS = tuple(f.name for f in dataclasses.fields(Label))
_LINE_FIELD = _LABEL_FIELDS.index("line")
_label_values = operator.attrgetter(*_LABEL_FIELDS)


def _renumbered(label: Label, line: int) -> Label:
    """``label`` at another line (``dataclasses.replace(label, line=line)``, a third of its time)."""
    values = list(_label_values(label))
    values[_LINE_FIELD] = line
    return Label(*values)


#: Reads of more bytes than this run without the cyclic garbage collector (``_no_collection``).
_BULK_BYTES = 1 << 20


@contextlib.contextmanager
def _no_collection(bulk: bool) -> Iterator[None]:
    """With ``bulk``, no cyclic garbage collection inside: reading a journal makes millions of
    labels and dicts, none in a cycle, and a collector that walks them again and again as they
    pile up took 40 % of the time of a large read."""
    if not bulk or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _same_grade(before: Label | None, after: Label) -> bool | None:
    """Whether a pair's label kept its grade and chunk hash (None when the pair is new)."""
    if before is None:
        return None
    return (before.grade, before.chunk_sha1) == (after.grade, after.chunk_sha1)
