"""The evaluation commands: ``eval`` (with ``--by-slice/--curve/--metrics/--compare/--save/--explain``),
``export``, ``diff`` and ``explain``; the numbers come from the core, ``output`` prints them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtui.cli.output import (
    err,
    format_columns,
    open_workspace,
    out,
    print_json,
    print_notices,
)
from ragtui.core.analysis.attribution import (
    HybridExplanation,
    PoolCeiling,
    RerankExplanation,
    explain_hybrid,
    explain_rerank,
    pool_ceilings,
)
from ragtui.core.analysis.curve import recall_curves
from ragtui.core.analysis.eval_report import eval_report, format_table, rerank_line
from ragtui.core.analysis.export import export_trec
from ragtui.core.analysis.gate import GateResult, Threshold, check_thresholds
from ragtui.core.analysis.runs import (
    RunDiff,
    diff_runs,
    pick_retriever,
    resolve_saved,
    resolve_system,
    runs_folder,
    save_run,
)
from ragtui.core.analysis.slices import slice_reports
from ragtui.core.errors import InputError
from ragtui.core.metrics.measures import (
    Measure,
    default_measures,
    measure_means,
    measure_values,
    parse_measures,
)
from ragtui.core.metrics.significance import (
    Comparison,
    compare_systems,
)
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
    runs_dir: Path | None = None
    explain: str | None = None
    seed: int = 0

    @property
    def any(self) -> bool:
        """Whether anything beyond the default table was asked for."""
        return any((self.by_slice, self.curve, self.metrics, self.compare, self.save, self.explain))


def _f(value: float) -> str:
    return f"{value:.3f}"


def _signed(value: float) -> str:
    return f"{value:+.3f}"


def parse_options_measures(options: EvalOptions) -> list[Measure] | None:
    """The measures of ``--metrics``, or None when it was not given."""
    return parse_measures(options.metrics) if options.metrics else None


# ---- tables ---------------------------------------------------------------------------------------


def format_measure_table(ws: Workspace, measures: Sequence[Measure]) -> str:
    """The eval table with ``--metrics``: one column per measure."""
    means = measure_means(ws, measures)
    rows = [["retriever", *(m.name for m in measures)]]
    rows += [[r, *(_f(means[r][m.name]) for m in measures)] for r in ws.retrievers]
    return format_columns(rows)


def format_slices(ws: Workspace, measures: Sequence[Measure] | None = None) -> str:
    """``eval --by-slice``: every mean of every retriever per slice (``all`` first), with the question count."""
    k = ws.settings.k
    reports = slice_reports(ws, include_all=True)
    if measures:
        header = ["slice", "questions", "retriever", *(m.name for m in measures)]
    else:
        header = [
            "slice",
            "questions",
            "retriever",
            f"recall@{k}",
            f"precision@{k} (ceiling)",
            "MRR",
            f"nDCG@{k}",
        ]
    rows = [header]
    for report in reports:
        means = measure_means(ws, measures, report.questions) if measures else {}
        for i, name in enumerate(ws.retrievers):
            head = [report.name, str(len(report.questions))] if i == 0 else ["", ""]
            if measures:
                cells = [_f(means[name][m.name]) for m in measures]
            else:
                s = report.summaries[name]
                cells = [
                    _f(s.recall),
                    f"{_f(s.precision)} ({_f(s.precision_ceiling)})",
                    _f(s.mrr),
                    _f(s.ndcg),
                ]
            rows.append([*head, name, *cells])
    text = format_columns(rows)
    skipped = [f"{r.name} {len(r.skipped)}" for r in reports[1:] if r.skipped]
    if skipped:
        text += "\nskipped (no relevant chunk): " + ", ".join(skipped)
    return text


def format_curve(curves: dict[str, list[float]]) -> str:
    """``eval --curve``: recall@k for k = 1..depth, one column per retriever."""
    names = list(curves)
    depth = max((len(v) for v in curves.values()), default=0)
    rows = [["k", *names]]
    rows += [[str(k + 1), *(_f(curves[n][k]) for n in names)] for k in range(depth)]
    return "recall@k\n" + format_columns(rows, right=range(len(names) + 1))


def format_comparison(comparison: Comparison) -> str:
    """``eval --compare A B``: each measure's means, difference B - A, 95 % interval, p-value and win/tie/loss."""
    c = comparison
    head = (
        f"compare {c.a} -> {c.b} on {len(c.questions)} questions (difference = {c.b} - {c.a}; "
        f"paired sign-flip test, {c.n_permutations:,} permutations; bootstrap 95% CI, {c.n_resamples:,} resamples; seed {c.seed})"
    )
    rows = [["measure", c.a, c.b, "diff", "95% CI", "p", "win/tie/loss"]]
    for m in c.metrics:
        rows.append(
            [
                m.measure,
                _f(m.mean_a),
                _f(m.mean_b),
                _signed(m.mean_difference),
                f"[{_signed(m.ci_low)}, {_signed(m.ci_high)}]",
                f"{m.p_value:.4f}",
                f"{m.wins}/{m.ties}/{m.losses}",
            ]
        )
    text = head + "\n" + format_columns(rows)
    if c.only_a or c.only_b:
        text += f"\nleft out (evaluated by one side only): {len(c.only_a)} only in {c.a}, {len(c.only_b)} only in {c.b}"
    return text


