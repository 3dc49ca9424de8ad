"""The per-question figures of many questions at once, in numpy, equal to :func:`question_metrics`.

Each figure is computed with the same floating-point operations in the same order as
``formulas.question_metrics`` and ``formulas.judged_at_k`` (DCG and the ideal DCG are summed rank
by rank, as their loops do; every division is the same division), so the values are not close to
theirs but the same numbers; ``tests/test_batch_metrics.py`` checks that on random cases.

Input: a matrix of ranked codes (one row per question, best first, ``-1`` after the last result,
no code twice in a row) and every question's grades as compressed rows over the same codes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragtui.core.metrics.formulas import _check_k, _discounts

__all__ = ["BatchMetrics", "batch_metrics", "duplicate_rows"]

#: Judgements x depth up to which grades are placed by comparing each judgement with its
#: question's row (else every ranked cell is looked up by binary search).
SCATTER_CELLS = 20_000_000

#: Up to this many columns a row's repeated codes are found column against column (the compares
#: grow with the square of the columns: beyond about 25 sorting each row is quicker).
PAIRWISE_COLUMNS = 20


@dataclass(frozen=True)
class BatchMetrics:
    """Every question's figures, one array each, in row order (``first`` is 0 where there is none)."""

    first: np.ndarray
    recall: np.ndarray
    precision: np.ndarray
    precision_ceiling: np.ndarray
    rr: np.ndarray
    ndcg: np.ndarray
    num_relevant: np.ndarray
    judged: np.ndarray


def duplicate_rows(ranked: np.ndarray) -> np.ndarray:
    """The rows of a code matrix that hold a code more than once (``-1`` padding aside)."""
    n, depth = ranked.shape
    if depth < 2:
        return np.zeros(n, dtype=bool)
    if depth <= PAIRWISE_COLUMNS:
        # Each column against the columns before it, each column contiguous: 45 compares for 10
        # columns take 1.8 ms at 100,000 rows, against 8.5 ms for sorting every row.
        columns = np.ascontiguousarray(ranked.T)
        result = np.zeros(n, dtype=bool)
        for j in range(1, depth):
            column = columns[j]
            seen = columns[0] == column
            for i in range(1, j):
                seen |= columns[i] == column
            result |= seen & (column >= 0)
        return result
    # Each row sorted as it is (no wider copy); a code equal to its left neighbour repeats, unless
    # it is padding.
    ordered = np.sort(ranked, axis=1)
    later = ordered[:, 1:]
    repeated: np.ndarray = ((later == ordered[:, :-1]) & (later >= 0)).any(axis=1)
    return repeated


