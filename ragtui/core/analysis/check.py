"""``ragtui check``: every problem of the golden set against the chunked corpus."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from ragtui.core.analysis.diagnostics import ChunkDiagnostics, diagnose
from ragtui.core.data.chunking import Chunk
from ragtui.core.data.golden import EvidenceIndex, normalize_ws
from ragtui.core.workspace import Workspace


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem: where (file and line), which question, and what."""

    path: str
    line: int
    question: str
    problem: str

    def __str__(self) -> str:
        path = _shown_path(self.path)
        where = f"{path}:{self.line}" if self.line else path
        return (
            f"{where}: {self.question}: {self.problem}"
            if self.question
            else f"{where}: {self.problem}"
        )


def _shown_path(path: str) -> str:
    """A path as a person reads it: relative to the working folder when it lies inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except (ValueError, OSError):
        return path


def _straddling_chunks(ws: Workspace, evidence: str) -> list[tuple[str, str]] | None:
    """Where evidence sits in a document but in no single chunk: the pairs of neighbouring chunks it spans."""
    needle = normalize_ws(evidence)
    by_doc: dict[str, list[Chunk]] = {}
    for c in ws.chunks:
        by_doc.setdefault(c.doc, []).append(c)
    pairs = []
    for doc in ws.corpus.documents:
        if needle not in normalize_ws(doc.text):
            continue
        chunks = by_doc.get(doc.path, [])
        for a, b in itertools.pairwise(chunks):
            joined = normalize_ws(doc.text[a.start : b.end])
            if (
                needle in joined
                and needle not in normalize_ws(a.text)
                and needle not in normalize_ws(b.text)
            ):
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
    for stale in ws.stale_labels():
        lab = stale.label
        problems.append(
            Problem(
                str(ws.labels.path),
                lab.line,
                lab.question,
                f"stale label for {lab.chunk} (grade {lab.grade}): {stale.reason}",
            )
        )
    return problems


def check_notes(ws: Workspace, diagnostics: ChunkDiagnostics | None = None) -> list[Problem]:
    """Information that is never a reason for exit 1: evidence in several chunks (allowed), chunks
    longer than the embedding model reads (their tail is invisible to the vector retriever), and
    evidence lying in such a tail; each line starts with ``note:``."""
    diag = diagnostics or diagnose(ws)
    questions_file = str(Path(ws.settings.golden or "") / "questions.jsonl")
    notes: list[Problem] = []
    for multi in diag.multi_match:
        short = multi.evidence if len(multi.evidence) <= 60 else multi.evidence[:57] + "..."
        notes.append(
            Problem(
                questions_file,
                multi.line,
                multi.question,
                f"note: evidence {short!r} is in {len(multi.chunks)} chunks, all relevant: {', '.join(multi.chunks)}",
            )
        )
    if diag.limit is None:
        notes.append(
            Problem(
                ws.settings.model,
                0,
                "",
                "note: the model's maximum sequence length is unknown; chunk truncation not checked",
            )
        )
        return notes
    limit = diag.limit
    windows = diag.windows
    split = {(h.question, h.evidence, h.chunk) for h in windows.split} if windows else set()
    for hidden in diag.hidden_evidence:
        short = hidden.evidence if len(hidden.evidence) <= 60 else hidden.evidence[:57] + "..."
        how = "wholly" if hidden.wholly_hidden else "partly"
        after = ""
        if windows is not None:
            after = (
                "; no single window holds it whole"
                if (hidden.question, hidden.evidence, hidden.chunk) in split
                else "; a window reads it whole"
            )
        notes.append(
            Problem(
                questions_file,
                hidden.line,
                hidden.question,
                f"note: evidence {short!r} lies {how} in the tail of {hidden.chunk} that the embedding model cuts off{after}",
            )
        )
    for cut in diag.truncated:
        unread = (
            "the last one is" if cut.hidden_tokens == 1 else f"the last {cut.hidden_tokens} are"
        ) + " invisible to the vector retriever"
        read = (
            f"read as overlapping windows ({windows.plan.describe()}); without them {unread}"
            if windows is not None
            else unread
        )
        notes.append(
            Problem(
                cut.chunk,
                0,
                "",
                f"note: {cut.token_count} tokens, over the {limit.content_tokens} the embedding model reads: {read}",
            )
        )
    return notes


def window_summary(diag: ChunkDiagnostics, mode: str) -> str:
    """One line: the chunks and evidence strings in a cut-off tail before windows and after."""
    tails = len(diag.truncated)
    hidden = len(diag.hidden_evidence)
    before = f"{tails} chunk{'s' if tails != 1 else ''} and {hidden} evidence string{'s' if hidden != 1 else ''} in a cut-off tail"
    if diag.limit is None:
        return "windows: the model's limit is unknown, so chunks are embedded as they are"
    if diag.windows is None:
        return f"windows: off (--windows {mode}): {before}, left unread (--windows max reads them)"
    w = diag.windows
    return (
        f"windows: {w.plan.describe()}; {w.windowed} chunk{'s' if w.windowed != 1 else ''} read as "
        f"{w.windows} windows; before: {before}; after: 0 chunks with an unread tail, "
        f"{len(w.split)} evidence string{'s' if len(w.split) != 1 else ''} that no single window holds whole"
    )
