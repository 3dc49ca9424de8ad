"""Per-question retrieval metrics that agree with trec_eval to the last printed digit.

Conventions (checked against trec_eval's own test vectors and pytrec_eval in tests/test_metrics.py):

* ``ranked`` is a sequence of ids, best first.  If an id occurs more than once, only its first
  occurrence counts: later copies are dropped before ranking, so they take no rank and the ids
  after them move up.  trec_eval itself refuses a run with a duplicate docid for a query
  ("duplicate docs", form_res_rels.c) and pytrec_eval's dict-shaped run cannot hold one, so
  dropping the copies is the reading under which the reference is defined.
* ``relevant`` is a collection of ids (binary relevance).  The grade threshold (trec_eval's ``-l``,
  default 1) lives in :func:`relevant_ids`; the binary metrics never see grades.  A ``set`` or
  ``frozenset`` (any ``collections.abc.Set``) is used as is, anything else is copied into a set.
* ``gains`` maps id -> integer grade (may be 0 or negative).  nDCG uses the grade itself as the gain
  (linear, as trec_eval); grades <= 0 give gain 0; ids missing from ``gains`` give gain 0.  The
  ideal ranking sorts all grades in ``gains``, whatever the binary threshold.
* ``k`` must be an int >= 1; anything else raises :class:`ValueError`.
* Nothing divides by zero: a question with no relevant ids gets 0.0 for recall, precision, RR and
  AP (trec_eval would leave such a question out of its mean; callers skip it too).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "GainMode",
    "QuestionMetrics",
    "average_precision",
    "dcg_at_k",
    "first_relevant_rank",
    "judged_at_k",
    "ndcg_at_k",
    "precision_at_k",
    "precision_ceiling_at_k",
    "question_metrics",
    "recall_at_k",
    "reciprocal_rank",
    "relevant_ids",
    "success_at_k",
]

GainMode = Literal["linear", "exponential"]

# _DISCOUNTS[i] = 1 / log2(rank + 1) for rank = i + 1; grown on demand by _discounts().
_DISCOUNTS: list[float] = [1.0 / math.log2(rank + 1) for rank in range(1, 101)]


def _discounts(n: int) -> list[float]:
    """Return the discount table, grown so that it has at least ``n`` entries."""
    if n > len(_DISCOUNTS):
        _DISCOUNTS.extend(1.0 / math.log2(rank + 1) for rank in range(len(_DISCOUNTS) + 1, n + 1))
    return _DISCOUNTS


def _check_k(k: int) -> None:
    """Raise ValueError unless k is an int >= 1 (a bool is refused)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")


def _as_set(ids: Iterable[Hashable]) -> AbstractSet[Hashable]:
    """Return ``ids`` itself when it is already set-like, else a new set of its items."""
    if isinstance(ids, AbstractSet):
        return ids
    return set(ids)


def _iter_unique(ranked: Iterable[Hashable]) -> Iterator[Hashable]:
    """Yield the ids of ``ranked`` in order, skipping any id already yielded."""
    seen: set[Hashable] = set()
    for doc in ranked:
        if doc not in seen:
            seen.add(doc)
            yield doc


def _top_unique(ranked: Sequence[Hashable], k: int) -> Sequence[Hashable]:
    """Return the first ``k`` distinct ids of ``ranked``, in order."""
    head = ranked[:k]
    if len(set(head)) == len(head):
        return head
    out: list[Hashable] = []
    for doc in _iter_unique(ranked):
        out.append(doc)
        if len(out) == k:
            break
    return out


def _linear_gain(grade: float) -> float:
    """The grade itself when positive, else 0."""
    return grade if grade > 0 else 0


def _exponential_gain(grade: float) -> float:
    """2^grade - 1 when the grade is positive, else 0."""
    return 2.0**grade - 1.0 if grade > 0 else 0.0


def _gain_function(gain: str) -> Callable[[float], float]:
    """Return the grade -> gain mapping named by ``gain`` ('linear' or 'exponential')."""
    if gain == "linear":
        return _linear_gain
    if gain == "exponential":
        return _exponential_gain
    raise ValueError(f"gain must be 'linear' or 'exponential', got {gain!r}")


