"""The views of the causes of misses: the ``ragtui why`` reports (one question, the whole set, per
slice) and their JSON objects; both front ends draw these."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragtui.core.analysis.slices import slice_names
from ragtui.core.analysis.why.causes import (
    CAUSES,
    FIXES,
    REMEDIES,
    Neighbour,
    NotRetrieved,
    Outranked,
    QuestionWhy,
)
from ragtui.core.analysis.why.index import CauseCount, RetrieverCauses, WhyIndex, cause_summary
from ragtui.core.report_model import Report, Row, Section, fmt, note, signed, table, text_section

__all__ = ["question_why_json", "why_json", "why_question_report", "why_report"]


# ---- JSON ------------------------------------------------------------------------------------------


def _summary_json(summary: Mapping[str, RetrieverCauses]) -> dict[str, Any]:
    return {
        name: {
            "questions": s.questions,
            "recall": s.recall,
            "missed": s.missed,
            "every_cause": s.every_cause,
            "causes": {
                c.cause: {
                    "questions": c.questions,
                    "first": c.first,
                    "misses": c.misses,
                    "ceiling": c.ceiling,
                    "question_ids": list(c.question_ids),
                }
                for c in s.causes.values()
            },
        }
        for name, s in summary.items()
    }


def why_json(index: WhyIndex) -> dict[str, Any]:
    """The object of ``ragtui why --json``: the causes by retriever and by slice, with ceilings, and
    each question's causes per retriever."""
    ws = index.ws
    summary = cause_summary(index)
    slices = {
        name: _summary_json(cause_summary(index, [q.id for q in ws.questions if name in q.slices]))
        for name in slice_names(ws)
    }
    return {
        "k": index.k,
        "depth": ws.settings.depth,
        "causes": [{"cause": c, "fixed": FIXES[c], "remedy": REMEDIES[c]} for c in CAUSES],
        "retrievers": _summary_json(summary),
        "slices": slices,
        "per_question": {
            w.question.id: {name: list(r.causes) for name, r in w.retrievers.items()}
            for w in index.questions()
            if any(r.misses for r in w.retrievers.values())
        },
    }


def question_why_json(why: QuestionWhy, k: int, depth: int) -> dict[str, Any]:
    """The object of ``ragtui why QID --json``."""
    return {
        "question": why.question.id,
        "text": why.question.text,
        "slices": list(why.question.slices),
        "k": k,
        "depth": depth,
        "retired": why.retired,
        "relevant": list(why.relevant),
        "retrievers": {
            name: {
                "recall": r.recall,
                "top": list(r.top),
                "causes": list(r.causes),
                "misses": [m.as_json() for m in r.misses],
                "beyond": r.beyond,
            }
            for name, r in why.retrievers.items()
        },
    }


# ---- reports ---------------------------------------------------------------------------------------


#: Decimals of each retriever's scores: BM25 sums, cosines, RRF sums of 1 / (60 + rank).
_DECIMALS = {"bm25": 3, "vector": 4, "hybrid": 5}


def _neighbour_rows(retriever: str, neighbours: Sequence[Neighbour]) -> list[Row]:
    decimals = _DECIMALS.get(retriever, 4)
    rows = []
    for n in neighbours:
        grade = "-" if n.grade is None else f"{n.grade}{' hand' if n.hand else ''}"
        words = ", ".join(n.shared_words) or "none"
        rows.append(
            Row(
                (str(n.rank), n.chunk, f"{n.score:.{decimals}f}", words, grade),
                "good" if n.relevant else "",
            )
        )
    return rows


def why_question_report(why: QuestionWhy, k: int, depth: int) -> Report:
    """``ragtui why QID``: each retriever's misses on one question with every cause's evidence."""
    q = why.question
    if why.retired:
        return Report(
            f"why {q.id}: {q.text}",
            (text_section("retired: left out of every mean, so no retriever misses it"),),
        )
    relevant = ", ".join(why.relevant) if why.relevant else "none (the question is skipped)"
    sections = [
        text_section(
            f"relevant: {relevant}",
            f"k={k}, depth={depth}; causes in the order of precedence, the first is the one to fix first",
        )
    ]
    for name, r in why.retrievers.items():
        recall = f"recall@{k} {fmt(r.recall)}" if r.recall is not None else "skipped"
        beyond = (
            f"{r.beyond} more relevant chunk{'s' if r.beyond != 1 else ''} outside the top {k} "
            "than it has room for: not misses of the top k"
            if r.beyond
            else ""
        )
        if not r.misses:
            if r.beyond:
                sections.append(
                    text_section(f"{name}: {recall}; the top {k} is all relevant", beyond)
                )
            else:
                sections.append(
                    text_section(f"{name}: {recall}; every relevant chunk in the top {k}")
                )
            continue
        lines: list[str] = []
        neighbours: tuple[Neighbour, ...] = ()
        for miss in r.misses:
            what = miss.chunk if miss.chunk is not None else "evidence in no chunk"
            lines.append(f"  {what}: {', '.join(miss.causes)}")
            for finding in miss.findings:
                lines.extend(f"    {finding.cause}: {line}" for line in finding.lines())
                if isinstance(finding, Outranked | NotRetrieved):
                    neighbours = finding.above
        notes = [note(line, "bad") for line in lines]
        if beyond:
            notes.append(note(f"  {beyond}"))
        sections.append(
            Section(
                f"{name}: {recall}; {len(r.misses)} missed: {', '.join(r.causes)}",
                notes=tuple(notes),
            )
        )
        if neighbours:
            sections.append(
                table(
                    ("rank", "chunk", "score", "question words it holds", "grade"),
                    _neighbour_rows(name, neighbours),
                    heading=f"  {name}'s top {k}",
                    right=(0, 2),
                )
            )
    return Report(f"why {q.id}: {q.text}", tuple(sections))


