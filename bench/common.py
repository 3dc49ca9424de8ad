"""Helpers shared by the benchmarks: timing, peak memory, synthetic data, and the result table."""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The Cranfield collection in BEIR format, kept with the test data.
CRANFIELD = ROOT / "tests" / "data" / "cranfield"


@dataclass
class Figure:
    """One measured figure, its target and (where there is one) its baseline from the same run."""

    name: str
    value: str
    target: str = ""
    baseline: str = ""
    ok: bool | None = None
    note: str = ""
    #: A ratio to the floor app (issue 34): the table lists these first.
    ratio: bool = False


@dataclass
class Report:
    """The figures of one benchmark run, printed as a table."""

    figures: list[Figure] = field(default_factory=list)

    def add(self, *args, **kwargs) -> Figure:
        fig = Figure(*args, **kwargs)
        self.figures.append(fig)
        print(
            f"  {fig.name}: {fig.value}" + (f" (target {fig.target})" if fig.target else ""),
            file=sys.stderr,
            flush=True,
        )
        return fig

    def table(self) -> str:
        rows = [("figure", "measured", "target", "baseline (same run)", "")]
        for f in sorted(self.figures, key=lambda f: not f.ratio):  # the ratios first
            mark = "" if f.ok is None else ("ok" if f.ok else "MISSED")
            rows.append((f.name, f.value, f.target, f.baseline, mark))
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        lines = [
            "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"
            for r in rows
        ]
        lines.insert(1, "| " + " | ".join("-" * w for w in widths) + " |")
        return "\n".join(lines)


def median_time(fn: Callable[[], object], repeat: int = 5) -> float:
    """The median wall-clock seconds of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bytecode_current() -> None:
    """Compile ragtui's and the bench's modules where their bytecode is missing or older than the
    source, as installing a package does: with ``PYTHONDONTWRITEBYTECODE`` set (as on this
    machine) an edited module is otherwise compiled again at every launch, and a start-up figure
    would time the compiler."""
    import compileall

    for folder in ("ragtui", "bench"):
        compileall.compile_dir(ROOT / folder, quiet=1)


def run_child(module: str, *args: str, env: dict[str, str] | None = None) -> dict:
    """Run ``python -m module args`` and parse the JSON object it prints last on stdout."""
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    if done.returncode != 0:
        raise RuntimeError(f"{module} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def wall(cmd: list[str], env: dict[str, str] | None = None, repeat: int = 3) -> float:
    """Median wall-clock seconds of a whole command."""

    def once() -> None:
        subprocess.run(
            cmd, check=True, capture_output=True, cwd=ROOT, env={**os.environ, **(env or {})}
        )

    return median_time(once, repeat)
