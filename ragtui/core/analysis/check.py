"""``ragtui check``: every problem of the golden set against the chunked corpus."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragtui.core.data.golden import EvidenceIndex, normalize_ws, straddling_pairs
from ragtui.core.workspace import Workspace


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem: where (file and line), which question, and what."""

    path: str
    line: int
    question: str
    problem: str

    def __str__(self) -> str:
        path = shown_path(self.path)
        where = f"{path}:{self.line}" if self.line else path
        return (
            f"{where}: {self.question}: {self.problem}"
            if self.question
            else f"{where}: {self.problem}"
        )


def shorten(text: str, limit: int = 60) -> str:
    """A quoted text shortened to ``limit`` characters (``...`` marks the cut)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def shown_path(path: str) -> str:
    """A path as a person reads it: relative to the working folder when it lies inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except (ValueError, OSError):
        return path


def check_workspace(ws: Workspace) -> list[Problem]:
    """Evidence found in no chunk (straddling a boundary or absent), label lines that cannot be read (skipped), and stale labels."""
    problems: list[Problem] = []
    questions_file = str(Path(ws.settings.golden or "") / "questions.jsonl")
    index = EvidenceIndex([c.id for c in ws.chunks], [c.text for c in ws.chunks])
    for q in ws.questions:
        for evidence in q.evidence:
            if index.matching_chunks([evidence]):
                continue
            short = shorten(evidence)
            needle = normalize_ws(evidence)
            containing = [d.path for d in ws.corpus.documents if needle in normalize_ws(d.text)]
            if containing:
                pairs = straddling_pairs(ws.corpus.documents, ws.chunks, evidence)
                where = (
                    "; ".join(f"{a} and {b}" for a, b in pairs)
                    or f"{containing[0]} (across several chunks)"
                )
                problems.append(
                    Problem(
                        questions_file,
                        q.line,
                        q.id,
                        f"evidence {short!r} straddles a chunk boundary: {where}",
                    )
                )
            else:
                problems.append(
                    Problem(questions_file, q.line, q.id, f"evidence {short!r} is in no document")
                )
    for bad in ws.labels.bad_lines:
        problems.append(
            Problem(bad.path, bad.line, "", f"label line skipped, not applied: {bad.problem}")
        )
    for stale in ws.stale_labels():
        lab = stale.label
        problems.append(
            Problem(
                str(ws.labels.path),
                lab.line,
                lab.question,
                f"stale {'adjudicated ' if lab.adjudicated else ''}label for {lab.chunk} "
                f"(grade {lab.grade}{f' by {lab.annotator}' if lab.annotator else ''}): {stale.reason}",
            )
        )
    return problems
