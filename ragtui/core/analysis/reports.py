"""Every analysis as a ``Report``: built once here, printed by the command line and drawn by the app.

Each function turns computed results (an evaluation, a comparison, an attribution, agreement,
chunking diagnostics, check's problems, a run diff) into titled sections of formatted cells and
notes, so ``ragtui eval --compare`` and the app's compare view say the same words and digits.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ragtui.core.analysis.agreement import rule_agreement
from ragtui.core.analysis.attribution import (
    HybridExplanation,
    PoolCeiling,
    RerankExplanation,
    SoleResult,
)
from ragtui.core.analysis.check import Problem, chunking_hint, shorten, shown_path
from ragtui.core.analysis.diagnostics import ChunkDiagnostics, histogram_bars
from ragtui.core.analysis.eval_report import passage_notes, rerank_line
from ragtui.core.analysis.runs import RunDiff
from ragtui.core.analysis.slices import slice_reports
from ragtui.core.labelling.agreement import (
    AnnotatorAgreement,
    RuleAgreement,
    annotator_agreement,
    annotators,
    kappa_text,
)
from ragtui.core.labelling.authoring import AddedQuestion
from ragtui.core.labelling.judging import THIN_JUDGED, judged_summaries
from ragtui.core.metrics.measures import Measure, measure_means
from ragtui.core.metrics.significance import Comparison
from ragtui.core.report import (
    Column,
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
from ragtui.core.workspace import Workspace

__all__ = [
    "SIGNIFICANCE",
    "added_question_report",
    "agreement_report",
    "annotator_pairs",
    "check_report",
    "comparison_report",
    "curve_report",
    "diagnostics_report",
    "diff_report",
    "eval_table_report",
    "explain_report",
    "slices_report",
]

#: A difference with a p-value below this is marked significant.
SIGNIFICANCE = 0.05


def _count(n: int, noun: str) -> str:
    """``1 problem``, ``2 problems``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _rank(rank: int | None) -> str:
    """A 1-based rank, or ``-`` when the list does not hold the chunk."""
    return "-" if rank is None else str(rank)


def _none(what: str) -> Section:
    """A one-line section saying a list is empty: ``only bm25 found: none``."""
    return text_section(Note(f"{what}: none", "dim"))


def _one_line(text: str) -> str:
    """Text with its white space (line breaks included) collapsed to single spaces."""
    return " ".join(text.split())


# ---- the eval table ------------------------------------------------------------------------------


def _eval_summary(ws: Workspace) -> str:
    """``6 questions (1 skipped, no judgement: m07); 9 chunks; k=3, depth=10``."""
    ev = ws.evaluation
    assert ev is not None
    skipped = ev.skipped
    summary = f"{len(ev.evaluated)} questions"
    if skipped:
        shown = ", ".join(skipped[:8]) + (", ..." if len(skipped) > 8 else "")
        summary += f" ({len(skipped)} skipped, no judgement: {shown})"
    if ws.retired:
        summary += f" ({len(ws.retired)} retired, left out: {', '.join(ws.retired[:8])})"
    return f"{summary}; {len(ws.chunks)} chunks; k={ws.settings.k}, depth={ws.settings.depth}"


