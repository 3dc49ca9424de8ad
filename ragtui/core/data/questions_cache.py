"""The golden questions from a binary cache keyed by the bytes of ``questions.jsonl``.

Parsing and checking 100,000 JSON lines one by one takes most of a second; the questions only
change when the file does. So each golden set's parsed questions are kept as columns (each text
column one UTF-8 blob and the offsets of its texts, each list column flattened) in
``cache_dir()/questions/<digest>`` (an :class:`~ragtui.core.data.binary_cache.ArrayStore` named
by the SHA-256 of the file's bytes): a start with the same bytes reads the columns (a
:class:`~ragtui.core.data.golden.QuestionColumns`, which builds each question when it is first
read, and cuts each text and evidence string from its column's text then); any other bytes are
parsed and checked as ``load_questions`` does, and cached. The manifest keeps the ``list_digest``
of the texts and of the evidence lists, by which the results and evidence caches find their rows
without reading either. Only the ``KEPT`` most recently written versions are kept. The columns'
offsets and lengths, the digests and the ids' uniqueness are checked before use; a cache that
fails is reported and rebuilt.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np

from ragtui.core.data.binary_cache import ArrayStore, CacheMismatch, list_digest
from ragtui.core.data.corpus import read_file
from ragtui.core.data.golden import Question, QuestionColumns, load_questions
from ragtui.core.data.paths import cache_dir

#: Bump when a Question gains a field or parsing changes: older caches are then not read.
QUESTIONS_CACHE_VERSION = 4

#: How many golden-set files (versions) the cache keeps.
KEPT = 8


def cached_questions(
    path: str | Path, root: Path | None = None
) -> tuple[Sequence[Question], list[str]]:
    """``load_questions(path)``, from the cache when it holds these bytes; with the warnings about a
    cache that could not be used (or written)."""
    path = Path(path)
    raw = read_file(path)
    key = hashlib.sha256(raw).hexdigest()
    base = (root or cache_dir()) / "questions"
    store = ArrayStore(base / key[:40])
    warnings: list[str] = []
    expect = {"key": key, "version": QUESTIONS_CACHE_VERSION}
    try:
        found = store.read(expect)
        if found is not None:
            return _build(*found), warnings
    except CacheMismatch as exc:
        warnings.append(f"{store.folder}: questions cache ignored and rebuilt ({exc})")
    questions = load_questions(path, raw=raw)
    try:
        arrays = _columns(questions)
    except UnicodeEncodeError:  # cannot happen with surrogatepass; kept out of the cache anyway
        return questions, warnings
    digests = {
        "text_digest": list_digest([q.text for q in questions]),
        "evidence_digest": list_digest([q.evidence for q in questions]),
    }
    try:
        store.write({**expect, "count": len(questions), **digests}, arrays)
    except OSError as exc:
        warnings.append(f"{store.folder}: questions cache not written ({exc.strerror or exc})")
    _prune(base)
    return questions, warnings


def _prune(base: Path) -> None:
    """Remove all but the ``KEPT`` most recently written question caches."""
    import shutil

    try:
        folders = [
            (f.stat().st_mtime, f) for f in base.iterdir() if (f / "manifest.json").is_file()
        ]
    except OSError:
        return
    for _, folder in sorted(folders, reverse=True)[KEPT:]:
        shutil.rmtree(folder, ignore_errors=True)


def _text_column(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Texts as one UTF-8 blob and the character offset where each ends."""
    ends = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=ends[1:])
    blob = "".join(texts).encode("utf-8", "surrogatepass")
    return np.frombuffer(blob, dtype=np.uint8), ends


def _groups(lists: list[tuple[str, ...]]) -> np.ndarray:
    """Where each question's strings start in the flattened list (and where the last ends)."""
    starts = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in lists], out=starts[1:])
    return starts


def _columns(questions: list[Question]) -> dict[str, np.ndarray]:
    """The questions as arrays: each text column a blob with offsets, each list column flattened."""
    arrays: dict[str, np.ndarray] = {}
    for name in ("id", "text"):
        blob, ends = _text_column([getattr(q, name) for q in questions])
        arrays[f"{name}_blob"], arrays[f"{name}_ends"] = blob, ends
    evidence = [q.evidence for q in questions]
    blob, ends = _text_column([t for group in evidence for t in group])
    arrays["evidence_blob"], arrays["evidence_ends"] = blob, ends
    arrays["evidence_groups"] = _groups(evidence)
    # Slices are labels from a short list: each distinct tuple once, and each question's choice.
    distinct: dict[tuple[str, ...], int] = {}
    choice = [distinct.setdefault(q.slices, len(distinct)) for q in questions]
    table = list(distinct)
    blob, ends = _text_column([t for group in table for t in group])
    arrays["slices_blob"], arrays["slices_ends"] = blob, ends
    arrays["slices_groups"] = _groups(table)
    arrays["slices_choice"] = np.asarray(choice, dtype=np.int64)
    arrays["line"] = np.asarray([q.line for q in questions], dtype=np.int64)
    arrays["retired"] = np.asarray([q.retired for q in questions], dtype=bool)
    return arrays


def _text_bounds(arrays: dict[str, np.ndarray], name: str, count: int) -> tuple[str, list[int]]:
    """A text column's text and where each of its ``count`` texts starts (and the last ends),
    checked."""
    blob, ends = arrays.get(f"{name}_blob"), arrays.get(f"{name}_ends")
    if blob is None or ends is None or blob.dtype.str != "|u1" or ends.dtype.str != "<i8":
        raise CacheMismatch(f"column {name} is missing")
    text = blob.tobytes().decode("utf-8", "surrogatepass")
    if (
        ends.shape != (count + 1,)
        or ends[0] != 0
        or ends[-1] != len(text)
        or np.any(np.diff(ends) < 0)
    ):
        raise CacheMismatch(f"column {name}'s offsets do not fit its text")
    return text, ends.tolist()


