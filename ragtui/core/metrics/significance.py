"""Is a difference real? Per-question win/tie/loss, a paired randomisation test and a bootstrap interval.

Everything compares system B against system A on the questions both evaluate, question by question:
the difference is ``B - A``, so a positive mean difference and a "win" mean B scored higher.

* Paired randomisation test (two-sided; Fisher's sign-flip test, as in Smucker, Allan and Carterette
  2007): under the null hypothesis the two systems are exchangeable on every question, so each
  paired difference is equally likely to have either sign.  The statistic is |mean difference|.
  When 2^n <= ``n_permutations`` every sign pattern is enumerated and the p-value is exact:
  ``p = #{patterns with |mean| >= |observed|} / 2^n``.  Otherwise ``n_permutations`` patterns are
  drawn with a seeded generator and ``p = (#{|mean| >= |observed|} + 1) / (n_permutations + 1)``,
  which counts the observed pattern and is never 0 (Phipson and Smyth 2010; what
  ``scipy.stats.permutation_test`` does for a random test).  Ties with the observed value (within
  1e-12) count as at least as extreme.
* Bootstrap percentile interval: ``n_resamples`` resamples of the questions with replacement
  (seeded), the mean difference of each, and the 2.5th and 97.5th percentiles (linear
  interpolation, numpy's default) for a 95 % interval.

Both are vectorised in numpy and work in blocks, so memory stays small for large question sets.

* Corrections for many comparisons at once (``ragtui experiment`` tests every variant, retriever
  and measure against the baseline): Holm's step-down adjustment (Holm 1979), which keeps the
  chance of any false "significant" in the whole table at most alpha whatever the dependence
  between the tests, and Benjamini-Hochberg's step-up adjustment (1995), which keeps the expected
  share of false ones among the significant at most alpha (valid for independent or positively
  dependent tests). Both return adjusted p-values, compared with alpha as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ragtui.core.metrics.measures import Measure, System, same_unit

__all__ = [
    "CORRECTIONS",
    "Comparison",
    "MetricComparison",
    "adjust_p_values",
    "benjamini_hochberg",
    "bootstrap_interval",
    "compare_systems",
    "holm",
    "paired_randomization_test",
    "win_tie_loss",
]

#: Permutations and bootstrap resamples by default.
N_PERMUTATIONS = 10_000
N_RESAMPLES = 10_000
DEFAULT_SEED = 0
#: Differences within this are ties, and permuted means within this of the observed one count as extreme.
TOLERANCE = 1e-12
#: Cells (rows x questions) handled per block.
_BLOCK_CELLS = 4_000_000


def _as_differences(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> np.ndarray:
    first = np.asarray(a, dtype=np.float64)
    second = np.asarray(b, dtype=np.float64)
    if first.shape != second.shape or first.ndim != 1:
        raise ValueError("the two samples must be paired: one-dimensional and of the same length")
    return second - first


def win_tie_loss(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray
) -> tuple[int, int, int]:
    """(wins, ties, losses) of B against A, question by question; differences within 1e-12 are ties."""
    diff = _as_differences(a, b)
    wins = int(np.count_nonzero(diff > TOLERANCE))
    losses = int(np.count_nonzero(diff < -TOLERANCE))
    return wins, len(diff) - wins - losses, losses


def paired_randomization_test(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    n_permutations: int = N_PERMUTATIONS,
    seed: int = DEFAULT_SEED,
) -> float:
    """Two-sided p-value of the sign-flip test on the paired differences B - A (exact when 2^n <= n_permutations)."""
    diff = _as_differences(a, b)
    n = len(diff)
    if n == 0:
        return 1.0
    if n_permutations < 1:
        raise ValueError("n_permutations must be at least 1")
    observed = abs(float(np.ones(n) @ diff)) / n
    threshold = observed - TOLERANCE
    if n < 63 and 1 << n <= n_permutations:
        patterns = 1 << n
        count = 0
        rows = max(1, _BLOCK_CELLS // n)
        bits = np.arange(n, dtype=np.int64)
        for start in range(0, patterns, rows):
            codes = np.arange(start, min(start + rows, patterns), dtype=np.int64)
            signs = 1.0 - 2.0 * ((codes[:, None] >> bits) & 1)
            count += int(np.count_nonzero(np.abs(signs @ diff) / n >= threshold))
        return float(count / patterns)
    rng = np.random.default_rng(seed)
    count = 0
    rows = max(1, _BLOCK_CELLS // n)
    for start in range(0, n_permutations, rows):
        size = min(rows, n_permutations - start)
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(size, n), dtype=np.int8)
        count += int(np.count_nonzero(np.abs(signs @ diff) / n >= threshold))
    return (count + 1) / (n_permutations + 1)


def bootstrap_interval(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    n_resamples: int = N_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval (default 95 %) of the mean paired difference B - A, questions resampled with replacement."""
    diff = _as_differences(a, b)
    n = len(diff)
    if n == 0:
        return (0.0, 0.0)
    if n_resamples < 1 or not 0.0 < level < 1.0:
        raise ValueError("n_resamples must be at least 1 and level between 0 and 1")
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples, dtype=np.float64)
    rows = max(1, _BLOCK_CELLS // n)
    for start in range(0, n_resamples, rows):
        size = min(rows, n_resamples - start)
        picks = rng.integers(0, n, size=(size, n))
        means[start : start + size] = diff[picks].mean(axis=1)
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return float(low), float(high)


@dataclass(frozen=True, slots=True)
class MetricComparison:
    """One measure compared: both means, the mean difference B - A, win/tie/loss, p-value and interval."""

    measure: str
    mean_a: float
    mean_b: float
    mean_difference: float
    wins: int
    ties: int
    losses: int
    p_value: float
    ci_low: float
    ci_high: float

    def as_dict(self) -> dict[str, object]:
        """The fields by name, for JSON."""
        return {
            "measure": self.measure,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "mean_difference": self.mean_difference,
            "wins": self.wins,
            "ties": self.ties,
            "losses": self.losses,
            "p_value": self.p_value,
            "ci95": [self.ci_low, self.ci_high],
        }


@dataclass(frozen=True)
class Comparison:
    """System B against system A on the questions both evaluate."""

    a: str
    b: str
    questions: list[str]
    only_a: list[str]
    only_b: list[str]
    metrics: list[MetricComparison]
    n_permutations: int
    n_resamples: int
    seed: int
    per_question: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """The comparison as a JSON-ready object."""
        return {
            "a": self.a,
            "b": self.b,
            "questions": len(self.questions),
            "only_a": self.only_a,
            "only_b": self.only_b,
            "permutations": self.n_permutations,
            "resamples": self.n_resamples,
            "seed": self.seed,
            "metrics": {m.measure: m.as_dict() for m in self.metrics},
        }


def compare_systems(
    a: System,
    b: System,
    measures: Sequence[Measure],
    *,
    n_permutations: int = N_PERMUTATIONS,
    n_resamples: int = N_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Comparison:
    """Compare B against A on every measure, over the questions both evaluate (golden-set order of A).

    Both must be in one unit (docs/metrics.md#units): a chunk-level and an evidence-level system
    are refused with one line (InputError), since their recall has two definitions.
    """
    same_unit(a, b)
    evaluated_a = a.evaluated()
    evaluated_b = set(b.evaluated())
    common = [q for q in evaluated_a if q in evaluated_b]
    common_set = set(common)
    only_a = [q for q in evaluated_a if q not in common_set]
    only_b = [q for q in b.evaluated() if q not in common_set]
    results = []
    per_question: dict[str, dict[str, tuple[float, float]]] = {q: {} for q in common}
    for measure in measures:
        va = a.values(measure, common)
        vb = b.values(measure, common)
        wins, ties, losses = win_tie_loss(va, vb)
        low, high = bootstrap_interval(va, vb, n_resamples, seed)
        results.append(
            MetricComparison(
                measure=measure.name,
                mean_a=float(va.mean()) if common else 0.0,
                mean_b=float(vb.mean()) if common else 0.0,
                mean_difference=float((vb - va).mean()) if common else 0.0,
                wins=wins,
                ties=ties,
                losses=losses,
                p_value=paired_randomization_test(va, vb, n_permutations, seed),
                ci_low=low,
                ci_high=high,
            )
        )
        for i, q in enumerate(common):
            per_question[q][measure.name] = (float(va[i]), float(vb[i]))
    return Comparison(
        a.label,
        b.label,
        common,
        only_a,
        only_b,
        results,
        n_permutations,
        n_resamples,
        seed,
        per_question,
    )


def _p_array(p_values: Sequence[float]) -> np.ndarray:
    values = np.asarray(p_values, dtype=np.float64)
    if values.ndim != 1 or np.any(~np.isfinite(values)) or np.any((values < 0) | (values > 1)):
        raise ValueError("p-values must be a flat list of numbers between 0 and 1")
    return values


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values: with p sorted ascending, ``adj(i) = max over j <= i of
    min(1, (m - j + 1) p(j))`` (1-based), returned in the input's order."""
    values = _p_array(p_values)
    m = len(values)
    if m == 0:
        return []
    order = np.argsort(values, kind="stable")
    scaled = (m - np.arange(m)) * values[order]
    adjusted = np.minimum(1.0, np.maximum.accumulate(scaled))
    out = np.empty(m, dtype=np.float64)
    out[order] = adjusted
    return [float(v) for v in out]


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg's step-up adjusted p-values: with p sorted ascending, ``adj(i) = min over
    j >= i of min(1, m p(j) / j)`` (1-based), returned in the input's order."""
    values = _p_array(p_values)
    m = len(values)
    if m == 0:
        return []
    order = np.argsort(values, kind="stable")
    scaled = values[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    out = np.empty(m, dtype=np.float64)
    out[order] = adjusted
    return [float(v) for v in out]


#: ``--correction`` name -> (adjustment, what it controls).
CORRECTIONS = {
    "holm": (holm, "Holm: family-wise error rate"),
    "bh": (benjamini_hochberg, "Benjamini-Hochberg: false discovery rate"),
}


def adjust_p_values(p_values: Sequence[float], method: str = "holm") -> list[float]:
    """Adjusted p-values by ``method`` (``holm`` or ``bh``)."""
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}; choose from {', '.join(CORRECTIONS)}")
    return CORRECTIONS[method][0](p_values)
