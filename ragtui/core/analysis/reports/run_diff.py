"""``ragtui diff A B`` as a report: the questions that got worse or better, the means, and what
became of each cause of a miss."""

from __future__ import annotations

from typing import Any

from ragtui.core.analysis.reports.cells import rank
from ragtui.core.analysis.runs import RunDiff
from ragtui.core.report_model import Note, Report, Row, fmt, signed, table, text_section

__all__ = ["diff_report"]


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
                f"{rank(c.rank_a)} -> {rank(c.rank_b)}",
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
        f"diff {diff.a} -> {diff.b}: k={k}, {len(diff.changes)} questions in both",
        tuple(sections),
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
