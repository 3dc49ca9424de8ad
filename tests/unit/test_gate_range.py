"""``--fail-under`` refuses a minimum outside the measure's range: it could never be met, or would always pass."""

from __future__ import annotations

import pytest

from ragtui.cli import main
from ragtui.core.analysis.gate import parse_threshold
from ragtui.core.errors import InputError
from ragtui.core.metrics.measures import FAMILIES
from tests.conftest import mini_args

_CUT = {family: "@3" if needs_cutoff else "" for family, (needs_cutoff, _) in FAMILIES.items()}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_measure_takes_minimums_from_0_to_1_and_nothing_else(family):
    name = family + _CUT[family]
    for value in ("0", "0.5", "1", "1.0"):
        assert parse_threshold(f"{name}={value}").minimum == float(value)
    for value, consequence in (("1.5", "could never be met"), ("-0.1", "would always pass")):
        with pytest.raises(InputError) as caught:
            parse_threshold(f"{name}={value}")
        assert caught.value.message == (
            f"--fail-under: {parse_threshold(f'{name}=1').measure.name} lies between 0 and 1, "
            f"so {value} {consequence}"
        )


def test_an_out_of_range_minimum_is_a_usage_error_before_anything_loads(mini, capsys):
    with pytest.raises(SystemExit) as usage:
        main(["eval", *mini_args(mini, "--retrievers", "bm25"), "--fail-under", "recall@3=1.5"])
    assert usage.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "ragtui: error: argument --fail-under: R@3 lies between 0 and 1, so 1.5 could never be met "
        "(ragtui eval --help lists the options)\n"
    )
    with pytest.raises(SystemExit) as usage:
        main(["report", *mini_args(mini), "--fail-under", "hybrid:nDCG@3=-0.2"])
    assert usage.value.code == 2
    assert "nDCG@3 lies between 0 and 1, so -0.2 would always pass" in capsys.readouterr().err
