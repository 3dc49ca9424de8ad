"""How the retrievers did, as reports: the eval table, the means per slice, the recall curve, B
against A with significance, hybrid attribution and a reranked list beside its first stage."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ragtui.core.analysis.attribution import (
    HybridExplanation,
    PoolCeiling,
    RerankExplanation,
    SoleResult,
)
from ragtui.core.analysis.eval_report import passage_notes, rerank_line
from ragtui.core.analysis.reports.cells import empty, rank
from ragtui.core.analysis.slices import slice_reports
from ragtui.core.labelling.labels import GRADES_HUMAN_MODEL
from ragtui.core.metrics.measures import Measure, measure_means
from ragtui.core.metrics.significance import Comparison
from ragtui.core.report_model import (
    Note,
    Report,
    Row,
    Section,
    fmt,
    note,
    signed,
    table,
    text_section,
)
from ragtui.core.workspace import SOURCE_QRELS, Workspace
from ragtui.core.workspace.judging import THIN_JUDGED, judged_summaries

__all__ = [
    "SIGNIFICANCE",
    "comparison_report",
    "curve_report",
    "eval_table_report",
    "explain_report",
    "rerank_explanation_report",
    "slices_report",
]

#: A difference with a p-value below this is marked significant.
SIGNIFICANCE = 0.05


def _one_line(text: str) -> str:
    """Text with its white space (line breaks included) collapsed to single spaces."""
    return " ".join(text.split())


# ---- the eval table ------------------------------------------------------------------------------


def _eval_summary(ws: Workspace) -> str:
    """``6 questions (1 skipped, no judgement: m07); 9 chunks; k=3, depth=10; grades: human``."""
    ev = ws.evaluation
    assert ev is not None
    skipped = ev.skipped
    summary = f"{len(ev.evaluated)} questions"
    if skipped:
        shown = ", ".join(skipped[:8]) + (", ..." if len(skipped) > 8 else "")
        summary += f" ({len(skipped)} skipped, no judgement: {shown})"
    if ws.questions.retired:
        summary += f" ({len(ws.questions.retired)} retired, left out: {', '.join(ws.questions.retired[:8])})"
    return (
        f"{summary}; {len(ws.data.chunks)} chunks; k={ws.settings.k}, depth={ws.settings.depth}; "
        f"grades: {ws.settings.counted_grades}"
    )


def _level_sections(ws: Workspace) -> tuple[Section, ...]:
    """A line saying the evaluation is at document level, when it is (else nothing)."""
    if ws.data.level != "document":
        return ()
    return (
        text_section(
            "document level: the qrels name documents, so each document ranks at its best "
            "chunk's rank (--level chunk for chunk level)"
        ),
    )


def eval_table_report(
    ws: Workspace, *, judged: bool = False, measures: Sequence[Measure] | None = None
) -> Report:
    """The metric table of ``ragtui eval``: one row per retriever, the default columns or ``measures``.

    ``judged`` adds Judged@k (``thin`` below 0.5: the metrics rest on unjudged chunks).
    """
    ev = ws.evaluation
    assert ev is not None
    k = ws.settings.k
    if measures:
        means = measure_means(ws, measures)
        section = table(
            ["retriever", *(m.name for m in measures)],
            ([r, *(fmt(means[r][m.name]) for m in measures)] for r in ws.retrievers),
        )
        section = replace(section, notes=(*section.notes, *map(note, passage_notes(ws))))
        return Report(_eval_summary(ws), (*_level_sections(ws), section))
    columns = [
        "retriever",
        f"evidence recall@{k}" if ev.units is not None else f"recall@{k}",
        f"precision@{k} (ceiling)",
        "MRR",
        f"nDCG@{k}",
    ]
    summaries = judged_summaries(ws) if judged else {}
    rows = []
    for name in ws.retrievers:
        s = ev.summary(name)
        recall = fmt(s.recall)
        cells = [name, recall, f"{fmt(s.precision)} ({fmt(s.precision_ceiling)})"]
        cells += [fmt(s.mrr), fmt(s.ndcg)]
        thin = False
        if judged:
            thin = summaries[name].thin
            cells.append(fmt(summaries[name].mean) + (" thin" if thin else ""))
        rows.append(Row(tuple(cells), "warning" if thin else ""))
    notes = passage_notes(ws)
    reranked = rerank_line(ws)
    if reranked:
        notes.append(reranked)
    if judged:
        columns.append(f"judged@{k}")
        graded = "a person's grade, a model judge's verdict (--grades human+model)"
        if ws.settings.counted_grades != GRADES_HUMAN_MODEL:
            graded = "a person's grade"
        base = "the qrels" if ws.data.base_source == SOURCE_QRELS else "an evidence match"
        notes.append(
            f"judged@{k}: share of the top {k} with {graded} or {base}; "
            f"thin = below {THIN_JUDGED}: the metrics rest on unjudged chunks"
        )
    return Report(_eval_summary(ws), (*_level_sections(ws), table(columns, rows, notes=notes)))


def slices_report(ws: Workspace, measures: Sequence[Measure] | None = None) -> Report:
    """Every mean of every retriever per slice (``all`` first), with the number of questions in each."""
    k = ws.settings.k
    reports = slice_reports(ws, include_all=True)
    if measures:
        values = [m.name for m in measures]
    else:
        values = [f"recall@{k}", f"precision@{k} (ceiling)", "MRR", f"nDCG@{k}"]
    rows = []
    for report in reports:
        means = measure_means(ws, measures, report.questions) if measures else {}
        for i, name in enumerate(ws.retrievers):
            head = [report.name, str(len(report.questions))] if i == 0 else ["", ""]
            if measures:
                cells = [fmt(means[name][m.name]) for m in measures]
            else:
                s = report.summaries[name]
                cells = [
                    fmt(s.recall),
                    f"{fmt(s.precision)} ({fmt(s.precision_ceiling)})",
                    fmt(s.mrr),
                    fmt(s.ndcg),
                ]
            rows.append([*head, name, *cells])
    skipped = [f"{r.name} {len(r.skipped)}" for r in reports[1:] if r.skipped]
    notes = [Note("skipped (no judgement): " + ", ".join(skipped), "dim")] if skipped else []
    section = table(["slice", "questions", "retriever", *values], rows, notes=notes)
    return Report("metrics per slice", (section,))


def curve_report(curves: Mapping[str, Sequence[float]], scope: str = "") -> Report:
    """Recall@k for k = 1..depth, one column per retriever (``scope`` says over which questions)."""
    names = list(curves)
    depth = max((len(v) for v in curves.values()), default=0)
    rows = [[str(k + 1), *(fmt(curves[n][k]) for n in names)] for k in range(depth)]
    section = table(["k", *names], rows, right=range(len(names) + 1))
    title = f"recall@k, k = 1..{depth}" + (f" · {scope}" if scope else "")
    return Report(title, (section,))


# ---- comparison ----------------------------------------------------------------------------------


def comparison_report(comparison: Comparison) -> Report:
    """B against A: each measure's means, B - A, the 95 % interval, the p-value and win/tie/loss."""
    c = comparison
    test = (
        f"paired randomisation test (sign flips, two-sided), {c.n_permutations:,} permutations; "
        f"bootstrap 95% interval, {c.n_resamples:,} resamples; seed {c.seed}"
    )
    intro = (
        f"{len(c.questions)} questions both evaluate; difference = {c.b} - {c.a}",
        test,
    )
    rows = []
    for m in c.metrics:
        significant = m.p_value < SIGNIFICANCE
        cells = (
            m.measure,
            fmt(m.mean_a),
            fmt(m.mean_b),
            signed(m.mean_difference),
            f"[{signed(m.ci_low)}, {signed(m.ci_high)}]",
            f"{m.p_value:.4f}" + (" *" if significant else ""),
            f"{m.wins}/{m.ties}/{m.losses}",
        )
        rows.append(Row(cells, "strong" if significant else ""))
    notes: list[str | Note] = [
        Note(
            f"* p < {SIGNIFICANCE}; win: {c.b} scored higher than {c.a} on a question",
            "dim",
        )
    ]
    if c.only_a or c.only_b:
        notes.append(
            Note(
                f"left out (evaluated by one side only): {len(c.only_a)} only in {c.a}, "
                f"{len(c.only_b)} only in {c.b}",
                "warning",
            )
        )
    section = table(["measure", c.a, c.b, "diff", "95% CI", "p", "win/tie/loss"], rows, notes=notes)
    return Report(
        f"compare {c.b} against {c.a}",
        (text_section(*(Note(t, "dim") for t in intro)), section),
    )