def batch_metrics(
    ranked: np.ndarray,
    offsets: np.ndarray,
    codes: np.ndarray,
    grades: np.ndarray,
    k: int,
    threshold: int = 1,
) -> BatchMetrics:
    """``question_metrics`` and ``judged_at_k`` (linear gain) of every row of ``ranked``.

    ``ranked`` is an (n, depth) integer matrix, best first, ``-1`` after the last result and no
    code twice in a row (see ``duplicate_rows``); question i's grades are ``codes`` and ``grades``
    from ``offsets[i]`` to ``offsets[i + 1]``, one entry per code.
    """
    _check_k(k)
    n, depth = ranked.shape
    ranked = ranked.astype(np.int64, copy=False)
    offsets = np.asarray(offsets, dtype=np.int64)
    codes = np.asarray(codes, dtype=np.int64)
    grades = np.asarray(grades, dtype=np.int64)
    counts = np.diff(offsets)
    grade_row = np.repeat(np.arange(n, dtype=np.int64), counts)

    # Every judgement found in its question's ranking, as (row, column, grade): the figures are
    # counted from these few cells rather than from the whole matrix, whose reductions along a row
    # of ten cells cost numpy more than the cells do.
    none = np.zeros(0, dtype=np.int64)
    hit_row, hit_col, hit_grade = none, none, none
    valid = ranked >= 0
    if depth == 0 or not len(codes):
        pass
    elif len(codes) * depth <= SCATTER_CELLS:
        # Few judgements: find each graded code's column in its question's row (codes are distinct
        # in a row, and in a question's grades).
        where = np.take(ranked, grade_row, axis=0) == codes[:, None]
        column = where.argmax(axis=1)
        hit = where[np.arange(len(codes)), column]
        hit_row, hit_col, hit_grade = grade_row[hit], column[hit], grades[hit]
    else:
        # Many judgements: (row, code) keys of the graded pairs, sorted, and a binary search per cell.
        width = int(max(int(ranked.max(initial=-1)), int(codes.max(initial=-1)))) + 1
        graded_keys = grade_row * width + codes
        order = np.argsort(graded_keys, kind="stable")
        graded_keys, graded_values = graded_keys[order], grades[order]
        keys = np.arange(n, dtype=np.int64)[:, None] * width + np.where(valid, ranked, 0)
        at = np.minimum(np.searchsorted(graded_keys, keys), len(graded_keys) - 1)
        found = valid & (graded_keys[at] == keys)
        hit_row, hit_col = np.nonzero(found)
        hit_grade = graded_values[at][found]
    # Results come first in a row, padding after: a row's length is its first padding cell.
    if depth:
        length = np.where(valid[:, -1], depth, valid.argmin(axis=1))
    else:
        length = np.zeros(n, dtype=np.int64)
    top = min(k, depth)
    in_top = hit_col < top
    relevant = hit_grade >= threshold

    num_relevant = np.bincount(grade_row[grades >= threshold], minlength=n).astype(np.int64)
    has_relevant = num_relevant > 0
    hits = np.bincount(hit_row[in_top & relevant], minlength=n)
    recall = np.where(has_relevant, hits / np.maximum(num_relevant, 1), 0.0)
    precision = np.where(has_relevant, hits / k, 0.0)
    ceiling = np.minimum(k, num_relevant) / k
    # The first relevant rank: a row's smallest column among its relevant cells, plus one.
    nearest = np.full(n, depth, dtype=np.int64)
    np.minimum.at(nearest, hit_row[relevant], hit_col[relevant])
    first = np.where(nearest < depth, nearest + 1, 0)
    rr = np.where(first > 0, 1.0 / np.maximum(first, 1), 0.0)

    # DCG@k, rank by rank as question_metrics adds it (a zero gain adds 0.0: no change, so only
    # the rows with a positive grade at a rank take part; a row has one cell at each rank).
    discounts = _discounts(max(top, 1))
    dcg = np.zeros(n)
    gaining = hit_grade > 0
    for i in range(top):
        at_i = gaining & (hit_col == i)
        dcg[hit_row[at_i]] += hit_grade[at_i] * discounts[i]

    # The ideal DCG@k: each question's positive grades, largest first, added rank by rank.
    positive = grades > 0
    rows_p, values_p = grade_row[positive], grades[positive]
    per_row = np.bincount(rows_p, minlength=n)
    if len(rows_p) and int(per_row.max()) > 1:
        by_row = np.lexsort((-values_p, rows_p))
        rows_p, values_p = rows_p[by_row], values_p[by_row]
    # Each grade's place in its row (the rows are in order, as the grades' rows are).
    place = np.arange(len(rows_p), dtype=np.int64) - (np.cumsum(per_row) - per_row)[rows_p]
    ideal = np.zeros(n)
    deepest = min(k, int(per_row.max(initial=0)))
    ideal_discounts = _discounts(max(deepest, 1))
    for p in range(deepest):
        at_p = place == p
        ideal[rows_p[at_p]] += values_p[at_p] * ideal_discounts[p]
    ndcg = np.where(ideal > 0.0, dcg / np.where(ideal > 0.0, ideal, 1.0), 0.0)

    # Judged@k: the share of the top min(k, length) that carries any grade.
    judged_top = np.bincount(hit_row[in_top], minlength=n)
    shown = np.minimum(length, k)
    judged = np.where(shown > 0, judged_top / np.maximum(shown, 1), 0.0)

    return BatchMetrics(
        first=first.astype(np.int64),
        recall=recall,
        precision=precision,
        precision_ceiling=ceiling,
        rr=rr,
        ndcg=ndcg,
        num_relevant=num_relevant,
        judged=judged,
    )