def _texts(arrays: dict[str, np.ndarray], name: str, count: int) -> list[str]:
    """A text column back as strings (its offsets checked)."""
    text, bounds = _text_bounds(arrays, name, count)
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def _groups_of(arrays: dict[str, np.ndarray], name: str, count: int) -> np.ndarray:
    """Where each of ``count`` groups of a list column starts in its strings (checked)."""
    groups = arrays.get(f"{name}_groups")
    if groups is None or groups.dtype.str != "<i8" or groups.shape != (count + 1,):
        raise CacheMismatch(f"column {name} is missing")
    if groups[0] != 0 or np.any(np.diff(groups) < 0):
        raise CacheMismatch(f"column {name}'s groups do not fit its strings")
    return groups


class _Cut(Sequence[str]):
    """A text column read when asked: text i is ``text[bounds[i]:bounds[i + 1]]`` (the texts and
    the evidence of 100,000 questions are not cut into strings at load). The first pass over them
    all keeps them cut (a filter passes over every text at each keystroke)."""

    __slots__ = ("_bounds", "_strings", "_text")

    def __init__(self, text: str, bounds: list[int]) -> None:
        self._text, self._bounds = text, bounds
        self._strings: list[str] | None = None

    def __len__(self) -> int:
        return len(self._bounds) - 1

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if self._strings is not None:
            return self._strings[index]
        at = range(len(self))[index]  # from the end when negative; IndexError past either end
        if isinstance(at, range):
            return [self[i] for i in at]
        return self._text[self._bounds[at] : self._bounds[at + 1]]

    def __iter__(self) -> Iterator[str]:
        if self._strings is None:
            text = self._text
            # The text and bounds stay: another thread may be cutting one text from them.
            self._strings = [text[a:b] for a, b in itertools.pairwise(self._bounds)]
        return iter(self._strings)


class _Groups(Sequence[tuple[str, ...]]):
    """A list column read when asked: group i is ``strings[groups[i]:groups[i + 1]]``."""

    __slots__ = ("_groups", "_strings")

    def __init__(self, strings: Sequence[str], groups: list[int]) -> None:
        self._strings, self._groups = strings, groups

    def __len__(self) -> int:
        return len(self._groups) - 1

    @overload
    def __getitem__(self, index: int) -> tuple[str, ...]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[str, ...]]: ...
    def __getitem__(self, index: int | slice) -> tuple[str, ...] | list[tuple[str, ...]]:
        at = range(len(self))[index]
        if isinstance(at, range):
            return [self[i] for i in at]
        start, end = self._groups[at], self._groups[at + 1]
        return (self._strings[start],) if end - start == 1 else tuple(self._strings[start:end])

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        strings = iter(self._strings)
        take = strings.__next__
        return (
            (take(),) if n == 1 else tuple(itertools.islice(strings, n))
            for n in np.diff(self._groups).tolist()
        )


def _lists(arrays: dict[str, np.ndarray], name: str, count: int) -> list[tuple[str, ...]]:
    """A list column back as one tuple of strings per group (``count`` groups)."""
    groups = _groups_of(arrays, name, count)
    strings = _texts(arrays, name, int(groups[-1]))
    if not len(strings):
        return [()] * count
    it = iter(strings)
    return [tuple(itertools.islice(it, n)) for n in np.diff(groups).tolist()]


_HEX = frozenset("0123456789abcdef")


def _digest_of(meta: dict[str, Any], name: str) -> str:
    value = meta.get(name)
    if not isinstance(value, str) or len(value) != 64 or not set(value) <= _HEX:
        raise CacheMismatch(f"the manifest's {name} is not a digest")
    return value


def _build(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> QuestionColumns:
    """The questions the columns hold, checked (else CacheMismatch); the texts and the evidence
    are cut from their column's text when read."""
    count = meta.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise CacheMismatch("the manifest's question count is not a number")
    ids = _texts(arrays, "id", count)
    texts = _Cut(*_text_bounds(arrays, "text", count))
    groups = _groups_of(arrays, "evidence", count)
    evidence = _Groups(_Cut(*_text_bounds(arrays, "evidence", int(groups[-1]))), groups.tolist())
    choice = arrays.get("slices_choice")
    if choice is None or choice.dtype.str != "<i8" or choice.shape != (count,):
        raise CacheMismatch("column slices is missing")
    table = _lists(arrays, "slices", len(arrays.get("slices_groups", ())) - 1)
    if count and (choice.min() < 0 or choice.max() >= len(table)):
        raise CacheMismatch("column slices names a tuple it does not hold")
    slices = [table[i] for i in choice.tolist()]
    line, retired = arrays.get("line"), arrays.get("retired")
    if (
        line is None
        or retired is None
        or line.dtype.str != "<i8"
        or retired.dtype.str != "|b1"
        or line.shape != (count,)
        or retired.shape != (count,)
    ):
        raise CacheMismatch("the line or retired column does not fit")
    rows = dict(zip(ids, range(count), strict=True))
    if len(rows) != count:
        raise CacheMismatch("an id is there twice")
    return QuestionColumns(
        ids,
        texts,
        evidence,
        slices,
        line.tolist(),
        retired.tolist(),
        rows=rows,
        text_digest=_digest_of(meta, "text_digest"),
        evidence_digest=_digest_of(meta, "evidence_digest"),
    )
