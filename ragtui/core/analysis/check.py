"""``ragtui check``: every problem of the golden set against the chunked corpus."""

from __future__ import annotations

import re
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


#: A chunk id of ragtui's own chunking: ``<document path>#<n>``.
OWN_CHUNK_ID = re.compile(r"(?P<doc>.+)#(?P<n>\d+)")


def other_chunking(ws: Workspace) -> dict[str, str]:
    """The stale labels' chunk ids that come from ragtui's own chunking while ``--chunks`` gives
    chunks with other ids (label chunk id -> what to say about it, naming the chunk of the file that
    holds the same text when one does). Empty without ``--chunks``."""
    chunks_file = ws.settings.chunks
    if chunks_file is None:
        return {}
    missing = [
        s.label
        for s in ws.grades.stale_labels()
        if s.label.chunk not in ws.passages.by_id and OWN_CHUNK_ID.fullmatch(s.label.chunk)
    ]
    if not missing:
        return {}
    by_sha1: dict[str, str] = {}
    for chunk in ws.data.chunks:
        by_sha1.setdefault(chunk.sha1, chunk.id)
    docs = {chunk.doc for chunk in ws.data.chunks}
    out: dict[str, str] = {}
    for label in missing:
        match = OWN_CHUNK_ID.fullmatch(label.chunk)
        assert match is not None
        name = shown_path(str(chunks_file))
        what = f"made on ragtui's own chunking (ids <document>#<n>), not on {name}"
        same = by_sha1.get(label.chunk_sha1) if label.chunk_sha1 else None
        if same is not None:
            what += f"; the same text is its chunk {same}"
        elif match["doc"] in docs:
            what += f"; it holds {match['doc']} under other chunk ids"
        out[label.chunk] = what
    return out


def chunking_hint(ws: Workspace) -> str | None:
    """One line for the labels made on another chunking than ``--chunks`` gives (None: there are none)."""
    other = other_chunking(ws)
    if not other:
        return None
    labels = sum(1 for s in ws.grades.stale_labels() if s.label.chunk in other)
    example = next(iter(other))
    file_ids = [c.id for c in ws.data.chunks[:2]]
    return (
        f"{labels} label{'s' if labels != 1 else ''} name chunks of ragtui's own chunking (such as "
        f"{example}), made without --chunks; {shown_path(str(ws.settings.chunks))} names its chunks "
        f"otherwise (such as {', '.join(file_ids)}). They apply again when you run without --chunks "
        "at the chunk size they were made at; to use them with these chunks, grade those pairs again "
        "with --chunks"
    )


def check_workspace(ws: Workspace) -> list[Problem]:
    """Evidence found in no chunk (straddling a boundary or absent), label lines that cannot be read (skipped), and stale labels."""
    problems: list[Problem] = []
    questions_file = str(Path(ws.settings.golden or "") / "questions.jsonl")
    index = EvidenceIndex([c.id for c in ws.data.chunks], [c.text for c in ws.data.chunks])
    for q in ws.questions:
        for evidence in q.evidence:
            if index.matching_chunks([evidence]):
                continue
            short = shorten(evidence)
            needle = normalize_ws(evidence)
            containing = [
                d.path for d in ws.data.corpus.documents if needle in normalize_ws(d.text)
            ]
            if containing:
                pairs = straddling_pairs(ws.data.corpus.documents, ws.data.chunks, evidence)
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
    for bad in ws.grades.labels.bad_lines:
        problems.append(
            Problem(bad.path, bad.line, "", f"label line skipped, not applied: {bad.problem}")
        )
    other = other_chunking(ws)
    for stale in ws.grades.stale_labels():
        lab = stale.label
        reason = stale.reason
        if lab.chunk in other:
            reason = other[lab.chunk]
        problems.append(
            Problem(
                str(ws.grades.labels.path),
                lab.line,
                lab.question,
                f"stale {'adjudicated ' if lab.adjudicated else ''}label for {lab.chunk} "
                f"(grade {lab.grade}{f' by {lab.annotator}' if lab.annotator else ''}): {reason}",
            )
        )
    return problems
