"""How sure a mean is: the prediction-powered estimate of a mean with its 95 % interval, and the
range the unjudged pairs of a pool still allow one question's metric.

**The prediction-powered estimate** (Angelopoulos et al., Science 2023), in its finite-population
form. Over a set of N questions, ``y(q)`` is a metric computed with people's grades (known only on
the n questions of a simple random sample, drawn without replacement, that people judged fully)
and ``f(q)`` the same metric computed with a model judge's grades (known everywhere). The sampled
questions' values are known exactly, so the estimate fills the others with the model and corrects
them by the model's mean error on the sample::

    theta_hat = (sum_{q in s} y(q) + sum_{q not in s} f(q)) / N  -  ((N - n) / N) * mean_s(f - y)

which equals ``mean_N(f) - mean_s(r)`` with ``r = f - y``; its error is ``mean_N(r) - mean_s(r)``,
so it is unbiased whatever the judge, and its variance is that of a sample mean without replacement::

    Var = (S_r^2 / n) * (1 - n / N)        (S_r^2 with n - 1)

The 95 % interval is ``theta_hat +/- t_{0.975, df} * sqrt(Var)``, with Student's t and degrees of
freedom from the differences' kurtosis (``degrees_of_freedom``: ``n - 1`` when they look normal,
fewer when they are mostly zeros with a few large values, as a judge that is rarely but badly wrong
gives). In the Cranfield simulation (``tests/test_estimate_simulation.py``: 40 of 225 questions,
1,000 repetitions, three judges, four metrics) the normal quantile 1.96 covered 92.2-94.9 %,
t with ``n - 1`` 92.5-95.4 % and t with these degrees of freedom 93.9-96.0 %; docs/judges.md has
the figures.

The human-only interval is the same formula with ``f = 0``: the sample's mean of ``y`` with the same
finite-population variance. A better judge makes ``S_r`` smaller than ``S_y`` and the interval
narrower; a worse one widens it, never biases it.

**The unjudged range** (``unjudged_range``): a pair is unjudged when no grade counts for it (no
qrels entry or evidence-rule grade, no person's grade, and under ``--grades human+model`` no model
verdict); the metrics read it as not relevant. The range is the lowest and the highest value the
metric can take when every unjudged pair of the question's pool (the union of the retrievers' top k;
for RR the retriever's whole run) gets any grade of the scale, pairs outside the pool staying as
they are. It is not simply "all relevant" against "none relevant", because the denominators grow
with the relevant pool pairs too:

* recall@k = hits / R: an unjudged pair in the retriever's top k raises hits and R by one, and
  ``(h + 1) / (R + 1) >= h / R``; one outside its top k raises only R. So the high makes the top-k
  pairs relevant (the scale's highest grade) and the others not; the low does the opposite.
* precision@k and RR read only the retriever's own list: the high makes its unjudged pairs
  relevant, the low makes none relevant.
* nDCG@k = DCG / ideal DCG, the ideal sorting every grade of the question. A pair outside the top k
  moves only the ideal, so the high leaves those at 0 and the low gives them the highest grade. A
  pair inside the top k moves both: at rank 3 under a perfect ranking, a grade above the others'
  raises the ideal more than the DCG (ranks 1-2 at grade 2: nDCG 1.0; rank 3 at grade 4: 0.84), so
  neither "all relevant" nor "none relevant" is the top in general. The grades the top-k pairs take
  at the extremes are found exactly: for a given multiset of grades the DCG is largest with the
  largest grades at the best ranks (smallest at the best ranks for the low) and the ideal depends on
  the multiset only, so a dynamic programme over how many pairs take each grade, inside
  Dinkelbach's iteration for a ratio, finds the best and the worst multiset (O(grades * k^2) a step).

Every value is computed by ``ragtui.core.metrics.formulas`` on the grades chosen, so the bounds are
values trec_eval would print for some complete judgement of the pool.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np

from ragtui.core.metrics.formulas import (
    _check_k,
    _discounts,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    relevant_ids,
)

__all__ = [
    "CONFIDENCE",
    "MIN_SAMPLE",
    "RANGE_MEASURES",
    "Interval",
    "RangeMeasure",
    "Stratum",
    "degrees_of_freedom",
    "mean_interval",
    "ppi_mean",
    "stratified_mean",
    "t_quantile",
    "unjudged_range",
]

#: The interval's level.
CONFIDENCE = 0.95
#: Fewer sampled questions judged fully than this give no interval (the t interval needs a mean
#: and a spread it can trust; with 10 questions it is already about twice the width at 40).
MIN_SAMPLE = 10

#: The metrics whose unjudged range ``unjudged_range`` computes (the per-question field names).
RangeMeasure = Literal["recall", "precision", "rr", "ndcg"]
RANGE_MEASURES: tuple[RangeMeasure, ...] = ("recall", "precision", "rr", "ndcg")


# ---- Student's t quantile (no scipy at run time) ---------------------------------------------


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def _t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with ``df`` degrees of freedom (``t_{0.975, 39}`` = 2.0227),
    by bisection on its distribution function to 1e-12."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0, got p={p!r}, df={df!r}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while _t_cdf(high, df) < p:
        high *= 2.0
    while high - low > 1e-12 * max(1.0, high):
        mid = (low + high) / 2.0
        if _t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


# ---- the estimate and its interval -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Interval:
    """An estimate of a mean over ``population`` questions from ``n`` of them, with its interval
    (``df``: the degrees of freedom of the t quantile it used)."""

    estimate: float
    low: float
    high: float
    n: int
    population: int
    df: int
    #: Why the interval is as it is when that needs saying: an estimate or an end outside the
    #: measure's range was brought inside it, or the interval has no width (zero variance).
    note: str | None = None

    @property
    def half_width(self) -> float:
        """Half the interval's width: the ``± 0.04`` of ``0.33 ± 0.04``."""
        return (self.high - self.low) / 2.0

    @property
    def width(self) -> float:
        """The interval's width, high - low."""
        return self.high - self.low