def _rank(rank: int | None) -> str:
    return str(rank) if rank is not None else "-"


def _setting(value: Any) -> str:
    text = str(value)
    return text[:12] + "..." if isinstance(value, str) and len(value) == 64 else text


def format_diff(diff: RunDiff, limit: int | None = None) -> str:
    """``ragtui diff A B``: the questions that got worse or better (worst first) and the mean change."""
    k = diff.k
    lines = [f"diff {diff.a} -> {diff.b}: k={k}, {len(diff.changes)} questions in both"]
    if diff.settings_changed:
        lines.append(
            "settings changed: "
            + "; ".join(
                f"{key} {_setting(a)} -> {_setting(b)}" for key, a, b in diff.settings_changed
            )
        )
    changed = diff.changed
    shown = changed if limit is None else changed[:limit]
    if shown:
        rows = [["question", "first relevant rank", f"nDCG@{k}", "change", "text"]]
        for c in shown:
            text = c.text if len(c.text) <= 60 else c.text[:57] + "..."
            rows.append(
                [
                    c.question,
                    f"{_rank(c.rank_a)} -> {_rank(c.rank_b)}",
                    f"{_f(c.ndcg_a)} -> {_f(c.ndcg_b)}",
                    _signed(c.ndcg_change),
                    text,
                ]
            )
        lines.append(format_columns(rows))
        if len(shown) < len(changed):
            lines.append(f"... {len(changed) - len(shown)} more")
    same = len(diff.changes) - len(changed)
    lines.append(f"{len(diff.worse)} worse, {len(diff.better)} better, {same} unchanged")
    lines.append(
        "mean: "
        + ", ".join(
            f"{m} {_f(diff.means_a[m])} -> {_f(diff.means_b[m])} ({_signed(diff.mean_change[m])})"
            for m in diff.means_a
        )
    )
    if diff.only_a or diff.only_b:
        lines.append(
            f"left out (evaluated in one run only): {len(diff.only_a)} only in {diff.a}, {len(diff.only_b)} only in {diff.b}"
        )
    return "\n".join(lines)


def _grade(grade: int | None) -> str:
    return "" if grade is None else str(grade)


def format_explanation(
    ws: Workspace, expl: HybridExplanation, pool: PoolCeiling | None = None
) -> str:
    """``ragtui explain QID``: each hybrid result's ranks, RRF terms and ties; sole finds; pool ceiling."""
    k = expl.k
    question = ws.question_by_id[expl.question]
    lines = [
        f"{expl.question}: {question.text}",
        f"hybrid = RRF (k={expl.rrf_k}) over the top {expl.depth} of bm25 and vector; term = 1/({expl.rrf_k}+rank)",
    ]
    rows = [["rank", "chunk", "score", "bm25", "term", "vector", "term", "tie", "grade"]]
    for r in expl.results:
        rows.append(
            [
                str(r.rank),
                r.chunk,
                f"{r.score:.5f}",
                _rank(r.bm25_rank),
                f"{r.bm25_term:.5f}" if r.bm25_rank else "-",
                _rank(r.vector_rank),
                f"{r.vector_term:.5f}" if r.vector_rank else "-",
                "tie" if r.tied else "",
                _grade(r.grade) + (" relevant" if r.relevant else ""),
            ]
        )
    lines.append(format_columns(rows, right=(0, 2, 3, 4, 5, 6)))
    for name, sole in (("bm25", expl.only_bm25), ("vector", expl.only_vector)):
        if not sole:
            lines.append(f"only {name} found: none")
            continue
        items = [
            f"{s.chunk} (rank {s.rank}, hybrid {_rank(s.hybrid_rank)}{', relevant' if s.relevant else ''})"
            for s in sole
        ]
        lines.append(f"only {name} found {len(sole)}: " + ", ".join(items))
    if expl.missed:
        lines.append("relevant chunks neither list found: " + ", ".join(expl.missed))
    lines.append(
        f"pool ceiling recall@{k} {_f(expl.pool_ceiling)} ({expl.relevant_in_pool} of {expl.relevant} relevant in the pool), "
        f"hybrid recall@{k} {_f(expl.hybrid_recall)}"
    )
    if pool is not None:
        lines.append(
            f"mean over {pool.questions} questions: pool ceiling recall@{k} {_f(pool.pool_ceiling)}, "
            f"hybrid recall@{k} {_f(pool.hybrid_recall)}"
        )
    return "\n".join(lines)


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


