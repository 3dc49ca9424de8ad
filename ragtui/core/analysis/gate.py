"""The CI gate: ``--fail-under METRIC=VALUE`` (or ``RETRIEVER:METRIC=VALUE``), checked against the means.

A threshold without a retriever applies to every retriever shown; the mean is the one every table
prints (over the evaluated questions, trec_eval's convention), compared unrounded, so a value that
prints as 0.800 but is 0.7996 falls short of 0.8. A minimum outside the measure's range (every
measure here lies in [0, 1]) is refused: it could never be met, or would always pass.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ragtui.core.errors import InputError
from ragtui.core.metrics.measures import FAMILIES, Measure, measure_means, parse_measure
from ragtui.core.report_model import Row, Section, table
from ragtui.core.workspace import Workspace

__all__ = [
    "MEASURE_RANGES",
    "GateResult",
    "Threshold",
    "check_thresholds",
    "gate_section",
    "measure_range",
    "parse_threshold",
]


@dataclass(frozen=True)
class Threshold:
    """The lowest acceptable mean of a measure, for one retriever or (None) every retriever shown."""

    measure: Measure
    minimum: float
    retriever: str | None = None

    @property
    def spec(self) -> str:
        """How it is written on the command line: ``hybrid:R@3=0.8``."""
        head = f"{self.retriever}:" if self.retriever else ""
        return f"{head}{self.measure.name}={self.minimum:g}"


@dataclass(frozen=True)
class GateResult:
    """One threshold checked against one retriever's mean."""

    threshold: Threshold
    retriever: str
    value: float

    @property
    def passed(self) -> bool:
        """Whether the mean reaches the minimum."""
        return self.value >= self.threshold.minimum

    def describe(self) -> str:
        """``hybrid R@3 = 0.745, below 0.800`` (more decimals when three would hide the shortfall)."""
        value, minimum = self.value, self.threshold.minimum
        digits = 3
        while digits < 8 and f"{value:.{digits}f}" == f"{minimum:.{digits}f}":
            digits += 1
        relation = "at least" if self.passed else "below"
        return (
            f"{self.retriever} {self.threshold.measure.name} = {value:.{digits}f}, "
            f"{relation} {minimum:.{digits}f}"
        )

    def as_dict(self) -> dict[str, object]:
        """The result for JSON."""
        return {
            "retriever": self.retriever,
            "measure": self.threshold.measure.name,
            "value": self.value,
            "minimum": self.threshold.minimum,
            "passed": self.passed,
        }


def parse_threshold(text: str) -> Threshold:
    """``METRIC=VALUE`` or ``RETRIEVER:METRIC=VALUE`` (``recall@3=0.8``, ``hybrid:nDCG@3=0.7``); InputError if malformed."""
    head, sep, raw_value = text.rpartition("=")
    if not sep or not head.strip() or not raw_value.strip():
        raise InputError(None, f"--fail-under: expected METRIC=VALUE, got {text!r}")
    retriever: str | None = None
    name = head.strip()
    if ":" in name:
        retriever, _, name = (part.strip() for part in name.partition(":"))
        if not retriever or not name:
            raise InputError(None, f"--fail-under: expected RETRIEVER:METRIC=VALUE, got {text!r}")
    try:
        minimum = float(raw_value)
    except ValueError:
        raise InputError(None, f"--fail-under: {raw_value.strip()!r} is not a number") from None
    if math.isnan(minimum) or math.isinf(minimum):
        raise InputError(None, f"--fail-under: {raw_value.strip()!r} is not a finite number")
    try:
        measure = parse_measure(name)
    except InputError as exc:
        raise InputError(None, "--fail-under: " + exc.problem.removeprefix("--metrics: ")) from None
    except ValueError:  # int() of a cut-off of thousands of digits
        raise InputError(None, "--fail-under: a cut-off or level has too many digits") from None
    low, high = measure_range(measure)
    if not low <= minimum <= high:
        consequence = "could never be met" if minimum > high else "would always pass"
        raise InputError(
            None,
            f"--fail-under: {measure.name} lies between {low:g} and {high:g}, "
            f"so {raw_value.strip()} {consequence}",
        )
    return Threshold(measure, minimum, retriever)


#: The values each measure family can take (every one is a mean of per-question values in [0, 1]).
MEASURE_RANGES: dict[str, tuple[float, float]] = dict.fromkeys(FAMILIES, (0.0, 1.0))


def measure_range(measure: Measure) -> tuple[float, float]:
    """The lowest and highest value ``measure`` can take."""
    return MEASURE_RANGES[measure.family]


def check_thresholds(ws: Workspace, thresholds: Sequence[Threshold]) -> list[GateResult]:
    """Every threshold against every retriever it names (all shown ones when it names none), in order."""
    for threshold in thresholds:
        if threshold.retriever is not None and threshold.retriever not in ws.retrievers:
            raise InputError(
                None,
                f"--fail-under {threshold.spec}: no retriever {threshold.retriever!r} is shown "
                f"(shown: {', '.join(ws.retrievers)})",
            )
    measures = list(dict.fromkeys(t.measure for t in thresholds))
    means = measure_means(ws, measures) if measures else {}
    results = []
    for threshold in thresholds:
        names = [threshold.retriever] if threshold.retriever else list(ws.retrievers)
        for name in names:
            assert name is not None
            results.append(GateResult(threshold, name, means[name][threshold.measure.name]))
    return results


def gate_section(results: Sequence[GateResult]) -> Section:
    """The gate as a report section: every check, its value, its minimum, and pass or FAIL."""
    rows = [
        Row(
            (
                r.retriever,
                r.threshold.measure.name,
                f"{r.value:.3f}",
                f"{r.threshold.minimum:.3f}",
                "pass" if r.passed else "FAIL",
            ),
            "good" if r.passed else "bad",
        )
        for r in results
    ]
    failed = sum(1 for r in results if not r.passed)
    if failed:
        summary = f"{failed} of {len(results)} checks fell short"
    else:
        summary = f"all {len(results)} checks passed" if len(results) > 1 else "the check passed"
    return table(
        ("retriever", "measure", "mean", "minimum", "result"),
        rows,
        heading="Gate (--fail-under)",
        notes=[summary],
        right=(2, 3),
    )