@lru_cache(maxsize=256)
def _t_quantile_cached(p: float, df: int) -> float:
    return t_quantile(p, df)


def degrees_of_freedom(values: Sequence[float] | np.ndarray) -> int:
    """The t quantile's degrees of freedom for a sample mean: ``n - 1`` for normal-looking values,
    fewer when their kurtosis says the sample variance is less certain.

    ``S^2`` is approximated by a scaled chi-square whose variance matches
    ``Var(S^2) = sigma^4 * (2 / (n - 1) + kappa / n)`` (``kappa`` the excess kurtosis, estimated
    from the sample), which gives ``df = 2 / (2 / (n - 1) + kappa / n)``, rounded down, between 1
    and ``n - 1``. Differences that are mostly zeros with a few large values (a judge that is
    rarely but badly wrong) have a large kurtosis and get a wider, honest interval.
    """
    x = np.asarray(values, dtype=float)
    n = len(x)
    centred = x - float(np.mean(x))
    m2 = float(np.mean(centred**2))
    if n < 2 or m2 <= 0.0:
        return max(n - 1, 1)
    kappa = max(float(np.mean(centred**4)) / (m2 * m2) - 3.0, 0.0)
    df = 2.0 / (2.0 / (n - 1) + kappa / n)
    return max(1, min(n - 1, math.floor(df + 1e-9)))


def _checked(n: int, population: int) -> None:
    if n < 2:
        raise ValueError(f"an interval needs at least 2 sampled questions, got {n}")
    if population < n:
        raise ValueError(f"the population ({population}) is smaller than the sample ({n})")


@dataclass(frozen=True, slots=True)
class Stratum:
    """One stratum's values for ``stratified_mean``: the people's and the judge's values on its
    sampled questions (same order), the judge's on its other questions, and how unsure the judge
    was there before the draw (``doubt``: the allocation's guess at the differences' spread, 0 when
    not known)."""

    y: np.ndarray
    f: np.ndarray
    f_rest: np.ndarray
    doubt: float = 0.0

    @property
    def size(self) -> int:
        """The stratum's questions, sampled or not."""
        return len(self.y) + len(self.f_rest)


def _satterthwaite(terms: Sequence[float], dfs: Sequence[int]) -> int:
    """The degrees of freedom of a sum of variance terms, each with its own (Satterthwaite)."""
    total = math.fsum(terms)
    if total <= 0:
        return max(min(dfs), 1)
    shares = math.fsum(t * t / d for t, d in zip(terms, dfs, strict=True) if t > 0)
    return max(1, math.floor(total * total / shares + 1e-9))


