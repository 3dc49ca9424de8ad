"""The golden questions from a binary cache keyed by the bytes of ``questions.jsonl``.

Parsing and checking 100,000 JSON lines one by one takes most of a second; the questions only
change when the file does. So each golden set's parsed questions are kept as columns (each text
column one UTF-8 blob and the offsets of its texts, each list column flattened) in
``cache_dir()/questions/<digest>`` (an :class:`~ragtui.core.data.binary_cache.ArrayStore` named
by the SHA-256 of the file's bytes): a start with the same bytes builds the questions from the
columns; any other bytes are parsed and checked as ``load_questions`` does, and cached. Only the
``KEPT`` most recently written versions are kept. The columns' offsets and lengths and the ids'
uniqueness are checked before use; a cache that fails is reported and rebuilt.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragtui.core.data.binary_cache import ArrayStore, CacheMismatch
from ragtui.core.data.corpus import read_file
from ragtui.core.data.golden import Question, QuestionColumns, load_questions
from ragtui.core.data.paths import cache_dir

#: Bump when a Question gains a field or parsing changes: older caches are then not read.
QUESTIONS_CACHE_VERSION = 3

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
    try:
        store.write({**expect, "count": len(questions)}, arrays)
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


def _texts(arrays: dict[str, np.ndarray], name: str, count: int) -> list[str]:
    """A text column back as strings (its offsets checked)."""
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
    bounds = ends.tolist()
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def _lists(arrays: dict[str, np.ndarray], name: str, count: int) -> list[tuple[str, ...]]:
    """A list column back as one tuple of strings per question."""
    groups = arrays.get(f"{name}_groups")
    if groups is None or groups.dtype.str != "<i8" or groups.shape != (count + 1,):
        raise CacheMismatch(f"column {name} is missing")
    strings = _texts(arrays, name, int(groups[-1]))
    lengths = np.diff(groups)
    if groups[0] != 0 or np.any(lengths < 0):
        raise CacheMismatch(f"column {name}'s groups do not fit its strings")
    if len(strings) == count and np.all(lengths == 1):
        return list(zip(strings, strict=True))  # one string each (the usual evidence): built in C
    if not len(strings):
        return [()] * count
    # Taken in turn from one iterator (most questions have one string: no slice to make).
    it = iter(strings)
    take = it.__next__
    return [(take(),) if n == 1 else tuple(itertools.islice(it, n)) for n in lengths.tolist()]


def _build(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> QuestionColumns:
    """The questions the columns hold, checked (else CacheMismatch)."""
    count = meta.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise CacheMismatch("the manifest's question count is not a number")
    ids = _texts(arrays, "id", count)
    texts = _texts(arrays, "text", count)
    evidence = _lists(arrays, "evidence", count)
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
    if len(set(ids)) != count:
        raise CacheMismatch("an id is there twice")
    return QuestionColumns(ids, texts, evidence, slices, line.tolist(), retired.tolist())
