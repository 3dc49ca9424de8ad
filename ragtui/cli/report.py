"""``ragtui report``: the shareable report as Markdown or HTML, on stdout or in a file, with an optional gate."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ragtui.cli.estimate import estimates_for
from ragtui.cli.evaluate import report_gate
from ragtui.cli.output import err, open_workspace
from ragtui.cli.report_formats import render
from ragtui.core.analysis.full_report import full_report
from ragtui.core.analysis.gate import Threshold, check_thresholds
from ragtui.core.analysis.runs import resolve_saved, runs_folder
from ragtui.core.errors import InputError
from ragtui.core.files import check_writable, write_atomic
from ragtui.core.settings import Settings


def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (``ragtui.core.files.write_atomic``)."""
    path = path.expanduser()
    if path.is_dir():
        raise InputError(path, "is a folder; --output takes a file name")
    if not path.parent.is_dir():
        raise InputError(path.parent, "folder not found")
    check_writable(path.parent, "report's folder")
    try:
        write_atomic(path, text.encode("utf-8"))
    except OSError as exc:
        raise InputError(path, f"cannot write the report ({exc.strerror or exc})") from None


def run_report(
    settings: Settings,
    *,
    fmt: str,
    output: Path | None = None,
    baseline: str | None = None,
    runs_dir: Path | None = None,
    fail_under: Sequence[Threshold] = (),
    seed: int = 0,
    estimate_judge: str | None = None,
) -> int:
    """Build the report, write it (stdout or ``output``), then apply ``--fail-under``; exit 1 on a shortfall."""
    run = None
    if baseline is not None:
        # Found before the (slow) embedding, so a mistyped name fails at once.
        run, named = resolve_saved(baseline, runs_folder(settings.resolved().golden, runs_dir))
        if named is not None:
            raise InputError(None, f"--baseline: give a saved run, not {baseline!r}")
    ws = open_workspace(settings)
    gate = check_thresholds(ws, fail_under)
    estimate = estimates_for(ws, estimate_judge)
    text = render(full_report(ws, run, gate, seed, estimate), fmt)
    if output is None:
        sys.stdout.write(text)
    else:
        _write(output, text)
        err(f"ragtui: wrote the {fmt} report to {output}")
    return report_gate(gate)
