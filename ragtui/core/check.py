"""``ragtui check``: every problem of the golden set against the chunked corpus."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragtui.core.golden import EvidenceIndex, normalize_ws
from ragtui.core.workspace import Workspace


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem: where (file and line), which question, and what."""

    path: str
    line: int
    question: str
    problem: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.question}: {self.problem}" if self.question else f"{where}: {self.problem}"


def _straddling_chunks(ws: Workspace, evidence: str) -> list[tuple[str, str]] | None:
    """Where evidence sits in a document but in no single chunk: the pairs of neighbouring chunks it spans."""
    needle = normalize_ws(evidence)
    by_doc: dict[str, list] = {}
    for c in ws.chunks:
        by_doc.setdefault(c.doc, []).append(c)
    pairs = []
    for doc in ws.corpus.documents:
        if needle not in normalize_ws(doc.text):
            continue
        chunks = by_doc.get(doc.path, [])
        for a, b in zip(chunks, chunks[1:]):
            joined = normalize_ws(doc.text[a.start : b.end])
            if needle in joined and needle not in normalize_ws(a.text) and needle not in normalize_ws(b.text):
                pairs.append((a.id, b.id))
        if not pairs:
            pairs.append((f"{doc.path} (across several chunks)", ""))
    return pairs or None


def check_workspace(ws: Workspace) -> list[Problem]:
    """Evidence found in no chunk (straddling a boundary or absent), and stale labels."""
    problems: list[Problem] = []
    questions_file = str(Path(ws.settings.golden or "") / "questions.jsonl")
    index = EvidenceIndex([c.id for c in ws.chunks], [c.text for c in ws.chunks])
    for q in ws.questions:
        for evidence in q.evidence:
            if index.matching_chunks([evidence]):
                continue
            short = evidence if len(evidence) <= 60 else evidence[:57] + "..."
            pairs = _straddling_chunks(ws, evidence)
            if pairs:
                where = "; ".join(f"{a} and {b}" if b else a for a, b in pairs)
                problems.append(Problem(questions_file, q.line, q.id, f"evidence {short!r} straddles a chunk boundary: {where}"))
            else:
                problems.append(Problem(questions_file, q.line, q.id, f"evidence {short!r} is in no document"))
    for stale in ws.stale_labels():
        lab = stale.label
        problems.append(
            Problem(str(ws.labels.path), lab.line, lab.question, f"stale label for {lab.chunk} (grade {lab.grade}): {stale.reason}")
        )
    return problems
