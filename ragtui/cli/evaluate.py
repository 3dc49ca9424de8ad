"""The evaluation commands: ``eval`` (with ``--by-slice/--curve/--metrics/--compare/--save/--explain``),
``export``, ``diff`` and ``explain``; the numbers come from the core, ``output`` prints them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtui.cli.estimate import add_estimate, estimate_reports
from ragtui.cli.output import err, open_workspace, out, print_json, print_notices, print_report
from ragtui.core.analysis.attribution import (
    HybridExplanation,
    PoolCeiling,
    RerankExplanation,
    explain_hybrid,
    explain_rerank,
    pool_ceilings,
)
from ragtui.core.analysis.curve import recall_curves
from ragtui.core.analysis.eval_report import eval_report
from ragtui.core.analysis.export import export_claims, export_trec
from ragtui.core.analysis.gate import GateResult, Threshold, check_thresholds
from ragtui.core.analysis.reports import (
    comparison_report,
    curve_report,
    diff_report,
    eval_table_report,
    explain_report,
    rerank_explanation_report,
    slices_report,
)
from ragtui.core.analysis.runs import (
    diff_runs,
    pick_retriever,
    refuse_taken,
    resolve_saved,
    resolve_system,
    runs_folder,
    save_folder,
    write_run,
)
from ragtui.core.analysis.slices import slice_reports
from ragtui.core.analysis.why import WhyIndex
from ragtui.core.errors import InputError
from ragtui.core.metrics.measures import (
    Measure,
    default_measures,
    measure_means,
    measure_values,
    parse_measures,
)
from ragtui.core.metrics.significance import Comparison, compare_systems
from ragtui.core.options import MAX_COUNT
from ragtui.core.report_model import Report
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace


@dataclass(frozen=True)
class EvalOptions:
    """What ``ragtui eval`` adds to the default table."""

    by_slice: bool = False
    curve: bool = False
    metrics: str | None = None
    compare: tuple[str, str] | None = None
    retriever: str | None = None
    save: str | None = None
    replace: bool = False
    runs_dir: Path | None = None
    explain: str | None = None
    seed: int = 0
    #: ``--judge NAME``: whose verdicts ``--estimate`` reads (None: every judge's latest).
    estimate_judge: str | None = None


def parse_metrics(text: str | None) -> list[Measure] | None:
    """The measures of ``--metrics`` (None when it was not given); InputError for a list that
    names no measure, an unknown name, or a cut-off or level beyond ``MAX_COUNT`` (or of
    thousands of digits)."""
    if text is None:
        return None
    try:
        measures = parse_measures(text)
    except ValueError:  # int() of a cut-off of thousands of digits
        raise InputError(None, "--metrics: a cut-off or level has too many digits") from None
    for measure in measures:
        for value in (measure.cutoff, measure.rel):
            if value is not None and abs(value) > MAX_COUNT:
                raise InputError(
                    None, f"--metrics: {measure.family}: {value} must be at most {MAX_COUNT}"
                )
    return measures


def parse_options_measures(options: EvalOptions) -> list[Measure] | None:
    """The measures of ``--metrics``, or None when it was not given."""
    return parse_metrics(options.metrics)


# ---- commands -------------------------------------------------------------------------------------


def _comparison(
    ws: Workspace, options: EvalOptions, measures: Sequence[Measure] | None
) -> Comparison:
    assert options.compare is not None
    folder = runs_folder(ws, options.runs_dir)
    a = resolve_system(options.compare[0], ws, folder, options.retriever)
    b = resolve_system(options.compare[1], ws, folder, options.retriever)
    return compare_systems(a, b, measures or default_measures(ws.settings.k), seed=options.seed)


def _explanation_json(
    expl: HybridExplanation, pool: PoolCeiling, reranked: RerankExplanation | None = None
) -> dict[str, Any]:
    out = dataclasses.asdict(expl)
    out["mean_pool_ceiling"] = pool.pool_ceiling
    out["mean_hybrid_recall"] = pool.hybrid_recall
    out["mean_over"] = pool.questions
    if reranked is not None:
        out["rerank"] = dataclasses.asdict(reranked)
    return out


def add_json_extras(ws: Workspace, report: dict[str, Any], options: EvalOptions) -> None:
    """Add what the options ask for to the ``eval --json`` object (new keys only; existing ones unchanged)."""
    measures = parse_options_measures(options)
    if measures:
        report["metrics"] = [m.name for m in measures]
        means = measure_means(ws, measures)
        values = measure_values(ws, measures)
        for name, body in report["retrievers"].items():
            body["measures"] = means[name]
            for qid, entry in body["per_question"].items():
                entry["measures"] = values[name].get(qid, {})
        for slice_report in slice_reports(ws):
            slice_means = measure_means(ws, measures, slice_report.questions)
            for name in ws.retrievers:
                report["slices"][slice_report.name][name]["measures"] = slice_means[name]
    if options.curve:
        report["recall_curve"] = recall_curves(ws)
    if options.compare:
        report["comparison"] = _comparison(ws, options, measures).as_dict()
    if options.explain:
        report["explain"] = _explanation_json(
            explain_hybrid(ws, options.explain),
            pool_ceilings(ws),
            explain_rerank(ws, options.explain),
        )
    add_estimate(ws, report, options.estimate_judge)


def text_extras(ws: Workspace, options: EvalOptions) -> list[Report]:
    """The reports the options ask for, to print after the main table (computed first, so bad input prints nothing)."""
    measures = parse_options_measures(options)
    reports = []
    if options.by_slice:
        reports.append(slices_report(ws, measures))
    if options.curve:
        reports.append(curve_report(recall_curves(ws)))
    if options.compare:
        reports.append(comparison_report(_comparison(ws, options, measures)))
    if options.explain:
        expl = explain_hybrid(ws, options.explain)  # an unknown question is an InputError here
        question = ws.questions.by_id[options.explain].text
        reports.append(explain_report(question, expl, pool_ceilings(ws)))
        reranked = explain_rerank(ws, options.explain)
        if reranked is not None:
            reports.append(rerank_explanation_report(reranked))
    reports += estimate_reports(ws, options.estimate_judge)
    return reports


def refuse_taken_save(settings: Settings, options: EvalOptions) -> None:
    """``--save NAME`` over an existing run without ``--replace``: refused before anything is loaded."""
    if options.save:
        refuse_taken(save_folder(settings, options.runs_dir), [options.save], options.replace)


def save_if_asked(ws: Workspace, options: EvalOptions, why: WhyIndex | None = None) -> None:
    """``--save NAME``: write the saved run and say where on stderr (and where the run it replaced
    is kept); ``why``: the causes, when the output needs them too (computed once)."""
    if options.save:
        written = write_run(ws, options.save, options.runs_dir, replace=options.replace, why=why)
        print_notices(ws)
        kept = f"; the run it replaced is kept as {written.backup}" if written.backup else ""
        err(f"ragtui: saved run {options.save!r} to {written.path}{kept}")


def run_diff(
    settings: Settings,
    a: str,
    b: str,
    *,
    retriever: str | None = None,
    k: int | None = None,
    runs_dir: Path | None = None,
    limit: int | None = None,
    as_json: bool = False,
) -> int:
    """``ragtui diff A B``: what changed between two saved runs, for one retriever."""
    folder = runs_folder(settings.resolved().golden, runs_dir)
    run_a, named_a = resolve_saved(a, folder)
    run_b, named_b = resolve_saved(b, folder)
    name_a = named_a or retriever
    name_b = named_b or retriever
    if name_a is None or name_b is None:
        default = pick_retriever(run_a, None)
        if default not in run_b.rankings:
            common = [r for r in run_a.retrievers if r in run_b.rankings]
            if not common:
                raise InputError(
                    None,
                    f"saved runs {run_a.name!r} and {run_b.name!r} share no retriever; name one with --retriever",
                )
            default = common[0]
        name_a, name_b = name_a or default, name_b or default
    cut = k if k is not None else (run_a.k if run_a.k == run_b.k else max(run_a.k, run_b.k))
    texts = {
        q: str(info.get("text", "")) for q, info in {**run_a.questions, **run_b.questions}.items()
    }
    # Causes were saved at each run's own k: they say nothing about another cut-off.
    causes_a, causes_b = run_a.causes(name_a), run_b.causes(name_b)
    causes = (
        (causes_a, causes_b)
        if causes_a is not None and causes_b is not None and run_a.k == run_b.k == cut
        else None
    )
    diff = diff_runs(
        run_a.system(name_a),
        run_b.system(name_b),
        cut,
        texts=texts,
        manifests=(run_a.manifest, run_b.manifest),
        causes=causes,
    )
    if as_json:
        body = dataclasses.asdict(diff)
        for entry, change in zip(body["changes"], diff.changes, strict=True):
            entry["ndcg_change"] = change.ndcg_change
            entry["direction"] = change.direction
        body["mean_change"] = diff.mean_change
        body["retrievers"] = [name_a, name_b]
        print_json(body)
        return 0
    print_report(diff_report(diff, limit))
    return 0


def run_explain(settings: Settings, qid: str, as_json: bool = False) -> int:
    """``ragtui explain QID``: the hybrid attribution table of one question."""
    ws = open_workspace(settings)
    expl = explain_hybrid(ws, qid)
    pool = pool_ceilings(ws)
    reranked = explain_rerank(ws, qid)
    if as_json:
        print_json(_explanation_json(expl, pool, reranked))
        return 0
    print_report(explain_report(ws.questions.by_id[qid].text, expl, pool))
    if reranked is not None:
        out()
        print_report(rerank_explanation_report(reranked))
    return 0


def report_gate(results: Sequence[GateResult]) -> int:
    """Say on stderr which ``--fail-under`` checks fell short (or that all passed); 1 if any fell short."""
    if not results:
        return 0
    failed = [r for r in results if not r.passed]
    for result in failed:
        err(f"ragtui: fell short: {result.describe()} (--fail-under {result.threshold.spec})")
    if not failed:
        passed = f"all {len(results)} checks" if len(results) > 1 else "the check"
        err(f"ragtui: --fail-under: {passed} passed")
    return 1 if failed else 0


def run_eval(
    settings: Settings,
    as_json: bool,
    judged: bool = False,
    options: EvalOptions | None = None,
    fail_under: Sequence[Threshold] = (),
) -> int:
    """``ragtui eval``: the metric table (or the JSON object) of every chosen retriever; ``judged`` adds Judged@k.

    ``options`` adds slices, curves, ir_measures columns, a comparison, an attribution or a saved run;
    ``fail_under`` makes the exit code 1 when a mean falls below its threshold.
    """
    options = options or EvalOptions()
    measures = parse_options_measures(options)
    refuse_taken_save(settings, options)
    ws = open_workspace(settings)
    gate = check_thresholds(ws, fail_under)
    # The causes of every miss: in --json's output and in a saved run; computed once for both, and
    # not at all for the table alone.
    why = WhyIndex(ws) if as_json and options.save else None
    save_if_asked(ws, options, why)
    if as_json:
        body = eval_report(ws, why)
        add_json_extras(ws, body, options)
        if fail_under:
            body["fail_under"] = [r.as_dict() for r in gate]
        print_json(body)
        return report_gate(gate)
    extras = text_extras(ws, options)
    print_report(eval_table_report(ws, judged=judged, measures=measures))
    for report in extras:
        out()
        print_report(report)
    return report_gate(gate)


def run_export(settings: Settings, folder: Path) -> int:
    """``ragtui export DIR``: TREC qrels and runs."""
    ws = open_workspace(settings)
    for path in export_trec(ws, folder):
        out(str(path))
    err(f"ragtui: {export_claims(ws)}")
    return 0