def stratified_mean(strata: Sequence[Stratum], confidence: float = CONFIDENCE) -> Interval:
    """The prediction-powered estimate over strata sampled apart, with its interval (one stratum:
    a simple random sample, ``ppi_mean``).

    In stratum h (N_h questions, n_h of them drawn without replacement) the estimate is
    ``theta_h = (sum_{s_h} y + sum_{rest} f) / N_h - ((N_h - n_h) / N_h) * mean_{s_h}(r)`` with
    ``r = f - y``; over the strata ``theta = sum_h W_h theta_h`` (``W_h = N_h / N``): unbiased
    whatever the judge and however the sample was allocated, with
    ``Var = sum_h W_h^2 (1 - n_h / N_h) S_{r,h}^2 / n_h``. The t quantile's degrees of freedom are
    Satterthwaite's over the strata, each stratum's from ``degrees_of_freedom``.

    A stratum the judge was sure of gets few questions, and a few differences that are all 0 say
    its spread is 0 when it is only small. So where the strata carry a ``doubt``, no stratum's
    variance is taken below the pooled within-stratum variance times the square of its doubt over
    the strata's mean doubt (capped at 1): in the Cranfield simulation
    (``tests/unit/test_sampling_design.py``) recall@10 covered 92 % without it. People's values
    alone are ``f = 0`` (``mean_interval``).
    """
    if not strata:
        raise ValueError("an interval needs at least one stratum")
    sizes = np.array([s.size for s in strata], dtype=float)
    population = int(sizes.sum())
    _checked(sum(len(s.y) for s in strata), population)
    residuals = []
    for s in strata:
        if len(s.y) != len(s.f):
            raise ValueError("a stratum's y and f must have the same length")
        if len(s.y) < (2 if len(strata) > 1 else 1):
            raise ValueError(f"each stratum needs at least 2 sampled questions, got {len(s.y)}")
        residuals.append(np.asarray(s.f, dtype=float) - np.asarray(s.y, dtype=float))
    weights = sizes / population
    estimate = 0.0
    for s, r, w in zip(strata, residuals, weights, strict=True):
        known = math.fsum(np.asarray(s.y, dtype=float).tolist())
        filled = (known + math.fsum(np.asarray(s.f_rest, dtype=float).tolist())) / s.size
        estimate += float(w) * (filled - (len(s.f_rest) / s.size) * float(np.mean(r)))
    variances = [float(np.var(r, ddof=1)) if len(r) > 1 else 0.0 for r in residuals]
    doubts = np.array([s.doubt for s in strata], dtype=float)
    mean_doubt = float(np.dot(weights, doubts))
    if len(strata) > 1 and mean_doubt > 0:
        pooled = math.fsum((len(r) - 1) * v for r, v in zip(residuals, variances, strict=True))
        pooled /= sum(len(r) - 1 for r in residuals)
        variances = [
            max(v, pooled * min(d / mean_doubt, 1.0) ** 2)
            for v, d in zip(variances, doubts, strict=True)
        ]
    terms = [
        float(w * w) * (1.0 - len(r) / size) * v / len(r)
        for r, v, w, size in zip(residuals, variances, weights, sizes, strict=True)
    ]
    df = _satterthwaite(terms, [degrees_of_freedom(r) for r in residuals])
    spread = _t_quantile_cached(0.5 + confidence / 2.0, df) * math.sqrt(math.fsum(terms))
    people_alone = all(
        not np.any(np.asarray(s.f, dtype=float)) and not np.any(np.asarray(s.f_rest, dtype=float))
        for s in strata
    )
    zero = (
        "no width: every sampled question has the same value, so the sample shows no uncertainty"
        if people_alone
        else "no width: the judge and the people differ by the same amount on every sampled "
        "question, so the sample shows no uncertainty (a larger sample, or a judge that errs "
        "unevenly, will)"
    )
    return _bounded(estimate, spread, sum(len(r) for r in residuals), population, df, zero)


def ppi_mean(
    y_sample: Sequence[float] | np.ndarray,
    f_sample: Sequence[float] | np.ndarray,
    f_rest: Sequence[float] | np.ndarray,
    confidence: float = CONFIDENCE,
) -> Interval:
    """The prediction-powered estimate of a mean over n + len(f_rest) questions from a simple
    random sample, with its interval: ``stratified_mean`` with one stratum.

    ``y_sample`` and ``f_sample`` are the people's and the model's values on the n sampled
    questions (same order), ``f_rest`` the model's values on every other question:
    ``theta_hat = (sum y_s + sum f_rest) / N - ((N - n) / N) * mean_s(f - y)`` and
    ``theta_hat +/- t_{(1+c)/2, df} * sqrt(S_r^2 / n * (1 - n / N))`` with ``r = f - y``
    (``df`` from ``degrees_of_freedom(r)``).
    """
    y = np.asarray(y_sample, dtype=float)
    f = np.asarray(f_sample, dtype=float)
    if y.shape != f.shape:
        raise ValueError("y_sample and f_sample must have the same length")
    return stratified_mean([Stratum(y, f, np.asarray(f_rest, dtype=float))], confidence)


