"""The shareable report (``ragtui report``): metric table, per-slice table, baseline comparison, recall@k curve.

Built once as a ``Report`` plus the curve values a plot needs; the command line renders it as
Markdown or as one self-contained HTML page (``ragtui.cli.report_formats``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ragtui import __version__
from ragtui.core.analysis.curve import curve_depth, recall_curves
from ragtui.core.analysis.eval_report import passage_notes
from ragtui.core.analysis.gate import GateResult, gate_section
from ragtui.core.analysis.runs import SavedRun, manifest, settings_changes
from ragtui.core.analysis.slices import slice_reports
from ragtui.core.judges.estimates import Estimates
from ragtui.core.judges.estimates_report import estimates_report
from ragtui.core.metrics.measures import default_measures, system_from_workspace
from ragtui.core.metrics.significance import compare_systems
from ragtui.core.report_model import Report, Row, Section, fmt, signed, table, text_section
from ragtui.core.workspace import Workspace
from ragtui.core.workspace.workspace import not_applying_notes

__all__ = ["FullReport", "full_report"]

#: The heading of the curve section (the HTML page draws the plot there).
CURVE_HEADING = "Recall@k curve"
#: A difference is marked good or bad when its p-value is below this.
SIGNIFICANT = 0.05


@dataclass(frozen=True)
class FullReport:
    """The report, and the curves to plot: retriever -> recall@1..depth, now and in the baseline run."""

    report: Report
    curves: dict[str, list[float]]
    baseline_curves: dict[str, list[float]] = field(default_factory=dict)
    baseline: str | None = None
    k: int = 3


def _shown(path: object) -> str:
    """A path relative to the working folder when it lies inside it (a report made in CI then shows
    ``corpus``, not the runner's home)."""
    if path is None:
        return "-"
    try:
        return str(Path(str(path)).resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def _path(path: object) -> str:
    """A data path as the overview names it: ``./corpus`` rather than a bare ``corpus``, which reads
    as a word (``data: corpus corpus``)."""
    shown = _shown(path)
    if shown == "-" or Path(shown).is_absolute() or shown.startswith((".", "~")):
        return shown
    return f"./{shown}"


def _data(ws: Workspace) -> str:
    """Which data was evaluated, each by its path: ``corpus folder ./corpus, golden set ./golden``."""
    s = ws.settings
    if s.beir is not None:
        parts = [f"BEIR dataset {_path(s.beir)}"]
    elif s.chunks is not None:
        parts = [f"chunks file {_path(s.chunks)}"]
    else:
        parts = [f"corpus folder {_path(s.corpus)}"]
    if s.beir is None or s.golden is None or Path(s.golden) != Path(s.beir):
        parts.append(f"golden set {_path(s.golden)}")
    return ", ".join(parts)


def _overview(ws: Workspace) -> Section:
    """What was evaluated, on what data, with which settings."""
    s = ws.settings
    ev = ws.evaluation
    assert ev is not None
    counted = f"{len(ev.evaluated)} questions evaluated"
    if ev.skipped:
        counted += f" ({len(ev.skipped)} skipped: no judgement)"
    return text_section(
        f"{counted}; {len(ws.data.chunks)} chunks; k={s.k}, depth={s.depth}, relevant = grade >= {s.threshold}",
        f"data: {_data(ws)}",
        f"chunk size {s.chunk_size if s.chunk_size is not None else 'whole documents'}, "
        f"overlap {s.overlap}; model {s.model}; ragtui {__version__}",
        heading="Overview",
    )


def _metrics(ws: Workspace) -> Section:
    """One row per retriever: recall@k, precision@k and its ceiling, MRR, nDCG@k."""
    ev = ws.evaluation
    assert ev is not None
    k = ws.settings.k
    rows = []
    for name in ws.retrievers:
        s = ev.summary(name)
        rows.append(
            (
                name,
                fmt(s.recall),
                fmt(s.precision),
                fmt(s.precision_ceiling),
                fmt(s.mrr),
                fmt(s.ndcg),
            )
        )
    return table(
        (
            "retriever",
            f"evidence recall@{k}" if ev.units is not None else f"recall@{k}",
            f"precision@{k}",
            "precision ceiling",
            "MRR",
            f"nDCG@{k}",
        ),
        rows,
        heading="Metrics",
        notes=[
            (
                f"means over the evaluated questions (trec_eval's convention); MRR over the whole run (depth {ws.settings.depth}); "
                f"nDCG with linear gain"
            ),
            *passage_notes(ws),
            *not_applying_notes(ws),
        ],
        right=range(1, 6),
    )


def _slices(ws: Workspace) -> Section | None:
    """Every retriever's means per slice, with the number of questions; None when no question has a slice."""
    reports = slice_reports(ws)
    if not reports:
        return None
    k = ws.settings.k
    rows = []
    for report in reports:
        for name in ws.retrievers:
            s = report.summaries[name]
            rows.append(
                (
                    report.name,
                    str(len(report.questions)),
                    name,
                    fmt(s.recall),
                    fmt(s.precision),
                    fmt(s.mrr),
                    fmt(s.ndcg),
                )
            )
    notes = [
        f"{r.name}: {len(r.skipped)} question{'s' if len(r.skipped) != 1 else ''} skipped (no judgement)"
        for r in reports
        if r.skipped
    ]
    return table(
        ("slice", "questions", "retriever", f"recall@{k}", f"precision@{k}", "MRR", f"nDCG@{k}"),
        rows,
        heading="Per slice",
        notes=notes,
        right=(1, 3, 4, 5, 6),
    )


def _short(value: Any) -> str:
    text = str(value)
    return text[:12] + "..." if len(text) > 40 else text


def _baseline(ws: Workspace, run: SavedRun, seed: int) -> Section:
    """Each retriever in both against the baseline run: means, change, 95% interval, p-value, win/tie/loss."""
    k = ws.settings.k
    measures = default_measures(k)
    common = [r for r in ws.retrievers if r in run.rankings]
    rows: list[Row] = []
    for name in common:
        comparison = compare_systems(
            run.system(name), system_from_workspace(ws, name), measures, seed=seed
        )
        for m in comparison.metrics:
            tone: Any = ""
            if m.p_value < SIGNIFICANT and m.mean_difference > 0:
                tone = "good"
            elif m.p_value < SIGNIFICANT and m.mean_difference < 0:
                tone = "bad"
            rows.append(
                Row(
                    (
                        name,
                        m.measure,
                        fmt(m.mean_a),
                        fmt(m.mean_b),
                        signed(m.mean_difference),
                        f"[{signed(m.ci_low)}, {signed(m.ci_high)}]",
                        f"{m.p_value:.4f}",
                        f"{m.wins}/{m.ties}/{m.losses}",
                    ),
                    tone,
                )
            )
    notes = [
        (
            f"change = now - {run.name}, on the questions both evaluate, each judged by its own grades; "
            f"paired randomisation test and bootstrap 95% interval (seed {seed}); win/tie/loss per question"
        )
    ]
    missing = [r for r in ws.retrievers if r not in run.rankings]
    if missing:
        notes.append(f"not in {run.name}: {', '.join(missing)}")
    if not common:
        notes.append(f"{run.name} has none of the retrievers shown ({', '.join(run.retrievers)})")
    changed = settings_changes(run.manifest, manifest(ws))
    shown = [(key, a, b) for key, a, b in changed if not key.endswith("sha256")]
    if shown:
        notes.append(
            "settings changed since the baseline: "
            + "; ".join(f"{key} {_short(a)} -> {_short(b)}" for key, a, b in shown)
        )
    return table(
        ("retriever", "measure", run.name, "now", "change", "95% CI", "p", "win/tie/loss"),
        rows,
        heading=f"Against the baseline run {run.name}",
        notes=notes,
        right=(2, 3, 4, 6),
    )


def _curve_table(
    curves: dict[str, list[float]], baseline: dict[str, list[float]], baseline_name: str | None
) -> Section:
    """recall@k for k = 1..depth, one column per retriever (and per baseline retriever)."""
    columns = list(curves)
    extra = [name for name in curves if name in baseline]
    depth = max((len(v) for v in curves.values()), default=0)
    rows = []
    for i in range(depth):
        cells = [str(i + 1), *(fmt(curves[n][i]) for n in columns)]
        cells += [fmt(baseline[n][i]) if i < len(baseline[n]) else "" for n in extra]
        rows.append(cells)
    titles = ["k", *columns, *(f"{n} ({baseline_name})" for n in extra)]
    return table(
        titles,
        rows,
        heading=CURVE_HEADING,
        notes=["mean recall at every cut-off k over the evaluated questions"],
        right=range(len(titles)),
    )


def full_report(
    ws: Workspace,
    baseline: SavedRun | None = None,
    gate: Sequence[GateResult] = (),
    seed: int = 0,
    estimate: Estimates | None = None,
) -> FullReport:
    """The report of ``ragtui report``: overview, metrics, how sure they are (``estimate``), slices,
    baseline comparison, curve, gate."""
    curves = recall_curves(ws)
    baseline_curves: dict[str, list[float]] = {}
    if baseline is not None:
        depth = min(curve_depth(ws), int(baseline.manifest.get("depth", ws.settings.depth)))
        baseline_curves = {
            name: baseline.system(name).recall_curve(depth)
            for name in ws.retrievers
            if name in baseline.rankings
        }
    sections = [_overview(ws), _metrics(ws)]
    if estimate is not None:
        found = estimates_report(estimate)
        sections += [replace(s, heading=found.title) for s in found.sections]
    per_slice = _slices(ws)
    if per_slice is not None:
        sections.append(per_slice)
    if baseline is not None:
        sections.append(_baseline(ws, baseline, seed))
    sections.append(_curve_table(curves, baseline_curves, baseline.name if baseline else None))
    if gate:
        sections.append(gate_section(gate))
    return FullReport(
        Report("ragtui report", tuple(sections)),
        curves,
        baseline_curves,
        baseline.name if baseline else None,
        ws.settings.k,
    )