def format_rerank_explanation(expl: RerankExplanation) -> str:
    """The reranked list of one question beside the first stage's ranks, and the model's time on it."""
    lines = [
        (
            f"{expl.retriever}: {expl.model} re-scored the top {len(expl.results)} of {expl.over} "
            f"in {expl.seconds * 1000:.1f} ms"
        )
    ]
    rows = [["rank", "chunk", "score", expl.over, "grade"]]
    for r in expl.results:
        rows.append(
            [
                str(r.rank),
                r.chunk,
                f"{r.score:.5f}",
                _rank(r.first_stage_rank or None),
                _grade(r.grade) + (" relevant" if r.relevant else ""),
            ]
        )
    lines.append(format_columns(rows, right=(0, 2, 3)))
    return "\n".join(lines)


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


def text_extras(ws: Workspace, options: EvalOptions) -> list[str]:
    """The tables the options ask for, to print after the main one (computed first, so bad input prints nothing)."""
    measures = parse_options_measures(options)
    sections = []
    if options.by_slice:
        sections.append(format_slices(ws, measures))
    if options.curve:
        sections.append(format_curve(recall_curves(ws)))
    if options.compare:
        sections.append(format_comparison(_comparison(ws, options, measures)))
    if options.explain:
        sections.append(
            format_explanation(ws, explain_hybrid(ws, options.explain), pool_ceilings(ws))
        )
        reranked = explain_rerank(ws, options.explain)
        if reranked is not None:
            sections.append(format_rerank_explanation(reranked))
    return sections


def save_if_asked(ws: Workspace, options: EvalOptions) -> None:
    """``--save NAME``: write the saved run and say where on stderr."""
    if options.save:
        path = save_run(ws, options.save, options.runs_dir)
        print_notices(ws)
        err(f"ragtui: saved run {options.save!r} to {path}")


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
    diff = diff_runs(
        run_a.system(name_a),
        run_b.system(name_b),
        cut,
        texts=texts,
        manifests=(run_a.manifest, run_b.manifest),
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
    out(format_diff(diff, limit))
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
    out(format_explanation(ws, expl, pool))
    if reranked is not None:
        out()
        out(format_rerank_explanation(reranked))
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
    ws = open_workspace(settings)
    gate = check_thresholds(ws, fail_under)
    save_if_asked(ws, options)
    if as_json:
        report = eval_report(ws)
        add_json_extras(ws, report, options)
        if fail_under:
            report["fail_under"] = [r.as_dict() for r in gate]
        print_json(report)
        return report_gate(gate)
    extras = text_extras(ws, options)
    ev = ws.evaluation
    assert ev is not None
    skipped = ev.skipped
    note = f"{len(ev.evaluated)} questions"
    if skipped:
        shown = ", ".join(skipped[:8]) + (", ..." if len(skipped) > 8 else "")
        note += f" ({len(skipped)} skipped, no relevant chunk: {shown})"
    out(f"{note}; {len(ws.chunks)} chunks; k={ws.settings.k}, depth={ws.settings.depth}")
    out(format_measure_table(ws, measures) if measures else format_table(ws, judged=judged))
    reranked = rerank_line(ws)
    if reranked:
        out(reranked)
    if judged and not measures:
        from ragtui.core.labelling.judging import THIN_JUDGED

        out(
            f"judged@{ws.settings.k}: share of the top {ws.settings.k} with a hand grade or an evidence match; "
            f"thin = below {THIN_JUDGED}: the metrics rest on unjudged chunks"
        )
    for section in extras:
        out()
        out(section)
    return report_gate(gate)


def run_export(settings: Settings, folder: Path) -> int:
    """``ragtui export DIR``: TREC qrels and runs."""
    ws = open_workspace(settings)
    for path in export_trec(ws, folder):
        out(str(path))
    return 0