def _bounded(
    estimate: float, spread: float, n: int, population: int, df: int, zero: str
) -> Interval:
    """The interval ``estimate +/- spread`` with the estimate and both ends inside [0, 1] (every
    measure's range), saying so when that moved them, and why when it has no width."""
    notes = []
    if spread <= 1e-12 * max(1.0, abs(estimate)):
        spread = 0.0  # rounding of equal differences, not uncertainty
    low, high = estimate - spread, estimate + spread
    inside = min(max(estimate, 0.0), 1.0)
    if low < 0.0 or high > 1.0 or inside != estimate:
        notes.append(
            f"brought inside the measure's range 0-1 (unbounded: {estimate:.3f} "
            f"[{low:.3f}, {high:.3f}])"
        )
    if spread <= 0.0:
        notes.append(
            "no width: every question is in the sample, so the mean is exact"
            if n == population
            else zero
        )
    return Interval(
        inside,
        min(max(low, 0.0), 1.0),
        min(max(high, 0.0), 1.0),
        n,
        population,
        df,
        "; ".join(notes) or None,
    )


def mean_interval(
    y_sample: Sequence[float] | np.ndarray, population: int, confidence: float = CONFIDENCE
) -> Interval:
    """The human-only estimate: the sample's mean of ``y`` with the same finite-population interval,
    ``mean_s(y) +/- t_{(1+c)/2, df} * sqrt(S_y^2 / n * (1 - n / N))`` (one stratum, f = 0)."""
    y = np.asarray(y_sample, dtype=float)
    _checked(len(y), population)
    rest = np.zeros(population - len(y))
    return stratified_mean([Stratum(y, np.zeros_like(y), rest)], confidence)


# ---- the range the unjudged pairs allow ------------------------------------------------------


def _unique(ranked: Iterable[Hashable]) -> list[Hashable]:
    seen: set[Hashable] = set()
    out = []
    for doc in ranked:
        if doc not in seen:
            seen.add(doc)
            out.append(doc)
    return out


def _binary_value(
    measure: RangeMeasure,
    ranked: Sequence[Hashable],
    gains: Mapping[Any, int],
    k: int,
    threshold: int,
) -> float:
    relevant = relevant_ids(gains, threshold)
    if measure == "recall":
        return recall_at_k(ranked, relevant, k)
    if measure == "precision":
        return precision_at_k(ranked, relevant, k)
    return reciprocal_rank(ranked, relevant)


def _ideal_steps(values: list[int], fixed: Mapping[int, int]) -> list[tuple[int, int, int]]:
    """(value, fixed items above it, fixed items at it) for each grade value, largest first."""
    out = []
    above = 0
    for value in values:
        at = fixed.get(value, 0)
        out.append((value, above, at))
        above += at
    return out


def _best_multiset(
    top_discounts: list[float],
    fixed: Mapping[int, int],
    max_grade: int,
    k: int,
    lam: float,
    highest: bool,
) -> tuple[float, list[int]]:
    """The grades of the unjudged top-k pairs that make ``DCG - lam * ideal DCG`` largest
    (``highest``) or smallest, with the DCG they add and the ideal they make: a dynamic programme
    over how many pairs take each grade, largest grade first.

    ``top_discounts`` are the pairs' discounts best rank first; ``fixed`` counts the other positive
    grades of the question (judged, and pool pairs held at a grade) by value. Returns the objective
    and the grade of each pair (in ``top_discounts`` order).
    """
    m = len(top_discounts)
    # For the high the largest grades take the best ranks; for the low the worst ranks.
    order = list(range(m)) if highest else list(range(m - 1, -1, -1))
    prefix = [0.0]
    for i in order:
        prefix.append(prefix[-1] + top_discounts[i])
    discounts = _discounts(k)
    ideal_prefix = [0.0]
    for j in range(k):
        ideal_prefix.append(ideal_prefix[-1] + discounts[j])

    def ideal_sum(start: int, count: int) -> float:
        a, b = min(start, k), min(start + count, k)
        return ideal_prefix[b] - ideal_prefix[a]

    values = sorted(set(range(1, max_grade + 1)) | {v for v in fixed if v > 0}, reverse=True)
    steps = _ideal_steps(values, fixed)
    sign = 1.0 if highest else -1.0
    # best[a]: the best signed objective with a pairs given grades so far; choice per step.
    best = [0.0] + [-math.inf] * m
    choices: list[list[int]] = []
    for value, above, at in steps:
        new = [-math.inf] * (m + 1)
        pick = [0] * (m + 1)
        for done in range(m + 1):
            if best[done] == -math.inf:
                continue
            start = above + done  # ideal positions taken before this grade
            most = m - done if value <= max_grade else 0
            for count in range(most + 1):
                gain = value * (prefix[done + count] - prefix[done])
                ideal = value * ideal_sum(start, count + at)
                score = best[done] + sign * (gain - lam * ideal)
                if score > new[done + count]:
                    new[done + count] = score
                    pick[done + count] = count
        best = new
        choices.append(pick)
    end = max(range(m + 1), key=lambda a: best[a])
    grades = [0] * m
    assigned = end
    for (value, _, _), pick in zip(reversed(steps), reversed(choices), strict=True):
        count = pick[assigned]
        for slot in range(assigned - count, assigned):
            grades[order[slot]] = value
        assigned -= count
    return sign * best[end], grades


