"""Significance: the sign-flip randomisation test (hand-computed and against scipy), the bootstrap interval,
win/tie/loss, and ``ragtui eval --compare`` on retrievers and saved runs."""

from __future__ import annotations

import itertools
import json
import time

import numpy as np
import pytest

from ragtui.cli import main
from ragtui.core.metrics.measures import System, default_measures
from ragtui.core.metrics.significance import (
    bootstrap_interval,
    compare_systems,
    paired_randomization_test,
    win_tie_loss,
)
from tests.conftest import mini_args

_args = mini_args


pytestmark = pytest.mark.usefixtures("cli_cache_env")


def _enumerated_p(diff: list[float]) -> float:
    """The exact two-sided sign-flip p-value by listing all 2^n sign patterns (the hand computation)."""
    observed = abs(sum(diff)) / len(diff)
    patterns = list(itertools.product((1, -1), repeat=len(diff)))
    extreme = sum(
        1
        for signs in patterns
        if abs(sum(s * d for s, d in zip(signs, diff, strict=True))) / len(diff) >= observed - 1e-12
    )
    return extreme / len(patterns)


def test_randomization_exact_on_three_questions():
    # B - A = (1, 2, -0.5): sign patterns give sums ±3.5, ±2.5, ±1.5, ±0.5; |sum| >= 2.5 for 4 of 8.
    assert paired_randomization_test([0, 0, 0], [1, 2, -0.5]) == 0.5
    # Every difference +1: only all-plus and all-minus reach |mean| 1, 2 of 8.
    assert paired_randomization_test([0.2, 0.3, 0.0], [1.2, 1.3, 1.0]) == 0.25
    # Identical systems: every pattern is as extreme as the observed 0.
    assert paired_randomization_test([0.5, 0.1, 0.9], [0.5, 0.1, 0.9]) == 1.0
    rng = np.random.default_rng(3)
    for n in (1, 4, 9, 13):
        a, b = rng.random(n).round(1), rng.random(n).round(1)
        assert paired_randomization_test(a, b) == pytest.approx(
            _enumerated_p(list(b - a)), abs=1e-12
        )


def test_randomization_agrees_with_scipy_permutation_test():
    from scipy.stats import permutation_test

    def mean_difference(x, y, axis):
        return np.mean(x - y, axis=axis)

    rng = np.random.default_rng(11)
    for n, shift in ((10, 0.1), (40, 0.0), (60, 0.05), (200, 0.03)):
        a = rng.random(n)
        b = np.clip(a + rng.normal(shift, 0.25, n), 0, 1)
        ours = paired_randomization_test(a, b, seed=5)
        theirs = permutation_test(
            (b, a),
            mean_difference,
            permutation_type="samples",
            n_resamples=10_000,
            vectorized=True,
            random_state=7,
        ).pvalue
        if 2**n <= 10_000:
            # Both enumerate every pattern: the same exact p-value.
            assert ours == pytest.approx(theirs, abs=1e-9)
        else:
            # Two independent Monte-Carlo estimates of one p: within 5 standard errors of their difference.
            se = np.sqrt(2 * max(theirs * (1 - theirs), 1e-4) / 10_000)
            assert abs(ours - theirs) <= 5 * se + 1e-3, (n, ours, theirs)


def test_randomization_is_seeded_and_fast():
    rng = np.random.default_rng(0)
    a, b = rng.random(225), rng.random(225)
    started = time.perf_counter()
    p = paired_randomization_test(a, b, seed=1)
    elapsed = time.perf_counter() - started
    assert elapsed < 0.5
    assert p == paired_randomization_test(a, b, seed=1)
    assert 0 < p <= 1 and p >= 1 / 10_001


def test_bootstrap_interval_contains_the_mean_and_is_reproducible():
    rng = np.random.default_rng(2)
    a = rng.random(80)
    b = np.clip(a + rng.normal(0.05, 0.2, 80), 0, 1)
    low, high = bootstrap_interval(a, b, seed=4)
    mean = float((b - a).mean())
    assert low < mean < high
    assert (low, high) == bootstrap_interval(a, b, seed=4)
    assert (low, high) != bootstrap_interval(a, b, seed=5)
    # Against scipy's percentile bootstrap: the same interval within Monte-Carlo error.
    from scipy.stats import bootstrap

    ref = bootstrap(
        (b - a,), np.mean, method="percentile", n_resamples=10_000, random_state=0
    ).confidence_interval
    assert low == pytest.approx(ref.low, abs=0.01) and high == pytest.approx(ref.high, abs=0.01)
    assert bootstrap_interval([1, 1], [1, 1]) == (0.0, 0.0)


