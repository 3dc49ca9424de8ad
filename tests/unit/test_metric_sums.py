"""``fsum_array`` is ``math.fsum(values.tolist())``: the same float (sign of zero, inf, nan and
overflow included) for every array, and the means of an evaluation do not move."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtui.core.metrics.sums import fsum_array


def _fsum(values: np.ndarray) -> tuple[str, object]:
    try:
        return ("value", math.fsum(values.tolist()))
    except (OverflowError, ValueError) as exc:
        return ("error", type(exc).__name__)


def _ours(values: np.ndarray) -> tuple[str, object]:
    try:
        return ("value", fsum_array(values))
    except (OverflowError, ValueError) as exc:
        return ("error", type(exc).__name__)


def _same(values: np.ndarray) -> None:
    want, got = _fsum(values), _ours(values)
    if want[0] == "value" and got[0] == "value":
        a, b = want[1], got[1]
        assert isinstance(a, float) and isinstance(b, float)
        if math.isnan(a):
            assert math.isnan(b)
            return
        assert a == b and math.copysign(1.0, a) == math.copysign(1.0, b), (a, b)
    else:
        assert want == got


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=0, max_size=400))
def test_any_floats_sum_as_fsum_sums_them(values: list[float]) -> None:
    _same(np.asarray(values, dtype=np.float64))


@pytest.mark.parametrize("seed", range(6))
def test_metric_like_columns_sum_as_fsum_sums_them(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 100_000
    columns = [
        rng.random(n),  # nDCG
        rng.integers(0, 11, n) / 10.0,  # precision@10
        1.0 / rng.integers(1, 101, n),  # reciprocal rank
        rng.integers(0, 6, n) / rng.integers(1, 6, n),  # recall
        rng.random(n) * np.where(rng.random(n) < 0.5, 1e-300, 1.0),  # far-apart magnitudes
        (rng.random(n) - 0.5) * 10.0 ** rng.integers(-200, 200, n),  # signs and exponents
    ]
    for column in columns:
        column[rng.random(n) < 0.3] = 0.0
        _same(column)
        _same(-column)


def test_ties_at_half_a_unit_round_as_fsum_rounds_them() -> None:
    for tiny in (2.0**-53, 2.0**-53 + 2.0**-105, 2.0**-53 - 2.0**-106, 3 * 2.0**-54):
        values = np.zeros(200)
        values[0], values[1] = 1.0, tiny
        _same(values)
        values[2] = 2.0**-200
        _same(values)


def test_zeros_inf_nan_and_overflow_as_fsum() -> None:
    _same(np.full(100, -0.0))
    _same(np.array([np.inf] + [1.0] * 100))
    _same(np.array([np.inf, -np.inf] + [1.0] * 100))  # fsum raises ValueError; so does this
    _same(np.array([np.nan] + [1.0] * 100))
    _same(np.full(100, 1.7e308))  # fsum raises OverflowError; so does this
    _same(np.full(100, 5e-324))  # the smallest subnormal
