"""The model judges' part of the agreement report: each judge against the rule and each person
(kappas, confusion matrix, per slice, the pairs they disagree on most), a judge that shares its
model with a retriever marked."""

from __future__ import annotations

from collections.abc import Sequence

from ragtui.core.analysis.check import shorten
from ragtui.core.analysis.reports.cells import count
from ragtui.core.judges.agreement import Comparison, JudgeAgreement, relevant_word
from ragtui.core.labelling.agreement import kappa_text
from ragtui.core.report_model import Note, Section, fmt, table, text_section

__all__ = ["DISAGREEMENTS_SHOWN", "judge_sections"]

#: The disagreements each comparison lists (the largest grade difference first); ``--json`` has all.
DISAGREEMENTS_SHOWN = 10
#: A reason is cut to this many characters in a table (``--json`` keeps it whole).
REASON_SHOWN = 80


def _kappa_note(c: Comparison) -> Note:
    t = c.overall
    if c.rule:
        text = (
            f"Cohen's kappa (binary, grade >= {c.threshold}): {kappa_text(t.kappa)}; "
            f"weighted kappa (quadratic, on grades): {kappa_text(t.weighted_kappa)}; "
            f"same side of the threshold on {fmt(t.observed)}"
        )
    else:
        text = (
            f"Cohen's kappa (on grades): {kappa_text(t.kappa)}; "
            f"weighted kappa (quadratic): {kappa_text(t.weighted_kappa)}; "
            f"same grade on {fmt(t.observed)}"
        )
    return Note(text, "strong")


def _confusion(c: Comparison) -> Section:
    """The judge's grade (rows) against the person's grade or the rule (columns)."""
    if c.rule:
        heading = (
            f"{c.judge} against the {c.name}: {count(c.overall.pairs, 'pair')} the judge graded "
            f"(relevant = grade >= {c.threshold})"
        )
        columns = [relevant_word(c, r) for r in c.columns]
    else:
        heading = f"{c.judge} against {c.name}: {count(c.overall.pairs, 'pair')} graded by both"
        columns = [f"{c.name} {g}" for g in c.columns]
    return table(
        [f"{c.judge} \\ {c.name}", *columns],
        (
            [f"grade {g}", *(str(c.overall.table.get((g, o), 0)) for o in c.columns)]
            for g in c.grades
        ),
        heading=heading,
        notes=[_kappa_note(c)],
        right=range(1, len(columns) + 1),
    )


def _other_cell(c: Comparison, grade: int, relevant: bool) -> str:
    if not c.rule:
        return str(grade)
    return f"{grade} ({relevant_word(c, int(relevant))})"


def _disagreements(c: Comparison, shown: int) -> Section:
    total = len(c.disagreements)
    what = f"{c.judge} and the {c.name}" if c.rule else f"{c.judge} and {c.name}"
    if not total:
        return text_section(Note(f"disagreements between {what}: none", "dim"))
    listed = c.disagreements[:shown]
    more = f" ({len(listed)} shown; --json lists them all)" if total > len(listed) else ""
    return table(
        ["question", "chunk", c.judge, c.name, "reason"],
        (
            [
                p.question,
                p.chunk,
                str(p.judge),
                _other_cell(c, p.other, p.other_relevant),
                shorten(p.reason, REASON_SHOWN) or "-",
            ]
            for p in listed
        ),
        heading=f"disagreements between {what}: {total}, the largest first{more}",
        right=(2,),
    )


def _short_kappa(value: float | None) -> str:
    """A kappa in a table cell: three decimals, or ``undefined`` (the table's note says why)."""
    return "undefined" if value is None else f"{value:.3f}"


def _per_slice(a: JudgeAgreement) -> Section | None:
    rows = [
        [
            name,
            c.name,
            str(t.pairs),
            _short_kappa(t.kappa),
            _short_kappa(t.weighted_kappa),
            fmt(t.observed),
        ]
        for c in a.comparisons
        for name, t in c.slices.items()
    ]
    if not rows:
        return None
    notes = []
    if any("undefined" in row for row in rows):
        notes.append(Note("undefined: both used a single category on every pair", "dim"))
    return table(
        ["slice", "against", "pairs", "kappa", "weighted kappa", "agreement"],
        rows,
        heading=f"{a.judge} per slice (a question in several slices counts in each)",
        notes=notes,
        right=(2, 3, 4, 5),
    )


def _header(a: JudgeAgreement) -> Section:
    left_out = (
        f" ({a.stale} left out: the chunk text changed, or the chunk or question is gone)"
        if a.stale
        else ""
    )
    notes = [Note(f"model: {', '.join(a.models)}" if a.models else "model: not recorded", "dim")]
    mark = a.shares_text
    if mark is not None:
        notes.append(Note(f"{a.judge} {mark}", "warning"))
    if not a.people:
        notes.append(
            Note(
                f"no person graded a pair {a.judge} graded: grade some to compare it with people",
                "dim",
            )
        )
    return text_section(
        *notes,
        heading=f"judge {a.judge}: {count(a.verdicts, 'verdict')} that "
        f"{'applies' if a.verdicts == 1 else 'apply'}{left_out}",
    )


def judge_sections(
    agreements: Sequence[JudgeAgreement], shown: int = DISAGREEMENTS_SHOWN
) -> list[Section]:
    """Each judge: what it graded and its model (marked when a retriever shares it), then against
    the rule and each person: confusion matrix and kappas, per slice, the largest disagreements."""
    sections: list[Section] = []
    for a in agreements:
        sections.append(_header(a))
        for c in a.comparisons:
            if not c.overall.pairs:
                continue
            sections.append(_confusion(c))
            sections.append(_disagreements(c, shown))
        per_slice = _per_slice(a)
        if per_slice is not None:
            sections.append(per_slice)
    return sections
