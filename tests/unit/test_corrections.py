"""Multiple-comparison corrections (Holm, Benjamini-Hochberg) against statsmodels' multipletests."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from ragtui.core.metrics.significance import adjust_p_values, benjamini_hochberg, holm

REFERENCE = {"holm": "holm", "bh": "fdr_bh"}


def _cases() -> list[list[float]]:
    rng = np.random.default_rng(7)
    cases = [
        [0.01, 0.04, 0.03, 0.005],
        [0.5],
        [0.02, 0.02, 0.02, 0.9],  # ties
        [0.0, 1.0, 0.0001, 0.2, 0.049, 0.051],
        [1.0, 1.0, 1.0],
    ]
    cases += [list(rng.uniform(0, 1, size=n)) for n in (2, 7, 30, 72)]
    # Mostly small p-values, as a table of real effects gives.
    cases += [list(rng.beta(0.3, 4.0, size=40))]
    # Monte Carlo p-values sit on a grid of (count + 1) / 10,001.
    cases += [list((rng.integers(0, 300, size=25) + 1) / 10_001)]
    return cases


@pytest.mark.parametrize("method", ["holm", "bh"])
@pytest.mark.parametrize("p_values", _cases())
def test_adjusted_p_values_match_statsmodels(method, p_values):
    ours = adjust_p_values(p_values, method)
    reject, reference, _, _ = multipletests(p_values, alpha=0.05, method=REFERENCE[method])
    np.testing.assert_allclose(ours, reference, rtol=0, atol=1e-12)
    assert [p <= 0.05 for p in ours] == list(reject)


def test_hand_computed_values():
    # Holm: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 -> 0.02, 0.03, 0.06, 0.04 -> running max.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: 0.005*4/1, 0.01*4/2, 0.03*4/3, 0.04*4/4 -> 0.02, 0.02, 0.04, 0.04 -> running min from the top.
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert holm([]) == [] and benjamini_hochberg([]) == []
    with pytest.raises(ValueError):
        holm([0.5, 1.5])
    with pytest.raises(ValueError):
        adjust_p_values([0.5], "bonferroni")