def _ndcg_extreme(
    ranked: Sequence[Hashable],
    gains: Mapping[Any, int],
    top_unjudged: list[Hashable],
    others: list[Hashable],
    k: int,
    max_grade: int,
    highest: bool,
) -> float:
    """The largest (``highest``) or smallest nDCG@k over every grade of the unjudged pairs."""
    held = dict(gains)
    if not highest:
        held.update((doc, max_grade) for doc in others)
    if not top_unjudged or max_grade <= 0:
        return ndcg_at_k(ranked, held, k)
    rank_of = {doc: i for i, doc in enumerate(_unique(ranked)[:k])}
    discounts = _discounts(k)
    top_discounts = [discounts[rank_of[doc]] for doc in top_unjudged]
    fixed: dict[int, int] = {}
    for grade in held.values():
        if grade > 0:
            fixed[grade] = fixed.get(grade, 0) + 1

    def with_grades(grades: list[int]) -> dict[Hashable, int]:
        out = dict(held)
        out.update(zip(top_unjudged, grades, strict=True))
        return out

    # Dinkelbach: lam is a value reached; a multiset beating DCG - lam * ideal reaches more.
    grades = [0] * len(top_unjudged)
    value = ndcg_at_k(ranked, with_grades(grades), k)
    for _ in range(100):
        score, candidate = _best_multiset(top_discounts, fixed, max_grade, k, value, highest)
        found = ndcg_at_k(ranked, with_grades(candidate), k)
        better = found > value if highest else found < value
        if not better or abs(score) <= 1e-12:
            if better:
                value = found
            break
        value = found
    return value


def unjudged_range(
    measure: RangeMeasure,
    ranked: Sequence[Hashable],
    gains: Mapping[Any, int],
    pool: Iterable[Hashable],
    k: int,
    threshold: int = 1,
    max_grade: int = 2,
) -> tuple[float, float]:
    """The lowest and highest value of one question's ``measure`` when every unjudged pair gets any
    grade from 0 to ``max_grade`` (see the module's docstring).

    ``ranked`` is the retriever's ranking (ids, best first), ``gains`` the grades that count (an id
    missing from it is unjudged), ``pool`` the question's pool: the union of every retriever's top
    k (for ``rr``, of their whole runs). Unjudged ids in the retriever's top k (for ``rr``, its
    whole run) are its own; the pool's other unjudged ids move only the denominators. The values
    follow ``formulas`` (trec_eval's conventions, linear gain).
    """
    _check_k(k)
    unique = _unique(ranked)
    top = unique if measure == "rr" else unique[:k]
    top_set = set(top)
    top_unjudged = [doc for doc in top if doc not in gains]
    others = [doc for doc in _unique(pool) if doc not in gains and doc not in top_set]
    if measure == "ndcg":
        low = _ndcg_extreme(ranked, gains, top_unjudged, others, k, max_grade, highest=False)
        high = _ndcg_extreme(ranked, gains, top_unjudged, others, k, max_grade, highest=True)
        return low, high
    if measure not in RANGE_MEASURES:
        raise ValueError(f"unknown measure {measure!r}")
    high_gains = {**gains, **dict.fromkeys(top_unjudged, max_grade)}
    low_gains = {**gains, **dict.fromkeys(others, max_grade)}
    return (
        _binary_value(measure, ranked, low_gains, k, threshold),
        _binary_value(measure, ranked, high_gains, k, threshold),
    )