def test_win_tie_loss():
    assert win_tie_loss([0.5, 0.5, 1.0, 0.2], [1.0, 0.5, 0.0, 0.2 + 1e-15]) == (1, 2, 1)
    with pytest.raises(ValueError):
        win_tie_loss([1.0], [1.0, 2.0])


def test_compare_systems_pairs_only_questions_both_evaluate():
    grades_a = {"q1": {"d1": 2}, "q2": {"d2": 2}, "q3": {"d3": 2}, "q4": {}}
    grades_b = {"q1": {"d1": 2}, "q2": {"d2": 2}, "q3": {}, "q4": {"d4": 2}}
    ids = ["q1", "q2", "q3", "q4"]
    a = System("A", {"q1": ["d1"], "q2": ["x", "d2"], "q3": ["d3"]}, grades_a, ids)
    b = System("B", {"q1": ["x", "d1"], "q2": ["d2"], "q4": ["d4"]}, grades_b, ids)
    result = compare_systems(a, b, default_measures(1))
    assert result.questions == ["q1", "q2"] and result.only_a == ["q3"] and result.only_b == ["q4"]
    rr = next(m for m in result.metrics if m.measure == "RR")
    assert (rr.mean_a, rr.mean_b, rr.wins, rr.ties, rr.losses) == (0.75, 0.75, 1, 0, 1)
    assert rr.p_value == 1.0  # n=2, exact: differences (-0.5, +0.5)


def test_eval_compare_on_the_small_corpus(mini, tmp_path, capsys):
    assert main(["eval", "--compare", "bm25", "hybrid", *_args(mini)]) == 0
    out = capsys.readouterr().out
    assert (
        "compare hybrid against bm25\n6 questions both evaluate; difference = hybrid - bm25" in out
    )
    header = next(line for line in out.splitlines() if line.startswith("measure"))
    assert header.split() == ["measure", "bm25", "hybrid", "diff", "95%", "CI", "p", "win/tie/loss"]
    rows = {
        line.split()[0]: line.split()
        for line in out.splitlines()
        if line.split() and line.split()[0] in ("R@3", "P@3", "RR", "nDCG@3")
    }
    assert set(rows) == {"R@3", "P@3", "RR", "nDCG@3"}

    assert main(["eval", "--json", "--compare", "bm25", "bm25", *_args(mini)]) == 0
    same = json.loads(capsys.readouterr().out)["comparison"]
    for m in same["metrics"].values():
        assert (
            m["mean_difference"] == 0
            and m["p_value"] == 1.0
            and m["wins"] == m["losses"] == 0
            and m["ci95"] == [0, 0]
        )

    # Saved runs on either side, by name (read as hybrid), as RUN:RETRIEVER, or by path.
    runs = tmp_path / "runs"
    assert main(["eval", "--save", "base", "--runs-dir", str(runs), *_args(mini)]) == 0
    capsys.readouterr()
    assert (
        main(
            ["eval", "--json", "--compare", "base", "hybrid", "--runs-dir", str(runs), *_args(mini)]
        )
        == 0
    )
    against_saved = json.loads(capsys.readouterr().out)["comparison"]
    assert (
        against_saved["a"] == "base:hybrid" and against_saved["metrics"]["nDCG@3"]["p_value"] == 1.0
    )
    assert (
        main(
            [
                "eval",
                "--json",
                "--compare",
                f"{runs / 'base.json'}:bm25",
                "vector",
                "--metrics",
                "nDCG@5,Success@1",
                "--seed",
                "3",
                "--runs-dir",
                str(runs),
                *_args(mini),
            ]
        )
        == 0
    )
    mixed = json.loads(capsys.readouterr().out)["comparison"]
    assert (
        mixed["a"] == "base:bm25"
        and set(mixed["metrics"]) == {"nDCG@5", "Success@1"}
        and mixed["seed"] == 3
    )

    assert (
        main(["eval", "--compare", "bm25", "nothing", "--runs-dir", str(runs), *_args(mini)]) == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'nothing' is neither a retriever" in err[0]