def relevant_ids(gains: Mapping[Any, int], threshold: int = 1) -> frozenset[Hashable]:
    """The ids whose grade is >= threshold, the binary relevant set as trec_eval's ``-l threshold``
    makes it."""
    return frozenset(doc for doc, grade in gains.items() if grade >= threshold)


def precision_ceiling_at_k(num_relevant: int, k: int) -> float:
    """The best reachable precision@k, min(k, num_relevant) / k, since trec_eval's P_k always
    divides by k."""
    _check_k(k)
    if num_relevant < 0:
        raise ValueError(f"num_relevant must be >= 0, got {num_relevant!r}")
    return min(k, num_relevant) / k


def first_relevant_rank(ranked: Sequence[Hashable], relevant: Iterable[Hashable]) -> int | None:
    """The 1-based rank of the first relevant id in the de-duplicated ranking, i.e. 1 / trec_eval's
    recip_rank, or None when no relevant id was retrieved."""
    rel = _as_set(relevant)
    if not rel:
        return None
    for rank, doc in enumerate(_iter_unique(ranked), start=1):
        if doc in rel:
            return rank
    return None


def recall_at_k(ranked: Sequence[Hashable], relevant: Iterable[Hashable], k: int) -> float:
    """recall@k = |relevant ∩ top-k| / |relevant| as trec_eval's recall_k, and 0.0 when nothing
    is relevant."""
    _check_k(k)
    rel = _as_set(relevant)
    if not rel:
        return 0.0
    hits = sum(1 for doc in _top_unique(ranked, k) if doc in rel)
    return hits / len(rel)


def evidence_recall(ranks: Sequence[int | None], k: int) -> float:
    """Evidence recall@k: the share of a question's evidence units whose first relevant passage
    is within the top k (``ranks``: one rank or None per unit, as ``EvidenceUnits`` gives them);
    0.0 for a question without any unit."""
    _check_k(k)
    if not ranks:
        return 0.0
    return sum(1 for rank in ranks if rank is not None and rank <= k) / len(ranks)


def precision_at_k(ranked: Sequence[Hashable], relevant: Iterable[Hashable], k: int) -> float:
    """precision@k = |relevant ∩ top-k| / k, dividing by k even when fewer than k results came
    back, as trec_eval's P_k."""
    _check_k(k)
    rel = _as_set(relevant)
    if not rel:
        return 0.0
    hits = sum(1 for doc in _top_unique(ranked, k) if doc in rel)
    return hits / k


def success_at_k(ranked: Sequence[Hashable], relevant: Iterable[Hashable], k: int) -> float:
    """success@k = 1.0 if any relevant id is in the top k, else 0.0, as trec_eval's success_k."""
    _check_k(k)
    rel = _as_set(relevant)
    if not rel:
        return 0.0
    return 1.0 if any(doc in rel for doc in _top_unique(ranked, k)) else 0.0


def reciprocal_rank(ranked: Sequence[Hashable], relevant: Iterable[Hashable]) -> float:
    """RR = 1 / rank of the first relevant id over the whole ranking, 0.0 if there is none, as
    trec_eval's recip_rank."""
    rank = first_relevant_rank(ranked, relevant)
    return 0.0 if rank is None else 1.0 / rank


def average_precision(ranked: Sequence[Hashable], relevant: Iterable[Hashable]) -> float:
    """AP = (sum of precision@rank over the ranks of retrieved relevant ids) / |relevant|, as
    trec_eval's map for one query, and 0.0 when nothing is relevant."""
    rel = _as_set(relevant)
    if not rel:
        return 0.0
    hits = 0
    total = 0.0
    for rank, doc in enumerate(_iter_unique(ranked), start=1):
        if doc in rel:
            hits += 1
            total += hits / rank
    return total / len(rel)


