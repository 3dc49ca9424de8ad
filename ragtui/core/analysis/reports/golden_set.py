"""The golden set's own reports: how its labels agree (the evidence rule against the hand grades,
annotator against annotator), what the chunking does to it (diagnostics), ``ragtui check``'s
problems, and a question just added."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

from ragtui.core.analysis.check import Problem, chunking_hint, shorten, shown_path
from ragtui.core.analysis.diagnostics import ChunkDiagnostics, histogram_bars
from ragtui.core.analysis.reports.cells import count, empty, rank
from ragtui.core.analysis.rule_agreement import rule_agreement
from ragtui.core.judges.agreement import JudgeAgreement, judge_agreements
from ragtui.core.judges.report import judge_sections
from ragtui.core.labelling.agreement import (
    AnnotatorAgreement,
    RuleAgreement,
    annotator_agreement,
    annotators,
    kappa_text,
)
from ragtui.core.labelling.authoring import AddedQuestion
from ragtui.core.report_model import Column, Note, Report, Section, fmt, table, text_section
from ragtui.core.workspace import Workspace

__all__ = [
    "added_question_report",
    "agreement_report",
    "annotator_pairs",
    "check_report",
    "diagnostics_report",
    "window_summary",
]

# ---- agreement -----------------------------------------------------------------------------------


def annotator_pairs(names: Sequence[str]) -> list[tuple[str, str]]:
    """Every pair of annotators, in the order they first appear."""
    return list(itertools.combinations(names, 2))


def _rule_sections(result: RuleAgreement, source: str) -> list[Section]:
    """The evidence rule (or qrels) against the hand grades: table, kappa, disagreements."""
    rule = "evidence match" if source == "evidence" else f"qrels grade >= {result.threshold}"
    heading = (
        f"{source} rule against hand grades: {count(result.pairs, 'hand-graded pair')} that "
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
        return [confusion, empty("disagreements to review")]
    heading = f"disagreements to review: {len(result.disagreements)}"
    disagreements = table(
        ["question", "chunk", "grade", "by", "disagreement"],
        ([d.question, d.chunk, str(d.hand_grade), d.by, d.kind] for d in result.disagreements),
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
        f"{a} against {b}: {count(result.pairs, 'pair')} graded by both "
        f"({result.only_a} only by {a}, {result.only_b} only by {b}{left_out})"
    )
    if not result.pairs:
        return [Section(heading)]
    kappas = (
        f"Cohen's kappa (binary, grade >= {result.threshold}): {kappa_text(result.kappa)}; "
        f"weighted kappa (quadratic, on grades): {kappa_text(result.weighted_kappa)}; "
        f"same grade on {fmt(result.observed)}"
    )
    independence = result.independence_text()
    confusion = table(
        [f"{a} \\ {b}", *(str(g) for g in result.grades)],
        (
            [
                f"grade {ga}",
                *(str(result.table.get((ga, gb), 0)) for gb in result.grades),
            ]
            for ga in result.grades
        ),
        heading=heading,
        notes=[Note(kappas, "strong"), Note(independence, "dim")],
        right=range(1, len(result.grades) + 1),
    )
    if not result.disagreements:
        return [confusion, empty(f"disagreements between {a} and {b}")]
    heading = f"disagreements between {a} and {b}: {len(result.disagreements)}"
    disagreements = table(
        ["question", "chunk", a, b],
        ([q, c, str(ga), str(gb)] for q, c, ga, gb in result.disagreements),
        heading=heading,
        right=(2, 3),
    )
    return [confusion, disagreements]


def agreement_report(
    ws: Workspace,
    pairs: Sequence[tuple[str, str]] = (),
    judges: Sequence[JudgeAgreement] | None = None,
) -> Report:
    """The evidence rule against the hand grades, the annotators, each pair of ``pairs`` compared,
    then the model judges (``judges``; None: every judge with verdicts) against the rule and people."""
    sections = _rule_sections(rule_agreement(ws), ws.data.base_source)
    names = annotators(ws.grades.labels.history)
    listed = ", ".join(f"{n or '(unnamed)'} ({count(c, 'pair')})" for n, c in names.items())
    annotator_notes = [Note(f"annotators: {listed or 'none'}")]
    disputed = ws.grades.disputed_pairs()
    if disputed:
        shown = ", ".join(f"{q} {c}" for q, c in disputed[:5])
        more = f", ... ({len(disputed) - 5} more)" if len(disputed) > 5 else ""
        annotator_notes.append(
            Note(
                f"disputed: {count(len(disputed), 'pair')} graded differently and not adjudicated "
                f"(the latest grade counts until one is adjudicated): {shown}{more}",
                "warning",
            )
        )
    if len(names) < 2:
        annotator_notes.append(
            Note(
                "two annotators are needed to compare; each label carries its --annotator",
                "dim",
            )
        )
    sections.append(text_section(*annotator_notes))
    for a, b in pairs:
        history = ws.grades.labels.history
        sections += _pair_sections(annotator_agreement(history, a, b, ws.settings.threshold))
    sections += judge_sections(judge_agreements(ws) if judges is None else judges)
    return Report("agreement", tuple(sections))


# ---- chunking diagnostics and check --------------------------------------------------------------


def window_summary(diag: ChunkDiagnostics, mode: str) -> str:
    """One line: the chunks and evidence strings in a cut-off tail before windows and after."""
    tails = len(diag.truncated)
    hidden = len(diag.hidden_evidence)
    before = f"{count(tails, 'chunk')} and {count(hidden, 'evidence string')} in a cut-off tail"
    if diag.limit is None:
        return "windows: the model's limit is unknown, so chunks are embedded as they are"
    if diag.windows is None:
        return f"windows: off (--windows {mode}): {before}, left unread (--windows max reads them)"
    w = diag.windows
    return (
        f"windows: {w.plan.describe()}; {count(w.windowed, 'chunk')} read as "
        f"{w.windows} windows; before: {before}; after: 0 chunks with an unread tail, "
        f"{count(len(w.split), 'evidence string')} that no single window holds whole"
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
            return empty(what)
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
                [
                    f"{where}:{m.line}",
                    m.question,
                    repr(shorten(m.evidence)),
                    ", ".join(m.chunks),
                ]
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
            sections.append(empty(longer))
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
                heading=f"chunk token counts ({count(chunks, 'chunk')}{marks})",
                right=(0, 2),
            )
        )
    summary = (
        f"{len(diag.truncated)} of {chunks} chunks longer than the embedding model reads, "
        f"{count(len(diag.hidden_evidence), 'evidence string')} in a cut-off tail, "
        f"{count(len(diag.multi_match), 'evidence string')} in several chunks"
    )
    sections.append(text_section(Note(summary, "strong"), Note(window_summary(diag, windows))))
    return Report("chunking diagnostics", tuple(sections))


def check_report(ws: Workspace, problems: Sequence[Problem]) -> Report:
    """``ragtui check``'s problems (evidence in no chunk, stale labels), one a line, and the counts."""
    threshold = ws.settings.threshold
    relevant = [
        sum(1 for g in ws.grades.effective_grades(q.id).values() if g >= threshold)
        for q in ws.questions
    ]
    lines = [Note(str(p), "bad") for p in problems] or [
        Note(
            "No problems: every evidence string is in a chunk and no label is stale.",
            "good",
        )
    ]
    hint = chunking_hint(ws)
    if hint is not None:
        lines.append(Note(f"hint: {hint}", "warning"))
    counts = (
        f"{len(ws.data.corpus.documents)} documents, {len(ws.data.chunks)} chunks, "
        f"{len(ws.questions)} questions ({sum(1 for n in relevant if n == 1)} with one relevant "
        f"chunk, {sum(1 for n in relevant if n > 1)} with several, "
        f"{sum(1 for n in relevant if n == 0)} with none); {count(len(problems), 'problem')}"
    )
    return Report(
        f"check: {count(len(problems), 'problem')}",
        (text_section(*lines), text_section(Note(counts, "strong"))),
    )


# ---- a question just added -----------------------------------------------------------------------


def added_question_report(added: AddedQuestion, path: str | Path, k: int) -> Report:
    """What ``ragtui add-question`` wrote and how every retriever ranks the new question."""
    q = added.question
    rows = []
    for name, ranking in added.rankings.items():
        m = added.metrics[name]
        top = ", ".join(cid for cid, _ in ranking[:3])
        rows.append([name, rank(m.first_relevant_rank), fmt(m.recall), fmt(m.ndcg), top])
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
