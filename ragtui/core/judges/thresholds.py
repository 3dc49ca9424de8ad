"""Score thresholds: how a judge that scores a pair (a cosine, a cross-encoder's score) gives a grade.

On a scale of grades 0..N-1 there are N-1 thresholds ``t1 < t2 < ...``: a pair scoring at least
``t_g`` (and below ``t_(g+1)``) gets grade ``g``; below ``t1`` it gets 0. The thresholds are, in
this order of precedence:

1. the ones the judge's ``[judges.NAME]`` table gives (``thresholds = [0.4, 0.6]``);
2. fitted to the people's grades, when at least :data:`MIN_FIT_PAIRS` pairs are graded with at
   least two different grades: the thresholds that maximise the quadratic-weighted Cohen's kappa
   between the judge and the people on those pairs (ties: the higher accuracy, then the lower
   thresholds), found by an exact search over every way of cutting the pairs' observed scores
   (each threshold halfway between two neighbouring scores; up to :data:`SEARCH_BUDGET`
   combinations, beyond which evenly spaced cut points are tried and the note says how many);
3. else the judge's documented defaults (:func:`default_thresholds`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragtui.core.data.grades import GradeScale
from ragtui.core.judges.base import JudgeError

__all__ = [
    "MIN_FIT_PAIRS",
    "SEARCH_BUDGET",
    "Fit",
    "Thresholds",
    "choose_thresholds",
    "default_thresholds",
    "fit_thresholds",
    "weighted_kappa",
]

#: Graded pairs needed before thresholds are fitted to them (with at least two grades among them).
MIN_FIT_PAIRS = 30
#: Threshold combinations the exact search tries at most (a 0-2 scale searches every cut of up to
#: about 3,000 distinct scores).
SEARCH_BUDGET = 5_000_000
#: Of which the ways of placing every threshold but the last (each one pass over the last's places).
OUTER_BUDGET = 20_000


def _number(value: float, other: float | None = None) -> str:
    """``value`` with two decimals, or more when ``other`` would print the same (0.635 vs 0.634)."""
    for places in range(2, 8):
        text = f"{value:.{places}f}"
        if other is None or other == value or text != f"{other:.{places}f}":
            return text
    return repr(value)


@dataclass(frozen=True)
class Thresholds:
    """N-1 rising thresholds for the grades 1..N-1 of a scale (``values[g - 1]`` starts grade g)."""

    values: tuple[float, ...]

    def grade(self, score: float) -> int:
        """The grade of a score: the highest g whose threshold it reaches (0 below them all)."""
        return sum(1 for t in self.values if score >= t)

    def describe(self) -> str:
        """``>=0.41 -> 1, >=0.63 -> 2``."""
        return ", ".join(f">={_number(t)} -> {g}" for g, t in enumerate(self.values, start=1))

    def reason(self, what: str, score: float) -> str:
        """Why a score got its grade: ``cosine 0.71 >= 0.63 (grade 2)``, ``cosine 0.12 < 0.41 (grade 0)``."""
        grade = self.grade(score)
        if grade == 0:
            first = self.values[0]
            return f"{what} {_number(score, first)} < {_number(first, score)} (grade 0)"
        reached = self.values[grade - 1]
        return f"{what} {_number(score, reached)} >= {_number(reached, score)} (grade {grade})"


def default_thresholds(grades: int, low: float, high: float) -> Thresholds:
    """Defaults for ``grades`` grades: ``low`` starts grade 1, ``high`` the top grade, the grades
    between evenly spaced (a two-grade scale has ``low`` only)."""
    if grades < 2:
        raise JudgeError("a grade scale needs at least two grades")
    steps = grades - 1
    if steps == 1:
        return Thresholds((low,))
    return Thresholds(tuple(low + (high - low) * i / (steps - 1) for i in range(steps)))


def weighted_kappa(human: Sequence[int], judge: Sequence[int], grades: int) -> float:
    """Cohen's kappa with quadratic weights between two gradings of the same pairs (nan when chance
    agreement is perfect)."""
    observed = np.zeros((grades, grades))
    for h, j in zip(human, judge, strict=True):
        observed[h, j] += 1
    n = observed.sum()
    levels = np.arange(grades)
    weights = (levels[:, None] - levels[None, :]) ** 2
    expected = np.outer(observed.sum(1), observed.sum(0)) / n
    chance = float((weights * expected).sum())
    return math.nan if chance == 0 else 1.0 - float((weights * observed).sum()) / chance


@dataclass(frozen=True)
class Fit:
    """Thresholds fitted to people's grades: the thresholds, the kappa and accuracy they reach on the
    graded pairs, and how many cut points were tried of how many there are."""

    thresholds: Thresholds
    kappa: float
    accuracy: float
    searched: int
    cut_points: int


def _cut_values(values: np.ndarray) -> np.ndarray:
    """The threshold each cut point stands for: halfway between neighbouring distinct scores, and
    just outside the lowest and the highest (cut 0: everything at or above; cut K: nothing)."""
    spread = float(values[-1] - values[0]) if len(values) > 1 else 0.0
    margin = spread / max(1, len(values)) if spread > 0 else max(1e-6, abs(float(values[0])) * 1e-3)
    inner = (values[:-1] + values[1:]) / 2
    return np.concatenate(([values[0] - margin], inner, [values[-1] + margin]))


def _budgeted(points: int, cuts: int) -> np.ndarray:
    """The cut points searched: all ``points`` while the search fits its budget (combinations, and
    the loops over all cuts but the last, which is searched at once), else an evenly spaced subset
    (the ends always in)."""

    def fits(m: int) -> bool:
        return math.comb(m, cuts) <= SEARCH_BUDGET and math.comb(m, cuts - 1) <= OUTER_BUDGET

    if fits(points):
        return np.arange(points)
    keep = points
    while keep > cuts + 1 and not fits(keep):
        keep = max(cuts + 1, int(keep * 0.95))
    return np.unique(np.linspace(0, points - 1, keep).round().astype(np.int64))


def fit_thresholds(scores: Sequence[float], human: Sequence[int], grades: int) -> Fit:
    """The thresholds maximising quadratic-weighted kappa with ``human`` (grades 0..grades-1) on the
    pairs' ``scores``; ties go to the higher accuracy, then to the lower thresholds."""
    if grades < 2:
        raise JudgeError("a grade scale needs at least two grades")
    score_array = np.asarray(scores, dtype=np.float64)
    values, where = np.unique(score_array, return_inverse=True)
    k = len(values)
    counts = np.zeros((k, grades))
    np.add.at(counts, (where, np.asarray(human, dtype=np.int64)), 1)
    # cum[b, h]: pairs of people's grade h among the b lowest distinct scores (b = 0..k).
    cum = np.vstack([np.zeros((1, grades)), np.cumsum(counts, axis=0)])
    n = float(len(score_array))
    rows = cum[-1]
    levels = np.arange(grades)
    weights = ((levels[:, None] - levels[None, :]) ** 2).astype(np.float64)
    # chance = sum_p (pairs the judge gives p) * u[p] / n, u[p] = sum_h weights[h, p] * rows[h].
    u = weights.T @ rows
    cuts = grades - 1
    candidates = _budgeted(k + 1, cuts)
    best: tuple[float, float, tuple[int, ...]] | None = None

    def segment(lo: int | np.ndarray, hi: int | np.ndarray) -> np.ndarray:
        out: np.ndarray = cum[hi] - cum[lo]
        return out

    for prefix in itertools.combinations(candidates[:-1].tolist(), cuts - 1):
        start = prefix[-1] if prefix else -1
        last = candidates[candidates > start]
        if len(last) == 0:
            continue
        edges = (0, *prefix)
        disagreement = chance = agree = 0.0
        for p in range(cuts - 1):
            seg = segment(edges[p], edges[p + 1])
            disagreement += float(seg @ weights[:, p])
            chance += float(seg.sum()) * float(u[p])
            agree += float(seg[p])
        lower = segment(edges[-1], last)  # grade cuts-1: from the prefix's last cut to b
        upper = segment(last, k)  # the top grade: from b to the end
        dis = disagreement + lower @ weights[:, cuts - 1] + upper @ weights[:, cuts]
        cha = (chance + lower.sum(1) * u[cuts - 1] + upper.sum(1) * u[cuts]) / n
        acc = (agree + lower[:, cuts - 1] + upper[:, cuts]) / n
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa = np.where(cha > 0, 1.0 - dis / np.where(cha > 0, cha, 1.0), -np.inf)
        # The best b for this prefix: highest kappa, then accuracy, then the lowest b.
        order = np.lexsort((np.arange(len(last)), -acc, -np.round(kappa, 12)))
        i = int(order[0])
        found = (round(float(kappa[i]), 12), round(float(acc[i]), 12), (*prefix, int(last[i])))
        if best is None or (found[0], found[1]) > (best[0], best[1]):
            best = found
    if best is None:
        raise JudgeError("too few distinct scores to place the thresholds")
    cut_values = _cut_values(values)
    thresholds = Thresholds(tuple(float(cut_values[b]) for b in best[2]))
    return Fit(thresholds, best[0], best[1], len(candidates), k + 1)