def _level_sections(ws: Workspace) -> tuple[Section, ...]:
    """A line saying the evaluation is at document level, when it is (else nothing)."""
    if ws.level != "document":
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
    columns = ["retriever", f"recall@{k}", f"precision@{k} (ceiling)", "MRR", f"nDCG@{k}"]
    summaries = judged_summaries(ws) if judged else {}
    rows = []
    for name in ws.retrievers:
        s = ev.summary(name)
        recall = fmt(s.recall) + ("*" if ev.recall_definition(name) != "chunks" else "")
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
        notes.append(
            f"judged@{k}: share of the top {k} with a hand grade or an evidence match; "
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
    intro = (f"{len(c.questions)} questions both evaluate; difference = {c.b} - {c.a}", test)
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
        Note(f"* p < {SIGNIFICANCE}; win: {c.b} scored higher than {c.a} on a question", "dim")
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
        return _none(f"only {name} found")
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
        ["chunk", f"{name} rank", "hybrid rank", "grade"], rows, heading=heading, right=(1, 2)
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
                _rank(r.bm25_rank),
                f"{r.bm25_term:.5f}" if r.bm25_rank is not None else "-",
                _rank(r.vector_rank),
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


# ---- agreement -----------------------------------------------------------------------------------


def annotator_pairs(names: Sequence[str]) -> list[tuple[str, str]]:
    """Every pair of annotators, in the order they first appear."""
    return list(itertools.combinations(names, 2))


def _rule_sections(result: RuleAgreement, source: str) -> list[Section]:
    """The evidence rule (or qrels) against the hand grades: table, kappa, disagreements."""
    rule = "evidence match" if source == "evidence" else f"qrels grade >= {result.threshold}"
    heading = (
        f"{source} rule against hand grades: {_count(result.pairs, 'hand-graded pair')} that "
        f"apply (relevant = grade >= {result.threshold})"
    )
    if not result.pairs:
        return [text_section(Note("no hand grades yet", "dim"), heading=heading)]
    rows = [
        [label, *map(str, result.row(match))]
        for match, label in ((True, rule), (False, f"no {rule}"))
    ]
    kappa = (
        f"Cohen's kappa (binary): {kappa_text(result.kappa)}; "
        f"observed agreement {fmt(result.observed)}"
    )
    confusion = table(
        ["", *(f"grade {g}" for g in result.grades)],
        rows,
        heading=heading,
        notes=[Note(kappa, "strong")],
        right=range(1, len(result.grades) + 1),
    )
    if not result.disagreements:
        return [confusion, _none("disagreements to review")]
    heading = f"disagreements to review: {len(result.disagreements)}"
    disagreements = table(
        ["question", "chunk", "grade", "by", "disagreement"],
        (
            [d.question, d.chunk, str(d.hand_grade), d.by, d.kind]
            for d in result.disagreements
        ),
        heading=heading,
        right=(2,),
    )
    return [confusion, disagreements]


def _pair_sections(result: AnnotatorAgreement) -> list[Section]:
    """Two annotators on the pairs both graded: table, kappas, disagreements."""
    a, b = result.a or "(unnamed)", result.b or "(unnamed)"
    left_out = (
        f", {result.changed_text} left out: the chunk text changed between their labels"
        if result.changed_text
        else ""
    )
    heading = (
        f"{a} against {b}: {_count(result.pairs, 'pair')} graded by both "
        f"({result.only_a} only by {a}, {result.only_b} only by {b}{left_out})"
    )
    if not result.pairs:
        return [Section(heading)]
    kappas = (
        f"Cohen's kappa (binary, grade >= {result.threshold}): {kappa_text(result.kappa)}; "
        f"weighted kappa (quadratic, on grades): {kappa_text(result.weighted_kappa)}; "
        f"same grade on {fmt(result.observed)}"
    )
    confusion = table(
        [f"{a} \\ {b}", *(str(g) for g in result.grades)],
        (
            [f"grade {ga}", *(str(result.table.get((ga, gb), 0)) for gb in result.grades)]
            for ga in result.grades
        ),
        heading=heading,
        notes=[Note(kappas, "strong")],
        right=range(1, len(result.grades) + 1),
    )
    if not result.disagreements:
        return [confusion, _none(f"disagreements between {a} and {b}")]
    heading = f"disagreements between {a} and {b}: {len(result.disagreements)}"
    disagreements = table(
        ["question", "chunk", a, b],
        ([q, c, str(ga), str(gb)] for q, c, ga, gb in result.disagreements),
        heading=heading,
        right=(2, 3),
    )
    return [confusion, disagreements]


def agreement_report(ws: Workspace, pairs: Sequence[tuple[str, str]] = ()) -> Report:
    """The evidence rule against the hand grades, the annotators, and each pair of ``pairs`` compared."""
    sections = _rule_sections(rule_agreement(ws), ws.base_source)
    names = annotators(ws.labels.history)
    listed = ", ".join(f"{n or '(unnamed)'} ({_count(c, 'pair')})" for n, c in names.items())
    annotator_notes = [Note(f"annotators: {listed or 'none'}")]
    disputed = ws.disputed_pairs()
    if disputed:
        shown = ", ".join(f"{q} {c}" for q, c in disputed[:5])
        more = f", ... ({len(disputed) - 5} more)" if len(disputed) > 5 else ""
        annotator_notes.append(
            Note(
                f"disputed: {_count(len(disputed), 'pair')} graded differently and not adjudicated "
                f"(the latest grade counts until one is adjudicated): {shown}{more}",
                "warning",
            )
        )
    if len(names) < 2:
        annotator_notes.append(
            Note("two annotators are needed to compare; each label carries its --annotator", "dim")
        )
    sections.append(text_section(*annotator_notes))
    for a, b in pairs:
        history = ws.labels.history
        sections += _pair_sections(annotator_agreement(history, a, b, ws.settings.threshold))
    return Report("agreement", tuple(sections))


# ---- chunking diagnostics and check --------------------------------------------------------------


def window_summary(diag: ChunkDiagnostics, mode: str) -> str:
    """One line: the chunks and evidence strings in a cut-off tail before windows and after."""
    tails = len(diag.truncated)
    hidden = len(diag.hidden_evidence)
    before = f"{_count(tails, 'chunk')} and {_count(hidden, 'evidence string')} in a cut-off tail"
    if diag.limit is None:
        return "windows: the model's limit is unknown, so chunks are embedded as they are"
    if diag.windows is None:
        return f"windows: off (--windows {mode}): {before}, left unread (--windows max reads them)"
    w = diag.windows
    return (
        f"windows: {w.plan.describe()}; {_count(w.windowed, 'chunk')} read as "
        f"{w.windows} windows; before: {before}; after: 0 chunks with an unread tail, "
        f"{_count(len(w.split), 'evidence string')} that no single window holds whole"
    )


def diagnostics_report(
    diag: ChunkDiagnostics,
    *,
    chunk_size: int | None,
    overlap: int,
    questions_file: str | Path,
    windows: str = "max",
    longest: int | None = None,
) -> Report:
    """What the chunk size does to the golden set and to the vector retriever, and the token histogram.

    Information, never a reason for ``ragtui check`` to fail (a straddling evidence string is also
    one of check's problems). ``longest``: list only that many of the chunks longer than the model
    reads, the longest first (None: all, in chunk order).
    """
    where = shown_path(str(questions_file))
    chunks = len(diag.token_counts)
    limit = diag.limit
    head = [
        Note(f"chunk size {chunk_size or 'whole documents'} · overlap {overlap} · {chunks} chunks")
    ]
    if limit is None:
        head.append(
            Note(
                "the model's maximum sequence length is unknown; chunk truncation not checked",
                "warning",
            )
        )
    else:
        head.append(
            Note(
                f"the embedding model reads {limit.content_tokens} tokens: max_seq_length "
                f"{limit.max_seq_length} less {limit.special_tokens} special tokens"
            )
        )
    sections = [text_section(*head)]

    def located(
        what: str,
        why: str,
        columns: Sequence[str],
        rows: Sequence[Sequence[str]],
        total: int | None = None,
    ) -> Section:
        if not rows:
            return _none(what)
        return table(columns, rows, heading=f"{what} ({total or len(rows)}){why}")

    sections.append(
        located(
            "evidence straddling a chunk boundary",
            ": in no single chunk",
            ["where", "question", "evidence", "spans"],
            [
                [
                    f"{where}:{s.line}",
                    s.question,
                    repr(shorten(s.evidence)),
                    "; ".join(" + ".join(p) for p in s.pairs) or "more than two chunks",
                ]
                for s in diag.straddling
            ],
        )
    )
    sections.append(
        located(
            "evidence in several chunks",
            ": all of them relevant",
            ["where", "question", "evidence", "chunks"],
            [
                [f"{where}:{m.line}", m.question, repr(shorten(m.evidence)), ", ".join(m.chunks)]
                for m in diag.multi_match
            ],
        )
    )
    if limit is not None:
        longer = f"chunks longer than the {limit.content_tokens} tokens the model reads"
        read = (
            f"read as overlapping windows ({diag.windows.plan.describe()}); without them the "
            "tail is invisible to the vector retriever"
            if diag.windows is not None
            else "the tail is invisible to the vector retriever"
        )
        if diag.truncated:
            shown = diag.truncated
            if longest is not None and len(shown) > longest:
                shown = sorted(shown, key=lambda t: -t.token_count)[:longest]
                read += f"; the {longest} longest shown (--verbose: all)"
            sections.append(
                table(
                    ["chunk", "tokens", "unseen"],
                    ([t.chunk, str(t.token_count), str(t.hidden_tokens)] for t in shown),
                    heading=f"{longer} ({len(diag.truncated)}): {read}",
                    right=(1, 2),
                )
            )
        else:
            sections.append(_none(longer))
        split = (
            {(h.question, h.evidence, h.chunk) for h in diag.windows.split}
            if diag.windows is not None
            else set()
        )
        tail = [
            [
                f"{where}:{h.line}",
                h.question,
                h.chunk,
                "wholly" if h.wholly_hidden else "partly",
                "-"
                if diag.windows is None
                else ("split" if (h.question, h.evidence, h.chunk) in split else "whole"),
                repr(shorten(h.evidence)),
            ]
            for h in diag.hidden_evidence
        ]
        why_tail = (
            ": a window reads it whole"
            if diag.windows is not None and not split
            else ": the vector retriever does not see it all"
        )
        if longest is not None and len(tail) > longest:
            # Those no single window reads whole first, every one of them.
            tail = sorted(tail, key=lambda row: row[4] != "split")
            tail = tail[: max(longest, sum(1 for row in tail if row[4] == "split"))]
            why_tail += f"; {len(tail)} shown (--verbose: all)"
        sections.append(
            located(
                "evidence in a cut-off tail",
                why_tail,
                ["where", "question", "chunk", "hidden", "window", "evidence"],
                tail,
                len(diag.hidden_evidence),
            )
        )
    if diag.histogram:
        bars = histogram_bars(diag.histogram)
        marks = "; '>' marks bins with chunks the model does not read whole" if limit else ""
        sections.append(
            table(
                ["tokens", "", "chunks", ""],
                (
                    [f"{b.low}-{b.high}", ">" if b.over else "", str(b.count), bar]
                    for b, bar in zip(diag.histogram, bars, strict=True)
                ),
                heading=f"chunk token counts ({_count(chunks, 'chunk')}{marks})",
                right=(0, 2),
            )
        )
    summary = (
        f"{len(diag.truncated)} of {chunks} chunks longer than the embedding model reads, "
        f"{_count(len(diag.hidden_evidence), 'evidence string')} in a cut-off tail, "
        f"{_count(len(diag.multi_match), 'evidence string')} in several chunks"
    )
    sections.append(text_section(Note(summary, "strong"), Note(window_summary(diag, windows))))
    return Report("chunking diagnostics", tuple(sections))


def check_report(ws: Workspace, problems: Sequence[Problem]) -> Report:
    """``ragtui check``'s problems (evidence in no chunk, stale labels), one a line, and the counts."""
    threshold = ws.settings.threshold
    relevant = [
        sum(1 for g in ws.effective_grades(q.id).values() if g >= threshold) for q in ws.questions
    ]
    lines = [Note(str(p), "bad") for p in problems] or [
        Note("No problems: every evidence string is in a chunk and no label is stale.", "good")
    ]
    hint = chunking_hint(ws)
    if hint is not None:
        lines.append(Note(f"hint: {hint}", "warning"))
    counts = (
        f"{len(ws.corpus.documents)} documents, {len(ws.chunks)} chunks, "
        f"{len(ws.questions)} questions ({sum(1 for n in relevant if n == 1)} with one relevant "
        f"chunk, {sum(1 for n in relevant if n > 1)} with several, "
        f"{sum(1 for n in relevant if n == 0)} with none); {_count(len(problems), 'problem')}"
    )
    return Report(
        f"check: {_count(len(problems), 'problem')}",
        (text_section(*lines), text_section(Note(counts, "strong"))),
    )


# ---- saved runs ----------------------------------------------------------------------------------


def _setting(value: Any) -> str:
    """A manifest value as a diff shows it (a SHA-256 cut to 12 characters)."""
    text = str(value)
    return text[:12] + "..." if isinstance(value, str) and len(value) == 64 else text


def _cause_notes(diff: RunDiff) -> list[Note]:
    """What became of each cause of a miss (``ragtui why``) between the two runs."""
    if diff.causes is None:
        return [
            Note(
                "causes of misses: not compared (a run was saved without them, or at another k)",
                "dim",
            )
        ]
    moved = [
        Note(
            f"  {c.cause}: {had} in A: {len(c.became_hits)} became hits, {len(c.other_causes)} "
            f"missed for other causes, {len(c.still)} still; {len(c.new)} new in B"
        )
        for c in diff.causes
        if (had := len(c.became_hits) + len(c.other_causes) + len(c.still)) or c.new
    ]
    head = "causes of misses (ragtui why):" if moved else "causes of misses: none"
    return [Note(head), *moved]


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


def diff_report(diff: RunDiff, limit: int | None = None) -> Report:
    """``ragtui diff A B``: the questions that got worse or better (worst first) and the mean change."""
    k = diff.k
    head: list[str | Note] = []
    if diff.settings_changed:
        head.append(
            "settings changed: "
            + "; ".join(
                f"{key} {_setting(a)} -> {_setting(b)}" for key, a, b in diff.settings_changed
            )
        )
    head.extend(_regraded_notes(diff))
    changed = diff.changed
    shown = changed if limit is None else changed[:limit]
    rows = [
        Row(
            (
                c.question,
                f"{_rank(c.rank_a)} -> {_rank(c.rank_b)}",
                f"{fmt(c.ndcg_a)} -> {fmt(c.ndcg_b)}",
                signed(c.ndcg_change)
                + (
                    " (grades only)"
                    if c.direction == "regraded"
                    else " (and grades)"
                    if c.regraded
                    else ""
                ),
                c.text if len(c.text) <= 60 else c.text[:57] + "...",
            ),
            "bad" if c.direction == "worse" else "warning" if c.direction == "regraded" else "good",
        )
        for c in shown
    ]
    notes: list[str | Note] = []
    if len(shown) < len(changed):
        notes.append(Note(f"... {len(changed) - len(shown)} more", "dim"))
    same = len(diff.changes) - len(changed)
    regraded = len(diff.regraded_only)
    notes.append(
        f"{len(diff.worse)} worse, {len(diff.better)} better, "
        + (f"{regraded} regraded (same ranking, other grades), " if regraded else "")
        + f"{same} unchanged"
    )
    notes.append(
        Note(
            "mean: "
            + ", ".join(
                f"{m} {fmt(diff.means_a[m])} -> {fmt(diff.means_b[m])} ({signed(diff.mean_change[m])})"
                for m in diff.means_a
            ),
            "strong",
        )
    )
    notes.extend(_cause_notes(diff))
    if diff.only_a or diff.only_b:
        notes.append(
            Note(
                f"left out (evaluated in one run only): {len(diff.only_a)} only in {diff.a}, "
                f"{len(diff.only_b)} only in {diff.b}",
                "warning",
            )
        )
    sections = [text_section(*head)] if head else []
    if rows:
        columns = ["question", "first relevant rank", f"nDCG@{k}", "change", "text"]
        sections.append(table(columns, rows, notes=notes))
    else:
        sections.append(text_section(*notes))
    return Report(
        f"diff {diff.a} -> {diff.b}: k={k}, {len(diff.changes)} questions in both", tuple(sections)
    )


def _regraded_notes(diff: RunDiff) -> list[str | Note]:
    """Whether hand grades differ between the two runs, and which questions they judge otherwise."""
    if diff.regraded:
        listed = ", ".join(diff.regraded[:10]) + (
            f" and {len(diff.regraded) - 10} more" if len(diff.regraded) > 10 else ""
        )
        return [
            Note(
                f"hand grades differ between the runs: {len(diff.regraded)} question(s) judged "
                f"with other grades ({listed}); ranked the same, a change is the grades' "
                "('regraded'), not better or worse retrieval",
                "warning",
            )
        ]
    if diff.labels_differ and not diff.grades_compared:
        return [
            Note(
                "the label journal differs between the runs: hand grades may differ, and with other "
                "chunks they cannot be compared question by question",
                "warning",
            )
        ]
    return []


# ---- a question just added -----------------------------------------------------------------------


def added_question_report(added: AddedQuestion, path: str | Path, k: int) -> Report:
    """What ``ragtui add-question`` wrote and how every retriever ranks the new question."""
    q = added.question
    rows = []
    for name, ranking in added.rankings.items():
        m = added.metrics[name]
        top = ", ".join(cid for cid, _ in ranking[:3])
        rows.append([name, _rank(m.first_relevant_rank), fmt(m.recall), fmt(m.ndcg), top])
    section = table(
        [
            Column("retriever"),
            Column("first relevant rank", "right"),
            Column(f"recall@{k}", "right"),
            Column(f"nDCG@{k}", "right"),
            Column("top 3"),
        ],
        rows,
    )
    relevant = ", ".join(added.relevant_chunks)
    return Report(f"{path}:{q.line}: added {q.id}; relevant (evidence): {relevant}", (section,))
