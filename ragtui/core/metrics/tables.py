"""Rankings and grades of many questions held as numpy arrays, read as the mappings the rest of ragtui uses.

At 100,000 questions a dict of lists of tuples per retriever costs seconds to build and hundreds of
megabytes to hold. A :class:`RankingTable` keeps one row of chunk codes (int32, ``-1`` after the
last result) and one row of scores (float64, the retriever's own values) per question and builds a
question's ``[(chunk id, score), ...]`` only when it is asked for. :class:`GradeArrays` holds
per-question grades as compressed rows (CSR), and :class:`GradeRows` reads them as a mapping of
per-question dicts, building a question's dict (and keeping it, so changes to it stay) on first use.
Both accept changes: an assigned question is kept beside the arrays and wins over its row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence

import numpy as np

#: A ranking: (chunk id, score) pairs, best first.
Ranking = list[tuple[str, float]]

__all__ = ["GradeArrays", "GradeRows", "RankingTable", "gather_rows", "in_order", "source_rows"]


def gather_rows(
    offsets: np.ndarray, rows: np.ndarray, *columns: np.ndarray
) -> tuple[np.ndarray, ...]:
    """The CSR rows ``rows`` (``-1``: an empty row) of ``columns``, as new offsets and columns in that order."""
    rows = np.asarray(rows, dtype=np.int64)
    present = rows >= 0
    safe = np.where(present, rows, 0)
    lengths = np.where(present, offsets[safe + 1] - offsets[safe], 0)
    new_offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    total = int(new_offsets[-1])
    # Entry j of new row i comes from old position offsets[rows[i]] + j.
    starts = np.where(present, offsets[safe], 0)
    source = np.repeat(starts - new_offsets[:-1], lengths) + np.arange(total, dtype=np.int64)
    return (new_offsets, *(np.asarray(c)[source] for c in columns))


class RankingTable(MutableMapping[str, Ranking]):
    """Every question's ranking as arrays: ``index[row]`` chunk codes into ``ids`` (``-1`` pads the
    end), ``scores[row]`` their scores, question ``qids[row]``; ``rows`` maps a question id to its row.

    A question assigned later (an added question, a ranking computed again) is kept in a small dict
    beside the arrays and wins over its row, so the table reads as a ``dict`` would.
    """

    def __init__(
        self,
        qids: Sequence[str],
        ids: Sequence[str],
        index: np.ndarray,
        scores: np.ndarray,
        rows: Mapping[str, int] | None = None,
        distinct: bool = False,
    ) -> None:
        if index.ndim != 2 or index.shape != scores.shape or len(index) != len(qids):
            raise ValueError("index and scores must be matrices of one shape, a row per question")
        self.qids = qids
        # Tables of one question list may share this mapping (it is never changed).
        self.rows = rows if rows is not None else {q: i for i, q in enumerate(qids)}
        self.ids = ids
        self.index = index
        self.scores = scores
        #: Whether no row holds a code twice (known by whoever made the arrays: checked when read
        #: from a cache, true of every built-in retriever), so evaluation need not look.
        self.distinct = distinct
        self.extra: dict[str, Ranking] = {}
        self._removed: set[str] = set()

    @property
    def depth(self) -> int:
        """The number of columns (the deepest ranking the arrays can hold)."""
        return int(self.index.shape[1])

    def ranking_at(self, row: int) -> Ranking:
        """The ranking held in array row ``row``."""
        codes = self.index[row].tolist()
        scores = self.scores[row].tolist()
        ids = self.ids
        out: Ranking = []
        for code, score in zip(codes, scores, strict=True):
            if code < 0:
                break
            out.append((ids[code], score))
        return out

    def __getitem__(self, qid: str) -> Ranking:
        found = self.extra.get(qid)
        if found is not None:
            return found
        if qid in self._removed:
            raise KeyError(qid)
        return self.ranking_at(self.rows[qid])

    def __setitem__(self, qid: str, ranking: Ranking) -> None:
        self.extra[qid] = ranking
        self._removed.discard(qid)

    def __delitem__(self, qid: str) -> None:
        if qid in self.extra:
            del self.extra[qid]
            if qid in self.rows:
                self._removed.add(qid)
        elif qid in self.rows and qid not in self._removed:
            self._removed.add(qid)
        else:
            raise KeyError(qid)

    def __contains__(self, qid: object) -> bool:
        if qid in self.extra:
            return True
        return qid in self.rows and qid not in self._removed

    def __iter__(self) -> Iterator[str]:
        for qid in self.rows:
            if qid not in self._removed:
                yield qid
        for qid in self.extra:
            if qid not in self.rows or qid in self._removed:
                yield qid

    def __len__(self) -> int:
        kept = len(self.rows) - len(self._removed)
        return kept + sum(1 for q in self.extra if q not in self.rows or q in self._removed)

    def copy(self) -> RankingTable:
        """A table sharing the arrays, with its own assigned questions."""
        other = RankingTable(
            self.qids, self.ids, self.index, self.scores, self.rows, distinct=self.distinct
        )
        other.extra = dict(self.extra)
        other._removed = set(self._removed)
        return other

    def changed(self) -> set[str]:
        """The questions whose ranking is not their array row (assigned or removed since)."""
        return set(self.extra) | self._removed

    def empty_rows(self) -> list[str]:
        """The questions whose ranking is empty: array rows in order, then assigned ones."""
        empty = np.flatnonzero(self.index[:, 0] < 0) if self.depth else np.arange(len(self.qids))
        out = [
            qid
            for qid in (self.qids[i] for i in empty.tolist())
            if qid not in self.extra and qid not in self._removed
        ]
        out.extend(q for q, ranking in self.extra.items() if not ranking)
        return out


class GradeArrays:
    """Per-question grades as compressed rows: question ``qids[r]`` holds the ids
    ``ids[codes[offsets[r]:offsets[r + 1]]]`` with ``grades[offsets[r]:offsets[r + 1]]``."""

    def __init__(
        self,
        qids: Sequence[str],
        ids: Sequence[str],
        offsets: np.ndarray,
        codes: np.ndarray,
        grades: np.ndarray,
        rows: Mapping[str, int] | None = None,
    ) -> None:
        if len(offsets) != len(qids) + 1 or len(codes) != len(grades):
            raise ValueError(
                "offsets need one entry per question and one more; codes and grades one length"
            )
        self.qids = qids
        self.rows = rows if rows is not None else {q: i for i, q in enumerate(qids)}
        self.ids = ids
        self.offsets = offsets
        self.codes = codes
        self.grades = grades

    def grades_of(self, qid: str) -> dict[str, int]:
        """One question's grades as a dict (empty for a question the arrays lack)."""
        row = self.rows.get(qid)
        if row is None:
            return {}
        start, end = int(self.offsets[row]), int(self.offsets[row + 1])
        ids = self.ids
        return {
            ids[c]: g
            for c, g in zip(
                self.codes[start:end].tolist(), self.grades[start:end].tolist(), strict=True
            )
        }

    @classmethod
    def from_mappings(
        cls, question_ids: Sequence[str], grades: Callable[[str], Mapping[str, int]]
    ) -> GradeArrays:
        """The arrays of ``grades(qid)`` for every question (one Python pass over all grades)."""
        vocab: dict[str, int] = {}
        codes: list[int] = []
        values: list[int] = []
        offsets = [0]
        for qid in question_ids:
            for cid, grade in grades(qid).items():
                code = vocab.get(cid)
                if code is None:
                    code = vocab[cid] = len(vocab)
                codes.append(code)
                values.append(grade)
            offsets.append(len(codes))
        return cls(
            list(question_ids),
            list(vocab),
            np.asarray(offsets, dtype=np.int64),
            np.asarray(codes, dtype=np.int32),
            np.asarray(values, dtype=np.int64),
        )


