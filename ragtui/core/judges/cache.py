"""The verdict cache of ``ragtui judge``: every grade a judge gave, on disk, so that a run that
stopped (killed, interrupted, failed) goes on without asking the judge again.

One append-only file per (judge settings, prompt) under ``<cache>/judges/``; each line is one grade
keyed by the hashes of the question text and of the chunk text. Appends are fsynced under the
file's lock; a line that does not read (a killed writer's torn line) is ignored and cut before the
next append. Only grades are kept, never a failure, a key or a setting.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import orjson

from ragtui.core.data.grades import GradeScale
from ragtui.core.data.paths import cache_dir
from ragtui.core.errors import InputError
from ragtui.core.files import content_hash, fsync_folder, locked, read_regular, write_all
from ragtui.core.judges.base import JudgePair, Verdict
from ragtui.core.judges.parse import clean_reason
from ragtui.core.labelling.labels import (
    ANSWER_PATHS,
    MAX_REASON,
    probabilities_json,
    read_probabilities,
)

__all__ = ["CACHE_VERSION", "VerdictCache"]

#: Bump when what the verdict cache holds changes meaning: older files are then not read.
CACHE_VERSION = 1


def _text_sha1(text: str) -> str:
    return content_hash(text)


#: The largest verdict cache read (a million verdicts with their reasons is about 250 MB).
MAX_CACHE_BYTES = 512 * 1048576


class VerdictCache:
    """A judge's grades on disk, one append-only file per (judge settings, prompt):
    ``<cache>/judges/<hash>.jsonl``, a line ``{"q": sha1 of the question text, "c": sha1 of the chunk
    text, "grade": g, "reason": "..."}`` per verdict; the last line of a pair wins.

    Appends are one write under the file's lock, fsynced; a torn last line (a killed writer) is
    cut before the next append, and a line that does not read is ignored (that pair is asked again).
    Only grades are kept: a failure is never cached.
    """

    def __init__(
        self, settings_key: str, prompt_sha1: str, scale: GradeScale, root: Path | None = None
    ) -> None:
        name = hashlib.sha256(orjson.dumps([CACHE_VERSION, settings_key, prompt_sha1])).hexdigest()[
            :32
        ]
        self.path = (root or cache_dir()) / "judges" / f"{name}.jsonl"
        self._grades = {g for g, _ in scale}
        self._held: dict[tuple[str, str], Verdict] = {}
        #: Why the cache cannot be used (its path is not a regular file), or ``""``.
        self.unusable = ""
        self._read()

    @staticmethod
    def key(pair: JudgePair) -> tuple[str, str]:
        """The pair's key: the hashes of its question text and its chunk text."""
        return (_text_sha1(pair.question), pair.chunk_sha1)

    def __len__(self) -> int:
        return len(self._held)

    def _read(self) -> None:
        try:
            if not stat.S_ISREG(os.stat(self.path).st_mode):
                # A FIFO would block the read, a folder cannot be appended to: no cache this run.
                self.unusable = f"{self.path}: not a regular file"
                return
            data = read_regular(self.path, limit=MAX_CACHE_BYTES)
        except InputError as exc:  # swapped for a FIFO, or grown past any real cache
            self.unusable = str(exc)
            return
        except OSError:
            return  # no cache yet (or none readable): every pair is asked
        for raw in data.split(b"\n"):
            try:
                obj = orjson.loads(raw)
                q, c, grade, reason = obj["q"], obj["c"], obj["grade"], obj["reason"]
                answer = obj.get("answer", "")
                probabilities = read_probabilities(obj.get("p"), self.path, None)
            except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError, InputError):
                continue
            if (
                isinstance(q, str)
                and isinstance(c, str)
                and isinstance(reason, str)
                and type(grade) is int
                and grade in self._grades
                and answer in ANSWER_PATHS
            ):
                # Cleaned as a fresh verdict is (a forged line's controls never reach the journal).
                held = Verdict(grade, clean_reason(reason), answer=answer)
                self._held[(q, c)] = replace(held, probabilities=probabilities)

    def get(self, pair: JudgePair) -> Verdict | None:
        """The cached verdict of a pair (a grade, its reason, how it was read), or None."""
        return self._held.get(self.key(pair))

    def put(self, graded: Sequence[tuple[JudgePair, Verdict]]) -> None:
        """Append grades (verdicts without a grade are left out), fsynced before this returns."""
        rows = [(self.key(p), v) for p, v in graded if v.grade is not None]
        if not rows:
            return
        if self.unusable:
            raise OSError(self.unusable)
        data = b"".join(orjson.dumps(_line(q, c, v)) + b"\n" for (q, c), v in rows)
        created = not self.path.exists()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with locked(self.path) as fd:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                whole = os.pread(fd, size, 0)
                os.ftruncate(fd, whole.rfind(b"\n") + 1)  # a killed writer's torn line
            os.lseek(fd, 0, os.SEEK_END)
            write_all(fd, data)
            os.fsync(fd)
        if created:
            fsync_folder(self.path.parent)
        for (q, c), v in rows:
            self._held[(q, c)] = replace(v, failure="", tokens=0)


def _line(q: str, c: str, v: Verdict) -> dict[str, object]:
    """A verdict's cache line."""
    line: dict[str, object] = {"q": q, "c": c, "grade": v.grade, "reason": v.reason[:MAX_REASON]}
    if v.answer:
        line["answer"] = v.answer
    if v.probabilities:
        line["p"] = probabilities_json(v.probabilities)
    return line
