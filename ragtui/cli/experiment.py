"""``ragtui experiment``: every variant of the project file side by side (the numbers come from
``ragtui.core.analysis.experiment``; this prints them)."""

from __future__ import annotations

from pathlib import Path

from ragtui.cli.evaluate import parse_metrics
from ragtui.cli.output import err, print_json, print_notices, print_report, rich_progress, warn_all
from ragtui.core.analysis.experiment import run_experiment
from ragtui.core.settings import Settings


def run_experiment_command(
    settings: Settings,
    *,
    as_json: bool = False,
    metrics: str | None = None,
    correction: str = "holm",
    seed: int = 0,
    runs_dir: Path | None = None,
    save: bool = True,
    replace: bool = False,
) -> int:
    """Evaluate every variant, print the table (or its JSON) on stdout, progress and notes on stderr."""
    measures = parse_metrics(metrics)
    result = run_experiment(
        settings,
        measures=measures,
        correction=correction,
        seed=seed,
        save=save,
        replace_runs=replace,
        runs_dir=runs_dir,
        status=lambda line: err(f"ragtui: experiment: {line}"),
        progress_for=lambda label: rich_progress(label),
    )
    seen: set[str] = set()
    for variant in result.variants:
        fresh = [w for w in variant.workspace.warnings if w not in seen]
        seen.update(fresh)
        warn_all(fresh)
        print_notices(variant.workspace)
    if as_json:
        print_json(result.as_json())
    else:
        print_report(result.report())
    return 0