def judged_at_k(ranked: Sequence[Hashable], judged: Iterable[Hashable], k: int) -> float:
    """Judged@k = |judged ∩ top-k| / min(k, len(ranked)) as ir_measures computes it (trec_eval has
    no such measure; its unj_k divides by k instead), and 0.0 for an empty run."""
    _check_k(k)
    top = _top_unique(ranked, k)
    if not top:
        return 0.0
    jud = _as_set(judged)
    return sum(1 for doc in top if doc in jud) / len(top)


def dcg_at_k(
    ranked: Sequence[Hashable],
    gains: Mapping[Any, int],
    k: int,
    gain: GainMode = "linear",
) -> float:
    """DCG@k = sum over ranks r <= k of gain(grade at r) / log2(r + 1), with gain = grade (or
    2^grade - 1 when gain='exponential') and 0 for grades <= 0, the numerator of trec_eval's
    ndcg_cut_k."""
    _check_k(k)
    to_gain = _gain_function(gain)
    top = _top_unique(ranked, k)
    discounts = _discounts(len(top))
    total = 0.0
    for i, doc in enumerate(top):
        grade = gains.get(doc)
        if grade is not None and grade > 0:
            total += to_gain(grade) * discounts[i]
    return total


def _ideal_dcg(gains: Mapping[Any, int], k: int, to_gain: Callable[[float], float]) -> float:
    """DCG@k of the ideal ranking: all positive grades in ``gains``, sorted descending, cut at k."""
    best = sorted((g for g in gains.values() if g > 0), reverse=True)[:k]
    discounts = _discounts(len(best))
    return sum(to_gain(g) * discounts[i] for i, g in enumerate(best))


def ndcg_at_k(
    ranked: Sequence[Hashable],
    gains: Mapping[Any, int],
    k: int,
    gain: GainMode = "linear",
) -> float:
    """nDCG@k = DCG@k / ideal DCG@k, the ideal sorting every grade in ``gains`` and nDCG being 0.0
    when the ideal is 0, as trec_eval's ndcg_cut_k (which knows only the default linear gain;
    gain='exponential', 2^g - 1, is an option of ours)."""
    _check_k(k)
    to_gain = _gain_function(gain)
    ideal = _ideal_dcg(gains, k, to_gain)
    if ideal <= 0.0:
        return 0.0
    return dcg_at_k(ranked, gains, k, gain) / ideal


@dataclass(frozen=True, slots=True)
class QuestionMetrics:
    """The per-question numbers, computed together by :func:`question_metrics`."""

    first_relevant_rank: int | None
    recall: float
    precision: float
    precision_ceiling: float
    rr: float
    ndcg: float
    num_relevant: int


def question_metrics(
    ranked: Sequence[Hashable],
    gains: Mapping[Any, int],
    k: int,
    threshold: int = 1,
    *,
    gain: GainMode = "linear",
) -> QuestionMetrics:
    """recall@k, P@k, its ceiling min(k, R) / k, RR, nDCG@k and the first relevant rank in one pass,
    with relevant meaning grade >= threshold (trec_eval -l) and each value equal to its function
    above (trec_eval's recall_k, P_k, recip_rank, ndcg_cut_k)."""
    _check_k(k)
    to_gain = _gain_function(gain)
    rel = relevant_ids(gains, threshold)
    num_relevant = len(rel)

    discounts = _discounts(min(k, len(ranked)))
    hits = 0
    dcg = 0.0
    first: int | None = None
    for i, doc in enumerate(_iter_unique(ranked)):
        if i >= k and (first is not None or not num_relevant):
            break
        if i < k:
            grade = gains.get(doc)
            if grade is not None and grade > 0:
                dcg += to_gain(grade) * discounts[i]
        if doc in rel:
            if first is None:
                first = i + 1
            if i < k:
                hits += 1

    ideal = _ideal_dcg(gains, k, to_gain)
    return QuestionMetrics(
        first_relevant_rank=first,
        recall=hits / num_relevant if num_relevant else 0.0,
        precision=hits / k if num_relevant else 0.0,
        precision_ceiling=min(k, num_relevant) / k,
        rr=1.0 / first if first is not None else 0.0,
        ndcg=dcg / ideal if ideal > 0.0 else 0.0,
        num_relevant=num_relevant,
    )