# ---- hybrid attribution --------------------------------------------------------------------------


def _sole_section(name: str, sole: Sequence[SoleResult]) -> Section:
    """The chunks only one list found: their rank there and where hybrid put them."""
    if not sole:
        return empty(f"only {name} found")
    heading = f"only {name} found ({len(sole)})"
    rows = [
        Row(
            (
                s.chunk,
                str(s.rank),
                "fused out" if s.hybrid_rank is None else str(s.hybrid_rank),
                ("" if s.grade is None else str(s.grade)) + (" relevant" if s.relevant else ""),
            ),
            "strong" if s.relevant else "",
        )
        for s in sole
    ]
    return table(
        ["chunk", f"{name} rank", "hybrid rank", "grade"],
        rows,
        heading=heading,
        right=(1, 2),
    )


def explain_report(question: str, expl: HybridExplanation, pool: PoolCeiling | None) -> Report:
    """Each hybrid result's ranks and RRF terms, ties, the chunks one list alone found, and the pool ceiling."""
    k, rrf = expl.k, expl.rrf_k
    intro = Section(
        notes=(
            Note(
                f"hybrid = RRF (k={rrf}) over the top {expl.depth} of bm25 and vector; "
                f"score = 1/({rrf} + bm25 rank) + 1/({rrf} + vector rank)",
                "dim",
            ),
        )
    )
    rows = [
        Row(
            (
                str(r.rank),
                r.chunk,
                f"{r.score:.5f}",
                rank(r.bm25_rank),
                f"{r.bm25_term:.5f}" if r.bm25_rank is not None else "-",
                rank(r.vector_rank),
                f"{r.vector_term:.5f}" if r.vector_rank is not None else "-",
                "tie" if r.tied else "",
                ("" if r.grade is None else str(r.grade)) + (" relevant" if r.relevant else ""),
            ),
            "strong" if r.relevant else "",
        )
        for r in expl.results
    ]
    results = table(
        ["rank", "chunk", "score", "bm25", "term", "vector", "term", "tie", "grade"],
        rows,
        right=(0, 2, 3, 4, 5, 6),
    )
    notes: list[Note] = []
    if expl.missed:
        notes.append(Note("relevant chunks neither list found: " + ", ".join(expl.missed), "bad"))
    notes.append(
        Note(
            f"pool ceiling recall@{k} {fmt(expl.pool_ceiling)} ({expl.relevant_in_pool} of "
            f"{expl.relevant} relevant in the pool), hybrid recall@{k} {fmt(expl.hybrid_recall)}",
            "strong",
        )
    )
    if pool is not None:
        notes.append(
            Note(
                f"mean over {pool.questions} questions: pool ceiling recall@{k} "
                f"{fmt(pool.pool_ceiling)}, hybrid recall@{k} {fmt(pool.hybrid_recall)}",
                "dim",
            )
        )
    return Report(
        f"hybrid attribution · {expl.question}: {_one_line(question)}",
        (
            intro,
            results,
            _sole_section("bm25", expl.only_bm25),
            _sole_section("vector", expl.only_vector),
            text_section(*notes),
        ),
    )


def rerank_explanation_report(expl: RerankExplanation) -> Report:
    """The reranked list of one question beside the first stage's ranks, and the model's time on it."""
    rows = [
        Row(
            (
                str(r.rank),
                r.chunk,
                f"{r.score:.5f}",
                str(r.first_stage_rank) if r.first_stage_rank else "-",
                ("" if r.grade is None else str(r.grade)) + (" relevant" if r.relevant else ""),
            ),
            "good" if r.relevant else "",
        )
        for r in expl.results
    ]
    return Report(
        f"{expl.retriever} · {expl.question}",
        (
            text_section(
                f"{expl.retriever}: {expl.model} re-scored the top {len(expl.results)} of "
                f"{expl.over} in {expl.seconds * 1000:.1f} ms"
            ),
            table(["rank", "chunk", "score", expl.over, "grade"], rows, right=(0, 2, 3)),
        ),
    )