def _people(count: int) -> str:
    return f"{count:,} people's grade" + ("" if count == 1 else "s")


def choose_thresholds(
    given: Sequence[float] | None,
    source: str,
    scale: GradeScale,
    graded: Sequence[tuple[float, int]],
    defaults: Thresholds,
    defaults_note: str = "",
) -> tuple[Thresholds, str]:
    """The thresholds a judge grades with, and one line saying which: ``given`` (from ``source``),
    else fitted to ``graded`` (score, people's grade) when there are enough, else ``defaults``.

    ``graded`` holds only grades on the scale. JudgeError when ``given`` does not fit the scale.
    """
    grades = len(scale)
    if given is not None:
        if len(given) != grades - 1:
            raise JudgeError(
                f"{source}: thresholds gives {len(given)} values; a scale of {grades} grades "
                f"needs {grades - 1} (one for each grade above 0)"
            )
        chosen = Thresholds(tuple(given))
        return chosen, f"thresholds from {source}: {chosen.describe()}"
    used = sorted({g for _, g in graded})
    if len(graded) >= MIN_FIT_PAIRS and len(used) >= 2:
        fit = fit_thresholds([s for s, _ in graded], [g for _, g in graded], grades)
        searched = (
            ""
            if fit.searched == fit.cut_points
            else f"; {fit.searched:,} of {fit.cut_points:,} cut points searched"
        )
        note = (
            f"thresholds fitted to {_people(len(graded))}: {fit.thresholds.describe()} "
            f"(weighted kappa {fit.kappa:.2f}, accuracy {fit.accuracy:.0%} on them{searched})"
        )
        return fit.thresholds, note
    if len(graded) < MIN_FIT_PAIRS:
        why = f"too few people's grades ({len(graded):,} < {MIN_FIT_PAIRS})"
    else:
        why = f"the people's {len(graded):,} grades are all {used[0]}"
    extra = f" {defaults_note}" if defaults_note else ""
    return defaults, f"{why}: default thresholds {defaults.describe()}{extra}"