def in_order(rows: np.ndarray, length: int) -> bool:
    """Whether ``rows`` are 0, 1, ... ``length - 1``: every row of a table, in its order."""
    return len(rows) == length and (
        length == 0 or (int(rows[0]) == 0 and bool((np.diff(rows) == 1).all()))
    )


def source_rows(order: Sequence[str], qids: Sequence[str], rows: Mapping[str, int]) -> np.ndarray:
    """For each question of ``order``, its row among ``qids`` (``-1`` when absent); no lookup at
    all when both lists are the same."""
    if len(order) == len(qids) and (order is qids or list(order) == list(qids)):
        return np.arange(len(order), dtype=np.int64)
    return np.fromiter((rows.get(q, -1) for q in order), dtype=np.int64, count=len(order))


class GradeRows(MutableMapping[str, dict[str, int]]):
    """Question id -> its grades (chunk id -> grade), read from :class:`GradeArrays`.

    A question's dict is built when first asked for and kept: callers may change it in place, as
    they would change a dict of dicts, and ``built`` names the questions whose dict may differ from
    the arrays.
    """

    def __init__(self, arrays: GradeArrays) -> None:
        self.arrays = arrays
        self.built: dict[str, dict[str, int]] = {}
        self._removed: set[str] = set()

    def __getitem__(self, qid: str) -> dict[str, int]:
        found = self.built.get(qid)
        if found is not None:
            return found
        if qid in self._removed or qid not in self.arrays.rows:
            raise KeyError(qid)
        grades = self.built[qid] = self.arrays.grades_of(qid)
        return grades

    def __setitem__(self, qid: str, grades: dict[str, int]) -> None:
        self.built[qid] = grades
        self._removed.discard(qid)

    def __delitem__(self, qid: str) -> None:
        if qid not in self:
            raise KeyError(qid)
        self.built.pop(qid, None)
        self._removed.add(qid)

    def __contains__(self, qid: object) -> bool:
        if qid in self.built:
            return True
        return qid in self.arrays.rows and qid not in self._removed

    def __iter__(self) -> Iterator[str]:
        for qid in self.arrays.rows:
            if qid not in self._removed:
                yield qid
        for qid in self.built:
            if qid not in self.arrays.rows:
                yield qid

    def __len__(self) -> int:
        rows = self.arrays.rows
        return (
            len(rows)
            - sum(1 for q in self._removed if q in rows)
            + sum(1 for q in self.built if q not in rows)
        )

    def changed(self) -> set[str]:
        """The questions whose grades may differ from the arrays (built, assigned or removed)."""
        return set(self.built) | self._removed
