"""ragtui's prediction-powered intervals against the authors' reference implementation, ``ppi-python``
(``ppi_py.ppi_mean_ci``, Angelopoulos et al.), on the same Cranfield data.

The data are ``test_estimate_simulation.py``'s: Cranfield's qrels as the people's grades, BM25's top
10 as the pool, a judge that replaces 10 % of the pool pairs' grades. Each case draws the judge's
errors and a sample of 40 questions: a simple random sample, or strata by the judge's doubt
(``confidence_strata``, ``draw_stratified``) with the stratified estimate.

What must agree, and what differs by design:

- **The estimate** is the same number. ``ppi_py`` with ``lam=1`` (plain PPI) and the judge's values
  on every question as its unlabelled set gives ``mean_N(f) + mean_s(y - f)``, which is ragtui's
  ``theta``. For strata, ``ppi_py``'s sample weights ``w_i = (N_h / n_h) / (N / n)`` (the inverse
  chance of being drawn, scaled to mean 1) make its estimate ragtui's stratified one.
- **The width** differs in known ways: ``ppi_py`` treats the unlabelled set as a sample from an
  infinite population (it adds ``Var(f) / N``, left out here, and has no finite-population
  correction), uses the normal quantile and the standard deviation with ``n`` where ragtui uses
  Student's t and ``n - 1``. With those four factors ragtui's uniform half-width is ppi_py's to
  0.1 %. For strata, ppi_py's weighted variance ignores them: the ratio is printed and bounded.
"""

from __future__ import annotations

import numpy as np
import pytest

from ragtui.core.judges.estimate import Stratum, stratified_mean
from ragtui.core.judges.sample import confidence_strata, draw_stratified
from ragtui.core.metrics.batch import batch_metrics
from tests.unit.test_estimate_simulation import METRICS, Cranfield, K, cranfield, judged

ppi_py = pytest.importorskip("ppi_py")

CASES = 100
SAMPLE = 40

__all__ = ["cranfield"]


def cases(data: Cranfield, design: str):
    """(metric, people's values, judge's values, strata as (sampled rows, other rows, doubt))."""
    rng = np.random.default_rng(4242 if design == "uniform" else 4343)
    n_q = data.questions
    ids = [f"q{i}" for i in range(n_q)]
    row_of = np.repeat(np.arange(n_q), np.diff(data.offsets))
    truth = batch_metrics(data.ranked, data.offsets, data.codes, data.truth, K)
    for case in range(CASES):
        grades = judged(data, "flip", 0.10, 1, rng)
        values = batch_metrics(data.ranked, data.offsets, data.codes, grades, K)
        if design == "uniform":
            stratum_of = dict.fromkeys(ids, "all")
            doubts = None
        else:
            # The judge's doubt: how many of a question's pool grades it changed, plus noise.
            wrong = (grades != data.truth).astype(float) + rng.random(len(grades)) * 0.5
            doubt = np.bincount(row_of, weights=np.where(data.pooled, wrong, 0.0), minlength=n_q)
            doubts = dict(zip(ids, doubt.tolist(), strict=True))
            stratum_of = confidence_strata(ids, doubts)
        sample = draw_stratified(ids, stratum_of, SAMPLE, case, design, doubts)
        drawn = {int(q[1:]) for q in sample.questions}
        strata = []
        for t in sample.strata:
            rows = np.array([int(q[1:]) for q in t.questions])
            inside = np.array([r in drawn for r in rows])
            strata.append((rows[inside], rows[~inside], t.doubt))
        for m in METRICS:
            yield m, getattr(truth, m), getattr(values, m), strata


def design_weights(strata):
    """The sampled rows and ppi_py's sample weights for them: each row's inverse chance of being
    drawn, ``N_h / n_h``, over its mean ``N / n``."""
    taken = np.concatenate([a for a, _, _ in strata])
    total = sum(len(a) + len(b) for a, b, _ in strata)
    weights = np.concatenate(
        [np.full(len(a), ((len(a) + len(b)) / len(a)) / (total / len(taken))) for a, b, _ in strata]
    )
    return taken, weights


def reference(y, f, taken, weights, alpha=0.05):
    """ppi_py's estimate (its unlabelled set the judge's values on every question) and half-width.

    For the width the unlabelled set is the judge's mean on every question: the same estimate,
    without the ``Var(f) / N`` term that treats the judge's values as a sample from an infinite
    population (ragtui's target is the mean over these questions, where they are known)."""
    unlabelled = np.full(len(f), float(np.mean(f)))
    estimate = float(ppi_py.ppi_mean_pointestimate(y[taken], f[taken], f, lam=1, w=weights)[0])
    low, high = ppi_py.ppi_mean_ci(y[taken], f[taken], unlabelled, alpha=alpha, lam=1, w=weights)
    return estimate, float(high[0] - low[0]) / 2


@pytest.mark.parametrize("design", ["uniform", "strata"])
def test_the_estimate_equals_ppi_python_s(cranfield, design):
    checked = 0
    for _, y, f, strata in cases(cranfield, design):
        ours = stratified_mean([Stratum(y[a], f[a], f[b], d) for a, b, d in strata])
        taken, weights = design_weights(strata)
        estimate, _ = reference(y, f, taken, weights)
        if ours.note is None:  # not brought inside 0-1
            assert ours.estimate == pytest.approx(estimate, abs=1e-12)
            checked += 1
    assert checked > 0.9 * CASES * len(METRICS)


def test_the_uniform_width_is_ppi_python_s_with_t_and_the_finite_population(cranfield):
    # ppi_py: 1.96 * sd(r, ddof 0) / sqrt(n); ragtui: t_df * sd(r, ddof 1) / sqrt(n) * sqrt(1 - n / N).
    from ragtui.core.judges.estimate import t_quantile

    checked = 0
    for _, y, f, strata in cases(cranfield, "uniform"):
        ours = stratified_mean([Stratum(y[a], f[a], f[b], d) for a, b, d in strata])
        ((taken, _, _),) = strata
        n, total = len(taken), len(y)
        _, half = reference(y, f, taken, np.ones(n))
        if ours.note is not None or half == 0:
            continue
        expected = (
            half
            * t_quantile(0.975, ours.df)
            / 1.959963984540054
            * np.sqrt(n / (n - 1))
            * np.sqrt(1 - n / total)
        )
        assert ours.half_width == pytest.approx(expected, rel=1e-3)
        checked += 1
    assert checked > 0.9 * CASES * len(METRICS)


def test_the_stratified_width_against_ppi_python_s_unstratified_one(cranfield):
    # ppi_py's weighted interval ignores the strata in its variance; ragtui's uses them (and its
    # variance floor, and t): the ratio is printed and must stay in a plausible band.
    ratios = []
    for _, y, f, strata in cases(cranfield, "strata"):
        ours = stratified_mean([Stratum(y[a], f[a], f[b], d) for a, b, d in strata])
        taken, weights = design_weights(strata)
        _, half = reference(y, f, taken, weights)
        if ours.note is None and half > 0:
            ratios.append(ours.half_width / half)
    got = np.array(ratios)
    print(
        f"\nstrata: half-width ragtui / ppi_py over {len(got)} cases: median "
        f"{np.median(got):.3f}, range {got.min():.3f}-{got.max():.3f}"
    )
    assert len(got) > 0.9 * CASES * len(METRICS)
    assert 0.7 <= float(np.median(got)) <= 1.3