def _count_cell(count: CauseCount) -> str:
    if not count.questions:
        return "-"
    return (
        str(count.first) if count.first == count.questions else f"{count.first} ({count.questions})"
    )


def _ceiling_cell(count: CauseCount, now: float) -> str:
    if not count.questions:
        return "-"
    return f"{fmt(count.ceiling)} ({signed(count.ceiling - now)})"


def _own_passage_notes(index: WhyIndex, names: Sequence[str]) -> list[str]:
    """At evidence level, what a miss is; and a note for each retriever that ``ragtui eval`` judges
    with passages of its own: its own relevant passages count as hits here too."""
    ev = index.ws.evaluation
    if ev is None or ev.units is None:
        return []
    notes = [
        (
            "evidence level (as in ragtui eval): a miss is a relevant chunk of ragtui's whose "
            "evidence strings no relevant passage of the top k holds (docs/metrics.md#units)"
        )
    ]
    notes += [
        f"{name} returns passages of its own, judged for it alone: its own relevant passages in "
        "the top k count as hits (docs/retrievers.md)"
        for name in names
        if name in ev.own
    ]
    return notes


def why_report(index: WhyIndex, by_slice: bool = False) -> Report:
    """``ragtui why``: questions missed by first cause per retriever, each cause's remedy ceiling,
    and with ``by_slice`` the same per slice."""
    ws = index.ws
    k = index.k
    summary = cause_summary(index)
    names = list(summary)
    evaluated = max((s.questions for s in summary.values()), default=0)
    counts = table(
        ("cause", *names),
        [(cause, *(_count_cell(summary[n].causes[cause]) for n in names)) for cause in CAUSES]
        + [
            Row(
                ("missed", *(str(summary[n].missed) for n in names)),
                "strong",
            )
        ],
        heading="questions missed, by first cause (in brackets: all with the cause)",
        right=range(1, len(names) + 1),
    )
    ceilings = table(
        ("cause", *names, "usual remedy"),
        [Row(("now", *(fmt(summary[n].recall) for n in names), ""), "strong")]
        + [
            (
                cause,
                *(_ceiling_cell(summary[n].causes[cause], summary[n].recall) for n in names),
                REMEDIES[cause],
            )
            for cause in CAUSES
        ]
        + [
            Row(
                (
                    "every cause",
                    *(
                        f"{fmt(summary[n].every_cause)} ({signed(summary[n].every_cause - summary[n].recall)})"
                        for n in names
                    ),
                    "",
                ),
                "strong",
            )
        ],
        heading=f"remedy ceilings: recall@{k} if every miss with the cause were fixed",
        right=range(1, len(names) + 1),
        notes=(
            (
                "fixed: the chunk enters the top k (cut-off, lexical-gap, fusion-loss, outranked, "
                "not-retrieved); stops counting as relevant (ambiguous-evidence, label-gap); the evidence "
                "lands whole in one chunk in the top k (no-evidence-chunk, split); see docs/why.md"
            ),
            *_own_passage_notes(index, names),
        ),
    )
    sections = [counts, ceilings]
    if by_slice:
        sections.append(_slice_section(index, k))
    skipped = [
        w.question.id for w in index.questions() if not w.evaluated and not w.question.retired
    ]
    title = f"why it missed: {evaluated} questions evaluated, k={k}, depth={ws.settings.depth}"
    if skipped:
        title += f"; {len(skipped)} skipped (no judgement): {', '.join(skipped[:8])}"
        title += ", ..." if len(skipped) > 8 else ""
    return Report(title, tuple(sections))


def _slice_section(index: WhyIndex, k: int) -> Section:
    """Per slice and retriever: recall@k, missed questions by first cause, and the best remedy."""
    ws = index.ws
    rows: list[tuple[str, ...]] = []
    for name in slice_names(ws):
        ids = [q.id for q in ws.questions if name in q.slices]
        summary = cause_summary(index, ids)
        for i, (retriever, s) in enumerate(summary.items()):
            first = ", ".join(f"{c.cause} {c.first}" for c in s.causes.values() if c.first)
            best = s.best()
            rows.append(
                (
                    name if i == 0 else "",
                    str(s.questions) if i == 0 else "",
                    retriever,
                    fmt(s.recall),
                    str(s.missed),
                    first or "-",
                    f"{best.cause} {fmt(best.ceiling)}" if best is not None else "-",
                )
            )
    return table(
        (
            "slice",
            "questions",
            "retriever",
            f"recall@{k}",
            "missed",
            "first causes",
            "best remedy (ceiling)",
        ),
        rows,
        heading="by slice",
        right=(1, 3, 4),
    )
